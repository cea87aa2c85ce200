// The reference model of the segments policy, for the Device's fuzzer: written from the policy's rules
// (segments.ts's documentation, not its code) as plainly as possible: every segment an array of blocks in
// address order, every search a linear scan, no index. It shares no code with @nuvec/allocator, so the fuzzer
// compares two independent derivations after every step. The accounts both models keep alike are in
// model-accounts.ts.

import { ModelAccounts, type ModelFacts, type Outcome } from "./model-accounts.js";

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

/** The naive model; see the top of this file. */
export class SegmentsModel extends ModelAccounts {
  readonly sizes: SegmentsModelSizes;
  segments: ModelSegment[] = [];
  /** Segments with no live block, the least recently idle first. */
  idle: ModelSegment[] = [];
  // The highest reserved ever: what releaseIdleOnMiss compares with (no resetPeak moves it).
  highWaterReserved = 0;
  #clock = 0;
  #nextSegment = 1;

  constructor(facts: ModelFacts, sizes: SegmentsModelSizes = MODEL_SEGMENT_SIZES) {
    super(facts);
    this.sizes = sizes;
  }

  get reserved(): number {
    return this.segments.reduce((sum, segment) => sum + segment.size, 0);
  }

  get cacheBytes(): number {
    return this.reserved - this.active;
  }

  protected get resources(): number {
    return this.segments.length;
  }

  protected get liveBuffers(): number {
    return this.#blocks("live");
  }

  protected get cachedBuffers(): number {
    return this.#blocks("free");
  }

  #blocks(state: ModelBlock["state"]): number {
    return this.segments.reduce(
      (sum, segment) => sum + segment.blocks.filter((block) => block.state === state).length,
      0,
    );
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

  malloc(bytes: number): Outcome<ModelPlace | undefined> {
    if (bytes === 0) return { ok: true, value: undefined };
    const rounding = this.sizes.blockRounding;
    const size = Math.ceil(bytes / rounding) * rounding;
    if (size > this.facts.maxBufferLength) return { ok: false, refusal: "too-large" };
    if (!this.withinLimit(size)) return { ok: false, refusal: "out-of-memory" };
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
      if (this.active + this.mapped + handed > this.memoryLimit) best = undefined;
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
      if (!this.resourceAvailable()) return { ok: false, refusal: "resource-limit" };
      const segment: ModelSegment = {
        id: this.#nextSegment++,
        size: segmentSize,
        small,
        blocks: [{ offset: 0, size: segmentSize, state: "free", freedAt: 0, request: 0 }],
      };
      this.segments.push(segment);
      this.systemAllocations += 1;
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
    this.charge(block.size);
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
    this.trimToLimit();
  }

  protected releaseCache(bytes: number): void {
    this.#releaseIdle(bytes);
  }
}
