import type { CachedBuffer } from "./cached-buffer.js";

/** What `malloc` hands out: a fresh object per call. */
export interface Allocation<B> {
  /** The system buffer; `undefined` for a 0-byte request. */
  readonly buffer: B | undefined;
  /**
   * Bytes of the buffer handed out, charged in `active`: the size class, or the cached buffer's length on a
   * hit (up to 2× the size class).
   */
  readonly allocatedLength: number;
  /** The bytes asked for. */
  readonly length: number;
}

/** A mapped file in the allocator's accounts. */
export interface Mapping {
  /** The file's length in bytes. */
  readonly length: number;
  /** Bytes it is charged in `mapped`: `mappingSize(length, pageSize)`. */
  readonly allocatedLength: number;
}

/** The one implementation of {@link Allocation}: `record` ties it to its buffer's entry in the books. */
export class LiveAllocation<B> implements Allocation<B> {
  // Declared and assigned in the constructor, not as parameter properties: those compile to class fields,
  // which the engine defines (as undefined) in an initializer of their own before the constructor assigns
  // them, and every malloc makes one.
  declare readonly buffer: B | undefined;
  declare readonly allocatedLength: number;
  declare readonly length: number;
  /** Its entry in the books: a cached buffer, or a segment's block under the segments policy. */
  declare readonly record: CachedBuffer<B> | object | undefined;

  constructor(
    buffer: B | undefined,
    allocatedLength: number,
    length: number,
    record: CachedBuffer<B> | object | undefined,
  ) {
    this.buffer = buffer;
    this.allocatedLength = allocatedLength;
    this.length = length;
    this.record = record;
  }
}

/** The one implementation of {@link Mapping}: `live` until the allocator removes it. */
export class LiveMapping implements Mapping {
  live = true;

  constructor(
    readonly length: number,
    readonly allocatedLength: number,
    readonly owner: object,
  ) {}
}
