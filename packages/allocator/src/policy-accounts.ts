// The books every policy keeps alike: the limits, mapped files against the hard limit, the peaks, the
// statistics and the counters. The size-class policies (size-classes.ts) and the segments policy
// (segments.ts) differ in how they hold the cache; each says what its cache is.
import { ArgumentError, type MemoryStats, mappingSize } from "@nuvec/stats";
import { type Allocation, LiveAllocation, LiveMapping, type Mapping } from "./allocation.js";
import { type BufferSource, isAllocationFailure } from "./buffer-source.js";
import type { QuarantineCount } from "./byte-count.js";
import { CachedBuffer } from "./cached-buffer.js";
import type { AllocatorCounters } from "./counters.js";
import {
  allocatorClosed,
  doubleFree,
  foreignAllocation,
  notQuarantined,
  outOfMemory,
  resourceLimit,
  systemAllocationFailed,
} from "./errors.js";

/** The allocator's hooks and limits, as {@link CachingAllocator} passes them on to a policy. */
export interface PolicySetup<B> {
  memoryLimit: number;
  cacheLimit: number;
  /** `floor(0.95·W)`: with the memory limit, the GC limit. */
  workingSetGcLimit: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  onAcquire: ((buffer: B) => void) | undefined;
  onRelease: ((buffer: B) => void) | undefined;
  /** The allocator's count of quarantined bytes: in the memory limit and the figures, never changed here. */
  quarantine: QuarantineCount;
}

/** The accounts of a policy; a policy adds `malloc`, `free` and how its cache is held and released. */
export abstract class PolicyAccounts<B> {
  declare protected readonly onAcquire: ((buffer: B) => void) | undefined;
  declare protected readonly onRelease: ((buffer: B) => void) | undefined;
  declare protected readonly workingSetGcLimit: number;
  declare protected readonly maxBufferLength: number;
  declare protected readonly resourceLimit: number;
  declare protected readonly pageSize: number;
  // Freed buffers whose memory the source still holds for a view moved out of its reach.
  declare protected readonly quarantinedCount: QuarantineCount;
  // The size-class policies' quarantined allocations (`quarantine()`), with the bytes each is counted at;
  // made at the first.
  declare private quarantinedAllocations: Map<Allocation<B>, number> | undefined;

  // Declared and assigned in the constructor (no field initializer function; every replay opens accounts).
  declare protected memoryLimit: number;
  declare protected cacheLimit: number;
  declare protected gcLimitBytes: number;
  declare protected active: number;
  declare protected mapped: number;
  /** The sum of the size classes (or block sizes) of live requests. */
  declare protected live: number;
  declare protected peakActive: number;
  declare protected peakActiveWithMapped: number;
  declare protected peakReserved: number;
  declare protected closed: boolean;

  declare protected cacheHits: number;
  declare protected cacheMisses: number;
  declare protected systemAllocations: number;
  declare protected systemReleases: number;
  declare protected outOfMemoryRefusals: number;
  declare protected allocationRetries: number;
  declare protected peakLive: number;
  declare protected liveBuffers: number;
  declare protected mappings: number;

  constructor(setup: PolicySetup<B>) {
    this.memoryLimit = setup.memoryLimit;
    this.cacheLimit = setup.cacheLimit;
    this.workingSetGcLimit = setup.workingSetGcLimit;
    this.gcLimitBytes = Math.min(setup.workingSetGcLimit, setup.memoryLimit);
    this.maxBufferLength = setup.maxBufferLength;
    this.resourceLimit = setup.resourceLimit;
    this.pageSize = setup.pageSize;
    this.onAcquire = setup.onAcquire;
    this.onRelease = setup.onRelease;
    this.quarantinedCount = setup.quarantine;
    this.quarantinedAllocations = undefined;
    this.active = 0;
    this.mapped = 0;
    this.live = 0;
    this.peakActive = 0;
    this.peakActiveWithMapped = 0;
    this.peakReserved = 0;
    this.closed = false;
    this.cacheHits = 0;
    this.cacheMisses = 0;
    this.systemAllocations = 0;
    this.systemReleases = 0;
    this.outOfMemoryRefusals = 0;
    this.allocationRetries = 0;
    this.peakLive = 0;
    this.liveBuffers = 0;
    this.mappings = 0;
  }

  /** The bytes held for reuse: `reserved - active`. */
  protected abstract get cacheBytes(): number;
  /** The free buffers or blocks held for reuse. */
  protected abstract get cachedBuffers(): number;
  /** System resources held besides the mappings (live and cached buffers, or segments). */
  protected abstract get resources(): number;
  /** Gives every cached buffer (every idle segment, every free mapped page) back to the system. */
  protected abstract releaseCached(): void;
  /** Takes a live allocation off the books: to the cache when `mayCache`, else never to be reused. */
  protected abstract freeAllocation(allocation: Allocation<B>, mayCache: boolean): void;

  /**
   * Takes a live allocation of this allocator off its record (a `kind`: a cached buffer or a block) and
   * returns the record; `undefined` for a 0-byte allocation, which holds none.
   *
   * @throws ArgumentError (`ERR_NUVEC_FOREIGN_ALLOCATION`) for another allocator's allocation or a look-alike;
   * StateError (`ERR_NUVEC_DOUBLE_FREE`) for one freed already. Nothing changed then.
   */
  protected unlive<R extends { readonly owner: object; allocation: object | null }>(
    allocation: Allocation<B>,
    kind: abstract new (...args: never[]) => R,
    afterClose = false,
  ): R | undefined {
    if (this.closed && !afterClose) throw allocatorClosed("free");
    if (!(allocation instanceof LiveAllocation)) throw foreignAllocation("allocation");
    const record = (allocation as LiveAllocation<B>).record;
    if (record === undefined) return undefined;
    if (!(record instanceof kind) || record.owner !== this) throw foreignAllocation("allocation");
    if (record.allocation !== allocation) throw doubleFree("allocation");
    record.allocation = null;
    this.liveBuffers--;
    return record;
  }

  /**
   * {@link unlive} for a size-class policy's record, the free's hot path: the same checks, in the same
   * order, against the class itself (an `instanceof` of a constant the compiler can inline).
   */
  protected unliveCached(allocation: Allocation<B>): CachedBuffer<B> | undefined {
    if (this.closed) throw allocatorClosed("free");
    if (!(allocation instanceof LiveAllocation)) throw foreignAllocation("allocation");
    const record = (allocation as LiveAllocation<B>).record;
    if (record === undefined) return undefined;
    if (!(record instanceof CachedBuffer) || record.owner !== this) throw foreignAllocation("allocation");
    if (record.allocation !== allocation) throw doubleFree("allocation");
    record.allocation = null;
    this.liveBuffers--;
    return record as CachedBuffer<B>;
  }

  /** See {@link CachingAllocator.free}. */
  free(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, true);
  }

  /** See {@link CachingAllocator.freeWithoutCaching}. */
  freeWithoutCaching(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, false);
    this.trimAfterFree();
  }

  /** After a free without caching that nothing counts: the cache trimmed to its limit where it grew. */
  protected trimAfterFree(): void {}

  /** See {@link CachingAllocator.quarantine}. */
  quarantine(allocation: Allocation<B>): void {
    this.freeAllocation(allocation, false);
    this.countQuarantined(allocation);
  }

  /**
   * Counts a live allocation just freed without caching in `quarantined` until {@link endQuarantine}: the
   * size-class policies count its length (its buffer went back to the source, which holds it).
   */
  protected countQuarantined(allocation: Allocation<B>): void {
    if (allocation.buffer === undefined) return;
    if (this.quarantinedAllocations === undefined) this.quarantinedAllocations = new Map();
    this.quarantinedAllocations.set(allocation, allocation.allocatedLength);
    this.quarantinedCount.bytes += allocation.allocatedLength;
  }

  /** See {@link CachingAllocator.endQuarantine}. */
  endQuarantine(allocation: Allocation<B>): void {
    if (this.closed) throw allocatorClosed("end a quarantine");
    const bytes = this.quarantinedAllocations?.get(allocation);
    if (bytes === undefined) throw notQuarantined();
    this.quarantinedAllocations!.delete(allocation);
    this.quarantinedCount.bytes -= bytes;
  }

  /**
   * See {@link CachingAllocator.releaseAfterClose}: the size-class policies give the allocation's buffer to
   * `release` (the source's) and return its length.
   */
  releaseAfterClose(allocation: Allocation<B>, release: (buffer: B) => void): number {
    const record = this.unlive<CachedBuffer<B>>(allocation, CachedBuffer, true);
    if (record === undefined) return 0;
    release(record.buffer);
    return record.length;
  }

  /**
   * Refuses `bytes` more past the hard limit on `active + mapped + quarantined` (the refusal counted,
   * nothing else changed); returns what is used now.
   */
  protected withinLimit(bytes: number): number {
    const used = this.active + this.mapped + this.quarantinedCount.bytes;
    if (used + bytes > this.memoryLimit) {
      this.outOfMemoryRefusals++;
      throw outOfMemory(bytes, this.active, this.mapped, this.memoryLimit, this.quarantinedCount.bytes);
    }
    return used;
  }

  /** Counts an allocation of `length` bytes handed out for a request of `liveSize`; returns the new `live`. */
  protected charge(length: number, liveSize: number): number {
    this.liveBuffers++;
    const active = this.active + length;
    this.active = active;
    if (active > this.peakActive) this.peakActive = active;
    if (active + this.mapped > this.peakActiveWithMapped) this.peakActiveWithMapped = active + this.mapped;
    const live = this.live + liveSize;
    this.live = live;
    if (live > this.peakLive) this.peakLive = live;
    return live;
  }

  /** The GC limit: `min(memoryLimit, floor(0.95·W))`. */
  get gcLimit(): number {
    return this.gcLimitBytes;
  }

  /** MLX counts live, cached and (nuvec) mapped resources against the device's limit; the cache goes first. */
  protected ensureResource(): void {
    if (this.resources + this.mappings < this.resourceLimit) return;
    this.releaseCached();
    if (this.resources + this.mappings >= this.resourceLimit) throw resourceLimit(this.resourceLimit);
  }

  /**
   * Runs `attempt`, a system allocation of `bytes`. Only a refusal to allocate is worth a retry: anything
   * else (a closed backend, a bad argument, a bug) propagates unchanged, and the cache is left alone. On a
   * refusal the whole cache goes back and `attempt` runs once more (PyTorch's retry: the system may have
   * refused because of what the cache holds); refused again, it is `ERR_NUVEC_SYSTEM_ALLOCATION_FAILED`.
   */
  protected withRetry<T>(source: BufferSource<B>, bytes: number, attempt: () => T): T {
    try {
      return attempt();
    } catch (error) {
      return this.retryAfter(error, source, bytes, attempt);
    }
  }

  /** {@link withRetry} once `attempt` threw `error`. */
  private retryAfter<T>(error: unknown, source: BufferSource<B>, bytes: number, attempt: () => T): T {
    if (!(source.isAllocationFailure ?? isAllocationFailure)(error)) throw error;
    this.allocationRetries++;
    this.releaseCached();
    try {
      return attempt();
    } catch (error) {
      throw systemAllocationFailed(bytes, error);
    }
  }

  /** Acquires a system buffer of `bytes` (with the retry) and runs the `onAcquire` hook on it. */
  protected acquireBuffer(source: BufferSource<B>, bytes: number): B {
    // `withRetry`'s steps written out: a miss makes no closure.
    let buffer: B;
    try {
      buffer = source.acquire(bytes);
    } catch (error) {
      buffer = this.retryAfter(error, source, bytes, () => source.acquire(bytes));
    }
    if (this.onAcquire !== undefined) {
      try {
        this.onAcquire(buffer);
      } catch (error) {
        // The hook refused it: the buffer goes back, nothing is counted.
        source.release(buffer);
        throw error;
      }
    }
    this.systemAllocations++;
    return buffer;
  }

  /** See {@link CachingAllocator.clearCache}. */
  clearCache(): void {
    if (this.closed) throw allocatorClosed("clear the cache");
    this.releaseCached();
  }

  /** See {@link CachingAllocator.addMapping}; the byte count is checked there. */
  addMapping(fileLength: number): Mapping {
    if (this.closed) throw allocatorClosed("add a mapping");
    const allocatedLength = mappingSize(fileLength, this.pageSize);
    if (allocatedLength === undefined) {
      throw new ArgumentError("fileLength", `fileLength ${fileLength} is too large to map`);
    }
    this.withinLimit(allocatedLength);
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
      cache: this.cacheBytes,
      reserved: this.active + this.cacheBytes,
      peakReserved: this.peakReserved,
      memoryLimit: this.memoryLimit,
      cacheLimit: this.cacheLimit,
      systemAllocations: this.systemAllocations,
      wiredLimit: 0,
      wired: 0,
      wiredMapped: 0,
      quarantined: this.quarantinedCount.bytes,
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
      cachedBuffers: this.cachedBuffers,
      mappings: this.mappings,
    };
  }

  /** See {@link CachingAllocator.resetPeak}. */
  resetPeak(): void {
    if (this.closed) throw allocatorClosed("reset the peak");
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.active + this.cacheBytes;
    this.peakLive = this.live;
  }

  /** See {@link CachingAllocator.setMemoryLimit}; the byte count is checked there. */
  setMemoryLimit(bytes: number): number {
    if (this.closed) throw allocatorClosed("set the memory limit");
    const previous = this.memoryLimit;
    this.memoryLimit = bytes;
    this.gcLimitBytes = Math.min(bytes, this.workingSetGcLimit);
    return previous;
  }
}
