/**
 * Counters beyond MLX's statistics, cumulative since the allocator was made (`resetPeak` does not touch
 * them).
 */
export interface AllocatorCounters {
  /** Requests served from the cache. */
  cacheHits: number;
  /** Requests that needed a new system buffer. */
  cacheMisses: number;
  /** System buffers acquired (`systemAllocations` of the stats). */
  systemAllocations: number;
  /** System buffers released (cache trims, GC, clears, and frees that bypassed a full cache). */
  systemReleases: number;
  /** Requests refused by the hard memory limit. */
  outOfMemoryRefusals: number;
  /** System allocations retried after the source failed and the cache was released. */
  allocationRetries: number;
  /** The largest `active + cache` seen after any allocation. */
  peakReserved: number;
  /** The largest `live` (sum of the size classes of live requests) seen: the workload's high-water mark. */
  peakLive: number;
  /** System buffers held by live allocations. */
  liveBuffers: number;
  /** System buffers held in the cache. */
  cachedBuffers: number;
  /** Mapped files in the accounts. */
  mappings: number;
}
