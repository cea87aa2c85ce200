import type { SegmentOptions } from "./segment-options.js";

/**
 * Which cache policy decides reuse and release: `"bounded"` (the default) keeps reserved memory within
 * `reserveRatio` of the workload's high-water mark; `"mlx"` is MLX's Metal allocator, decision for decision,
 * which keeps every freed buffer up to the cache limit; `"segments"` sub-allocates blocks inside large
 * segments (for discrete GPUs, where every system allocation is a slow driver call; see segments.ts).
 */
export type AllocatorPolicy = "bounded" | "mlx" | "segments";

/**
 * Which buffer the bounded policy releases first to stay within its bound: `"fitting"` the smallest that
 * alone brings the cache within it (the largest when none does), `"least-recent"` the least recently cached,
 * `"largest"` the largest.
 */
export type BoundedRelease = "fitting" | "least-recent" | "largest";

/** The policy an allocator runs when none is asked for: the one that does not hoard. */
export const DEFAULT_POLICY: AllocatorPolicy = "bounded";

/** The default of {@link AllocatorOptions.reserveRatio}. */
export const DEFAULT_RESERVE_RATIO = 1.2;

/** The default of {@link AllocatorOptions.boundedRelease}. */
export const DEFAULT_BOUNDED_RELEASE: BoundedRelease = "fitting";

/** Options of a {@link CachingAllocator}. */
export interface AllocatorOptions<B> {
  /** Hard limit on `active + mapped`; default `min(1.5·W, 0.95·M)` (floored). */
  memoryLimit?: number;
  /** The cache is trimmed to at most this; default the memory limit (`memoryLimit` when given), as MLX. */
  cacheLimit?: number;
  /** The cache policy; default `"bounded"` (`"mlx"`: MLX's decisions exactly; `"segments"` needs a source with `range()`). */
  policy?: AllocatorPolicy;
  /** The bounded policy's bound on reserved memory as a ratio of the live high-water mark; default 1.2. */
  reserveRatio?: number;
  /**
   * Which cached buffer the bounded policy releases first to stay within its bound: `"fitting"` (the
   * default: the oldest of the smallest cached length that alone is enough, else the largest),
   * `"least-recent"` or `"largest"` (see the README's comparison).
   */
  boundedRelease?: BoundedRelease;
  /** For the `"segments"` policy: its sizes (any left out keep `SEGMENT_DEFAULTS`). */
  segments?: Partial<SegmentOptions>;
  /** Called right after a system buffer is acquired (the device inserts it in its residency set). */
  onAcquire?: (buffer: B) => void;
  /** Called right before a system buffer is released (the device erases it from its residency set). */
  onRelease?: (buffer: B) => void;
}
