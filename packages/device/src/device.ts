// The Device: MLX's caching allocator, residency (wired memory) and a native backend put together (its parts,
// wired in device-parts.ts over what Device.open checked in device-open.ts), with the statistics assembled
// from the figures each of them owns (figures.ts). This file holds the public class and the buffers' free path.
import type { NativeBuffer, NativeModuleSource } from "@nuvec/metal-native";
import type { MemoryStats } from "@nuvec/stats";
import { ArgumentError, checkArgument, Teardown } from "@nuvec/stats";
import { checkFreeOptions } from "./deferred-free.js";
import {
  BufferState,
  bufferDevice,
  bufferState,
  DeviceBuffer,
  detachViews,
  forgetViews,
  isDeviceBuffer,
  setOwnBufferFree,
} from "./device-buffer.js";
import { checkOpening } from "./device-open.js";
import { DeviceParts } from "./device-parts.js";
import { bufferFreed, deviceClosed, foreignBuffer, lookAlike, traceRecording } from "./errors.js";
import { isMappedFile, type MappedFile } from "./mapped-file.js";
import type { DeviceNative } from "./native-access.js";
import type { DeviceCounters, DeviceInfo, DeviceOptions, FreeOptions } from "./options.js";
import { PATH, timerInterval } from "./schemas.js";
import type { KernelModule } from "./streams/kernel.js";
import type { Stream } from "./streams/stream.js";
import { DeviceTrace, type Trace } from "./trace.js";
import {
  checkTraceOptions,
  MALLOC_OPTIONS,
  type MallocOptions,
  TRACE_MARK,
  type TraceOptions,
} from "./trace-options.js";

// What only Device.open holds: the constructor refuses to run without it, so `new Device(...)` from
// JavaScript (where `private` does not reach) cannot skip open's checks.
const OPEN_TOKEN: unique symbol = Symbol("Device.open");

let hasDeviceBrand: (value: object) => boolean;

/**
 * @internal Whether `value` is a Device that Device.open made: a brand check on the class's private state, so
 * `Object.create(Device.prototype)` and a Proxy of a Device are not (every entry point that takes a Device,
 * and every method's `this`, is checked with it).
 */
export function isDevice(value: unknown): value is Device {
  return typeof value === "object" && value !== null && hasDeviceBrand(value);
}

/** The `this` of a Device method or getter: a real Device, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (!isDevice(value)) throw lookAlike(operation, "this", "a Device made by Device.open()");
}

/**
 * A GPU (or host) device with MLX's caching allocator, hard memory limits, statistics, mapped files and
 * wired memory. Open one with {@link Device.open}; close it with {@link Device.close} (or `using`).
 */
export class Device {
  // What the device is made of (device-parts.ts): every method below works on these.
  readonly #parts: DeviceParts;

  static {
    hasDeviceBrand = (value) => #parts in value;
    // `buffer.free()`: the checks of Device.free that a buffer's own call has passed by construction.
    setOwnBufferFree((device, buffer, state, options) => {
      const own = device as Device;
      if (own.#parts.closed) throw deviceClosed("free()");
      own.#freeOwn(buffer, state, options);
    });
  }

  private constructor(token: typeof OPEN_TOKEN, opening: ReturnType<typeof checkOpening>) {
    if (token !== OPEN_TOKEN) {
      throw new ArgumentError(
        "new Device()",
        "new Device(): a Device is made by Device.open(options), which checks its options and backend",
      );
    }
    this.#parts = new DeviceParts(this, opening, (state) => this.#reclaim(state));
  }

  /**
   * Opens a device: the real native backend (Metal on macOS, host memory on Linux) unless `backend` is given
   * (e.g. `new MockBackend()` from `@nuvec/metal-native/mock` in tests).
   */
  static open(given: DeviceOptions = {}): Device {
    // Every option checked by its declaration, each read once; the Device uses what the check returned.
    const opening = checkOpening(given);
    const { wiredLimit, residencyKeepAliveMilliseconds: keepAlive } = opening.options;
    const device = new Device(OPEN_TOKEN, opening);
    if (wiredLimit !== undefined) device.setWiredLimit(wiredLimit);
    if (keepAlive !== undefined) device.startResidencyKeepAlive(keepAlive);
    return device;
  }

  /** True once {@link close} was called. */
  get closed(): boolean {
    checkThis(this, "closed");
    return this.#parts.closed;
  }

  /**
   * The surface for runtime authors: the native backend, where a buffer's or mapped file's memory is
   * (`native.handle(buffer)`), the Metal residency sets (`native.residencySets()`).
   */
  get native(): DeviceNative {
    checkThis(this, "native");
    return this.#parts.native;
  }

  /**
   * A buffer of `bytes` bytes: a cached one when one fits (the policy decides which), else a new system buffer.
   * `0` gives an empty buffer, counted nowhere. Throws an `OutOfMemoryError` past the memory limit (nothing
   * changed), and argument errors for sizes that are not non-negative safe integers or exceed the device's
   * max buffer length (the allocator checks `bytes`). `options.label` names it in a trace (see {@link MallocOptions}).
   */
  malloc(bytes: number, options?: MallocOptions): DeviceBuffer<Device> {
    checkThis(this, "malloc()");
    const parts = this.#parts;
    if (parts.closed) throw deviceClosed("malloc()");
    const label =
      options === undefined ? undefined : MALLOC_OPTIONS.check(options, "options", "malloc()").label;
    if (parts.quarantine.size > 0) parts.quarantine.settle();
    parts.order.poll();
    const allocation = parts.allocator.malloc(bytes);
    const state = new BufferState(allocation);
    parts.order.adopt(state);
    const buffer = new DeviceBuffer(this, state);
    if (allocation.buffer !== undefined) {
      parts.liveBuffers.link(state);
      parts.safetyNet?.add(buffer, state);
    }
    parts.trace?.allocate(state, bytes, label);
    return buffer;
  }

  /**
   * Frees a buffer (to the cache or the system) or a mapped file (unmapped): the same as `handle.free(options)`.
   * Double free, a handle of another device: typed errors. `{ after: promise }` defers giving the memory back
   * until the promise settles (see {@link FreeOptions}).
   */
  free(handle: DeviceBuffer | MappedFile, options?: FreeOptions): void {
    checkThis(this, "free()");
    // A buffer (nearly every free) passes one brand check; only what is not one is asked if it is a file.
    const isBuffer = isDeviceBuffer(handle);
    if (!isBuffer && isMappedFile(handle)) {
      this.#checkOwn(true, handle.device);
      this.#parts.mapped.free(handle, options);
      return;
    }
    this.#checkOwn(isBuffer, isBuffer ? bufferDevice(handle) : undefined);
    this.#freeOwn(handle, bufferState(handle), options);
  }

  /** Frees a live buffer of this open device (checked by the caller): at once, or once `options.after` settles. */
  #freeOwn(buffer: DeviceBuffer, state: BufferState, options: FreeOptions | undefined): void {
    if (!state.live) throw bufferFreed("free()");
    const after = options === undefined ? undefined : checkFreeOptions(options, "free()");
    if (after === undefined) this.#freeState(state);
    else this.#deferFree(state, after);
    this.#parts.safetyNet?.remove(state);
    if (state.viewsHandedOut) forgetViews(buffer);
  }

  /**
   * A free that waits for `after`: the buffer is dead to JavaScript now (views detached, every use a
   * StateError), but its memory stays out of the cache, and counted in `active`, until the promise
   * settles either way — a kernel may still be reading or writing it. Settling after close() gives the
   * memory straight back to the system: the buffer, or under the segments policy the block's range and,
   * with the last pending block of its segment, the segment (an expandable segment's mappings and address
   * space).
   */
  #deferFree(state: BufferState, after: PromiseLike<unknown>): void {
    const native = state.allocation.buffer;
    if (native !== undefined && state.viewsHandedOut) native.detachContents();
    state.live = false;
    this.#parts.liveBuffers.unlink(state);
    this.#parts.settleLater(
      this.#parts.pendingFrees,
      state,
      after,
      () => {
        // As #freeState: a buffer whose view was moved away (transfer) is never cached.
        if (native?.quarantined === true) this.#freeQuarantined(native, state);
        else if (!this.#parts.order.hold(state)) {
          this.#parts.allocator.free(state.allocation);
          this.#parts.trace?.free(state);
        }
      },
      () => this.#parts.releaseAfterClose(state),
    );
  }

  #freeState(state: BufferState): void {
    // Views are detached before the buffer can reach its next owner (through the cache); a buffer whose
    // owner never asked for one has none to detach (no native call). The detaching is a function of its own
    // (detachViews), so that this path stays small enough for the engine to inline after view-heavy use.
    if (state.viewsHandedOut && detachViews(state)) {
      this.#freeQuarantined(state.allocation.buffer as NativeBuffer, state);
    } else if (state.uses === undefined || !this.#parts.order.hold(state)) {
      // Used on several streams: held (still in `active`) until each stream's work ran; else given back now.
      this.#parts.allocator.free(state.allocation);
      this.#parts.trace?.free(state);
    }
    state.live = false;
    this.#parts.liveBuffers.unlink(state);
  }

  /** Gives a buffer whose view was moved away back to the backend, never to the cache, and counts what it holds. */
  #freeQuarantined(native: NativeBuffer, state: BufferState): void {
    // The trace says what the allocator did: a free into quarantine ("q"), given back at once ("r") when the
    // backend holds nothing for it any more.
    const held = this.#parts.quarantine.holdBuffer(native, state.allocation, state);
    this.#parts.trace?.quarantine(state);
    if (!held) this.#parts.trace?.giveBack(state);
  }

  #reclaim(state: BufferState): void {
    if (!state.live || this.#parts.closed) return;
    this.#parts.figures.leakedBuffers += 1;
    state.registered = false;
    this.#freeState(state);
  }

  /**
   * Maps the file at `path` without a copy (private copy-on-write: writes never reach the file), charged in
   * `mapped` at its length rounded up to the backend's pages and wired as a mapped file when the wired
   * limit allows. Refused with an `OutOfMemoryError` past the memory limit (the file is unmapped again). Free it
   * with `file.free()` (or `using`).
   */
  mapFile(path: string): MappedFile<Device> {
    checkThis(this, "mapFile()");
    if (this.#parts.closed) throw deviceClosed("mapFile()");
    path = checkArgument(PATH, path, "path", "mapFile()");
    if (this.#parts.quarantine.size > 0) this.#parts.quarantine.settle();
    return this.#parts.mapped.map(this, path);
  }

  /**
   * The full statistics: the allocator's figures, the wired ones from residency (after `close()`: the last
   * ones, all released).
   */
  memoryStats(): MemoryStats {
    checkThis(this, "memoryStats()");
    if (!this.#parts.closed) this.#parts.quarantine.settle(true);
    return this.#parts.figures.memoryStats();
  }

  /** Counters beyond {@link memoryStats}: cache hits and misses, retries, refusals, leaks, the backend's. */
  counters(): DeviceCounters {
    checkThis(this, "counters()");
    return this.#parts.figures.counters();
  }

  /**
   * Restarts every peak at its quantity's value now: `peakActive`, `peakActiveWithMapped`, `peakReserved` and
   * `counters().peakLive` (PyTorch's `reset_peak_memory_stats`; MLX sets its one peak to 0).
   */
  resetPeak(): void {
    checkThis(this, "resetPeak()");
    this.#ensureOpen("resetPeak()");
    this.#parts.resetPeak();
  }

  /**
   * Sets the hard limit on `active + mapped` (and the GC limit, `min(limit, 0.95·W)`); returns the previous
   * limit. Any non-negative safe integer, above the device's memory too (as MLX).
   */
  setMemoryLimit(bytes: number): number {
    checkThis(this, "setMemoryLimit()");
    this.#ensureOpen("setMemoryLimit()");
    return this.#parts.setAllocatorLimit("memory", bytes);
  }

  /** Sets the cache limit and trims the cache to it at once; returns the previous limit. */
  setCacheLimit(bytes: number): number {
    checkThis(this, "setCacheLimit()");
    this.#ensureOpen("setCacheLimit()");
    return this.#parts.setAllocatorLimit("cache", bytes);
  }

  /**
   * Sets how many bytes of buffers and mapped files are kept wired (resident); returns the previous limit.
   * Waiting buffers are wired while they fit, or wired ones are unwired until under the new limit. Refused
   * above the recommended working set, as MLX. The limit is residency's `wiredLimit`.
   */
  setWiredLimit(bytes: number): number {
    checkThis(this, "setWiredLimit()");
    this.#ensureOpen("setWiredLimit()");
    return this.#parts.setWiredLimit(bytes);
  }

  /** Releases every cached buffer to the system. */
  clearCache(): void {
    checkThis(this, "clearCache()");
    this.#ensureOpen("clearCache()");
    this.#parts.clearCache();
  }

  /** Renews the residency request of every non-empty residency set. */
  refreshResidency(): void {
    checkThis(this, "refreshResidency()");
    this.#ensureOpen("refreshResidency()");
    this.#parts.refreshResidency();
  }

  /**
   * Renews residency requests every `intervalMilliseconds` on an unref'd timer (it never keeps the process
   * alive), for macOS versions that drop residency after the GPU idles. Replaces a running keep-alive.
   */
  startResidencyKeepAlive(intervalMilliseconds = 1000): void {
    checkThis(this, "startResidencyKeepAlive()");
    this.#ensureOpen("startResidencyKeepAlive()");
    checkArgument(timerInterval, intervalMilliseconds, "intervalMilliseconds", "startResidencyKeepAlive()");
    this.#parts.keepAlive.start(intervalMilliseconds, () => {
      if (!this.#parts.closed) this.#parts.refreshResidency();
    });
  }

  /** Stops the keep-alive timer, if any. */
  stopResidencyKeepAlive(): void {
    checkThis(this, "stopResidencyKeepAlive()");
    this.#parts.keepAlive.stop();
  }

  /** The backend's facts and the device's setup. */
  info(): DeviceInfo {
    checkThis(this, "info()");
    return this.#parts.info();
  }

  /**
   * Starts recording every allocation, free, mapping and limit change (see {@link Trace}): `name` (a string)
   * or {@link TraceOptions} (a name, a file to stream to, a limit of events, call stacks).
   */
  startTrace(nameOrOptions: string | TraceOptions = "device-trace"): void {
    checkThis(this, "startTrace()");
    this.#ensureOpen("startTrace()");
    const options = checkTraceOptions(nameOrOptions);
    const parts = this.#parts;
    if (parts.trace) throw traceRecording("startTrace(): a trace is already being recorded");
    parts.trace = DeviceTrace.start(options, () => parts.traceOpening(), "startTrace()");
  }

  /** Records a mark (`["k", name]`: a step's boundary) in the trace being recorded; nothing without one. */
  mark(name: string): void {
    checkThis(this, "mark()");
    this.#ensureOpen("mark()");
    name = checkArgument(TRACE_MARK, name, "name", "mark()");
    this.#parts.trace?.mark(name);
  }

  /**
   * Stops recording and returns the trace (header and events; `toNdjson()` for a file). A trace streamed to a
   * file is written to its end and closed; its `events` are in the file, not here.
   *
   * @throws SystemCallError when writing the file failed (the recording stopped all the same).
   */
  stopTrace(): Trace {
    checkThis(this, "stopTrace()");
    const trace = this.#parts.trace;
    if (!trace) throw traceRecording("stopTrace(): no trace is being recorded");
    this.#parts.trace = undefined;
    return trace.stop("stopTrace()");
  }

  /**
   * Releases everything: live buffers (their views detached), cached buffers, mapped files and residency
   * sets. Idempotent. Exception-safe: every step runs even when one throws, the device ends closed, and the
   * first failure is rethrown at the end, later ones attached as its `suppressed` (see `Teardown` in
   * `@nuvec/stats`). Every later use of the device or its buffers throws `StateError` (`ERR_NUVEC_DEVICE_CLOSED`). Frees deferred
   * with `{ after }` are the exception: each one's memory goes back to the system when its promise settles
   * (a kernel may still be using it); until then it stays in the last `memoryStats()` (`active`, `mapped`)
   * and in `counters().pendingFrees`.
   */
  close(): void {
    checkThis(this, "close()");
    // A close from inside a step of this one (a backend's release or a hook calling close()) returns at once:
    // the outer close finishes the work.
    if (this.#parts.closed || this.#parts.closing) return;
    this.#parts.closing = true;
    const teardown = new Teardown();
    teardown.run(() => this.stopResidencyKeepAlive());
    // Streams first: their work waited for (or dropped), their promises settled, held buffers given back.
    this.#parts.streams.close(teardown);
    this.#parts.release(teardown, (state) => this.#freeState(state));
    this.#parts.closed = true;
    teardown.finish();
  }

  /**
   * A new stream: an ordered queue of launches and copies on this device's buffers (see docs/STREAMS.md). An
   * `UnsupportedError` (`ERR_NUVEC_STREAMS_UNSUPPORTED`) on a backend without streams.
   */
  newStream(): Stream {
    checkThis(this, "newStream()");
    return this.#parts.streams.newStream();
  }

  /** The device's own stream (made on first use; released by {@link close}). */
  get defaultStream(): Stream {
    checkThis(this, "defaultStream");
    return this.#parts.streams.defaultStream();
  }

  /**
   * Kernels from this backend's entry of `source` (`cuda`, `metal`, `host`, `mock`). A `FormatError`
   * (`ERR_NUVEC_MODULE`) when there is none or it does not compile (the compiler's log in `log`).
   */
  loadModule(source: NativeModuleSource): KernelModule {
    checkThis(this, "loadModule()");
    return this.#parts.streams.loadModule(source);
  }

  /** Waits on this thread until every stream of the device has run what it was given. */
  synchronize(): void {
    checkThis(this, "synchronize()");
    this.#parts.streams.synchronize();
  }

  /** `using device = Device.open()` closes it at the end of the scope. */
  [Symbol.dispose](): void {
    checkThis(this, "[Symbol.dispose]()");
    this.close();
  }

  /**
   * The checks of a handle given to `free`, in order: a buffer or mapped file (`isHandle`), of this device
   * (`owner`, the device it names), the device still open.
   */
  #checkOwn(isHandle: boolean, owner: unknown): void {
    if (!isHandle) {
      throw new ArgumentError("handle", "free(handle): handle must be a DeviceBuffer or a MappedFile");
    }
    if (owner !== this) throw foreignBuffer("free()");
    if (this.#parts.closed) throw deviceClosed("free()");
  }

  #ensureOpen(operation: string): void {
    if (this.#parts.closed) throw deviceClosed(operation);
  }
}
