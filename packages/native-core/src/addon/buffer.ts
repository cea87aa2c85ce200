import { checkReadSpan, checkViewLength, checkWriteSpan } from "../arguments.js";
import { offsetHandle } from "../range.js";
import type { NativeBuffer, NativeMemoryHandle } from "../types.js";
import { AddonAllocation, checkAllocationThis } from "./allocation.js";
import { callNative } from "./call.js";
import type { AddonOwner } from "./owner.js";
import type { RawBufferHandle } from "./raw.js";

// Reads of up to 64 bytes (a token id, a few logits: what a decode loop reads every step) are copied into one
// staging buffer and leave as a typed array of their own, which the engine keeps on its heap (V8 does up to
// 64 bytes): no external ArrayBuffer per read for the collector to account for and sweep.
const STAGED_READ_BYTES = 64;
let staging: Uint8Array | undefined;

/**
 * A buffer of an addon's memory: the {@link NativeBuffer} over a raw buffer handle, every argument and state
 * checked before native code runs. What differs between addons is where the memory is (`memoryHandle()`, the
 * subclass's) and any calls of their own (CUDA's `read`/`write`).
 */
export abstract class AddonBuffer<Handle extends NativeMemoryHandle = NativeMemoryHandle>
  extends AddonAllocation<Handle>
  implements NativeBuffer
{
  #quarantined = false;
  // Whether a view may exist: detachContents() on the allocator's cache path then costs no native call when
  // nobody asked for the contents (the common case, and the only one where the CPU cannot address it).
  #viewsHandedOut = false;
  // Ranges of this buffer not yet released (newBufferRange): the memory stays until the last one goes.
  #liveRanges = 0;
  #releaseWaiting = false;

  /** Wraps a buffer handle that `owner`'s addon made (a backend's `newBuffer`). */
  protected constructor(raw: RawBufferHandle, owner: AddonOwner) {
    super(raw, owner, "buffer");
  }

  /**
   * True once `detachContents()` found a view handed out that it could not detach: one detached by someone
   * else (moved away by `ArrayBuffer.prototype.transfer()`), or one already collected whose finalizer has
   * not run yet (the addon holds views weakly and cannot tell the two apart). Such a buffer must never be
   * cached or reused; release it, and the addon keeps the memory until that view's finalizer runs.
   */
  get quarantined(): boolean {
    checkAllocationThis(this, "quarantined");
    return this.#quarantined;
  }

  /**
   * After `release()`, the bytes the addon still holds for a view moved away (its allocated size), 0 once
   * that view is collected; 0 before release.
   */
  get quarantinedBytes(): number {
    return this.released ? (this.raw.quarantinedBytes ?? 0) : 0;
  }

  /**
   * The first `length` bytes (default: all) as an external `ArrayBuffer` (no copy; the same one while it
   * lives), detached on release; where the CPU cannot address it, the addon's typed refusal. Throws after
   * release.
   */
  contents(length: number = this.length): ArrayBuffer {
    this.assertLive("contents");
    if (length !== this.length) checkViewLength(length, this.length);
    // Held here only to the end of the job (job-views.ts): a strong reference kept longer would keep alive
    // whatever the caller ties to the view (the Device's owner of it) for as long as this buffer is cached.
    const contents = this.view(length);
    this.#viewsHandedOut = true;
    return contents;
  }

  /**
   * Detaches every `ArrayBuffer` handed out so far without releasing the memory (the device calls it when a
   * freed buffer goes to the cache); the next `contents()` makes a new one. Throws after release.
   */
  detachContents(): void {
    this.assertLive("detachContents");
    if (!this.#viewsHandedOut) return;
    this.#viewsHandedOut = false;
    try {
      // `true` when a view escaped; an addon that cannot tell answers nothing, read as false.
      if (this.detachViews() === true) this.#quarantined = true;
    } finally {
      // After the native call, as in release().
      this.forgetView();
    }
  }

  /**
   * A copy of `length` bytes from `offset` as a new `Uint8Array`, made by the addon: no view is handed out
   * (so nothing is detached when the buffer is cached). Throws after release.
   */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    this.assertLive("read");
    checkReadSpan(offset, length, this.length);
    return this.copyOut(offset, length);
  }

  /** Copies `source` (an `ArrayBuffer` or any view of one) in at `offset`, in the addon. Throws after release. */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.assertLive("write");
    checkWriteSpan(source, offset, this.length);
    this.copyIn(source, offset);
  }

  /** The copy out of `read`, arguments already checked (a range of this buffer copies through it). */
  copyOut(offset: number, length: number): Uint8Array {
    if (length > STAGED_READ_BYTES) return new Uint8Array(this.readCopy(offset, length));
    staging ??= new Uint8Array(STAGED_READ_BYTES);
    this.readCopy(offset, length, staging.buffer as ArrayBuffer);
    return staging.slice(0, length);
  }

  /** The copy in of `write`, arguments already checked (a range of this buffer copies through it). */
  copyIn(source: ArrayBuffer | ArrayBufferView, offset: number): void {
    // The addon reads ArrayBuffers and views of them; a view of a SharedArrayBuffer is copied first.
    const plain =
      ArrayBuffer.isView(source) && !(source.buffer instanceof ArrayBuffer)
        ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength).slice()
        : source;
    this.writeCopy(plain, offset);
  }

  /** Whether this is a range of another buffer (a range of a range is refused). */
  get isRange(): boolean {
    return false;
  }

  /** Ranges of this buffer not released yet. */
  get liveRanges(): number {
    return this.#liveRanges;
  }

  /** A range of this buffer was made. */
  rangeMade(): void {
    this.#liveRanges++;
  }

  /** A range of this buffer was released: the last one lets a released buffer's memory go. */
  rangeReleased(): void {
    this.#liveRanges--;
    if (this.#liveRanges === 0 && this.#releaseWaiting) {
      this.#releaseWaiting = false;
      callNative(() => this.raw.release());
    }
  }

  protected override releaseMemory(): void {
    if (this.#liveRanges > 0) {
      // The views of the buffer itself go now; its memory stays for the live ranges.
      if (this.#viewsHandedOut) {
        this.#viewsHandedOut = false;
        this.detachViews();
      }
      this.#releaseWaiting = true;
      return;
    }
    super.releaseMemory();
  }
}

/**
 * A range of an {@link AddonBuffer} (`newBufferRange` of the host or Metal backend): a buffer handle of
 * the addon over `length` bytes of the segment's memory, with views of its own (detached, escaped and
 * quarantined as any buffer's); the addon keeps the segment's memory while the range exists.
 * `nativeHandle()` is the segment's moved by the offset.
 */
export class NativeAddonBufferRange extends AddonBuffer {
  /** The buffer this is a range of. */
  readonly segment: AddonBuffer;
  /** Where it begins in the segment. */
  readonly offset: number;

  /** Made by {@link NativeAddonBackend.newBufferRange} (arguments checked there). */
  constructor(raw: RawBufferHandle, segment: AddonBuffer, offset: number, owner: AddonOwner) {
    super(raw, owner);
    this.segment = segment;
    this.offset = offset;
    segment.rangeMade();
  }

  override get isRange(): boolean {
    return true;
  }

  protected override memoryHandle(): NativeMemoryHandle {
    return offsetHandle(this.segment.nativeHandle(), this.offset);
  }

  protected override releaseMemory(): void {
    try {
      super.releaseMemory();
    } finally {
      this.segment.rangeReleased();
    }
  }
}
