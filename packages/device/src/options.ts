// What a Device is opened with and what it reports: the option and result types of the public API, and the
// checks of the options the Device owns (the allocator checks its own limits and policy, residency its
// working set).
import type { AllocatorCounters, AllocatorPolicy, BoundedRelease, SegmentOptions } from "@nuvec/allocator";
import type { DeviceFacts, NativeBackend, NativeCounters, NativeMemoryHandle } from "@nuvec/metal-native";
import { ArgumentError, byteCountProblem, describeValue } from "@nuvec/stats";

/** Options of {@link Device.open}. Limits left out keep MLX's defaults. */
export interface DeviceOptions {
  /** The backend to run on: the real native one (Metal on macOS, host memory elsewhere) by default. */
  backend?: NativeBackend;
  /** The hard limit on `active + mapped` (default `min(1.5·W, 0.95·memory)`). */
  memoryLimit?: number;
  /** The cache is trimmed to this many bytes (default: the memory limit, `memoryLimit` when given, as MLX). */
  cacheLimit?: number;
  /** Bytes kept wired (resident); default 0, as MLX: nothing wired until asked. */
  wiredLimit?: number;
  /**
   * The cache policy: `"bounded"` (reserved memory held within `reserveRatio` of the live peak; the default
   * on Metal and the host), `"mlx"` (MLX's decisions exactly, every freed buffer kept up to the cache limit),
   * or `"segments"` (blocks inside large segments, for discrete GPUs; the default on CUDA). `"segments"`
   * needs a backend with `newBufferRange`.
   */
  policy?: AllocatorPolicy;
  /** For the `"segments"` policy: its sizes (any left out keep `SEGMENT_DEFAULTS` of `@nuvec/allocator`). */
  segments?: Partial<SegmentOptions>;
  /** For the `"bounded"` policy: reserved memory held within this ratio of the high-water mark (default 1.2). */
  reserveRatio?: number;
  /**
   * For the `"bounded"` policy: which cached buffer goes first, `"fitting"` (the default: the smallest that
   * alone is enough), `"least-recent"` or `"largest"`.
   */
  boundedRelease?: BoundedRelease;
  /**
   * The per-set cap of residency sets in percent of the working set: a whole number from 0 to 100, where 1–99
   * cap each set at `max(W·pct/100, 64 MiB)` and 0 or 100 mean one set with no cap. Default: MLX's
   * environment variable `MLX_RESIDENCY_SET_MAX_PCT` when set, else 5.
   */
  residencySetMaxPercent?: number;
  /**
   * Give back buffers dropped without `free()` (a `FinalizationRegistry`, counted in `leakedBuffers`).
   * Default true. Only buffers still live at the end of the event loop's turn are registered (in one batch),
   * so a buffer freed in the turn it was made costs the safety net next to nothing; a runtime that frees every
   * buffer itself (e.g. with `using`) can still turn it off.
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
   * `ArgumentError` naming the option.
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

/** Options of `free()`: `buffer.free()`, `mappedFile.free()`, `device.free(handle)`. */
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
 * A {@link NativeMemoryHandle} (the backend's pointers) with the allocation's lengths, from
 * `device.native.handle(target)`: what a runtime's native code needs to run a kernel on nuvec memory. Frozen;
 * valid until the buffer or file is freed, and after a deferred free until its promise settles.
 */
export type DeviceMemoryHandle = NativeMemoryHandle & {
  /** Bytes the caller may use: the bytes asked for (buffers) or the file's length (mapped files). */
  readonly length: number;
  /** Bytes behind the address: the size class handed out (buffers) or the mapped length (mapped files). */
  readonly allocatedLength: number;
};

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

/**
 * Counters beyond {@link MemoryStats}: the allocator's (among them `liveBuffers` and `mappings`, the system
 * buffers and mapped files in use, deferred frees included until their promise settles), the backend's, and
 * the device's own.
 */
export interface DeviceCounters extends AllocatorCounters {
  /** Buffers dropped without `free()` and given back by the safety net (a `FinalizationRegistry`). */
  leakedBuffers: number;
  /**
   * Buffers and mapped files freed with `{ after }` whose promise has not settled yet: their memory is
   * still in use (counted in `active` or `mapped`, `liveBuffers` or `mappings`) and will be freed when it
   * does.
   */
  pendingFrees: number;
  /**
   * Buffers freed while several streams' work still named them, held until that work ran (polled on the
   * malloc path): their bytes stay in `active` (`allocatedLength` each) until they go back to the cache.
   */
  streamPending: { buffers: number; bytes: number };
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

/** Node's timers take at most 2³¹−1 ms; a longer delay silently becomes 1 ms (TimeoutOverflowWarning). */
export const MAX_TIMER_MILLISECONDS = 2 ** 31 - 1;

/** A keep-alive interval that a timer honours as given: positive, finite, at most 2³¹−1 ms. */
export function isTimerInterval(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 && value <= MAX_TIMER_MILLISECONDS;
}

/** Refuses a keep-alive interval a timer would not honour, naming the argument. */
export function checkTimerInterval(value: unknown, name: string): asserts value is number {
  if (!isTimerInterval(value)) {
    throw new ArgumentError(
      name,
      `${name} must be a positive number of at most ${MAX_TIMER_MILLISECONDS}, got ${String(value)}`,
    );
  }
}

/**
 * A byte count where the Device is the public boundary (the wired limit: residency trusts its caller), refused
 * with a `ArgumentError` like every other argument. Sizes the allocator receives (malloc, the
 * memory and cache limits) are checked there, once.
 */
export function checkByteCount(value: unknown, name: string): asserts value is number {
  const problem = byteCountProblem(value, name);
  if (problem) throw new ArgumentError(name, problem.message);
}

/**
 * `residencySetMaxPercent` as residency takes it: the text of `MLX_RESIDENCY_SET_MAX_PCT` (residency reads the
 * variable itself when the option is left out). Refuses anything but a whole number from 0 to 100.
 */
export function residencySetMaxPercentText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 100) {
    throw new ArgumentError(
      "residencySetMaxPercent",
      `residencySetMaxPercent must be a whole number from 0 to 100 (percent of the working set; 0 or 100: one set), got ${describeValue(value)}`,
    );
  }
  return String(value);
}

/**
 * `Device.open`'s checks of `options` that need no backend (an object; the keep-alive interval, the wired
 * limit and the per-set cap, when given). Returns the per-set cap as residency takes it.
 */
export function checkOpenOptions(options: unknown): string | undefined {
  if (options === null || typeof options !== "object") {
    throw new ArgumentError("options", "Device.open(options): options must be an object");
  }
  const { residencyKeepAliveMilliseconds, wiredLimit, residencySetMaxPercent } = options as DeviceOptions;
  if (residencyKeepAliveMilliseconds !== undefined)
    checkTimerInterval(residencyKeepAliveMilliseconds, "residencyKeepAliveMilliseconds");
  if (wiredLimit !== undefined) checkByteCount(wiredLimit, "wiredLimit");
  return residencySetMaxPercentText(residencySetMaxPercent);
}

/** `mapFile`'s check of its path: a non-empty string (the backend checks the rest, such as a NUL byte). */
export function checkPath(path: unknown): asserts path is string {
  if (typeof path !== "string" || path.length === 0) {
    throw new ArgumentError("path", `mapFile(path): path must be a non-empty string, got ${String(path)}`);
  }
}
