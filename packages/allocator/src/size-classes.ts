import { allocationSize, PAGE, SMALL, Teardown } from "@nuvec/stats";
import { type Allocation, LiveAllocation } from "./allocation.js";
import { BufferCache } from "./buffer-cache.js";
import type { BufferSource } from "./buffer-source.js";
import { checkedByteCount } from "./byte-count.js";
import { CachedBuffer } from "./cached-buffer.js";
import { allocatorClosed, bufferTooLarge, doubleFree, foreignAllocation } from "./errors.js";
import type { CachePolicy } from "./policy.js";
import { PolicyAccounts, type PolicySetup } from "./policy-accounts.js";

// The `allocation` of a record handed out by `acquire` before an Allocation adopts it (non-null: live).
const HELD: object = Object.freeze({});

// Below this, a size class is rounded in 32-bit integers (as `allocationSize` does).
const INTEGER_ROUNDING_LIMIT = 2 ** 31 - PAGE;

/** The allocator's hooks, limits and policy, as {@link CachingAllocator} passes them on. */
export interface SizeClassAllocatorSetup<B> extends PolicySetup<B> {
  cachePolicy: CachePolicy<B>;
}

/**
 * MLX's caching allocator: one system buffer per size class, a cache of freed ones reused within the
 * policy's window, MLX's GC and resource rules on a miss, nuvec's hard memory limit and mapped-file
 * accounting, and the retry after a failed system allocation. `CachingAllocator` runs it under the `mlx`
 * and `bounded` policies (they differ only in {@link CachePolicy}); the public surface is the same.
 */
export class SizeClassAllocator<B> extends PolicyAccounts<B> {
  declare private readonly source: BufferSource<B>;
  declare private readonly cache: BufferCache<B>;
  declare private readonly cachePolicy: CachePolicy<B>;
  // The bounded policy's high-water mark of `live` since the allocator was made: what it holds reserved
  // memory to. Unlike `peakLive`, no statistics reset moves it (reading figures never changes decisions).
  declare private highWaterLive: number;

  constructor(source: BufferSource<B>, setup: SizeClassAllocatorSetup<B>) {
    super(setup);
    this.highWaterLive = 0;
    this.source = source;
    this.cachePolicy = setup.cachePolicy;
    this.cache = new BufferCache<B>((record) => this.releaseToSystem(record));
  }

  protected get cacheBytes(): number {
    return this.cache.bytes;
  }

  protected get cachedBuffers(): number {
    return this.cache.buffers;
  }

  /** See {@link CachingAllocator.malloc}. */
  malloc(bytes: number): Allocation<B> {
    if (this.closed) throw allocatorClosed("malloc");
    checkedByteCount(bytes, "bytes");
    const record = this.take(bytes);
    return record === null ? new LiveAllocation<B>(undefined, 0, 0, undefined) : this.adopt(record, bytes);
  }

  /**
   * `malloc`'s decisions and books for a checked byte count, without the {@link Allocation} handed out: the
   * live record (its `allocation` a placeholder until {@link adopt} or `malloc` sets it), or `null` for 0
   * bytes. A caller that keeps records itself (the replay, whose validator already refuses a second free)
   * gives each back with {@link recycle}: nothing is allocated per event once the cache is warm.
   */
  acquire(bytes: number): CachedBuffer<B> | null {
    if (this.closed) throw allocatorClosed("malloc");
    return this.take(bytes);
  }

  /** {@link acquire} once the closed state is checked. */
  private take(bytes: number): CachedBuffer<B> | null {
    if (bytes === 0) return null;
    // `allocationSize`'s integer form inline below 2^31 − 16 KiB (every request a runtime makes; the same
    // figures, without checking `bytes` a second time); `undefined`: a size class beyond 2^53.
    const sizeClass =
      bytes <= INTEGER_ROUNDING_LIMIT
        ? bytes > PAGE
          ? (bytes + PAGE - 1) & ~(PAGE - 1)
          : (bytes + SMALL - 1) & ~(SMALL - 1)
        : allocationSize(bytes);
    if (sizeClass === undefined || sizeClass > this.maxBufferLength) {
      throw bufferTooLarge(bytes, this.maxBufferLength);
    }
    const used = this.withinLimit(sizeClass);

    const cache = this.cache;
    const policy = this.cachePolicy;
    let record: CachedBuffer<B> | undefined;
    if (cache.buffers > 0) {
      const limit = policy.reuseLimit(sizeClass, this.active, this.live, this.highWaterLive);
      const index = cache.find(sizeClass, limit);
      // A hit may be longer than the request: the hard limit applies to what is really handed out.
      if (index >= 0 && used + cache.lengthAt(index) <= this.memoryLimit) {
        record = cache.takeAt(index);
        this.cacheHits++;
      }
    }
    if (record === undefined) {
      let length = policy.systemLength(sizeClass, this.active, this.live, this.highWaterLive);
      // A longer buffer than the size class only where the limits take it as they take the size class.
      if (length > this.maxBufferLength || used + length > this.memoryLimit) length = sizeClass;
      record = this.allocateSystemBuffer(length, sizeClass);
    }

    // Over the cache limit, the peaks as they were, for a trim that throws to restore (in locals: no object
    // per malloc over the limit, which a loop at its cache limit makes on every miss).
    const trims = cache.bytes > this.cacheLimit;
    let peakActive = 0;
    let peakActiveWithMapped = 0;
    let peakLive = 0;
    let highWaterLive = 0;
    if (trims) {
      peakActive = this.peakActive;
      peakActiveWithMapped = this.peakActiveWithMapped;
      peakLive = this.peakLive;
      highWaterLive = this.highWaterLive;
    }
    record.allocation = HELD;
    record.liveSizeClass = sizeClass;
    const live = this.charge(record.length, sizeClass);
    if (live > this.highWaterLive) this.highWaterLive = live;
    if (trims) {
      try {
        cache.release(cache.bytes - this.cacheLimit);
      } catch (error) {
        // The trim finished (every buffer it chose left the cache) but a release threw: refuse this malloc
        // rather than hand out an allocation together with an error. Its buffer goes back to the cache.
        record.allocation = null;
        this.liveBuffers--;
        this.active -= record.length;
        this.live -= sizeClass;
        this.peakActive = peakActive;
        this.peakActiveWithMapped = peakActiveWithMapped;
        this.peakLive = peakLive;
        this.highWaterLive = highWaterLive;
        cache.put(record);
        throw error;
      }
    }
    const reserved = this.active + cache.bytes;
    if (reserved > this.peakReserved) this.peakReserved = reserved;
    return record;
  }

  /**
   * `free` of a record from {@link acquire}: cached when the cache is under its limit, else released.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`) for a record that is not live; ArgumentError
   * (`ERR_NUVEC_FOREIGN_ALLOCATION`) for another allocator's; StateError after `close()`.
   */
  recycle(record: CachedBuffer<B>): void {
    if (this.closed) throw allocatorClosed("free");
    if (record.owner !== this) throw foreignAllocation("allocation");
    if (record.allocation === null) throw doubleFree("allocation");
    record.allocation = null;
    this.liveBuffers--;
    this.takeBack(record, true);
  }

  /** The {@link Allocation} of a live record from {@link acquire}, for the calls that take one (`quarantine`). */
  adopt(record: CachedBuffer<B>, bytes: number): Allocation<B> {
    const allocation = new LiveAllocation<B>(record.buffer, record.length, bytes, record);
    record.allocation = allocation;
    return allocation;
  }

  protected freeAllocation(allocation: Allocation<B>, mayCache: boolean): void {
    const record = this.unliveCached(allocation);
    if (record === undefined) return;
    this.takeBack(record, mayCache);
  }

  /** A record just taken off the live books: out of `active` and `live`, to the cache or to the system. */
  private takeBack(record: CachedBuffer<B>, mayCache: boolean): void {
    this.active -= record.length;
    this.live -= record.liveSizeClass;
    if (mayCache && this.cache.bytes < this.cacheLimit) this.cache.put(record);
    else this.releaseToSystem(record);
  }

  /** See {@link CachingAllocator.setCacheLimit}; the closed state and the byte count are checked there. */
  setCacheLimit(bytes: number): number {
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    if (this.cache.bytes > bytes) this.cache.release(this.cache.bytes - bytes);
    return previous;
  }

  /** See {@link CachingAllocator.close}. */
  close(): void {
    if (this.closed) return;
    // Closed even when a release throws (the clear finishes the others and rethrows the first error).
    try {
      this.cache.clear();
    } finally {
      this.closed = true;
    }
  }

  /** A new system buffer of `length` bytes for a request of `sizeClass` (the policy's choice of length). */
  private allocateSystemBuffer(length: number, sizeClass: number): CachedBuffer<B> {
    const cache = this.cache;
    if (cache.buffers > 0) {
      this.cachePolicy.beforeMiss(cache, this.active + length, this.live + sizeClass, this.highWaterLive);
    }
    const required = this.active + this.mapped + cache.bytes + length;
    if (required >= this.gcLimitBytes) cache.release(required - this.gcLimitBytes);
    this.ensureResource();

    const buffer = this.acquireBuffer(this.source, length);
    this.cacheMisses++;
    return new CachedBuffer(buffer, length, this);
  }

  protected get resources(): number {
    return this.liveBuffers + this.cache.buffers;
  }

  protected releaseCached(): void {
    this.cache.clear();
  }

  /**
   * Gives a buffer that left the allocator's books back to the system. The source's release runs even when
   * the `onRelease` hook throws (the buffer must not leak); the first error is rethrown afterwards (a later one
   * attached as its `suppressed`). Counted as released either way: the allocator holds the buffer no more.
   */
  private releaseToSystem(record: CachedBuffer<B>): void {
    this.systemReleases++;
    const onRelease = this.onRelease;
    // Every release of a miss-heavy loop passes here: the teardown (its list and a closure per step) is made
    // only once the hook failed, and what the source's release throws after a working hook is rethrown as is.
    let failed: Teardown | undefined;
    if (onRelease !== undefined) {
      try {
        onRelease(record.buffer);
      } catch (error) {
        failed = new Teardown();
        failed.fail(error);
      }
    }
    if (failed === undefined) {
      this.source.release(record.buffer);
      return;
    }
    failed.run(() => this.source.release(record.buffer));
    failed.finish();
  }
}
