import type { MockMemoryHandle, NativeBuffer } from "@nuvec/native-core";
import { allocationFailed, checkViewLength, offsetHandle, releasedError } from "@nuvec/native-core";
import type { MockCore } from "./core.js";
import { mockMemoryHandle } from "./handles.js";
import { detachArrayBuffer, viewOfLength } from "./support.js";

/**
 * The memory a `contents(length)` hands out: `memory` itself when it has that length, else a view of that
 * length holding its bytes (see `viewOfLength`). Real memory only within the backend's `realMemoryUpTo`.
 */
function contentsOf(
  core: MockCore,
  label: string,
  total: number,
  memory: ArrayBuffer | undefined,
  length: number,
): ArrayBuffer {
  checkViewLength(length, total);
  if (memory === undefined && total > core.realMemoryUpTo) {
    throw allocationFailed(
      total,
      `${label}.contents(): the mock gives real memory only to buffers of up to ` +
        `${core.realMemoryUpTo} bytes (option realMemoryUpTo), this one has ${total}`,
    );
  }
  return viewOfLength(memory, length);
}

/**
 * A pretend device buffer made by {@link MockBackend.newBuffer}. No memory stands behind it until
 * `contents()` is called, and only for buffers of at most `realMemoryUpTo` bytes, so a test can make
 * buffers of many gigabytes.
 */
export class MockBuffer implements NativeBuffer {
  /** Its number among the backend's buffers, from 1. */
  readonly id: number;
  /** `"buffer#<id>"`: how the call log names it. */
  readonly label: string;
  readonly length: number;
  readonly allocatedSize: number;
  readonly #core: MockCore;
  #memory: ArrayBuffer | undefined;
  #released = false;
  #detachments = 0;
  #liveRanges = 0;

  /** Made by {@link MockBackend.newBuffer} only. */
  constructor(core: MockCore, id: number, length: number, allocatedSize: number) {
    this.#core = core;
    this.id = id;
    this.label = `buffer#${id}`;
    this.length = length;
    this.allocatedSize = allocatedSize;
  }

  get released(): boolean {
    return this.#released;
  }

  /** Whether real memory stands behind it (`contents()` was called at least once). */
  get hasMemory(): boolean {
    return this.#memory !== undefined;
  }

  /** How many `ArrayBuffer`s were detached so far (by `detachContents()` and `release()`). */
  get detachments(): number {
    return this.#detachments;
  }

  /**
   * The buffer's first `length` bytes (default: all, zeros at first) as an `ArrayBuffer`, the same one on
   * every call with that length until it is detached (a view of another length detaches it: see
   * `viewOfLength`). Throws a `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`) for a buffer larger than the backend's
   * `realMemoryUpTo`, and a `StateError` (`ERR_NUVEC_RELEASED`) after release.
   */
  contents(length: number = this.length): ArrayBuffer {
    return this.#core.run("buffer.contents", this.label, undefined, () => {
      this.#assertLive("contents");
      this.#memory = contentsOf(this.#core, this.label, this.length, this.#memory, length);
      return this.#memory;
    });
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay and the next `contents()` gives a new one. */
  detachContents(): void {
    this.#core.run("buffer.detachContents", this.label, undefined, () => {
      this.#assertLive("detachContents");
      if (this.#memory !== undefined) {
        // After the holder moved the ArrayBuffer away, its bytes went with it: the next contents() is fresh
        // zeros (the mock cannot keep memory that JavaScript took: DECISIONS.md).
        this.#memory = detachArrayBuffer(this.#memory, this.length);
        this.#detachments += 1;
      }
    });
  }

  /**
   * Synthetic pointers, distinct for every allocation of this backend and never valid addresses (see
   * MOCK.md): a runtime's plumbing can pass them around, no kernel can run on them.
   */
  nativeHandle(): MockMemoryHandle {
    return this.#core.run("buffer.nativeHandle", this.label, undefined, () => {
      this.#assertLive("nativeHandle");
      return mockMemoryHandle("buffer", this.id);
    });
  }

  /** Gives the pretend memory back and detaches every view. A second call throws `StateError` (`ERR_NUVEC_RELEASED`). */
  release(): void {
    this.#core.run("buffer.release", this.label, undefined, () => {
      this.#assertLive("release");
      this.#released = true;
      if (this.#memory !== undefined) {
        detachArrayBuffer(this.#memory, this.length);
        this.#memory = undefined;
        this.#detachments += 1;
      }
      // A segment with live ranges keeps its memory (and stays in the counters) until the last one goes.
      if (this.#liveRanges === 0) this.#giveBack();
    });
  }

  /** Ranges of this buffer not released yet (`newBufferRange`). */
  get liveRanges(): number {
    return this.#liveRanges;
  }

  /** A range of this buffer was made. */
  rangeMade(): void {
    this.#liveRanges += 1;
  }

  /** A range of this buffer was released: the last one lets a released buffer's memory go. */
  rangeReleased(): void {
    this.#liveRanges -= 1;
    if (this.#liveRanges === 0 && this.#released) this.#giveBack();
  }

  #giveBack(): void {
    const counters = this.#core.counters;
    counters.buffersReleased += 1;
    counters.bufferBytes -= this.allocatedSize;
    this.#core.allocations.delete(this);
  }

  #assertLive(method: string): void {
    if (this.#released) {
      throw releasedError(`${this.label}.${method}(): the buffer was already released`);
    }
  }
}

/**
 * A range of a {@link MockBuffer} (`MockBackend.newBufferRange`). JavaScript cannot make an `ArrayBuffer`
 * over part of another, so the mock's range has bytes of its own (zeros at first, up to `realMemoryUpTo`):
 * what it shows of a range's life (views detached on `detachContents()` and `release()`, the segment kept
 * while the range lives, the handle at the segment's pointers moved by the offset) is the real backends'.
 */
export class MockBufferRange implements NativeBuffer {
  readonly length: number;
  readonly allocatedSize: number;
  /** The buffer this is a range of. */
  readonly segment: MockBuffer;
  /** Where it begins in the segment. */
  readonly offset: number;
  /** `"<segment>+<offset>"`: how the call log names it. */
  readonly label: string;
  readonly #core: MockCore;
  #memory: ArrayBuffer | undefined;
  #released = false;

  /** Made by {@link MockBackend.newBufferRange} only (arguments checked there). */
  constructor(core: MockCore, segment: MockBuffer, offset: number, length: number) {
    this.#core = core;
    this.segment = segment;
    this.offset = offset;
    this.length = length;
    this.allocatedSize = length;
    this.label = `${segment.label}+${offset}`;
    segment.rangeMade();
  }

  get released(): boolean {
    return this.#released;
  }

  /**
   * The range's first `length` bytes (default: all; its own in the mock: see the class), the same
   * `ArrayBuffer` until detached.
   */
  contents(length: number = this.length): ArrayBuffer {
    return this.#core.run("range.contents", this.label, undefined, () => {
      this.#assertLive("contents");
      this.#memory = contentsOf(this.#core, this.label, this.length, this.#memory, length);
      return this.#memory;
    });
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay. */
  detachContents(): void {
    this.#core.run("range.detachContents", this.label, undefined, () => {
      this.#assertLive("detachContents");
      if (this.#memory !== undefined) this.#memory = detachArrayBuffer(this.#memory, this.length);
    });
  }

  /** The segment's synthetic pointers moved by the offset. */
  nativeHandle(): MockMemoryHandle {
    return this.#core.run("range.nativeHandle", this.label, undefined, () => {
      this.#assertLive("nativeHandle");
      return offsetHandle(mockMemoryHandle("buffer", this.segment.id), this.offset);
    });
  }

  /** Gives the range back (the segment's memory stays while the segment lives). A second call throws. */
  release(): void {
    this.#core.run("range.release", this.label, undefined, () => {
      this.#assertLive("release");
      this.#released = true;
      if (this.#memory !== undefined) {
        detachArrayBuffer(this.#memory, this.length);
        this.#memory = undefined;
      }
      this.segment.rangeReleased();
    });
  }

  #assertLive(method: string): void {
    if (this.#released) {
      throw releasedError(`${this.label}.${method}(): the buffer range was already released`);
    }
  }
}
