import { checkReadSpan, checkWriteSpan } from "../arguments.js";
import { notHostVisible, releasedError } from "../errors.js";
import { offsetHandle } from "../range.js";
import type { NativeBuffer, NativeMemoryHandle } from "../types.js";
import type { AddonBuffer } from "./buffer.js";

/**
 * A range of an addon buffer (a backend's `newBufferRange`): `length` bytes of `segment` from `offset`, the
 * segment's memory kept while it lives. Made in TypeScript, so a sub-allocating policy's hot path makes no
 * native object: `nativeHandle()` is the segment's moved by the offset; `read`/`write` (memory the CPU
 * cannot address) copy through the segment's handle at the offset. `contents()` is refused where the CPU
 * cannot address the memory; elsewhere the subclass of the backend says how a view of the range is made.
 */
let hasRangeBrand: (value: object) => boolean;

/** @internal Whether `value` is a range an addon backend made in TypeScript (a brand check, not `instanceof`). */
export function isAddonBufferRange(value: unknown): value is AddonBufferRange {
  return typeof value === "object" && value !== null && hasRangeBrand(value);
}

export class AddonBufferRange<Handle extends NativeMemoryHandle = NativeMemoryHandle>
  implements NativeBuffer
{
  readonly length: number;
  /** The range is its length: the segment holds the system's memory. */
  readonly allocatedSize: number;
  /** The buffer this is a range of. */
  readonly segment: AddonBuffer<Handle>;
  /** Where the range begins in the segment. */
  readonly offset: number;
  #released = false;

  static {
    hasRangeBrand = (value) => #released in value;
  }

  /** Made by a backend's `newBufferRange` (arguments checked there). */
  constructor(segment: AddonBuffer<Handle>, offset: number, length: number) {
    this.segment = segment;
    this.offset = offset;
    this.length = length;
    this.allocatedSize = length;
    segment.rangeMade();
  }

  get released(): boolean {
    return this.#released;
  }

  /** Never: a range of device memory hands out no view (see the class). */
  get quarantined(): boolean {
    return false;
  }

  /** The range's memory as an `ArrayBuffer`: refused where the CPU cannot address it. */
  contents(_length?: number): ArrayBuffer {
    this.assertLive("contents");
    throw notHostVisible(
      "contents(): this buffer is device memory, which the CPU cannot address: copy with read() and write()",
    );
  }

  /** Nothing to detach: no view of the range was handed out. */
  detachContents(): void {
    this.assertLive("detachContents");
  }

  /** The segment's handle moved by the offset. */
  nativeHandle(): Handle {
    this.assertLive("nativeHandle");
    return offsetHandle(this.segment.nativeHandle(), this.offset);
  }

  /**
   * A copy of `length` bytes from `offset` of the range (default: to its end), made by the addon through the
   * segment's handle at the range's offset; no view is handed out. Throws after release.
   */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    this.assertLive("read");
    checkReadSpan(offset, length, this.length);
    return this.segment.copyOut(this.offset + offset, length);
  }

  /** Copies `source` into the range at `offset` (default 0), through the segment's handle. Throws after release. */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.assertLive("write");
    checkWriteSpan(source, offset, this.length);
    this.segment.copyIn(source, this.offset + offset);
  }

  /** Gives the range back (never the segment's memory while the segment lives). A second call throws. */
  release(): void {
    this.assertLive("release");
    this.#released = true;
    this.segment.rangeReleased();
  }

  /** Throws a `StateError` (`ERR_NUVEC_RELEASED`) naming `method` once released. */
  protected assertLive(method: string): void {
    if (this.#released) throw releasedError(`${method}(): the buffer range was already released`);
  }
}
