/**
 * The one interface between nuvec and a device's memory. The real addon (Metal on macOS, host memory on
 * Linux) and the TypeScript mock (`@nuvec/metal-native/mock`) implement it; one contract suite runs against
 * every implementation.
 */

import type { NativeModule, NativeModuleSource, NativeStream } from "./streams.js";

/** Which implementation a backend is. */
export type BackendPlatform = "metal" | "host" | "mock" | "cuda";

/**
 * How an addon backend makes the `ArrayBuffer` views of its memory: `"backing-store"` (V8's BackingStore
 * API, where the addon was built for the running Node.js major) or `"node-api"` (Node-API's external
 * `ArrayBuffer`s, everywhere else). Both detach alike; they differ in cost (see native-core's DECISIONS.md).
 */
export type ViewMechanism = "backing-store" | "node-api";

/** Facts about the device, read once when the backend is opened. Bytes are JavaScript numbers. */
export interface DeviceFacts {
  /** A name for people, e.g. `"Apple M3 Max"` or `"host (Linux x64)"`. */
  readonly name: string;
  /** Which implementation this is. */
  readonly platform: BackendPlatform;
  /** Physical memory the process may use (Metal: `hw.memsize`; host: the smaller of RAM and the cgroup limit). */
  readonly memorySize: number;
  /** Metal's `recommendedMaxWorkingSetSize`; host: 3/4 of `memorySize`. MLX's `W`. */
  readonly recommendedMaxWorkingSetSize: number;
  /** The largest buffer `newBuffer` accepts (Metal's `maxBufferLength`). */
  readonly maxBufferLength: number;
  /** The most live system buffers (in use, cached, mapped) the device allows (Metal: `iogpu.rsrc_limit`). */
  readonly resourceLimit: number;
  /** The system's page size (`sysconf(_SC_PAGESIZE)`): 16 KiB on Apple silicon, 4 KiB on most Linux. */
  readonly pageSize: number;
  /** Whether residency sets (wiring) are available: Metal 3 GPUs on macOS ≥ 15; host: always. */
  readonly supportsResidencySets: boolean;
  /**
   * False where buffers are device memory the CPU cannot address (CUDA): their `contents()` is refused and
   * `read`/`write` copy the bytes. Absent (Metal, host, mock) means true.
   */
  readonly hostVisible?: boolean;
}

/**
 * What a runtime's native code needs to reach an allocation's memory, keyed by `platform`. Pointers are
 * `bigint`s (a JavaScript number cannot hold every 64-bit address). Valid until the allocation is released;
 * nothing in it is retained for the caller. Other backends add their own member to this union (keyed by a
 * platform of their own), so code that reads it switches on `platform`.
 */
export type NativeMemoryHandle = MetalMemoryHandle | HostMemoryHandle | MockMemoryHandle | CudaMemoryHandle;

/** Metal: the CPU address of the shared-storage contents, the `id<MTLBuffer>` and its `gpuAddress`. */
export interface MetalMemoryHandle {
  readonly platform: "metal";
  /** `[buffer contents]`: the CPU address of the memory (shared storage: the GPU sees the same bytes). */
  readonly address: bigint;
  /** The `id<MTLBuffer>` as a pointer (`(__bridge void*)`), not retained: bind it in a compute encoder. */
  readonly metalBuffer: bigint;
  /** The buffer's `gpuAddress` (for argument buffers; macOS 13+). */
  readonly gpuAddress: bigint;
  /**
   * A range of a larger buffer (`newBufferRange`): where it begins in `metalBuffer` (bind the buffer at this
   * offset; `address` and `gpuAddress` already include it). Absent: 0.
   */
  readonly offset?: number;
}

/** The host backend: the CPU address of real memory (`mmap` or `aligned_alloc`, a mapped file's `mmap`). */
export interface HostMemoryHandle {
  readonly platform: "host";
  /** The first byte's address in this process. */
  readonly address: bigint;
}

/**
 * CUDA (`@nuvec/cuda-native`): device memory has no CPU address, so the handle gives the device pointer
 * (`CUdeviceptr`) and the device's ordinal. A mapped file's `devicePointer` is the registered mapping's,
 * `undefined` while it is not wired.
 */
export interface CudaMemoryHandle {
  readonly platform: "cuda";
  /** The device address (`CUdeviceptr`), or `undefined` for a mapped file that is not wired. */
  readonly devicePointer: bigint | undefined;
  /** The CUDA device's ordinal. */
  readonly device: number;
}

/**
 * The mock: synthetic values that are never valid addresses (their top 16 bits make them non-canonical on
 * x86-64 and arm64), distinct per allocation, shaped like Metal's so a runtime's plumbing can be tested.
 */
export interface MockMemoryHandle {
  readonly platform: "mock";
  /** Synthetic, never dereferenceable. */
  readonly address: bigint;
  /** Synthetic, never a real `id<MTLBuffer>`. */
  readonly metalBuffer: bigint;
  /** Synthetic, never a real GPU address. */
  readonly gpuAddress: bigint;
  /** A range's offset in `metalBuffer` (see {@link MetalMemoryHandle.offset}). */
  readonly offset?: number;
}

/**
 * What buffers and mapped files have in common: memory the system holds, views of it that are cut off on
 * release, and where it is for native code.
 */
interface NativeMemory {
  /** The bytes the system really holds for it (Metal's `allocatedSize`); what residency counts. */
  readonly allocatedSize: number;
  /** True once `release()` was called. */
  readonly released: boolean;
  /**
   * The memory as an external `ArrayBuffer`, without a copy (a mapped file: its `length` bytes). Every
   * `ArrayBuffer` handed out is detached when it is released (its `byteLength` becomes 0). Throws after
   * release.
   */
  contents(): ArrayBuffer;
  /**
   * After `release()`, when a view was moved away (`transfer()`, `postMessage`): the bytes the backend still
   * holds for it (its allocated size, a mapping's mapped length) until the last holder of that memory drops
   * it, then 0; 0 before release. What its owner counts as quarantined. Absent on backends whose views
   * cannot escape.
   */
  readonly quarantinedBytes?: number;
  /**
   * Detaches every `ArrayBuffer` handed out so far, without releasing the memory; the next `contents()`
   * makes a new one. The device calls it when a freed buffer goes to the cache, so that its next owner's data
   * can never be read or written through an old view, and when a release is deferred until a kernel is done,
   * so that JavaScript is cut off at once. Throws after release.
   */
  detachContents(): void;
  /**
   * Where the memory is, for a runtime's native code (a kernel): see {@link NativeMemoryHandle}; a mapped
   * file's first byte is the file's first byte. Valid until `release()`; throws after release.
   */
  nativeHandle(): NativeMemoryHandle;
  /** Gives the memory back to the system (unmaps a file) and detaches every view. A second call throws. */
  release(): void;
}

/** A block of device memory: a Metal buffer, or real host memory. */
export interface NativeBuffer extends NativeMemory {
  /** The bytes asked for (the allocator asks for whole size classes). */
  readonly length: number;
  /**
   * The first `length` bytes (default: all of them) as an external `ArrayBuffer`, without a copy: exactly
   * `length` bytes long, so that a typed array over a block the cache handed out for fewer bytes has the
   * length asked for. The same `ArrayBuffer` on every call with that length while it is attached; every one
   * is detached on release and by `detachContents()`. A length outside 1..`length` is a `ArgumentError`.
   */
  contents(length?: number): ArrayBuffer;
  /**
   * True once `detachContents()` found that a view handed out had been detached by someone else — moved
   * away by `ArrayBuffer.prototype.transfer()` — so an `ArrayBuffer` the backend cannot detach still reaches
   * this memory. Such a buffer must never be cached or reused: release it. The backend keeps its memory
   * (quarantined, counted in `quarantinedAllocations`) until that `ArrayBuffer` is collected. Absent or
   * false on backends whose views cannot escape.
   */
  readonly quarantined?: boolean;
  /**
   * Copies `length` bytes from `offset` out of the buffer as a new `Uint8Array`, handing out no view (so
   * nothing is left for `detachContents()` to detach). Every backend has it, the mock included, and on
   * memory the CPU cannot address it is the only way to the bytes. A span outside the buffer is an
   * `ArgumentError`; throws after release.
   */
  read(offset: number, length: number): Uint8Array;
  /**
   * Copies `source` (an `ArrayBuffer` or any view of one) into the buffer at `offset`, handing out no view
   * (see `read`). A source that does not fit at `offset` is an `ArgumentError`; throws after release.
   */
  write(source: ArrayBuffer | ArrayBufferView, offset: number): void;
}

/** A file mapped into memory without a copy (private, copy-on-write: writes never reach the file). */
export interface NativeMappedFile extends NativeMemory {
  /** The path it was mapped from. */
  readonly path: string;
  /** The file's length in bytes. */
  readonly length: number;
  /** The mapped length: `length` rounded up to whole pages (`mappingSize(length, pageSize)`). */
  readonly mappedLength: number;
}

/** Anything a residency set can hold. */
export type NativeAllocation = NativeBuffer | NativeMappedFile;

/**
 * A residency set (Metal's `MTLResidencySet`; host: `mlock`). `add`/`remove` take effect at `commit`;
 * `requestResidency` wires every committed allocation and stands, so later commits wire what they add and
 * unwire what they remove; `endResidency` unwires everything.
 */
export interface NativeResidencySet {
  /** Adds an allocation (effective at the next `commit`). */
  add(allocation: NativeAllocation): void;
  /** Removes an allocation (effective at the next `commit`). */
  remove(allocation: NativeAllocation): void;
  /** Applies the adds and removes since the last commit. */
  commit(): void;
  /** Asks for every committed allocation to be resident, and keeps asking for later commits. */
  requestResidency(): void;
  /** Ends the residency request: nothing in the set stays wired. */
  endResidency(): void;
  /** Bytes of the committed allocations (Metal's `allocatedSize`, as of the last commit). */
  readonly allocatedSize: number;
  /** Number of committed allocations. */
  readonly allocationCount: number;
  /** Times wiring failed (host: `mlock` refused, e.g. past `RLIMIT_MEMLOCK`); never thrown. */
  readonly wiringFailures: number;
  /** Ends residency and frees the set; further calls throw. */
  release(): void;
  /** Metal only: the `id<MTLResidencySet>` as a pointer (not retained); `undefined` elsewhere or after release. */
  readonly metalResidencySet?: bigint | undefined;
}

/** A device: its facts, and the calls the allocator and the residency manager need. */
export interface NativeBackend extends DeviceFacts {
  /** A new buffer of `bytes` bytes (0 < bytes ≤ maxBufferLength). Throws a typed error on failure. */
  newBuffer(bytes: number): NativeBuffer;
  /**
   * A buffer over `length` bytes of `segment` from `offset`, sharing its memory (what a sub-allocating
   * policy hands out): `nativeHandle()` gives the range's first byte, `contents()`, `read` and `write` work
   * on the range alone, and `release()` gives back the range only. The segment's memory lives while any of
   * its ranges does: a segment released before its ranges is freed once the last of them is released.
   * Each range has views of its own: detaching them leaves the segment's and other ranges' views alone.
   * Throws an `ArgumentError` for a segment of another backend, a range itself, or a range outside
   * it, and a `StateError` (`ERR_NUVEC_RELEASED`) for a released segment. Optional: a backend without it runs no
   * sub-allocating policy.
   */
  newBufferRange?(segment: NativeBuffer, offset: number, length: number): NativeBuffer;
  /**
   * The unit of {@link mapMemory} offsets and lengths (CUDA: the driver's granularity, 2 MiB); absent on a
   * backend without address spaces. With the three calls below, the segments policy's large pool is one
   * expandable segment.
   */
  readonly mapGranularity?: number;
  /**
   * A buffer over `capacity` bytes of address space (whole granules, at most `maxBufferLength`) with no
   * memory behind it (`allocatedSize` 0): ranges of it are usable where {@link mapMemory} backed them.
   * Releasing it unmaps what is still mapped. Optional.
   */
  reserveAddressSpace?(capacity: number): NativeBuffer;
  /**
   * Backs `[offset, offset + length)` of an address space with new memory: one system allocation (CUDA:
   * `cuMemCreate` + `cuMemMap`). Throws an `OutOfMemoryError` when the device refuses, an `ArgumentError`
   * for a range that is not whole granules inside the space or overlaps mapped memory.
   */
  mapMemory?(space: NativeBuffer, offset: number, length: number): void;
  /** Unmaps and frees exactly one earlier {@link mapMemory} range; an `ArgumentError` for any other. */
  unmapMemory?(space: NativeBuffer, offset: number, length: number): void;
  /** Maps the file at `path` read-only by convention, copy-on-write. Throws a typed error for a missing,
   * empty, unreadable file or a directory. */
  mapFile(path: string): NativeMappedFile;
  /** A new residency set, or `undefined` when the device has none or cannot make one. */
  newResidencySet(): NativeResidencySet | undefined;
  /**
   * Attaches a set to the device's command queue (Metal's `addResidencySet:`; host: nothing to do). Metal:
   * `commandQueue` (an `id<MTLCommandQueue>` as a pointer) attaches it to that queue instead, and the set is
   * removed from it before it is released; other backends refuse a queue with a `ArgumentError`.
   */
  attachResidencySet(set: NativeResidencySet, commandQueue?: bigint): void;
  /**
   * Metal only: checks that `device` (an `id<MTLDevice>` as a pointer) is the GPU this backend's buffers
   * come from, so that a runtime's kernels can bind them; throws a `ArgumentError` otherwise. Absent
   * on backends without Metal.
   */
  checkMetalDevice?(device: bigint): void;
  /** A new stream (see streams.ts); absent on a backend without streams. */
  newStream?(): NativeStream;
  /** Loads a module of kernels from this backend's entry of `source`; absent with {@link newStream}. */
  loadModule?(source: NativeModuleSource): NativeModule;
  /** Counters for leak checks and tests. */
  counters(): NativeCounters;
  /**
   * How the addon makes views (see {@link ViewMechanism}); absent on the mock, whose views are plain
   * `ArrayBuffer`s.
   */
  readonly viewMechanism?: ViewMechanism;
  /**
   * What the platform said about the last wiring failure of any set, with how to lift the limit (host:
   * `mlock` past `RLIMIT_MEMLOCK`), or `undefined` when none happened. Optional: a backend with nothing to
   * say leaves it out.
   */
  readonly lastWiringError?: string | undefined;
}

/** What a backend has done so far. */
export interface NativeCounters {
  buffersMade: number;
  buffersReleased: number;
  /** Bytes of live buffers (their `allocatedSize`). */
  bufferBytes: number;
  mappingsMade: number;
  mappingsReleased: number;
  /** Bytes of live mappings (their `mappedLength`). */
  mappedBytes: number;
  residencySetsMade: number;
  /** Commits over all sets. */
  commits: number;
  /** Residency requests over all sets. */
  residencyRequests: number;
  /** Bytes wired right now (host: locked with `mlock`). */
  wiredBytes: number;
  /** Times wiring failed (host: `mlock` refused). */
  wiringFailures: number;
  /**
   * Released allocations whose memory is still held because a view of theirs was moved out of the
   * backend's reach (`ArrayBuffer.prototype.transfer()`): freed when that view is collected. Native only.
   */
  quarantinedAllocations?: number;
  /** The bytes those quarantined allocations hold (their `allocatedSize`): in no other figure. Native only. */
  quarantinedBytes?: number;
  /**
   * Allocations a worker's (or the process's) teardown could not give back, process-wide: a view moved out
   * of that environment (`transfer()`, then `postMessage`) may still reach them, and nothing will tell when it
   * is collected, so they stay allocated for the rest of the process. Native only.
   */
  abandonedAllocations?: number;
  /** Their bytes (`allocatedSize`). Native only. */
  abandonedBytes?: number;
  /**
   * Buffers the platform really gave back to the system (counted in its own free/munmap paths; Metal: our
   * last release of the buffer), unlike `buffersReleased`, counted at `release()`. Native only.
   */
  buffersFreedByPlatform?: number;
  /** Mappings the platform really unmapped (host: `munmap`; Metal: the no-copy buffer's deallocator). Native only. */
  mappingsUnmappedByPlatform?: number;
  /** Residency sets the platform freed (after removing their members and, on Metal, leaving the queue). Native only. */
  residencySetsFreedByPlatform?: number;
}
