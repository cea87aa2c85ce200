import { emptyMemoryStats } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { renderReport } from "./report.js";

describe("renderReport", () => {
  const samples = Array.from({ length: 5000 }, (_, index) => ({
    x: index,
    active: index * 1000,
    cache: (5000 - index) * 10,
    wired: 1 << 20,
    mapped: 2 << 20,
  }));

  it("draws one polyline per series, thinned, with phases, tables and escaped text", () => {
    const html = renderReport({
      title: "a <test> & more",
      xLabel: "event",
      samples,
      phases: [{ name: "workload", x: 100 }],
      tables: [{ title: "end", stats: { ...emptyMemoryStats(), active: 1536 } }],
      facts: [["peak", "1.50 KiB"]],
    });
    expect(html.startsWith("<!doctype html>")).toBe(true);
    expect(html).toContain("a &#60;test&#62; &#38; more");
    for (const series of ["active", "cache", "wired", "mapped"]) {
      const match = html.match(new RegExp(`class="series series-${series}"[^>]*points="([^"]*)"`));
      expect(match).not.toBeNull();
      const points = (match?.[1] ?? "").split(" ");
      expect(points.length).toBeGreaterThan(100);
      expect(points.length).toBeLessThanOrEqual(2 * 1500); // steps: two points per sample
    }
    expect(html).toContain('class="phase"');
    expect(html).toContain("<caption>end</caption>");
    expect(html).toContain("1.50 KiB");
    expect(html).not.toMatch(/<script|src=|href=/);
  });

  it("keeps the peak when thinning", () => {
    const spiky = samples.map((sample) => ({ ...sample, active: sample.x === 2345 ? 9e9 : 0, cache: 0 }));
    const html = renderReport({ title: "t", xLabel: "x", samples: spiky });
    const points = html.match(/series-active"[^>]*points="([^"]*)"/)?.[1] ?? "";
    const ys = points.split(" ").map((point) => Number(point.split(",")[1]));
    expect(Math.min(...ys)).toBeCloseTo(20, 0);
  });
});
