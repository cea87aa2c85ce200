// The reference model of the allocator's accounts, shared by the allocator's property tests and the Device's
// fuzzer (packages/device/test/reliability, through a relative import). Written from DESIGN.md alone (MLX's
// policy, nuvec's hard limit and the bounded policy), as plainly as possible: the cache is one array in
// caching order, every search is a linear scan. It shares no code with @nuvec/allocator (its size classes
// are written again here), so the tests compare two independent derivations after every step. Only the
// names of the figures it reports are the implementation's (the types below), so the two cannot drift apart.

import type { MemoryStats } from "@nuvec/stats";
import type { AllocatorCounters } from "../src/counters.js";

/** MLX's large-buffer granule (DESIGN.md: `PAGE`). */
export const PAGE = 16384;

/** `allocationSize` of DESIGN.md, written again. */
export function sizeClass(bytes: number): number {
  if (bytes === 0) return 0;
  return bytes > PAGE ? Math.ceil(bytes / PAGE) * PAGE : Math.ceil(bytes / 256) * 256;
}

/** What a step of the model gives: a value, or the refusal the real allocator must throw. */
export type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; refusal: "out-of-memory" | "resource-limit" | "too-large" };

/** The device the model runs on. */
export interface ModelFacts {
  workingSet: number;
  memorySize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
}

/** The policy the model runs: MLX's (default), or the bounded one with its ratio and release order. */
export interface ModelPolicy {
  policy?: "mlx" | "bounded";
  reserveRatio?: number;
  releaseLargest?: boolean;
}

/** A cached buffer: its length, and a name so a test can tell two of one length apart. */
interface Cached {
  id: number;
  length: number;
}

/** The model's `MemoryStats` (the wired fields are residency's, not the allocator's). */
export type ModelStats = Omit<MemoryStats, "wired" | "wiredMapped" | "wiredLimit">;

/** The model's counters (those both the allocator and the Device report). */
export type ModelCounters = Pick<
  AllocatorCounters,
  | "cacheHits"
  | "cacheMisses"
  | "systemAllocations"
  | "systemReleases"
  | "outOfMemoryRefusals"
  | "liveBuffers"
  | "cachedBuffers"
  | "mappings"
>;

/** The naive reference model; see the top of this file. */
export class ReferenceModel {
  readonly facts: ModelFacts;
  readonly workingSetGcLimit: number;
  readonly bounded: boolean;
  readonly reserveRatio: number;
  readonly releaseLargest: boolean;
  active = 0;
  mapped = 0;
  /** Freed buffers the backend holds for a view moved away: in the limit, never reused. */
  quarantined = 0;
  peakActive = 0;
  peakActiveWithMapped = 0;
  memoryLimit: number;
  cacheLimit: number;
  gcLimit: number;
  systemAllocations = 0;
  systemReleases = 0;
  cacheHits = 0;
  outOfMemoryRefusals = 0;
  /** Sum of the size classes of live requests, and its high-water mark (the bounded policy's figures). */
  liveBytes = 0;
  peakLive = 0;
  /** The bounded policy's high-water mark of `liveBytes`: never reset. */
  highWaterLive = 0;
  /** The highest `active + cache` (it grows only when an allocation obtains a system buffer). */
  peakReserved = 0;
  /** Cached buffers, least recently cached first. */
  cache: Cached[] = [];
  /** Live system buffers by id: their length (the cached buffer's on a hit) and the request's size class. */
  live = new Map<number, { length: number; sizeClass: number }>();
  /** Live mappings by id: their mapped length. */
  mappings = new Map<number, number>();
  /** Buffer ids, so that a reused buffer keeps its name. */
  #nextId = 1;

  constructor(facts: ModelFacts, policy: ModelPolicy = {}) {
    this.facts = facts;
    this.bounded = policy.policy === "bounded";
    this.reserveRatio = policy.reserveRatio ?? 1.3;
    this.releaseLargest = policy.releaseLargest ?? false;
    this.workingSetGcLimit = Math.floor(0.95 * facts.workingSet);
    const defaultLimit = Math.floor(Math.min(1.5 * facts.workingSet, 0.95 * facts.memorySize));
    this.memoryLimit = defaultLimit;
    this.cacheLimit = defaultLimit;
    this.gcLimit = Math.min(this.workingSetGcLimit, defaultLimit);
  }

  get cacheBytes(): number {
    return this.cache.reduce((sum, buffer) => sum + buffer.length, 0);
  }

  /** MLX's `release_cached_buffers`: oldest first until `bytes` are freed, all of them from 90% on. */
  #releaseCached(bytes: number): void {
    if (bytes >= 0.9 * this.cacheBytes) {
      this.#clear();
      return;
    }
    let freed = 0;
    while (this.cache.length > 0 && freed < bytes) {
      const oldest = this.cache.shift()!;
      freed += oldest.length;
      this.systemReleases += 1;
    }
  }

  #clear(): void {
    this.systemReleases += this.cache.length;
    this.cache = [];
  }

  /** The bounded policy's choice: the least recently cached buffer, or the oldest of the largest length. */
  #releaseOne(): void {
    let chosen = 0;
    if (this.releaseLargest) {
      this.cache.forEach((buffer, index) => {
        if (buffer.length > this.cache[chosen]!.length) chosen = index;
      });
    }
    this.cache.splice(chosen, 1);
    this.systemReleases += 1;
  }

  /** MLX counts live, cached and (nuvec) mapped resources against the device's limit. */
  #resourceAvailable(): boolean {
    if (this.live.size + this.cache.length + this.mappings.size < this.facts.resourceLimit) return true;
    this.#clear();
    return this.live.size + this.mappings.size < this.facts.resourceLimit;
  }

  /** A request of `bytes`: the id of the system buffer handed out and its length, or a refusal. */
  malloc(bytes: number): Outcome<{ id: number; length: number } | undefined> {
    if (bytes === 0) return { ok: true, value: undefined };
    const wanted = sizeClass(bytes);
    if (wanted > this.facts.maxBufferLength) return { ok: false, refusal: "too-large" };
    const used = this.active + this.mapped + this.quarantined;
    if (used + wanted > this.memoryLimit) {
      this.outOfMemoryRefusals += 1;
      return { ok: false, refusal: "out-of-memory" };
    }
    // Reuse: the smallest length in [n, limit), the least recently cached of that length; MLX's limit is
    // min(2n, n + 2·PAGE), the bounded policy's 2n.
    const limit = this.bounded ? 2 * wanted : Math.min(2 * wanted, wanted + 2 * PAGE);
    let chosen = -1;
    this.cache.forEach((buffer, index) => {
      if (buffer.length < wanted || buffer.length >= limit) return;
      if (chosen < 0 || buffer.length < this.cache[chosen]!.length) chosen = index;
    });
    let handed: Cached;
    if (chosen >= 0 && used + this.cache[chosen]!.length <= this.memoryLimit) {
      handed = this.cache.splice(chosen, 1)[0]!;
      this.cacheHits += 1;
    } else {
      if (this.bounded) {
        const bound = this.reserveRatio * Math.max(this.highWaterLive, this.liveBytes + wanted);
        while (this.cache.length > 0 && this.active + this.cacheBytes + wanted > bound) this.#releaseOne();
      }
      const required = this.active + this.mapped + this.cacheBytes + wanted;
      if (required >= this.gcLimit) this.#releaseCached(required - this.gcLimit);
      if (!this.#resourceAvailable()) return { ok: false, refusal: "resource-limit" };
      handed = { id: this.#nextId++, length: wanted };
      this.systemAllocations += 1;
    }
    this.live.set(handed.id, { length: handed.length, sizeClass: wanted });
    this.active += handed.length;
    this.peakActive = Math.max(this.peakActive, this.active);
    this.peakActiveWithMapped = Math.max(this.peakActiveWithMapped, this.active + this.mapped);
    this.liveBytes += wanted;
    this.peakLive = Math.max(this.peakLive, this.liveBytes);
    this.highWaterLive = Math.max(this.highWaterLive, this.liveBytes);
    if (this.cacheBytes > this.cacheLimit) this.#releaseCached(this.cacheBytes - this.cacheLimit);
    this.peakReserved = Math.max(this.peakReserved, this.active + this.cacheBytes);
    return { ok: true, value: { id: handed.id, length: handed.length } };
  }

  /** Frees live buffer `id`: cached while the cache is under its limit, else released. */
  free(id: number): void {
    const entry = this.live.get(id);
    if (entry === undefined) throw new Error(`model: buffer ${id} is not live`);
    this.live.delete(id);
    this.active -= entry.length;
    this.liveBytes -= entry.sizeClass;
    if (this.cacheBytes < this.cacheLimit) this.cache.push({ id, length: entry.length });
    else this.systemReleases += 1;
  }

  /**
   * Frees live buffer `id` whose view was moved away: released, never cached, its length quarantined until
   * {@link returnQuarantined} (the moved view collected). Returns the bytes quarantined.
   */
  freeQuarantined(id: number): number {
    const entry = this.live.get(id);
    if (entry === undefined) throw new Error(`model: buffer ${id} is not live`);
    this.live.delete(id);
    this.active -= entry.length;
    this.liveBytes -= entry.sizeClass;
    this.systemReleases += 1;
    this.quarantined += entry.length;
    return entry.length;
  }

  /** The backend gave back `bytes` of quarantined memory. */
  returnQuarantined(bytes: number): void {
    if (bytes > this.quarantined) throw new Error(`model: ${bytes} bytes are more than the quarantined`);
    this.quarantined -= bytes;
  }

  /** A mapping of a file of `length` bytes under `id`: its mapped length, or a refusal. */
  mapFile(length: number, id: number): Outcome<number> {
    const mappedLength = Math.ceil(length / this.facts.pageSize) * this.facts.pageSize;
    if (this.active + this.mapped + this.quarantined + mappedLength > this.memoryLimit) {
      this.outOfMemoryRefusals += 1;
      return { ok: false, refusal: "out-of-memory" };
    }
    if (!this.#resourceAvailable()) return { ok: false, refusal: "resource-limit" };
    this.mappings.set(id, mappedLength);
    this.mapped += mappedLength;
    this.peakActiveWithMapped = Math.max(this.peakActiveWithMapped, this.active + this.mapped);
    return { ok: true, value: mappedLength };
  }

  /** Releases mapping `id`. */
  release(id: number): void {
    const mappedLength = this.mappings.get(id);
    if (mappedLength === undefined) throw new Error(`model: mapping ${id} is not live`);
    this.mappings.delete(id);
    this.mapped -= mappedLength;
  }

  setMemoryLimit(bytes: number): number {
    const previous = this.memoryLimit;
    this.memoryLimit = bytes;
    this.gcLimit = Math.min(bytes, this.workingSetGcLimit);
    return previous;
  }

  setCacheLimit(bytes: number): number {
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    if (this.cacheBytes > bytes) this.#releaseCached(this.cacheBytes - bytes);
    return previous;
  }

  clearCache(): void {
    this.#clear();
  }

  resetPeak(): void {
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.active + this.cacheBytes;
    this.peakLive = this.liveBytes;
  }

  stats(): ModelStats {
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
      quarantined: this.quarantined,
    };
  }

  counters(): ModelCounters {
    return {
      cacheHits: this.cacheHits,
      cacheMisses: this.systemAllocations,
      systemAllocations: this.systemAllocations,
      systemReleases: this.systemReleases,
      outOfMemoryRefusals: this.outOfMemoryRefusals,
      liveBuffers: this.live.size,
      cachedBuffers: this.cache.length,
      mappings: this.mappings.size,
    };
  }
}
