// What a runtime's native code needs from a Device, in one place: the backend, where the memory of a buffer
// or mapped file is, and (Metal) the residency sets to attach to the runtime's own queues. Everyday code never
// needs it: `device.native` keeps it apart from malloc, free and the figures.
import type { NativeBackend, NativeMemoryHandle, NativeResidencySet } from "@nuvec/metal-native";
import { ArgumentError } from "@nuvec/stats";
import { bufferState, type DeviceBuffer, isDeviceBuffer } from "./device-buffer.js";
import { bufferFreed, deviceClosed, foreignBuffer, lookAlike, mappingFreed } from "./errors.js";
import { isMappedFile, type MappedFile, mappedFileState } from "./mapped-file.js";
import type { DeviceMemoryHandle } from "./options.js";

/** The handle of a 0-byte buffer: no memory, every pointer 0 (as MLX gives a zero-size array no buffer). */
function nullHandle(backend: NativeBackend): NativeMemoryHandle {
  const platform = backend.platform;
  if (platform === "cuda") {
    const ordinal = (backend as { device?: unknown }).device;
    return { platform, devicePointer: 0n, device: typeof ordinal === "number" ? ordinal : 0 };
  }
  const pointers = platform === "metal" || platform === "mock" ? { metalBuffer: 0n, gpuAddress: 0n } : {};
  return { platform, address: 0n, ...pointers } as NativeMemoryHandle;
}

/** The `id<MTLResidencySet>` pointers of `sets` (not retained); none for sets of other backends. */
function metalResidencySetPointers(sets: readonly NativeResidencySet[]): bigint[] {
  const pointers: bigint[] = [];
  for (const set of sets) {
    const pointer = set.metalResidencySet;
    if (pointer !== undefined) pointers.push(pointer);
  }
  return pointers;
}

let hasNativeBrand: (value: object) => boolean;

/** The `this` of a DeviceNative method or getter: a Device's own, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasNativeBrand(value)) {
    throw lookAlike(operation, "this", "a device's native surface (device.native)");
  }
}

/**
 * A Device's surface for runtime authors (`device.native`): the native backend, the pointers of a buffer's
 * or mapped file's memory for a kernel, and the Metal residency sets. Made by the Device.
 */
export class DeviceNative {
  readonly #device: object;
  readonly #backend: NativeBackend;
  readonly #isClosed: () => boolean;
  readonly #residencySets: readonly NativeResidencySet[];
  readonly #givenBackend: NativeBackend;

  static {
    hasNativeBrand = (value) => #device in value;
  }

  /**
   * @internal Made by the Device: `device` is its owner, `backend` what the Device read of the backend at
   * open, `residencySets` every set residency made, `givenBackend` the backend object itself.
   */
  constructor(
    device: object,
    backend: NativeBackend,
    isClosed: () => boolean,
    residencySets: readonly NativeResidencySet[],
    givenBackend: NativeBackend = backend,
  ) {
    this.#device = device;
    this.#backend = backend;
    this.#isClosed = isClosed;
    this.#residencySets = residencySets;
    this.#givenBackend = givenBackend;
  }

  /**
   * Whether the CPU can address the backend's memory (`contents()` works), as read from the backend once at
   * open; `undefined` when the backend does not say (it can).
   */
  get hostVisible(): boolean | undefined {
    checkThis(this, "hostVisible");
    return this.#backend.hostVisible;
  }

  /** The native backend the device runs on (its facts, its counters): the object it was opened with. */
  get backend(): NativeBackend {
    checkThis(this, "backend");
    return this.#givenBackend;
  }

  /**
   * Where the memory of `target` (a buffer or mapped file of this device) is, for a runtime's native code:
   * the backend's pointers (`address`; on Metal `metalBuffer` and `gpuAddress`; on CUDA `devicePointer`)
   * with `length` and `allocatedLength`. Frozen; valid until the target is freed (with `{ after }`: until
   * that promise settles). A 0-byte buffer's pointers are all `0n`. A freed target, a closed device, a
   * target of another device: typed errors.
   */
  handle(target: DeviceBuffer | MappedFile): DeviceMemoryHandle {
    checkThis(this, "handle()");
    const isBuffer = isDeviceBuffer(target);
    if (!isBuffer && !isMappedFile(target)) {
      throw new ArgumentError("target", "handle(target): target must be a DeviceBuffer or a MappedFile");
    }
    if (target.device !== this.#device) throw foreignBuffer("handle()");
    if (this.#isClosed()) throw deviceClosed("handle()");
    if (target.freed) throw isBuffer ? bufferFreed("handle()") : mappingFreed("handle()");
    if (isBuffer) {
      const state = bufferState(target);
      // The runtime's own kernels use the memory outside the Device's streams: as a host use, an earlier
      // owner's stream work still naming it is waited for first.
      if (state.fence !== undefined) state.fence.beforeHostUse(state);
      const allocation = state.allocation;
      const native = allocation.buffer?.nativeHandle() ?? nullHandle(this.#backend);
      return Object.freeze({
        ...native,
        length: allocation.length,
        allocatedLength: allocation.allocatedLength,
      });
    }
    const native = mappedFileState(target as MappedFile).native;
    return Object.freeze({
      ...native.nativeHandle(),
      length: native.length,
      allocatedLength: native.mappedLength,
    });
  }

  /**
   * Metal: the `id<MTLResidencySet>`s the device uses now, as pointers (not retained), for a runtime with
   * several command queues to attach them itself (`[queue addResidencySet:]`). The list only grows, when
   * residency needs a new set (each holds up to `max(W·pct/100, 64 MiB)`, at most 32 sets; the first is made
   * at open), and is empty after close(): read it again after raising the wired limit. Empty on backends
   * without Metal residency sets (the host, CUDA, the mock).
   */
  residencySets(): bigint[] {
    checkThis(this, "residencySets()");
    return this.#isClosed() ? [] : metalResidencySetPointers(this.#residencySets);
  }
}
