// The seven workloads of fixtures/traces run four times from the start, as a runtime repeats a step: the
// system allocations of each pass and the peak reserved over all four against the workload's live peak, under
// the default, `reserveRatio: 1.5` and `segments` (the README's "Repeated passes" table, to the allocation).
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { tracesDir } from "../test/support.js";
import { readTrace } from "./node.js";
import { type ReplayOptions, replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";

const DEFAULT = { workingSet: 8589934592, memorySize: 17179869184 } as const;
const PASSES = 4;

/**
 * `events` `passes` times over: each pass the same events with ids past the previous pass's, then a free of
 * what it left live. Returns them and where each pass starts.
 */
function repeatedPasses(events: TraceEvent[], passes: number): { events: TraceEvent[]; starts: number[] } {
  let idsPerPass = 0;
  const live = new Set<number>();
  for (const event of events) {
    if (event[0] === "a") {
      idsPerPass = Math.max(idsPerPass, event[1] + 1);
      live.add(event[1]);
    } else if (event[0] === "f") live.delete(event[1]);
  }
  const all: TraceEvent[] = [];
  const starts: number[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const offset = pass * idsPerPass;
    starts.push(all.length);
    for (const event of events) {
      all.push(event[0] === "a" ? ["a", event[1] + offset, event[2]] : ["f", (event[1] as number) + offset]);
    }
    for (const id of live) all.push(["f", id + offset]);
  }
  return { events: all, starts };
}

/** System allocations of each pass, and peak reserved over all passes against `peakLive` (2 decimals). */
function perPass(events: TraceEvent[], options: ReplayOptions, peakLive: number) {
  const { events: all, starts } = repeatedPasses(events, PASSES);
  const marks: number[] = [];
  const result = replayTrace(all, {
    ...DEFAULT,
    ...options,
    onEvent: (_event, index, allocator) => {
      if (starts.includes(index + 1)) marks.push(allocator.memoryStats().systemAllocations);
    },
  });
  marks.push(result.stats.systemAllocations);
  return {
    passes: marks.map((made, pass) => made - (pass === 0 ? 0 : marks[pass - 1]!)),
    reserved: (result.stats.peakReserved / peakLive).toFixed(2),
  };
}

// workload: [default, reserveRatio 1.5, segments], each the system allocations of passes 1–4 and reserved / live.
const expected: Record<string, [number[], string][]> = {
  "gpt2-generate": [
    [[206, 0, 0, 0], "1.03"],
    [[206, 0, 0, 0], "1.03"],
    [[10, 0, 0, 0], "1.04"],
  ],
  "bert-dynamic": [
    [[277, 30, 32, 22], "1.20"],
    [[232, 0, 0, 0], "1.49"],
    [[13, 0, 0, 0], "1.17"],
  ],
  "resnet50-train": [
    [[767, 299, 293, 279], "1.20"],
    [[820, 192, 218, 195], "1.50"],
    [[86, 1, 1, 3], "1.08"],
  ],
  "inference-loop": [
    [[187, 45, 43, 43], "1.20"],
    [[95, 5, 4, 3], "1.50"],
    [[9, 0, 0, 0], "1.47"],
  ],
  "transformer-train": [
    [[526, 5, 5, 5], "1.20"],
    [[436, 0, 0, 0], "1.40"],
    [[40, 1, 0, 0], "1.09"],
  ],
  "toy-train": [
    [[26, 2, 2, 2], "1.18"],
    [[14, 6, 0, 0], "1.50"],
    [[4, 0, 0, 0], "1.79"],
  ],
  "decode-growing": [
    [[355, 4, 4, 4], "1.20"],
    [[357, 0, 0, 0], "1.48"],
    [[8, 0, 0, 0], "1.41"],
  ],
};

const VARIANTS: ReplayOptions[] = [{}, { reserveRatio: 1.5 }, { policy: "segments" }];

describe("the seven workloads run four times from the start (the README's repeated passes)", () => {
  it.each(Object.keys(expected))("%s: each pass's system allocations and the peak reserved", (workload) => {
    // Passes past the first cost nothing under a policy in a steady state; the default reaches none on five.
    const { events } = readTrace(resolve(tracesDir, `${workload}.ndjson.gz`));
    // The workload's own live peak: the size classes live at once (the segments policy counts its blocks).
    const peakLive = replayTrace(events, { ...DEFAULT, policy: "mlx" }).counters.peakLive;
    const figures = VARIANTS.map((options) => perPass(events, options, peakLive));
    expect(figures.map((f) => [f.passes, f.reserved])).toEqual(expected[workload]);
  });
});
