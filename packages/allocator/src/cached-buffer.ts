import type { LengthBucket } from "./buffer-cache.js";

/**
 * One system buffer owned by an allocator, live or cached (the Device's own per-buffer record is another
 * thing). It is made once when the buffer is acquired and
 * lives until the buffer is released, so caching and reusing a buffer allocates nothing.
 */
export class CachedBuffer<B> {
  // Declared and assigned in the constructor rather than initialized where declared: the engine runs field
  // initializers as a function of their own, and every system buffer (every miss) makes a record.
  declare readonly buffer: B;
  declare readonly length: number;
  declare readonly owner: object;
  /** The allocation that holds the buffer now; `null` while cached. Frees are checked against it. */
  declare allocation: object | null;
  /** The size class of the request that holds it now (the bounded policy counts these as `live`). */
  declare liveSizeClass: number;
  /** Neighbours in the cache's LRU list (newer is towards the most recently cached). */
  declare newer: CachedBuffer<B> | null;
  declare older: CachedBuffer<B> | null;
  /** The next (more recently cached) buffer of the same length. */
  declare nextOfLength: CachedBuffer<B> | null;
  /**
   * The queue of its length: set when first cached and kept while the buffer is live, so caching it again
   * needs no search. Stale once a compaction or a clear recycled the queue; {@link BufferCache.put} checks.
   */
  declare bucket: LengthBucket<B> | null;

  constructor(buffer: B, length: number, owner: object) {
    this.buffer = buffer;
    this.length = length;
    this.owner = owner;
    this.allocation = null;
    this.liveSizeClass = 0;
    this.newer = null;
    this.older = null;
    this.nextOfLength = null;
    this.bucket = null;
  }
}
