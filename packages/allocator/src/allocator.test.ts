import { ArgumentError, OutOfMemoryError, PAGE } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { BAD_BYTE_COUNTS } from "../../stats/test/bad-byte-counts.js";
import { figures, GiB, KiB, MiB, refusal, type TestBuffer, TestSource, thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import type { AllocatorOptions } from "./options.js";

function setup(
  facts: ConstructorParameters<typeof TestSource>[0] = {},
  options: AllocatorOptions<TestBuffer> = {},
) {
  const source = new TestSource(facts);
  // MLX's decisions, named: the bounded default has its own suite (bounded.test.ts).
  const allocator = new CachingAllocator(source, { policy: "mlx", ...options });
  return { source, allocator };
}

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

describe("limits from the device", () => {
  // memoryLimit = min(1.5·W, 0.95·M) floored, cacheLimit = memoryLimit, gcLimit = min(floor(0.95·W), memoryLimit).
  it.each([
    [{ workingSet: 1 * GiB, memorySize: 2 * GiB }, 1610612736, 1020054732], // 1.5·W; floor(0.95 · 1073741824)
    [{ workingSet: 8 * GiB, memorySize: 8 * GiB }, 8160437862, 8160437862], // floor(0.95 · 8589934592), both
    [{ workingSet: 512 * MiB, memorySize: 1 * GiB }, 805306368, 510027366], // 768 MiB
  ])("defaults over %o: memory and cache limit %i, GC limit %i", (facts, memoryLimit, gcLimit) => {
    const { allocator } = setup(facts);
    expect(allocator.memoryStats()).toMatchObject({ memoryLimit, cacheLimit: memoryLimit });
    expect(allocator.gcLimit).toBe(gcLimit);
  });

  it("setMemoryLimit returns the previous limit and recomputes gcLimit = min(x, floor(0.95·W))", () => {
    const { allocator } = setup({ workingSet: 512 * MiB, memorySize: 1 * GiB });
    expect(allocator.setMemoryLimit(8 * GiB)).toBe(805306368);
    expect(allocator.gcLimit).toBe(510027366);
    expect(allocator.memoryStats()).toMatchObject({ memoryLimit: 8 * GiB, cacheLimit: 805306368 });
    expect(allocator.setMemoryLimit(100 * MiB)).toBe(8 * GiB);
    expect(allocator.gcLimit).toBe(100 * MiB);
  });

  it("memory and cache limits accept any byte count, above the device's memory too", () => {
    const { allocator } = setup({ workingSet: 1 * GiB, memorySize: 2 * GiB });
    expect(() => allocator.setMemoryLimit(Number.MAX_SAFE_INTEGER)).not.toThrow();
    expect(() => allocator.setCacheLimit(Number.MAX_SAFE_INTEGER)).not.toThrow();
    expect(allocator.setCacheLimit(0)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it("the cache limit defaults to the memory limit, the option's when one is given", () => {
    const { allocator } = setup({ workingSet: 512 * MiB, memorySize: 1 * GiB }, { memoryLimit: 8 * GiB });
    expect(allocator.memoryStats()).toMatchObject({ memoryLimit: 8 * GiB, cacheLimit: 8 * GiB });
    expect(allocator.gcLimit).toBe(510027366);
    const capped = setup({}, { memoryLimit: 1 * GiB }).allocator;
    expect(capped.memoryStats()).toMatchObject({ memoryLimit: 1 * GiB, cacheLimit: 1 * GiB });
    // A later setMemoryLimit moves only the memory limit, as MLX's set_memory_limit.
    capped.setMemoryLimit(2 * GiB);
    expect(capped.memoryStats()).toMatchObject({ memoryLimit: 2 * GiB, cacheLimit: 1 * GiB });
    const withCache = setup({}, { cacheLimit: 64 * MiB }).allocator;
    expect(withCache.memoryStats().cacheLimit).toBe(64 * MiB);
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

describe("setCacheLimit, clearCache, resetPeak", () => {
  it("setCacheLimit trims at once (MLX waits for the next malloc) and returns the previous limit", () => {
    const { source, allocator } = setup({ workingSet: 1 * GiB, memorySize: 2 * GiB });
    const buffers = [1, 2, 3, 4].map(() => allocator.malloc(1 * MiB));
    for (const allocation of buffers) allocator.free(allocation);
    expect(allocator.setCacheLimit(2.5 * MiB)).toBe(1610612736);
    expect(source.released).toEqual([buffers[0]!.buffer, buffers[1]!.buffer]);
    expect(allocator.memoryStats()).toMatchObject({ cache: 2 * MiB, cacheLimit: 2.5 * MiB });
    allocator.setCacheLimit(100 * KiB); // 1.9 MiB to free ≥ 90% of 2 MiB: all
    expect(allocator.memoryStats().cache).toBe(0);
  });

  it("clearCache releases every cached buffer", () => {
    const { source, allocator } = setup();
    const live = allocator.malloc(100);
    allocator.free(allocator.malloc(1000));
    allocator.free(allocator.malloc(100 * KiB));
    allocator.clearCache();
    expect(source.released).toHaveLength(2);
    expect(allocator.memoryStats()).toMatchObject({ cache: 0, active: 256 });
    expect(live.allocatedLength).toBe(256);
  });

  it("resetPeak restarts every peak at its quantity (MLX sets 0)", () => {
    const { allocator } = setup();
    const big = allocator.malloc(10 * MiB);
    allocator.malloc(1 * MiB);
    allocator.addMapping(2 * MiB);
    allocator.free(big);
    allocator.resetPeak();
    // The 10 MiB block stays cached: reserved is 11 MiB, live (the size classes of live requests) 1 MiB.
    expect(allocator.memoryStats()).toMatchObject({
      peakActive: 1 * MiB,
      peakActiveWithMapped: 3 * MiB,
      reserved: 11 * MiB,
      peakReserved: 11 * MiB,
    });
    expect(allocator.counters().peakLive).toBe(1 * MiB);
    allocator.clearCache();
    allocator.resetPeak();
    expect(allocator.memoryStats()).toMatchObject({ reserved: 1 * MiB, peakReserved: 1 * MiB });
    allocator.malloc(1 * MiB);
    expect(allocator.memoryStats()).toMatchObject({
      peakActive: 2 * MiB,
      peakActiveWithMapped: 4 * MiB,
      peakReserved: 2 * MiB,
    });
    expect(allocator.counters().peakLive).toBe(2 * MiB);
  });

  it("mapped files raise peakActiveWithMapped, not peakActive; removing one lowers mapped only", () => {
    const { allocator } = setup();
    const mapping = allocator.addMapping(1);
    expect(mapping).toMatchObject({ length: 1, allocatedLength: PAGE });
    expect(allocator.memoryStats()).toMatchObject({
      peakActive: 0,
      peakActiveWithMapped: PAGE,
      mapped: PAGE,
    });
    allocator.removeMapping(mapping);
    expect(allocator.memoryStats()).toMatchObject({
      mapped: 0,
      activeWithMapped: 0,
      peakActiveWithMapped: PAGE,
    });
    expect(() => allocator.removeMapping(mapping)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
  });
});

describe("zero bytes, maximum buffer length", () => {
  it("a 0-byte request gets an empty allocation, counted nowhere; freeing it is a no-op", () => {
    const { source, allocator } = setup();
    const before = figures(allocator);
    const empty = allocator.malloc(0);
    expect(empty).toEqual({ buffer: undefined, allocatedLength: 0, length: 0 });
    allocator.free(empty);
    allocator.free(empty);
    expect(figures(allocator)).toEqual(before);
    expect(source.acquired).toEqual([]);
    expect(allocator.malloc(-0).allocatedLength).toBe(0);
  });

  it("refuses a request above the device's maximum buffer length", () => {
    const { allocator } = setup({ maxBufferLength: 1 * MiB });
    expect(allocator.malloc(1 * MiB).allocatedLength).toBe(1 * MiB);
    const counters = allocator.counters();
    expect(() => allocator.malloc(1 * MiB + 1)).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_BUFFER_TOO_LARGE"),
    );
    expect(() => allocator.malloc(1 * MiB + 1)).toThrow(/maximum buffer length of 1048576/);
    expect(allocator.counters()).toEqual(counters);
  });
});

describe("hooks and the wired provider", () => {
  it("calls onAcquire right after acquiring and onRelease right before releasing", () => {
    const log: string[] = [];
    const source = new TestSource();
    const acquire = source.acquire.bind(source);
    const release = source.release.bind(source);
    source.acquire = (bytes) => {
      const buffer = acquire(bytes);
      log.push(`acquire ${buffer.serial}`);
      return buffer;
    };
    source.release = (buffer) => {
      log.push(`release ${buffer.serial}`);
      release(buffer);
    };
    const allocator = new CachingAllocator(source, {
      onAcquire: (buffer) => log.push(`onAcquire ${buffer.serial}`),
      onRelease: (buffer) => log.push(`onRelease ${buffer.serial}`),
    });
    allocator.free(allocator.malloc(100));
    allocator.malloc(100); // a hit: no hook
    allocator.free(allocator.malloc(5000));
    allocator.clearCache();
    expect(log).toEqual(["acquire 0", "onAcquire 0", "acquire 1", "onAcquire 1", "onRelease 1", "release 1"]);
  });

  it("an onAcquire that throws gives the buffer back and changes nothing", () => {
    const { source, allocator } = setup(
      {},
      {
        onAcquire: () => {
          throw new Error("residency full");
        },
      },
    );
    expect(() => allocator.malloc(100)).toThrow("residency full");
    expect(source.held.size).toBe(0);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, systemAllocations: 0 });
  });

  it("leaves the wired fields of memoryStats at 0 (residency owns them; the Device fills them in)", () => {
    const { allocator } = setup();
    allocator.malloc(100);
    allocator.addMapping(PAGE);
    expect(allocator.memoryStats()).toMatchObject({ wired: 0, wiredMapped: 0, wiredLimit: 0 });
  });
});

describe("refused requests throw typed errors and change no counter", () => {
  // The message of each refusal is @nuvec/stats' byteCountProblem (size.test.ts).
  it.each(BAD_BYTE_COUNTS)("malloc(%s) is an ArgumentError", (_name, value) => {
    const { allocator } = setup();
    allocator.free(allocator.malloc(100));
    const before = figures(allocator);
    const error = thrown(() => allocator.malloc(value as number));
    expect(error).toBeInstanceOf(ArgumentError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "bytes" });
    expect(figures(allocator)).toEqual(before);
  });

  it("a size class beyond Number.MAX_SAFE_INTEGER is an argument error", () => {
    const { allocator } = setup({ maxBufferLength: Number.MAX_SAFE_INTEGER });
    expect(() => allocator.malloc(Number.MAX_SAFE_INTEGER)).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_BUFFER_TOO_LARGE"),
    );
  });

  it("bad limits and mapping lengths are argument errors", () => {
    const { allocator } = setup();
    const before = figures(allocator);
    expect(() => allocator.setMemoryLimit(-1)).toThrow(ArgumentError);
    expect(() => allocator.setCacheLimit(0.5)).toThrow(ArgumentError);
    expect(() => allocator.addMapping(Number.NaN)).toThrow(ArgumentError);
    expect(figures(allocator)).toEqual(before);
  });

  it("a double free is a StateError, even after the buffer went to another allocation", () => {
    const { allocator } = setup();
    const first = allocator.malloc(100);
    allocator.free(first);
    const before = figures(allocator);
    expect(() => allocator.free(first)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    expect(figures(allocator)).toEqual(before);
    const second = allocator.malloc(100); // the same buffer, now someone else's
    expect(second.buffer).toBe(first.buffer);
    expect(() => allocator.free(first)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    expect(allocator.memoryStats().active).toBe(256);
    allocator.free(second);
  });

  it("an allocation or mapping of another allocator, or a look-alike, is an ArgumentError", () => {
    const { allocator } = setup();
    const other = setup().allocator;
    allocator.malloc(100);
    const before = figures(allocator);
    const error = thrown(() => allocator.free(other.malloc(100)));
    expect(error).toMatchObject({ name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_ALLOCATION" });
    expect(() => allocator.free({ buffer: undefined, allocatedLength: 0, length: 0 })).toThrow(ArgumentError);
    expect(() => allocator.removeMapping(other.addMapping(1))).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_FOREIGN_ALLOCATION"),
    );
    expect(() => allocator.removeMapping({ length: 1, allocatedLength: PAGE })).toThrow(ArgumentError);
    expect(figures(allocator)).toEqual(before);
  });
});

describe("options and device facts", () => {
  it("refuses bad options and device facts with ArgumentError", () => {
    expect(() => setup({ pageSize: 3000 })).toThrow(ArgumentError);
    expect(() => setup({ workingSet: -1 })).toThrow(ArgumentError);
    expect(() => setup({}, { memoryLimit: 1.5 })).toThrow(ArgumentError);
    expect(() => setup({}, { policy: "lru" as "mlx" })).toThrow(ArgumentError);
    expect(() => setup({}, { reserveRatio: 0.5 })).toThrow(ArgumentError);
    expect(() => setup({}, { reserveRatio: Number.NaN })).toThrow(ArgumentError);
  });
});

describe("close", () => {
  it("releases every cached buffer, leaves live ones to the caller, then refuses every call", () => {
    const { source, allocator } = setup();
    const live = allocator.malloc(100);
    allocator.free(allocator.malloc(1000));
    allocator.close();
    expect(source.released).toHaveLength(1);
    expect(source.held.has(live.buffer!)).toBe(true);
    const calls: [string, () => unknown][] = [
      ["malloc", () => allocator.malloc(1)],
      ["malloc(0)", () => allocator.malloc(0)],
      ["free", () => allocator.free(live)],
      ["addMapping", () => allocator.addMapping(1)],
      ["memoryStats", () => allocator.memoryStats()],
      ["counters", () => allocator.counters()],
      ["resetPeak", () => allocator.resetPeak()],
      ["setMemoryLimit", () => allocator.setMemoryLimit(1)],
      ["setCacheLimit", () => allocator.setCacheLimit(1)],
      ["clearCache", () => allocator.clearCache()],
    ];
    for (const [, call] of calls) expect(call).toThrow(refusal("StateError", "ERR_NUVEC_ALLOCATOR_CLOSED"));
    expect(() => allocator.close()).not.toThrow(); // closing twice does nothing
  });
});
