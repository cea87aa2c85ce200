// The caching allocator's settings and edges under MLX's policy: the limits it takes from the device, the
// cache limit, clearCache and resetPeak, zero bytes and the largest buffer, the hooks and the wired provider,
// options and device facts. Apart from malloc and free (allocator.test.ts), which these only parameterise.
import { ArgumentError, PAGE } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { setup } from "../test/mlx-setup.js";
import { figures, GiB, KiB, MiB, refusal, TestSource } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";

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
