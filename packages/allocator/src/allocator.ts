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
import { isMappingSource } from "./expandable.js";
import type { AllocatorOptions, AllocatorPolicy } from "./options.js";
import { DEFAULT_RESERVE_RATIO } from "./options.js";
import { type CachePolicy, cachePolicyFor } from "./policy.js";
import { checkSegmentOptions, SegmentAllocator, type SegmentOptions } from "./segments.js";
import type { TraceAllocatorSetup } from "./trace-format.js";

/**
 * MLX's caching allocator policy over any {@link BufferSource}, with nuvec's hard memory limit, mapped-file
 * accounting, the retry after a failed system allocation, and counters. Not thread-safe (JavaScript is not).
 *
 * Live allocations are the caller's to free; `close()` releases the cache only.
 */
export class CachingAllocator<B> {
  private readonly source: BufferSource<B>;
  private readonly cache: BufferCache<B>;
  private readonly cachePolicy: CachePolicy<B>;
  private readonly onAcquire: ((buffer: B) => void) | undefined;
  private readonly onRelease: ((buffer: B) => void) | undefined;
  private readonly workingSetGcLimit: number;
  private readonly maxBufferLength: number;
  private readonly resourceLimit: number;
  private readonly pageSize: number;
  // The segments policy runs in its own class: every public method hands over to it when set.
  private readonly segments: SegmentAllocator<B> | undefined;

  private memoryLimit: number;
  private cacheLimit: number;
  private gcLimitBytes: number;
  private active = 0;
  private mapped = 0;
  // Freed buffers whose memory the source still holds for a view moved out of its reach (addQuarantined).
  private readonly quarantine: QuarantineCount = { bytes: 0 };
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

  private readonly facts: {
    workingSet: number;
    memorySize: number;
    reserveRatio: number;
    boundedRelease: "least-recent" | "largest";
  };

  constructor(source: BufferSource<B>, options: AllocatorOptions<B> = {}) {
    const workingSet = checkedByteCount(source.recommendedMaxWorkingSetSize, "recommendedMaxWorkingSetSize");
    const memorySize = checkedByteCount(source.memorySize, "memorySize");
    this.maxBufferLength = checkedByteCount(source.maxBufferLength, "maxBufferLength");
    this.resourceLimit = checkedByteCount(source.resourceLimit, "resourceLimit");
    this.pageSize = checkedByteCount(source.pageSize, "pageSize");
    try {
      mappingSize(0, this.pageSize);
    } catch (error) {
      throw new ArgumentError("pageSize", (error as Error).message, { cause: error });
    }
    this.source = source;
    // MLX: block_limit_ = min(1.5·W, 0.95·M), gc_limit_ = min(size_t(0.95·W), block_limit_), both as doubles
    // converted to size_t (floored).
    this.workingSetGcLimit = Math.floor(0.95 * workingSet);
    const defaultMemoryLimit = Math.floor(Math.min(1.5 * workingSet, 0.95 * memorySize));
    // The cache limit defaults to the memory limit, as MLX's starts at its memory limit: a device opened with
    // `memoryLimit: 1 GiB` never caches more than 1 GiB. Later changes of either move only that one.
    this.memoryLimit =
      options.memoryLimit === undefined
        ? defaultMemoryLimit
        : checkedByteCount(options.memoryLimit, "memoryLimit");
    this.gcLimitBytes = Math.min(this.workingSetGcLimit, this.memoryLimit);
    this.cacheLimit =
      options.cacheLimit === undefined
        ? this.memoryLimit
        : checkedByteCount(options.cacheLimit, "cacheLimit");
    this.cachePolicy = cachePolicyFor<B>(options);
    this.facts = {
      workingSet,
      memorySize,
      reserveRatio: options.reserveRatio ?? DEFAULT_RESERVE_RATIO,
      boundedRelease: options.boundedRelease ?? "least-recent",
    };
    this.onAcquire = options.onAcquire;
    this.onRelease = options.onRelease;
    this.cache = new BufferCache<B>((record) => this.releaseToSystem(record));
    this.segments =
      this.cachePolicy.name === "segments"
        ? new SegmentAllocator<B>(source, {
            memoryLimit: this.memoryLimit,
            cacheLimit: this.cacheLimit,
            workingSetGcLimit: this.workingSetGcLimit,
            maxBufferLength: this.maxBufferLength,
            resourceLimit: this.resourceLimit,
            pageSize: this.pageSize,
            segments: checkSegmentOptions(options.segments, isMappingSource(source)),
            onAcquire: options.onAcquire,
            onRelease: options.onRelease,
            quarantine: this.quarantine,
          })
        : undefined;
  }

  /**
   * What a replay needs to run this allocator's decisions again from now on (a trace's header records it):
   * the policy and its settings, the source's facts, the limits in force, and whether it is fresh (nothing
   * live, nothing cached).
   */
  replaySetup(): TraceAllocatorSetup {
    const stats = this.memoryStats();
    const segments = this.segments?.segmentOptions;
    return {
      policy: this.cachePolicy.name,
      reserveRatio: this.facts.reserveRatio,
      boundedRelease: this.facts.boundedRelease,
      ...(segments === undefined ? {} : { segments: { ...segments } }),
      workingSet: this.facts.workingSet,
      memorySize: this.facts.memorySize,
      maxBufferLength: this.maxBufferLength,
      resourceLimit: this.resourceLimit,
      pageSize: this.pageSize,
      ...(this.segments?.mapGranularity === undefined
        ? {}
        : { mapGranularity: this.segments.mapGranularity }),
      memoryLimit: stats.memoryLimit,
      cacheLimit: stats.cacheLimit,
      fresh: stats.active === 0 && stats.cache === 0 && stats.mapped === 0 && stats.quarantined === 0,
    };
  }

  /** The segments policy's sizes, or `undefined` under another policy. */
  get segmentOptions(): SegmentOptions | undefined {
    return this.segments?.segmentOptions;
  }

  /**
   * Under the segments policy: segments held, how many are idle (no live block), and the largest free block
   * of each pool (a request larger than both needs a new segment); `undefined` under another policy.
   */
  segmentFigures():
    | { segments: number; idleSegments: number; largestFreeSmall: number; largestFreeLarge: number }
    | undefined {
    return this.segments?.segmentFigures();
  }

  /** The policy this allocator runs. */
  get policy(): AllocatorPolicy {
    return this.cachePolicy.name;
  }

  /** Below `active + mapped + cache + request` reaching this, a miss releases no cached buffer. */
  get gcLimit(): number {
    if (this.segments !== undefined) return this.segments.gcLimit;
    return this.gcLimitBytes;
  }

  /**
   * A buffer of at least `bytes`: a cached one when one fits the reuse window, else a new system buffer.
   *
   * @throws ArgumentError for a size that is not a byte count (`ERR_NUVEC_BUFFER_TOO_LARGE` above the
   * device's maximum buffer length); OutOfMemoryError past the memory limit (`ERR_NUVEC_OUT_OF_MEMORY`), the
   * resource limit (`ERR_NUVEC_RESOURCE_LIMIT`) or when the source fails twice
   * (`ERR_NUVEC_SYSTEM_ALLOCATION_FAILED`); StateError after `close()`.
   */
  malloc(bytes: number): Allocation<B> {
    if (this.segments !== undefined) return this.segments.malloc(bytes);
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

  /**
   * Gives an allocation back: its buffer is cached when the cache is under its limit, else released at once.
   * Freeing a 0-byte allocation does nothing.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  free(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, true);
  }

  /**
   * Like {@link free}, but the buffer goes back to the system at once, never to the cache: for a buffer that
   * must not be reused because something outside the allocator may still reach its memory (a view moved
   * away from it by `ArrayBuffer.prototype.transfer()` or a `postMessage` transfer).
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  freeWithoutCaching(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, false);
  }

  private freeAllocation(allocation: Allocation<B>, mayCache: boolean): void {
    if (this.segments !== undefined) {
      if (mayCache) this.segments.free(allocation);
      else this.segments.freeWithoutCaching(allocation);
      return;
    }
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

  /**
   * Counts `bytes` of a buffer freed with {@link freeWithoutCaching} that the source still holds (a view
   * moved away reaches it): in `quarantined`, and against the memory limit, until
   * {@link removeQuarantined} says the source gave it back.
   *
   * @throws ArgumentError for a bad byte count (nothing changed); StateError (`ERR_NUVEC_ALLOCATOR_CLOSED`).
   */
  addQuarantined(bytes: number): void {
    if (this.closed) throw allocatorClosed("count quarantined memory");
    checkedByteCount(bytes, "bytes");
    this.quarantine.bytes += bytes;
  }

  /**
   * The source gave back `bytes` counted by {@link addQuarantined}.
   *
   * @throws ArgumentError for a bad byte count or more than is counted (nothing changed);
   * StateError (`ERR_NUVEC_ALLOCATOR_CLOSED`).
   */
  removeQuarantined(bytes: number): void {
    if (this.closed) throw allocatorClosed("count quarantined memory");
    checkedByteCount(bytes, "bytes");
    if (bytes > this.quarantine.bytes) {
      throw new ArgumentError(
        "bytes",
        `${bytes} bytes are more than the ${this.quarantine.bytes} quarantined`,
      );
    }
    this.quarantine.bytes -= bytes;
  }

  /**
   * Accounts for a memory-mapped file of `fileLength` bytes, charged `mappingSize(fileLength, pageSize)`
   * (its `allocatedLength`): checked against the memory limit and the resource limit, counted in `mapped`
   * and `peakActiveWithMapped`.
   *
   * @throws OutOfMemoryError, ArgumentError, StateError after `close()`.
   */
  addMapping(fileLength: number): Mapping {
    if (this.closed) throw allocatorClosed("add a mapping");
    checkedByteCount(fileLength, "fileLength");
    if (this.segments !== undefined) return this.segments.addMapping(fileLength);
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

  /**
   * Takes a mapping out of the accounts.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  removeMapping(mapping: Mapping): void {
    if (this.segments !== undefined) {
      this.segments.removeMapping(mapping);
      return;
    }
    if (this.closed) throw allocatorClosed("remove a mapping");
    if (!(mapping instanceof LiveMapping) || mapping.owner !== this) throw foreignAllocation("mapping");
    if (!mapping.live) throw doubleFree("mapping");
    mapping.live = false;
    this.mappings--;
    this.mapped -= mapping.allocatedLength;
  }

  /**
   * The full statistics of what the allocator owns. The wired fields (`wired`, `wiredMapped`, `wiredLimit`)
   * are always 0 here: residency owns them, and whoever runs residency (the Device) fills them in.
   */
  memoryStats(): MemoryStats {
    if (this.segments !== undefined) return this.segments.memoryStats();
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
    if (this.segments !== undefined) return this.segments.counters();
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

  /**
   * Restarts every peak at its quantity's current value (PyTorch's `reset_peak_memory_stats`; MLX sets its
   * one peak to 0): `peakActive = active`, `peakActiveWithMapped = active + mapped`, `peakReserved = active +
   * cache` and the counters' `peakLive = live`, so each is the true high-water mark since the reset. The
   * bounded policy's own high-water mark is not a statistic and stays.
   */
  resetPeak(): void {
    if (this.segments !== undefined) {
      this.segments.resetPeak();
      return;
    }
    if (this.closed) throw allocatorClosed("reset the peak");
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.active + this.cache.bytes;
    this.peakLive = this.live;
  }

  /**
   * Sets the hard limit on `active + mapped + quarantined` (any byte count, above the device's memory too) and recomputes
   * `gcLimit = min(bytes, floor(0.95·W))`. Returns the previous limit.
   */
  setMemoryLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the memory limit");
    checkedByteCount(bytes, "bytes");
    if (this.segments !== undefined) return this.segments.setMemoryLimit(bytes);
    const previous = this.memoryLimit;
    this.memoryLimit = bytes;
    this.gcLimitBytes = Math.min(bytes, this.workingSetGcLimit);
    return previous;
  }

  /**
   * Sets the cache limit and trims the cache to it at once (MLX waits for the next malloc). Returns the
   * previous limit.
   */
  setCacheLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the cache limit");
    checkedByteCount(bytes, "bytes");
    if (this.segments !== undefined) return this.segments.setCacheLimit(bytes);
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    if (this.cache.bytes > bytes) this.cache.release(this.cache.bytes - bytes);
    return previous;
  }

  /** Releases every cached buffer to the system. */
  clearCache(): void {
    if (this.segments !== undefined) {
      this.segments.clearCache();
      return;
    }
    if (this.closed) throw allocatorClosed("clear the cache");
    this.cache.clear();
  }

  /**
   * Releases every cached buffer; afterwards every method throws a `StateError`. Live allocations
   * are not released (they are the caller's: free them first). Closing twice does nothing.
   */
  close(): void {
    if (this.segments !== undefined) {
      this.closed = true;
      this.segments.close();
      return;
    }
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
   * attached as its `suppressed`). Counted
   * as released either way: the allocator holds the buffer no more.
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
