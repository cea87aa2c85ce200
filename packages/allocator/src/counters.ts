/**
 * Counters beyond the statistics, cumulative since the allocator was made, except `peakLive`, which
 * `resetPeak` restarts with every other peak.
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
  /** Requests refused by the hard memory limit (`ERR_NUVEC_OUT_OF_MEMORY`): the one figure such a refusal moves. */
  outOfMemoryRefusals: number;
  /**
   * System allocations retried after the source failed and the cache was released; one that fails again is
   * refused (`ERR_NUVEC_SYSTEM_ALLOCATION_FAILED`) and leaves this count and the released cache as they are.
   */
  allocationRetries: number;
  /**
   * The highest `live` (the sum of the size classes of live requests, whatever block each was served from)
   * since creation or the last `resetPeak`: the workload's high-water mark, which the bounded policy holds
   * reserved memory to.
   */
  peakLive: number;
  /** System buffers held by live allocations. */
  liveBuffers: number;
  /** System buffers held in the cache. */
  cachedBuffers: number;
  /** Mapped files in the accounts. */
  mappings: number;
}
