import type { MockMemoryHandle, NativeBuffer } from "@nuvec/native-core";
import {
  allocationFailed,
  checkReadSpan,
  checkViewLength,
  checkWriteSpan,
  offsetHandle,
  releasedError,
} from "@nuvec/native-core";
import type { MockCore } from "./core.js";
import { mockMemoryHandle } from "./handles.js";
import { detachArrayBuffer, viewOfLength } from "./support.js";

/**
 * The bytes of a mock buffer or range and the `ArrayBuffer` holding them, made on first use (real memory only
 * within the backend's `realMemoryUpTo`). `contents(length)` hands that `ArrayBuffer` out as the view (the
 * mock keeps one view length at a time: see `viewOfLength`); `read` and `write` copy and hand nothing out, so
 * a later `detach()` finds a view only where `contents()` made one.
 */
class MockBytes {
  readonly #core: MockCore;
  readonly #label: string;
  readonly #length: number;
  #memory: ArrayBuffer | undefined;
  // Whether `#memory` is out as a view (`contents()`) and not detached since.
  #viewed = false;

  constructor(core: MockCore, label: string, length: number) {
    this.#core = core;
    this.#label = label;
    this.#length = length;
  }

  get hasMemory(): boolean {
    return this.#memory !== undefined;
  }

  /** `contents(length)`: the view of the first `length` bytes, the same one until detached. */
  view(length: number): ArrayBuffer {
    checkViewLength(length, this.#length);
    this.#assertRealMemory("contents");
    this.#memory = viewOfLength(this.#memory, length);
    this.#viewed = true;
    return this.#memory;
  }

  /** Detaches the view handed out, keeping its bytes; returns whether there was one. */
  detach(): boolean {
    if (!this.#viewed || this.#memory === undefined) return false;
    this.#viewed = false;
    // After the holder moved the ArrayBuffer away, its bytes went with it: the next contents() is fresh
    // zeros (the mock cannot keep memory that JavaScript took: DECISIONS.md).
    this.#memory = detachArrayBuffer(this.#memory, this.#length);
    return true;
  }

  /** Drops the memory (release), detaching the view; returns whether there was one. */
  drop(): boolean {
    const viewed = this.#viewed && this.#memory !== undefined;
    if (viewed) detachArrayBuffer(this.#memory as ArrayBuffer, this.#length);
    this.#memory = undefined;
    this.#viewed = false;
    return viewed;
  }

  /** `read(offset, length)`: a copy; bytes past the memory's end (a shorter view's) are zeros, as `contents()` shows them. */
  read(offset: number, length: number): Uint8Array {
    checkReadSpan(offset, length, this.#length);
    this.#assertRealMemory("read");
    const copy = new Uint8Array(length);
    const memory = this.#memory;
    const available = memory === undefined ? 0 : Math.min(length, memory.byteLength - offset);
    if (available > 0) copy.set(new Uint8Array(memory as ArrayBuffer, offset, available));
    return copy;
  }

  /** `write(source, offset)`: the bytes copied in; memory made (or widened to the whole length) only when needed. */
  write(source: ArrayBuffer | ArrayBufferView, offset: number): void {
    checkWriteSpan(source, offset, this.#length);
    this.#assertRealMemory("write");
    let bytes = ArrayBuffer.isView(source)
      ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength)
      : new Uint8Array(source);
    if (bytes.byteLength === 0) return;
    const memory = this.#memory;
    if (memory === undefined || memory.byteLength < offset + bytes.byteLength) {
      // The memory is missing, moved away, or a shorter view's: widen it to the whole length (which detaches
      // that shorter view, as contents() of another length does), copying the source first in case it is a
      // view of that memory.
      bytes = bytes.slice();
      this.#memory = viewOfLength(memory, this.#length);
      this.#viewed = false;
    }
    new Uint8Array(this.#memory as ArrayBuffer).set(bytes, offset);
  }

  #assertRealMemory(method: string): void {
    if (this.#memory === undefined && this.#length > this.#core.realMemoryUpTo) {
      throw allocationFailed(
        this.#length,
        `${this.#label}.${method}(): the mock gives real memory only to buffers of up to ` +
          `${this.#core.realMemoryUpTo} bytes (option realMemoryUpTo), this one has ${this.#length}`,
      );
    }
  }
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
  readonly #bytes: MockBytes;
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
    this.#bytes = new MockBytes(core, this.label, length);
  }

  get released(): boolean {
    return this.#released;
  }

  /** Whether real memory stands behind it (made by the first `contents()` or `write()`). */
  get hasMemory(): boolean {
    return this.#bytes.hasMemory;
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
      return this.#bytes.view(length);
    });
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay and the next `contents()` gives a new one. */
  detachContents(): void {
    this.#core.run("buffer.detachContents", this.label, undefined, () => {
      this.#assertLive("detachContents");
      if (this.#bytes.detach()) this.#detachments += 1;
    });
  }

  /**
   * A copy of `length` bytes from `offset` (default: to the end), handing out no view. The addon's checks and
   * errors: an `ArgumentError` for a span outside the buffer, `OutOfMemoryError` past `realMemoryUpTo`,
   * `StateError` after release.
   */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    return this.#core.run("buffer.read", this.label, undefined, () => {
      this.#assertLive("read");
      return this.#bytes.read(offset, length);
    });
  }

  /** Copies `source` in at `offset` (default 0), handing out no view; errors as `read`'s. */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.#core.run("buffer.write", this.label, undefined, () => {
      this.#assertLive("write");
      this.#bytes.write(source, offset);
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
      if (this.#bytes.drop()) this.#detachments += 1;
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
  readonly #bytes: MockBytes;
  #released = false;

  /** Made by {@link MockBackend.newBufferRange} only (arguments checked there). */
  constructor(core: MockCore, segment: MockBuffer, offset: number, length: number) {
    this.#core = core;
    this.segment = segment;
    this.offset = offset;
    this.length = length;
    this.allocatedSize = length;
    this.label = `${segment.label}+${offset}`;
    this.#bytes = new MockBytes(core, this.label, length);
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
      return this.#bytes.view(length);
    });
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay. */
  detachContents(): void {
    this.#core.run("range.detachContents", this.label, undefined, () => {
      this.#assertLive("detachContents");
      this.#bytes.detach();
    });
  }

  /** A copy of the range's bytes (its own: see the class), as {@link MockBuffer.read}. */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    return this.#core.run("range.read", this.label, undefined, () => {
      this.#assertLive("read");
      return this.#bytes.read(offset, length);
    });
  }

  /** Copies `source` into the range at `offset`, as {@link MockBuffer.write}. */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.#core.run("range.write", this.label, undefined, () => {
      this.#assertLive("write");
      this.#bytes.write(source, offset);
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
      this.#bytes.drop();
      this.segment.rangeReleased();
    });
  }

  #assertLive(method: string): void {
    if (this.#released) {
      throw releasedError(`${this.label}.${method}(): the buffer range was already released`);
    }
  }
}
