// The accounts both reference models keep alike (test/reference-model.ts for MLX's and the bounded policy,
// test/segments-model.ts for the segments policy), written from DESIGN.md: the limits from the device, the
// hard memory limit, mapped files, the resource limit, the peaks and the counters. Each model adds how its
// policy holds memory. It shares no code with @nuvec/allocator; only the names of the figures it reports are
// the implementation's (the types below), so the two cannot drift apart.

import type { MemoryStats } from "@nuvec/stats";
import type { AllocatorCounters } from "../src/counters.js";

/** The device a model runs on. */
export interface ModelFacts {
  workingSet: number;
  memorySize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
}

/** What a step of a model gives: a value, or the refusal the real allocator must throw. */
export type Outcome<T> =
  | { ok: true; value: T }
  | { ok: false; refusal: "out-of-memory" | "resource-limit" | "too-large" };

/** A model's `MemoryStats` (the wired fields are residency's, not the allocator's). */
export type ModelStats = Omit<MemoryStats, "wired" | "wiredMapped" | "wiredLimit">;

/** A model's counters (those both the allocator and the Device report). */
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

/** The accounts every policy keeps; a model says how its cache is held and released. */
export abstract class ModelAccounts {
  readonly facts: ModelFacts;
  readonly workingSetGcLimit: number;
  memoryLimit: number;
  cacheLimit: number;
  gcLimit: number;
  active = 0;
  mapped = 0;
  /** Freed memory the backend holds for a view moved away: in the limit, never reused. */
  quarantined = 0;
  peakActive = 0;
  peakActiveWithMapped = 0;
  /** The highest `active + cache` (it grows only when an allocation obtains system memory). */
  peakReserved = 0;
  systemAllocations = 0;
  systemReleases = 0;
  cacheHits = 0;
  outOfMemoryRefusals = 0;
  /** Live mappings by id: their mapped length. */
  mappings = new Map<number, number>();

  constructor(facts: ModelFacts) {
    this.facts = facts;
    this.workingSetGcLimit = Math.floor(0.95 * facts.workingSet);
    const defaultLimit = Math.floor(Math.min(1.5 * facts.workingSet, 0.95 * facts.memorySize));
    this.memoryLimit = defaultLimit;
    this.cacheLimit = defaultLimit;
    this.gcLimit = Math.min(this.workingSetGcLimit, defaultLimit);
  }

  /** Bytes held for reuse. */
  abstract get cacheBytes(): number;
  /** System resources held besides the mappings (live and cached buffers, or segments). */
  protected abstract get resources(): number;
  protected abstract get liveBuffers(): number;
  protected abstract get cachedBuffers(): number;
  /** Releases cached memory, the policy's way, until at least `bytes` are gone (all of it for Infinity). */
  protected abstract releaseCache(bytes: number): void;

  clearCache(): void {
    this.releaseCache(Number.POSITIVE_INFINITY);
  }

  /** Releases what the cache holds beyond its limit. */
  protected trimToLimit(): void {
    if (this.cacheBytes > this.cacheLimit) this.releaseCache(this.cacheBytes - this.cacheLimit);
  }

  setCacheLimit(bytes: number): number {
    const previous = this.cacheLimit;
    this.cacheLimit = bytes;
    this.trimToLimit();
    return previous;
  }

  /** Whether `bytes` more stay within the hard memory limit; a refusal is counted. */
  protected withinLimit(bytes: number): boolean {
    if (this.active + this.mapped + this.quarantined + bytes <= this.memoryLimit) return true;
    this.outOfMemoryRefusals += 1;
    return false;
  }

  /** MLX counts live, cached and (nuvec) mapped resources against the device's limit; the cache goes first. */
  protected resourceAvailable(): boolean {
    if (this.resources + this.mappings.size < this.facts.resourceLimit) return true;
    this.clearCache();
    return this.resources + this.mappings.size < this.facts.resourceLimit;
  }

  /** Hands out `bytes` more: active and its peaks. */
  protected charge(bytes: number): void {
    this.active += bytes;
    this.peakActive = Math.max(this.peakActive, this.active);
    this.peakActiveWithMapped = Math.max(this.peakActiveWithMapped, this.active + this.mapped);
  }

  /** A mapping of a file of `length` bytes under `id`: its mapped length, or a refusal. */
  mapFile(length: number, id: number): Outcome<number> {
    const mappedLength = Math.ceil(length / this.facts.pageSize) * this.facts.pageSize;
    if (!this.withinLimit(mappedLength)) return { ok: false, refusal: "out-of-memory" };
    if (!this.resourceAvailable()) return { ok: false, refusal: "resource-limit" };
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

  resetPeak(): void {
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.active + this.cacheBytes;
  }

  /** The figures, also indexable by name (a fuzzer compares them field by field). */
  stats(): ModelStats & Record<string, number> {
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

  counters(): ModelCounters & Record<string, number> {
    return {
      cacheHits: this.cacheHits,
      cacheMisses: this.systemAllocations,
      systemAllocations: this.systemAllocations,
      systemReleases: this.systemReleases,
      outOfMemoryRefusals: this.outOfMemoryRefusals,
      liveBuffers: this.liveBuffers,
      cachedBuffers: this.cachedBuffers,
      mappings: this.mappings.size,
    };
  }
}
