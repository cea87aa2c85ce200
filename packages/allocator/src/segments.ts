// The segments policy: a sub-allocating cache for discrete GPUs, where every system allocation is a slow
// driver call (cuMemAlloc: tens to hundreds of microseconds) and device memory is scarce. Large segments
// come from the source and blocks are handed out inside them: best fit, split, merged again on free, in two
// pools (small requests never fragment the large pool's segments), whole idle segments given back to stay
// within the cache limit, on clearCache() and before a system allocation would fail.
import { ArgumentError, byteCountProblem, Teardown } from "@nuvec/stats";
import { type Allocation, LiveAllocation } from "./allocation.js";
import type { BufferSource } from "./buffer-source.js";
import { allocatorClosed, bufferTooLarge, notQuarantined, systemAllocationFailed } from "./errors.js";
import { isMappingSource, MappedPages, type MappingSource } from "./expandable.js";
import { Block, FreeBlocks, Segment } from "./free-blocks.js";
import { PolicyAccounts, type PolicySetup } from "./policy-accounts.js";
import type { SegmentOptions } from "./segment-options.js";

const MIB = 1024 * 1024;
/** The most granules an expandable segment spans (16 MiB of page table). */
const MAX_GRANULES = 2 ** 22;
const SMALL = 0;
const LARGE = 1;

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
type RangeSource<B> = BufferSource<B> & Required<Pick<BufferSource<B>, "range">>;

/** The allocator's hooks and limits, as {@link CachingAllocator} passes them on, and the sizes. */
export interface SegmentAllocatorSetup<B> extends PolicySetup<B> {
  segments: SegmentOptions;
}

/**
 * The segments policy over a {@link BufferSource} that makes ranges of its buffers. `CachingAllocator`
 * runs it when `policy` is `"segments"`; the public surface is the same.
 *
 * Figures: `active` is the bytes of live blocks; `cache` the bytes of held segments in free blocks;
 * `quarantined` (with what the caller counts for mapped files) the quarantined blocks of held segments and
 * every segment given back while a block of it was quarantined, which the source holds whole until that
 * block's quarantine ends. Every byte the source holds for the policy is in exactly one of `active`, `cache`
 * and `quarantined`; `reserved` (`active + cache`) is the held segments less their quarantined blocks.
 * `systemAllocations` counts segments.
 */
export class SegmentAllocator<B> extends PolicyAccounts<B> {
  private readonly source: RangeSource<B>;
  private readonly options: SegmentOptions;
  private readonly pools: FreeBlocks<B>[];
  private readonly rounding: number;
  private readonly smallRequest: number;
  private readonly maxSplitSize: number;
  // The bytes of the segments held (an expandable segment's mapped pages), quarantined blocks included.
  private reserved = 0;
  // The bytes of quarantined blocks in held segments: in `reserved` here, in `quarantined` in the figures.
  private quarantinedInSegments = 0;
  private segmentCount = 0;
  private idleOldest: Segment<B> | null = null;
  private idleNewest: Segment<B> | null = null;
  private idleBytes = 0;
  /** The source's mapping calls when the large pool is expandable, and its granularity (read once). */
  private readonly mapping: MappingSource<B> | undefined;
  private readonly granularity: number = 0;
  /** The large pool's expandable segment once made. */
  private space: Segment<B> | null = null;
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

  /** The source's map granularity when the large pool is expandable; `undefined` otherwise. */
  get mapGranularity(): number | undefined {
    return this.mapping === undefined ? undefined : this.granularity;
  }

  /** The sizes in use. */
  get segmentOptions(): SegmentOptions {
    return this.options;
  }

  /** The block size a request of `bytes` gets (before a hit hands out a whole unsplit block). */
  blockSize(bytes: number): number {
    const rounding = this.rounding;
    return Math.ceil(bytes / rounding) * rounding;
  }

  malloc(bytes: number): Allocation<B> {
    if (this.closed) throw allocatorClosed("malloc");
    if (!(typeof bytes === "number" && Number.isSafeInteger(bytes) && bytes >= 0)) {
      const problem = byteCountProblem(bytes, "bytes");
      throw new ArgumentError("bytes", problem?.message ?? "bytes must be a byte count");
    }
    if (bytes === 0) return new LiveAllocation<B>(undefined, 0, 0, undefined);
    const size = this.blockSize(bytes);
    if (size > this.maxBufferLength) throw bufferTooLarge(bytes, this.maxBufferLength);
    const used = this.withinLimit(size);
    const pool = size <= this.smallRequest ? SMALL : LARGE;
    const free = this.pools[pool]!;
    // A free block kept whole by the split limit serves only requests of its own kind (≥ the limit), and
    // then only one not much larger than the request (PyTorch's rule), so a big block is not pinned by a
    // small request.
    const limit = size >= this.maxSplitSize ? size + this.options.largeSegment : this.maxSplitSize;
    let block = free.count > 0 ? free.bestFit(size, limit) : null;
    if (block !== null) {
      if (used + this.handedOut(block, size) > this.memoryLimit) block = null;
      else {
        free.take(block);
        this.cacheHits++;
      }
    }
    // Nothing free fits: an expandable segment's tail, the address space after its last block.
    if (block === null && pool === LARGE && this.space?.tail != null) {
      const tail = this.space.tail;
      if (tail.size >= size && used + this.handedOut(tail, size) <= this.memoryLimit) {
        this.unstore(tail);
        block = tail;
        this.cacheHits++;
      }
    }
    const hit = block !== null;
    if (block === null) {
      block = this.newSegmentBlock(size, pool);
      this.cacheMisses++;
    }
    // The range first, before anything else changes: a source that refuses it leaves the block free.
    const length = this.splits(block, size) ? size : block.size;
    const pages = block.segment.pages;
    if (pages !== null && !pages.covers(block.offset, length)) {
      try {
        this.mapPages(pages, block.offset, length);
      } catch (error) {
        this.store(block);
        if (hit) this.cacheHits--;
        else this.cacheMisses--;
        throw error;
      }
      // Memory was mapped for it: a miss, whatever the free blocks said.
      if (hit) {
        this.cacheHits--;
        this.cacheMisses++;
      }
    }
    let range = block.range;
    if (range === null || block.rangeSize !== length || block.rangeOffset !== block.offset) {
      let made: B;
      try {
        made = this.source.range(block.segment.buffer, block.offset, length);
      } catch (error) {
        // A hit's block goes back to its pool; a new segment stays, idle, its block free.
        this.store(block);
        if (hit) this.cacheHits--;
        else this.cacheMisses--;
        throw error;
      }
      if (range !== null) this.dropRange(block);
      range = made;
      block.range = range;
      block.rangeSize = length;
      block.rangeOffset = block.offset;
    }
    if (block.segment.live === 0) this.leaveIdle(block.segment);
    this.split(block, size);
    const allocation = new LiveAllocation<B>(range, block.size, bytes, block);
    block.allocation = allocation;
    block.liveSize = size;
    block.segment.live++;
    this.charge(block.size, size);
    return allocation;
  }

  protected freeAllocation(allocation: Allocation<B>, mayCache: boolean): void {
    const block = this.unlive<Block<B>>(allocation, Block);
    if (block === undefined) return;
    const segment = block.segment;
    segment.live--;
    this.active -= block.size;
    this.live -= block.liveSize;
    block.liveSize = 0;
    if (mayCache) this.putFree(block);
    else {
      // Something outside may still reach this block's memory: it is not handed out again until its
      // quarantine ends. Its range goes back now (the source holds the memory while that view lives); the
      // segment goes back once nothing in it is live (countQuarantined counts the block).
      block.quarantined = true;
      this.dropRange(block);
    }
    if (segment.live === 0) this.becomeIdle(segment);
    if (mayCache) this.trimToLimit();
  }

  protected override trimAfterFree(): void {
    this.trimToLimit();
  }

  /** The cache trimmed to its limit, idle segments first. */
  private trimToLimit(): void {
    const cache = this.cacheBytes;
    if (cache > this.cacheLimit) this.trim(cache - this.cacheLimit);
  }

  /**
   * A block just quarantined (`quarantine()`): counted in `quarantined` (and out of `cache`) while its
   * segment is held; once the segment goes back, the whole segment is (see {@link releaseSegment}).
   */
  protected override countQuarantined(allocation: Allocation<B>): void {
    const block = (allocation as LiveAllocation<B>).record;
    if (!(block instanceof Block)) return;
    block.quarantinedBy = allocation;
    const segment = block.segment;
    segment.quarantinedBlocks++;
    segment.quarantinedBytes += block.size;
    this.quarantinedInSegments += block.size;
    this.quarantinedCount.bytes += block.size;
    this.trimToLimit();
  }

  /**
   * The source gave back what `allocation`'s quarantined block held: in a held segment the block is free
   * again (merged, reusable); in a segment given back meanwhile, the segment leaves `quarantined` with its
   * last quarantined block.
   */
  override endQuarantine(allocation: Allocation<B>): void {
    if (this.closed) throw allocatorClosed("end a quarantine");
    const block = allocation instanceof LiveAllocation ? (allocation as LiveAllocation<B>).record : undefined;
    if (!(block instanceof Block) || block.owner !== this || block.quarantinedBy !== allocation) {
      throw notQuarantined();
    }
    block.quarantinedBy = null;
    block.quarantined = false;
    const segment = block.segment;
    segment.quarantinedBlocks--;
    if (segment.releasedWhileQuarantined) {
      if (segment.quarantinedBlocks === 0) {
        this.quarantinedCount.bytes -= segment.quarantinedBytes;
        segment.quarantinedBytes = 0;
      }
      return;
    }
    segment.quarantinedBytes -= block.size;
    this.quarantinedInSegments -= block.size;
    this.quarantinedCount.bytes -= block.size;
    this.putFree(block);
    this.trimToLimit();
  }

  /**
   * After close: gives back what a live block holds, its range, and its segment once nothing in it is live
   * (an expandable segment: every mapping, then the address space). No hook runs (the caller's residency is
   * closed too). Returns the bytes that left `reserved`: the segment's (its mapped ones), or 0.
   */
  override releaseAfterClose(allocation: Allocation<B>): number {
    const block = this.unlive<Block<B>>(allocation, Block, true);
    if (block === undefined) return 0;
    const segment = block.segment;
    segment.live--;
    block.liveSize = 0;
    let released = 0;
    const teardown = new Teardown();
    teardown.run(() => this.dropRange(block));
    if (segment.live === 0) {
      released = (segment.pages?.mappedBytes ?? segment.size) - segment.quarantinedBytes;
      teardown.run(() => this.releaseClosedSegment(segment));
    }
    teardown.finish();
    return released;
  }

  /** A segment of a closed policy with no live block: its ranges, its mappings, then its buffer go back. */
  private releaseClosedSegment(segment: Segment<B>): void {
    const teardown = new Teardown();
    for (let block = segment.first; block !== null; block = block.after) {
      const each = block;
      teardown.run(() => this.dropRange(each));
    }
    segment.first = null;
    segment.tail = null;
    const pages = segment.pages;
    if (pages !== null) teardown.run(() => pages.unmapInside(0, segment.size, Infinity));
    if (segment === this.space) this.space = null;
    this.segmentCount--;
    teardown.run(() => this.source.release(segment.buffer));
    teardown.finish();
  }

  /** Segments held (live or idle) and the largest free block of each pool: what fragmentation looks like. */
  segmentFigures(): {
    segments: number;
    idleSegments: number;
    largestFreeSmall: number;
    largestFreeLarge: number;
  } {
    if (this.closed) throw allocatorClosed("read the statistics");
    let idle = 0;
    for (let segment = this.idleOldest; segment !== null; segment = segment.idleNewer) idle++;
    return {
      segments: this.segmentCount,
      idleSegments: idle,
      largestFreeSmall: this.pools[SMALL]!.largest(),
      largestFreeLarge: this.pools[LARGE]!.largest(),
    };
  }

  setCacheLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the cache limit");
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    this.trimToLimit();
    return previous;
  }

  protected releaseCached(): void {
    this.releaseIdle(Infinity);
  }

  /**
   * Gives back every segment with no live block: the idle ones, and the expandable segment with whatever is
   * still mapped in it (under quarantined blocks too: the source holds what an escaped view reaches). A
   * segment with live blocks (a free the caller still waits for) goes back with its last one
   * ({@link releaseAfterClose}).
   */
  close(): void {
    if (this.closed) return;
    const teardown = new Teardown();
    teardown.run(() => this.releaseIdle(Infinity));
    const space = this.space;
    if (space !== null && space.live === 0) teardown.run(() => this.releaseClosedSegment(space));
    this.closed = true;
    teardown.finish();
  }

  /** The bytes a hit on `block` hands out for a request of `size`: all of it unless it is split. */
  private handedOut(block: Block<B>, size: number): number {
    return this.splits(block, size) ? size : block.size;
  }

  /**
   * Whether `block` is cut for a request of `size`: a small block when any 512 bytes remain, a large one
   * when more than a small request's worth remains (smaller rests stay with the block, as PyTorch), and
   * never a block the split limit keeps whole.
   */
  private splits(block: Block<B>, size: number): boolean {
    const rest = block.size - size;
    if (block.segment.pool === SMALL) return rest >= this.rounding;
    // An expandable segment's tail is address space, never a cached block to keep whole.
    if (block.segment.pages !== null && block.after === null) return rest > this.smallRequest;
    return rest > this.smallRequest && block.size < this.maxSplitSize;
  }

  /** Cuts `block` to `size` when {@link splits} says so; the rest becomes a free block after it. */
  private split(block: Block<B>, size: number): void {
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
  private store(block: Block<B>): void {
    const segment = block.segment;
    if (segment.pages !== null && block.after === null) {
      segment.tail = block;
      block.free = true;
    } else this.pools[segment.pool]!.put(block);
  }

  /** Takes a free block out of its pool or tail. */
  private unstore(block: Block<B>): void {
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
  private putFree(block: Block<B>): void {
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
  private dropRange(block: Block<B>): void {
    const range = block.range;
    if (range === null) return;
    block.range = null;
    block.rangeSize = 0;
    if (this.source.releaseRange !== undefined) this.source.releaseRange(range);
  }

  /** A new segment for a request of `size` in `pool`; returns its first block (the whole segment, free). */
  private newSegmentBlock(size: number, pool: number): Block<B> {
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

  private becomeIdle(segment: Segment<B>): void {
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

  private leaveIdle(segment: Segment<B>): void {
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
  private trim(bytes: number): void {
    this.releaseIdle(bytes);
  }

  /**
   * Releases idle segments, the least recently idle first, until at least `bytes` were released. Every one
   * chosen leaves the books before its release runs; the first error is rethrown at the end.
   */
  private releaseIdle(bytes: number): void {
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
  private mapPages(pages: MappedPages<B>, offset: number, length: number): void {
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
