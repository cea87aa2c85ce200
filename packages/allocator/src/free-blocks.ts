// The free blocks of one pool of the segments policy, ordered for best fit: the smallest free block at
// least as large as a request, found without a scan.
import type { MappedPages } from "./expandable.js";
import { COMPACT_AT_EMPTY, firstMarked, lowerBound, lowestSetBit, withRoom } from "./sorted-keys.js";

/**
 * A block of a segment: a range of bytes `[offset, offset + size)`, live (handed out), free (in its pool's
 * {@link FreeBlocks}) or quarantined (freed, but never to be reused: a view of it escaped). Blocks of one
 * segment form a list in address order, so a freed block finds its neighbours to merge with in O(1).
 */
export class Block<B> {
  /** The segment this block is part of. */
  segment: Segment<B>;
  offset: number;
  size: number;
  /** Neighbours in the segment, in address order. */
  before: Block<B> | null = null;
  after: Block<B> | null = null;
  /** The allocation that holds the block now; `null` while free or quarantined. Frees are checked against it. */
  allocation: object | null = null;
  /** In its pool's free blocks. */
  free = false;
  /**
   * Quarantined (a view of it escaped): never handed out or merged until {@link quarantinedBy}'s quarantine
   * ends; its segment still goes back once nothing in it is live (the source then holds it whole).
   */
  quarantined = false;
  /** The allocation whose quarantine holds the block; `null` when not quarantined. */
  quarantinedBy: object | null = null;
  /** The rounded request of the allocation holding it (counted in `live`). */
  liveSize = 0;
  /** The backend's buffer over exactly this block (`offset`, `size`), kept while the block is unchanged. */
  range: B | null = null;
  /** Its length when made (a split or merge makes it stale). */
  rangeSize = 0;
  rangeOffset = 0;
  /** Links in its size's list of free blocks. */
  newer: Block<B> | null = null;
  older: Block<B> | null = null;
  /** Its size's list when the size is a large one (`null` for indexed sizes). */
  bucket: SizeBucket<B> | null = null;
  /** The allocator that owns it (frees are checked against it). */
  readonly owner: object;

  constructor(segment: Segment<B>, offset: number, size: number, owner: object) {
    this.segment = segment;
    this.offset = offset;
    this.size = size;
    this.owner = owner;
  }

  /**
   * Makes a block merged away into a new one (the policy keeps a few spare: a split then allocates nothing).
   * An allocation that still names it fails its free as a double free, as before: its `allocation` is
   * another one or none.
   */
  renew(segment: Segment<B>, offset: number, size: number): this {
    this.segment = segment;
    this.offset = offset;
    this.size = size;
    this.before = null;
    this.after = null;
    this.allocation = null;
    this.free = false;
    this.quarantined = false;
    this.quarantinedBy = null;
    this.liveSize = 0;
    this.range = null;
    this.rangeSize = 0;
    this.rangeOffset = 0;
    this.newer = null;
    this.older = null;
    this.bucket = null;
    return this;
  }
}

/** One system buffer of the segments policy, cut into blocks. */
export class Segment<B> {
  readonly buffer: B;
  readonly size: number;
  /** Which pool it serves (0: small, 1: large). */
  readonly pool: number;
  /** Its first block (address order). */
  first: Block<B> | null = null;
  /** Live blocks in it: it can go back to the system only at 0. */
  live = 0;
  /** Links in the allocator's list of idle segments (no live block), oldest idle first. */
  idleNewer: Segment<B> | null = null;
  idleOlder: Segment<B> | null = null;
  idle = false;
  /**
   * An expandable segment's mapped pages (its `size` is address space then, not memory); `null` for a
   * segment that is memory throughout.
   */
  pages: MappedPages<B> | null = null;
  /**
   * An expandable segment's last block while it is free: the rest of the address space, kept out of the
   * pool (its size changes with every block cut from it or merged back, which would churn the pool's sizes;
   * and being the largest, best fit would take it last anyway).
   */
  tail: Block<B> | null = null;
  /** Its quarantined blocks: while any is, the source holds the segment's memory for an escaped view. */
  quarantinedBlocks = 0;
  /**
   * The bytes of it counted in `quarantined`: its quarantined blocks' while the policy holds it; all of it
   * once it went back to the source with quarantined blocks (`releasedWhileQuarantined`).
   */
  quarantinedBytes = 0;
  /** Given back to the source while blocks of it were quarantined: out of the books but for `quarantined`. */
  releasedWhileQuarantined = false;

  constructor(buffer: B, size: number, pool: number) {
    this.buffer = buffer;
    this.size = size;
    this.pool = pool;
  }
}

/** The free blocks of one size, most recently freed first. */
class SizeBucket<B> {
  size = 0;
  /** Position in the sorted arrays of {@link FreeBlocks}' large sizes. */
  index = 0;
  newest: Block<B> | null = null;
}

/** By default, free sizes up to this many steps (blocks of `step` bytes) are found through a bit set. */
const INDEXED_STEPS = 1 << 14;

/**
 * The free blocks of a pool by size, for best fit (the smallest free block at least as large as a request)
 * without a scan. Sizes up to `INDEXED_STEPS` steps have a list each, found by index, and a two-level bit
 * set of the non-empty ones (the next non-empty size is a few bit operations away); larger sizes, far fewer,
 * have a sorted typed array of the distinct ones with a list each. Taking or putting a block allocates
 * nothing once its size has been seen.
 */
export class FreeBlocks<B> {
  /** Bytes in free blocks. */
  bytes = 0;
  /** Free blocks. */
  count = 0;

  private readonly step: number;
  private readonly indexedLimit: number;
  private readonly heads: (Block<B> | null)[];
  private readonly bits: Int32Array;
  private readonly summary: Int32Array;
  private sizes = new Float64Array(64);
  private buckets: SizeBucket<B>[] = [];
  private readonly bucketOfSize = new Map<number, SizeBucket<B>>();
  private nonEmpty = new Int32Array(2);
  private distinct = 0;
  private emptyBuckets = 0;
  private spareBuckets: SizeBucket<B>[] = [];

  /**
   * `step`: every block size is a multiple of it (the policy's rounding, a power of two); `indexedSteps`:
   * sizes up to this many steps are indexed (a pool of large blocks indexes more: its sizes are many, and
   * each new one costs the sorted path an insertion).
   */
  constructor(step: number, indexedSteps: number = INDEXED_STEPS) {
    this.step = step;
    this.indexedLimit = indexedSteps * step;
    this.heads = new Array(indexedSteps + 1).fill(null);
    this.bits = new Int32Array((indexedSteps + 1 + 31) >>> 5);
    this.summary = new Int32Array((((indexedSteps + 1 + 31) >>> 5) + 31) >>> 5);
  }

  /** The smallest free block of at least `minimum` and below `limit` bytes (most recently freed), or `null`. */
  bestFit(minimum: number, limit: number): Block<B> | null {
    if (minimum <= this.indexedLimit) {
      const slot = this.nextIndexed(Math.ceil(minimum / this.step));
      if (slot >= 0) return slot * this.step < limit ? this.heads[slot]! : null;
    }
    return this.largeFit(minimum, limit);
  }

  /** Adds a free block. */
  put(block: Block<B>): void {
    const size = block.size;
    if (size <= this.indexedLimit) {
      const slot = size / this.step;
      const head = this.heads[slot]!;
      if (head === null) {
        const word = slot >>> 5;
        if (this.bits[word] === 0) this.summary[word >>> 5]! |= 1 << (word & 31);
        this.bits[word]! |= 1 << (slot & 31);
      } else head.newer = block;
      block.older = head;
      block.newer = null;
      block.bucket = null;
      this.heads[slot] = block;
    } else {
      let bucket = this.bucketOfSize.get(size);
      if (bucket === undefined) bucket = this.insertSize(size);
      const head = bucket.newest;
      if (head === null) {
        this.emptyBuckets--;
        this.nonEmpty[bucket.index >>> 5]! |= 1 << (bucket.index & 31);
      } else head.newer = block;
      block.older = head;
      block.newer = null;
      bucket.newest = block;
      block.bucket = bucket;
    }
    block.free = true;
    this.bytes += size;
    this.count++;
  }

  /** Takes a free block out (it must be in). */
  take(block: Block<B>): void {
    const bucket = block.bucket;
    if (block.newer !== null) block.newer.older = block.older;
    else if (bucket === null) {
      const slot = block.size / this.step;
      this.heads[slot] = block.older;
      if (block.older === null) {
        const word = slot >>> 5;
        this.bits[word]! &= ~(1 << (slot & 31));
        if (this.bits[word] === 0) this.summary[word >>> 5]! &= ~(1 << (word & 31));
      }
    } else {
      bucket.newest = block.older;
      if (block.older === null) {
        this.emptyBuckets++;
        this.nonEmpty[bucket.index >>> 5]! &= ~(1 << (bucket.index & 31));
      }
    }
    if (block.older !== null) block.older.newer = block.newer;
    block.newer = null;
    block.older = null;
    block.bucket = null;
    block.free = false;
    this.bytes -= block.size;
    this.count--;
  }

  /** The largest free block's size (0 when none). */
  largest(): number {
    const words = this.nonEmpty;
    for (let word = (this.distinct - 1) >>> 5; this.distinct > 0 && word >= 0; word--) {
      if (words[word] !== 0) return this.sizes[(word << 5) + 31 - Math.clz32(words[word]!)]!;
    }
    for (let word = this.bits.length - 1; word >= 0; word--) {
      if (this.bits[word] !== 0) return ((word << 5) + 31 - Math.clz32(this.bits[word]!)) * this.step;
    }
    return 0;
  }

  /** The first non-empty indexed slot at or after `slot`, or -1. */
  private nextIndexed(slot: number): number {
    const bits = this.bits;
    let word = slot >>> 5;
    if (word >= bits.length) return -1;
    const here = bits[word]! & (-1 << (slot & 31));
    if (here !== 0) return (word << 5) + lowestSetBit(here);
    // The summary says which words have a bit: the next one after `word`.
    const summary = this.summary;
    word++;
    let group = word >>> 5;
    if (group >= summary.length) return -1;
    let marks = summary[group]! & (-1 << (word & 31));
    while (marks === 0) {
      group++;
      if (group >= summary.length) return -1;
      marks = summary[group]!;
    }
    word = (group << 5) + lowestSetBit(marks);
    return (word << 5) + lowestSetBit(bits[word]!);
  }

  private largeFit(minimum: number, limit: number): Block<B> | null {
    const sizes = this.sizes;
    const distinct = this.distinct;
    const index = firstMarked(this.nonEmpty, sizes, distinct, lowerBound(sizes, distinct, minimum), limit);
    return index < 0 ? null : this.buckets[index]!.newest;
  }

  /** Rare (a large size not seen since the last compaction): costs O(distinct large sizes). */
  private insertSize(size: number): SizeBucket<B> {
    if (this.emptyBuckets >= COMPACT_AT_EMPTY && this.emptyBuckets * 2 >= this.distinct) this.compact();
    const low = lowerBound(this.sizes, this.distinct, size);
    if (this.distinct === this.sizes.length) {
      this.sizes = withRoom(this.sizes, this.distinct);
      this.nonEmpty = new Int32Array(this.sizes.length / 32);
    }
    this.sizes.copyWithin(low + 1, low, this.distinct);
    this.sizes[low] = size;
    const bucket = this.spareBuckets.pop() ?? new SizeBucket<B>();
    bucket.size = size;
    bucket.newest = null;
    this.buckets.splice(low, 0, bucket);
    this.bucketOfSize.set(size, bucket);
    this.distinct++;
    this.emptyBuckets++;
    this.reindex(low);
    return bucket;
  }

  /** Drops the empty large buckets. */
  private compact(): void {
    let kept = 0;
    for (let index = 0; index < this.distinct; index++) {
      const bucket = this.buckets[index]!;
      if (bucket.newest === null) {
        this.spareBuckets.push(bucket);
        this.bucketOfSize.delete(bucket.size);
        continue;
      }
      this.buckets[kept] = bucket;
      this.sizes[kept] = bucket.size;
      kept++;
    }
    this.buckets.length = kept;
    this.distinct = kept;
    this.emptyBuckets = 0;
    this.reindex(0);
  }

  private reindex(from: number): void {
    for (let index = from; index < this.distinct; index++) this.buckets[index]!.index = index;
    this.nonEmpty.fill(0);
    for (let index = 0; index < this.distinct; index++) {
      if (this.buckets[index]!.newest !== null) this.nonEmpty[index >>> 5]! |= 1 << (index & 31);
    }
  }
}
