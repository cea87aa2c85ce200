// The reference model of the segments policy, for the Device's fuzzer: written from the policy's rules
// (segments.ts's documentation, not its code) as plainly as possible: every segment an array of blocks in
// address order, every search a linear scan, no index. It shares no code with @nuvec/allocator, so the fuzzer
// compares two independent derivations after every step.

/** The policy's sizes (the defaults of `SEGMENT_DEFAULTS`, written again). */
export interface SegmentsModelSizes {
  blockRounding: number;
  smallRequest: number;
  smallSegment: number;
  largeSegment: number;
  segmentRounding: number;
  releaseIdleOnMiss: 0 | 1 | 2 | 3;
}

const MIB = 1024 * 1024;

/** `SEGMENT_DEFAULTS` (maxSplitSize 0: none), written again. */
export const MODEL_SEGMENT_SIZES: SegmentsModelSizes = {
  blockRounding: 512,
  smallRequest: MIB,
  smallSegment: 4 * MIB,
  largeSegment: 40 * MIB,
  segmentRounding: 4 * MIB,
  releaseIdleOnMiss: 3,
};

/** The device facts the model needs. */
export interface SegmentsModelFacts {
  workingSet: number;
  memorySize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
}

interface ModelBlock {
  offset: number;
  size: number;
  state: "free" | "live" | "quarantined";
  /** When it was last put among the free blocks (the most recent wins a tie of sizes). */
  freedAt: number;
  /** The rounded request of the live allocation in it. */
  request: number;
}

interface ModelSegment {
  id: number;
  size: number;
  small: boolean;
  blocks: ModelBlock[];
}

/** A live allocation of the model: where it is. */
export interface ModelPlace {
  segment: number;
  offset: number;
  length: number;
}

/** What a malloc gives: the place, or the refusal the Device must throw. */
export type SegmentsOutcome =
  | { ok: true; value: ModelPlace | undefined }
  | { ok: false; refusal: "out-of-memory" | "resource-limit" | "too-large" };

/** The naive model; see the top of this file. */
export class SegmentsModel {
  readonly sizes: SegmentsModelSizes;
  readonly facts: SegmentsModelFacts;
  memoryLimit: number;
  cacheLimit: number;
  gcLimit: number;
  readonly workingSetGcLimit: number;
  segments: ModelSegment[] = [];
  /** Segments with no live block, the least recently idle first. */
  idle: ModelSegment[] = [];
  mappings = new Map<number, number>();
  active = 0;
  mapped = 0;
  peakActive = 0;
  peakActiveWithMapped = 0;
  peakReserved = 0;
  // The highest reserved ever: what releaseIdleOnMiss compares with (no resetPeak moves it).
  highWaterReserved = 0;
  systemAllocations = 0;
  systemReleases = 0;
  cacheHits = 0;
  cacheMisses = 0;
  outOfMemoryRefusals = 0;
  #clock = 0;
  #nextSegment = 1;

  constructor(facts: SegmentsModelFacts, sizes: SegmentsModelSizes = MODEL_SEGMENT_SIZES) {
    this.facts = facts;
    this.sizes = sizes;
    this.workingSetGcLimit = Math.floor(0.95 * facts.workingSet);
    const limit = Math.floor(Math.min(1.5 * facts.workingSet, 0.95 * facts.memorySize));
    this.memoryLimit = limit;
    this.cacheLimit = limit;
    this.gcLimit = Math.min(this.workingSetGcLimit, limit);
  }

  get reserved(): number {
    return this.segments.reduce((sum, segment) => sum + segment.size, 0);
  }

  #isIdle(segment: ModelSegment): boolean {
    return segment.blocks.every((block) => block.state !== "live");
  }

  /** Releases idle segments (of one pool, when `small` is given), the least recently idle first, until `bytes`. */
  #releaseIdle(bytes: number, small?: boolean): void {
    let released = 0;
    for (const segment of [...this.idle]) {
      if (released >= bytes) break;
      if (small !== undefined && segment.small !== small) continue;
      this.idle.splice(this.idle.indexOf(segment), 1);
      this.segments.splice(this.segments.indexOf(segment), 1);
      released += segment.size;
      this.systemReleases += 1;
    }
  }

  #splits(block: ModelBlock, small: boolean, size: number): boolean {
    const rest = block.size - size;
    return small ? rest >= this.sizes.blockRounding : rest > this.sizes.smallRequest;
  }

  malloc(bytes: number): SegmentsOutcome {
    if (bytes === 0) return { ok: true, value: undefined };
    const rounding = this.sizes.blockRounding;
    const size = Math.ceil(bytes / rounding) * rounding;
    if (size > this.facts.maxBufferLength) return { ok: false, refusal: "too-large" };
    const used = this.active + this.mapped;
    if (used + size > this.memoryLimit) {
      this.outOfMemoryRefusals += 1;
      return { ok: false, refusal: "out-of-memory" };
    }
    const small = size <= this.sizes.smallRequest;
    // Best fit: the smallest free block of the pool that holds the request, the most recently freed of a size.
    let best: { segment: ModelSegment; block: ModelBlock } | undefined;
    for (const segment of this.segments) {
      if (segment.small !== small) continue;
      for (const block of segment.blocks) {
        if (block.state !== "free" || block.size < size) continue;
        if (
          best === undefined ||
          block.size < best.block.size ||
          (block.size === best.block.size && block.freedAt > best.block.freedAt)
        )
          best = { segment, block };
      }
    }
    if (best !== undefined) {
      const handed = this.#splits(best.block, small, size) ? size : best.block.size;
      if (used + handed > this.memoryLimit) best = undefined;
      else this.cacheHits += 1;
    }
    if (best === undefined) {
      const sizes = this.sizes;
      let segmentSize = small
        ? sizes.smallSegment
        : size < sizes.largeSegment / 2
          ? sizes.largeSegment
          : Math.ceil(size / sizes.segmentRounding) * sizes.segmentRounding;
      if (segmentSize > this.facts.maxBufferLength) segmentSize = Math.max(size, this.facts.maxBufferLength);
      if (sizes.releaseIdleOnMiss === 1) this.#releaseIdle(Number.POSITIVE_INFINITY, small);
      else if (sizes.releaseIdleOnMiss >= 2 && this.reserved + segmentSize > this.highWaterReserved)
        this.#releaseIdle(sizes.releaseIdleOnMiss === 2 ? Number.POSITIVE_INFINITY : segmentSize, small);
      const excess = this.reserved - this.active + segmentSize - size - this.cacheLimit;
      if (excess > 0) this.#releaseIdle(excess);
      const required = this.reserved + this.mapped + segmentSize;
      if (required >= this.gcLimit) this.#releaseIdle(required - this.gcLimit);
      if (this.segments.length + this.mappings.size >= this.facts.resourceLimit) {
        this.#releaseIdle(Number.POSITIVE_INFINITY);
        if (this.segments.length + this.mappings.size >= this.facts.resourceLimit)
          return { ok: false, refusal: "resource-limit" };
      }
      const segment: ModelSegment = {
        id: this.#nextSegment++,
        size: segmentSize,
        small,
        blocks: [{ offset: 0, size: segmentSize, state: "free", freedAt: 0, request: 0 }],
      };
      this.segments.push(segment);
      this.systemAllocations += 1;
      this.cacheMisses += 1;
      this.peakReserved = Math.max(this.peakReserved, this.reserved);
      this.highWaterReserved = Math.max(this.highWaterReserved, this.reserved);
      best = { segment, block: segment.blocks[0]! };
    }
    const { segment, block } = best;
    const idleAt = this.idle.indexOf(segment);
    if (idleAt >= 0) this.idle.splice(idleAt, 1);
    if (this.#splits(block, small, size)) {
      const rest: ModelBlock = {
        offset: block.offset + size,
        size: block.size - size,
        state: "free",
        freedAt: ++this.#clock,
        request: 0,
      };
      block.size = size;
      segment.blocks.splice(segment.blocks.indexOf(block) + 1, 0, rest);
    }
    block.state = "live";
    block.request = size;
    this.active += block.size;
    this.peakActive = Math.max(this.peakActive, this.active);
    this.peakActiveWithMapped = Math.max(this.peakActiveWithMapped, this.active + this.mapped);
    return { ok: true, value: { segment: segment.id, offset: block.offset, length: block.size } };
  }

  /** Frees the live block at `place` (merged with free neighbours), or quarantines it (`cache` false). */
  free(place: ModelPlace, cache = true): void {
    const segment = this.segments.find((candidate) => candidate.id === place.segment);
    const index = segment?.blocks.findIndex((block) => block.offset === place.offset) ?? -1;
    if (segment === undefined || index < 0 || segment.blocks[index]!.state !== "live")
      throw new Error(`model: no live block at ${JSON.stringify(place)}`);
    const block = segment.blocks[index]!;
    this.active -= block.size;
    if (!cache) block.state = "quarantined";
    else {
      block.state = "free";
      let at = index;
      const before = segment.blocks[at - 1];
      if (before !== undefined && before.state === "free") {
        before.size += block.size;
        segment.blocks.splice(at, 1);
        at -= 1;
      }
      const merged = segment.blocks[at]!;
      const after = segment.blocks[at + 1];
      if (after !== undefined && after.state === "free") {
        merged.size += after.size;
        segment.blocks.splice(at + 1, 1);
      }
      merged.freedAt = ++this.#clock;
    }
    if (this.#isIdle(segment)) this.idle.push(segment);
    const cacheBytes = this.reserved - this.active;
    if (cacheBytes > this.cacheLimit) this.#releaseIdle(cacheBytes - this.cacheLimit);
  }

  mapFile(
    length: number,
    id: number,
  ): { ok: true } | { ok: false; refusal: "out-of-memory" | "resource-limit" } {
    const mappedLength = Math.ceil(length / this.facts.pageSize) * this.facts.pageSize;
    if (this.active + this.mapped + mappedLength > this.memoryLimit) {
      this.outOfMemoryRefusals += 1;
      return { ok: false, refusal: "out-of-memory" };
    }
    if (this.segments.length + this.mappings.size >= this.facts.resourceLimit) {
      this.#releaseIdle(Number.POSITIVE_INFINITY);
      if (this.segments.length + this.mappings.size >= this.facts.resourceLimit)
        return { ok: false, refusal: "resource-limit" };
    }
    this.mappings.set(id, mappedLength);
    this.mapped += mappedLength;
    this.peakActiveWithMapped = Math.max(this.peakActiveWithMapped, this.active + this.mapped);
    return { ok: true };
  }

  release(id: number): void {
    this.mapped -= this.mappings.get(id)!;
    this.mappings.delete(id);
  }

  setMemoryLimit(bytes: number): void {
    this.memoryLimit = bytes;
    this.gcLimit = Math.min(bytes, this.workingSetGcLimit);
  }

  setCacheLimit(bytes: number): void {
    this.cacheLimit = bytes;
    const cacheBytes = this.reserved - this.active;
    if (cacheBytes > bytes) this.#releaseIdle(cacheBytes - bytes);
  }

  clearCache(): void {
    this.#releaseIdle(Number.POSITIVE_INFINITY);
  }

  resetPeak(): void {
    this.peakActive = this.active;
    this.peakActiveWithMapped = this.active + this.mapped;
    this.peakReserved = this.reserved;
  }

  stats(): Record<string, number> {
    return {
      active: this.active,
      peakActive: this.peakActive,
      activeWithMapped: this.active + this.mapped,
      peakActiveWithMapped: this.peakActiveWithMapped,
      cache: this.reserved - this.active,
      reserved: this.reserved,
      peakReserved: this.peakReserved,
      memoryLimit: this.memoryLimit,
      cacheLimit: this.cacheLimit,
      systemAllocations: this.systemAllocations,
      mapped: this.mapped,
    };
  }

  counters(): Record<string, number> {
    let live = 0;
    let free = 0;
    for (const segment of this.segments) {
      for (const block of segment.blocks) {
        if (block.state === "live") live += 1;
        else if (block.state === "free") free += 1;
      }
    }
    return {
      cacheHits: this.cacheHits,
      cacheMisses: this.cacheMisses,
      systemAllocations: this.systemAllocations,
      systemReleases: this.systemReleases,
      outOfMemoryRefusals: this.outOfMemoryRefusals,
      liveBuffers: live,
      cachedBuffers: free,
      mappings: this.mappings.size,
    };
  }
}
