// The CUDA backend: @nuvec/metal-native's addon wrappers (its `/addon` entry: argument and state checks,
// typed errors, view bookkeeping, residency sets) over the CUDA addon, plus what only CUDA has: device
// pointers, copies in and out of device memory, the driver's figures.
import {
  AddonBackend,
  AddonBuffer,
  AddonBufferRange,
  AddonMappedFile,
  AddonResidencySet,
  callNative,
  type RawBufferHandle,
  type RawMappedFileHandle,
  type RawResidencySetHandle,
} from "@nuvec/metal-native/addon";
import { StateError } from "@nuvec/stats";
import { checkByteCount, checkCount } from "./arguments.js";
import type { RawCudaAddon, RawCudaBufferHandle, RawCudaFacts, RawCudaMappedFileHandle } from "./raw.js";

/** What `nativeHandle()` of a CUDA buffer gives: the device address, for interop with other CUDA code. */
export interface CudaBufferHandle {
  readonly platform: "cuda";
  /** The buffer's device address (`CUdeviceptr`). */
  readonly devicePointer: bigint;
  /** The device's ordinal. */
  readonly device: number;
}

/** What `nativeHandle()` of a mapped file gives on CUDA. */
export interface CudaMappedFileHandle {
  readonly platform: "cuda";
  /**
   * The device address of the registered (wired) mapping, through which kernels and copies read the file's
   * pages without a copy; `undefined` while the mapping is not wired.
   */
  readonly devicePointer: bigint | undefined;
  /** The device's ordinal. */
  readonly device: number;
}

/**
 * A buffer of device memory (`cuMemAlloc`, 256-byte steps up to a 16 KiB page, whole pages beyond). The CPU
 * cannot address it: `contents()` throws an `UnsupportedError` (`ERR_NUVEC_NOT_HOST_VISIBLE`); `read` and `write` copy
 * (`cuMemcpyDtoH` / `cuMemcpyHtoD`). No view is ever handed out, so `detachContents()` has nothing to do.
 */
export class CudaBuffer extends AddonBuffer<CudaBufferHandle> {
  readonly #raw: RawCudaBufferHandle;
  readonly #device: number;

  /** @internal Made by {@link CudaBackend.newBuffer}. */
  constructor(raw: RawCudaBufferHandle, owner: CudaBackend) {
    super(raw, owner);
    this.#raw = raw;
    this.#device = owner.device;
  }

  /** The device address, for other CUDA code (kernels, cuBLAS, PyTorch's `from_blob`). */
  protected override memoryHandle(): CudaBufferHandle {
    return { platform: "cuda", devicePointer: this.#raw.devicePointer as bigint, device: this.#device };
  }
}

/**
 * A range of a {@link CudaBuffer} (`CudaBackend.newBufferRange`): a block the segments policy hands out.
 * `nativeHandle().devicePointer` is the block's; `read` and `write` copy at its offset in the segment
 * (`cuMemcpyDtoH`, `cuMemcpyHtoD`). Made without a native call.
 */
export class CudaBufferRange extends AddonBufferRange<CudaBufferHandle> {}

/**
 * A file mapped private and copy-on-write, as on the host: the CPU reads it through `contents()`. Wired (in a
 * residency set with residency requested), it is also page-locked and registered with the driver, read-only:
 * `nativeHandle().devicePointer` then reaches it from the GPU, and copies from it run at pinned speed.
 */
export class CudaMappedFile extends AddonMappedFile<CudaMappedFileHandle> {
  readonly #raw: RawCudaMappedFileHandle;
  readonly #device: number;

  /** @internal Made by {@link CudaBackend.mapFile}. */
  constructor(raw: RawCudaMappedFileHandle, path: string, owner: CudaBackend) {
    super(raw, path, owner);
    this.#raw = raw;
    this.#device = owner.device;
  }

  /** The registered mapping's device address while wired (else `undefined`). */
  protected override memoryHandle(): CudaMappedFileHandle {
    return { platform: "cuda", devicePointer: this.#raw.devicePointer, device: this.#device };
  }
}

/**
 * A residency set with MLX's semantics. On CUDA, device buffers are resident by nature (wiring counts them);
 * mapped files are wired by page-locking and registering them with the driver (`cuMemHostRegister`,
 * read-only, device-mapped) and unwired by unregistering them. A failed registration is counted, never thrown.
 */
export class CudaResidencySet extends AddonResidencySet {
  /**
   * @internal Made by {@link CudaBackend.newResidencySet}: public here (the base's is protected) so that the
   * backend can make it.
   */
  constructor(raw: RawResidencySetHandle, owner: CudaBackend) {
    super(raw, owner);
  }
}

/**
 * Whether the driver's map granularity can be used: a power of two from the page size up to the largest
 * buffer (an address space is one buffer, mapped in whole granules of whole pages). 0 is the driver's "no
 * virtual memory management".
 */
function usableGranularity(granularity: number, pageSize: number, maxBufferLength: number): boolean {
  return (
    Number.isSafeInteger(granularity) &&
    granularity >= pageSize &&
    granularity <= maxBufferLength &&
    (granularity & (granularity - 1)) === 0
  );
}

// The handles reach the wrap methods typed as every addon's; they are this addon's (it made them), with
// device pointers and copies: hence the casts below.

/**
 * An NVIDIA GPU as a `NativeBackend`: device facts read once (the total memory as the working set, MLX's
 * 16 KiB CUDA page, `hostVisible` false), buffers of device memory, mapped files wired by registration, and
 * streams and modules (`newStream()`, `loadModule({ cuda })`, from the addon wrappers): the driver's
 * non-blocking streams, CUDA C compiled with NVRTC or PTX (see the README's "Streams and kernels"). Get it
 * from {@link loadCudaBackend}.
 */
export class CudaBackend extends AddonBackend<CudaBuffer, CudaMappedFile, CudaResidencySet> {
  /** False: buffers are device memory; copy with `read`/`write`. */
  declare readonly hostVisible: boolean;
  /** The device's ordinal. */
  readonly device: number;
  /** The driver's version (`cuDriverGetVersion`, e.g. 13000 for CUDA 13.0). */
  readonly driverVersion: number;
  /**
   * The driver's granularity for mapped device memory (2 MiB on current GPUs); `undefined` where the driver
   * has no virtual memory management, or reports a granularity that is not a power of two from the page size
   * to the largest buffer (then neither have `reserveAddressSpace`, `mapMemory`, `unmapMemory`: the
   * segments policy runs fixed segments).
   */
  declare readonly mapGranularity?: number;
  readonly #addon: RawCudaAddon;

  /** @internal Use {@link loadCudaBackend}: `addon` has opened the device, which reported `facts`. */
  constructor(addon: RawCudaAddon, facts: RawCudaFacts) {
    super(addon, facts);
    this.#addon = addon;
    this.device = facts.ordinal;
    this.driverVersion = facts.driverVersion;
    if (usableGranularity(facts.mapGranularity, facts.pageSize, facts.maxBufferLength)) {
      Object.defineProperty(this, "mapGranularity", { value: facts.mapGranularity, enumerable: true });
    } else {
      // No virtual memory management, or a granularity no policy can map with: the policy sees no address
      // spaces at all (fixed segments), and the device opens all the same.
      for (const name of ["reserveAddressSpace", "mapMemory", "unmapMemory"]) {
        Object.defineProperty(this, name, { value: undefined, enumerable: false });
      }
    }
  }

  /**
   * `capacity` bytes of device address space (`cuMemAddressReserve`; whole granules of
   * {@link mapGranularity}), no memory behind it: ranges of it (`newBufferRange`) are usable where
   * {@link mapMemory} backed them. Released, it unmaps and frees whatever is still mapped.
   */
  reserveAddressSpace(capacity: number): CudaBuffer {
    checkByteCount(capacity, "capacity", this.maxBufferLength, 1);
    return callNative(() => this.wrapBuffer(this.#addon.reserveAddressSpace(capacity)));
  }

  /**
   * Backs `[offset, offset + length)` of an address space with new device memory: one `cuMemCreate`, mapped
   * (`cuMemMap`) and made readable and writable by this device (`cuMemSetAccess`).
   */
  mapMemory(space: CudaBuffer, offset: number, length: number): void {
    const handle = this.handleOf(space, "buffer", "space", "mapMemory");
    if (space.released)
      throw new StateError("ERR_NUVEC_RELEASED", "mapMemory(): the space was already released");
    callNative(() => this.#addon.mapMemory(handle, offset, length));
  }

  /** Unmaps and frees exactly one earlier {@link mapMemory} range (after the device finished its work). */
  unmapMemory(space: CudaBuffer, offset: number, length: number): void {
    const handle = this.handleOf(space, "buffer", "space", "unmapMemory");
    if (space.released)
      throw new StateError("ERR_NUVEC_RELEASED", "unmapMemory(): the space was already released");
    callNative(() => this.#addon.unmapMemory(handle, offset, length));
  }

  /** The device's free and total memory in bytes, from the driver (`cuMemGetInfo`): all processes counted. */
  memoryInfo(): { free: number; total: number } {
    return callNative(() => this.#addon.memoryInfo());
  }

  /**
   * Copies the first `length` bytes of a wired mapped file into a buffer through the mapping's device
   * pointer (`cuMemcpyDtoD`: the GPU's copy engine reads the registered pages). Throws a
   * `ArgumentError` when the mapping is not wired.
   */
  copyFromMapping(
    buffer: CudaBuffer,
    mapping: CudaMappedFile,
    length: number = Math.min(buffer.length, mapping.length),
  ): void {
    const bufferHandle = this.handleOf(buffer, "buffer", "buffer", "copyFromMapping");
    const mappingHandle = this.handleOf(mapping, "mapped file", "mapping", "copyFromMapping");
    if (buffer.released)
      throw new StateError("ERR_NUVEC_RELEASED", "copyFromMapping(): the buffer was already released");
    if (mapping.released)
      throw new StateError("ERR_NUVEC_RELEASED", "copyFromMapping(): the mapped file was already released");
    checkByteCount(length, "length", Math.min(buffer.length, mapping.length));
    callNative(() => this.#addon.copyFromMapping(bufferHandle, mappingHandle, length));
  }

  /** Nanoseconds per `cuMemAlloc` + `cuMemFree` pair of `bytes`, timed in C++ over `count` pairs (benchmarks). */
  timeDriverAllocFree(bytes: number, count: number): number {
    checkByteCount(bytes, "bytes", this.maxBufferLength, 1);
    checkCount(count, "count", 10_000_000);
    return callNative(() => this.#addon.timeDriverAllocFree(bytes, count));
  }

  protected override wrapBuffer(raw: RawBufferHandle): CudaBuffer {
    return new CudaBuffer(raw as RawCudaBufferHandle, this);
  }

  protected override wrapRange(segment: CudaBuffer, offset: number, length: number): CudaBufferRange {
    return new CudaBufferRange(segment, offset, length);
  }

  protected override wrapMappedFile(raw: RawMappedFileHandle, path: string): CudaMappedFile {
    return new CudaMappedFile(raw as RawCudaMappedFileHandle, path, this);
  }

  protected override wrapResidencySet(raw: RawResidencySetHandle): CudaResidencySet {
    return new CudaResidencySet(raw, this);
  }
}
