/// <reference lib="dom" />
// A trace's labels and stacks in a real browser (Debian's headless Chromium through playwright-core): the
// filter by label lists each label with its allocations, picking one greys every other band, and hover shows
// an allocation's label and its stack's frames. Skips where Chromium is not installed, except under CI=true.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryViewApi } from "../src/view/client.js";
import { chromiumExecutable, launchChromium } from "./chromium.mjs";
import { runCli, scratchFolder } from "./support.js";

const hasApt = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
const mustRun = process.env.CI === "true" && hasApt;
const folder = scratchFolder("nuvec-view-labels-");
const MiB = 1024 ** 2;

/** Three labels (weights 96 MiB, kv-cache 3 × 32 MiB, scratch 30 × 8 MiB), two stacks (20 frames, 1). */
function labelledTrace(): string {
  const lines: unknown[] = [
    { name: "labelled" },
    ["n", 0, "weights"],
    ["n", 1, "kv-cache"],
    ["n", 2, "scratch"],
    ["n", 3, `<img src=x onerror="window.pwned=1">\n${"z".repeat(200)}`],
    [
      "s",
      0,
      [
        "at loadWeights (model.js:10:3)",
        "at main (main.js:2:1)",
        ...Array.from({ length: 18 }, (_, i) => `at f${i} (x.js:${i}:1)`),
      ],
    ],
    ["s", 1, ["at grow (cache.js:7:5)"]],
    ["a", 0, 96 * MiB, 0, 0],
    ["a", 1, 4096, 3],
    ["f", 1],
  ];
  for (let step = 0; step < 3; step += 1) {
    lines.push(["k", `step ${step}`], ["a", 10 + step, 32 * MiB, 1, 1]);
    for (let k = 0; k < 10; k += 1)
      lines.push(["a", 100 + step * 10 + k, 8 * MiB, 2], ["f", 100 + step * 10 + k]);
  }
  const path = join(folder, "labelled.ndjson");
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`);
  return path;
}

describe.skipIf(chromiumExecutable === undefined && !mustRun)(
  "labels and stacks in headless Chromium",
  () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium(chromiumExecutable as string);
    });
    afterAll(async () => browser?.close());

    it("lists the labels, filters by one, and shows a label and its stack on hover", async () => {
      const html = join(folder, "labelled.html");
      const ran = runCli([labelledTrace(), "--html", html]);
      expect(ran.status).toBe(0);
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(String(error)));
      page.on("console", (message) => {
        if (message.type() === "error") problems.push(message.text());
      });
      await page.goto(`file://${html}`);
      await page.waitForFunction(() => (window as unknown as { nuvecView?: MemoryViewApi }).nuvecView?.ready);
      // 66 events: 3 + 3 × (1 + 10 × 2); no definition or mark counted.
      expect(
        await page.evaluate(
          () => (window as unknown as { nuvecView: MemoryViewApi }).nuvecView.model?.events,
        ),
      ).toBe(66);
      expect(await page.locator("#nuvec-label-filter").isVisible()).toBe(true);
      expect(await page.locator("#nuvec-label option").allTextContents()).toEqual([
        "all (4 labels)",
        "scratch · 30 allocations, 240.00 MiB allocated",
        "weights · 1 allocation, 96.00 MiB allocated",
        "kv-cache · 3 allocations, 96.00 MiB allocated",
        // Hostile text stays text, on one line of at most 80 characters.
        `<img src=x onerror="window.pwned=1"> · ${"z".repeat(40)}… · 1 allocation, 4.00 KiB allocated`,
      ]);
      expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
      const point = await page.evaluate(() =>
        (window as unknown as { nuvecView: MemoryViewApi }).nuvecView.locate(0),
      );
      expect(point).toBeDefined();
      await page.mouse.move(point?.x ?? 0, point?.y ?? 0);
      const text = await page.locator("#nuvec-tooltip").textContent();
      expect(text).toContain("allocation 0 · 96.00 MiB");
      // The label, then the stack's innermost 16 frames and how many more.
      expect(text).toContain(
        "weights\n  at loadWeights (model.js:10:3)\n  at main (main.js:2:1)\n  at f0 (x.js:0:1)",
      );
      expect(text?.endsWith("\n  at f13 (x.js:13:1)\n  … 4 more frames")).toBe(true);
      const pixelAt = () =>
        page.evaluate(
          ({ x, y }) => {
            const canvas = document.querySelector("#nuvec-chart canvas") as HTMLCanvasElement;
            const box = canvas.getBoundingClientRect();
            const ratio = canvas.width / box.width;
            const context = canvas.getContext("2d") as CanvasRenderingContext2D;
            const data = context.getImageData(
              Math.round((x - box.left) * ratio),
              Math.round((y - box.top) * ratio),
              1,
              1,
            ).data;
            return [data[0] ?? 0, data[1] ?? 0, data[2] ?? 0] as [number, number, number];
          },
          point as { x: number; y: number },
        );
      const [r0, g0, b0] = await pixelAt();
      // The weights' band in its size class's blue; with kv-cache chosen, grey (red, green, blue within 8).
      expect(b0 - r0).toBeGreaterThan(40);
      await page
        .locator("#nuvec-label")
        .selectOption({ label: "kv-cache · 3 allocations, 96.00 MiB allocated" });
      const [r1, g1, b1] = await pixelAt();
      expect(Math.max(r1, g1, b1) - Math.min(r1, g1, b1)).toBeLessThanOrEqual(8);
      await page.locator("#nuvec-label").selectOption({ index: 0 });
      expect(await pixelAt()).toEqual([r0, g0, b0]);
      expect(problems).toEqual([]);
      await page.close();
    });
  },
);
