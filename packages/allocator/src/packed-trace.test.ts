// A packed trace replays with the figures of its items, to the byte, under every policy and configuration,
// and refuses what a replay of the items refuses, with the same error and nothing packed.
import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import { ArgumentError, FormatError, OutOfMemoryError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { badEvents, badIdHistories } from "../test/bad-traces.js";
import { MiB, thrown, tracesDir } from "../test/support.js";
import { readTrace } from "./node.js";
import { PackedTrace, packTrace } from "./packed-trace.js";
import { type ReplayOptions, type ReplayResult, replayTrace } from "./replay.js";
import type { TraceEvent, TraceHeader } from "./trace-format.js";

// The configurations of fixtures/traces/README.md.
const configurations: Record<string, ReplayOptions> = {
  default: { workingSet: 8589934592, memorySize: 17179869184 },
  cache64: { workingSet: 8589934592, memorySize: 17179869184, cacheLimit: 67108864 },
  small: { workingSet: 536870912, memorySize: 1073741824, memoryLimit: 8589934592 },
};

// Every policy, and the segments policy over a device that maps memory (its large pool expandable).
const policies: Record<string, ReplayOptions> = {
  mlx: { policy: "mlx" },
  bounded: { policy: "bounded" },
  segments: { policy: "segments" },
  "segments, mapped": { policy: "segments", mapGranularity: 2 * MiB },
};

/** What a replay ends with, less its timing. */
const outcome = ({ header, stats, counters, events }: ReplayResult) => ({ header, stats, counters, events });

const both = (items: (TraceEvent | TraceHeader)[], options: ReplayOptions = {}) => ({
  packed: outcome(replayTrace(packTrace(items), options)),
  items: outcome(replayTrace(items, options)),
});

const messageOf = (action: () => unknown) => (thrown(action) as Error).message;

const workloads = readdirSync(tracesDir)
  .filter((file) => file.endsWith(".ndjson.gz"))
  .map((file) => file.replace(".ndjson.gz", ""));

describe("packTrace", () => {
  it("finds the seven workloads of fixtures/traces", () => {
    expect(workloads).toHaveLength(7);
  });

  describe.each(workloads)("%s", (workload) => {
    const { header, events } = readTrace(resolve(tracesDir, `${workload}.ndjson.gz`));
    const items = [header as TraceHeader, ...events];
    const packed = packTrace(items);
    // The generated decode trace has a million events: one configuration is enough there.
    const names = workload === "decode-growing" ? ["default"] : Object.keys(configurations);

    it.each(Object.keys(policies))(
      "replays with the items' figures under %s, in every configuration",
      (policy) => {
        for (const name of names) {
          const options = { ...configurations[name], ...policies[policy] };
          expect(outcome(replayTrace(packed, options)), `${name}`).toEqual(
            outcome(replayTrace(items, options)),
          );
        }
      },
    );

    it("keeps the header and counts the events without it", () => {
      expect(packed.header).toEqual(header);
      expect(packed.events).toBe(events.length);
    });
  });

  it("replays the events a Device records: mappings, limits, cache clears, peak resets, quarantines", () => {
    const trace: TraceEvent[] = [
      ["a", 0, 1000],
      ["m", 0, 100_000],
      ["l", "cache", 0],
      ["a", 1, 70_000],
      ["q", 1],
      ["f", 0],
      ["l", "wired", 4096],
      ["p"],
      ["a", 2, 5000],
      ["r", 1],
      ["f", 2],
      ["l", "memory", 8 * MiB],
      ["u", 0],
      ["c"],
      ["a", 3, 3 * MiB],
    ];
    for (const options of Object.values(policies)) {
      const { packed, items } = both(trace, { ...options, cacheLimit: 64 * MiB });
      expect(packed).toEqual(items);
    }
    // Each prefix too: a quarantine still held, a mapping still live.
    for (let count = 1; count <= trace.length; count++) {
      const { packed, items } = both(trace.slice(0, count));
      expect(packed, `${count} events`).toEqual(items);
    }
  });

  it("reuses a freed allocation's slot, with ids anywhere below 2^53", () => {
    const big = Number.MAX_SAFE_INTEGER;
    const trace: TraceEvent[] = [
      ["a", big, 4096],
      ["a", 7, 100],
      ["f", big],
      ["a", 2 ** 40, 4096],
      ["f", 7],
      ["f", 2 ** 40],
    ];
    const { packed, items } = both(trace);
    expect(packed).toEqual(items);
    expect(packed.counters).toMatchObject({ cacheHits: 1, cacheMisses: 2 });
  });

  it("packs any iterable as it packs an array", () => {
    const trace: TraceEvent[] = [
      ["a", 0, 1000],
      ["a", 1, 5000],
      ["f", 0],
      ["a", 2, 900],
    ];
    function* generated() {
      yield* trace;
    }
    expect(outcome(replayTrace(packTrace(generated())))).toEqual(outcome(replayTrace(trace)));
  });

  it("replays the same packed trace again with the same figures (a replay changes nothing in it)", () => {
    const packed = packTrace([
      ["a", 0, 1000],
      ["f", 0],
      ["a", 1, 1000],
    ]);
    const first = outcome(replayTrace(packed, { cacheLimit: 0 }));
    expect(first.counters).toMatchObject({ cacheHits: 0, systemAllocations: 2 });
    expect(outcome(replayTrace(packed)).counters).toMatchObject({ cacheHits: 1, systemAllocations: 1 });
    expect(outcome(replayTrace(packed, { cacheLimit: 0 }))).toEqual(first);
  });

  it("stops at an out-of-memory refusal as the items do, or skips it and its free", () => {
    const trace: TraceEvent[] = [
      ["a", 0, 2048],
      ["a", 1, 4096],
      ["f", 1],
      ["f", 0],
    ];
    const refused = thrown(() => replayTrace(packTrace(trace), { memoryLimit: 4096 }));
    expect(refused).toBeInstanceOf(OutOfMemoryError);
    expect((refused as Error).message).toBe(messageOf(() => replayTrace(trace, { memoryLimit: 4096 })));
    const { packed, items } = both(trace, { memoryLimit: 4096, outOfMemory: "skip" });
    expect(packed).toEqual(items);
    expect(packed.counters).toMatchObject({ outOfMemoryRefusals: 1 });
  });

  it.each([...badIdHistories, ...badEvents])(
    "refuses %s with the FormatError a replay of the items throws",
    (_name, trace, message) => {
      const error = thrown(() => packTrace(trace));
      expect(error).toBeInstanceOf(FormatError);
      expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_EVENT", message: expect.stringMatching(message) });
      expect((error as Error).message).toBe(messageOf(() => replayTrace(trace)));
    },
  );

  it("refuses onEvent: a packed trace has no event arrays to hand it", () => {
    const packed = packTrace([["a", 0, 1]]);
    const error = thrown(() => replayTrace(packed, { onEvent: () => {} }));
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as Error).message).toMatch(/onEvent/);
  });

  it("is made by packTrace only", () => {
    expect(packTrace([])).toBeInstanceOf(PackedTrace);
    expect(packTrace([]).events).toBe(0);
  });
});
