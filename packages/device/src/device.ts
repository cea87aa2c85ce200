// The Device: MLX's caching allocator, residency (wired memory) and a native backend put together, with
// the statistics assembled from the figures each of them owns.
import { type AllocatorCounters, CachingAllocator, type Mapping } from "@nuvec/allocator";
import {
  deviceFacts,
  loadNativeBackend,
  type NativeAllocation,
  type NativeBackend,
  type NativeBuffer,
  type NativeResidencySet,
} from "@nuvec/metal-native";
import { Residency } from "@nuvec/residency";
import type { MemoryStats } from "@nuvec/stats";
import { checkFreeOptions, settleAfter } from "./deferred-free.js";
import { BufferState, bufferState, DeviceBuffer, forgetViews } from "./device-buffer.js";
import {
  BufferFreedError,
  DeviceArgumentError,
  DeviceClosedError,
  ForeignBufferError,
  MappingReleasedError,
  TraceRecordingError,
  WiredLimitError,
} from "./errors.js";
import { MappedFile, mappedFileState } from "./mapped-file.js";
import { checkMetalOptions } from "./metal-options.js";
import {
  checkByteCount,
  checkTimerInterval,
  type DeviceCounters,
  type DeviceInfo,
  type DeviceOptions,
  type FreeOptions,
  residencySetMaxPercentText,
} from "./options.js";
import { SafetyNet } from "./safety-net.js";
import { type DeviceTrace, TraceRecorder } from "./trace.js";

// The classes and types of the Device's API live in their own modules; re-exported here for index.ts.
export { DeviceBuffer } from "./device-buffer.js";
export { MappedFile } from "./mapped-file.js";
export type {
  DeviceCounters,
  DeviceInfo,
  DeviceMemoryHandle,
  DeviceOptions,
  FreeOptions,
  MetalOptions,
} from "./options.js";

/**
 * A GPU (or host) device with MLX's caching allocator, hard memory limits, statistics, mapped files and
 * wired memory. Open one with {@link Device.open}; close it with {@link Device.close} (or `using`).
 */
export class Device {
  readonly #backend: NativeBackend;
  readonly #allocator: CachingAllocator<NativeBuffer>;
  readonly #residency: Residency<NativeAllocation, NativeResidencySet>;
  // The live buffers (an intrusive list of their states, newest first) and mapped files: what close()
  // releases and a trace opens with. Their counts are the allocator's (`liveBuffers`, `mappings`).
  #liveHead: BufferState | undefined;
  readonly #mappings = new Set<MappedFile>();
  readonly #safetyNet: SafetyNet | undefined;
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

  private constructor(backend: NativeBackend, options: DeviceOptions, maxPercentPerSet: string | undefined) {
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
        ...(maxPercentPerSet === undefined ? {} : { maxPercentPerSet }),
      },
    );
    this.#safetyNet =
      options.safetyNet === false ? undefined : new SafetyNet((state) => this.#reclaim(state));
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
    if (keepAlive !== undefined) checkTimerInterval(keepAlive, "residencyKeepAliveMilliseconds");
    if (options.wiredLimit !== undefined) checkByteCount(options.wiredLimit, "wiredLimit");
    const maxPercentPerSet = residencySetMaxPercentText(options.residencySetMaxPercent);
    const backend = options.backend ?? loadNativeBackend();
    if (options.metal !== undefined) checkMetalOptions(options.metal, backend);
    if (options.wiredLimit !== undefined && options.wiredLimit > backend.recommendedMaxWorkingSetSize) {
      throw new WiredLimitError(options.wiredLimit, backend.recommendedMaxWorkingSetSize);
    }
    const device = new Device(backend, options, maxPercentPerSet);
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
   * max buffer length (the allocator checks `bytes`).
   */
  malloc(bytes: number): DeviceBuffer {
    if (this.#closed) throw new DeviceClosedError("malloc()");
    const allocation = this.#allocator.malloc(bytes);
    const state = new BufferState(allocation);
    const buffer = new DeviceBuffer(this, state);
    if (allocation.buffer !== undefined) {
      this.#link(state);
      this.#safetyNet?.add(buffer, state);
    }
    this.#trace?.allocate(state, bytes);
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
    const state = bufferState(buffer);
    if (!state.live) throw new BufferFreedError("free()");
    const after = options === undefined ? undefined : checkFreeOptions(options, "free()");
    if (after === undefined) this.#freeState(state);
    else this.#deferFree(state, after);
    this.#safetyNet?.remove(state);
    if (state.viewsHandedOut) forgetViews(buffer);
  }

  /**
   * A free that waits for `after`: the buffer is dead to JavaScript now (views detached, every use a
   * BufferFreedError), but its memory stays out of the cache, and counted in `active`, until the promise
   * settles either way — a kernel may still be reading or writing it. Settling after close() gives the
   * memory straight back to the system (the allocator is gone).
   */
  #deferFree(state: BufferState, after: PromiseLike<unknown>): void {
    const native = state.allocation.buffer;
    if (native !== undefined && state.viewsHandedOut) native.detachContents();
    state.live = false;
    this.#unlink(state);
    this.#pendingFrees += 1;
    const settle = () => {
      this.#pendingFrees -= 1;
      if (!this.#closed) {
        // As #freeState: a buffer whose view was moved away (transfer) is never cached.
        if (native?.quarantined === true) this.#allocator.freeWithoutCaching(state.allocation);
        else this.#allocator.free(state.allocation);
        this.#trace?.free(state);
      } else if (native !== undefined) {
        native.release();
        this.#settledAfterClose(state.allocation.allocatedLength, 0);
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

  #link(state: BufferState): void {
    const head = this.#liveHead;
    state.next = head;
    if (head !== undefined) head.previous = state;
    this.#liveHead = state;
  }

  #unlink(state: BufferState): void {
    const { previous, next } = state;
    if (previous !== undefined) previous.next = next;
    else if (this.#liveHead === state) this.#liveHead = next;
    else return; // not linked: a 0-byte buffer
    if (next !== undefined) next.previous = previous;
    state.previous = undefined;
    state.next = undefined;
  }

  #freeState(state: BufferState): void {
    const native = state.allocation.buffer;
    // Views are detached before the buffer can reach its next owner (through the cache); a buffer whose
    // owner never asked for one has none to detach (no native call).
    if (native !== undefined && state.viewsHandedOut) {
      native.detachContents();
      // A view moved away by transfer() could not be detached and still reaches the memory: such a buffer
      // is never cached (never reused); the backend holds its memory until that view is collected. This
      // covers the safety net too, which frees through here when the DeviceBuffer is collected (a moved
      // view does not keep it alive).
      if (native.quarantined === true) this.#allocator.freeWithoutCaching(state.allocation);
      else this.#allocator.free(state.allocation);
    } else {
      this.#allocator.free(state.allocation);
    }
    state.live = false;
    this.#unlink(state);
    this.#trace?.free(state);
  }

  #reclaim(state: BufferState): void {
    if (!state.live || this.#closed) return;
    this.#leakedBuffers += 1;
    state.registered = false;
    this.#freeState(state);
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
    const state = mappedFileState(file);
    state.native.detachContents();
    state.live = false;
    this.#mappings.delete(file);
    this.#pendingFrees += 1;
    const settle = () => {
      this.#pendingFrees -= 1;
      if (!this.#closed) {
        this.#unmap(file);
        this.#trace?.unmap(file);
      } else {
        state.native.release();
        this.#settledAfterClose(0, state.mapping.mappedLength);
      }
    };
    settleAfter(after, settle);
  }

  #unmap(file: MappedFile): void {
    const state = mappedFileState(file);
    this.#residency.erase(state.native);
    this.#allocator.removeMapping(state.mapping);
    state.native.release();
    state.live = false;
    this.#mappings.delete(file);
  }

  /**
   * The full statistics: the allocator's figures, the wired ones from residency (after `close()`: the last
   * ones, all released).
   */
  memoryStats(): MemoryStats {
    return this.#final ? { ...this.#final.stats } : this.#currentStats();
  }

  /** The allocator owns the memory figures, residency the wired ones: each is read from its owner. */
  #currentStats(): MemoryStats {
    const stats = this.#allocator.memoryStats();
    const residency = this.#residency;
    stats.wired = residency.wired;
    stats.wiredMapped = residency.wiredMapped;
    stats.wiredLimit = residency.capacity;
    return stats;
  }

  /** Counters beyond {@link memoryStats}: cache hits and misses, retries, refusals, leaks, the backend's. */
  counters(): DeviceCounters {
    const backend = this.#backend.counters();
    return {
      ...(this.#final ? this.#final.counters : this.#allocator.counters()),
      leakedBuffers: this.#leakedBuffers,
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
   * above the recommended working set, as MLX. The limit is residency's capacity.
   */
  setWiredLimit(bytes: number): number {
    this.#ensureOpen("setWiredLimit()");
    checkByteCount(bytes, "bytes");
    const maximum = this.#backend.recommendedMaxWorkingSetSize;
    if (bytes > maximum) throw new WiredLimitError(bytes, maximum);
    const previous = this.#residency.capacity;
    this.#wiring(() => this.#residency.resize(bytes), bytes > 0);
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
    checkTimerInterval(intervalMilliseconds, "intervalMilliseconds");
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
    const buffers: [BufferState, number][] = [];
    for (let state = this.#liveHead; state !== undefined; state = state.next)
      buffers.push([state, state.allocation.allocatedLength]);
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
      const state = this.#liveHead;
      this.#freeState(state);
      this.#safetyNet?.remove(state);
    }
    this.#safetyNet?.close();
    for (const file of [...this.#mappings]) this.#unmap(file);
    this.#allocator.clearCache();
    this.#residency.close();
    this.#final = { stats: this.#currentStats(), counters: this.#allocator.counters() };
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
  #wiring(body: () => void, mayWire = this.#residency.capacity > 0): void {
    if (this.#wiringWarned || !mayWire) {
      body();
      return;
    }
    const before = this.#backend.counters().wiringFailures;
    body();
    const failures = this.#backend.counters().wiringFailures - before;
    if (failures <= 0) return;
    this.#wiringWarned = true;
    const advice = this.#backend.lastWiringError;
    const wiredByPlatform = this.#backend.counters().wiredBytes;
    process.emitWarning(
      `nuvec: the system refused to wire memory (${failures} failure${failures === 1 ? "" : "s"}): ` +
        `memoryStats().wired says ${this.#residency.wired} bytes (what residency asked for), the platform ` +
        `wired ${wiredByPlatform} (counters().wiredByPlatform). ` +
        (typeof advice === "string" ? advice : "The memory stays usable but may be paged out."),
      { type: "NuvecWiringWarning", code: "NUVEC_WIRING_FAILED" },
    );
  }

  #ensureOpen(operation: string): void {
    if (this.#closed) throw new DeviceClosedError(operation);
  }
}
