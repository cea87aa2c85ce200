import { ArgumentError, PAGE, Teardown } from "@nuvec/stats";
import type { BufferCache } from "./buffer-cache.js";
import {
  type AllocatorOptions,
  type AllocatorPolicy,
  DEFAULT_POLICY,
  DEFAULT_RESERVE_RATIO,
} from "./options.js";

/**
 * What differs between the two policies: which cached lengths a request may reuse, and what a miss does
 * before it acquires a system buffer. The rest of `malloc` and `free` is MLX's allocator for both.
 */
export interface CachePolicy<B> {
  readonly name: AllocatorPolicy;
  /** The exclusive upper bound of the cached lengths a request of `sizeClass` may reuse. */
  reuseLimit(sizeClass: number): number;
  /** Before a miss: releases cached buffers the policy wants gone (`live` counts the request). */
  beforeMiss(cache: BufferCache<B>, active: number, live: number, peakLive: number): void;
}

/** MLX: reuse up to `min(2n, n + 2 pages)`; a miss releases nothing beyond MLX's GC rule. */
class MlxPolicy<B> implements CachePolicy<B> {
  readonly name = "mlx";

  reuseLimit(sizeClass: number): number {
    return Math.min(2 * sizeClass, sizeClass + 2 * PAGE);
  }

  beforeMiss(): void {}
}

/** Reuse up to `2n`; a miss first brings reserved memory within `reserveRatio` of the high-water mark. */
class BoundedPolicy<B> implements CachePolicy<B> {
  readonly name = "bounded";
  readonly #reserveRatio: number;
  readonly #releaseLargestFirst: boolean;

  constructor(reserveRatio: number, releaseLargestFirst: boolean) {
    this.#reserveRatio = reserveRatio;
    this.#releaseLargestFirst = releaseLargestFirst;
  }

  reuseLimit(sizeClass: number): number {
    return 2 * sizeClass;
  }

  beforeMiss(cache: BufferCache<B>, active: number, live: number, peakLive: number): void {
    // Live after this request counts, so a growing workload is never squeezed below its own need.
    const bound = this.#reserveRatio * Math.max(live, peakLive);
    const teardown = new Teardown();
    while (cache.buffers > 0 && active + cache.bytes > bound) {
      // Each buffer leaves the cache before its release runs: a throwing release ends nothing half way.
      teardown.run(() => {
        if (this.#releaseLargestFirst) cache.releaseLargest();
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
  const boundedRelease = options.boundedRelease ?? "least-recent";
  if (boundedRelease !== "least-recent" && boundedRelease !== "largest") {
    throw new ArgumentError(
      "boundedRelease",
      `boundedRelease must be "least-recent" or "largest", got ${String(boundedRelease)}`,
    );
  }
  if (policy === "segments") return { name: "segments", reuseLimit: () => 0, beforeMiss: () => {} };
  return policy === "bounded"
    ? new BoundedPolicy<B>(reserveRatio, boundedRelease === "largest")
    : new MlxPolicy<B>();
}
