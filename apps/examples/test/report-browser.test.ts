/// <reference lib="dom" />
// The memory view opened in a real browser: headless Chromium (Debian's package) driven by playwright-core
// opens each report the programs write (a replay, a comparison of every policy, a PyTorch snapshot, the demo,
// and a half-million-event trace) and checks what a person would see: no console error and no request
// leaving the file, bands drawn where the allocations are, the tooltip of a known allocation on hover, and
// the peaks drawn where the figures say. Skips where Chromium is not installed, except under CI=true where
// apt-get could have installed it (.ci/system-packages does).
import { spawnSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ALLOCATOR_POLICIES } from "@nuvec/allocator";
import { printable } from "@nuvec/stats";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumExecutable, launchChromium } from "../scripts/chromium.mjs";
import { app, root, run, scratchFolder, shippedTrace, traceFile } from "./support.js";

const executable = chromiumExecutable;
const hasApt = spawnSync("sh", ["-c", "command -v apt-get"]).status === 0;
const mustRun = process.env.CI === "true" && hasApt;
const folder = scratchFolder("nuvec-view-");

/** A screenshot of a box of the page (page coordinates), decoded by the browser itself: a pixel's RGB. */
async function screenshotPixels(page: Page, box: Box): Promise<(x: number, y: number) => number[]> {
  const clip = { x: Math.floor(box.left) - 4, y: Math.floor(box.top) - 4 };
  const size = { width: Math.ceil(box.right) + 4 - clip.x, height: Math.ceil(box.bottom) + 4 - clip.y };
  const png = (await page.screenshot({ clip: { ...clip, ...size } })).toString("base64");
  const rgba = await page.evaluate(async (base64) => {
    const bytes = Uint8Array.from(atob(base64), (character) => character.charCodeAt(0));
    const bitmap = await createImageBitmap(new Blob([bytes], { type: "image/png" }));
    const context = new OffscreenCanvas(bitmap.width, bitmap.height).getContext("2d");
    context?.drawImage(bitmap, 0, 0);
    const data = context?.getImageData(0, 0, bitmap.width, bitmap.height).data ?? new Uint8ClampedArray();
    let text = "";
    for (let at = 0; at < data.length; at += 8192)
      text += String.fromCharCode(...data.subarray(at, at + 8192));
    return btoa(text);
  }, png);
  const image = Buffer.from(rgba, "base64");
  return (x, y) => {
    const [column, row] = [x - clip.x, y - clip.y];
    if (column < 0 || row < 0 || column >= size.width || row >= size.height)
      throw new Error(`${x},${y} not shot`);
    return [...image.subarray((row * size.width + column) * 4, (row * size.width + column) * 4 + 3)];
  };
}

const hex = (color: string) => [1, 3, 5].map((at) => Number.parseInt(color.slice(at, at + 2), 16));
const near = (pixel: number[], color: number[], tolerance = 10) =>
  pixel.every((value, index) => Math.abs(value - (color[index] as number)) <= tolerance);
/** The size classes' colours (both shades) and the policies' line colours, as the view draws them. */
const BAND_COLORS =
  `#93c5fd #3b82f6 #34d399 #a78bfa #f472b6 #94a3b8 #bfdbfe #2563eb #10b981 #8b5cf6 #ec4899 #64748b`
    .split(" ")
    .map(hex);
const POLICY_COLORS = "#1d4ed8 #b45309 #047857 #7c3aed".split(" ").map(hex);

/** A rectangle of the page, in CSS pixels. */
type Box = { left: number; top: number; right: number; bottom: number };

let browser: Browser | undefined;

/** A new page on the report, once its view is drawn, with the errors and requests it makes. */
async function open(path: string) {
  const page = await (browser as Browser).newPage({
    viewport: { width: 1500, height: 900 },
    deviceScaleFactor: 1,
  });
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("request", (request) => requests.push(request.url()));
  await page.goto(`file://${path}`);
  await page.waitForFunction(
    () => {
      const view = (window as unknown as { nuvecView?: { ready: boolean; error?: string } }).nuvecView;
      return view?.ready === true || view?.error !== undefined;
    },
    undefined,
    { timeout: 60_000 },
  );
  return { page, errors, requests };
}

/** The checks every report passes; returns what the page said about itself. */
async function check(path: string, policies: number): Promise<{ firstDrawMs: number; tooltip: string }> {
  const { page, errors, requests } = await open(path);
  try {
    const state = await page.evaluate(() => {
      type View = {
        error?: string;
        firstDrawMs: number;
        model: { size: Float64Array; start: Uint32Array; end: Uint32Array };
        drawnPeak(index: number, which?: string): number;
        reportedPeak(index: number): { active: number; reserved: number };
        locate(index: number): { x: number; y: number } | undefined;
        pagePoint(event: number, bytes: number): { x: number; y: number };
      };
      const view = (window as unknown as { nuvecView: View }).nuvecView;
      // The allocation with the largest band drawn, size by lifetime (the easiest to point at).
      const area = (index: number) =>
        (view.model.size[index] as number) *
        ((view.model.end[index] as number) - (view.model.start[index] as number));
      let largest = -1;
      for (let index = 0; index < view.model.size.length; index += 1) {
        if ((largest < 0 || area(index) > area(largest)) && view.locate(index)) largest = index;
      }
      const peaks = Array.from(
        { length: view.model ? document.querySelectorAll("#nuvec-policy option").length : 0 },
        (_, index) => ({
          drawn: view.drawnPeak(index),
          drawnActive: view.drawnPeak(index, "active"),
          reported: view.reportedPeak(index),
          y: view.pagePoint(0, view.reportedPeak(index).reserved).y,
        }),
      );
      // The figures table's peak reserved row, where there is one.
      const cells = document.querySelectorAll("#nuvec-figures tr:has(> th) td[data-bytes]");
      const figures = Array.from(cells)
        .filter((cell) => cell.parentElement?.querySelector("th")?.textContent === "peak reserved")
        .map((cell) => Number((cell as HTMLElement).dataset.bytes));
      const box = (document.querySelector("#nuvec-chart .u-over") as HTMLElement).getBoundingClientRect();
      return {
        error: view.error,
        firstDrawMs: view.firstDrawMs,
        largest,
        largestSize: view.model.size[largest],
        at: view.locate(largest),
        peaks,
        figures,
        plot: { left: box.left, top: box.top, right: box.right, bottom: box.bottom },
      };
    });
    expect(state.error).toBeUndefined();
    expect(errors).toEqual([]);
    expect(
      requests.every((url) => url.startsWith("file:") || url.startsWith("blob:") || url.startsWith("data:")),
    ).toBe(true);
    expect(state.peaks.length).toBe(policies);
    // The drawn peaks are the reported ones, exactly, and the figures table says the same.
    const reported = state.peaks.map((peak) => peak.reported);
    expect(state.peaks.map((peak) => ({ active: peak.drawnActive, reserved: peak.drawn }))).toEqual(reported);
    if (state.figures.length > 0)
      expect(state.figures.slice(0, policies)).toEqual(reported.map((peak) => peak.reserved));

    const { plot } = state;
    const pixel = await screenshotPixels(page, plot);
    // Bands are drawn: the plot area holds many pixels of the size classes' colours, and the largest
    // allocation's band is under its middle.
    let banded = 0;
    for (let y = Math.ceil(plot.top); y < plot.bottom; y += 2) {
      for (let x = Math.ceil(plot.left); x < plot.right; x += 2) {
        if (BAND_COLORS.some((color) => near(pixel(x, y), color, 3))) banded += 1;
      }
    }
    expect(banded).toBeGreaterThan(500);
    expect(state.at).toBeDefined();
    const at = state.at as { x: number; y: number };
    // (A grid line may cross the very pixel, and the canvas may sit on a fraction of a pixel: the five
    // pixels around it, a size class's colour within a blend.)
    const under = [-2, -1, 0, 1, 2].map((dx) => pixel(Math.floor(at.x) + dx, Math.floor(at.y)));
    expect(
      under.some((pixel) => BAND_COLORS.some((color) => near(pixel, color, 24))),
      `pixels ${under.join(" ")} under allocation ${state.largest}`,
    ).toBe(true);

    // Each policy's reserved line reaches its peak where the axis puts it (the unselected ones carry no
    // dashed marker, so their top is the line's own).
    for (let index = 1; index < policies; index += 1) {
      const color = POLICY_COLORS[index] as number[];
      let top = Number.POSITIVE_INFINITY;
      for (let y = Math.ceil(plot.top); y < plot.bottom && top === Number.POSITIVE_INFINITY; y += 1) {
        for (let x = Math.ceil(plot.left); x < plot.right; x += 1) {
          if (near(pixel(x, y), color, 40)) {
            top = y;
            break;
          }
        }
      }
      expect(
        Math.abs(top - (state.peaks[index]?.y as number)),
        `policy ${index}: top of its line`,
      ).toBeLessThanOrEqual(2);
    }

    // Hover on the largest allocation: the tooltip names it, with its size in bytes.
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction(
      () => (document.getElementById("nuvec-tooltip") as HTMLElement).style.display === "block",
    );
    const tooltip = (await page.textContent("#nuvec-tooltip")) ?? "";
    expect(tooltip).toContain(`allocation ${state.largest} `);
    expect(tooltip).toContain(`(${state.largestSize} B)`);
    expect(tooltip).toMatch(/allocated at event \d+/);
    expect(tooltip).toMatch(/age \d+ events/);

    // Zoom as a person does: drag across the middle fifth of the plot, then double-click to zoom out.
    const range = () =>
      page.evaluate(() => {
        const view = (
          window as unknown as { nuvecView: { columns: { from: number; to: number; count: number } } }
        ).nuvecView;
        return { from: view.columns.from, to: view.columns.to, count: view.columns.count };
      });
    const whole = await range();
    const width = plot.right - plot.left;
    const y = (plot.top + plot.bottom) / 2;
    await page.mouse.move(plot.left + width * 0.4, y);
    await page.mouse.down();
    await page.mouse.move(plot.left + width * 0.5, y, { steps: 5 });
    await page.mouse.move(plot.left + width * 0.6, y, { steps: 5 });
    await page.mouse.up();
    const zoomed = await range();
    const events = whole.to - whole.from;
    expect(Math.abs(zoomed.from - (whole.from + 0.4 * events))).toBeLessThanOrEqual(events / 100 + 1);
    expect(Math.abs(zoomed.to - (whole.from + 0.6 * events))).toBeLessThanOrEqual(events / 100 + 1);
    await page.mouse.dblclick(plot.left + width / 2, y);
    expect(await range()).toEqual(whole);
    // Another policy's cache in the band: the peak markers follow it.
    if (policies > 1) {
      await page.selectOption("#nuvec-policy", "1");
      const selected = await page.evaluate(
        () => (window as unknown as { nuvecView: { selected: number } }).nuvecView.selected,
      );
      expect(selected).toBe(1);
    }
    // And to a range typed in: one column per event when it is that narrow.
    await page.fill("#nuvec-from", "0");
    await page.fill("#nuvec-to", "50");
    await page.click("#nuvec-zoom");
    expect(await range()).toEqual({ from: 0, to: 50, count: 50 });
    expect(errors).toEqual([]);
    return { firstDrawMs: state.firstDrawMs, tooltip };
  } finally {
    await page.close();
  }
}

describe("the browser is there where it must be", () => {
  it.runIf(mustRun)("has Chromium under CI (.ci/system-packages installs Debian's chromium)", () => {
    expect(
      executable,
      "install Debian's chromium: apt-get install -y --no-install-recommends chromium",
    ).toBeDefined();
  });
});

describe.skipIf(executable === undefined)("the memory view in headless Chromium", () => {
  beforeAll(async () => {
    browser = await launchChromium(executable as string);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
  });

  /** Writes a report with a program (its output file the last argument); returns the report's path. */
  function report(program: string, args: string[], name: string): string {
    const html = join(folder, name);
    const result = run(program, [...args, html]);
    expect(result.status, result.stderr).toBe(0);
    return html;
  }
  const all = ALLOCATOR_POLICIES.length;

  it.each([
    ["a replay under one policy", "replay", [shippedTrace, "--html"], 1],
    [
      "every policy compared on a training trace",
      "replay",
      [join(root, "fixtures", "traces", "resnet50-train.ndjson.gz"), "--compare", "all", "--html"],
      all,
    ],
    ["the demo's report", "demo", ["--checkpoint-size", "24MiB", "--report"], 1],
  ] as const)("%s", async (_title, program, args, policies) => {
    await check(report(program, [...args], `${program}-${policies}.html`), policies);
  });

  it("a PyTorch snapshot compared under every policy, with PyTorch's own reserved memory", async () => {
    const snapshot = join(app, "traces", "toy-train.pickle");
    const html = report("replay", [snapshot, "--compare", ALLOCATOR_POLICIES.join(","), "--html"], "pt.html");
    const { tooltip } = await check(html, all);
    // The tooltip shows the allocation's stack frames.
    expect(tooltip).toMatch(/\n\S+ \(\/opt\/model\/\w+\.py:\d+\)/);
    expect(readFileSync(html, "utf8")).toContain("PyTorch reserved");
  });

  it("a trace whose name is markup: shown as text, nothing runs", async () => {
    const name = `<img src=x onerror="window.ran=1;alert(1)"></script><script>window.ran=2</script>`;
    const lines = [{ name }, ["a", 0, 4096], ["a", 1, 1 << 20], ["f", 0], ["a", 2, 512]];
    const html = report(
      "replay",
      [traceFile(join(folder, "named.ndjson.gz"), lines), "--html"],
      "named.html",
    );
    const { page, errors, requests } = await open(html);
    let dialogs = 0;
    page.on("dialog", (dialog) => {
      dialogs += 1;
      void dialog.dismiss();
    });
    const seen = await page.evaluate(() => ({
      ran: (window as unknown as { ran?: number }).ran,
      heading: document.querySelector("h1")?.textContent,
      images: document.images.length,
    }));
    expect(seen).toEqual({
      ran: undefined,
      // The heading carries the name as the terminal prints it: escaped and cut (the markup stays text).
      heading: `${printable(name, 60)}: 4 events, policy ${ALLOCATOR_POLICIES[0]}`,
      images: 0,
    });
    expect(dialogs).toBe(0);
    expect(errors).toEqual([]);
    expect(requests.every((url) => !url.startsWith("http"))).toBe(true);
    await page.close();
  });

  it("half a million events: the file stays small and the page draws them", async () => {
    const long = join(folder, "long.ndjson.gz");
    const fixture = join(root, "fixtures", "traces", "gpt2-generate.ndjson.gz");
    const script = join(app, "scripts", "repeat-trace.mjs");
    const made = spawnSync(process.execPath, [script, fixture, "4", long], { encoding: "utf8" });
    expect(made.status, made.stderr).toBe(0);
    expect(JSON.parse(made.stdout).events).toBeGreaterThan(500_000);
    const html = report("replay", [long, "--compare", "all", "--html"], "long.html");
    const bytes = statSync(html).size;
    expect(bytes).toBeLessThan(20 * 1024 * 1024);
    const { firstDrawMs } = await check(html, all);
    // For the log (speed is measured by scripts/measure-view.mjs, not asserted here).
    console.log(
      `500k-event view: ${(bytes / 1024 / 1024).toFixed(2)} MiB, first draw ${firstDrawMs.toFixed(0)} ms after navigation`,
    );
  });
});
