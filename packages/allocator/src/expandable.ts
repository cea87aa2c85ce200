// Expandable segments: one range of address space per pool, reserved once with no memory behind it, whose
// pages are backed with memory only while a block needs them. A miss maps the pages its block lacks instead
// of adding a segment of its own, so the pool stays one contiguous range and a freed block merges with
// whatever is free beside it: reserved memory follows the live peak to within a page per hole, and a second
// pass over a workload finds its pages still mapped. Memory goes back a mapping at a time: one map call is
// one system allocation (one physical allocation on CUDA), and it is unmapped whole once every byte of it
// lies in free blocks.

import { Teardown } from "@nuvec/stats";

/** What a source offers for expandable segments: address space, and memory mapped into it on demand. */
export interface MappingSource<B> {
  /** The unit of `map`/`unmap` offsets and lengths (a power of two). */
  readonly mapGranularity: number;
  /** `capacity` bytes of address space with nothing behind them: a buffer ranges can be made of. */
  reserve(capacity: number): B;
  /** Backs `[offset, offset + length)` of a reserved buffer with memory (one system allocation). */
  map(space: B, offset: number, length: number): void;
  /** Gives back the memory of exactly one earlier `map` call's range. */
  unmap(space: B, offset: number, length: number): void;
}

/** Whether a source can reserve address space and map memory into it (expandable segments). */
export function isMappingSource<S extends object>(source: S): source is S & MappingSource<unknown> {
  const candidate = source as Partial<MappingSource<unknown>>;
  const granularity = candidate.mapGranularity;
  return (
    typeof candidate.reserve === "function" &&
    typeof candidate.map === "function" &&
    typeof candidate.unmap === "function" &&
    typeof granularity === "number" &&
    granularity > 0
  );
}

/**
 * The mapped pages of one reserved range: which map call backs each page, and the bytes mapped. Offsets are
 * bytes from the range's start; every map call's range is a whole number of pages.
 */
export class MappedPages<B> {
  /** Bytes backed by memory now: the range's share of `reserved`. */
  mappedBytes = 0;
  /** Map calls made, and unmap calls made: the system allocations and releases. */
  mapCalls = 0;
  unmapCalls = 0;

  private readonly source: MappingSource<B>;
  private readonly space: B;
  private readonly page: number;
  // The map call (1-based id) backing each page, 0 for none; a call's range is [start, start + length).
  private readonly owner: Int32Array;
  private starts: Float64Array = new Float64Array(64);
  private lengths: Float64Array = new Float64Array(64);
  private freeIds: number[] = [];
  private nextId = 1;
  // One past the highest page ever mapped: growth beyond it is growth of the segment's used extent.
  private highestEnd = 0;
  // Pages [0, prefixEnd) are all mapped.
  private prefixEnd = 0;

  /** `granularity`: the source's `mapGranularity`, as the policy read it. */
  constructor(source: MappingSource<B>, space: B, capacity: number, granularity: number) {
    this.source = source;
    this.space = space;
    this.page = granularity;
    this.owner = new Int32Array(Math.ceil(capacity / this.page));
  }

  /** Whether every page under `[offset, offset + length)` is mapped. */
  covers(offset: number, length: number): boolean {
    // The common case in one comparison: inside the mapped prefix of the space.
    if (offset + length <= this.prefixEnd * this.page) return true;
    const page = this.page;
    const end = Math.ceil((offset + length) / page);
    for (let index = Math.floor(offset / page); index < end; index++) {
      if (this.owner[index] === 0) return false;
    }
    return true;
  }

  /** The bytes that {@link mapRange} would map for `[offset, offset + length)`. */
  missingBytes(offset: number, length: number): number {
    const page = this.page;
    const end = Math.ceil((offset + length) / page);
    let missing = 0;
    for (let index = Math.floor(offset / page); index < end; index++) {
      if (this.owner[index] === 0) missing += page;
    }
    return missing;
  }

  /**
   * Maps every unmapped page under `[offset, offset + length)`, one map call per run of them (counted in
   * `mapCalls`). A call that throws leaves the pages it covered unmapped (those mapped before it stay).
   */
  mapRange(offset: number, length: number, ahead = 0): void {
    const page = this.page;
    const end = Math.ceil((offset + length) / page);
    const limit = this.owner.length;
    let index = Math.floor(offset / page);
    while (index < end) {
      if (this.owner[index] !== 0) {
        index++;
        continue;
      }
      let runEnd = index + 1;
      while (runEnd < end && this.owner[runEnd] === 0) runEnd++;
      // Growing past everything mapped so far: map `ahead` more with it (the next blocks land there).
      if (runEnd === end && runEnd >= this.highestEnd && ahead > 0) {
        const step = Math.ceil(ahead / page);
        const want = Math.min(
          limit,
          Math.max(runEnd, Math.min(Math.ceil(runEnd / step) * step, index + step)),
        );
        while (runEnd < want && this.owner[runEnd] === 0) runEnd++;
      }
      this.source.map(this.space, index * page, (runEnd - index) * page);
      const id = this.newId(index * page, (runEnd - index) * page);
      this.owner.fill(id, index, runEnd);
      if (runEnd > this.highestEnd) this.highestEnd = runEnd;
      if (index <= this.prefixEnd) {
        let prefix = Math.max(this.prefixEnd, runEnd);
        while (prefix < limit && this.owner[prefix] !== 0) prefix++;
        this.prefixEnd = prefix;
      }
      this.mappedBytes += (runEnd - index) * page;
      this.mapCalls++;
      index = runEnd;
    }
  }

  /**
   * Unmaps every map call whose whole range lies inside `[offset, offset + length)` (a free block), until
   * `budget` bytes went back; returns the bytes unmapped. A failing unmap is rethrown after the others ran;
   * its pages leave the books all the same (the source keeps what it could not give back).
   */
  unmapInside(offset: number, length: number, budget: number): number {
    const page = this.page;
    const first = Math.ceil(offset / page);
    const end = Math.floor((offset + length) / page);
    let bytes = 0;
    const teardown = new Teardown();
    let index = first;
    while (index < end && bytes < budget) {
      const id = this.owner[index]!;
      if (id === 0) {
        index++;
        continue;
      }
      const start = this.starts[id]!;
      const size = this.lengths[id]!;
      const startPage = start / page;
      const endPage = startPage + size / page;
      if (startPage < first || endPage > end) {
        index = Math.max(index + 1, endPage);
        continue;
      }
      this.owner.fill(0, startPage, endPage);
      if (startPage < this.prefixEnd) this.prefixEnd = startPage;
      this.freeIds.push(id);
      this.mappedBytes -= size;
      bytes += size;
      this.unmapCalls++;
      teardown.run(() => this.source.unmap(this.space, start, size));
      index = endPage;
    }
    teardown.finish();
    return bytes;
  }

  private newId(start: number, length: number): number {
    let id = this.freeIds.pop();
    if (id === undefined) {
      id = this.nextId++;
      if (id >= this.starts.length) {
        const starts = new Float64Array(this.starts.length * 2);
        starts.set(this.starts);
        this.starts = starts;
        const lengths = new Float64Array(this.lengths.length * 2);
        lengths.set(this.lengths);
        this.lengths = lengths;
      }
    }
    this.starts[id] = start;
    this.lengths[id] = length;
    return id;
  }
}
