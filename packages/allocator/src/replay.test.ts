import { FormatError, OutOfMemoryError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { badEvents, badIdHistories } from "../test/bad-traces.js";
import { MiB, thrown } from "../test/support.js";
import { CountingBufferSource } from "./counting-source.js";
import { replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";

const events: TraceEvent[] = [
  ["a", 0, 1000],
  ["a", 1, 5000],
  ["f", 0],
  ["a", 2, 900],
  ["f", 1],
  ["f", 2],
];

describe("replayTrace", () => {
  it("replays events and returns the final statistics, counters, event count and time per event", () => {
    const result = replayTrace(events);
    expect(result.events).toBe(6);
    expect(result.header).toBeUndefined();
    expect(result.stats).toMatchObject({
      active: 0,
      peakActive: 1024 + 5120,
      cache: 1024 + 5120,
      systemAllocations: 2,
    });
    expect(result.stats.peakReserved).toBe(1024 + 5120);
    expect(result.counters).toMatchObject({ cacheHits: 1, cacheMisses: 2 });
    expect(result.nsPerEvent).toBeGreaterThanOrEqual(0);
  });

  it("applies the events a Device records: mappings, limits, cache clears and peak resets", () => {
    const result = replayTrace(
      [
        ["a", 0, 1000],
        ["m", 0, 100_000],
        ["l", "cache", 0],
        ["f", 0],
        ["l", "wired", 4096],
        ["p"],
        ["a", 1, 5000],
        ["f", 1],
        ["l", "memory", 8 * MiB],
        ["u", 0],
        ["c"],
      ],
      { cacheLimit: 64 * MiB },
    );
    expect(result.events).toBe(11);
    // 100000 bytes mapped are charged 7 pages of 16 KiB; the cache limit 0 sends every free to the system.
    expect(result.stats).toMatchObject({
      active: 0,
      cache: 0,
      mapped: 0,
      cacheLimit: 0,
      memoryLimit: 8 * MiB,
    });
    expect(result.stats.peakActiveWithMapped).toBe(7 * 16384 + 5120);
    expect(result.stats.peakActive).toBe(5120);
    expect(result.counters).toMatchObject({ systemAllocations: 2, systemReleases: 2, mappings: 0 });
  });

  it("applies a quarantine: the buffer freed without caching, its bytes held against the limit until given back", () => {
    const at = (count: number) =>
      replayTrace(
        (
          [
            ["a", 0, 1000],
            ["q", 0],
            ["a", 1, 1000],
            ["r", 0],
            ["f", 1],
          ] as TraceEvent[]
        ).slice(0, count),
        { memoryLimit: 2048 },
      );
    expect(at(2).stats).toMatchObject({ active: 0, cache: 0, quarantined: 1024 });
    expect(at(2).counters).toMatchObject({ systemReleases: 1 });
    // Not reused: the next request of the same class is a new system buffer, within the limit with it.
    expect(at(3).counters).toMatchObject({ systemAllocations: 2, cacheHits: 0 });
    expect(at(4).stats).toMatchObject({ active: 1024, quarantined: 0 });
    expect(at(5).stats).toMatchObject({ active: 0, cache: 1024, quarantined: 0 });
    // Held against the limit: a third buffer does not fit beside the quarantined one and a live one.
    expect(() =>
      replayTrace(
        [
          ["a", 0, 1000],
          ["q", 0],
          ["a", 1, 1000],
          ["a", 2, 1000],
        ],
        { memoryLimit: 2048 },
      ),
    ).toThrow(/1024 quarantined/);
  });

  it.each([...badIdHistories, ...badEvents])("refuses %s with a FormatError", (_name, trace, message) => {
    const error = thrown(() => replayTrace(trace));
    expect(error).toBeInstanceOf(FormatError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_TRACE_EVENT", message: expect.stringMatching(message) });
  });

  it("takes an optional header first and returns it", () => {
    const header = { name: "tiny", events: 6 };
    expect(replayTrace([header, ...events]).header).toEqual(header);
  });

  it("applies the configuration: device, then memory limit, then cache limit (as setters after opening)", () => {
    const result = replayTrace(events, {
      workingSet: 512 * MiB,
      memorySize: 1024 * MiB,
      memoryLimit: 8192 * MiB,
      cacheLimit: 1024,
    });
    // f1 is cached (cache 0 < 1024), f2 then finds the cache at its limit and is released.
    expect(result.stats).toMatchObject({ memoryLimit: 8192 * MiB, cacheLimit: 1024, cache: 5120 });
  });

  it("calls onEvent after every event with its index and the allocator", () => {
    const seen: [string, number, number][] = [];
    replayTrace([{ name: "x" }, ...events], {
      onEvent: (event, index, allocator) => seen.push([event[0], index, allocator.memoryStats().active]),
    });
    expect(seen).toEqual([
      ["a", 0, 1024],
      ["a", 1, 6144],
      ["f", 2, 5120],
      ["a", 3, 6144],
      ["f", 4, 1024],
      ["f", 5, 0],
    ]);
  });

  it("stops at an out-of-memory refusal, or skips it and its free with outOfMemory: 'skip'", () => {
    const trace: TraceEvent[] = [
      ["a", 0, 2048],
      ["a", 1, 4096],
      ["f", 1],
      ["f", 0],
    ];
    expect(() => replayTrace(trace, { memoryLimit: 4096 })).toThrow(OutOfMemoryError);
    const result = replayTrace(trace, { memoryLimit: 4096, outOfMemory: "skip" });
    expect(result.counters).toMatchObject({ outOfMemoryRefusals: 1, cacheMisses: 1 });
    expect(result.stats.active).toBe(0);
  });

  it("runs the bounded policy when asked", () => {
    const result = replayTrace(events, { policy: "bounded", reserveRatio: 1.5 });
    expect(result.events).toBe(6);
  });
});

describe("CountingBufferSource", () => {
  it("hands out serial numbers and counts releases, with the device facts given (or defaults)", () => {
    const source = new CountingBufferSource({ workingSet: 1024 });
    expect(source).toMatchObject({ memorySize: 2048, resourceLimit: 499_000, pageSize: 16384 });
    expect([source.acquire(1), source.acquire(1)]).toEqual([1, 2]);
    source.release(1);
    expect(source).toMatchObject({ acquired: 2, released: 1 });
  });
});
