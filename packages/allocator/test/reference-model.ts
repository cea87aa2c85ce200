// The reference model of the allocator's accounts, shared by the allocator's property tests and the Device's
// fuzzer (packages/device/test/reliability, through a relative import). Written from DESIGN.md alone (MLX's
// policy, nuvec's hard limit and the bounded policy), as plainly as possible: the cache is one array in
// caching order, every search is a linear scan. It shares no code with @nuvec/allocator (its size classes
// are written again here), so the tests compare two independent derivations after every step.

import { ModelAccounts, type ModelFacts, type Outcome } from "./model-accounts.js";

export type { ModelCounters, ModelFacts, ModelStats, Outcome } from "./model-accounts.js";

/** MLX's large-buffer granule (DESIGN.md: `PAGE`). */
export const PAGE = 16384;

/** `allocationSize` of DESIGN.md, written again. */
export function sizeClass(bytes: number): number {
  if (bytes === 0) return 0;
  return bytes > PAGE ? Math.ceil(bytes / PAGE) * PAGE : Math.ceil(bytes / 256) * 256;
}

/** The policy the model runs: MLX's (default), or the bounded one with its ratio and release order. */
export interface ModelPolicy {
  policy?: "mlx" | "bounded";
  /** The bounded policy's ratio; default 1.2. */
  reserveRatio?: number;
  /** Which cached buffer the bounded policy releases first; default `"fitting"`. */
  release?: "fitting" | "least-recent" | "largest";
}

/** The bounded policy rounds the buffer of a miss above this to eight steps per power of two. */
const ROUNDED_ABOVE = 256 * 1024;

/** A cached buffer: its length, and a name so a test can tell two of one length apart. */
interface Cached {
  id: number;
  length: number;
}

/** The naive reference model; see the top of this file. */
export class ReferenceModel extends ModelAccounts {
  readonly bounded: boolean;
  readonly reserveRatio: number;
  readonly releaseOrder: "fitting" | "least-recent" | "largest";
  /** Sum of the size classes of live requests, and its high-water mark (the bounded policy's figures). */
  liveBytes = 0;
  peakLive = 0;
  /** The bounded policy's high-water mark of `liveBytes`: never reset. */
  highWaterLive = 0;
  /** Cached buffers, least recently cached first. */
  cache: Cached[] = [];
  /** Live system buffers by id: their length (the cached buffer's on a hit) and the request's size class. */
  live = new Map<number, { length: number; sizeClass: number }>();
  /** Buffer ids, so that a reused buffer keeps its name. */
  #nextId = 1;

  constructor(facts: ModelFacts, policy: ModelPolicy = {}) {
    super(facts);
    this.bounded = policy.policy === "bounded";
    this.reserveRatio = policy.reserveRatio ?? 1.2;
    this.releaseOrder = policy.release ?? "fitting";
  }

  get cacheBytes(): number {
    return this.cache.reduce((sum, buffer) => sum + buffer.length, 0);
  }

  /** MLX's `release_cached_buffers`: oldest first until `bytes` are freed, all of them from 90% on. */
  protected releaseCache(bytes: number): void {
    if (bytes >= 0.9 * this.cacheBytes) {
      this.systemReleases += this.cache.length;
      this.cache = [];
      return;
    }
    let freed = 0;
    while (this.cache.length > 0 && freed < bytes) {
      const oldest = this.cache.shift()!;
      freed += oldest.length;
      this.systemReleases += 1;
    }
  }

  protected get resources(): number {
    return this.live.size + this.cache.length;
  }

  protected get liveBuffers(): number {
    return this.live.size;
  }

  protected get cachedBuffers(): number {
    return this.cache.length;
  }

  /** The index of the oldest cached buffer of the largest length. */
  #largest(): number {
    let chosen = 0;
    this.cache.forEach((buffer, index) => {
      if (buffer.length > this.cache[chosen]!.length) chosen = index;
    });
    return chosen;
  }

  /**
   * The bounded policy's choice, `excess` bytes over its bound: the least recently cached buffer, the oldest
   * of the largest length, or (fitting) the oldest of the smallest length of at least `excess`, else the
   * oldest of the largest.
   */
  #releaseOne(excess: number): void {
    let chosen = 0;
    if (this.releaseOrder === "largest") chosen = this.#largest();
    else if (this.releaseOrder === "fitting") {
      chosen = -1;
      this.cache.forEach((buffer, index) => {
        if (buffer.length < excess) return;
        if (chosen < 0 || buffer.length < this.cache[chosen]!.length) chosen = index;
      });
      if (chosen < 0) chosen = this.#largest();
    }
    this.cache.splice(chosen, 1);
    this.systemReleases += 1;
  }

  /**
   * The bounded policy's slack not yet spent: `(ratio − 1) × max(hwmLive, live + n)` less the bytes live
   * buffers hold beyond their requests (`active − live`), floored.
   */
  #unspent(wanted: number): number {
    const high = Math.max(this.liveBytes + wanted, this.highWaterLive);
    return Math.floor(this.reserveRatio * high - high - (this.active - this.liveBytes));
  }

  /** A request of `bytes`: the id of the system buffer handed out and its length, or a refusal. */
  malloc(bytes: number): Outcome<{ id: number; length: number } | undefined> {
    if (bytes === 0) return { ok: true, value: undefined };
    const wanted = sizeClass(bytes);
    if (wanted > this.facts.maxBufferLength) return { ok: false, refusal: "too-large" };
    if (!this.withinLimit(wanted)) return { ok: false, refusal: "out-of-memory" };
    // Reuse: the smallest length in [n, limit), the least recently cached of that length; MLX's limit is
    // min(2n, n + 2·PAGE), the bounded policy's n + its unspent slack (inclusive).
    const limit = this.bounded
      ? wanted + Math.max(0, this.#unspent(wanted)) + 1
      : Math.min(2 * wanted, wanted + 2 * PAGE);
    let chosen = -1;
    this.cache.forEach((buffer, index) => {
      if (buffer.length < wanted || buffer.length >= limit) return;
      if (chosen < 0 || buffer.length < this.cache[chosen]!.length) chosen = index;
    });
    let handed: Cached;
    const used = this.active + this.mapped + this.quarantined;
    if (chosen >= 0 && used + this.cache[chosen]!.length <= this.memoryLimit) {
      handed = this.cache.splice(chosen, 1)[0]!;
      this.cacheHits += 1;
    } else {
      // The bounded policy's buffer of a miss: above 256 KiB, rounded up to a multiple of 1/8 of the power
      // of two at or below it when the unspent slack covers it and the limits take it.
      let length = wanted;
      if (this.bounded && wanted > ROUNDED_ABOVE) {
        const step = 2 ** (Math.floor(Math.log2(wanted)) - 3);
        const rounded = Math.ceil(wanted / step) * step;
        const fits = rounded <= this.facts.maxBufferLength && used + rounded <= this.memoryLimit;
        if (rounded - wanted <= this.#unspent(wanted) && fits) length = rounded;
      }
      if (this.bounded) {
        const bound = this.reserveRatio * Math.max(this.highWaterLive, this.liveBytes + wanted);
        while (this.cache.length > 0 && this.active + this.cacheBytes + length > bound) {
          this.#releaseOne(Math.ceil(this.active + this.cacheBytes + length - bound));
        }
      }
      const required = this.active + this.mapped + this.cacheBytes + length;
      if (required >= this.gcLimit) this.releaseCache(required - this.gcLimit);
      if (!this.resourceAvailable()) return { ok: false, refusal: "resource-limit" };
      handed = { id: this.#nextId++, length };
      this.systemAllocations += 1;
    }
    this.live.set(handed.id, { length: handed.length, sizeClass: wanted });
    this.charge(handed.length);
    this.liveBytes += wanted;
    this.peakLive = Math.max(this.peakLive, this.liveBytes);
    this.highWaterLive = Math.max(this.highWaterLive, this.liveBytes);
    this.trimToLimit();
    this.peakReserved = Math.max(this.peakReserved, this.active + this.cacheBytes);
    return { ok: true, value: { id: handed.id, length: handed.length } };
  }

  /** Takes live buffer `id` off the books: its length. */
  #unlive(id: number): number {
    const entry = this.live.get(id);
    if (entry === undefined) throw new Error(`model: buffer ${id} is not live`);
    this.live.delete(id);
    this.active -= entry.length;
    this.liveBytes -= entry.sizeClass;
    return entry.length;
  }

  /** Frees live buffer `id`: cached while the cache is under its limit, else released. */
  free(id: number): void {
    const length = this.#unlive(id);
    if (this.cacheBytes < this.cacheLimit) this.cache.push({ id, length });
    else this.systemReleases += 1;
  }

  /**
   * Frees live buffer `id` whose view was moved away: released, never cached, its length quarantined until
   * {@link returnQuarantined} (the moved view collected). Returns the bytes quarantined.
   */
  freeQuarantined(id: number): number {
    const length = this.#unlive(id);
    this.systemReleases += 1;
    this.quarantined += length;
    return length;
  }

  /** The backend gave back `bytes` of quarantined memory. */
  returnQuarantined(bytes: number): void {
    if (bytes > this.quarantined) throw new Error(`model: ${bytes} bytes are more than the quarantined`);
    this.quarantined -= bytes;
  }

  override resetPeak(): void {
    super.resetPeak();
    this.peakLive = this.liveBytes;
  }
}
