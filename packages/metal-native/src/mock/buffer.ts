import type { MockMemoryHandle, NativeBuffer } from "@nuvec/native-core";
import {
  allocationFailed,
  checkReadSpan,
  checkViewLength,
  checkWriteSpan,
  lookAlike,
  offsetHandle,
  releasedError,
} from "@nuvec/native-core";
import type { MockCallName } from "./calls.js";
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

  /**
   * All the bytes, for a stream's operation: the memory itself (made, or widened to the whole length, as
   * `write` does), so that a view handed out sees what the operation wrote.
   */
  whole(): Uint8Array {
    this.#assertRealMemory("stream operation");
    const memory = this.#memory;
    if (memory === undefined || memory.byteLength < this.#length) {
      this.#memory = viewOfLength(memory, this.#length);
      this.#viewed = false;
    }
    return new Uint8Array(this.#memory as ArrayBuffer);
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
 * What a mock buffer and a mock range share: their bytes (see `MockBytes`) and the calls on them, each run
 * through the backend's call log as `<kind>.<call>` and refused with a `StateError` (`ERR_NUVEC_RELEASED`)
 * after release. What differs is where the handle points and what release gives back.
 */
let hasMemoryBrand: (value: object) => boolean;

type MemoryMethod = "contents" | "detachContents" | "read" | "write" | "nativeHandle" | "release";

/**
 * Each kind's call names, made once: a name built per call (`${kind}.${method}`) is a new string that the
 * call log's lookup must hash first, which costs more than the rest of a buffer's release.
 */
const CALL_NAMES: Record<"buffer" | "range", Record<MemoryMethod, MockCallName>> = {
  buffer: {
    contents: "buffer.contents",
    detachContents: "buffer.detachContents",
    read: "buffer.read",
    write: "buffer.write",
    nativeHandle: "buffer.nativeHandle",
    release: "buffer.release",
  },
  range: {
    contents: "range.contents",
    detachContents: "range.detachContents",
    read: "range.read",
    write: "range.write",
    nativeHandle: "range.nativeHandle",
    release: "range.release",
  },
};
let memoryHold: (memory: MockMemory) => MockStreamHold;

/**
 * What a stream's operation needs of an allocation it names: the bytes, and a hold that keeps the memory (and
 * its place in the counters) after a `release()` until the operation has run or was dropped. Internal.
 */
export interface MockStreamHold {
  /** The allocation's bytes (all of them), the memory itself. */
  bytes(): Uint8Array;
  /** One more operation names it. */
  hold(): void;
  /** An operation that named it ran or was dropped; the last one lets a released allocation's memory go. */
  letGo(): void;
}

/** The stream hold of a mock buffer or range (see {@link MockStreamHold}). Internal. */
export function streamHoldOf(memory: MockMemory): MockStreamHold {
  return memoryHold(memory);
}

/** Whether `value` is a buffer or range a mock backend made (a brand check: no `Object.create`, no Proxy). */
export function isMockMemory(value: unknown): value is MockMemory {
  return typeof value === "object" && value !== null && hasMemoryBrand(value);
}

/** The `this` of a mock buffer's method or getter: a real one, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (!isMockMemory(value)) throw lookAlike(operation, "this", "a buffer of a mock backend");
}

export abstract class MockMemory implements NativeBuffer {
  readonly length: number;
  readonly allocatedSize: number;
  /** How the call log names it: `"buffer#<id>"`, `"<segment>+<offset>"`. */
  readonly label: string;
  readonly #core: MockCore;
  readonly #kind: "buffer" | "range";
  readonly #calls: Record<MemoryMethod, MockCallName>;
  // Made on first use: most buffers of a replay or a test never show their bytes.
  #bytesMade: MockBytes | undefined = undefined;
  #released = false;
  // Operations of streams that name it and have not run; a release meanwhile waits for them (#releasing).
  #holds = 0;
  #releasing = false;

  static {
    hasMemoryBrand = (value) => #released in value;
    memoryHold = (memory) => ({
      bytes: () => memory.#bytes.whole(),
      hold: () => {
        memory.#holds += 1;
      },
      letGo: () => {
        memory.#holds -= 1;
        if (memory.#holds === 0 && memory.#releasing) {
          memory.#releasing = false;
          memory.#bytesMade?.drop();
          memory.giveBack();
        }
      },
    });
  }

  protected constructor(
    core: MockCore,
    kind: "buffer" | "range",
    label: string,
    length: number,
    allocatedSize: number,
  ) {
    this.#core = core;
    this.#kind = kind;
    this.#calls = CALL_NAMES[kind];
    this.label = label;
    this.length = length;
    this.allocatedSize = allocatedSize;
  }

  get #bytes(): MockBytes {
    if (this.#bytesMade === undefined) this.#bytesMade = new MockBytes(this.#core, this.label, this.length);
    return this.#bytesMade;
  }

  get released(): boolean {
    checkThis(this, "released");
    return this.#released;
  }

  /** Whether real memory stands behind it (made by the first `contents()` or `write()`). */
  get hasMemory(): boolean {
    checkThis(this, "hasMemory");
    return this.#bytesMade?.hasMemory === true;
  }

  /**
   * The first `length` bytes (default: all, zeros at first) as an `ArrayBuffer`, the same one on every call
   * with that length until it is detached (a view of another length detaches it: see `viewOfLength`).
   * Throws a `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`) past the backend's `realMemoryUpTo`.
   */
  contents(length: number = this.length): ArrayBuffer {
    checkThis(this, "contents()");
    return this.#core.run(this.#calls.contents, this.label, undefined, () => {
      this.#assertLive("contents");
      return this.#bytes.view(length);
    });
  }

  /** Detaches the `ArrayBuffer` handed out so far; the bytes stay for the next `contents()`. */
  detachContents(): void {
    checkThis(this, "detachContents()");
    this.#core.run(this.#calls.detachContents, this.label, undefined, () => {
      this.#assertLive("detachContents");
      if (this.#bytesMade?.detach() === true) this.viewDetached();
    });
  }

  /**
   * A copy of `length` bytes from `offset` (default: to the end), handing out no view. The addon's checks and
   * errors: an `ArgumentError` for a span outside, `OutOfMemoryError` past `realMemoryUpTo`.
   */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    checkThis(this, "read()");
    return this.#core.run(this.#calls.read, this.label, undefined, () => {
      this.#assertLive("read");
      return this.#bytes.read(offset, length);
    });
  }

  /** Copies `source` in at `offset` (default 0), handing out no view; errors as `read`'s. */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    checkThis(this, "write()");
    this.#core.run(this.#calls.write, this.label, undefined, () => {
      this.#assertLive("write");
      this.#bytes.write(source, offset);
    });
  }

  /**
   * Synthetic pointers, distinct for every allocation of this backend and never valid addresses (see
   * MOCK.md): a runtime's plumbing can pass them around, no kernel can run on them.
   */
  nativeHandle(): MockMemoryHandle {
    checkThis(this, "nativeHandle()");
    return this.#core.run(this.#calls.nativeHandle, this.label, undefined, () => {
      this.#assertLive("nativeHandle");
      return this.handle();
    });
  }

  /**
   * Gives the memory back and detaches every view. A second call throws. While operations of a stream that
   * name it have not run, the memory stays (and stays in the counters) until the last of them ran or was
   * dropped; JavaScript is cut off at once.
   */
  release(): void {
    checkThis(this, "release()");
    this.#core.run(this.#calls.release, this.label, undefined, () => {
      this.#assertLive("release");
      this.#released = true;
      if (this.#holds > 0) {
        if (this.#bytesMade?.detach() === true) this.viewDetached();
        this.#releasing = true;
        return;
      }
      if (this.#bytesMade?.drop() === true) this.viewDetached();
      this.giveBack();
    });
  }

  /** Operations of streams that name it and have not run yet. */
  get streamHolds(): number {
    checkThis(this, "streamHolds");
    return this.#holds;
  }

  /** The backend's state this shares. */
  protected get core(): MockCore {
    return this.#core;
  }

  /** A view handed out was detached (by `detachContents()` or `release()`). */
  protected viewDetached(): void {}

  /** What `nativeHandle()` gives. */
  protected abstract handle(): MockMemoryHandle;

  /** What `release()` gives back, the views detached. */
  protected abstract giveBack(): void;

  #assertLive(method: string): void {
    if (this.#released) {
      const what = this.#kind === "buffer" ? "buffer" : "buffer range";
      throw releasedError(`${this.label}.${method}(): the ${what} was already released`);
    }
  }
}

/**
 * A pretend device buffer made by {@link MockBackend.newBuffer}. No memory stands behind it until
 * `contents()` or `write()` is called, and only for buffers of at most `realMemoryUpTo` bytes, so a test can
 * make buffers of many gigabytes.
 */
export class MockBuffer extends MockMemory {
  /** Its number among the backend's buffers, from 1. */
  readonly id: number;
  #detachments = 0;
  #liveRanges = 0;

  /** Made by {@link MockBackend.newBuffer} only. */
  constructor(core: MockCore, id: number, length: number, allocatedSize: number) {
    super(core, "buffer", `buffer#${id}`, length, allocatedSize);
    this.id = id;
  }

  /** How many `ArrayBuffer`s were detached so far (by `detachContents()` and `release()`). */
  get detachments(): number {
    checkThis(this, "detachments");
    return this.#detachments;
  }

  /** Ranges of this buffer not released yet (`newBufferRange`). */
  get liveRanges(): number {
    checkThis(this, "liveRanges");
    return this.#liveRanges;
  }

  /** A range of this buffer was made. */
  rangeMade(): void {
    this.#liveRanges += 1;
  }

  /** A range of this buffer was released: the last one lets a released buffer's memory go. */
  rangeReleased(): void {
    this.#liveRanges -= 1;
    if (this.#liveRanges === 0 && this.released) this.#leaveCounters();
  }

  protected override viewDetached(): void {
    this.#detachments += 1;
  }

  protected override handle(): MockMemoryHandle {
    return mockMemoryHandle("buffer", this.id);
  }

  protected override giveBack(): void {
    // A segment with live ranges keeps its memory (and stays in the counters) until the last one goes.
    if (this.#liveRanges === 0) this.#leaveCounters();
  }

  #leaveCounters(): void {
    const counters = this.core.counters;
    counters.buffersReleased += 1;
    counters.bufferBytes -= this.allocatedSize;
    this.core.leave(this);
  }
}

/**
 * A range of a {@link MockBuffer} (`MockBackend.newBufferRange`). JavaScript cannot make an `ArrayBuffer`
 * over part of another, so the mock's range has bytes of its own (zeros at first, up to `realMemoryUpTo`):
 * what it shows of a range's life (views detached on `detachContents()` and `release()`, the segment kept
 * while the range lives, the handle at the segment's pointers moved by the offset) is the real backends'.
 */
export class MockBufferRange extends MockMemory {
  /** The buffer this is a range of. */
  readonly segment: MockBuffer;
  /** Where it begins in the segment. */
  readonly offset: number;

  /** Made by {@link MockBackend.newBufferRange} only (arguments checked there). */
  constructor(core: MockCore, segment: MockBuffer, offset: number, length: number) {
    super(core, "range", `${segment.label}+${offset}`, length, length);
    this.segment = segment;
    this.offset = offset;
    segment.rangeMade();
  }

  /** The segment's synthetic pointers moved by the offset. */
  protected override handle(): MockMemoryHandle {
    return offsetHandle(mockMemoryHandle("buffer", this.segment.id), this.offset);
  }

  /** The segment's memory stays while the segment lives. */
  protected override giveBack(): void {
    this.segment.rangeReleased();
  }
}
