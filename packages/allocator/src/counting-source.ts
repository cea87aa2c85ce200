import { PAGE } from "@nuvec/stats";
import type { BufferSource } from "./buffer-source.js";

/**
 * A buffer source with no memory behind it: buffers are serial numbers. For replays, tests and benchmarks.
 */
export class CountingBufferSource implements BufferSource<number> {
  readonly recommendedMaxWorkingSetSize: number;
  readonly memorySize: number;
  readonly maxBufferLength: number;
  readonly resourceLimit: number;
  readonly pageSize: number;
  /** Buffers made so far. */
  acquired = 0;
  /** Buffers given back so far. */
  released = 0;
  /** Ranges made so far (the segments policy's blocks; they are no system buffers). */
  ranges = 0;

  constructor(facts: {
    workingSet: number;
    memorySize?: number;
    maxBufferLength?: number;
    resourceLimit?: number;
    pageSize?: number;
  }) {
    this.recommendedMaxWorkingSetSize = facts.workingSet;
    this.memorySize = facts.memorySize ?? 2 * facts.workingSet;
    this.maxBufferLength = facts.maxBufferLength ?? Number.MAX_SAFE_INTEGER;
    this.resourceLimit = facts.resourceLimit ?? 499_000;
    this.pageSize = facts.pageSize ?? PAGE;
  }

  acquire(_bytes: number): number {
    return ++this.acquired;
  }

  release(_buffer: number): void {
    this.released++;
  }

  range(_segment: number, _offset: number, _length: number): number {
    return -++this.ranges;
  }
}

/**
 * A {@link CountingBufferSource} that also reserves address space and maps memory into it, as a CUDA device
 * does: the segments policy's large pool is then one expandable segment. Map calls count as `acquired`,
 * unmaps as `released`.
 */
export class CountingMappingSource extends CountingBufferSource {
  /** The unit of map offsets and lengths. */
  readonly mapGranularity: number;
  /** Address ranges reserved so far. */
  reservations = 0;
  readonly #spaces = new Set<number>();

  constructor(facts: ConstructorParameters<typeof CountingBufferSource>[0] & { mapGranularity: number }) {
    super(facts);
    this.mapGranularity = facts.mapGranularity;
  }

  reserve(_capacity: number): number {
    this.reservations++;
    // Apart from buffers (positive) and ranges (small negative serials): the release of a space is no
    // system release.
    const space = Number.MIN_SAFE_INTEGER + this.reservations;
    this.#spaces.add(space);
    return space;
  }

  map(_space: number, _offset: number, _length: number): void {
    this.acquired++;
  }

  unmap(_space: number, _offset: number, _length: number): void {
    this.released++;
  }

  override release(buffer: number): void {
    if (this.#spaces.delete(buffer)) return;
    super.release(buffer);
  }
}
