// Opens a generated report in headless Chromium (Debian's package) and checks that the chart really
// rendered: the screenshot holds many pixels of each series' colour. Skips when Chromium is not installed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { emptyMemoryStats } from "@nuvec/stats";
import { afterAll, describe, expect, it } from "vitest";
import { renderReport } from "../src/lib/report.js";

const chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => existsSync(path));
const folder = mkdtempSync(join(tmpdir(), "nuvec-report-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Decodes an 8-bit RGB or RGBA PNG into rows of pixels (enough for Chromium's screenshots). */
function decodePng(png: Buffer): {
  width: number;
  height: number;
  pixel: (x: number, y: number) => number[];
} {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const bitDepth = png[24];
  const colorType = png[25];
  if (bitDepth !== 8 || (colorType !== 2 && colorType !== 6))
    throw new Error(`unsupported PNG ${bitDepth}/${colorType}`);
  const channels = colorType === 6 ? 4 : 3;
  const chunks: Buffer[] = [];
  for (let offset = 8; offset < png.length; ) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("latin1", offset + 4, offset + 8);
    if (type === "IDAT") chunks.push(png.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(chunks));
  const stride = width * channels;
  const image = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x += 1) {
      const value = raw[y * (stride + 1) + 1 + x] as number;
      const left = x >= channels ? (image[y * stride + x - channels] as number) : 0;
      const up = y > 0 ? (image[(y - 1) * stride + x] as number) : 0;
      const upLeft = y > 0 && x >= channels ? (image[(y - 1) * stride + x - channels] as number) : 0;
      let predicted = 0;
      if (filter === 1) predicted = left;
      else if (filter === 2) predicted = up;
      else if (filter === 3) predicted = (left + up) >> 1;
      else if (filter === 4) {
        const estimate = left + up - upLeft;
        const [a, b, c] = [Math.abs(estimate - left), Math.abs(estimate - up), Math.abs(estimate - upLeft)];
        predicted = a <= b && a <= c ? left : b <= c ? up : upLeft;
      }
      image[y * stride + x] = (value + predicted) & 255;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => [...image.subarray(y * stride + x * channels, y * stride + x * channels + 3)],
  };
}

describe.skipIf(chromium === undefined)("the HTML report in headless Chromium", () => {
  it("renders the timeline: each series' colour is on screen", () => {
    const samples = Array.from({ length: 400 }, (_, index) => ({
      x: index,
      active: (index % 100) * 1e6,
      cache: 50e6 + (index % 37) * 1e6,
      wired: 30e6,
      mapped: 80e6,
    }));
    const page = join(folder, "report.html");
    writeFileSync(
      page,
      renderReport({
        title: "browser test",
        xLabel: "event",
        samples,
        tables: [{ title: "end", stats: emptyMemoryStats() }],
      }),
    );
    const screenshot = join(folder, "report.png");
    const result = spawnSync(
      chromium as string,
      [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        `--user-data-dir=${join(folder, "profile")}`,
        `--screenshot=${screenshot}`,
        "--window-size=1100,800",
        `file://${page}`,
      ],
      { encoding: "utf8", timeout: 90_000 },
    );
    expect(existsSync(screenshot), result.stderr).toBe(true);
    const image = decodePng(readFileSync(screenshot));
    const counts = new Map<string, number>();
    const colours: Record<string, number[]> = {
      active: [0x25, 0x63, 0xeb],
      cache: [0xf5, 0x9e, 0x0b],
      wired: [0x16, 0xa3, 0x4a],
      mapped: [0x93, 0x33, 0xea],
    };
    for (let y = 0; y < image.height; y += 1) {
      for (let x = 0; x < image.width; x += 1) {
        const [r, g, b] = image.pixel(x, y) as [number, number, number];
        for (const [name, [cr, cg, cb]] of Object.entries(colours) as [string, number[]][]) {
          if (
            Math.abs(r - (cr as number)) < 12 &&
            Math.abs(g - (cg as number)) < 12 &&
            Math.abs(b - (cb as number)) < 12
          ) {
            counts.set(name, (counts.get(name) ?? 0) + 1);
          }
        }
      }
    }
    for (const name of Object.keys(colours)) expect(counts.get(name) ?? 0, name).toBeGreaterThan(200);
  });
});
