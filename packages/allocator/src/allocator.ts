import { ArgumentError, type MemoryStats, mappingSize } from "@nuvec/stats";
import type { Allocation, Mapping } from "./allocation.js";
import type { BufferSource } from "./buffer-source.js";
import { checkedByteCount, type QuarantineCount } from "./byte-count.js";
import type { AllocatorCounters } from "./counters.js";
import { allocatorClosed } from "./errors.js";
import { isMappingSource } from "./expandable.js";
import { ALLOCATOR_OPTIONS } from "./option-schema.js";
import type { AllocatorOptions, AllocatorPolicy, BoundedRelease } from "./options.js";
import { DEFAULT_BOUNDED_RELEASE, DEFAULT_RESERVE_RATIO } from "./options.js";
import { cachePolicyFor } from "./policy.js";
import { checkSegmentOptions, type SegmentOptions, segmentsWithin } from "./segment-options.js";
import { SegmentAllocator } from "./segments.js";
import { SizeClassAllocator } from "./size-classes.js";
import type { TraceAllocatorSetup } from "./trace-format.js";

/**
 * The size-class allocator behind `allocator` (the `mlx` and `bounded` policies), or `undefined` under
 * `segments`: for the replay, which keeps the allocator's records instead of an {@link Allocation} per malloc.
 * Internal to the package (not exported from its entry).
 */
export let sizeClassEngineOf: <B>(allocator: CachingAllocator<B>) => SizeClassAllocator<B> | undefined;

/**
 * MLX's caching allocator policy over any {@link BufferSource}, with nuvec's hard memory limit, mapped-file
 * accounting, the retry after a failed system allocation, and counters. Not thread-safe (JavaScript is not).
 *
 * This class reads the options and the source's facts, holds what every policy shares (the quarantine
 * count, the replay setup) and hands each call to the policy's allocator: {@link SizeClassAllocator} for
 * `mlx` and `bounded`, {@link SegmentAllocator} for `segments`.
 *
 * Live allocations are the caller's to free; `close()` releases the cache only.
 */
export class CachingAllocator<B> {
  static {
    sizeClassEngineOf = (allocator) =>
      allocator.engine instanceof SizeClassAllocator ? allocator.engine : undefined;
  }

  declare private readonly engine: SizeClassAllocator<B> | SegmentAllocator<B>;
  declare private readonly policyName: AllocatorPolicy;
  // Freed buffers whose memory the source still holds for a view moved out of its reach (addQuarantined).
  declare private readonly quarantinedCount: QuarantineCount;
  // The part of it counted by addQuarantined (what removeQuarantined may take back).
  declare private addedQuarantined: number;
  declare private closed: boolean;
  // The source's release, for allocations given back after close (releaseAfterClose).
  declare private readonly releaseBuffer: (buffer: B) => void;
  declare private readonly facts: {
    workingSet: number;
    memorySize: number;
    maxBufferLength: number;
    resourceLimit: number;
    pageSize: number;
    reserveRatio: number;
    boundedRelease: BoundedRelease;
  };

  constructor(source: BufferSource<B>, given: AllocatorOptions<B> = {}) {
    // Every option checked by its declaration (each read once); the allocator uses what the check returned.
    const options = ALLOCATOR_OPTIONS.parse(given) as AllocatorOptions<B>;
    // Assigned here, not where declared (no field initializer function; every replay opens an allocator).
    this.quarantinedCount = { bytes: 0 };
    this.addedQuarantined = 0;
    this.closed = false;
    const workingSet = checkedByteCount(source.recommendedMaxWorkingSetSize, "recommendedMaxWorkingSetSize");
    const memorySize = checkedByteCount(source.memorySize, "memorySize");
    const maxBufferLength = checkedByteCount(source.maxBufferLength, "maxBufferLength");
    const resourceLimit = checkedByteCount(source.resourceLimit, "resourceLimit");
    const pageSize = checkedByteCount(source.pageSize, "pageSize");
    try {
      mappingSize(0, pageSize);
    } catch (error) {
      throw new ArgumentError("pageSize", (error as Error).message, { cause: error });
    }
    // MLX: block_limit_ = min(1.5·W, 0.95·M), gc_limit_ = min(size_t(0.95·W), block_limit_), both as doubles
    // converted to size_t (floored).
    const workingSetGcLimit = Math.floor(0.95 * workingSet);
    const defaultMemoryLimit = Math.floor(Math.min(1.5 * workingSet, 0.95 * memorySize));
    // The cache limit defaults to the memory limit, as MLX's starts at its memory limit: a device opened with
    // `memoryLimit: 1 GiB` never caches more than 1 GiB. Later changes of either move only that one.
    const memoryLimit =
      options.memoryLimit === undefined
        ? defaultMemoryLimit
        : checkedByteCount(options.memoryLimit, "memoryLimit");
    const cacheLimit =
      options.cacheLimit === undefined ? memoryLimit : checkedByteCount(options.cacheLimit, "cacheLimit");
    this.releaseBuffer = (buffer) => source.release(buffer);
    const cachePolicy = cachePolicyFor<B>(options);
    this.policyName = cachePolicy.name;
    this.facts = {
      workingSet,
      memorySize,
      maxBufferLength,
      resourceLimit,
      pageSize,
      reserveRatio: options.reserveRatio ?? DEFAULT_RESERVE_RATIO,
      boundedRelease: options.boundedRelease ?? DEFAULT_BOUNDED_RELEASE,
    };
    const limits = {
      memoryLimit,
      cacheLimit,
      workingSetGcLimit,
      maxBufferLength,
      resourceLimit,
      pageSize,
      onAcquire: options.onAcquire,
      onRelease: options.onRelease,
      quarantine: this.quarantinedCount,
      cachePolicy,
    };
    // One literal for both engines (a spread copy of it costs more than the rest of opening an allocator).
    this.engine =
      cachePolicy.name === "segments"
        ? new SegmentAllocator<B>(source, {
            ...limits,
            segments: segmentsWithin(
              checkSegmentOptions(options.segments, isMappingSource(source)),
              options.segments,
              maxBufferLength,
            ),
          })
        : new SizeClassAllocator<B>(source, limits);
  }

  /**
   * What a replay needs to run this allocator's decisions again from now on (a trace's header records it):
   * the policy and its settings, the source's facts, the limits in force, and whether it is fresh (nothing
   * live, nothing cached).
   */
  replaySetup(): TraceAllocatorSetup {
    const stats = this.memoryStats();
    const segments = this.segmentOptions;
    const mapGranularity = this.engine instanceof SegmentAllocator ? this.engine.mapGranularity : undefined;
    return {
      policy: this.policyName,
      reserveRatio: this.facts.reserveRatio,
      boundedRelease: this.facts.boundedRelease,
      ...(segments === undefined ? {} : { segments: { ...segments } }),
      workingSet: this.facts.workingSet,
      memorySize: this.facts.memorySize,
      maxBufferLength: this.facts.maxBufferLength,
      resourceLimit: this.facts.resourceLimit,
      pageSize: this.facts.pageSize,
      ...(mapGranularity === undefined ? {} : { mapGranularity }),
      memoryLimit: stats.memoryLimit,
      cacheLimit: stats.cacheLimit,
      fresh: stats.active === 0 && stats.cache === 0 && stats.mapped === 0 && stats.quarantined === 0,
    };
  }

  /** The segments policy's sizes, or `undefined` under another policy. */
  get segmentOptions(): SegmentOptions | undefined {
    return this.engine instanceof SegmentAllocator ? this.engine.segmentOptions : undefined;
  }

  /**
   * Under the segments policy: segments held, how many are idle (no live block), and the largest free block
   * of each pool (a request larger than both needs a new segment); `undefined` under another policy.
   */
  segmentFigures():
    | { segments: number; idleSegments: number; largestFreeSmall: number; largestFreeLarge: number }
    | undefined {
    return this.engine instanceof SegmentAllocator ? this.engine.segmentFigures() : undefined;
  }

  /** The policy this allocator runs. */
  get policy(): AllocatorPolicy {
    return this.policyName;
  }

  /** Below `active + mapped + cache + request` reaching this, a miss releases no cached buffer. */
  get gcLimit(): number {
    return this.engine.gcLimit;
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
    return this.engine.malloc(bytes);
  }

  /**
   * Gives an allocation back: its buffer is cached when the cache is under its limit, else released at once.
   * Freeing a 0-byte allocation does nothing.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  free(allocation: Allocation<B>): void {
    this.engine.free(allocation);
  }

  /**
   * Like {@link free}, but the allocation is never cached nor counted: its buffer goes back to the source at
   * once (under `segments` its block is never handed out again). For a caller that counts what the source
   * still holds itself ({@link addQuarantined}); {@link quarantine} counts it here instead.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  freeWithoutCaching(allocation: Allocation<B>): void {
    this.engine.freeWithoutCaching(allocation);
  }

  /**
   * Like {@link free}, but for an allocation that must not be reused because something outside the allocator
   * may still reach its memory (a view moved away from it by `ArrayBuffer.prototype.transfer()` or a
   * `postMessage` transfer): never cached, and counted in `quarantined` (and against the memory limit) until
   * {@link endQuarantine} says the source gave its memory back. Under `mlx` and `bounded` its buffer goes
   * back to the source at once, counted at its length. Under `segments` its block stays in its segment,
   * never handed out, counted at its size; a segment that goes back while a block of it is quarantined (the
   * source holds the whole segment for the escaped view) is counted whole until the last such block's
   * quarantine ends.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  quarantine(allocation: Allocation<B>): void {
    this.engine.quarantine(allocation);
  }

  /**
   * The source gave back the memory of an allocation passed to {@link quarantine} (the escaped view was
   * collected): it leaves `quarantined`; under `segments` its block is free again, or its segment, given back
   * meanwhile, leaves `quarantined` with its last quarantined block.
   *
   * @throws ArgumentError for an allocation this allocator does not hold in quarantine (nothing changed);
   * StateError after `close()`.
   */
  endQuarantine(allocation: Allocation<B>): void {
    this.engine.endQuarantine(allocation);
  }

  /**
   * After {@link close}: gives back what a live allocation holds, which `close()` leaves to its caller (a
   * free still waiting for a kernel): its buffer, or under `segments` its block's range and, with the last
   * live block of its segment, the segment (an expandable segment's mappings and address space). No hook
   * runs and no figure moves (the allocator is closed). Returns the bytes that left `reserved` with it (the
   * buffer's length, the segment's bytes, or 0 while other blocks of its segment live), for a caller that
   * keeps the last figures. Before `close()` it is {@link free} (and returns 0).
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`).
   */
  releaseAfterClose(allocation: Allocation<B>): number {
    if (!this.closed) {
      this.free(allocation);
      return 0;
    }
    return this.engine.releaseAfterClose(allocation, this.releaseBuffer);
  }

  /**
   * Counts `bytes` the source still holds for something other than an allocation passed to
   * {@link quarantine} (a mapped file whose view moved away, a buffer freed with {@link freeWithoutCaching}):
   * in `quarantined`, and against the memory limit, until {@link removeQuarantined} says the
   * source gave it back.
   *
   * @throws ArgumentError for a bad byte count (nothing changed); StateError (`ERR_NUVEC_ALLOCATOR_CLOSED`).
   */
  addQuarantined(bytes: number): void {
    if (this.closed) throw allocatorClosed("count quarantined memory");
    checkedByteCount(bytes, "bytes");
    this.quarantinedCount.bytes += bytes;
    this.addedQuarantined += bytes;
  }

  /**
   * The source gave back `bytes` counted by {@link addQuarantined}.
   *
   * @throws ArgumentError for a bad byte count or more than {@link addQuarantined} counted (nothing
   * changed); StateError (`ERR_NUVEC_ALLOCATOR_CLOSED`).
   */
  removeQuarantined(bytes: number): void {
    if (this.closed) throw allocatorClosed("count quarantined memory");
    checkedByteCount(bytes, "bytes");
    if (bytes > this.addedQuarantined) {
      throw new ArgumentError(
        "bytes",
        `${bytes} bytes are more than the ${this.addedQuarantined} quarantined by addQuarantined`,
      );
    }
    this.quarantinedCount.bytes -= bytes;
    this.addedQuarantined -= bytes;
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
    return this.engine.addMapping(fileLength);
  }

  /**
   * Takes a mapping out of the accounts.
   *
   * @throws StateError (`ERR_NUVEC_DOUBLE_FREE`), ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`): nothing
   * changed; StateError after `close()`.
   */
  removeMapping(mapping: Mapping): void {
    this.engine.removeMapping(mapping);
  }

  /**
   * The full statistics of what the allocator owns. The wired fields (`wired`, `wiredMapped`, `wiredLimit`)
   * are always 0 here: residency owns them, and whoever runs residency (the Device) fills them in.
   */
  memoryStats(): MemoryStats {
    return this.engine.memoryStats();
  }

  /** The counters beyond MLX's statistics (a fresh object). */
  counters(): AllocatorCounters {
    return this.engine.counters();
  }

  /**
   * Restarts every peak at its quantity's current value (PyTorch's `reset_peak_memory_stats`; MLX sets its
   * one peak to 0): `peakActive = active`, `peakActiveWithMapped = active + mapped`, `peakReserved = active +
   * cache` and the counters' `peakLive = live`, so each is the true high-water mark since the reset. The
   * bounded policy's own high-water mark is not a statistic and stays.
   */
  resetPeak(): void {
    this.engine.resetPeak();
  }

  /**
   * Sets the hard limit on `active + mapped + quarantined` (any byte count, above the device's memory too) and recomputes
   * `gcLimit = min(bytes, floor(0.95·W))`. Returns the previous limit.
   */
  setMemoryLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the memory limit");
    bytes = checkedByteCount(bytes, "bytes");
    return this.engine.setMemoryLimit(bytes);
  }

  /**
   * Sets the cache limit and trims the cache to it at once (MLX waits for the next malloc). Returns the
   * previous limit.
   */
  setCacheLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the cache limit");
    bytes = checkedByteCount(bytes, "bytes");
    return this.engine.setCacheLimit(bytes);
  }

  /** Releases every cached buffer to the system. */
  clearCache(): void {
    this.engine.clearCache();
  }

  /**
   * Releases every cached buffer; afterwards every method throws a `StateError`. Live allocations
   * are not released (they are the caller's: free them first). Closing twice does nothing.
   */
  close(): void {
    // Closed even when a release throws (the engine finishes the others and rethrows the first error).
    try {
      this.engine.close();
    } finally {
      this.closed = true;
    }
  }
}
