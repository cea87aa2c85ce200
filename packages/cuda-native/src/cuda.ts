import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type BackendPlatform,
  type NativeAllocation,
  NativeAllocationError,
  NativeArgumentError,
  type NativeBackend,
  type NativeBuffer,
  type NativeCounters,
  NativeError,
  type NativeMappedFile,
  NativeNotHostVisibleError,
  NativeReleasedError,
  type NativeResidencySet,
  NativeSystemError,
  NativeUnavailableError,
  type NativeUnavailableReason,
} from "@nuvec/metal-native";
import {
  checkBufferLength,
  checkDeviceOrdinal,
  checkPath,
  checkRange,
  checkSource,
  describeValue,
} from "./arguments.js";

// ---------------------------------------------------------------------------------------------------------
// The raw addon (native/binding.cc). It checks its arguments again, and throws plain `Error`s with a `code`
// (and syscall, errno, errnoNumber, path, bytes, argument) that `typedError` turns into typed errors.

interface RawAllocationHandle {
  readonly length: number;
  readonly allocatedSize: number;
  readonly released: boolean;
  readonly devicePointer: bigint | undefined;
  contents(): ArrayBuffer;
  release(): void;
}

interface RawBufferHandle extends RawAllocationHandle {
  read(offset: number, length: number): ArrayBuffer;
  write(source: ArrayBuffer | ArrayBufferView, offset: number): void;
  detachContents(): void;
}

interface RawMappedFileHandle extends RawAllocationHandle {
  readonly mappedLength: number;
  detachContents(): void;
}

interface RawResidencySetHandle {
  readonly allocatedSize: number;
  readonly allocationCount: number;
  readonly wiringFailures: number;
  readonly lastWiringError: string | undefined;
  readonly released: boolean;
  add(allocation: RawAllocationHandle): void;
  remove(allocation: RawAllocationHandle): void;
  commit(): void;
  requestResidency(): void;
  endResidency(): void;
  release(): void;
}

interface RawFacts {
  name: string;
  platform: "cuda";
  memorySize: number;
  recommendedMaxWorkingSetSize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  supportsResidencySets: boolean;
  hostVisible: boolean;
  ordinal: number;
  driverVersion: number;
}

interface RawAddon {
  NativeBufferHandle: new (bytes: number) => RawBufferHandle;
  NativeMappedFileHandle: new (path: string) => RawMappedFileHandle;
  NativeResidencySetHandle: new () => RawResidencySetHandle;
  open(device: number): void;
  facts(): RawFacts;
  counters(): NativeCounters;
  lastWiringError(): string | undefined;
  attachResidencySet(set: RawResidencySetHandle): void;
  memoryInfo(): { free: number; total: number };
  copyFromMapping(buffer: RawBufferHandle, mapping: RawMappedFileHandle, length: number): void;
  timeDriverAllocFree(bytes: number, count: number): number;
  driverVersion(): number;
  noop(): void;
}

interface RawError {
  code?: unknown;
  message?: unknown;
  argument?: unknown;
  syscall?: unknown;
  errno?: unknown;
  errnoNumber?: unknown;
  path?: unknown;
  bytes?: unknown;
}

/** Turns an error thrown by the addon into the matching typed error; anything else passes through. */
function typedError(error: unknown): unknown {
  if (error instanceof NativeError || typeof error !== "object" || error === null) return error;
  const raw = error as RawError;
  const message = typeof raw.message === "string" ? raw.message : String(error);
  switch (raw.code) {
    case "ERR_NUVEC_INVALID_ARGUMENT":
      return new NativeArgumentError(typeof raw.argument === "string" ? raw.argument : "argument", message);
    case "ERR_NUVEC_RELEASED":
      return new NativeReleasedError(message);
    case "ERR_NUVEC_SYSTEM":
      return new NativeSystemError(
        String(raw.syscall),
        String(raw.errno),
        typeof raw.errnoNumber === "number" ? raw.errnoNumber : 0,
        message,
        typeof raw.path === "string" ? raw.path : undefined,
      );
    case "ERR_NUVEC_ALLOCATION_FAILED":
      return new NativeAllocationError(typeof raw.bytes === "number" ? raw.bytes : 0, message, {
        cause: error,
      });
    case "ERR_NUVEC_NATIVE_UNAVAILABLE":
      // The addon loaded; the system has no driver, no GPU or no such device for it.
      return new NativeUnavailableError(`@nuvec/cuda-native: ${message}`, {
        cause: error,
        reason: "backend-unavailable",
      });
    case "ERR_NUVEC_NOT_HOST_VISIBLE":
      return new NativeNotHostVisibleError(message);
    default:
      return error;
  }
}

function call<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    throw typedError(error);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Loading. There is no prebuilt addon (docs/DESIGN-NOTES.md, "CUDA backend"): the one place is the source build
// in native/build/Release/ (the workspace's build, or what `npx @nuvec/cuda-native build` made).

/** The addon's file name, in native/build/Release/ once built. */
const ADDON_FILE_NAME = "nuvec_cuda_native.node";

/** The package's root (where native/ and scripts/ are): one level above src/ and dist/ alike. */
function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..");
}

/** The command that builds the addon from source into the copy of the package at `root`. */
function buildCommand(root: string): string {
  return `npx @nuvec/cuda-native build (or: node "${join(root, "scripts", "build-from-source.mjs")}")`;
}

function unavailable(
  reason: NativeUnavailableReason,
  what: string,
  root: string,
  cause?: unknown,
): NativeUnavailableError {
  const where = `${process.platform}-${process.arch}, Node.js ${process.version}`;
  const remedy =
    reason === "unsupported-platform"
      ? " It runs on Linux with an NVIDIA driver only."
      : ` To build it from source, run ${buildCommand(root)}: it needs Python 3, make and a C++17 compiler ` +
        "(build-essential on Debian/Ubuntu), not the CUDA toolkit, and finds node-gyp itself.";
  return new NativeUnavailableError(
    `@nuvec/cuda-native: the CUDA backend cannot load on ${where}: ${what}.${remedy}`,
    cause === undefined ? { reason } : { reason, cause },
  );
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}

/**
 * @internal Finds and loads the addon of the package at `root` on `platform`: the file `override` names (the
 * loader passes `NUVEC_CUDA_NATIVE_ADDON`, set by the bundled GPU runs of gpu/run.sh), else
 * native/build/Release/. Returns it, or the {@link NativeUnavailableError} saying why not and how to build
 * it (`no-prebuilt`: not built; `load-failed`: there but does not load; `unsupported-platform`: not Linux).
 * Does not open a device: that is where no driver or no GPU shows (`backend-unavailable`).
 */
export function findCudaAddon(
  root: string,
  platform: NodeJS.Platform,
  override: string | undefined,
): { addon: RawAddon } | { error: NativeUnavailableError } {
  if (platform !== "linux")
    return { error: unavailable("unsupported-platform", "CUDA's driver API is used on Linux only", root) };
  const named = override !== undefined && override !== "";
  const file = named ? override : join(root, "native", "build", "Release", ADDON_FILE_NAME);
  if (!named && !existsSync(file))
    return {
      error: unavailable(
        "no-prebuilt",
        `the addon is not built (no ${file}; @nuvec/cuda-native ships no prebuilt addon)`,
        root,
      ),
    };
  const origin = named ? `${file} (NUVEC_CUDA_NATIVE_ADDON)` : file;
  let addon: RawAddon;
  try {
    addon = createRequire(import.meta.url)(file) as RawAddon;
  } catch (error) {
    return {
      error: unavailable("load-failed", `${origin} does not load (${firstLine(error)})`, root, error),
    };
  }
  if (typeof addon?.open !== "function" || typeof addon.facts !== "function")
    return { error: unavailable("load-failed", `${origin} is not the @nuvec/cuda-native addon`, root) };
  return { addon };
}

let loaded: { addon: RawAddon } | { error: NativeUnavailableError } | undefined;

function loadAddon(): RawAddon {
  if (loaded === undefined)
    loaded = findCudaAddon(packageRoot(), process.platform, process.env.NUVEC_CUDA_NATIVE_ADDON);
  if ("error" in loaded) throw loaded.error;
  return loaded.addon;
}

/** Options of {@link loadCudaBackend}. */
export interface CudaBackendOptions {
  /** The CUDA device ordinal (default 0). One device per thread. */
  device?: number;
}

const backends = new Map<number, CudaBackend>();

/**
 * The CUDA backend of device `device` (default 0): a {@link NativeBackend} over device memory, the driver
 * API loaded at run time (`dlopen("libcuda.so.1")`). The same object on every call within a thread.
 *
 * @throws NativeArgumentError for a bad `device` (before the driver is touched).
 * @throws NativeUnavailableError where there is no driver, no GPU or no such device (`reason`
 *   `backend-unavailable`), where the addon is not built (`no-prebuilt`: the package ships none; the message
 *   names the build command, `npx @nuvec/cuda-native build`) or does not load (`load-failed`), and off Linux
 *   (`unsupported-platform`); the message says which.
 */
export function loadCudaBackend(options: CudaBackendOptions = {}): CudaBackend {
  if (typeof options !== "object" || options === null) {
    throw new NativeArgumentError(
      "options",
      `options must be an object, got ${typeof options} ${describeValue(options)}`,
    );
  }
  // `null` is refused like any other non-ordinal: only a missing device means device 0.
  const device = options.device === undefined ? 0 : checkDeviceOrdinal(options.device);
  const existing = backends.get(device);
  if (existing !== undefined) return existing;
  const addon = loadAddon();
  call(() => addon.open(device));
  const backend = new CudaBackend(addon);
  backends.set(device, backend);
  return backend;
}

// ---------------------------------------------------------------------------------------------------------
// Handles: every argument is checked here, before native code runs.

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
 * A buffer of device memory (`cuMemAlloc`). The CPU cannot address it: `contents()` throws a
 * {@link NativeNotHostVisibleError}; `read` and `write` copy (`cuMemcpyDtoH` / `cuMemcpyHtoD`).
 */
export class CudaBuffer implements NativeBuffer {
  /** The bytes asked for. */
  readonly length: number;
  /** The bytes allocated: 256-byte steps up to a 16 KiB page, whole pages beyond. */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawBufferHandle;
  /** @internal */
  readonly owner: CudaBackend;
  #released = false;

  /** @internal Made by {@link CudaBackend.newBuffer}. */
  constructor(raw: RawBufferHandle, owner: CudaBackend) {
    this.raw = raw;
    this.owner = owner;
    this.length = raw.length;
    this.allocatedSize = raw.allocatedSize;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    return this.#released;
  }

  /** Always throws: device memory has no CPU address ({@link NativeNotHostVisibleError}; after release, {@link NativeReleasedError}). */
  contents(): ArrayBuffer {
    this.#assertLive("contents");
    return call(() => this.raw.contents());
  }

  /** Nothing to detach (no view is ever handed out); throws after release, as on every backend. */
  detachContents(): void {
    this.#assertLive("detachContents");
  }

  /** Copies `length` bytes from `offset` to a new `Uint8Array` (`cuMemcpyDtoH`, synchronous). */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    this.#assertLive("read");
    checkRange(offset, "offset", this.length);
    checkRange(length, "length", this.length - offset);
    return new Uint8Array(call(() => this.raw.read(offset, length)));
  }

  /** Copies `source` into the buffer at `offset` (`cuMemcpyHtoD`, synchronous). */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.#assertLive("write");
    checkSource(source);
    checkRange(offset, "offset", this.length);
    if (source.byteLength > this.length - offset) {
      throw new NativeArgumentError(
        "source",
        `write(): ${source.byteLength} bytes do not fit at offset ${offset} of a ${this.length}-byte buffer`,
      );
    }
    // The addon reads ArrayBuffers and views of them; a view of a SharedArrayBuffer is copied first.
    const plain =
      ArrayBuffer.isView(source) && !(source.buffer instanceof ArrayBuffer)
        ? new Uint8Array(source.buffer, source.byteOffset, source.byteLength).slice()
        : source;
    call(() => this.raw.write(plain, offset));
  }

  /** The device address, for other CUDA code (kernels, cuBLAS, PyTorch's `from_blob`). Throws after release. */
  nativeHandle(): CudaBufferHandle {
    this.#assertLive("nativeHandle");
    return {
      platform: "cuda",
      devicePointer: this.raw.devicePointer as bigint,
      device: this.owner.device,
    };
  }

  /** Gives the memory back (`cuMemFree`, once no residency set holds it). A second call throws. */
  release(): void {
    this.#assertLive("release");
    this.#released = true;
    call(() => this.raw.release());
  }

  #assertLive(method: string): void {
    if (this.#released) throw new NativeReleasedError(`${method}(): the buffer was already released`);
  }
}

/**
 * A file mapped private and copy-on-write, as on the host: the CPU reads it through `contents()`. Wired (in a
 * residency set with residency requested), it is also page-locked and registered with the driver, read-only:
 * `nativeHandle().devicePointer` then reaches it from the GPU, and copies from it run at pinned speed.
 */
export class CudaMappedFile implements NativeMappedFile {
  /** The path it was mapped from. */
  readonly path: string;
  /** The file's length in bytes. */
  readonly length: number;
  /** The mapped length: whole 16 KiB pages. */
  readonly mappedLength: number;
  /** The bytes the mapping holds (the mapped length). */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawMappedFileHandle;
  /** @internal */
  readonly owner: CudaBackend;
  #released = false;

  /** @internal Made by {@link CudaBackend.mapFile}. */
  constructor(raw: RawMappedFileHandle, path: string, owner: CudaBackend) {
    this.raw = raw;
    this.owner = owner;
    this.path = path;
    this.length = raw.length;
    this.mappedLength = raw.mappedLength;
    this.allocatedSize = raw.allocatedSize;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    return this.#released;
  }

  /** The file's bytes as an external `ArrayBuffer` (writes stay private), detached on release. */
  contents(): ArrayBuffer {
    if (this.#released) throw new NativeReleasedError("contents(): the mapped file was already released");
    return call(() => this.raw.contents());
  }

  /** Detaches the views handed out so far (a deferred release); the next `contents()` makes a new one. */
  detachContents(): void {
    if (this.#released)
      throw new NativeReleasedError("detachContents(): the mapped file was already released");
    call(() => this.raw.detachContents());
  }

  /** The registered mapping's device address while wired (else `undefined`). Throws after release. */
  nativeHandle(): CudaMappedFileHandle {
    if (this.#released) throw new NativeReleasedError("nativeHandle(): the mapped file was already released");
    return { platform: "cuda", devicePointer: this.raw.devicePointer, device: this.owner.device };
  }

  /** Unmaps the file (once no residency set holds it) and detaches every view. A second call throws. */
  release(): void {
    if (this.#released) throw new NativeReleasedError("release(): the mapped file was already released");
    this.#released = true;
    call(() => this.raw.release());
  }
}

/**
 * A residency set with MLX's semantics. On CUDA, device buffers are resident by nature (wiring counts them);
 * mapped files are wired by page-locking and registering them with the driver (`cuMemHostRegister`,
 * read-only, device-mapped) and unwired by unregistering them. A failed registration is counted, never thrown.
 */
export class CudaResidencySet implements NativeResidencySet {
  /** @internal */
  readonly raw: RawResidencySetHandle;
  /** @internal */
  readonly owner: CudaBackend;
  #released = false;

  /** @internal Made by {@link CudaBackend.newResidencySet}. */
  constructor(raw: RawResidencySetHandle, owner: CudaBackend) {
    this.raw = raw;
    this.owner = owner;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    return this.#released;
  }

  /** Bytes of the committed allocations. */
  get allocatedSize(): number {
    return this.raw.allocatedSize;
  }

  /** Number of committed allocations. */
  get allocationCount(): number {
    return this.raw.allocationCount;
  }

  /** Times wiring failed in this set (the driver refused a registration). */
  get wiringFailures(): number {
    return this.raw.wiringFailures;
  }

  /** What the last wiring failure was, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    return this.raw.lastWiringError;
  }

  /** Adds an allocation of this backend (effective at the next commit). Throws for a released one. */
  add(allocation: NativeAllocation): void {
    this.#assertLive("add");
    const raw = this.#rawOf(allocation, "add");
    if (allocation.released) throw new NativeReleasedError("add(): the allocation was already released");
    call(() => this.raw.add(raw));
  }

  /** Removes an allocation (effective at the next commit); a released one may be removed. */
  remove(allocation: NativeAllocation): void {
    this.#assertLive("remove");
    const raw = this.#rawOf(allocation, "remove");
    call(() => this.raw.remove(raw));
  }

  /** Applies the adds and removes since the last commit. */
  commit(): void {
    this.#assertLive("commit");
    call(() => this.raw.commit());
  }

  /** Wires every committed allocation, and keeps doing so for later commits. */
  requestResidency(): void {
    this.#assertLive("requestResidency");
    call(() => this.raw.requestResidency());
  }

  /** Ends the residency request: nothing in the set stays wired (mapped files are unregistered). */
  endResidency(): void {
    this.#assertLive("endResidency");
    call(() => this.raw.endResidency());
  }

  /** Ends residency and frees the set (and what only it still held); further calls throw. */
  release(): void {
    this.#assertLive("release");
    this.#released = true;
    call(() => this.raw.release());
  }

  #rawOf(allocation: NativeAllocation, method: string): RawAllocationHandle {
    if (
      (allocation instanceof CudaBuffer || allocation instanceof CudaMappedFile) &&
      allocation.owner === this.owner
    ) {
      return allocation.raw;
    }
    throw new NativeArgumentError(
      "allocation",
      `${method}(): the allocation must be a buffer or mapped file of this backend`,
    );
  }

  #assertLive(method: string): void {
    if (this.#released) throw new NativeReleasedError(`${method}(): the residency set was already released`);
  }
}

/**
 * An NVIDIA GPU as a {@link NativeBackend}: device facts read once (total memory as the working set, a
 * 16 KiB page), buffers of device memory, mapped files wired by registration. Get it from
 * {@link loadCudaBackend}.
 */
export class CudaBackend implements NativeBackend {
  /** The GPU's name, e.g. `"NVIDIA H200"`. */
  readonly name: string;
  /** `"cuda"`. */
  readonly platform: BackendPlatform;
  /** The device's total memory (`cuDeviceTotalMem`). */
  readonly memorySize: number;
  /** The device's total memory, as MLX's CUDA backend takes it. */
  readonly recommendedMaxWorkingSetSize: number;
  /** The largest buffer: the total memory in whole pages. */
  readonly maxBufferLength: number;
  /** CUDA sets no limit on the number of allocations: 2³¹ − 1. */
  readonly resourceLimit: number;
  /** 16 KiB, MLX's CUDA allocator's page. */
  readonly pageSize: number;
  /** True: residency sets keep MLX's semantics (see {@link CudaResidencySet}). */
  readonly supportsResidencySets: boolean;
  /** False: buffers are device memory; copy with `read`/`write`. */
  readonly hostVisible: boolean;
  /** The device's ordinal. */
  readonly device: number;
  /** The driver's version (`cuDriverGetVersion`, e.g. 13000 for CUDA 13.0). */
  readonly driverVersion: number;
  readonly #addon: RawAddon;

  /** @internal Use {@link loadCudaBackend}. */
  constructor(addon: RawAddon) {
    this.#addon = addon;
    const facts = call(() => addon.facts());
    this.name = facts.name;
    this.platform = facts.platform;
    this.memorySize = facts.memorySize;
    this.recommendedMaxWorkingSetSize = facts.recommendedMaxWorkingSetSize;
    this.maxBufferLength = facts.maxBufferLength;
    this.resourceLimit = facts.resourceLimit;
    this.pageSize = facts.pageSize;
    this.supportsResidencySets = facts.supportsResidencySets;
    this.hostVisible = facts.hostVisible;
    this.device = facts.ordinal;
    this.driverVersion = facts.driverVersion;
  }

  /** A new buffer of device memory (not zeroed). Throws {@link NativeAllocationError} when the driver refuses. */
  newBuffer(bytes: number): CudaBuffer {
    checkBufferLength(bytes, this.maxBufferLength);
    return call(() => new CudaBuffer(new this.#addon.NativeBufferHandle(bytes), this));
  }

  /** Maps a whole file private and copy-on-write. Throws a {@link NativeSystemError} for a file that cannot be. */
  mapFile(path: string): CudaMappedFile {
    checkPath(path);
    return call(() => new CudaMappedFile(new this.#addon.NativeMappedFileHandle(path), path, this));
  }

  /** A new residency set. */
  newResidencySet(): CudaResidencySet | undefined {
    try {
      return new CudaResidencySet(new this.#addon.NativeResidencySetHandle(), this);
    } catch {
      // The interface's contract: a set that cannot be made is `undefined`, and the caller runs unwired.
      return undefined;
    }
  }

  /** Nothing to attach on CUDA (no command queue holds sets); checks the set. */
  attachResidencySet(set: NativeResidencySet): void {
    if (!(set instanceof CudaResidencySet) || set.owner !== this) {
      throw new NativeArgumentError(
        "set",
        "attachResidencySet(): the set must be a residency set of this backend",
      );
    }
    if (set.released)
      throw new NativeReleasedError("attachResidencySet(): the residency set was already released");
    call(() => this.#addon.attachResidencySet(set.raw));
  }

  /** Counters for leak checks and tests. */
  counters(): NativeCounters {
    return this.#addon.counters();
  }

  /** What the last wiring failure of any set was, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    return this.#addon.lastWiringError();
  }

  /** The device's free and total memory in bytes, from the driver (`cuMemGetInfo`): all processes counted. */
  memoryInfo(): { free: number; total: number } {
    return call(() => this.#addon.memoryInfo());
  }

  /**
   * Copies the first `length` bytes of a wired mapped file into a buffer through the mapping's device
   * pointer (`cuMemcpyDtoD`: the GPU's copy engine reads the registered pages). Throws a
   * {@link NativeArgumentError} when the mapping is not wired.
   */
  copyFromMapping(
    buffer: CudaBuffer,
    mapping: CudaMappedFile,
    length: number = Math.min(buffer.length, mapping.length),
  ): void {
    if (!(buffer instanceof CudaBuffer) || buffer.owner !== this) {
      throw new NativeArgumentError(
        "buffer",
        "copyFromMapping(): the buffer must be a buffer of this backend",
      );
    }
    if (!(mapping instanceof CudaMappedFile) || mapping.owner !== this) {
      throw new NativeArgumentError(
        "mapping",
        "copyFromMapping(): the mapping must be a mapped file of this backend",
      );
    }
    if (buffer.released) throw new NativeReleasedError("copyFromMapping(): the buffer was already released");
    if (mapping.released)
      throw new NativeReleasedError("copyFromMapping(): the mapped file was already released");
    checkRange(length, "length", Math.min(buffer.length, mapping.length));
    call(() => this.#addon.copyFromMapping(buffer.raw, mapping.raw, length));
  }

  /** Nanoseconds per `cuMemAlloc` + `cuMemFree` pair of `bytes`, timed in C++ over `count` pairs (benchmarks). */
  timeDriverAllocFree(bytes: number, count: number): number {
    checkBufferLength(bytes, this.maxBufferLength);
    checkRange(count, "count", 10_000_000);
    return call(() => this.#addon.timeDriverAllocFree(bytes, count));
  }

  /** Does nothing in native code: what one call across N-API costs (for benchmarks). */
  emptyCall(): void {
    this.#addon.noop();
  }
}
