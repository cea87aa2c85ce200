/**
 * The one interface between nuvec and a device's memory. The real addon (Metal on macOS, host memory on
 * Linux) and the TypeScript mock (`@nuvec/metal-native/mock`) implement it; one contract suite runs against
 * every implementation.
 */

/** Which implementation a backend is. */
export type BackendPlatform = "metal" | "host" | "mock" | "cuda";

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

/** A block of device memory: a Metal buffer, or real host memory. */
export interface NativeBuffer {
  /** The bytes asked for (the allocator asks for whole size classes). */
  readonly length: number;
  /** The bytes the system really holds for it (Metal's `allocatedSize`); what residency counts. */
  readonly allocatedSize: number;
  /** True once `release()` was called. */
  readonly released: boolean;
  /**
   * The buffer's memory as an external `ArrayBuffer`, without a copy. Every `ArrayBuffer` handed out is
   * detached when the buffer is released (its `byteLength` becomes 0). Throws after release.
   */
  contents(): ArrayBuffer;
  /**
   * Detaches every `ArrayBuffer` handed out so far, without releasing the memory; the next `contents()`
   * makes a new one. The device calls it when a freed buffer goes to the cache, so that its next owner's
   * data can never be read or written through an old view. Throws after release.
   */
  detachContents(): void;
  /** Gives the memory back to the system and detaches every view. A second call throws. */
  release(): void;
  /**
   * Copies `length` bytes from `offset` out of the buffer (backends whose memory is not host-visible have
   * it; elsewhere the device copies through `contents()`). Throws after release.
   */
  read?(offset: number, length: number): Uint8Array;
  /** Copies `source` into the buffer at `offset` (see `read`). Throws after release. */
  write?(source: ArrayBuffer | ArrayBufferView, offset: number): void;
}

/** A file mapped into memory without a copy (private, copy-on-write: writes never reach the file). */
export interface NativeMappedFile {
  /** The path it was mapped from. */
  readonly path: string;
  /** The file's length in bytes. */
  readonly length: number;
  /** The mapped length: `length` rounded up to whole pages (`mappingSize(length, pageSize)`). */
  readonly mappedLength: number;
  /** The bytes the system holds for the mapping (what residency counts). */
  readonly allocatedSize: number;
  /** True once `release()` was called. */
  readonly released: boolean;
  /** The file's bytes (`length` of them) as an external `ArrayBuffer`, detached on release. */
  contents(): ArrayBuffer;
  /** Unmaps the file and detaches every view. A second call throws. */
  release(): void;
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
}

/** A device: its facts, and the calls the allocator and the residency manager need. */
export interface NativeBackend extends DeviceFacts {
  /** A new buffer of `bytes` bytes (0 < bytes ≤ maxBufferLength). Throws a typed error on failure. */
  newBuffer(bytes: number): NativeBuffer;
  /** Maps the file at `path` read-only by convention, copy-on-write. Throws a typed error for a missing,
   * empty, unreadable file or a directory. */
  mapFile(path: string): NativeMappedFile;
  /** A new residency set, or `undefined` when the device has none or cannot make one. */
  newResidencySet(): NativeResidencySet | undefined;
  /** Attaches a set to the device's command queue (Metal's `addResidencySet:`; host: nothing to do). */
  attachResidencySet(set: NativeResidencySet): void;
  /** Counters for leak checks and tests. */
  counters(): NativeCounters;
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
}
