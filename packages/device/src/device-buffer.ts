// A block of device memory handed out by Device.malloc, and the state behind it. The state (allocation,
// liveness, the Device's live list) is what the Device and its safety net work on; the DeviceBuffer is the
// user's handle and, with the views it handed out, what the safety net watches: once registered, the state
// must not reference the DeviceBuffer, or a dropped buffer would never be collected (it holds it only while
// it waits for the safety net's batch, in the turn it was made in).
import type { Allocation } from "@nuvec/allocator";
import type { NativeBuffer } from "@nuvec/metal-native";
import { ArgumentError } from "@nuvec/stats";
import { bufferFreed, deviceClosed, lookAlike, notHostVisible } from "./errors.js";
import type { HandleOwner } from "./handle-owner.js";
import type { FreeOptions } from "./options.js";
import type { StreamOrder } from "./streams/order.js";
import type { StreamCore } from "./streams/stream-core.js";

// BufferState's flags: one small integer where three booleans would take a field each (every malloc makes a
// state, and a decode loop keeps thousands alive: the collector copies what they weigh).
const LIVE = 1;
const VIEWS_HANDED_OUT = 2;
const REGISTERED = 4;

/** A buffer's stream state, made at its first stream use or fence: most buffers never have one. */
class StreamUse {
  uses: Map<StreamCore, number> | undefined = undefined;
  fence: StreamOrder | undefined = undefined;
}

/**
 * @internal The state behind one `malloc`, kept apart from its {@link DeviceBuffer} so that the safety net
 * can free it once the DeviceBuffer is collected. Linked in the Device's list of live buffers.
 */
export class BufferState {
  // The fields are assigned in the constructor rather than declared with initializers: the engine runs class
  // field initializers as a function of their own, which it does not always inline into `malloc`, and which
  // costs a sixth of a cached malloc + free through the Device.
  declare readonly allocation: Allocation<NativeBuffer>;
  declare flags: number;
  /** Its DeviceBuffer, held while it waits for the safety net's batch (made this turn, not freed, not registered). */
  declare owner: DeviceBuffer | undefined;
  declare streamUse: StreamUse | undefined;
  // Links in the Device's list of live buffers (see LiveBuffers).
  declare previous: BufferState | undefined;
  declare next: BufferState | undefined;

  constructor(allocation: Allocation<NativeBuffer>) {
    this.allocation = allocation;
    this.flags = LIVE;
    this.owner = undefined;
    this.streamUse = undefined;
    this.previous = undefined;
    this.next = undefined;
  }

  /** Not freed yet. */
  get live(): boolean {
    return (this.flags & LIVE) !== 0;
  }

  set live(value: boolean) {
    this.flags = value ? this.flags | LIVE : this.flags & ~LIVE;
  }

  /** This owner asked the backend for views (`contents()`, `read`, `write`): they are detached on free. */
  get viewsHandedOut(): boolean {
    return (this.flags & VIEWS_HANDED_OUT) !== 0;
  }

  set viewsHandedOut(value: boolean) {
    this.flags = value ? this.flags | VIEWS_HANDED_OUT : this.flags & ~VIEWS_HANDED_OUT;
  }

  /** In the safety net's registry (registered once it outlived the turn it was made in). */
  get registered(): boolean {
    return (this.flags & REGISTERED) !== 0;
  }

  set registered(value: boolean) {
    this.flags = value ? this.flags | REGISTERED : this.flags & ~REGISTERED;
  }

  /** The streams that used it, each with its position after the last operation naming it. */
  get uses(): Map<StreamCore, number> | undefined {
    return this.streamUse?.uses;
  }

  set uses(value: Map<StreamCore, number> | undefined) {
    if (this.streamUse === undefined) {
      if (value === undefined) return;
      this.streamUse = new StreamUse();
    }
    this.streamUse.uses = value;
  }

  /** The stream order holding a fence on its memory (work of an earlier owner): honoured at its first uses. */
  get fence(): StreamOrder | undefined {
    return this.streamUse?.fence;
  }

  set fence(value: StreamOrder | undefined) {
    if (this.streamUse === undefined) {
      if (value === undefined) return;
      this.streamUse = new StreamUse();
    }
    this.streamUse.fence = value;
  }
}

/**
 * Ties an ArrayBuffer to the DeviceBuffer that handed it out: a private field installed on the ArrayBuffer
 * (the base constructor returns the object given, so the subclass's field lands on it). Nobody can read,
 * change or delete it, and it keeps the DeviceBuffer alive exactly as long as the ArrayBuffer: what a
 * WeakMap entry would do, for a few tens of nanoseconds instead of one to three microseconds (the WeakMap's
 * ephemeron table grows with every view ever handed out; see packages/allocator/bench/PROFILE.md §3).
 */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the return override installs the subclass's private field on target
    return target as Stamp;
  }
}

class OwnedView extends Stamp {
  readonly #owner: DeviceBuffer;

  private constructor(view: ArrayBuffer, owner: DeviceBuffer) {
    super(view);
    this.#owner = owner;
  }

  /** Makes `view` keep `owner` alive (once: a view keeps the one owner that handed it out). */
  static stamp(view: ArrayBuffer, owner: DeviceBuffer): void {
    if (#owner in view) return;
    // A backend may hand out a non-extensible ArrayBuffer, and engines that implement "nonextensible applies
    // to private" refuse a private field there: such a view keeps its owner through a WeakMap entry.
    if (Object.isExtensible(view)) new OwnedView(view, owner);
    else if (!ownersOfSealedViews.has(view)) ownersOfSealedViews.set(view, owner);
  }

  /** The DeviceBuffer `view` keeps alive, if any (for tests of the guarantee). */
  static ownerOf(view: object): DeviceBuffer | undefined {
    return #owner in view ? (view as unknown as OwnedView).#owner : ownersOfSealedViews.get(view);
  }
}

/** The owners of the views that cannot take the private field (see {@link OwnedView.stamp}). */
const ownersOfSealedViews = new WeakMap<object, DeviceBuffer>();

/** Whether `buffer` was detached (transferred away); `detached` is missing before Node 21 without a flag. */
function isDetached(buffer: ArrayBuffer): boolean {
  const detached = (buffer as { detached?: boolean }).detached;
  if (detached !== undefined) return detached;
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}

// The Device reaches a DeviceBuffer's internals through these (set in the class's static block), so that
// they are no members of the public class.
let stateOfBuffer: (buffer: DeviceBuffer) => BufferState;
let deviceOfBuffer: (buffer: DeviceBuffer) => HandleOwner;
let dropViews: (buffer: DeviceBuffer) => void;
let hasBufferBrand: (value: object) => boolean;
// The Device's free of a buffer it made, for `buffer.free()`: the buffer's brand is checked and its device and
// state are its own, so the Device's checks of a handle it is given are not run again (set by device.ts).
let freeOwnBuffer: (
  device: HandleOwner,
  buffer: DeviceBuffer,
  state: BufferState,
  options: FreeOptions | undefined,
) => void;

/** @internal Sets how `buffer.free()` frees (the Device, once, as its module loads). */
export function setOwnBufferFree(free: typeof freeOwnBuffer): void {
  freeOwnBuffer = free;
}

/**
 * @internal Whether `value` is a DeviceBuffer that a Device made: a brand check on the class's private state,
 * so `Object.create(DeviceBuffer.prototype)`, a Proxy of a buffer and a structuredClone of one are not.
 */
export function isDeviceBuffer(value: unknown): value is DeviceBuffer {
  return typeof value === "object" && value !== null && hasBufferBrand(value);
}

/** The `this` of a DeviceBuffer method or getter: a real DeviceBuffer, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (!isDeviceBuffer(value)) throw lookAlike(operation, "this", "a DeviceBuffer made by device.malloc()");
}

/** @internal The state behind `buffer`. */
export function bufferState(buffer: DeviceBuffer): BufferState {
  return stateOfBuffer(buffer);
}

/** @internal The device `buffer` belongs to, read without the getter's check (the caller checked the brand). */
export function bufferDevice(buffer: DeviceBuffer): HandleOwner {
  return deviceOfBuffer(buffer);
}

/** @internal The device freed `buffer`: its views are detached and need not be held any more. */
export function forgetViews(buffer: DeviceBuffer): void {
  dropViews(buffer);
}

/**
 * @internal Detaches the views of a buffer being freed; true when one could not be detached: a view moved
 * away by transfer() still reaches the memory, so the buffer must never be cached (never reused) and the
 * backend holds its memory until that view is collected. This covers the safety net too, which frees a
 * buffer when its DeviceBuffer is collected (a moved view does not keep it alive).
 */
export function detachViews(state: BufferState): boolean {
  const native = state.allocation.buffer;
  if (native === undefined) return false;
  native.detachContents();
  return native.quarantined === true;
}

/** @internal The DeviceBuffer a view handed out by `contents()` keeps alive (tests of the guarantee). */
export function ownerOfView(view: ArrayBuffer): DeviceBuffer | undefined {
  return OwnedView.ownerOf(view);
}

/**
 * A block of device memory from {@link Device.malloc}. Free it with `free()` (or `using`); a buffer dropped
 * without `free()` is given back by a safety net, but only once no view over it is reachable.
 */
export class DeviceBuffer<Owner extends HandleOwner = HandleOwner> {
  readonly #device: Owner;
  readonly #state: BufferState;
  // The views handed out since malloc, held until free(): the native addon holds them only weakly, and a
  // view collected before free() (its finalizer pending) cannot be told from one moved away by transfer(),
  // so the addon would quarantine the buffer instead of letting it be cached. An ordinary edge (not a GC
  // root): with the stamp from view to buffer it forms a cycle that is collected as a whole, so the safety
  // net still works. One view is the rule (the backend returns the same one until it is detached); the
  // earlier ones, after a user moved one away, are rare. A 0-byte buffer keeps its own empty ArrayBuffer
  // here: never one shared by all, which a transfer() would detach for every 0-byte buffer of the process.
  #view: ArrayBuffer | undefined = undefined;
  #earlierViews: ArrayBuffer[] | undefined = undefined;

  static {
    stateOfBuffer = (buffer) => buffer.#state;
    deviceOfBuffer = (buffer) => buffer.#device;
    hasBufferBrand = (value) => #state in value;
    dropViews = (buffer) => {
      buffer.#view = undefined;
      buffer.#earlierViews = undefined;
    };
  }

  /** @internal Made by {@link Device.malloc}. */
  constructor(device: Owner, state: BufferState) {
    // Only a Device has a BufferState to give (the class is not exported): no handle forged over nothing.
    if (!(state instanceof BufferState)) {
      throw new ArgumentError(
        "new DeviceBuffer()",
        "new DeviceBuffer(): a DeviceBuffer is made by device.malloc(bytes)",
      );
    }
    this.#device = device;
    this.#state = state;
  }

  /** The bytes asked for. */
  get length(): number {
    checkThis(this, "length");
    return this.#state.allocation.length;
  }

  /** The bytes charged in `active`: the size class handed out (a reused cached buffer may be larger). */
  get allocatedLength(): number {
    checkThis(this, "allocatedLength");
    return this.#state.allocation.allocatedLength;
  }

  /** True once freed. */
  get freed(): boolean {
    checkThis(this, "freed");
    return !this.#state.live;
  }

  /** The device this buffer belongs to. */
  get device(): Owner {
    checkThis(this, "device");
    return this.#device;
  }

  /**
   * The buffer's memory as an `ArrayBuffer` without a copy: exactly `length` bytes, whatever block the
   * cache handed out. Every `ArrayBuffer` handed out is detached when the buffer is freed: an old view then
   * reads `byteLength` 0 and can never reach the next owner's data.
   */
  contents(): ArrayBuffer {
    checkThis(this, "contents()");
    this.#check("contents()");
    // Device memory (CUDA) has no CPU address: say so, rather than whatever the backend would throw.
    if (this.#device.native.hostVisible === false) throw notHostVisible("contents()");
    this.#awaitFence();
    const native = this.#state.allocation.buffer;
    if (native === undefined) {
      if (this.#view === undefined || isDetached(this.#view)) this.#view = new ArrayBuffer(0);
      return this.#view;
    }
    return this.#viewOf(native);
  }

  /** A `Uint8Array` over {@link contents}. */
  bytes(): Uint8Array {
    checkThis(this, "bytes()");
    return new Uint8Array(this.contents());
  }

  /**
   * Copies `source` (an `ArrayBuffer` or any view of one) into the buffer at `offset` (default 0), the same
   * on every backend: the backend's copy, which makes no view (so none is detached on free). Must fit within
   * `length`.
   */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    checkThis(this, "write()");
    this.#check("write()");
    if (!(source instanceof ArrayBuffer || ArrayBuffer.isView(source))) {
      throw new ArgumentError(
        "source",
        "write(source): source must be an ArrayBuffer or an ArrayBuffer view",
      );
    }
    this.#checkSpan("write()", offset, source.byteLength);
    const native = this.#state.allocation.buffer;
    if (native === undefined || source.byteLength === 0) return;
    this.#awaitFence();
    native.write(source, offset);
  }

  /**
   * A copy of `length` bytes from `offset` (default: from 0 to the end of `length`), as a new `Uint8Array`:
   * the backend's copy (no view made).
   */
  read(offset = 0, length?: number): Uint8Array {
    checkThis(this, "read()");
    this.#check("read()");
    if (length === undefined) length = this.length - offset;
    this.#checkSpan("read()", offset, length);
    const native = this.#state.allocation.buffer;
    if (native === undefined || length === 0) return new Uint8Array(0);
    this.#awaitFence();
    return native.read(offset, length);
  }

  /**
   * Gives the buffer back to the device (to its cache, or to the system). A second call throws.
   * `{ after: promise }`: views are detached now, the memory is given back once the promise settles (see
   * {@link FreeOptions}).
   */
  free(options?: FreeOptions): void {
    checkThis(this, "free()");
    freeOwnBuffer(this.#device, this, this.#state, options);
  }

  /** `using buffer = device.malloc(n)` frees it at the end of the scope (no error if already freed). */
  [Symbol.dispose](): void {
    checkThis(this, "[Symbol.dispose]()");
    if (this.#state.live && !this.#device.closed) freeOwnBuffer(this.#device, this, this.#state, undefined);
  }

  /**
   * The backend's view of the memory, held and tied to this buffer: every view reaching the memory keeps
   * the buffer alive, and the device detaches them on free (only when one was asked for).
   */
  #viewOf(native: NativeBuffer): ArrayBuffer {
    // The view held, while attached: it is the backend's current one (the device detaches views only on
    // free, which ends this buffer), so no backend call. A view moved away by its holder reads byteLength 0
    // (a buffer of 0 bytes has no native buffer), and the backend makes the next one.
    const held = this.#view;
    if (held !== undefined && held.byteLength !== 0) return held;
    const view = native.contents(this.length);
    if (view !== this.#view) {
      if (this.#view !== undefined) {
        if (this.#earlierViews === undefined) this.#earlierViews = [this.#view];
        else this.#earlierViews.push(this.#view);
      }
      this.#view = view;
      OwnedView.stamp(view, this);
    }
    this.#state.viewsHandedOut = true;
    return view;
  }

  /** A host use of memory an earlier owner's stream work may still name waits for that work first. */
  #awaitFence(): void {
    const fence = this.#state.fence;
    if (fence !== undefined) fence.beforeHostUse(this.#state);
  }

  #check(operation: string): void {
    if (this.#device.closed) throw deviceClosed(operation);
    if (!this.#state.live) throw bufferFreed(operation);
  }

  /** `offset` and `length` must be whole numbers with `offset + length ≤ this.length`. */
  #checkSpan(operation: string, offset: unknown, length: unknown): void {
    if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0 || offset > this.length) {
      throw new ArgumentError(
        "offset",
        `${operation}: offset must be a whole number from 0 to ${this.length}, got ${String(offset)}`,
      );
    }
    if (
      typeof length !== "number" ||
      !Number.isSafeInteger(length) ||
      length < 0 ||
      length > this.length - offset
    ) {
      throw new ArgumentError(
        "length",
        `${operation}: ${String(length)} bytes at offset ${offset} do not fit in a ${this.length}-byte buffer`,
      );
    }
  }
}
