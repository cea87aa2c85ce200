import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { figures, GiB, MiB, refusal, type TestBuffer, TestSource } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { SEGMENT_DEFAULTS, type SegmentOptions } from "./segment-options.js";

/** A range of a test buffer: which segment, where, how long; `live` until released. */
interface TestRange extends TestBuffer {
  readonly segment: TestBuffer;
  readonly offset: number;
  live: boolean;
}

/** The test source with ranges: every range made and released is kept for the checks. */
class RangeSource extends TestSource {
  readonly ranges: TestRange[] = [];
  /** When set, the next `range` throws it. */
  rangeError: Error | undefined;

  range(segment: TestBuffer, offset: number, length: number): TestBuffer {
    const error = this.rangeError;
    this.rangeError = undefined;
    if (error !== undefined) throw error;
    if (!this.held.has(segment)) throw new Error("a range of a buffer that is not held");
    if (offset + length > segment.length) throw new Error("a range outside its segment");
    const range: TestRange = { serial: -1 - this.ranges.length, length, segment, offset, live: true };
    this.ranges.push(range);
    return range;
  }

  releaseRange(range: TestBuffer): void {
    const ours = range as TestRange;
    if (!ours.live) throw new Error("a range released twice");
    ours.live = false;
  }

  liveRanges(): number {
    return this.ranges.filter((range) => range.live).length;
  }
}

/** PyTorch's sizes (2 MiB small segments, 20 MiB shared large ones, 2 MiB rounding): the tests' layout. */
const PYTORCH_SIZES = { smallSegment: 2 * MiB, largeSegment: 20 * MiB, segmentRounding: 2 * MiB };

function make(segments?: Partial<SegmentOptions>, facts = { workingSet: 8 * GiB }) {
  const source = new RangeSource(facts);
  const allocator = new CachingAllocator(source, {
    policy: "segments",
    segments: { ...PYTORCH_SIZES, ...segments },
  });
  return { source, allocator };
}

const where = (allocation: { buffer: TestBuffer | undefined }) => {
  const range = allocation.buffer as TestRange;
  return { segment: range.segment.serial, offset: range.offset, length: range.length };
};

describe("the segments policy", () => {
  it("rounds to 512 bytes; small requests share 2 MiB segments, large ones 20 MiB, larger their own", () => {
    const { source, allocator } = make();
    expect(allocator.policy).toBe("segments");
    expect(allocator.segmentOptions).toEqual({ ...SEGMENT_DEFAULTS, ...PYTORCH_SIZES });
    expect(new CachingAllocator(new RangeSource(), { policy: "segments" }).segmentOptions).toEqual(
      SEGMENT_DEFAULTS,
    );
    const a = allocator.malloc(1);
    const b = allocator.malloc(1000);
    expect([a.allocatedLength, b.allocatedLength]).toEqual([512, 1024]);
    expect([where(a), where(b)]).toEqual([
      { segment: 0, offset: 0, length: 512 },
      { segment: 0, offset: 512, length: 1024 },
    ]);
    const c = allocator.malloc(MiB + 1);
    const d = allocator.malloc(10 * MiB);
    const e = allocator.malloc(11 * MiB + 1);
    // 10 MiB fits in what the 20 MiB segment has left; 11 MiB does not, and gets a 12 MiB segment.
    expect(source.acquired.map((buffer) => buffer.length)).toEqual([2 * MiB, 20 * MiB, 12 * MiB]);
    expect([where(c), where(d), where(e)]).toEqual([
      { segment: 1, offset: 0, length: MiB + 512 },
      { segment: 1, offset: MiB + 512, length: 10 * MiB },
      { segment: 2, offset: 0, length: 12 * MiB }, // less than 1 MiB would remain: not split
    ]);
    const active = 512 + 1024 + (MiB + 512) + 10 * MiB + 12 * MiB;
    expect(allocator.memoryStats()).toMatchObject({ active, cache: 34 * MiB - active, systemAllocations: 3 });
    expect(allocator.counters()).toMatchObject({ cacheMisses: 3, cacheHits: 2, liveBuffers: 5 });
  });

  it("best fit: a request takes the smallest free block that fits, split at its start", () => {
    const { allocator } = make();
    const blocks = [4096, 1024, 8192, 1024, 2048].map((bytes) => allocator.malloc(bytes));
    allocator.free(blocks[1]!); // 1024 at 4096
    allocator.free(blocks[3]!); // 1024 at 13312
    allocator.free(blocks[0]!); // merges with the first hole: 5120 at 0
    const small = allocator.malloc(600);
    expect(where(small)).toEqual({ segment: 0, offset: 13312, length: 1024 }); // the exact fit, not the first
    const medium = allocator.malloc(3000);
    expect(where(medium)).toEqual({ segment: 0, offset: 0, length: 3072 }); // split from the 5120 hole
    expect(allocator.segmentFigures()).toMatchObject({ segments: 1, idleSegments: 0 });
  });

  it("frees merge with free neighbours: a segment whose blocks are all free is one free block again", () => {
    const { source, allocator } = make();
    const blocks = [1000, 2000, 3000].map((bytes) => allocator.malloc(bytes));
    for (const block of [blocks[0]!, blocks[2]!, blocks[1]!]) allocator.free(block);
    expect(allocator.segmentFigures()).toEqual({
      segments: 1,
      idleSegments: 1,
      largestFreeSmall: 2 * MiB,
      largestFreeLarge: 0,
    });
    expect(allocator.counters().cachedBuffers).toBe(1);
    // Merged-away blocks gave their ranges back; the block that stayed keeps its own.
    expect(source.liveRanges()).toBe(1);
    const again = allocator.malloc(1000);
    expect(again.buffer).toBe(blocks[0]!.buffer); // the same bytes cut again: the same range
    allocator.free(again);
    const whole = allocator.malloc(MiB);
    expect(where(whole)).toEqual({ segment: 0, offset: 0, length: MiB });
    expect(source.liveRanges()).toBe(1);
  });

  it("a block freed and taken again unchanged keeps its range (no new range on the hot path)", () => {
    const { source, allocator } = make();
    const keep = allocator.malloc(1024); // so that the freed block has a live neighbour before it
    const first = allocator.malloc(4096);
    allocator.malloc(512); // and after it
    allocator.free(first);
    const again = allocator.malloc(4096);
    expect(again.buffer).toBe(first.buffer);
    expect(source.ranges.length).toBe(3);
    expect(keep.buffer).not.toBe(again.buffer);
  });

  it("large blocks are split only when more than 1 MiB would remain; the rest stays with the block", () => {
    const { allocator } = make();
    const nearly = allocator.malloc(19 * MiB + 512 * 1024); // 19.5 MiB of a 20 MiB segment... its own
    expect(nearly.allocatedLength).toBe(20 * MiB);
    allocator.free(nearly);
    const half = allocator.malloc(9 * MiB);
    expect(half.allocatedLength).toBe(9 * MiB);
    const rest = allocator.malloc(10 * MiB + 512 * 1024);
    expect(rest.allocatedLength).toBe(11 * MiB); // 11 MiB left, the rest of 0.5 MiB not split off
    expect(allocator.memoryStats().systemAllocations).toBe(1);
  });

  it("maxSplitSize keeps large free blocks whole for requests of their kind", () => {
    const { source, allocator } = make({ maxSplitSize: 64 * MiB, releaseIdleOnMiss: 0 });
    allocator.free(allocator.malloc(100 * MiB));
    allocator.malloc(30 * MiB); // below the limit: not from the 100 MiB block
    expect(source.acquired.map((buffer) => buffer.length)).toEqual([100 * MiB, 30 * MiB]);
    const big = allocator.malloc(90 * MiB); // of its kind, and not much smaller: takes it whole
    expect(big.allocatedLength).toBe(100 * MiB);
  });

  it("idle segments go back under the cache limit, on clearCache(), and before a miss that raises the peak", () => {
    const { source, allocator } = make();
    const small = allocator.malloc(1024);
    const large = allocator.malloc(30 * MiB);
    allocator.free(large);
    expect(allocator.memoryStats().cache).toBe(32 * MiB - 1024);
    // A larger request misses: the idle 30 MiB segment goes first (the peak would rise by it).
    const larger = allocator.malloc(40 * MiB);
    expect(source.released.map((buffer) => buffer.length)).toEqual([30 * MiB]);
    expect(allocator.memoryStats().peakReserved).toBe(42 * MiB);
    allocator.free(larger);
    allocator.clearCache();
    // The small segment has a live block: it stays.
    expect(source.released.map((buffer) => buffer.length)).toEqual([30 * MiB, 40 * MiB]);
    expect(allocator.memoryStats()).toMatchObject({ active: 1024, cache: 2 * MiB - 1024 });
    allocator.setCacheLimit(0);
    allocator.free(small);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 0 });
    expect(source.held.size).toBe(0);
    expect(allocator.counters()).toMatchObject({ systemReleases: 3, systemAllocations: 3 });
  });

  it("a refused system allocation gives every idle segment back and retries once; twice refused, nothing changed", () => {
    const { source, allocator } = make({ releaseIdleOnMiss: 0 });
    allocator.free(allocator.malloc(50 * MiB));
    source.failNext = 1;
    const retried = allocator.malloc(60 * MiB);
    expect(retried.allocatedLength).toBe(60 * MiB);
    expect(allocator.counters().allocationRetries).toBe(1);
    expect(source.released.map((buffer) => buffer.length)).toEqual([50 * MiB]);
    const before = figures(allocator);
    source.failNext = 2;
    expect(() => allocator.malloc(70 * MiB)).toThrow(
      refusal("OutOfMemoryError", "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED"),
    );
    expect(allocator.memoryStats()).toEqual(before.stats);
    expect(allocator.counters()).toEqual({ ...before.counters, allocationRetries: 2 });
  });

  it("the hard memory limit refuses before anything is acquired", () => {
    const { source, allocator } = make();
    allocator.setMemoryLimit(4 * MiB);
    allocator.malloc(3 * MiB);
    const before = allocator.memoryStats();
    expect(() => allocator.malloc(2 * MiB)).toThrow(refusal("OutOfMemoryError", "ERR_NUVEC_OUT_OF_MEMORY"));
    expect(allocator.memoryStats()).toEqual(before);
    expect(source.acquired.length).toBe(1);
    expect(allocator.counters().outOfMemoryRefusals).toBe(1);
  });

  it("a quarantined block counts in quarantined and the limit, never in cache; its quarantine ended, it is free again", () => {
    const { source, allocator } = make();
    allocator.setMemoryLimit(6 * MiB);
    const moved = allocator.malloc(2 * MiB);
    const other = allocator.malloc(2 * MiB);
    allocator.quarantine(moved);
    // One 20 MiB segment: 2 MiB live, 2 MiB quarantined, the rest free. Each byte counted once.
    expect(allocator.memoryStats()).toMatchObject({
      active: 2 * MiB,
      quarantined: 2 * MiB,
      cache: 16 * MiB,
      reserved: 18 * MiB,
    });
    const before = allocator.memoryStats();
    expect(() => allocator.malloc(2 * MiB + 1)).toThrow(
      expect.objectContaining({ name: "OutOfMemoryError", quarantined: 2 * MiB }),
    );
    expect(() => allocator.addMapping(2 * MiB + 1)).toThrow(
      expect.objectContaining({ quarantined: 2 * MiB }),
    );
    expect(allocator.memoryStats()).toEqual(before);
    // Never handed out while quarantined: the next block is cut after the live one.
    const next = allocator.malloc(2 * MiB);
    expect(where(next).offset).toBe(4 * MiB);
    allocator.free(next);
    allocator.endQuarantine(moved);
    expect(allocator.memoryStats()).toMatchObject({ active: 2 * MiB, quarantined: 0, cache: 18 * MiB });
    // A free block again: the best fit of the next request of its size.
    expect(where(allocator.malloc(2 * MiB)).offset).toBe(0);
    expect(() => allocator.endQuarantine(moved)).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_INVALID_ARGUMENT"),
    );
    allocator.free(other);
    expect(source.acquired.length).toBe(1);
  });

  it("a segment that goes back while a block of it is quarantined counts whole in quarantined until the last such block's quarantine ends", () => {
    const { source, allocator } = make();
    const blocks = Array.from({ length: 6 }, () => allocator.malloc(3 * MiB));
    allocator.quarantine(blocks[0]!);
    allocator.quarantine(blocks[4]!);
    for (const block of [1, 2, 3, 5]) allocator.free(blocks[block]!);
    expect(allocator.memoryStats()).toMatchObject({ active: 0, quarantined: 6 * MiB, cache: 14 * MiB });
    allocator.clearCache();
    // The source holds the whole 20 MiB segment for the escaped views: all of it is quarantined.
    expect(source.held.size).toBe(0);
    expect(allocator.memoryStats()).toMatchObject({
      active: 0,
      cache: 0,
      reserved: 0,
      quarantined: 20 * MiB,
    });
    const limited = allocator.setMemoryLimit(21 * MiB);
    expect(() => allocator.malloc(1 * MiB + 1)).toThrow(
      refusal("OutOfMemoryError", "ERR_NUVEC_OUT_OF_MEMORY"),
    );
    allocator.setMemoryLimit(limited);
    allocator.endQuarantine(blocks[4]!);
    expect(allocator.memoryStats().quarantined).toBe(20 * MiB);
    allocator.endQuarantine(blocks[0]!);
    expect(allocator.memoryStats()).toMatchObject({ quarantined: 0, reserved: 0 });
    expect(() => allocator.endQuarantine(blocks[0]!)).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_INVALID_ARGUMENT"),
    );
  });

  it("a segment size given larger than the source's largest buffer is refused naming it; the defaults are cut to it", () => {
    const source = new RangeSource({ workingSet: 64 * MiB, maxBufferLength: 32 * MiB });
    for (const name of ["smallSegment", "largeSegment"] as const) {
      expect(
        () => new CachingAllocator(source, { policy: "segments", segments: { [name]: 64 * MiB } }),
      ).toThrow(
        expect.objectContaining({
          argument: `segments.${name}`,
          message: `segments.${name} (${64 * MiB}) must fit in one buffer of the source (maxBufferLength ${32 * MiB})`,
        }),
      );
    }
    // The default 40 MiB large segment on a 32 MiB device: a segment of the largest buffer.
    const allocator = new CachingAllocator(source, { policy: "segments" });
    allocator.malloc(3 * MiB);
    expect(source.acquired.map((buffer) => buffer.length)).toEqual([32 * MiB]);
  });

  it("misuse: a double free and a foreign allocation change nothing; a 0-byte request takes no memory", () => {
    const { allocator } = make();
    const block = allocator.malloc(100);
    allocator.free(block);
    const before = allocator.memoryStats();
    expect(() => allocator.free(block)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    const other = new CachingAllocator(new TestSource());
    expect(() => allocator.free(other.malloc(100))).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_FOREIGN_ALLOCATION"),
    );
    expect(() => other.free(allocator.malloc(100))).toThrow(
      refusal("ArgumentError", "ERR_NUVEC_FOREIGN_ALLOCATION"),
    );
    const empty = allocator.malloc(0);
    expect(empty.allocatedLength).toBe(0);
    allocator.free(empty);
    expect(allocator.memoryStats().systemAllocations).toBe(before.systemAllocations);
  });

  it("refuses bad sizes and a source that makes no ranges", () => {
    for (const segments of [
      { blockRounding: 500 },
      { segmentRounding: 0 },
      { smallSegment: 1000 },
      { smallRequest: 4 * MiB },
      { largeSegment: -1 },
      { maxSplitSize: 1.5 },
      { releaseIdleOnMiss: 4 },
    ]) {
      expect(() => make(segments)).toThrow(ArgumentError);
    }
    expect(() => new CachingAllocator(new TestSource(), { policy: "segments" })).toThrow(ArgumentError);
  });

  it("a source that refuses a range: the error propagates, the block stays free, the books as they were", () => {
    const { source, allocator } = make();
    allocator.free(allocator.malloc(4096));
    const before = figures(allocator);
    source.rangeError = new Error("closed");
    expect(() => allocator.malloc(1000)).toThrow("closed");
    expect(figures(allocator)).toEqual(before);
    // A miss: the new segment stays, idle and whole (cached, counted), and goes back on clearCache().
    source.rangeError = new Error("closed");
    expect(() => allocator.malloc(30 * MiB)).toThrow("closed");
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 32 * MiB, systemAllocations: 2 });
    expect(allocator.counters()).toMatchObject({ cacheMisses: 1, liveBuffers: 0 });
    expect(allocator.malloc(30 * MiB).allocatedLength).toBe(30 * MiB);
    allocator.clearCache();
    expect(allocator.segmentFigures()).toMatchObject({ segments: 1, idleSegments: 0 });
  });

  it("close() gives every idle segment back; live blocks are the caller's, and releaseAfterClose gives back each one's range and, with the last, its segment", () => {
    const { source, allocator } = make();
    const live = allocator.malloc(5 * MiB);
    const second = allocator.malloc(3 * MiB);
    allocator.free(allocator.malloc(100));
    allocator.close();
    expect(source.held.size).toBe(1);
    expect(source.held.has((live.buffer as TestRange).segment)).toBe(true);
    // The bytes that left reserved: none while the segment holds another live block, then all of it.
    expect(allocator.releaseAfterClose(live)).toBe(0);
    expect(source.held.size).toBe(1);
    expect(() => allocator.releaseAfterClose(live)).toThrow(refusal("StateError", "ERR_NUVEC_DOUBLE_FREE"));
    expect(allocator.releaseAfterClose(second)).toBe(20 * MiB);
    expect([source.held.size, source.liveRanges()]).toEqual([0, 0]);
  });
});
