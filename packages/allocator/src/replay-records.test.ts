// The replay keeps the size-class allocator's records instead of an Allocation per malloc: the same
// decisions and figures as the allocator's public malloc, free and quarantine, event for event.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { figures, tracesDir } from "../test/support.js";
import { sizeClassEngineOf } from "./allocator.js";
import { CountingBufferSource } from "./counting-source.js";
import { type Allocation, CachingAllocator } from "./index.js";
import { readTrace } from "./node/trace-file.js";
import { replayTrace } from "./replay.js";
import type { TraceEvent } from "./trace-format.js";

const FACTS = {
  workingSet: 8 * 1024 ** 3,
  memorySize: 16 * 1024 ** 3,
  maxBufferLength: Number.MAX_SAFE_INTEGER,
  resourceLimit: 499_000,
  pageSize: 16384,
};

/** The events through the public API, as a runtime calls it. */
function publicReplay(events: readonly TraceEvent[], policy: "mlx" | "bounded", cacheLimit?: number) {
  const allocator = new CachingAllocator(new CountingBufferSource(FACTS), { policy });
  if (cacheLimit !== undefined) allocator.setCacheLimit(cacheLimit);
  const live = new Map<number, Allocation<number>>();
  const quarantined = new Map<number, Allocation<number>>();
  for (const event of events) {
    if (event[0] === "a") live.set(event[1], allocator.malloc(event[2]));
    else if (event[0] === "f" || event[0] === "q") {
      const allocation = live.get(event[1]) as Allocation<number>;
      live.delete(event[1]);
      if (event[0] === "f") allocator.free(allocation);
      else {
        allocator.quarantine(allocation);
        quarantined.set(event[1], allocation);
      }
    } else if (event[0] === "r") allocator.endQuarantine(quarantined.get(event[1]) as Allocation<number>);
  }
  return figures(allocator);
}

const replayed = (events: readonly TraceEvent[], policy: "mlx" | "bounded", cacheLimit?: number) => {
  const result = replayTrace(events, { ...FACTS, policy, cacheLimit });
  return { stats: result.stats, counters: result.counters };
};

describe("the replay's records", () => {
  const traces = ["gpt2-generate", "bert-dynamic", "resnet50-train"].map((name) => ({
    name,
    events: readTrace(resolve(tracesDir, `${name}.ndjson.gz`)).events as TraceEvent[],
  }));

  it.each(["mlx", "bounded"] as const)(
    "give the public API's figures on every shared trace (%s)",
    (policy) => {
      for (const { events } of traces) {
        expect(replayed(events, policy)).toEqual(publicReplay(events, policy));
        // A cache limit that trims after mallocs and sends frees past it to the system.
        expect(replayed(events, policy, 64 * 1024 ** 2)).toEqual(
          publicReplay(events, policy, 64 * 1024 ** 2),
        );
      }
    },
  );

  it("quarantine and give back, 0-byte allocations and reused buffers, as the public API does", () => {
    const events: TraceEvent[] = [
      ["a", 0, 0],
      ["a", 1, 5000],
      ["a", 2, 70_000],
      ["q", 1],
      ["f", 0],
      ["a", 3, 70_000],
      ["f", 2],
      ["a", 4, 60_000],
      ["r", 1],
      ["q", 4],
      ["f", 3],
      ["a", 5, 5000],
    ];
    for (const policy of ["mlx", "bounded"] as const) {
      const result = replayed(events, policy);
      expect(result).toEqual(publicReplay(events, policy));
      // 5 KiB buffer 1 was quarantined and given back; 80 KiB buffer 4 (the reused 2) stays quarantined.
      expect(result.stats.quarantined).toBe(81_920);
      expect(result.counters).toMatchObject({ cacheHits: 1, liveBuffers: 1 });
    }
  });

  it("a record given back twice or to another allocator is refused, nothing changed", () => {
    const allocator = new CachingAllocator(new CountingBufferSource(FACTS), { policy: "mlx" });
    const other = new CachingAllocator(new CountingBufferSource(FACTS), { policy: "mlx" });
    const engine = sizeClassEngineOf(allocator)!;
    const record = engine.acquire(5000)!;
    expect(() => sizeClassEngineOf(other)!.recycle(record)).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_FOREIGN_ALLOCATION" }),
    );
    engine.recycle(record);
    const before = figures(allocator);
    expect(() => engine.recycle(record)).toThrow(expect.objectContaining({ code: "ERR_NUVEC_DOUBLE_FREE" }));
    expect(figures(allocator)).toEqual(before);
    expect(before.counters).toMatchObject({ liveBuffers: 0, cachedBuffers: 1 });
    expect(
      sizeClassEngineOf(new CachingAllocator(new CountingBufferSource(FACTS), { policy: "segments" })),
    ).toBe(undefined);
  });
});
