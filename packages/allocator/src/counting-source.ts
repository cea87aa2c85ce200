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
