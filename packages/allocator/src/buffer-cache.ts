import { PAGE, Teardown } from "@nuvec/stats";
import type { CachedBuffer } from "./cached-buffer.js";
import { COMPACT_AT_EMPTY, firstMarked, lowerBound, withRoom } from "./sorted-keys.js";

/** The FIFO queue of cached buffers of one length. */
export class LengthBucket<B> {
  declare length: number;
  /** Position in the sorted arrays of {@link BufferCache}. */
  declare index: number;
  declare oldest: CachedBuffer<B> | null;
  declare newest: CachedBuffer<B> | null;

  constructor() {
    this.length = 0;
    this.index = 0;
    this.oldest = null;
    this.newest = null;
  }
}

// Eight lengths at the first: 64 bytes, which V8 keeps on its heap (a cache makes no buffer outside it).
const INITIAL_CAPACITY = 8;
/** A fresh cache's lengths and marks: empty, shared, never written. */
const NO_LENGTHS = new Float64Array(0);
const NO_MARKS = new Int32Array(0);
/**
 * Below this many distinct lengths a queue is found by a binary search of the lengths (a few comparisons,
 * and nothing to build: a short replay's cache never indexes); from it on, by the index of
 * {@link BufferCache}'s position chunks.
 */
const INDEX_AT = 16;
/** Lengths up to this (16 MiB) that are size classes find their queue by index (see {@link slotOf}). */
const INDEXED_LENGTHS = 16 * 1024 * 1024;
/** Index slots of the lengths up to a page: 0, 256, …, 16 KiB. */
const SLOTS_UP_TO_PAGE = PAGE / 256;
/** The index of small lengths is made of chunks of 2^6 slots, each made when a length of it first comes. */
const CHUNK_BITS = 6;
const CHUNK_SLOTS = 1 << CHUNK_BITS;
const CHUNKS = Math.ceil((SLOTS_UP_TO_PAGE + INDEXED_LENGTHS / PAGE) / CHUNK_SLOTS);

/**
 * The index slot of a size class: one per 256 bytes up to a page, one per page above, up to
 * {@link INDEXED_LENGTHS} (1,088 slots); -1 for any other length (its queue is found in a Map).
 */
function slotOf(length: number): number {
  if (length <= PAGE) return (length & 255) === 0 ? length >>> 8 : -1;
  return length <= INDEXED_LENGTHS && (length & (PAGE - 1)) === 0 ? SLOTS_UP_TO_PAGE - 1 + length / PAGE : -1;
}

/**
 * MLX's `BufferCache`: cached buffers ordered by length (for reuse) and by the time they were cached (for
 * release). The lengths live in a sorted typed array with one FIFO queue per length and a bit set of the
 * non-empty queues; a buffer's links are intrusive, so nothing here allocates per event once the distinct
 * lengths have been seen.
 */
export class BufferCache<B> {
  // Declared and assigned in the constructor (no field initializer function; every replay opens a cache).
  /** Bytes cached. */
  declare bytes: number;
  /** Buffers cached. */
  declare buffers: number;

  // The sorted lengths and the bits of their non-empty queues. Until the first length comes, both are the
  // shared empty arrays (never written: a write past a typed array's end is dropped): a fresh cache makes
  // no typed array before it caches.
  declare private lengths: Float64Array<ArrayBuffer>;
  declare private nonEmpty: Int32Array<ArrayBuffer>;
  declare private buckets: LengthBucket<B>[];
  /**
   * Once the cache has seen {@link INDEX_AT} distinct lengths, where each length's queue is in
   * {@link buckets}, so an exact-length request (most hits) needs no search: `position + 1` (0: none) by
   * {@link slotOf} for the size classes up to {@link INDEXED_LENGTHS} (nearly every request's; kept by
   * {@link reindex}), and the queue itself in a Map (made at its first entry) for the other lengths.
   */
  // Plain holey arrays of small integers (a hole or 0: none) in chunks of {@link CHUNK_SLOTS} slots, each
  // made when one of its lengths is first indexed: a fresh cache (a replay's) makes no typed array outside
  // the heap for it, and neither fills nor copies slots it does not use (a short replay would pay more for
  // a whole index than for its events).
  declare private readonly positionChunks: ((number | undefined)[] | undefined)[];
  /** Whether the index is kept: from {@link INDEX_AT} distinct lengths on (it is never dropped). */
  declare private indexed: boolean;
  declare private bucketOfLargeLength: Map<number, LengthBucket<B>> | undefined;
  declare private distinct: number;
  declare private emptyBuckets: number;
  declare private spareBuckets: LengthBucket<B>[];
  declare private newest: CachedBuffer<B> | null;
  declare private oldest: CachedBuffer<B> | null;
  declare private readonly releaseBuffer: (record: CachedBuffer<B>) => void;

  /** `releaseBuffer` gives a buffer the cache let go of back to the system. */
  constructor(releaseBuffer: (record: CachedBuffer<B>) => void) {
    this.bytes = 0;
    this.buffers = 0;
    this.lengths = NO_LENGTHS;
    this.buckets = [];
    this.positionChunks = new Array(CHUNKS);
    this.indexed = false;
    this.bucketOfLargeLength = undefined;
    this.nonEmpty = NO_MARKS;
    this.distinct = 0;
    this.emptyBuckets = 0;
    this.spareBuckets = [];
    this.newest = null;
    this.oldest = null;
    this.releaseBuffer = releaseBuffer;
  }

  /**
   * The position of the smallest cached length `s` with `minimum ≤ s < limit`, or `-1`. Look at it with
   * {@link lengthAt}, take it with {@link takeAt}; among equal lengths the oldest is taken (MLX's multimap).
   */
  find(minimum: number, limit: number): number {
    const lengths = this.lengths;
    const distinct = this.distinct;
    if (!this.indexed) {
      // Fewer than 32 lengths: one pass up the lengths, their marks in one word (no call to inline).
      const marks = this.nonEmpty[0]!;
      for (let index = 0; index < distinct; index++) {
        const length = lengths[index]!;
        if (length < minimum) continue;
        if (length >= limit) return -1;
        if ((marks & (1 << index)) !== 0) return index;
      }
      return -1;
    }
    let low = this.positionOf(minimum);
    if (low >= 0) {
      if (this.buckets[low]!.oldest !== null) return lengths[low]! < limit ? low : -1;
    } else low = lowerBound(lengths, distinct, minimum);
    return firstMarked(this.nonEmpty, lengths, distinct, low, limit);
  }

  /** The length at a position returned by {@link find}. */
  lengthAt(index: number): number {
    return this.lengths[index]!;
  }

  /** Takes the oldest buffer at a position returned by {@link find} out of the cache. */
  takeAt(index: number): CachedBuffer<B> {
    return this.takeOldestOf(this.buckets[index]!);
  }

  /** Caches a buffer as the most recently cached. */
  put(record: CachedBuffer<B>): void {
    // The queue it left when last reused, unless a compaction or clear has recycled it since.
    let bucket = record.bucket;
    if (bucket === null || bucket.length !== record.length || this.buckets[bucket.index] !== bucket) {
      bucket = this.bucketFor(record.length);
    }
    if (bucket.newest === null) {
      bucket.oldest = record;
      this.emptyBuckets--;
      this.nonEmpty[bucket.index >>> 5]! |= 1 << (bucket.index & 31);
    } else {
      bucket.newest.nextOfLength = record;
    }
    bucket.newest = record;
    record.nextOfLength = null;
    record.bucket = bucket;
    record.older = this.newest;
    record.newer = null;
    if (this.newest !== null) this.newest.newer = record;
    else this.oldest = record;
    this.newest = record;
    this.bytes += record.length;
    this.buffers++;
  }

  /**
   * MLX's `release_cached_buffers`: releases least recently cached buffers until at least `minimumBytes` are
   * freed, or the whole cache when that is 90% of it or more. Returns the number of buffers released.
   * Exception-safe like {@link clear}: every buffer of the trim leaves the cache, the first error is rethrown.
   */
  release(minimumBytes: number): number {
    if (minimumBytes >= 0.9 * this.bytes) return this.clear();
    let freed = 0;
    let released = 0;
    const teardown = new Teardown();
    while (this.oldest !== null && freed < minimumBytes) {
      freed += this.oldest.length;
      released++;
      // A buffer whose release threw is out of the cache all the same (its record was unlinked first): the
      // trim goes on, so one failing release never leaves the cache above what was asked.
      teardown.run(() => this.releaseOldest());
    }
    teardown.finish();
    return released;
  }

  /** Releases the least recently cached buffer (the cache must not be empty). */
  releaseOldest(): void {
    // The least recently cached buffer is also the oldest of its length: both orders are caching order.
    this.releaseBuffer(this.takeOldestOf(this.oldest!.bucket!));
  }

  /**
   * Releases the oldest buffer of the smallest cached length of at least `bytes`, or of the largest length
   * when none is that long (the cache must not be empty): `bytes` freed with one buffer lost, and the
   * fewest bytes that do it.
   */
  releaseFitting(bytes: number): void {
    const index = this.find(bytes, Number.POSITIVE_INFINITY);
    if (index < 0) this.releaseLargest();
    else this.releaseBuffer(this.takeOldestOf(this.buckets[index]!));
  }

  /**
   * Releases the oldest buffer of the largest cached length (the cache must not be empty): frees the most
   * bytes for one buffer lost.
   */
  releaseLargest(): void {
    const words = this.nonEmpty;
    let word = (this.distinct - 1) >>> 5;
    while (words[word] === 0) word--;
    const index = (word << 5) + 31 - Math.clz32(words[word]!);
    this.releaseBuffer(this.takeOldestOf(this.buckets[index]!));
  }

  /**
   * Releases every cached buffer, least recently cached first. Returns the number released. Exception-safe:
   * when a release throws, the others are still released and the first error is rethrown at the end (the
   * cache is empty either way).
   */
  clear(): number {
    let released = 0;
    let record = this.oldest;
    this.oldest = null;
    this.newest = null;
    this.bytes = 0;
    this.buffers = 0;
    for (let index = 0; index < this.distinct; index++) {
      const bucket = this.buckets[index]!;
      bucket.oldest = null;
      bucket.newest = null;
      this.forgetLength(bucket.length);
      this.spareBuckets.push(bucket);
    }
    this.buckets.length = 0;
    this.distinct = 0;
    this.emptyBuckets = 0;
    this.nonEmpty.fill(0);
    const teardown = new Teardown();
    while (record !== null) {
      const newer: CachedBuffer<B> | null = record.newer;
      record.newer = null;
      record.older = null;
      record.nextOfLength = null;
      record.bucket = null;
      const current = record;
      teardown.run(() => this.releaseBuffer(current));
      released++;
      record = newer;
    }
    teardown.finish();
    return released;
  }

  /** Cached lengths in reuse order, each repeated once per buffer (for tests). */
  snapshot(): number[] {
    const lengths: number[] = [];
    for (let index = 0; index < this.distinct; index++) {
      for (let record = this.buckets[index]!.oldest; record !== null; record = record.nextOfLength) {
        lengths.push(record.length);
      }
    }
    return lengths;
  }

  /** Cached lengths from least to most recently cached (for tests). */
  lruSnapshot(): number[] {
    const lengths: number[] = [];
    for (let record = this.oldest; record !== null; record = record.newer) lengths.push(record.length);
    return lengths;
  }

  /**
   * Takes the oldest buffer of a non-empty bucket out of the cache: out of its length's queue and out of the
   * least-recently-cached order. The one way a buffer leaves the cache apart from {@link clear}.
   */
  private takeOldestOf(bucket: LengthBucket<B>): CachedBuffer<B> {
    const record = bucket.oldest!;
    bucket.oldest = record.nextOfLength;
    if (bucket.oldest === null) {
      bucket.newest = null;
      this.emptyBuckets++;
      this.nonEmpty[bucket.index >>> 5]! &= ~(1 << (bucket.index & 31));
    }
    record.nextOfLength = null;
    if (record.newer !== null) record.newer.older = record.older;
    else this.newest = record.older;
    if (record.older !== null) record.older.newer = record.newer;
    else this.oldest = record.newer;
    record.newer = null;
    record.older = null;
    this.bytes -= record.length;
    this.buffers--;
    return record;
  }

  /** The position of `length`'s queue in {@link buckets}, or -1. */
  private positionOf(length: number): number {
    if (!this.indexed) {
      const lengths = this.lengths;
      for (let index = 0; index < this.distinct; index++) {
        if (lengths[index]! >= length) return lengths[index] === length ? index : -1;
      }
      return -1;
    }
    const slot = slotOf(length);
    if (slot >= 0) {
      const chunk = this.positionChunks[slot >>> CHUNK_BITS];
      const position = chunk === undefined ? undefined : chunk[slot & (CHUNK_SLOTS - 1)];
      return position === undefined ? -1 : position - 1;
    }
    return this.bucketOfLargeLength?.get(length)?.index ?? -1;
  }

  private forgetLength(length: number): void {
    if (!this.indexed) return;
    // A slot past the array's end holds no position already.
    const slot = slotOf(length);
    if (slot < 0) this.bucketOfLargeLength?.delete(length);
    else {
      const chunk = this.positionChunks[slot >>> CHUNK_BITS];
      if (chunk !== undefined) chunk[slot & (CHUNK_SLOTS - 1)] = 0;
    }
  }

  private bucketFor(length: number): LengthBucket<B> {
    const known = this.positionOf(length);
    if (known >= 0) return this.buckets[known]!;
    return this.insertLength(lowerBound(this.lengths, this.distinct, length), length);
  }

  /** Rare (a length not seen since the last compaction): costs O(distinct lengths). */
  private insertLength(position: number, length: number): LengthBucket<B> {
    if (this.emptyBuckets >= COMPACT_AT_EMPTY && this.emptyBuckets * 2 >= this.distinct) {
      this.compact();
      return this.bucketFor(length);
    }
    if (this.distinct === this.lengths.length) {
      this.lengths = withRoom(this.lengths, this.distinct, INITIAL_CAPACITY);
      const nonEmpty = new Int32Array(Math.ceil(this.lengths.length / 32));
      nonEmpty.set(this.nonEmpty);
      this.nonEmpty = nonEmpty;
    }
    const lengths = this.lengths;
    const buckets = this.buckets;
    const bucket = this.spareBuckets.pop() ?? new LengthBucket<B>();
    bucket.length = length;
    buckets.push(bucket);
    for (let index = this.distinct; index > position; index--) {
      lengths[index] = lengths[index - 1]!;
      buckets[index] = buckets[index - 1]!;
    }
    lengths[position] = length;
    buckets[position] = bucket;
    this.distinct++;
    this.emptyBuckets++;
    let moved = position;
    if (!this.indexed && this.distinct >= INDEX_AT) {
      // Every queue gets its index entry now.
      this.indexed = true;
      moved = 0;
    } else if (this.indexed && slotOf(length) < 0) this.largeLengths().set(length, bucket);
    this.reindex(moved);
    return bucket;
  }

  /** The queues of the lengths that have no index slot, by length (made at the first). */
  private largeLengths(): Map<number, LengthBucket<B>> {
    if (this.bucketOfLargeLength === undefined) this.bucketOfLargeLength = new Map();
    return this.bucketOfLargeLength;
  }

  /** Drops the empty queues. */
  private compact(): void {
    let kept = 0;
    for (let index = 0; index < this.distinct; index++) {
      const bucket = this.buckets[index]!;
      if (bucket.oldest === null) {
        this.spareBuckets.push(bucket);
        this.forgetLength(bucket.length);
        continue;
      }
      this.buckets[kept] = bucket;
      this.lengths[kept] = bucket.length;
      kept++;
    }
    this.buckets.length = kept;
    this.distinct = kept;
    this.emptyBuckets = 0;
    this.reindex(0);
  }

  /**
   * The queues from position `from` on moved: their positions, their index slots and their bits in
   * `nonEmpty` (those below `from` stand: a new length's insertion costs what lies above it).
   */
  private reindex(from: number): void {
    const nonEmpty = this.nonEmpty;
    const firstWord = from >>> 5;
    // The bits of `from`'s word below it stay; every later word is rebuilt.
    nonEmpty[firstWord]! &= (1 << (from & 31)) - 1;
    // Loops, not builtins (`fill`, `copyWithin`, `splice`), here and in insertLength: a cache holds tens of
    // lengths, and a builtin's call costs more than that many moves.
    for (let word = firstWord + 1; word < nonEmpty.length; word++) nonEmpty[word] = 0;
    const chunks = this.positionChunks;
    const indexing = this.indexed;
    for (let index = from; index < this.distinct; index++) {
      const bucket = this.buckets[index]!;
      bucket.index = index;
      if (bucket.oldest !== null) nonEmpty[index >>> 5]! |= 1 << (index & 31);
      if (!indexing) continue;
      const slot = slotOf(bucket.length);
      if (slot < 0) {
        // Its Map entry holds the bucket itself, which stays right wherever it moves.
        if (from === 0) this.largeLengths().set(bucket.length, bucket);
      } else {
        let chunk = chunks[slot >>> CHUNK_BITS];
        if (chunk === undefined) {
          chunk = new Array<number | undefined>(CHUNK_SLOTS);
          chunks[slot >>> CHUNK_BITS] = chunk;
        }
        chunk[slot & (CHUNK_SLOTS - 1)] = index + 1;
      }
    }
  }
}
