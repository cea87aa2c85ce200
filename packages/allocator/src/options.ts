import type { AllocatorPolicy, BoundedRelease } from "./policy.js";
import type { SegmentOptions } from "./segments.js";

/** Options of a {@link CachingAllocator}. */
export interface AllocatorOptions<B> {
  /** Hard limit on `active + mapped`; default `min(1.5·W, 0.95·M)` (floored). */
  memoryLimit?: number;
  /** The cache is trimmed to at most this; default the device's default memory limit (not `memoryLimit`). */
  cacheLimit?: number;
  /** The cache policy; default `"mlx"` (`"segments"` needs a source with `range()`). */
  policy?: AllocatorPolicy;
  /** The bounded policy's bound on reserved memory as a ratio of the live high-water mark; default 1.3. */
  reserveRatio?: number;
  /**
   * Which cached buffer the bounded policy's rule 2 releases first: `"least-recent"` (the
   * default) or `"largest"` (the oldest buffer of the largest cached length; see the README's comparison).
   */
  boundedRelease?: BoundedRelease;
  /** For the `"segments"` policy: its sizes (any left out keep `SEGMENT_DEFAULTS`). */
  segments?: Partial<SegmentOptions>;
  /** Called right after a system buffer is acquired (the device inserts it in its residency set). */
  onAcquire?: (buffer: B) => void;
  /** Called right before a system buffer is released (the device erases it from its residency set). */
  onRelease?: (buffer: B) => void;
}
