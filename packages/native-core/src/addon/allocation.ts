import { lookAlike, releasedError } from "../errors.js";
import type { NativeMemoryHandle } from "../types.js";
import { callNative, typedError } from "./call.js";
import { atEndOfJob } from "./job-views.js";
import type { AddonOwner } from "./owner.js";
import type { RawAllocationHandle, SlotCalls } from "./raw.js";

let hasAllocationBrand: (value: object) => boolean;

/**
 * @internal Whether `value` is a buffer or mapped file an addon backend made: a brand check on the class's
 * private state, so `Object.create` of the prototype and a Proxy of a real one are not.
 */
export function isAddonAllocation(value: unknown): value is AddonAllocation {
  return typeof value === "object" && value !== null && hasAllocationBrand(value);
}

/** The `this` of a method or getter of an addon's buffer or mapped file: a real one, else an ArgumentError. */
export function checkAllocationThis(value: unknown, operation: string): void {
  if (!isAddonAllocation(value)) throw lookAlike(operation, "this", "a buffer or mapped file of a backend");
}

/**
 * What the wrappers of an addon's buffers and mapped files share: the handle and its backend, the sizes, the
 * released state checked before every native call, where the memory is for native code, and the release.
 */
export abstract class AddonAllocation<Handle extends NativeMemoryHandle = NativeMemoryHandle> {
  /** The bytes asked for (a mapped file: the file's length). */
  readonly length: number;
  /** The bytes the system holds for it (page-rounded when it came from `mmap`; a mapping's mapped length). */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawAllocationHandle;
  /** @internal */
  readonly owner: AddonOwner;
  readonly #noun: string;
  // The calls for views, by this handle's slot: no unwrap of the handle per view (see SlotCalls).
  readonly #calls: SlotCalls;
  readonly #slot: number;
  #released = false;
  // The last view handed out, held until the end of the job or until it is detached (job-views.ts).
  #jobView: ArrayBuffer | undefined = undefined;
  #heldForJob = false;

  static {
    hasAllocationBrand = (value) => #released in value;
  }

  /** Wraps a handle that `owner`'s addon made; `noun` names it in messages (`"buffer"`, `"mapped file"`). */
  protected constructor(raw: RawAllocationHandle, owner: AddonOwner, noun: string) {
    this.raw = raw;
    this.owner = owner;
    this.#noun = noun;
    this.#calls = owner.slotCalls;
    this.#slot = raw.slot;
    this.length = raw.length;
    this.allocatedSize = raw.allocatedSize;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkAllocationThis(this, "released");
    return this.#released;
  }

  /** Where the memory is, for a runtime's native code (see {@link NativeMemoryHandle}). Frozen; throws after release. */
  nativeHandle(): Handle {
    this.assertLive("nativeHandle");
    return callNative(() => Object.freeze(this.memoryHandle()));
  }

  /** Gives the memory back (once no residency set holds it) and detaches every view. A second call throws. */
  release(): void {
    this.assertLive("release");
    this.#released = true;
    try {
      this.releaseMemory();
    } finally {
      // Only now: held through the native call, the view cannot be collected just before it (the addon
      // could not tell it from one moved away, and would quarantine the memory).
      this.#jobView = undefined;
    }
  }

  /** Gives the handle back to the addon: at once here; a buffer with live ranges waits for the last one. */
  protected releaseMemory(): void {
    callNative(() => this.raw.release());
  }

  /** @internal The job ended: the last view is no longer held here (see job-views.ts). */
  endOfJob(): void {
    this.#jobView = undefined;
    this.#heldForJob = false;
  }

  /**
   * The addon's view of the first `length` bytes (checked by the caller): the one held for this job while
   * it is attached and that long (no native call), else the addon's (the same one while it is attached),
   * held until the end of the job.
   */
  protected view(length: number = this.length): ArrayBuffer {
    const held = this.#jobView;
    // A view detached by us or moved away reads byteLength 0; no view has 0 bytes.
    if (held !== undefined && held.byteLength === length) return held;
    let view: ArrayBuffer;
    try {
      view = this.#calls.contentsOf(this.#slot, length);
    } catch (error) {
      throw typedError(error);
    }
    this.#jobView = view;
    if (!this.#heldForJob) {
      this.#heldForJob = true;
      atEndOfJob(this);
    }
    return view;
  }

  /**
   * Detaches every view this allocation handed out (the addon's `detachContents()`): true when one had
   * escaped. The caller forgets the held view after it (see release()).
   */
  protected detachViews(): boolean | undefined {
    try {
      return this.#calls.detachContentsOf(this.#slot);
    } catch (error) {
      throw typedError(error);
    }
  }

  /** The addon's copy of `length` bytes from `offset` (checked by the caller), into `target` when given. */
  protected readCopy(offset: number, length: number, target?: ArrayBuffer): ArrayBuffer {
    try {
      return this.#calls.readOf(this.#slot, offset, length, target);
    } catch (error) {
      throw typedError(error);
    }
  }

  /** The addon's copy of `source` in at `offset` (checked by the caller). */
  protected writeCopy(source: ArrayBuffer | ArrayBufferView, offset: number): void {
    try {
      this.#calls.writeOf(this.#slot, source, offset);
    } catch (error) {
      throw typedError(error);
    }
  }

  /** The views were detached: the one held is of no more use. */
  protected forgetView(): void {
    this.#jobView = undefined;
  }

  /** Where the memory is, as this addon says it: what `nativeHandle()` gives, frozen. */
  protected abstract memoryHandle(): Handle;

  /** Throws a `StateError` (`ERR_NUVEC_RELEASED`) naming `method` once released. */
  protected assertLive(method: string): void {
    checkAllocationThis(this, `${method}()`);
    if (this.#released) throw releasedError(`${method}(): the ${this.#noun} was already released`);
  }
}
