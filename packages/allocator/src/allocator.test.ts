// The caching allocator's malloc and free under MLX's policy: buffers reused from the cache, what a miss
// does, the hard memory limit, what follows every malloc, and free. Its settings and device facts are
// tested in allocator-settings.test.ts, its refusals and close in allocator-refusals.test.ts.
import { ArgumentError, OutOfMemoryError, PAGE } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { setup } from "../test/mlx-setup.js";
import { KiB, MiB, refusal, thrown } from "../test/support.js";

describe("buffers and cache", () => {
  it("hands out the size class of the request (allocationSize); a miss makes a system buffer of exactly that", () => {
    const { source, allocator } = setup();
    expect(allocator.malloc(5000)).toMatchObject({ allocatedLength: 5120, length: 5000 });
    expect(allocator.malloc(16384).allocatedLength).toBe(16384);
    expect(allocator.malloc(16385).allocatedLength).toBe(32768);
    expect(source.acquired.map((buffer) => buffer.length)).toEqual([5120, 16384, 32768]);
    expect(allocator.memoryStats()).toMatchObject({ active: 5120 + 16384 + 32768, systemAllocations: 3 });
    expect(allocator.counters()).toMatchObject({ cacheMisses: 3, cacheHits: 0 });
  });

  it("quarantine gives the buffer back to the system, never to the cache (a moved view may reach it), counted until endQuarantine", () => {
    const { allocator } = setup();
    const first = allocator.malloc(1000);
    const stats = allocator.memoryStats();
    allocator.quarantine(first);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 0, quarantined: 1024 });
    expect(allocator.counters().systemReleases).toBe(1);
    // The next request of the same class is a miss: the buffer was not reused.
    allocator.malloc(1000);
    expect(allocator.memoryStats().systemAllocations).toBe(stats.systemAllocations + 1);
    expect(() => allocator.quarantine(first)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    allocator.endQuarantine(first);
    expect(allocator.memoryStats().quarantined).toBe(0);
    // Ended once: a second end, or one of an allocation never quarantined, is refused, nothing changed.
    const live = allocator.malloc(1000);
    for (const allocation of [first, live]) {
      expect(() => allocator.endQuarantine(allocation)).toThrow(
        refusal("ArgumentError", "ERR_NUVEC_INVALID_ARGUMENT"),
      );
    }
    expect(allocator.memoryStats().quarantined).toBe(0);
  });

  it("a freed buffer is cached and reused by a request of the same class", () => {
    const { allocator } = setup();
    const first = allocator.malloc(1000);
    allocator.free(first);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 1024 });
    const second = allocator.malloc(1000);
    expect(second.buffer).toBe(first.buffer);
    expect(second).not.toBe(first); // a fresh object per malloc
    expect(allocator.memoryStats()).toMatchObject({ active: 1024, cache: 0, systemAllocations: 1 });
    expect(allocator.counters()).toMatchObject({ cacheHits: 1, cacheMisses: 1 });
  });

  it("reuses a cached length s only when n ≤ s < 2n (small requests)", () => {
    const { allocator } = setup();
    allocator.free(allocator.malloc(768));
    expect(allocator.malloc(512).allocatedLength).toBe(768); // 768 < 1024: a hit, the whole 768 is handed out
    allocator.free(allocator.malloc(512));
    expect(allocator.malloc(256).allocatedLength).toBe(256); // 512 is not < 2·256: a miss
    expect(allocator.memoryStats().cache).toBe(512);
  });

  it("reuses a cached length s only when s < n + 2·PAGE (large requests)", () => {
    const { allocator } = setup();
    const n = 1 * MiB;
    const justInside = allocator.malloc(n + PAGE);
    const justOutside = allocator.malloc(n + 2 * PAGE);
    allocator.free(justOutside);
    expect(allocator.malloc(n).allocatedLength).toBe(n); // n + 2·PAGE is outside the window
    allocator.free(justInside);
    expect(allocator.malloc(n).allocatedLength).toBe(n + PAGE);
    expect(allocator.counters().cacheHits).toBe(1);
  });
});

describe("on a miss", () => {
  // W = 1 MiB: gcLimit = floor(0.95 · 1048576) = 996147; memoryLimit = 1.5 MiB.
  const device = { workingSet: 1 * MiB, memorySize: 2 * MiB, maxBufferLength: 1 * MiB };

  it("releases least recently cached buffers when active + mapped + cache + n ≥ gcLimit", () => {
    const { source, allocator } = setup(device);
    const [a, b, c, d] = [0, 1, 2, 3].map(() => allocator.malloc(192 * KiB));
    allocator.free(a!);
    allocator.free(b!);
    allocator.free(c!);
    // active 196608 + cache 589824 + 262144 = 1048576 ≥ 996147: free ≥ 52429 bytes, less than 90% of the
    // cache, so only the least recently cached buffer (a) goes.
    allocator.malloc(256 * KiB);
    expect(source.released).toEqual([a!.buffer]);
    expect(allocator.memoryStats()).toMatchObject({ active: 196608 + 262144, cache: 393216 });
    // d is still live, untouched by the release: its buffer is not among the released ones.
    expect(d!.allocatedLength).toBe(192 * KiB);
    expect(source.held.has(d!.buffer!)).toBe(true);
  });

  it("counts mapped files in the GC condition", () => {
    const { source, allocator } = setup(device);
    allocator.free(allocator.malloc(192 * KiB));
    allocator.malloc(256 * KiB); // 196608 + 262144 < 996147: nothing released
    expect(source.released).toEqual([]);
    allocator.addMapping(560 * KiB); // mapped 573440
    allocator.malloc(16 * KiB); // 262144 + 573440 + 196608 + 16384 = 1048576 ≥ 996147
    expect(source.released).toHaveLength(1);
  });

  it("releases the whole cache when the bytes to free are ≥ 90% of it", () => {
    const { source, allocator } = setup(device);
    const big = allocator.malloc(576 * KiB); // 589824
    const small = allocator.malloc(16 * KiB);
    allocator.free(big);
    allocator.free(small); // cache 606208, least recent first: big, small
    // 0 + 606208 + 950272 - 996147 = 560333 ≥ 0.9 · 606208 = 545587.2: everything goes, although big alone
    // would have been enough.
    allocator.malloc(928 * KiB);
    expect(source.released).toEqual([big.buffer, small.buffer]);
    expect(allocator.memoryStats().cache).toBe(0);
  });

  it("a hit never releases anything", () => {
    const { source, allocator } = setup(device);
    allocator.malloc(512 * KiB);
    allocator.free(allocator.malloc(448 * KiB));
    allocator.malloc(448 * KiB); // a hit although 512 + 448 + 448 KiB ≥ gcLimit
    expect(source.released).toEqual([]);
  });

  it("releases the whole cache when one more resource would pass the resource limit, then refuses", () => {
    const { source, allocator } = setup({ resourceLimit: 3 });
    const a = allocator.malloc(256);
    const b = allocator.malloc(512);
    allocator.free(a);
    allocator.malloc(1024); // 2 live + 1 cached = 3 resources after: allowed
    expect(source.released).toEqual([]);
    allocator.malloc(2048); // 3 resources already: the cache (a) goes, then 3 live
    expect(source.released).toEqual([a.buffer]);
    const counters = allocator.counters();
    expect(() => allocator.malloc(4096)).toThrow(refusal("OutOfMemoryError", "ERR_NUVEC_RESOURCE_LIMIT"));
    expect(allocator.counters()).toEqual(counters);
    expect(() => allocator.addMapping(4096)).toThrow(refusal("OutOfMemoryError", "ERR_NUVEC_RESOURCE_LIMIT"));
    allocator.free(b);
    expect(allocator.memoryStats().cache).toBe(512);
    allocator.addMapping(4096); // b's cached buffer is released to make room for the mapping
    expect(source.released).toEqual([a.buffer, b.buffer]);
    expect(allocator.counters()).toMatchObject({ mappings: 1, liveBuffers: 2, cachedBuffers: 0 });
  });
});

describe("the hard memory limit", () => {
  it("refuses a buffer that would push active + mapped past memoryLimit, with the figures on the error", () => {
    const { allocator } = setup({}, { memoryLimit: 1 * MiB });
    allocator.malloc(512 * KiB);
    allocator.addMapping(256 * KiB);
    const stats = allocator.memoryStats();
    const counters = allocator.counters();
    const error = thrown(() => allocator.malloc(256 * KiB + 1));
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect(error).toMatchObject({
      code: "ERR_NUVEC_OUT_OF_MEMORY",
      requested: 256 * KiB + PAGE,
      active: 512 * KiB,
      mapped: 256 * KiB,
      limit: 1 * MiB,
    });
    expect(allocator.memoryStats()).toEqual(stats);
    expect(allocator.counters()).toEqual({ ...counters, outOfMemoryRefusals: 1 });
    expect(allocator.malloc(256 * KiB).allocatedLength).toBe(256 * KiB); // exactly at the limit is allowed
  });

  it("counts quarantined memory (freed, held for a view moved away) against the limit, and names it on the error", () => {
    const { allocator } = setup({}, { memoryLimit: 1 * MiB });
    const moved = allocator.malloc(512 * KiB);
    allocator.quarantine(moved);
    allocator.addMapping(256 * KiB);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, mapped: 256 * KiB, quarantined: 512 * KiB });
    const stats = allocator.memoryStats();
    const error = thrown(() => allocator.malloc(256 * KiB + 1));
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect(error).toMatchObject({
      requested: 256 * KiB + PAGE,
      active: 0,
      mapped: 256 * KiB,
      quarantined: 512 * KiB,
    });
    expect((error as Error).message).toBe(
      `out of memory: ${256 * KiB + PAGE} bytes requested with 0 active, ${256 * KiB} mapped and ${512 * KiB} ` +
        "quarantined (freed buffers held until the views moved away from them are collected) would exceed " +
        `the memory limit of ${MiB} bytes`,
    );
    expect(() => allocator.addMapping(256 * KiB + 1)).toThrow(/512 KiB|524288 quarantined/);
    expect(allocator.memoryStats()).toEqual(stats);
    // Given back: the room is there again; more than is counted is refused, nothing changed.
    expect(() => allocator.removeQuarantined(1)).toThrow(ArgumentError);
    expect(() => allocator.addQuarantined(-1)).toThrow(ArgumentError);
    expect(allocator.memoryStats()).toEqual(stats);
    allocator.endQuarantine(moved);
    expect(allocator.memoryStats().quarantined).toBe(0);
    expect(allocator.malloc(512 * KiB + 1).allocatedLength).toBeGreaterThan(512 * KiB);
  });

  it("refuses a mapping the same way, charged at mappingSize", () => {
    const { allocator } = setup({ pageSize: 4096 }, { memoryLimit: 1 * MiB });
    allocator.malloc(1 * MiB - 16384);
    expect(allocator.addMapping(4097)).toMatchObject({ length: 4097, allocatedLength: 8192 });
    allocator.addMapping(8192); // exactly at the limit is allowed
    expect(() => allocator.addMapping(1)).toThrow(OutOfMemoryError);
    expect(allocator.memoryStats()).toMatchObject({ mapped: 16384, activeWithMapped: 1 * MiB });
  });

  it("skips a cache hit that would pass the limit and falls to the miss path", () => {
    const { source, allocator } = setup();
    allocator.free(allocator.malloc(8192));
    allocator.setMemoryLimit(6144);
    expect(allocator.memoryStats().cache).toBe(8192);
    const allocation = allocator.malloc(4608); // 8192 would fit the window [4608, 9216) but not the limit
    expect(allocation.allocatedLength).toBe(4608);
    expect(source.acquired.map((buffer) => buffer.length)).toEqual([8192, 4608]);
    expect(allocator.counters()).toMatchObject({ cacheHits: 0, cacheMisses: 2 });
  });

  it("retries a failed system allocation once after releasing the cache, and counts the retry", () => {
    const { source, allocator } = setup();
    allocator.free(allocator.malloc(1 * MiB));
    source.failNext = 1;
    expect(allocator.malloc(4 * MiB).allocatedLength).toBe(4 * MiB);
    expect(allocator.counters()).toMatchObject({ allocationRetries: 1, systemReleases: 1 });
    expect(allocator.memoryStats()).toMatchObject({ cache: 0, systemAllocations: 2 });
  });

  it("throws OutOfMemoryError with the source's error as cause when the retry fails too", () => {
    const { source, allocator } = setup();
    source.failNext = 2;
    const error = thrown(() => allocator.malloc(4 * MiB));
    expect(error).toMatchObject({
      name: "OutOfMemoryError",
      code: "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
      requested: 4 * MiB,
    });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, systemAllocations: 0 });
    expect(allocator.counters()).toMatchObject({ allocationRetries: 1, cacheMisses: 0 });
  });
});

describe("after every malloc", () => {
  it("active grows by the length handed out; peakActive and peakActiveWithMapped follow", () => {
    const { allocator } = setup();
    allocator.addMapping(100 * KiB); // 114688 charged (7 pages)
    const a = allocator.malloc(1000);
    allocator.free(a);
    allocator.malloc(600); // a hit on the 1024 buffer: active grows by 1024, not 768
    expect(allocator.memoryStats()).toMatchObject({
      active: 1024,
      peakActive: 1024,
      activeWithMapped: 1024 + 114688,
      peakActiveWithMapped: 1024 + 114688,
    });
  });

  it("then trims the cache to cacheLimit, least recently cached first", () => {
    const { source, allocator } = setup({}, { cacheLimit: 10000 });
    const a = allocator.malloc(8192);
    const b = allocator.malloc(8192);
    allocator.free(a); // cache 0 < 10000: cached
    allocator.free(b); // cache 8192 < 10000: cached, the cache is now over its limit
    expect(allocator.memoryStats().cache).toBe(16384);
    allocator.malloc(256); // a miss; then 16384 - 10000 = 6384 to free (< 90%): a goes
    expect(source.released).toEqual([a.buffer]);
    expect(allocator.memoryStats().cache).toBe(8192);
  });

  it("reserved is active + cache; peakReserved its highest", () => {
    const { allocator } = setup();
    const a = allocator.malloc(1 * MiB);
    allocator.malloc(2 * MiB);
    allocator.free(a);
    expect(allocator.memoryStats()).toMatchObject({ reserved: 3 * MiB, peakReserved: 3 * MiB });
    allocator.malloc(4 * MiB);
    expect(allocator.memoryStats()).toMatchObject({ reserved: 7 * MiB, peakReserved: 7 * MiB });
  });
});

describe("on free", () => {
  it("caches the buffer when cache < cacheLimit before adding, else releases it at once", () => {
    const { source, allocator } = setup({}, { cacheLimit: 8192 });
    const a = allocator.malloc(8192);
    const b = allocator.malloc(256);
    allocator.free(a); // cache 0 < 8192: cached
    allocator.free(b); // cache 8192 = limit: released
    expect(source.released).toEqual([b.buffer]);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 8192 });
    expect(allocator.counters()).toMatchObject({ systemReleases: 1, cachedBuffers: 1, liveBuffers: 0 });
  });
});
