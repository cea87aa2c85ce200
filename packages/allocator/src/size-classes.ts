import { ArgumentError, allocationSize, type MemoryStats, mappingSize, Teardown } from "@nuvec/stats";
import { type Allocation, LiveAllocation, LiveMapping, type Mapping } from "./allocation.js";
import { BufferCache, CachedBuffer } from "./buffer-cache.js";
import { type BufferSource, isAllocationFailure } from "./buffer-source.js";
import { checkedByteCount, type QuarantineCount } from "./byte-count.js";
import type { AllocatorCounters } from "./counters.js";
import {
  allocatorClosed,
  bufferTooLarge,
  doubleFree,
  foreignAllocation,
  outOfMemory,
  resourceLimit,
  systemAllocationFailed,
} from "./errors.js";
import type { CachePolicy } from "./policy.js";

/** The allocator's hooks, limits and policy, as {@link CachingAllocator} passes them on. */
export interface SizeClassAllocatorSetup<B> {
  memoryLimit: number;
  cacheLimit: number;
  /** `floor(0.95·W)`: with the memory limit, the GC limit. */
  workingSetGcLimit: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  cachePolicy: CachePolicy<B>;
  onAcquire: ((buffer: B) => void) | undefined;
  onRelease: ((buffer: B) => void) | undefined;
  /** The allocator's count of quarantined bytes: in the memory limit and the figures, never changed here. */
  quarantine: QuarantineCount;
}

/**
 * MLX's caching allocator: one system buffer per size class, a cache of freed ones reused within the
 * policy's window, MLX's GC and resource rules on a miss, nuvec's hard memory limit and mapped-file
 * accounting, and the retry after a failed system allocation. `CachingAllocator` runs it under the `mlx`
 * and `bounded` policies (they differ only in {@link CachePolicy}); the public surface is the same.
 */
export class SizeClassAllocator<B> {
  private readonly source: BufferSource<B>;
  private readonly cache: BufferCache<B>;
  private readonly cachePolicy: CachePolicy<B>;
  private readonly onAcquire: ((buffer: B) => void) | undefined;
  private readonly onRelease: ((buffer: B) => void) | undefined;
  private readonly workingSetGcLimit: number;
  private readonly maxBufferLength: number;
  private readonly resourceLimit: number;
  private readonly pageSize: number;
  // Freed buffers whose memory the source still holds for a view moved out of its reach.
  private readonly quarantine: QuarantineCount;

  private memoryLimit: number;
  private cacheLimit: number;
  private gcLimitBytes: number;
  private active = 0;
  private mapped = 0;
  private live = 0;
  private peakActive = 0;
  private peakActiveWithMapped = 0;
  private peakReserved = 0;
  private closed = false;

  private cacheHits = 0;
  private cacheMisses = 0;
  private systemAllocations = 0;
  private systemReleases = 0;
  private outOfMemoryRefusals = 0;
  private allocationRetries = 0;
  private peakLive = 0;
  // The bounded policy's high-water mark of `live` since the allocator was made: what it holds reserved
  // memory to. Unlike `peakLive`, no statistics reset moves it (reading figures never changes decisions).
  private highWaterLive = 0;
  private liveBuffers = 0;
  private mappings = 0;

  constructor(source: BufferSource<B>, setup: SizeClassAllocatorSetup<B>) {
    this.source = source;
    this.memoryLimit = setup.memoryLimit;
    this.cacheLimit = setup.cacheLimit;
    this.workingSetGcLimit = setup.workingSetGcLimit;
    this.gcLimitBytes = Math.min(setup.workingSetGcLimit, setup.memoryLimit);
    this.maxBufferLength = setup.maxBufferLength;
    this.resourceLimit = setup.resourceLimit;
    this.pageSize = setup.pageSize;
    this.cachePolicy = setup.cachePolicy;
    this.onAcquire = setup.onAcquire;
    this.onRelease = setup.onRelease;
    this.quarantine = setup.quarantine;
    this.cache = new BufferCache<B>((record) => this.releaseToSystem(record));
  }

  /** Below `active + mapped + cache + request` reaching this, a miss releases no cached buffer. */
  get gcLimit(): number {
    return this.gcLimitBytes;
  }

  /** See {@link CachingAllocator.malloc}. */
  malloc(bytes: number): Allocation<B> {
    if (this.closed) throw allocatorClosed("malloc");
    checkedByteCount(bytes, "bytes");
    if (bytes === 0) return new LiveAllocation<B>(undefined, 0, 0, undefined);
    // `undefined`: a size class beyond 2^53, above any device's maximum.
    const sizeClass = allocationSize(bytes);
    if (sizeClass === undefined || sizeClass > this.maxBufferLength) {
      throw bufferTooLarge(bytes, this.maxBufferLength);
    }
    const used = this.active + this.mapped + this.quarantine.bytes;
    if (used + sizeClass > this.memoryLimit) {
      this.outOfMemoryRefusals++;
      throw outOfMemory(sizeClass, this.active, this.mapped, this.memoryLimit, this.quarantine.bytes);
    }

    const cache = this.cache;
    let record: CachedBuffer<B> | undefined;
    if (cache.buffers > 0) {
      const index = cache.find(sizeClass, this.cachePolicy.reuseLimit(sizeClass));
      // A hit may be up to twice the request: the hard limit applies to what is really handed out.
      if (index >= 0 && used + cache.lengthAt(index) <= this.memoryLimit) {
        record = cache.takeAt(index);
        this.cacheHits++;
      }
    }
    if (record === undefined) record = this.allocateSystemBuffer(sizeClass);

    const peaks =
      cache.bytes > this.cacheLimit
        ? {
            peakActive: this.peakActive,
            peakActiveWithMapped: this.peakActiveWithMapped,
            peakLive: this.peakLive,
            highWaterLive: this.highWaterLive,
          }
        : undefined;
    const allocation = new LiveAllocation<B>(record.buffer, record.length, bytes, record);
    record.allocation = allocation;
    record.liveSizeClass = sizeClass;
    this.liveBuffers++;
    const active = this.active + record.length;
    this.active = active;
    if (active > this.peakActive) this.peakActive = active;
    if (active + this.mapped > this.peakActiveWithMapped) this.peakActiveWithMapped = active + this.mapped;
    const live = this.live + sizeClass;
    this.live = live;
    if (live > this.peakLive) this.peakLive = live;
    if (live > this.highWaterLive) this.highWaterLive = live;
    if (cache.bytes > this.cacheLimit) {
      try {
        cache.release(cache.bytes - this.cacheLimit);
      } catch (error) {
        // The trim finished (every buffer it chose left the cache) but a release threw: refuse this malloc
        // rather than hand out an allocation together with an error. Its buffer goes back to the cache.
        record.allocation = null;
        this.liveBuffers--;
        this.active -= record.length;
        this.live -= sizeClass;
        this.peakActive = peaks!.peakActive;
        this.peakActiveWithMapped = peaks!.peakActiveWithMapped;
        this.peakLive = peaks!.peakLive;
        this.highWaterLive = peaks!.highWaterLive;
        cache.put(record);
        throw error;
      }
    }
    if (active + cache.bytes > this.peakReserved) this.peakReserved = active + cache.bytes;
    return allocation;
  }

  /** See {@link CachingAllocator.free}. */
  free(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, true);
  }

  /** See {@link CachingAllocator.freeWithoutCaching}. */
  freeWithoutCaching(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, false);
  }

  private freeAllocation(allocation: Allocation<B>, mayCache: boolean): void {
    if (this.closed) throw allocatorClosed("free");
    if (!(allocation instanceof LiveAllocation)) throw foreignAllocation("allocation");
    const record = (allocation as LiveAllocation<B>).record as CachedBuffer<B> | undefined;
    if (record === undefined) return;
    if (!(record instanceof CachedBuffer) || record.owner !== this) throw foreignAllocation("allocation");
    if (record.allocation !== allocation) throw doubleFree("allocation");
    record.allocation = null;
    this.liveBuffers--;
    this.active -= record.length;
    this.live -= record.liveSizeClass;
    if (mayCache && this.cache.bytes < this.cacheLimit) this.cache.put(record);
    else this.releaseToSystem(record);
  }

  /** See {@link CachingAllocator.addMapping}; the closed state and the byte count are checked there. */
  addMapping(fileLength: number): Mapping {
    const allocatedLength = mappingSize(fileLength, this.pageSize);
    if (allocatedLength === undefined) {
      throw new ArgumentError("fileLength", `fileLength ${fileLength} is too large to map`);
    }
    if (this.active + this.mapped + this.quarantine.bytes + allocatedLength > this.memoryLimit) {
      this.outOfMemoryRefusals++;
      throw outOfMemory(allocatedLength, this.active, this.mapped, this.memoryLimit, this.quarantine.bytes);
    }
    this.ensureResource();
    this.mappings++;
    this.mapped += allocatedLength;
    if (this.active + this.mapped > this.peakActiveWithMapped) {
      this.peakActiveWithMapped = this.active + this.mapped;
    }
    return new LiveMapping(fileLength, allocatedLength, this);
  }

  /** See {@link CachingAllocator.removeMapping}. */
  removeMapping(mapping: Mapping): void {
    if (this.closed) throw allocatorClosed("remove a mapping");
    if (!(mapping instanceof LiveMapping) || mapping.owner !== this) throw foreignAllocation("mapping");
    if (!mapping.live) throw doubleFree("mapping");
    mapping.live = false;
    this.mappings--;
    this.mapped -= mapping.allocatedLength;
  }

  /** See {@link CachingAllocator.memoryStats}. */
  memoryStats(): MemoryStats {
    if (this.closed) throw allocatorClosed("read the statistics");
    return {
      active: this.active,
      peakActive: this.peakActive,
      mapped: this.mapped,
      activeWithMapped: this.active + this.mapped,
      peakActiveWithMapped: this.peakActiveWithMapped,
      cache: this.cache.bytes,
      reserved: this.active + this.cache.bytes,
      peakReserved: this.peakReserved,
      memoryLimit: this.memoryLimit,
      cacheLimit: this.cacheLimit,
      systemAllocations: this.systemAllocations,
      wiredLimit: 0,
      wired: 0,
      wiredMapped: 0,
      quarantined: this.quarantine.bytes,
    };
  }

  /** The counters beyond MLX's statistics (a fresh object). */
  counters(): AllocatorCounters {
    if (this.closed) throw allocatorClosed("read the counters");
    return {
      cacheHits: this.cacheHits,
      cacheMisses: this.cacheMisses,
      systemAllocations: this.systemAllocations,
      systemReleases: this.systemReleases,
      outOfMemoryRefusals: this.outOfMemoryRefusals,
      allocationRetries: this.allocationRetries,
      peakLive: this.peakLive,
      liveBuffers: this.liveBuffers,
      cachedBuffers: this.cache.buffers,
      mappings: this.mappings,
    };
  }

  /** See {@link CachingAllocator.resetPeak}. */
  resetPeak(): void {
    if (this.closed) throw allocatorClosed("reset the peak");
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.active + this.cache.bytes;
    this.peakLive = this.live;
  }

  /** See {@link CachingAllocator.setMemoryLimit}; the closed state and the byte count are checked there. */
  setMemoryLimit(bytes: number): number {
    const previous = this.memoryLimit;
    this.memoryLimit = bytes;
    this.gcLimitBytes = Math.min(bytes, this.workingSetGcLimit);
    return previous;
  }

  /** See {@link CachingAllocator.setCacheLimit}; the closed state and the byte count are checked there. */
  setCacheLimit(bytes: number): number {
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    if (this.cache.bytes > bytes) this.cache.release(this.cache.bytes - bytes);
    return previous;
  }

  /** See {@link CachingAllocator.clearCache}. */
  clearCache(): void {
    if (this.closed) throw allocatorClosed("clear the cache");
    this.cache.clear();
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

  private allocateSystemBuffer(sizeClass: number): CachedBuffer<B> {
    const cache = this.cache;
    if (cache.buffers > 0) {
      this.cachePolicy.beforeMiss(cache, this.active + sizeClass, this.live + sizeClass, this.highWaterLive);
    }
    const required = this.active + this.mapped + cache.bytes + sizeClass;
    if (required >= this.gcLimitBytes) cache.release(required - this.gcLimitBytes);
    this.ensureResource();

    let buffer: B;
    try {
      buffer = this.source.acquire(sizeClass);
    } catch (error) {
      // Only a refusal to allocate is worth a retry; anything else (a closed backend, a bad argument, a bug)
      // propagates unchanged, and the cache is left alone.
      if (!(this.source.isAllocationFailure ?? isAllocationFailure)(error)) throw error;
      // PyTorch's retry: the system may have refused because of what the cache holds.
      this.allocationRetries++;
      cache.clear();
      try {
        buffer = this.source.acquire(sizeClass);
      } catch (error) {
        throw systemAllocationFailed(sizeClass, error);
      }
    }
    if (this.onAcquire !== undefined) {
      try {
        this.onAcquire(buffer);
      } catch (error) {
        this.source.release(buffer);
        throw error;
      }
    }
    this.systemAllocations++;
    this.cacheMisses++;
    return new CachedBuffer(buffer, sizeClass, this);
  }

  /** MLX counts cached, live and (nuvec) mapped resources against the device's limit. */
  private ensureResource(): void {
    if (this.liveBuffers + this.cache.buffers + this.mappings < this.resourceLimit) return;
    this.cache.clear();
    if (this.liveBuffers + this.mappings >= this.resourceLimit) throw resourceLimit(this.resourceLimit);
  }

  /**
   * Gives a buffer that left the allocator's books back to the system. The source's release runs even when
   * the `onRelease` hook throws (the buffer must not leak); the first error is rethrown afterwards (a later one
   * attached as its `suppressed`). Counted as released either way: the allocator holds the buffer no more.
   */
  private releaseToSystem(record: CachedBuffer<B>): void {
    this.systemReleases++;
    const teardown = new Teardown();
    const onRelease = this.onRelease;
    if (onRelease !== undefined) teardown.run(() => onRelease(record.buffer));
    teardown.run(() => this.source.release(record.buffer));
    teardown.finish();
  }
}
