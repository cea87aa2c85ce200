// The segments policy's store: the segments held, the blocks inside them and the two pools of free blocks
// (split, merged, stored by best fit), the idle segments in the order they became idle and their release
// to stay within a limit, and the large pool's expandable segment, whose pages are mapped and unmapped as
// its blocks need them. Apart from the policy (segments.ts), which decides what a malloc, a free, a
// quarantine and a limit do with them; this file only keeps the blocks and the system's figures true.
import { ArgumentError, Teardown } from "@nuvec/stats";
import type { BufferSource } from "./buffer-source.js";
import { systemAllocationFailed } from "./errors.js";
import { isMappingSource, MappedPages, type MappingSource } from "./expandable.js";
import { Block, FreeBlocks, Segment } from "./free-blocks.js";
import { PolicyAccounts, type PolicySetup } from "./policy-accounts.js";
import type { SegmentOptions } from "./segment-options.js";

const MIB = 1024 * 1024;
/** The most granules an expandable segment spans (16 MiB of page table). */
const MAX_GRANULES = 2 ** 22;
/** The small pool's index in `pools`. */
export const SMALL = 0;
/** The large pool's index in `pools` (the expandable one, where expandable). */
export const LARGE = 1;

/**
 * Refuses a source's map granularity the expandable pool cannot use: it maps whole granules of whole pages
 * into one address space, so a granularity must be a power of two from the page size up to the space (the
 * device's memory or its largest buffer, whichever is less). A granularity of 1 would make a page table of
 * billions of entries; one above the space leaves no granule to map.
 */
function checkGranularity(granularity: number, pageSize: number, space: number): void {
  if (
    Number.isSafeInteger(granularity) &&
    granularity >= pageSize &&
    (granularity & (granularity - 1)) === 0 &&
    granularity <= space
  ) {
    return;
  }
  throw new ArgumentError(
    "mapGranularity",
    `the source's mapGranularity must be a power of two from its pageSize (${pageSize}) up to its address space (${space} bytes: the smaller of memorySize and maxBufferLength), got ${granularity}; segments: { expandable: false } runs fixed segments instead`,
  );
}

/** What the segments policy needs of a source beyond {@link BufferSource}: ranges of its buffers. */
export type RangeSource<B> = BufferSource<B> & Required<Pick<BufferSource<B>, "range">>;

/** The allocator's hooks and limits, as {@link CachingAllocator} passes them on, and the sizes. */
export interface SegmentAllocatorSetup<B> extends PolicySetup<B> {
  segments: SegmentOptions;
}

/**
 * The segments, blocks and free pools of the segments policy over a {@link BufferSource} that makes ranges
 * of its buffers, and their figures; {@link SegmentAllocator} is the policy over them.
 */
export abstract class SegmentStore<B> extends PolicyAccounts<B> {
  protected readonly source: RangeSource<B>;
  protected readonly options: SegmentOptions;
  protected readonly pools: FreeBlocks<B>[];
  protected readonly rounding: number;
  protected readonly smallRequest: number;
  protected readonly maxSplitSize: number;
  // The bytes of the segments held (an expandable segment's mapped pages), quarantined blocks included.
  private reserved = 0;
  // The bytes of quarantined blocks in held segments: in `reserved` here, in `quarantined` in the figures.
  protected quarantinedInSegments = 0;
  protected segmentCount = 0;
  protected idleOldest: Segment<B> | null = null;
  private idleNewest: Segment<B> | null = null;
  private idleBytes = 0;
  /** The source's mapping calls when the large pool is expandable, and its granularity (read once). */
  protected readonly mapping: MappingSource<B> | undefined;
  protected readonly granularity: number = 0;
  /** The large pool's expandable segment once made. */
  protected space: Segment<B> | null = null;
  // Blocks merged away, made new by the next splits (no allocation, less for the collector).
  private readonly spareBlocks: Block<B>[] = [];
  private readonly sourceMemorySize: number;
  // The highest `reserved` ever: what releaseIdleOnMiss compares a new segment with. Unlike `peakReserved`,
  // no statistics reset moves it (reading figures never changes decisions).
  private highWaterReserved = 0;

  constructor(source: BufferSource<B>, setup: SegmentAllocatorSetup<B>) {
    super(setup);
    if (typeof source.range !== "function") {
      throw new ArgumentError(
        "policy",
        'the "segments" policy needs a source that makes ranges of its buffers (range())',
      );
    }
    this.source = source as RangeSource<B>;
    this.options = setup.segments;
    this.rounding = setup.segments.blockRounding;
    // The large pool indexes sizes up to 64 MiB at 512-byte blocks (a workload's large tensors, and the rests
    // cut from them, are many distinct sizes); the small pool's blocks fit the default index.
    this.pools = [
      new FreeBlocks<B>(this.rounding),
      new FreeBlocks<B>(this.rounding, Math.max(1 << 14, Math.ceil((64 * MIB) / this.rounding))),
    ];
    this.smallRequest = setup.segments.smallRequest;
    this.maxSplitSize = setup.segments.maxSplitSize === 0 ? Infinity : setup.segments.maxSplitSize;
    this.sourceMemorySize = source.memorySize;
    if (setup.segments.expandable && isMappingSource(source)) {
      const granularity = source.mapGranularity;
      checkGranularity(granularity, setup.pageSize, Math.min(source.memorySize, setup.maxBufferLength));
      this.mapping = source as unknown as MappingSource<B>;
      this.granularity = granularity;
    }
  }

  protected get cacheBytes(): number {
    return this.reserved - this.active - this.quarantinedInSegments;
  }

  protected get cachedBuffers(): number {
    return this.pools[SMALL]!.count + this.pools[LARGE]!.count;
  }

  /** The bytes a hit on `block` hands out for a request of `size`: all of it unless it is split. */
  protected handedOut(block: Block<B>, size: number): number {
    return this.splits(block, size) ? size : block.size;
  }

  /**
   * Whether `block` is cut for a request of `size`: a small block when any 512 bytes remain, a large one
   * when more than a small request's worth remains (smaller rests stay with the block, as PyTorch), and
   * never a block the split limit keeps whole.
   */
  protected splits(block: Block<B>, size: number): boolean {
    const rest = block.size - size;
    if (block.segment.pool === SMALL) return rest >= this.rounding;
    // An expandable segment's tail is address space, never a cached block to keep whole.
    if (block.segment.pages !== null && block.after === null) return rest > this.smallRequest;
    return rest > this.smallRequest && block.size < this.maxSplitSize;
  }

  /** Cuts `block` to `size` when {@link splits} says so; the rest becomes a free block after it. */
  protected split(block: Block<B>, size: number): void {
    if (!this.splits(block, size)) return;
    const spare = this.spareBlocks.pop();
    const rest =
      spare === undefined
        ? new Block<B>(block.segment, block.offset + size, block.size - size, this)
        : spare.renew(block.segment, block.offset + size, block.size - size);
    rest.before = block;
    rest.after = block.after;
    if (block.after !== null) block.after.before = rest;
    block.after = rest;
    block.size = size;
    this.store(rest);
  }

  /** A free block into its pool, or an expandable segment's last block into its tail. */
  protected store(block: Block<B>): void {
    const segment = block.segment;
    if (segment.pages !== null && block.after === null) {
      segment.tail = block;
      block.free = true;
    } else this.pools[segment.pool]!.put(block);
  }

  /** Takes a free block out of its pool or tail. */
  protected unstore(block: Block<B>): void {
    const segment = block.segment;
    if (segment.tail === block) {
      segment.tail = null;
      block.free = false;
    } else this.pools[segment.pool]!.take(block);
  }

  /**
   * Frees `block` into its pool, merged with free neighbours (never with a quarantined one). The block that
   * stays keeps its range: a later split that cuts the same bytes again (a malloc and free of one size, the
   * common case) hands it out again without a new one. The merged-away block's range goes back.
   */
  protected putFree(block: Block<B>): void {
    const before = block.before;
    if (before?.free) {
      this.unstore(before);
      this.merge(before, block);
      block = before;
    }
    const after = block.after;
    if (after?.free) {
      this.unstore(after);
      this.merge(block, after);
    }
    this.store(block);
  }

  /** Keeps a block merged away for the next split (up to a few hundred). */
  private keepSpare(block: Block<B>): void {
    if (this.spareBlocks.length < 256) this.spareBlocks.push(block);
  }

  /** Gives a block's range back (its memory stays the segment's). */
  protected dropRange(block: Block<B>): void {
    const range = block.range;
    if (range === null) return;
    block.range = null;
    block.rangeSize = 0;
    if (this.source.releaseRange !== undefined) this.source.releaseRange(range);
  }

  /** A new segment for a request of `size` in `pool`; returns its first block (the whole segment, free). */
  protected newSegmentBlock(size: number, pool: number): Block<B> {
    if (pool === LARGE && this.mapping !== undefined && this.space === null) {
      const block = this.newSpaceBlock(this.mapping, size);
      if (block !== null) return block;
    }
    const options = this.options;
    let segmentSize: number;
    if (pool === SMALL) segmentSize = options.smallSegment;
    else if (size < options.largeSegment / 2) segmentSize = options.largeSegment;
    else segmentSize = Math.ceil(size / options.segmentRounding) * options.segmentRounding;
    if (segmentSize > this.maxBufferLength) segmentSize = Math.max(size, this.maxBufferLength);
    if (options.releaseIdleOnMiss === 1) this.releaseIdlePool(pool);
    else if (options.releaseIdleOnMiss >= 2 && this.reserved + segmentSize > this.highWaterReserved) {
      if (options.releaseIdleOnMiss === 2) this.releaseIdlePool(pool);
      else this.releaseIdlePool(pool, segmentSize);
    }
    // The cache limit counts the new segment's rest: idle segments go back first to stay within it.
    const excess = this.cacheBytes + segmentSize - size - this.cacheLimit;
    if (excess > 0 && this.idleOldest !== null) this.releaseIdle(excess);
    // GC: past the GC limit, idle segments go back first (the oldest first).
    const required = this.reserved + this.mapped + segmentSize;
    if (required >= this.gcLimitBytes && this.idleOldest !== null)
      this.releaseIdle(required - this.gcLimitBytes);
    this.ensureResource();
    const buffer = this.acquireBuffer(this.source, segmentSize);
    this.segmentCount++;
    const segment = new Segment<B>(buffer, segmentSize, pool);
    const block = new Block<B>(segment, 0, segmentSize, this);
    segment.first = block;
    // Counted as idle until the caller takes the block (it leaves the idle list then).
    this.becomeIdle(segment);
    this.reserved += segmentSize;
    this.notePeaks();
    return block;
  }

  protected becomeIdle(segment: Segment<B>): void {
    // An expandable segment is never given back whole: its free pages go back instead (releaseIdle).
    if (segment.pages !== null) return;
    segment.idle = true;
    segment.idleOlder = this.idleNewest;
    segment.idleNewer = null;
    if (this.idleNewest !== null) this.idleNewest.idleNewer = segment;
    else this.idleOldest = segment;
    this.idleNewest = segment;
    this.idleBytes += segment.size;
  }

  protected leaveIdle(segment: Segment<B>): void {
    if (!segment.idle) return;
    segment.idle = false;
    if (segment.idleNewer !== null) segment.idleNewer.idleOlder = segment.idleOlder;
    else this.idleNewest = segment.idleOlder;
    if (segment.idleOlder !== null) segment.idleOlder.idleNewer = segment.idleNewer;
    else this.idleOldest = segment.idleNewer;
    segment.idleNewer = null;
    segment.idleOlder = null;
    this.idleBytes -= segment.size;
  }

  /** Merges `right` into `left`, the block just before it; `right`'s range goes back, the block is kept spare. */
  private merge(left: Block<B>, right: Block<B>): void {
    this.dropRange(right);
    left.size += right.size;
    left.after = right.after;
    if (right.after !== null) right.after.before = left;
    this.keepSpare(right);
  }

  /** Gives idle segments back, oldest idle first, until `bytes` of cache are gone or none is idle. */
  protected trim(bytes: number): void {
    this.releaseIdle(bytes);
  }

  /**
   * Releases idle segments, the least recently idle first, until at least `bytes` were released. Every one
   * chosen leaves the books before its release runs; the first error is rethrown at the end.
   */
  protected releaseIdle(bytes: number): void {
    let released = 0;
    const teardown = new Teardown();
    while (released < bytes && this.idleOldest !== null) {
      const segment = this.idleOldest;
      this.leaveIdle(segment);
      released += segment.size;
      teardown.run(() => this.releaseSegment(segment));
    }
    if (released < bytes && this.space !== null) teardown.run(() => this.unmapFree(bytes - released));
    teardown.finish();
  }

  /**
   * The large pool's expandable segment, made on its first miss: address space for the device's memory,
   * nothing mapped; returns its one block (all of it, free). `null` when a request is larger than the space.
   */
  private newSpaceBlock(source: MappingSource<B>, size: number): Block<B> | null {
    const granularity = this.granularity;
    // At most MAX_GRANULES granules: the page table (4 bytes a granule) stays small whatever the device.
    const capacity =
      Math.min(
        MAX_GRANULES,
        Math.floor(Math.min(this.sourceMemorySize, this.maxBufferLength) / granularity),
      ) * granularity;
    if (size > capacity) return null;
    this.ensureResource();
    let buffer: B;
    try {
      buffer = source.reserve(capacity);
    } catch (error) {
      throw systemAllocationFailed(capacity, error);
    }
    this.segmentCount++;
    const segment = new Segment<B>(buffer, capacity, LARGE);
    segment.pages = new MappedPages<B>(source, buffer, capacity, granularity);
    const block = new Block<B>(segment, 0, capacity, this);
    segment.first = block;
    this.space = segment;
    return block;
  }

  /**
   * Maps the pages `[offset, offset + length)` of the expandable segment lacks, after giving back free
   * mapped pages when the new ones would raise the reserved peak (as `releaseIdleOnMiss` does with idle
   * segments), would break the cache limit, or would pass the GC limit; a refusal releases the whole cache
   * and retries once.
   */
  protected mapPages(pages: MappedPages<B>, offset: number, length: number): void {
    const missing = pages.missingBytes(offset, length);
    const onMiss = this.options.releaseIdleOnMiss;
    if (onMiss === 1) this.unmapFree(Infinity);
    else if (onMiss >= 2 && this.reserved + missing > this.highWaterReserved) {
      this.unmapFree(onMiss === 2 ? Infinity : missing);
    }
    const excess = this.cacheBytes + missing - length - this.cacheLimit;
    if (excess > 0) this.releaseIdle(excess);
    const required = this.reserved + this.mapped + missing;
    if (required >= this.gcLimitBytes) this.releaseIdle(required - this.gcLimitBytes);
    this.withRetry(this.source, missing, () =>
      this.countPages(pages, () => pages.mapRange(offset, length, this.options.mapAhead)),
    );
  }

  /** Unmaps whole mappings of the expandable segment that lie in free blocks until `bytes` went back. */
  private unmapFree(bytes: number): void {
    const space = this.space;
    if (space === null) return;
    const pages = space.pages!;
    let released = 0;
    const teardown = new Teardown();
    for (let block = space.first; block !== null && released < bytes; block = block.after) {
      if (!block.free) continue;
      const offset = block.offset;
      const size = block.size;
      teardown.run(() =>
        this.countPages(pages, () => {
          released += pages.unmapInside(offset, size, bytes - released);
        }),
      );
    }
    teardown.finish();
  }

  /** Runs a map or unmap of `pages` and moves `reserved`, its peaks and the system call counts by its effect. */
  private countPages(pages: MappedPages<B>, act: () => unknown): void {
    const bytes = pages.mappedBytes;
    const maps = pages.mapCalls;
    const unmaps = pages.unmapCalls;
    try {
      act();
    } finally {
      this.reserved += pages.mappedBytes - bytes;
      this.systemAllocations += pages.mapCalls - maps;
      this.systemReleases += pages.unmapCalls - unmaps;
      this.notePeaks();
    }
  }

  /**
   * Releases idle segments of `pool` (a miss found none of their blocks large enough), the least recently
   * idle first, until `bytes` were released or none is left.
   */
  private releaseIdlePool(pool: number, bytes = Infinity): void {
    const teardown = new Teardown();
    let segment = this.idleOldest;
    let released = 0;
    while (segment !== null && released < bytes) {
      const next: Segment<B> | null = segment.idleNewer;
      if (segment.pool === pool) {
        released += segment.size;
        const idle = segment;
        this.leaveIdle(idle);
        teardown.run(() => this.releaseSegment(idle));
      }
      segment = next;
    }
    teardown.finish();
  }

  /** Takes an idle segment's blocks out of the pool and gives it back to the system. */
  private releaseSegment(segment: Segment<B>): void {
    const teardown = new Teardown();
    for (let block = segment.first; block !== null; block = block.after) {
      if (block.free) this.unstore(block);
      // A range that cannot be released does not keep the segment: it goes all the same, and the failure is
      // reported once the segment is released.
      teardown.run(() => this.dropRange(block));
    }
    segment.first = null;
    this.reserved -= segment.size;
    if (segment.quarantinedBlocks > 0) {
      // The source keeps the whole segment while an escaped view reaches a block of it: all of it is
      // quarantined now, until the last of those blocks' quarantines ends.
      this.quarantinedInSegments -= segment.quarantinedBytes;
      this.quarantinedCount.bytes += segment.size - segment.quarantinedBytes;
      segment.quarantinedBytes = segment.size;
      segment.releasedWhileQuarantined = true;
    }
    this.segmentCount--;
    this.systemReleases++;
    const onRelease = this.onRelease;
    if (onRelease !== undefined) teardown.run(() => onRelease(segment.buffer));
    teardown.run(() => this.source.release(segment.buffer));
    teardown.finish();
  }

  /** Raises the peak of `reserved` (the figure) and the high-water mark of the segments' bytes. */
  private notePeaks(): void {
    const reserved = this.reserved - this.quarantinedInSegments;
    if (reserved > this.peakReserved) this.peakReserved = reserved;
    if (this.reserved > this.highWaterReserved) this.highWaterReserved = this.reserved;
  }

  /** Segments count against the device's resource limit (with mappings); idle segments go first. */
  protected get resources(): number {
    return this.segmentCount;
  }
}
