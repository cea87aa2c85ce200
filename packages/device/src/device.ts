import {
  type Allocation,
  type AllocatorCounters,
  type AllocatorPolicy,
  type BoundedRelease,
  CachingAllocator,
  type Mapping,
} from "@nuvec/allocator";
import {
  type DeviceFacts,
  deviceFacts,
  loadNativeBackend,
  type NativeAllocation,
  type NativeBackend,
  type NativeBuffer,
  type NativeCounters,
  type NativeMappedFile,
  type NativeMemoryHandle,
  type NativeResidencySet,
} from "@nuvec/metal-native";
import { Residency } from "@nuvec/residency";
import { assertByteCount, type MemoryStats } from "@nuvec/stats";
import {
  BufferFreedError,
  DeviceArgumentError,
  DeviceClosedError,
  ForeignBufferError,
  MappingReleasedError,
  MemoryNotHostVisibleError,
  TraceRecordingError,
  WiredLimitError,
} from "./errors.js";
import { type DeviceTrace, TraceRecorder } from "./trace.js";

/** Options of {@link Device.open}. Limits left out keep MLX's defaults. */
export interface DeviceOptions {
  /** The backend to run on: the real native one (Metal on macOS, host memory elsewhere) by default. */
  backend?: NativeBackend;
  /** The hard limit on `active + mapped` (default `min(1.5·W, 0.95·memory)`). */
  memoryLimit?: number;
  /** The cache is trimmed to this many bytes (default: the memory limit). */
  cacheLimit?: number;
  /** Bytes kept wired (resident); default 0, as MLX: nothing wired until asked. */
  wiredLimit?: number;
  /** The cache policy: `"mlx"` (default, MLX's decisions exactly) or `"bounded"`. */
  policy?: AllocatorPolicy;
  /** For the `"bounded"` policy: reserved memory held within this ratio of the high-water mark (default 1.3). */
  reserveRatio?: number;
  /** For the `"bounded"` policy: which cached buffer goes first, `"least-recent"` (default) or `"largest"`. */
  boundedRelease?: BoundedRelease;
  /**
   * The per-set cap of residency sets, as the text of `MLX_RESIDENCY_SET_MAX_PCT` (percent of the working
   * set; `"0"` or `"100"`: one set). Default: that environment variable, else 5.
   */
  residencySetMaxPercent?: string;
  /**
   * Give back buffers dropped without `free()` (a `FinalizationRegistry`, counted in `leakedBuffers`).
   * Default true. It costs about 0.2 µs per malloc + free; a runtime that frees every buffer itself (e.g. with
   * `using`) can turn it off.
   */
  safetyNet?: boolean;
  /**
   * Renew every residency request this often, in milliseconds (an unref'd timer): some macOS versions drop
   * residency after the GPU idles. Default: off.
   */
  residencyKeepAliveMilliseconds?: number;
  /**
   * Metal only: where a runtime's own kernels run, as pointers (`bigint`). `commandQueue` (an
   * `id<MTLCommandQueue>`): nuvec's residency sets are attached to it instead of the addon's private queue
   * (and removed from it before they are released), so the runtime's command buffers see them. `device` (an
   * `id<MTLDevice>`): checked to be the GPU nuvec's buffers come from. Refused on other backends with a
   * {@link DeviceArgumentError} naming the option.
   */
  metal?: MetalOptions;
}

/** The runtime's Metal objects, as pointers (see {@link DeviceOptions.metal}). */
export interface MetalOptions {
  /** The runtime's `id<MTLCommandQueue>`, e.g. `(uint64_t)(__bridge void*)queue` passed to JavaScript as a BigInt. */
  commandQueue?: bigint;
  /** The runtime's `id<MTLDevice>`. */
  device?: bigint;
}

/** Options of `buffer.free()` and `mappedFile.release()`. */
export interface FreeOptions {
  /**
   * Free only once this promise settles (fulfilled or rejected): views are detached at once, but the memory
   * is neither cached, reused nor unmapped until then, and counts in `active` (or `mapped`) and in
   * `pendingFrees` meanwhile. Pass the promise of the kernel still using the memory. A promise that never
   * settles keeps the memory for the life of the process: a leak, counted in `pendingFrees`.
   */
  after?: PromiseLike<unknown>;
}

/**
 * A {@link NativeMemoryHandle} (the backend's pointers) with the allocation's lengths: what a runtime's
 * native code needs to run a kernel on nuvec memory. Frozen; valid until the buffer is freed (or the file
 * released), and after a deferred free until its promise settles.
 */
export type DeviceMemoryHandle = NativeMemoryHandle & {
  /** Bytes the caller may use: the bytes asked for (buffers) or the file's length (mapped files). */
  readonly length: number;
  /** Bytes behind the address: the size class handed out (buffers) or the mapped length (mapped files). */
  readonly allocatedLength: number;
};

/** Node's timers take at most 2³¹−1 ms; a longer delay silently becomes 1 ms (TimeoutOverflowWarning). */
const MAX_TIMER_MILLISECONDS = 2 ** 31 - 1;

/** A keep-alive interval that a timer honours as given: positive, finite, at most 2³¹−1 ms. */
function isTimerInterval(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 && value <= MAX_TIMER_MILLISECONDS;
}

/** What a device is and how it is set up (see {@link Device.info}). */
export interface DeviceInfo extends DeviceFacts {
  /** The cache policy in use. */
  readonly policy: AllocatorPolicy;
  /** Whether buffers can be wired on this device (residency sets available and the first one made). */
  readonly residencySupported: boolean;
  /** Residency sets in use. */
  readonly residencySets: number;
  /** Above `active + mapped + cache + request`, cached buffers are released before a new one is made. */
  readonly gcLimit: number;
  /** Whether the device was closed. */
  readonly closed: boolean;
}

/** Counters beyond {@link MemoryStats}: the allocator's, the backend's, and the device's own. */
export interface DeviceCounters extends AllocatorCounters {
  /** Buffers dropped without `free()` and given back by the safety net (a `FinalizationRegistry`). */
  leakedBuffers: number;
  /** Live `DeviceBuffer`s. */
  liveDeviceBuffers: number;
  /** Live mapped files. */
  liveMappedFiles: number;
  /**
   * Buffers and mapped files freed with `{ after }` whose promise has not settled yet: their memory is
   * still in use (counted in `active` or `mapped`) and will be freed when it does.
   */
  pendingFrees: number;
  /**
   * Bytes the platform really wired (host: locked by `mlock`), next to `memoryStats().wired`, which is what
   * residency asked for (MLX's figure). They differ when the system refused to wire (e.g. `RLIMIT_MEMLOCK`).
   * The backend's count: every Device on the same backend (thread) shares it.
   */
  wiredByPlatform: number;
  /** Times the platform refused to wire (the backend's count, shared like `wiredByPlatform`). */
  wiringFailures: number;
  /** What the native backend counted. */
  backend: NativeCounters;
}

/** The state behind one `malloc`, kept apart from the `DeviceBuffer` so the safety net can free it. */
interface BufferRecord {
  allocation: Allocation<NativeBuffer>;
  live: boolean;
  // The device's live records form an intrusive list: linking and unlinking cost a few nanoseconds on the
  // malloc/free path, where a Set's hashing cost tens.
  previous: BufferRecord | undefined;
  next: BufferRecord | undefined;
}

/** A byte count argument, refused with a {@link DeviceArgumentError} (with a `code`) like every other. */
function checkByteCount(value: unknown, name: string): asserts value is number {
  try {
    assertByteCount(value, name);
  } catch (error) {
    throw new DeviceArgumentError(name, (error as Error).message, { cause: error });
  }
}

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

/** Keeps each handed-out ArrayBuffer's DeviceBuffer alive (a WeakMap keeps its value while the key lives). */
const ownerOfView = new WeakMap<ArrayBuffer, DeviceBuffer>();

const EMPTY = new ArrayBuffer(0);

/** The handle of a 0-byte buffer: no memory, every pointer 0 (as MLX gives a zero-size array no buffer). */
function nullHandle(backend: NativeBackend): NativeMemoryHandle {
  const platform = backend.platform;
  if (platform === "cuda") {
    const device = (backend as { device?: unknown }).device;
    return { platform, devicePointer: 0n, device: typeof device === "number" ? device : 0 };
  }
  const pointers = platform === "metal" || platform === "mock" ? { metalBuffer: 0n, gpuAddress: 0n } : {};
  return { platform, address: 0n, ...pointers } as NativeMemoryHandle;
}

/** Checks `free`/`release` options: `after`, when given, must be a thenable (a promise). */
function checkFreeOptions(options: unknown, operation: string): PromiseLike<unknown> | undefined {
  if (options === undefined) return undefined;
  if (options === null || typeof options !== "object") {
    throw new DeviceArgumentError(
      "options",
      `${operation}: options must be an object, got ${String(options)}`,
    );
  }
  const after = (options as FreeOptions).after;
  if (after === undefined) return undefined;
  if (
    (typeof after !== "object" && typeof after !== "function") ||
    after === null ||
    typeof (after as { then?: unknown }).then !== "function"
  ) {
    throw new DeviceArgumentError(
      "after",
      `${operation}: after must be a promise (a thenable), got ${after === null ? "null" : typeof after}`,
    );
  }
  return after;
}

/**
 * Checks `Device.open`'s `metal` option against the backend: pointers well-formed, the backend a Metal one
 * (anything else is refused, naming the options given), and the runtime's device the backend's GPU.
 */
function checkMetalOptions(metal: unknown, backend: NativeBackend): void {
  if (metal === null || typeof metal !== "object") {
    throw new DeviceArgumentError("metal", "Device.open(options): metal must be an object");
  }
  const { commandQueue, device } = metal as MetalOptions;
  checkPointerOption(commandQueue, "metal.commandQueue");
  checkPointerOption(device, "metal.device");
  const given = [
    ...(commandQueue === undefined ? [] : ["metal.commandQueue"]),
    ...(device === undefined ? [] : ["metal.device"]),
  ];
  if (given.length === 0) return;
  if (backend.platform !== "metal") {
    throw new DeviceArgumentError(
      given[0] as string,
      `Device.open(): ${given.join(" and ")} ${given.length > 1 ? "are" : "is"} for the Metal backend; ` +
        `this device runs on the ${backend.platform} backend, which has no Metal queue or device`,
    );
  }
  if (device === undefined) return;
  if (backend.checkMetalDevice === undefined) {
    throw new DeviceArgumentError("metal.device", "Device.open(): this Metal backend cannot check a device");
  }
  try {
    backend.checkMetalDevice(device);
  } catch (error) {
    throw new DeviceArgumentError(
      "metal.device",
      `Device.open(): metal.device: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Runs `settle` once `after` settles, fulfilled or rejected. A failure inside `settle` (say, a backend closed
 * under the device) must not become an unhandled rejection, which would end the process: it is reported as
 * a process warning instead.
 */
function settleAfter(after: PromiseLike<unknown>, settle: () => void): void {
  const run = () => {
    try {
      settle();
    } catch (error) {
      const warn = globalThis.process?.emitWarning;
      if (typeof warn === "function") {
        warn.call(
          globalThis.process,
          `nuvec: a deferred free failed: ${(error as Error)?.message ?? error}`,
          {
            code: "NUVEC_DEFERRED_FREE_FAILED",
          },
        );
      }
    }
  };
  Promise.resolve(after).then(run, run);
}

/** Checks one pointer of the `metal` option: a bigint in (0, 2^64). */
function checkPointerOption(value: unknown, name: string): void {
  if (value === undefined) return;
  if (typeof value !== "bigint" || value <= 0n || value >= 1n << 64n) {
    throw new DeviceArgumentError(name, `${name} must be a non-zero 64-bit pointer given as a bigint`);
  }
}

/**
 * A block of device memory from {@link Device.malloc}. Free it with `free()` (or `using`); a buffer dropped
 * without `free()` is given back by a safety net, but only once no view over it is reachable.
 */
export class DeviceBuffer {
  readonly #device: Device;
  readonly #record: BufferRecord;
  // A 0-byte buffer's own empty ArrayBuffer: never one shared by all, which a transfer() would detach for
  // every 0-byte buffer of the process.
  #empty: ArrayBuffer | undefined;
  // The views handed out since malloc, held until free(): the native addon holds them only weakly, and a
  // view collected before free() (its finalizer pending) cannot be told from one moved away by transfer(),
  // so the addon would quarantine the buffer instead of letting it be cached. An ordinary edge (not a GC
  // root): with ownerOfView it forms a cycle that is collected as a whole, so the safety net still works.
  #views: ArrayBuffer[] = [];

  /** @internal Made by {@link Device.malloc}. */
  constructor(device: Device, record: BufferRecord) {
    this.#device = device;
    this.#record = record;
  }

  /** The bytes asked for. */
  get length(): number {
    return this.#record.allocation.requested;
  }

  /** The bytes charged in `active`: the size class handed out (a reused cached buffer may be larger). */
  get allocatedLength(): number {
    return this.#record.allocation.allocatedLength;
  }

  /** True once freed. */
  get freed(): boolean {
    return !this.#record.live;
  }

  /** The device this buffer belongs to. */
  get device(): Device {
    return this.#device;
  }

  /**
   * The buffer's memory as an `ArrayBuffer` without a copy (`allocatedLength` bytes; the first `length` are
   * yours). Every `ArrayBuffer` handed out is detached when the buffer is freed: an old view then reads
   * `byteLength` 0 and can never reach the next owner's data.
   */
  contents(): ArrayBuffer {
    this.#check("contents()");
    // Device memory (CUDA) has no CPU address: say so, rather than whatever the backend would throw.
    if (this.#device.backend.hostVisible === false) throw new MemoryNotHostVisibleError("contents()");
    const buffer = this.#record.allocation.buffer;
    if (buffer === undefined) {
      if (this.#empty === undefined || isDetached(this.#empty)) this.#empty = new ArrayBuffer(0);
      return this.#empty;
    }
    const view = buffer.contents();
    if (this.#views.at(-1) !== view) {
      this.#views.push(view);
      ownerOfView.set(view, this);
    }
    return view;
  }

  /** A `Uint8Array` over the first `length` bytes of {@link contents}. */
  bytes(): Uint8Array {
    return new Uint8Array(this.contents(), 0, this.length);
  }

  /**
   * Copies `source` (an `ArrayBuffer` or any view of one) into the buffer at `offset` (default 0): through
   * the backend on devices whose memory the CPU cannot address (CUDA), a plain copy through `contents()`
   * elsewhere, so the same program runs on every backend. Must fit within `length`.
   */
  write(source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    this.#check("write()");
    if (!(source instanceof ArrayBuffer || ArrayBuffer.isView(source))) {
      throw new DeviceArgumentError(
        "source",
        "write(source): source must be an ArrayBuffer or an ArrayBuffer view",
      );
    }
    this.#checkSpan("write()", offset, source.byteLength);
    const buffer = this.#record.allocation.buffer;
    if (buffer === undefined || source.byteLength === 0) return;
    if (buffer.write !== undefined) {
      buffer.write(source, offset);
      return;
    }
    const bytes =
      source instanceof ArrayBuffer
        ? new Uint8Array(source)
        : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
    new Uint8Array(buffer.contents(), offset, bytes.byteLength).set(bytes);
  }

  /**
   * A copy of `length` bytes from `offset` (default: from 0 to the end of `length`), as a new `Uint8Array`:
   * through the backend where the CPU cannot address the memory, through `contents()` elsewhere.
   */
  read(offset = 0, length: number = this.length - offset): Uint8Array {
    this.#check("read()");
    this.#checkSpan("read()", offset, length);
    const buffer = this.#record.allocation.buffer;
    if (buffer === undefined || length === 0) return new Uint8Array(0);
    if (buffer.read !== undefined) return buffer.read(offset, length);
    return new Uint8Array(buffer.contents(), offset, length).slice();
  }

  /**
   * Where the memory is, for a runtime's native code (a kernel): the backend's pointers (`address`; on Metal
   * `metalBuffer` and `gpuAddress`) with `length` and `allocatedLength`. Frozen; valid until the buffer is
   * freed (with `{ after }`: until that promise settles). A 0-byte buffer's pointers are all `0n`. Throws
   * `BufferFreedError` after `free()`.
   */
  nativeHandle(): DeviceMemoryHandle {
    this.#check("nativeHandle()");
    const allocation = this.#record.allocation;
    const native = allocation.buffer?.nativeHandle() ?? nullHandle(this.#device.backend);
    return Object.freeze({
      ...native,
      length: allocation.requested,
      allocatedLength: allocation.allocatedLength,
    });
  }

  /**
   * Gives the buffer back to the device (to its cache, or to the system). A second call throws.
   * `{ after: promise }`: views are detached now, the memory is given back once the promise settles (see
   * {@link FreeOptions}).
   */
  free(options?: FreeOptions): void {
    this.#device.free(this, options);
  }

  /** `using buffer = device.malloc(n)` frees it at the end of the scope (no error if already freed). */
  [Symbol.dispose](): void {
    if (this.#record.live && !this.#device.closed) this.#device.free(this);
  }

  /** @internal */
  get record(): BufferRecord {
    return this.#record;
  }

  /** @internal The device freed it: its views are detached and need not be held any more. */
  forgetViews(): void {
    this.#views = [];
  }

  #check(operation: string): void {
    if (this.#device.closed) throw new DeviceClosedError(operation);
    if (!this.#record.live) throw new BufferFreedError(operation);
  }

  /** `offset` and `length` must be whole numbers with `offset + length ≤ this.length`. */
  #checkSpan(operation: string, offset: unknown, length: unknown): void {
    if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0 || offset > this.length) {
      throw new DeviceArgumentError(
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
      throw new DeviceArgumentError(
        "length",
        `${operation}: ${String(length)} bytes at offset ${offset} do not fit in a ${this.length}-byte buffer`,
      );
    }
  }
}

/** A file mapped without a copy by {@link Device.mapFile}: read-only by convention (writes stay private). */
export class MappedFile {
  readonly #device: Device;
  readonly #native: NativeMappedFile;
  readonly #mapping: Mapping;
  #live = true;

  /** @internal Made by {@link Device.mapFile}. */
  constructor(device: Device, native: NativeMappedFile, mapping: Mapping) {
    this.#device = device;
    this.#native = native;
    this.#mapping = mapping;
  }

  /** The path it was mapped from. */
  get path(): string {
    return this.#native.path;
  }

  /** The file's length in bytes. */
  get length(): number {
    return this.#native.length;
  }

  /** The bytes charged in `mapped`: the length rounded up to the system's pages. */
  get mappedLength(): number {
    return this.#mapping.mappedLength;
  }

  /** True once released. */
  get released(): boolean {
    return !this.#live;
  }

  /** The device this mapping belongs to. */
  get device(): Device {
    return this.#device;
  }

  /** The file's bytes without a copy; detached when the mapping is released. */
  contents(): ArrayBuffer {
    if (this.#device.closed) throw new DeviceClosedError("contents()");
    if (!this.#live) throw new MappingReleasedError("contents()");
    return this.#native.contents();
  }

  /**
   * Where the mapping is: its `address` is the file's first byte (see {@link DeviceBuffer.nativeHandle});
   * `allocatedLength` is the mapped length. Throws `MappingReleasedError` after `release()`.
   */
  nativeHandle(): DeviceMemoryHandle {
    if (this.#device.closed) throw new DeviceClosedError("nativeHandle()");
    if (!this.#live) throw new MappingReleasedError("nativeHandle()");
    return Object.freeze({
      ...this.#native.nativeHandle(),
      length: this.#native.length,
      allocatedLength: this.#native.mappedLength,
    });
  }

  /**
   * Unmaps the file. A second call throws. `{ after: promise }`: views are detached now, the file is
   * unmapped once the promise settles (see {@link FreeOptions}).
   */
  release(options?: FreeOptions): void {
    this.#device.releaseMapping(this, options);
  }

  /** `using file = device.mapFile(path)` releases it at the end of the scope. */
  [Symbol.dispose](): void {
    if (this.#live && !this.#device.closed) this.#device.releaseMapping(this);
  }

  /** @internal */
  get native(): NativeMappedFile {
    return this.#native;
  }

  /** @internal */
  get mapping(): Mapping {
    return this.#mapping;
  }

  /** @internal */
  markReleased(): void {
    this.#live = false;
  }
}

/**
 * A GPU (or host) device with MLX's caching allocator, hard memory limits, statistics, mapped files and
 * wired memory. Open one with {@link Device.open}; close it with {@link Device.close} (or `using`).
 */
export class Device {
  readonly #backend: NativeBackend;
  readonly #allocator: CachingAllocator<NativeBuffer>;
  readonly #residency: Residency<NativeAllocation, NativeResidencySet>;
  #liveHead: BufferRecord | undefined;
  #liveCount = 0;
  readonly #mappings = new Set<MappedFile>();
  readonly #safetyNet: FinalizationRegistry<BufferRecord> | undefined;
  #wiredLimit = 0;
  #leakedBuffers = 0;
  #closed = false;
  #keepAlive: ReturnType<typeof setInterval> | undefined;
  #wiringWarned = false;
  // The last statistics and counters, taken at close(), so they can still be read afterwards.
  #final: { stats: MemoryStats; counters: AllocatorCounters } | undefined;
  #trace: TraceRecorder | undefined;
  // Frees deferred with `{ after }` whose promise has not settled (see #deferFree).
  #pendingFrees = 0;
  // Every residency set made (Residency keeps them until close), for residencySetHandles().
  readonly #residencySets: NativeResidencySet[] = [];

  private constructor(backend: NativeBackend, options: DeviceOptions) {
    this.#backend = backend;
    const commandQueue = options.metal?.commandQueue;
    // The allocator first: it checks the limits and the policy, and a refused option must not leave a
    // residency set made on the backend (Residency makes its first set at once).
    this.#allocator = new CachingAllocator<NativeBuffer>(
      {
        recommendedMaxWorkingSetSize: backend.recommendedMaxWorkingSetSize,
        memorySize: backend.memorySize,
        maxBufferLength: backend.maxBufferLength,
        resourceLimit: backend.resourceLimit,
        pageSize: backend.pageSize,
        acquire: (bytes) => backend.newBuffer(bytes),
        release: (buffer) => buffer.release(),
      },
      {
        ...(options.memoryLimit === undefined ? {} : { memoryLimit: options.memoryLimit }),
        ...(options.cacheLimit === undefined ? {} : { cacheLimit: options.cacheLimit }),
        ...(options.policy === undefined ? {} : { policy: options.policy }),
        ...(options.reserveRatio === undefined ? {} : { reserveRatio: options.reserveRatio }),
        ...(options.boundedRelease === undefined ? {} : { boundedRelease: options.boundedRelease }),
        // Every system buffer is tracked by residency while it exists; cached ones stay wired, as MLX.
        onAcquire: (buffer) => this.#wiring(() => this.#residency.insert(buffer, false)),
        onRelease: (buffer) => this.#residency.erase(buffer),
      },
    );
    this.#residency = new Residency<NativeAllocation, NativeResidencySet>(
      {
        supportsResidencySets: backend.supportsResidencySets,
        newResidencySet: () => {
          const set = backend.newResidencySet();
          if (set !== undefined) this.#residencySets.push(set);
          return set;
        },
        // On the runtime's queue when it gave one (Metal), so its command buffers see the sets.
        attachResidencySet: (set) =>
          commandQueue === undefined
            ? backend.attachResidencySet(set)
            : backend.attachResidencySet(set, commandQueue),
        allocatedSize: (allocation) => allocation.allocatedSize,
      },
      {
        workingSet: backend.recommendedMaxWorkingSetSize,
        ...(options.residencySetMaxPercent === undefined
          ? {}
          : { maxPercentPerSet: options.residencySetMaxPercent }),
      },
    );
    this.#safetyNet =
      options.safetyNet === false ? undefined : new FinalizationRegistry((record) => this.#reclaim(record));
  }

  /**
   * Opens a device: the real native backend (Metal on macOS, host memory on Linux) unless `backend` is given
   * (e.g. `new MockBackend()` from `@nuvec/metal-native/mock` in tests).
   */
  static open(options: DeviceOptions = {}): Device {
    if (options === null || typeof options !== "object") {
      throw new DeviceArgumentError("options", "Device.open(options): options must be an object");
    }
    const keepAlive = options.residencyKeepAliveMilliseconds;
    if (keepAlive !== undefined && !isTimerInterval(keepAlive)) {
      throw new DeviceArgumentError(
        "residencyKeepAliveMilliseconds",
        `residencyKeepAliveMilliseconds must be a positive number of at most ${MAX_TIMER_MILLISECONDS}, got ${String(keepAlive)}`,
      );
    }
    if (options.wiredLimit !== undefined) checkByteCount(options.wiredLimit, "wiredLimit");
    const backend = options.backend ?? loadNativeBackend();
    if (options.metal !== undefined) checkMetalOptions(options.metal, backend);
    if (options.wiredLimit !== undefined && options.wiredLimit > backend.recommendedMaxWorkingSetSize) {
      throw new WiredLimitError(options.wiredLimit, backend.recommendedMaxWorkingSetSize);
    }
    const device = new Device(backend, options);
    if (options.wiredLimit !== undefined) device.setWiredLimit(options.wiredLimit);
    if (keepAlive !== undefined) device.startResidencyKeepAlive(keepAlive);
    return device;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The native backend this device runs on. */
  get backend(): NativeBackend {
    return this.#backend;
  }

  /**
   * A buffer of `bytes` bytes: a cached one when one fits (MLX's policy), else a new system buffer.
   * `0` gives an empty buffer, counted nowhere. Throws `OutOfMemoryError` past the memory limit (nothing
   * changed), and argument errors for sizes that are not non-negative safe integers or exceed the device's
   * max buffer length.
   */
  malloc(bytes: number): DeviceBuffer {
    if (this.#closed) throw new DeviceClosedError("malloc()");
    const allocation = this.#allocator.malloc(bytes);
    const record: BufferRecord = {
      allocation,
      live: true,
      previous: undefined,
      next: undefined,
    };
    this.#trace?.allocate(record, bytes);
    const buffer = new DeviceBuffer(this, record);
    if (allocation.buffer !== undefined) {
      this.#link(record);
      this.#safetyNet?.register(buffer, record, record);
    }
    return buffer;
  }

  /**
   * Frees `buffer` (same as `buffer.free(options)`). Double free, a buffer of another device: typed errors.
   * `{ after: promise }` defers giving the memory back until the promise settles (see {@link FreeOptions}).
   */
  free(buffer: DeviceBuffer, options?: FreeOptions): void {
    if (!(buffer instanceof DeviceBuffer)) {
      throw new DeviceArgumentError("buffer", "free(buffer): buffer must be a DeviceBuffer");
    }
    if (buffer.device !== this) throw new ForeignBufferError("free()");
    if (this.#closed) throw new DeviceClosedError("free()");
    const record = buffer.record;
    if (!record.live) throw new BufferFreedError("free()");
    const after = checkFreeOptions(options, "free()");
    if (after === undefined) this.#freeRecord(record);
    else this.#deferFree(record, after);
    this.#safetyNet?.unregister(record);
    buffer.forgetViews();
  }

  /**
   * A free that waits for `after`: the buffer is dead to JavaScript now (views detached, every use a
   * BufferFreedError), but its memory stays out of the cache, and counted in `active`, until the promise
   * settles either way — a kernel may still be reading or writing it. Settling after close() gives the
   * memory straight back to the system (the allocator is gone).
   */
  #deferFree(record: BufferRecord, after: PromiseLike<unknown>): void {
    const native = record.allocation.buffer;
    if (native !== undefined) native.detachContents();
    record.live = false;
    this.#unlink(record);
    this.#pendingFrees += 1;
    const settle = () => {
      this.#pendingFrees -= 1;
      if (!this.#closed) {
        // As #freeRecord: a buffer whose view was moved away (transfer) is never cached.
        if (native?.quarantined === true) this.#allocator.freeWithoutCaching(record.allocation);
        else this.#allocator.free(record.allocation);
        this.#trace?.free(record);
      } else if (native !== undefined) {
        native.release();
        this.#settledAfterClose(record.allocation.allocatedLength, 0);
      }
    };
    settleAfter(after, settle);
  }

  /** Takes a free that settled after close() out of the last figures (they said it was still in use). */
  #settledAfterClose(bufferBytes: number, mappedBytes: number): void {
    const final = this.#final;
    if (final === undefined) return;
    final.stats.active -= bufferBytes;
    final.stats.mapped -= mappedBytes;
    final.stats.activeWithMapped -= bufferBytes + mappedBytes;
    if (bufferBytes > 0) {
      final.counters.liveBuffers -= 1;
      final.counters.systemReleases += 1;
    }
    if (mappedBytes > 0) final.counters.mappings -= 1;
  }

  #link(record: BufferRecord): void {
    record.next = this.#liveHead;
    if (this.#liveHead !== undefined) this.#liveHead.previous = record;
    this.#liveHead = record;
    this.#liveCount += 1;
  }

  #unlink(record: BufferRecord): void {
    if (record.previous !== undefined) record.previous.next = record.next;
    else if (this.#liveHead === record) this.#liveHead = record.next;
    else return; // not linked: a 0-byte buffer
    if (record.next !== undefined) record.next.previous = record.previous;
    record.previous = undefined;
    record.next = undefined;
    this.#liveCount -= 1;
  }

  #freeRecord(record: BufferRecord): void {
    const native = record.allocation.buffer;
    // Views are detached before the buffer can reach its next owner (through the cache).
    if (native !== undefined) native.detachContents();
    // A view moved away by transfer() could not be detached and still reaches the memory: such a buffer is
    // never cached (never reused); the backend holds its memory until that view is collected. This covers
    // the safety net too, which frees through here when the DeviceBuffer is collected (a moved view does
    // not keep it alive).
    if (native?.quarantined === true) this.#allocator.freeWithoutCaching(record.allocation);
    else this.#allocator.free(record.allocation);
    record.live = false;
    this.#unlink(record);
    this.#trace?.free(record);
  }

  #reclaim(record: BufferRecord): void {
    if (!record.live || this.#closed) return;
    this.#leakedBuffers += 1;
    this.#freeRecord(record);
  }

  /**
   * Maps the file at `path` without a copy (private copy-on-write: writes never reach the file), charged in
   * `mapped` at its length rounded up to the backend's pages and wired as a mapped file when the wired
   * limit allows. Refused with `OutOfMemoryError` past the memory limit (the file is unmapped again).
   */
  mapFile(path: string): MappedFile {
    if (this.#closed) throw new DeviceClosedError("mapFile()");
    if (typeof path !== "string" || path.length === 0) {
      throw new DeviceArgumentError(
        "path",
        `mapFile(path): path must be a non-empty string, got ${String(path)}`,
      );
    }
    const native = this.#backend.mapFile(path);
    let mapping: Mapping;
    try {
      mapping = this.#allocator.addMapping(native.length);
    } catch (error) {
      native.release();
      throw error;
    }
    this.#wiring(() => this.#residency.insert(native, true));
    const file = new MappedFile(this, native, mapping);
    this.#trace?.map(file, native.length);
    this.#mappings.add(file);
    return file;
  }

  /**
   * Releases a mapped file (same as `file.release(options)`). `{ after: promise }` defers the unmapping until
   * the promise settles (see {@link FreeOptions}).
   */
  releaseMapping(file: MappedFile, options?: FreeOptions): void {
    if (!(file instanceof MappedFile)) {
      throw new DeviceArgumentError("file", "releaseMapping(file): file must be a MappedFile");
    }
    if (file.device !== this) throw new ForeignBufferError("releaseMapping()");
    if (this.#closed) throw new DeviceClosedError("releaseMapping()");
    if (file.released) throw new MappingReleasedError("release()");
    const after = checkFreeOptions(options, "release()");
    if (after !== undefined) {
      this.#deferUnmap(file, after);
      return;
    }
    this.#unmap(file);
    this.#trace?.unmap(file);
  }

  /** As #deferFree, for a mapped file: views detached now, unmapped (and uncharged) once `after` settles. */
  #deferUnmap(file: MappedFile, after: PromiseLike<unknown>): void {
    file.native.detachContents();
    file.markReleased();
    this.#mappings.delete(file);
    this.#pendingFrees += 1;
    const settle = () => {
      this.#pendingFrees -= 1;
      if (!this.#closed) {
        this.#unmap(file);
        this.#trace?.unmap(file);
      } else {
        file.native.release();
        this.#settledAfterClose(0, file.mapping.mappedLength);
      }
    };
    settleAfter(after, settle);
  }

  #unmap(file: MappedFile): void {
    this.#residency.erase(file.native);
    this.#allocator.removeMapping(file.mapping);
    file.native.release();
    file.markReleased();
    this.#mappings.delete(file);
  }

  /** The allocator's statistics, wired fields from residency (after `close()`: the last ones, all released). */
  memoryStats(): MemoryStats {
    return this.#final ? { ...this.#final.stats } : this.#statsNow();
  }

  /** The allocator's figures with the wired fields, which residency owns (the allocator reports them 0). */
  #statsNow(): MemoryStats {
    return {
      ...this.#allocator.memoryStats(),
      wired: this.#residency.wired,
      wiredMapped: this.#residency.wiredMapped,
      wiredLimit: this.#wiredLimit,
    };
  }

  /** Counters beyond {@link memoryStats}: cache hits and misses, retries, refusals, leaks, the backend's. */
  counters(): DeviceCounters {
    const backend = this.#backend.counters();
    return {
      ...(this.#final ? this.#final.counters : this.#allocator.counters()),
      leakedBuffers: this.#leakedBuffers,
      liveDeviceBuffers: this.#liveCount,
      liveMappedFiles: this.#mappings.size,
      pendingFrees: this.#pendingFrees,
      wiredByPlatform: backend.wiredBytes,
      wiringFailures: backend.wiringFailures,
      backend,
    };
  }

  /** Sets `peak = active` and `peakWithMapped = active + mapped` (MLX sets 0; see the README). */
  resetPeak(): void {
    this.#ensureOpen("resetPeak()");
    this.#allocator.resetPeak();
    this.#trace?.resetPeak();
  }

  /**
   * Sets the hard limit on `active + mapped` (and the GC limit, `min(limit, 0.95·W)`); returns the previous
   * limit. Any non-negative safe integer, above the device's memory too (as MLX).
   */
  setMemoryLimit(bytes: number): number {
    this.#ensureOpen("setMemoryLimit()");
    const previous = this.#allocator.setMemoryLimit(bytes);
    this.#trace?.limit("memory", bytes);
    return previous;
  }

  /** Sets the cache limit and trims the cache to it at once; returns the previous limit. */
  setCacheLimit(bytes: number): number {
    this.#ensureOpen("setCacheLimit()");
    const previous = this.#allocator.setCacheLimit(bytes);
    this.#trace?.limit("cache", bytes);
    return previous;
  }

  /**
   * Sets how many bytes of buffers and mapped files are kept wired (resident); returns the previous limit.
   * Waiting buffers are wired while they fit, or wired ones are unwired until under the new limit. Refused
   * above the recommended working set, as MLX.
   */
  setWiredLimit(bytes: number): number {
    this.#ensureOpen("setWiredLimit()");
    checkByteCount(bytes, "bytes");
    const maximum = this.#backend.recommendedMaxWorkingSetSize;
    if (bytes > maximum) throw new WiredLimitError(bytes, maximum);
    const previous = this.#wiredLimit;
    this.#wiring(() => this.#residency.resize(bytes), bytes > 0);
    this.#wiredLimit = bytes;
    this.#trace?.limit("wired", bytes);
    return previous;
  }

  /** Releases every cached buffer to the system. */
  clearCache(): void {
    this.#ensureOpen("clearCache()");
    this.#allocator.clearCache();
    this.#trace?.clearCache();
  }

  /** Renews the residency request of every non-empty residency set. */
  refreshResidency(): void {
    this.#ensureOpen("refreshResidency()");
    this.#wiring(() => this.#residency.refresh());
  }

  /**
   * Renews residency requests every `intervalMilliseconds` on an unref'd timer (it never keeps the process
   * alive), for macOS versions that drop residency after the GPU idles. Replaces a running keep-alive.
   */
  startResidencyKeepAlive(intervalMilliseconds = 1000): void {
    this.#ensureOpen("startResidencyKeepAlive()");
    if (!isTimerInterval(intervalMilliseconds)) {
      throw new DeviceArgumentError(
        "intervalMilliseconds",
        `intervalMilliseconds must be a positive number of at most ${MAX_TIMER_MILLISECONDS}, got ${String(intervalMilliseconds)}`,
      );
    }
    this.stopResidencyKeepAlive();
    const timer = setInterval(() => {
      if (!this.#closed) this.#wiring(() => this.#residency.refresh());
    }, intervalMilliseconds);
    timer.unref?.();
    this.#keepAlive = timer;
  }

  /** Stops the keep-alive timer, if any. */
  stopResidencyKeepAlive(): void {
    if (this.#keepAlive !== undefined) clearInterval(this.#keepAlive);
    this.#keepAlive = undefined;
  }

  /** The backend's facts and the device's setup. */
  info(): DeviceInfo {
    return {
      ...deviceFacts(this.#backend),
      policy: this.#allocator.policy,
      residencySupported: this.#residency.supported,
      residencySets: this.#residency.setCount,
      gcLimit: this.#allocator.gcLimit,
      closed: this.#closed,
    };
  }

  /**
   * Metal: the `id<MTLResidencySet>`s nuvec uses now, as pointers (not retained), for a runtime with several
   * command queues to attach them itself (`[queue addResidencySet:]`). The list only grows, when residency
   * needs a new set (each holds up to `max(W·pct/100, 64 MiB)`, at most 32 sets; the first is made at
   * open), and is empty after close(): read it again after raising the wired limit. Empty on backends
   * without Metal residency sets (the host, the mock).
   */
  residencySetHandles(): bigint[] {
    if (this.#closed) return [];
    const handles: bigint[] = [];
    for (const set of this.#residencySets) {
      const pointer = set.metalResidencySet;
      if (pointer !== undefined) handles.push(pointer);
    }
    return handles;
  }

  /** Starts recording every allocation, free, mapping and limit change (see {@link DeviceTrace}). */
  startTrace(name = "device-trace"): void {
    this.#ensureOpen("startTrace()");
    if (this.#trace) throw new TraceRecordingError("startTrace(): a trace is already being recorded");
    // The trace opens with what is live now (oldest first), so it replays on its own (see trace.ts); at
    // the bytes each is charged (a cache hit can hand out up to twice the request), so the peaks agree.
    const buffers: [BufferRecord, number][] = [];
    for (let record = this.#liveHead; record !== undefined; record = record.next)
      buffers.push([record, record.allocation.allocatedLength]);
    this.#trace = new TraceRecorder(name, {
      buffers: buffers.reverse(),
      mappings: [...this.#mappings].map((file) => [file, file.length] as const),
    });
  }

  /** Stops recording and returns the trace (header and events; `toNdjson()` for a file). */
  stopTrace(): DeviceTrace {
    if (!this.#trace) throw new TraceRecordingError("stopTrace(): no trace is being recorded");
    const trace = this.#trace.finish();
    this.#trace = undefined;
    return trace;
  }

  /**
   * Releases everything: live buffers (their views detached), cached buffers, mapped files and residency
   * sets. Idempotent. Every later use of the device or its buffers throws `DeviceClosedError`. Frees deferred
   * with `{ after }` are the exception: each one's memory goes back to the system when its promise settles
   * (a kernel may still be using it); until then it stays in the last `memoryStats()` (`active`, `mapped`)
   * and in `counters().pendingFrees`.
   */
  close(): void {
    if (this.#closed) return;
    this.stopResidencyKeepAlive();
    while (this.#liveHead !== undefined) {
      const record = this.#liveHead;
      this.#freeRecord(record);
      this.#safetyNet?.unregister(record);
    }
    for (const file of [...this.#mappings]) this.#unmap(file);
    this.#allocator.clearCache();
    this.#residency.close();
    this.#final = { stats: this.#statsNow(), counters: this.#allocator.counters() };
    this.#allocator.close();
    this.#trace = undefined;
    this.#closed = true;
  }

  /** `using device = Device.open()` closes it at the end of the scope. */
  [Symbol.dispose](): void {
    this.close();
  }

  // Runs something that may wire memory; the first time the platform refuses (wiringFailures grows), one
  // process warning for this Device says so, with the backend's advice. Skipped (no native call) while
  // nothing is to be wired or once warned.
  #wiring(body: () => void, mayWire = this.#wiredLimit > 0): void {
    if (this.#wiringWarned || !mayWire) {
      body();
      return;
    }
    const before = this.#backend.counters().wiringFailures;
    body();
    const failures = this.#backend.counters().wiringFailures - before;
    if (failures <= 0) return;
    this.#wiringWarned = true;
    const advice = (this.#backend as { lastWiringError?: unknown }).lastWiringError;
    const stats = this.#statsNow();
    const wiredByPlatform = this.#backend.counters().wiredBytes;
    process.emitWarning(
      `nuvec: the system refused to wire memory (${failures} failure${failures === 1 ? "" : "s"}): ` +
        `memoryStats().wired says ${stats.wired} bytes (what residency asked for), the platform wired ` +
        `${wiredByPlatform} (counters().wiredByPlatform). ` +
        (typeof advice === "string" ? advice : "The memory stays usable but may be paged out."),
      { type: "NuvecWiringWarning", code: "NUVEC_WIRING_FAILED" },
    );
  }

  #ensureOpen(operation: string): void {
    if (this.#closed) throw new DeviceClosedError(operation);
  }
}
