// A Device's statistics and counters: the allocator owns the memory figures, residency the wired ones, the
// backend its own counts, the Device the leaks and pending frees; each is read from its owner, and after
// close() the last figures stand in for them.
import type { AllocatorCounters, CachingAllocator } from "@nuvec/allocator";
import type { NativeAllocation, NativeBackend, NativeBuffer, NativeResidencySet } from "@nuvec/metal-native";
import type { Residency } from "@nuvec/residency";
import type { MemoryStats } from "@nuvec/stats";
import type { DeviceCounters } from "./options.js";
import type { StreamOrder } from "./streams/order.js";

/** Assembles one Device's `memoryStats()` and `counters()`, and keeps the last ones once it closes. */
export class DeviceFigures {
  readonly #allocator: CachingAllocator<NativeBuffer>;
  readonly #residency: Residency<NativeAllocation, NativeResidencySet>;
  readonly #backend: NativeBackend;
  readonly #order: StreamOrder | undefined;
  // The last statistics and counters, taken at close(), so they can still be read afterwards.
  #final: { stats: MemoryStats; counters: AllocatorCounters } | undefined;
  /** Buffers dropped without `free()` and given back by the safety net. */
  leakedBuffers = 0;
  /** Frees deferred with `{ after }` whose promise has not settled. */
  pendingFrees = 0;

  constructor(
    allocator: CachingAllocator<NativeBuffer>,
    residency: Residency<NativeAllocation, NativeResidencySet>,
    backend: NativeBackend,
    order?: StreamOrder,
  ) {
    this.#allocator = allocator;
    this.#residency = residency;
    this.#backend = backend;
    this.#order = order;
  }

  /** The allocator's figures with the wired ones from residency; the last ones after {@link keepLast}. */
  memoryStats(): MemoryStats {
    if (this.#final !== undefined) return { ...this.#final.stats };
    const stats = this.#allocator.memoryStats();
    const residency = this.#residency;
    stats.wired = residency.wired;
    stats.wiredMapped = residency.wiredMapped;
    stats.wiredLimit = residency.wiredLimit;
    return stats;
  }

  /**
   * The allocator's counters (the last ones after {@link keepLast}), the Device's and the backend's, in one
   * object literal: spreading the allocator's object into a literal with more fields costs V8 (Node.js 20)
   * some 10 µs a call, a literal of the same fields under 0.1 µs (bench/counters-bench.mjs). Every field is
   * named, so a counter the allocator adds fails to compile here until it is passed on.
   */
  counters(): DeviceCounters {
    const backend = this.#backend.counters();
    const allocator = this.#final ? this.#final.counters : this.#allocator.counters();
    return {
      cacheHits: allocator.cacheHits,
      cacheMisses: allocator.cacheMisses,
      systemAllocations: allocator.systemAllocations,
      systemReleases: allocator.systemReleases,
      outOfMemoryRefusals: allocator.outOfMemoryRefusals,
      allocationRetries: allocator.allocationRetries,
      peakLive: allocator.peakLive,
      liveBuffers: allocator.liveBuffers,
      cachedBuffers: allocator.cachedBuffers,
      mappings: allocator.mappings,
      leakedBuffers: this.leakedBuffers,
      pendingFrees: this.pendingFrees,
      streamPending: {
        buffers: this.#order?.heldBuffers ?? 0,
        bytes: this.#order?.heldBytes ?? 0,
      },
      wiredByPlatform: backend.wiredBytes,
      wiringFailures: backend.wiringFailures,
      backend,
    };
  }

  /** Takes the last figures, read from now on: at close(), before the allocator closes. */
  keepLast(): void {
    this.#final = { stats: this.memoryStats(), counters: this.#allocator.counters() };
  }

  /**
   * Takes a deferred free that settled after close() out of the last figures, which counted it as still in
   * use: `bufferBytes` of a buffer (`active`), of which `releasedBytes` left `reserved` (its buffer, or the
   * segment that went back with it: under the segments policy a block's bytes stay in `cache` while another
   * block of its segment is still pending), or `mappedBytes` of a mapped file.
   */
  settledAfterClose(bufferBytes: number, mappedBytes: number, releasedBytes = bufferBytes): void {
    const final = this.#final;
    if (final === undefined) return;
    final.stats.active -= bufferBytes;
    final.stats.reserved -= releasedBytes;
    final.stats.cache = final.stats.reserved - final.stats.active;
    final.stats.mapped -= mappedBytes;
    final.stats.activeWithMapped -= bufferBytes + mappedBytes;
    if (bufferBytes > 0) final.counters.liveBuffers -= 1;
    if (releasedBytes > 0) final.counters.systemReleases += 1;
    if (mappedBytes > 0) final.counters.mappings -= 1;
  }
}
