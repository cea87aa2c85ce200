import { ArgumentError, PAGE, Teardown } from "@nuvec/stats";
import type { BufferCache } from "./buffer-cache.js";
import {
  type AllocatorOptions,
  type AllocatorPolicy,
  type BoundedRelease,
  DEFAULT_BOUNDED_RELEASE,
  DEFAULT_POLICY,
  DEFAULT_RESERVE_RATIO,
} from "./options.js";

/**
 * What differs between the size-class policies (`mlx` and `bounded`): which cached lengths a request may
 * reuse, how long a buffer a miss acquires, and what a miss does before it acquires it. The rest of
 * `malloc` and `free` is MLX's allocator for both. (`segments` runs an allocator of its own and keeps a
 * policy that never reuses or rounds, for the name.)
 */
export interface CachePolicy<B> {
  readonly name: AllocatorPolicy;
  /**
   * The exclusive upper bound of the cached lengths a request of `sizeClass` may reuse, given `active` and
   * `live` before the request and the high-water mark of `live`.
   */
  reuseLimit(sizeClass: number, active: number, live: number, peakLive: number): number;
  /** The length of the system buffer a miss of `sizeClass` acquires (at least `sizeClass`). */
  systemLength(sizeClass: number, active: number, live: number, peakLive: number): number;
  /**
   * Before a miss: releases cached buffers the policy wants gone (`active` counts the buffer the miss
   * acquires, `live` the request's size class).
   */
  beforeMiss(cache: BufferCache<B>, active: number, live: number, peakLive: number): void;
}

/** MLX: reuse up to `min(2n, n + 2 pages)`; a miss acquires the size class and releases nothing beyond MLX's GC rule. */
class MlxPolicy<B> implements CachePolicy<B> {
  readonly name = "mlx";

  reuseLimit(sizeClass: number): number {
    return Math.min(2 * sizeClass, sizeClass + 2 * PAGE);
  }

  systemLength(sizeClass: number): number {
    return sizeClass;
  }

  beforeMiss(): void {}
}

/** Requests above this are given buffers rounded up to eight steps per power of two on a miss. */
export const ROUNDED_ABOVE = 256 * 1024;

/**
 * Reserved memory within `reserveRatio` of the high-water mark of live requests, at every step. The slack
 * (`(reserveRatio − 1) × max(hwmLive, live + n)`) pays for two things, and the cache gets what they leave:
 * the bytes handed out beyond the requests (`active − live`: a reused buffer longer than its request, a
 * rounded buffer), and cached buffers. A request reuses the smallest cached buffer of at least its size class
 * whose surplus the unspent slack covers (so a buffer of any length can serve a smaller request while the
 * books allow it: a growing or cycling workload is served from what it freed); a miss acquires its size
 * class rounded up to eight steps per power of two (above 256 KiB, when the slack covers the rounding: a KV
 * cache that grows by a token finds room in the buffer it had), after releasing cached buffers while
 * `active + cache + length` is over the bound.
 */
class BoundedPolicy<B> implements CachePolicy<B> {
  readonly name = "bounded";
  readonly #reserveRatio: number;
  readonly #release: BoundedRelease;

  constructor(reserveRatio: number, release: BoundedRelease) {
    this.#reserveRatio = reserveRatio;
    this.#release = release;
  }

  /** The bytes a request of `sizeClass` may be handed beyond it: the slack not yet spent on surplus. */
  #unspent(sizeClass: number, active: number, live: number, peakLive: number): number {
    const high = Math.max(live + sizeClass, peakLive);
    // The bound less the high-water mark, as the miss path computes the bound (`(ratio − 1) × high` differs
    // from it in the last bit: 1.2 − 1 is 0.19999999999999996).
    return Math.floor(this.#reserveRatio * high - high - (active - live));
  }

  reuseLimit(sizeClass: number, active: number, live: number, peakLive: number): number {
    return sizeClass + Math.max(0, this.#unspent(sizeClass, active, live, peakLive)) + 1;
  }

  systemLength(sizeClass: number, active: number, live: number, peakLive: number): number {
    if (sizeClass <= ROUNDED_ABOVE) return sizeClass;
    const step = 2 ** (Math.floor(Math.log2(sizeClass)) - 3);
    const rounded = Math.ceil(sizeClass / step) * step;
    return rounded - sizeClass <= this.#unspent(sizeClass, active, live, peakLive) ? rounded : sizeClass;
  }

  beforeMiss(cache: BufferCache<B>, active: number, live: number, peakLive: number): void {
    // Live after this request counts, so a growing workload is never squeezed below its own need.
    const bound = this.#reserveRatio * Math.max(live, peakLive);
    const teardown = new Teardown();
    while (cache.buffers > 0 && active + cache.bytes > bound) {
      const excess = Math.ceil(active + cache.bytes - bound);
      // Each buffer leaves the cache before its release runs: a throwing release ends nothing half way.
      teardown.run(() => {
        if (this.#release === "fitting") cache.releaseFitting(excess);
        else if (this.#release === "largest") cache.releaseLargest();
        else cache.releaseOldest();
      });
    }
    teardown.finish();
  }
}

/**
 * The policy `options` ask for (`policy`, `reserveRatio`, `boundedRelease`), checked.
 *
 * @throws ArgumentError for an unknown policy or release order, or a ratio that is not a finite
 * number ≥ 1.
 */
export function cachePolicyFor<B>(options: AllocatorOptions<B>): CachePolicy<B> {
  const policy = options.policy ?? DEFAULT_POLICY;
  if (policy !== "mlx" && policy !== "bounded" && policy !== "segments") {
    throw new ArgumentError("policy", `policy must be "bounded", "mlx" or "segments", got ${String(policy)}`);
  }
  const reserveRatio = options.reserveRatio ?? DEFAULT_RESERVE_RATIO;
  if (typeof reserveRatio !== "number" || !Number.isFinite(reserveRatio) || reserveRatio < 1) {
    throw new ArgumentError(
      "reserveRatio",
      `reserveRatio must be a finite number ≥ 1, got ${String(reserveRatio)}`,
    );
  }
  const boundedRelease = options.boundedRelease ?? DEFAULT_BOUNDED_RELEASE;
  if (boundedRelease !== "fitting" && boundedRelease !== "least-recent" && boundedRelease !== "largest") {
    throw new ArgumentError(
      "boundedRelease",
      `boundedRelease must be "fitting", "least-recent" or "largest", got ${String(boundedRelease)}`,
    );
  }
  if (policy === "segments") {
    return {
      name: "segments",
      reuseLimit: () => 0,
      systemLength: (n) => n,
      beforeMiss: () => {},
    };
  }
  return policy === "bounded" ? new BoundedPolicy<B>(reserveRatio, boundedRelease) : new MlxPolicy<B>();
}
