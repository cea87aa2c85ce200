/// <reference lib="dom" />
// The view in a real browser (Debian's headless Chromium through playwright-core): at 800, 1280 and 1920
// pixels and at several zooms, the axes' labels (as the page measured them) never overlap, the x axis is in
// marks when the trace has marks, the mapped files' band is drawn, and nothing fails or leaves the file.
// Skips where Chromium is not installed, except under CI=true where apt-get could have installed it.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { readTrace } from "@nuvec/allocator/node";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryViewApi } from "../src/view/client.js";
import { chromiumExecutable, launchChromium } from "./chromium.mjs";
import { root, runCli, scratchFolder } from "./support.js";

const hasApt = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
const mustRun = process.env.CI === "true" && hasApt;
const folder = scratchFolder("nuvec-view-browser-");
const GiB = 1024 ** 3;

/** resnet50-train with a checkpoint mapped first and a mark every 210 events. */
function markedTrace(): string {
  const { events } = readTrace(join(root, "fixtures", "traces", "resnet50-train.ndjson.gz"));
  const lines: unknown[] = [{ name: "marked" }, ["m", 1_000_000, 1.25 * GiB]];
  events.forEach((event, index) => {
    if (index % 210 === 0) lines.push(["k", `step ${index / 210}`]);
    lines.push(event);
  });
  const path = join(folder, "marked.ndjson.gz");
  writeFileSync(path, gzipSync(`${lines.map((line) => JSON.stringify(line)).join("\n")}\n`));
  return path;
}

function view(trace: string, name: string): string {
  const html = join(folder, `${name}.html`);
  const ran = runCli([trace, "--policies", "all", "--html", html]);
  if (ran.status !== 0) throw new Error(ran.stderr);
  return html;
}

describe.skipIf(chromiumExecutable === undefined && !mustRun)("the view in headless Chromium", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium(chromiumExecutable as string);
  });
  afterAll(async () => browser?.close());

  for (const [name, trace] of [
    ["marked", () => markedTrace()],
    ["events", () => join(root, "fixtures", "traces", "bert-dynamic.ndjson.gz")],
  ] as const) {
    it(`${name}: labels apart at three widths and four zooms, no error, nothing fetched`, async () => {
      const html = view(trace(), name);
      for (const width of [800, 1280, 1920]) {
        const page = await browser.newPage({ viewport: { width, height: 900 } });
        const problems: string[] = [];
        page.on("console", (message) => {
          if (message.type() === "error") problems.push(message.text());
        });
        page.on("pageerror", (error) => problems.push(String(error)));
        page.on("request", (request) => {
          if (!request.url().startsWith("file:")) problems.push(`request ${request.url()}`);
        });
        await page.goto(`file://${html}`);
        await page.waitForFunction(
          () => (window as unknown as { nuvecView?: MemoryViewApi }).nuvecView?.ready,
        );
        const events = await page.evaluate(
          () => (window as unknown as { nuvecView: MemoryViewApi }).nuvecView.model?.events ?? 0,
        );
        for (const [from, to] of [
          [0, events],
          [0, Math.ceil(events / 7)],
          [Math.floor(events / 3), Math.floor(events / 3) + 400],
          [100, 130],
        ] as const) {
          const measured = await page.evaluate(
            async ([low, high]) => {
              const api = (window as unknown as { nuvecView: MemoryViewApi }).nuvecView;
              api.setRange(low, high);
              // uPlot redraws (and asks for its axes' ticks) on the next frames.
              for (let frame = 0; frame < 3; frame += 1)
                await new Promise((done) => requestAnimationFrame(done));
              const ticks = api.axisTicks();
              return {
                x: ticks.x.map((tick) => ({ ...tick, at: api.pagePoint(tick.value, 0).x })),
                y: ticks.y.map((tick) => ({ ...tick, at: api.pagePoint(0, tick.value).y })),
              };
            },
            [from, to] as const,
          );
          const where = `${name} at ${width}px, events ${from} to ${to}`;
          expect(measured.x.length, where).toBeGreaterThanOrEqual(1);
          expect(measured.y.length, where).toBeGreaterThanOrEqual(2);
          for (let index = 1; index < measured.x.length; index += 1) {
            const before = measured.x[index - 1] as (typeof measured.x)[number];
            const after = measured.x[index] as (typeof measured.x)[number];
            // Half of each label either side of its tick, and 12 pixels between (a pixel of rounding).
            expect(after.at - before.at, `${where}: ${before.label} | ${after.label}`).toBeGreaterThanOrEqual(
              (before.width + after.width) / 2 + 11,
            );
          }
          for (let index = 1; index < measured.y.length; index += 1) {
            const gap = (measured.y[index - 1]?.at ?? 0) - (measured.y[index]?.at ?? 0);
            expect(gap, where).toBeGreaterThanOrEqual(23);
          }
          // The ticks are of this range: inside it, marks while two or more are in view, else events.
          for (const tick of measured.x) expect(tick.value).toBeGreaterThanOrEqual(from);
          for (const tick of measured.x) expect(tick.value).toBeLessThanOrEqual(to);
          const marked = name === "marked" && to - from > 300;
          for (const tick of measured.x)
            expect(tick.label).toMatch(marked ? /^step \d+$/ : /^\d{1,3}(,\d{3})*$/);
        }
        expect(await page.locator("#nuvec-legend").textContent()).toContain(
          name === "marked" ? "mapped files" : "cache",
        );
        expect(problems, `${name} at ${width}px`).toEqual([]);
        await page.close();
      }
    });
  }
});
