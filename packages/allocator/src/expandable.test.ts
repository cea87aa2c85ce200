import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { GiB, MiB, type TestBuffer, TestSource, thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { replayOptionsFromHeader, TraceReplay } from "./replay.js";
import { checkSegmentOptions, EXPANDABLE_SEGMENT_DEFAULTS, SEGMENT_DEFAULTS } from "./segment-options.js";

const GRANULE = 2 * MiB;

/**
 * A source with address spaces: every mapping is kept (offset, length) so the checks can see exactly what
 * is backed; ranges are checked to lie on mapped memory, as a GPU would fault otherwise.
 */
class SpaceSource extends TestSource {
  readonly mapGranularity = GRANULE;
  readonly mappings = new Map<number, number>();
  maps = 0;
  unmaps = 0;
  space: TestBuffer | undefined;
  /** When above 0, that many next `map` calls are refused as allocation failures. */
  refuseMaps = 0;

  reserve(capacity: number): TestBuffer {
    this.space = { serial: -1, length: capacity };
    return this.space;
  }

  map(space: TestBuffer, offset: number, length: number): void {
    if (space !== this.space) throw new Error("map of a buffer that is no space");
    if (offset % GRANULE !== 0 || length % GRANULE !== 0) throw new Error("map of a partial granule");
    if (this.refuseMaps > 0) {
      this.refuseMaps--;
      throw Object.assign(new Error("injected refusal"), { code: "ERR_NUVEC_ALLOCATION_FAILED" });
    }
    for (const [at, size] of this.mappings) {
      if (at < offset + length && offset < at + size) throw new Error("map over mapped memory");
    }
    this.mappings.set(offset, length);
    this.maps++;
  }

  unmap(_space: TestBuffer, offset: number, length: number): void {
    if (this.mappings.get(offset) !== length) throw new Error("unmap of a range that was not mapped as one");
    this.mappings.delete(offset);
    this.unmaps++;
  }

  override release(buffer: TestBuffer): void {
    if (buffer === this.space) {
      if (this.mappings.size > 0) throw new Error("space released with memory mapped");
      if (this.liveRanges > 0) throw new Error("space released with ranges of it alive");
      this.space = undefined;
      return;
    }
    super.release(buffer);
  }

  liveRanges = 0;

  range(segment: TestBuffer, offset: number, length: number): TestBuffer {
    if (segment === this.space && !this.covered(offset, length))
      throw new Error("a range on unmapped memory");
    this.liveRanges++;
    return { serial: -2, length };
  }

  releaseRange(_range: TestBuffer): void {
    this.liveRanges--;
  }

  mappedBytes(): number {
    let bytes = 0;
    for (const size of this.mappings.values()) bytes += size;
    return bytes;
  }

  private covered(offset: number, length: number): boolean {
    for (let page = Math.floor(offset / GRANULE); page * GRANULE < offset + length; page++) {
      let hit = false;
      for (const [at, size] of this.mappings)
        if (at <= page * GRANULE && page * GRANULE < at + size) hit = true;
      if (!hit) return false;
    }
    return true;
  }
}

function make(segments = {}) {
  const source = new SpaceSource({ workingSet: 8 * GiB, memorySize: 16 * GiB });
  const allocator = new CachingAllocator(source, { policy: "segments", segments });
  return { source, allocator };
}

describe("expandable segments", () => {
  it("the defaults over a mapping source; expandable: false or a plain source keeps the segments defaults", () => {
    expect(checkSegmentOptions(undefined, true)).toBe(EXPANDABLE_SEGMENT_DEFAULTS);
    expect(checkSegmentOptions(undefined, false)).toBe(SEGMENT_DEFAULTS);
    expect(checkSegmentOptions({ expandable: false }, true)).toEqual({
      ...SEGMENT_DEFAULTS,
      expandable: false,
    });
    expect(() => checkSegmentOptions({ expandable: 1 as unknown as boolean }, true)).toThrow(ArgumentError);
    expect(make().allocator.segmentOptions).toEqual(EXPANDABLE_SEGMENT_DEFAULTS);
  });

  it("large requests are cut from one space, mapped 16 MiB ahead as it grows; reserved is what is mapped", () => {
    const { source, allocator } = make();
    const first = allocator.malloc(3 * MiB);
    // [0, 3 MiB) needs two granules; growing past everything mapped maps up to the 16 MiB boundary.
    expect([...source.mappings]).toEqual([[0, 16 * MiB]]);
    const second = allocator.malloc(10 * MiB);
    expect(source.maps).toBe(1);
    const third = allocator.malloc(5 * MiB);
    expect([...source.mappings]).toEqual([
      [0, 16 * MiB],
      [16 * MiB, 16 * MiB],
    ]);
    expect(allocator.memoryStats()).toMatchObject({
      active: 18 * MiB,
      reserved: 32 * MiB,
      cache: 14 * MiB,
      systemAllocations: 2,
    });
    expect(allocator.counters()).toMatchObject({ systemAllocations: 2, systemReleases: 0 });
    for (const allocation of [first, second, third]) allocator.free(allocation);
    // Freed, the blocks merge back into the space: the same requests again map nothing.
    const again = [3 * MiB, 10 * MiB, 5 * MiB].map((bytes) => allocator.malloc(bytes));
    expect(source.maps).toBe(2);
    for (const allocation of again) allocator.free(allocation);
  });

  it("clearCache unmaps every mapping that lies in free blocks, and only those; close gives the space back", () => {
    const { source, allocator } = make({ mapAhead: 0 });
    const a = allocator.malloc(4 * MiB);
    const b = allocator.malloc(4 * MiB);
    const c = allocator.malloc(4 * MiB);
    expect(source.maps).toBe(3);
    allocator.free(a);
    allocator.free(c);
    allocator.clearCache();
    // a's and c's mappings lie in free blocks; b's is live.
    expect([...source.mappings]).toEqual([[4 * MiB, 4 * MiB]]);
    expect(allocator.memoryStats()).toMatchObject({ active: 4 * MiB, reserved: 4 * MiB, cache: 0 });
    expect(allocator.counters().systemReleases).toBe(2);
    allocator.free(b);
    allocator.close();
    expect(source.mappings.size).toBe(0);
    expect(source.space).toBeUndefined();
  });

  it("close with a block still live (a free that waits): the space stays until releaseAfterClose gives back its last block, then every mapping and the space go", () => {
    const { source, allocator } = make({ mapAhead: 0 });
    const pending = allocator.malloc(4 * MiB);
    const other = allocator.malloc(6 * MiB);
    allocator.free(other);
    allocator.close();
    // What the free block held is unmapped; the pending block's mapping and the space stay.
    expect([[...source.mappings], source.space !== undefined]).toEqual([[[0, 4 * MiB]], true]);
    expect(allocator.releaseAfterClose(pending)).toBe(4 * MiB);
    expect([source.mappings.size, source.space, source.liveRanges]).toEqual([0, undefined, 0]);
  });

  it("close with a quarantined block: the space goes back with the mapping under it (the source holds what an escaped view reaches)", () => {
    const { source, allocator } = make({ mapAhead: 0 });
    const moved = allocator.malloc(4 * MiB);
    const live = allocator.malloc(2 * MiB);
    allocator.quarantine(moved);
    expect(allocator.memoryStats()).toMatchObject({
      active: 2 * MiB,
      quarantined: 4 * MiB,
      reserved: 2 * MiB,
    });
    allocator.clearCache();
    // Neither the live block's mapping nor the quarantined one's is free: both stay.
    expect(source.mappedBytes()).toBe(6 * MiB);
    allocator.endQuarantine(moved);
    allocator.clearCache();
    expect([...source.mappings]).toEqual([[4 * MiB, 2 * MiB]]);
    const again = allocator.malloc(4 * MiB);
    allocator.quarantine(again);
    allocator.free(live);
    allocator.close();
    expect([source.mappings.size, source.space, source.liveRanges]).toEqual([0, undefined, 0]);
  });

  it("a granularity the pool cannot use is refused at construction, nothing reserved; expandable: false runs fixed segments over it", () => {
    // The page size is 16 KiB; the address space is the smaller of memorySize (16 GiB) and maxBufferLength (8 GiB).
    for (const granularity of [1, 3000, 8 * 1024, 3 * MiB, 16 * GiB]) {
      const source = Object.assign(new SpaceSource({ workingSet: 8 * GiB, memorySize: 16 * GiB }), {
        mapGranularity: granularity,
      });
      let reserved = 0;
      source.reserve = () => {
        reserved++;
        return { serial: -1, length: 0 };
      };
      expect(thrown(() => new CachingAllocator(source, { policy: "segments" }))).toMatchObject({
        name: "ArgumentError",
        argument: "mapGranularity",
        message: `the source's mapGranularity must be a power of two from its pageSize (16384) up to its address space (${8 * GiB} bytes: the smaller of memorySize and maxBufferLength), got ${granularity}; segments: { expandable: false } runs fixed segments instead`,
      });
      const fixed = new CachingAllocator(source, { policy: "segments", segments: { expandable: false } });
      fixed.free(fixed.malloc(30 * MiB));
      fixed.close();
      expect([reserved, source.held.size]).toEqual([0, 0]);
    }
  });

  it("the address space spans at most 2^22 granules, whatever the device's memory", () => {
    const source = new SpaceSource({ workingSet: 2 ** 50, memorySize: 2 ** 52, maxBufferLength: 2 ** 51 });
    const allocator = new CachingAllocator(source, { policy: "segments" });
    allocator.free(allocator.malloc(4 * MiB));
    expect(source.space?.length).toBe(2 ** 22 * GRANULE);
    allocator.close();
  });

  it("a refused map releases the cache and retries; refused again, malloc throws and what is live is as it was", () => {
    const { source, allocator } = make({ mapAhead: 0 });
    const kept = allocator.malloc(8 * MiB);
    const cached = allocator.malloc(8 * MiB);
    allocator.free(cached);
    source.refuseMaps = 1;
    const retried = allocator.malloc(32 * MiB);
    expect(allocator.counters().allocationRetries).toBe(1);
    allocator.free(retried);
    const stats = allocator.memoryStats();
    const counters = allocator.counters();
    source.refuseMaps = 2;
    expect(() => allocator.malloc(64 * MiB)).toThrow(/could not allocate/);
    // The retry released the cache (as every policy's does); what was live and its figures stay.
    expect(allocator.memoryStats()).toMatchObject({
      active: stats.active,
      peakActive: stats.peakActive,
      reserved: source.mappedBytes(),
    });
    expect(allocator.counters()).toMatchObject({
      cacheHits: counters.cacheHits,
      cacheMisses: counters.cacheMisses,
      liveBuffers: counters.liveBuffers,
    });
    allocator.free(kept);
  });

  it("a replay of the trace header's setup reproduces the figures (mapGranularity recorded)", () => {
    const { allocator } = make();
    const setup = allocator.replaySetup();
    expect(setup.mapGranularity).toBe(GRANULE);
    const replay = new TraceReplay(replayOptionsFromHeader({ name: "t", allocator: setup } as never));
    const sizes = [3 * MiB, 700 * 1024, 48 * MiB, 5 * MiB, 200 * 1024, 90 * MiB];
    const live = sizes.map((bytes, id) => {
      replay.apply(["a", id, bytes]);
      return allocator.malloc(bytes);
    });
    live.forEach((allocation, id) => {
      if (id % 2 === 0) {
        replay.apply(["f", id]);
        allocator.free(allocation);
      }
    });
    expect(replay.result().stats).toEqual(allocator.memoryStats());
  });

  it("random workloads keep the books exact: reserved is the mapped memory, every range on mapped memory", () => {
    let seed = 0x9e3779b9;
    const random = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) / 2 ** 32;
    };
    for (const segments of [
      {},
      { mapAhead: 0, releaseIdleOnMiss: 3 },
      { mapAhead: 4 * MiB, maxSplitSize: 64 * MiB },
    ]) {
      const { source, allocator } = make(segments);
      const live: ReturnType<typeof allocator.malloc>[] = [];
      for (let step = 0; step < 20_000; step++) {
        const roll = random();
        if ((roll < 0.5 && live.length < 100) || live.length === 0) {
          const bytes =
            random() < 0.5 ? Math.ceil(random() * 600 * 1024) : Math.ceil(random() ** 3 * 128 * MiB);
          live.push(allocator.malloc(bytes));
        } else if (roll < 0.97) {
          const [freed] = live.splice(Math.floor(random() * live.length), 1);
          allocator.free(freed!);
        } else if (roll < 0.99) allocator.clearCache();
        else allocator.setCacheLimit(random() < 0.5 ? Math.floor(random() * 512 * MiB) : 64 * GiB);
        const { active, reserved, systemAllocations } = allocator.memoryStats();
        const held = source.mappedBytes() + [...source.held].reduce((sum, b) => sum + b.length, 0);
        const made = source.maps + source.acquired.length;
        // Compared plainly first: three expects a step were most of this test's time.
        if (reserved !== held || active > reserved || systemAllocations !== made)
          expect({ step, active, reserved, systemAllocations }).toEqual({
            step,
            active: Math.min(active, held),
            reserved: held,
            systemAllocations: made,
          });
      }
      for (const allocation of live) allocator.free(allocation);
      allocator.clearCache();
      expect(allocator.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
      expect(source.mappedBytes()).toBe(0);
      allocator.close();
      expect(source.space).toBeUndefined();
    }
  });
});
