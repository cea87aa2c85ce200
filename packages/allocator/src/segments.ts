// The segments policy: a sub-allocating cache for discrete GPUs, where every system allocation is a slow
// driver call (cuMemAlloc: tens to hundreds of microseconds) and device memory is scarce. Large segments
// come from the source and blocks are handed out inside them: best fit, split, merged again on free, in two
// pools (small requests never fragment the large pool's segments), whole idle segments given back to stay
// within the cache limit, on clearCache() and before a system allocation would fail.
// The segments, blocks and pools it decides over are kept by segment-store.ts.
import { ArgumentError, byteCountProblem, Teardown } from "@nuvec/stats";
import { type Allocation, LiveAllocation } from "./allocation.js";
import { allocatorClosed, bufferTooLarge, notQuarantined } from "./errors.js";
import { Block, type Segment } from "./free-blocks.js";
import type { SegmentOptions } from "./segment-options.js";
import { LARGE, SegmentStore, SMALL } from "./segment-store.js";

export type { SegmentAllocatorSetup } from "./segment-store.js";

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
export class SegmentAllocator<B> extends SegmentStore<B> {
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
}
