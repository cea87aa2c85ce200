import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { checkBufferLength, checkPath } from "./arguments.js";
import {
  NativeAllocationError,
  NativeArgumentError,
  NativeError,
  NativeReleasedError,
  NativeSystemError,
  NativeUnavailableError,
  type NativeUnavailableReason,
} from "./errors.js";
import { ADDON_FILE_NAME, PREBUILT_PACKAGES, platformKey } from "./platforms.js";
import type {
  BackendPlatform,
  NativeAllocation,
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeMappedFile,
  NativeMemoryHandle,
  NativeResidencySet,
} from "./types.js";

// ---------------------------------------------------------------------------------------------------------
// The raw addon (native/binding.cc). Its handles check their arguments again, and throw plain `Error`s with
// a `code` (and syscall, errno, errnoNumber, path, bytes, argument) that `typedError` turns into the classes
// of errors.ts.

interface RawBufferHandle {
  readonly length: number;
  readonly allocatedSize: number;
  readonly released: boolean;
  contents(): ArrayBuffer;
  nativeHandle(): NativeMemoryHandle;
  /** Detaches the views; true when one of them escaped (was moved away by someone else) so far. */
  detachContents(): boolean;
  release(): void;
}

interface RawMappedFileHandle extends RawBufferHandle {
  readonly mappedLength: number;
}

interface RawResidencySetHandle {
  readonly allocatedSize: number;
  readonly allocationCount: number;
  readonly wiringFailures: number;
  readonly lastWiringError: string | undefined;
  readonly released: boolean;
  readonly metalResidencySet: bigint | undefined;
  add(allocation: RawBufferHandle): void;
  remove(allocation: RawBufferHandle): void;
  commit(): void;
  requestResidency(): void;
  endResidency(): void;
  release(): void;
}

interface RawFacts {
  name: string;
  platform: "host" | "metal";
  memorySize: number;
  recommendedMaxWorkingSetSize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  supportsResidencySets: boolean;
}

interface RawAddon {
  NativeBufferHandle: new (bytes: number) => RawBufferHandle;
  NativeMappedFileHandle: new (path: string) => RawMappedFileHandle;
  NativeResidencySetHandle: new () => RawResidencySetHandle;
  facts(): RawFacts;
  counters(): NativeCounters;
  lastWiringError(): string | undefined;
  attachResidencySet(set: RawResidencySetHandle, commandQueue?: bigint): void;
  checkMetalDevice(device: bigint): void;
  noop(): void;
  available: boolean;
  unavailableReason: string;
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

/** Turns an error thrown by the addon into the matching class of errors.ts; anything else passes through. */
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
      return new NativeUnavailableError(message, { cause: error });
    default:
      return error;
  }
}

/** Runs a call into the addon: the one place where what it throws becomes a class of errors.ts. */
function callNative<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    throw typedError(error);
  }
}

/** A pointer argument: `undefined`, or a `bigint` in (0, 2^64). */
function checkOptionalPointer(value: unknown, name: string): asserts value is bigint | undefined {
  if (value === undefined) return;
  if (typeof value !== "bigint" || value <= 0n || value >= 1n << 64n) {
    throw new NativeArgumentError(
      name,
      `${name} must be a non-zero 64-bit pointer given as a bigint, got ${typeof value === "bigint" ? `${value}n` : String(value)}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------------
// Loading. In order: a local source build (native/build/Release: the workspace's, or what
// `npx @nuvec/metal-native build` made), then the prebuilt package of this platform (an optional dependency,
// see platforms.ts). Nothing is decided from file times (package managers do not preserve them).

/** The package's root (where native/ is): one level above src/ and dist/ alike. */
function packageRoot(): string {
  return join(dirname(fileURLToPath(import.meta.url)), "..");
}

/** The command that builds the addon from source into this very copy of the package. */
function buildCommand(): string {
  return `npx @nuvec/metal-native build (or: node "${join(packageRoot(), "scripts", "build-from-source.mjs")}")`;
}

let loaded: { addon: RawAddon } | { error: NativeUnavailableError } | undefined;

function unavailable(reason: NativeUnavailableReason, what: string, cause?: unknown): NativeUnavailableError {
  const where = `${process.platform}-${process.arch}, Node.js ${process.version}`;
  const remedy =
    reason === "unsupported-platform" || reason === "backend-unavailable"
      ? ""
      : ` To build it from source, run ${buildCommand()}: it needs Python 3, make and a C++17 compiler ` +
        "(build-essential on Debian/Ubuntu, build-base on Alpine, the Xcode command line tools on macOS) and " +
        "finds node-gyp itself.";
  return new NativeUnavailableError(
    `@nuvec/metal-native: no native backend on ${where}: ${what}.${remedy} ` +
      "For tests, and on any platform, the mock works without native code: " +
      'import { MockBackend } from "@nuvec/metal-native/mock".',
    cause === undefined ? { reason } : { reason, cause },
  );
}

/** This package's version: its platform packages are pinned to it. */
function ownVersion(): string {
  try {
    return JSON.parse(readFileSync(join(packageRoot(), "package.json"), "utf8")).version;
  } catch {
    return "<the version of @nuvec/metal-native>";
  }
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "unknown error";
}

/** Loads an addon file: its module, or the reason it is unusable. */
function loadAddonFile(
  file: string,
): { addon: RawAddon } | { reason: NativeUnavailableReason; what: string; cause?: unknown } {
  try {
    const addon = createRequire(import.meta.url)(file) as RawAddon;
    if (typeof addon?.available !== "boolean")
      return { reason: "load-failed", what: `${file} is not the @nuvec/metal-native addon` };
    if (addon.available) return { addon };
    return { reason: "backend-unavailable", what: addon.unavailableReason };
  } catch (error) {
    return { reason: "load-failed", what: `${file} does not load (${firstLine(error)})`, cause: error };
  }
}

function findAddon(): { addon: RawAddon } | { error: NativeUnavailableError } {
  if (process.platform === "win32")
    return { error: unavailable("unsupported-platform", "there is no native backend for Windows") };
  const local = join(packageRoot(), "native", "build", "Release", ADDON_FILE_NAME);
  let localFailure: string | undefined;
  if (existsSync(local)) {
    const result = loadAddonFile(local);
    if ("addon" in result || result.reason === "backend-unavailable")
      return "addon" in result ? result : { error: unavailable(result.reason, result.what) };
    localFailure = result.what;
  }
  const key = platformKey();
  const packageName = PREBUILT_PACKAGES[key];
  const also = localFailure === undefined ? "" : `; the source build ${localFailure}`;
  if (packageName === undefined) {
    const known = Object.keys(PREBUILT_PACKAGES).join(", ");
    return {
      error: unavailable(
        "no-prebuilt",
        `there is no prebuilt addon for ${key} (there is for ${known})${also}`,
      ),
    };
  }
  let file: string;
  try {
    file = createRequire(join(packageRoot(), "package.json")).resolve(`${packageName}/${ADDON_FILE_NAME}`);
  } catch {
    return {
      error: unavailable(
        "not-installed",
        `${packageName}, the prebuilt addon for ${key}, is not installed (it is an optional dependency: ` +
          `installed with optional dependencies left out, or on another platform? Install it with ` +
          `npm install ${packageName}@${ownVersion()})${also}`,
      ),
    };
  }
  const result = loadAddonFile(file);
  if ("addon" in result) return result;
  return { error: unavailable(result.reason, `${result.what}${also}`, result.cause) };
}

function loadAddon(): RawAddon {
  if (loaded === undefined) loaded = findAddon();
  if ("error" in loaded) throw loaded.error;
  return loaded.addon;
}

const backendsByFile = new Map<string, NativeAddonBackend>();

/**
 * @internal The backend of one given addon file, skipping the search: for running the contract suite against
 * a prebuilt binary before it is packed (scripts/run-contract.mjs). Throws {@link NativeUnavailableError}.
 */
export function openNativeBackendFile(file: string): NativeAddonBackend {
  let found = backendsByFile.get(file);
  if (found === undefined) {
    const result = loadAddonFile(file);
    if (!("addon" in result)) throw unavailable(result.reason, result.what, result.cause);
    found = new NativeAddonBackend(result.addon);
    backendsByFile.set(file, found);
  }
  return found;
}

let backend: NativeAddonBackend | undefined;

/**
 * The real native backend of this machine — Metal on macOS, host memory (`mmap`, `mlock`) on Linux and other
 * POSIX systems — loaded from a local source build (`native/build/Release/`) if there is one, else from the
 * prebuilt package of this platform (`@nuvec/metal-native-linux-x64-gnu`, …). The same object on every call
 * within a thread; each worker thread gets its own. Throws a {@link NativeUnavailableError} (with a `reason`)
 * saying what is missing and how to build from source when no addon loads.
 */
export function loadNativeBackend(): NativeAddonBackend {
  if (backend === undefined) backend = new NativeAddonBackend(loadAddon());
  return backend;
}

// ---------------------------------------------------------------------------------------------------------
// The backend and its handles: every argument is checked here, before native code runs.

/** A buffer of real memory from the native addon (Metal buffer or host memory). */
export class NativeAddonBuffer implements NativeBuffer {
  /** The bytes asked for. */
  readonly length: number;
  /** The bytes the system holds for it (page-rounded when it came from `mmap`). */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawBufferHandle;
  /** @internal */
  readonly owner: NativeAddonBackend;
  #released = false;
  #quarantined = false;
  // Whether a view may exist: detachContents() on the allocator's cache path then costs no native call when
  // nobody asked for the contents (the common case).
  #viewsHandedOut = false;
  // The last view handed out (see contents()), held weakly: a strong reference would keep alive whatever the
  // caller ties to the view (the Device's owner of it), and so the owner of this buffer, for as long as this
  // buffer is cached or live. Dropped with the views on detachContents() and release().
  #lastView: WeakRef<ArrayBuffer> | undefined = undefined;

  /** @internal Made by {@link NativeAddonBackend.newBuffer}. */
  constructor(raw: RawBufferHandle, owner: NativeAddonBackend) {
    this.raw = raw;
    this.owner = owner;
    this.length = raw.length;
    this.allocatedSize = raw.allocatedSize;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    return this.#released;
  }

  /**
   * True once `detachContents()` found a view handed out that it could not detach: one detached by someone
   * else (moved away by `ArrayBuffer.prototype.transfer()`), or one already collected whose finalizer has
   * not run yet (the addon holds views weakly and cannot tell the two apart). Such a buffer must never be
   * reused: its memory stays allocated after `release()` until that view's finalizer runs.
   */
  get quarantined(): boolean {
    return this.#quarantined;
  }

  /** The memory as an external `ArrayBuffer` (no copy; the same one while it lives), detached on release. */
  contents(): ArrayBuffer {
    if (this.#released) throw new NativeReleasedError("contents(): the buffer was already released");
    // The view handed out last, while it lives and is attached: a deref instead of a native call that walks the
    // addon's weak references. A view detached by us (detachContents, release) or moved away by its holder
    // (transfer, postMessage) reads byteLength 0 and goes to the addon, which makes the next one; a buffer of
    // 0 bytes never exists (newBuffer refuses it), so 0 always means detached.
    const last = this.#lastView?.deref();
    if (last !== undefined && last.byteLength !== 0) return last;
    const contents = callNative(() => this.raw.contents());
    this.#viewsHandedOut = true;
    this.#lastView = new WeakRef(contents);
    return contents;
  }

  /**
   * Detaches every `ArrayBuffer` handed out so far without releasing the memory (the device calls it when a
   * freed buffer goes to the cache); the next `contents()` makes a new one. Throws after release.
   */
  detachContents(): void {
    if (this.#released) throw new NativeReleasedError("detachContents(): the buffer was already released");
    if (!this.#viewsHandedOut) return;
    this.#viewsHandedOut = false;
    this.#lastView = undefined;
    if (callNative(() => this.raw.detachContents())) this.#quarantined = true;
  }

  /**
   * Where the memory is, for a runtime's native code: `{ platform: "host", address }`, or on Metal also the
   * `id<MTLBuffer>` (`metalBuffer`, not retained) and its `gpuAddress`. Frozen; valid until release, throws
   * after.
   */
  nativeHandle(): NativeMemoryHandle {
    if (this.#released) throw new NativeReleasedError("nativeHandle(): the buffer was already released");
    return callNative(() => Object.freeze(this.raw.nativeHandle()));
  }

  /** Gives the memory back (once no residency set holds it) and detaches every view. A second call throws. */
  release(): void {
    if (this.#released) throw new NativeReleasedError("release(): the buffer was already released");
    this.#released = true;
    this.#lastView = undefined;
    callNative(() => this.raw.release());
  }
}

/** A file mapped private and copy-on-write by the native addon. */
export class NativeAddonMappedFile implements NativeMappedFile {
  /** The path it was mapped from. */
  readonly path: string;
  /** The file's length in bytes. */
  readonly length: number;
  /** The mapped length: whole pages. */
  readonly mappedLength: number;
  /** The bytes the system holds for the mapping (the mapped length). */
  readonly allocatedSize: number;
  /** @internal */
  readonly raw: RawMappedFileHandle;
  /** @internal */
  readonly owner: NativeAddonBackend;
  #released = false;

  /** @internal Made by {@link NativeAddonBackend.mapFile}. */
  constructor(raw: RawMappedFileHandle, path: string, owner: NativeAddonBackend) {
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
    return callNative(() => this.raw.contents());
  }

  /** Detaches every `ArrayBuffer` handed out so far, without unmapping. Throws after release. */
  detachContents(): void {
    if (this.#released)
      throw new NativeReleasedError("detachContents(): the mapped file was already released");
    callNative(() => this.raw.detachContents());
  }

  /** Where the mapping is (its first byte is the file's first byte); see {@link NativeAddonBuffer.nativeHandle}. */
  nativeHandle(): NativeMemoryHandle {
    if (this.#released) throw new NativeReleasedError("nativeHandle(): the mapped file was already released");
    return callNative(() => Object.freeze(this.raw.nativeHandle()));
  }

  /** Unmaps the file (once no residency set holds it) and detaches every view. A second call throws. */
  release(): void {
    if (this.#released) throw new NativeReleasedError("release(): the mapped file was already released");
    this.#released = true;
    callNative(() => this.raw.release());
  }
}

/**
 * A residency set of the native addon: `MTLResidencySet` on Metal, `mlock` on the host. As with Metal, a
 * set holds what it was given: a buffer released while in a set keeps its memory (and its wiring) until it
 * is removed and the set committed, or the set is released.
 */
export class NativeAddonResidencySet implements NativeResidencySet {
  /** @internal */
  readonly raw: RawResidencySetHandle;
  /** @internal */
  readonly owner: NativeAddonBackend;
  #released = false;

  /** @internal Made by {@link NativeAddonBackend.newResidencySet}. */
  constructor(raw: RawResidencySetHandle, owner: NativeAddonBackend) {
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

  /** Times wiring failed in this set (host: `mlock` refused, e.g. past `RLIMIT_MEMLOCK`); never thrown. */
  get wiringFailures(): number {
    return this.raw.wiringFailures;
  }

  /** What the last wiring failure was and how to lift the limit, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    return this.raw.lastWiringError;
  }

  /** Metal: the `id<MTLResidencySet>` as a pointer (not retained); `undefined` on the host or after release. */
  get metalResidencySet(): bigint | undefined {
    return this.#released ? undefined : this.raw.metalResidencySet;
  }

  /** Adds an allocation of this backend (effective at the next commit). Throws for a released one. */
  add(allocation: NativeAllocation): void {
    this.#assertLive("add");
    const raw = this.#rawOf(allocation, "add");
    if (allocation.released) throw new NativeReleasedError("add(): the allocation was already released");
    callNative(() => this.raw.add(raw));
  }

  /** Removes an allocation (effective at the next commit); a released one may be removed. */
  remove(allocation: NativeAllocation): void {
    this.#assertLive("remove");
    const raw = this.#rawOf(allocation, "remove");
    callNative(() => this.raw.remove(raw));
  }

  /** Applies the adds and removes since the last commit (wiring failures are counted, never thrown). */
  commit(): void {
    this.#assertLive("commit");
    callNative(() => this.raw.commit());
  }

  /** Wires every committed allocation, and keeps doing so for later commits. */
  requestResidency(): void {
    this.#assertLive("requestResidency");
    callNative(() => this.raw.requestResidency());
  }

  /** Ends the residency request: nothing in the set stays wired. */
  endResidency(): void {
    this.#assertLive("endResidency");
    callNative(() => this.raw.endResidency());
  }

  /** Ends residency and frees the set (and what only it still held); further calls throw. */
  release(): void {
    this.#assertLive("release");
    this.#released = true;
    callNative(() => this.raw.release());
  }

  #rawOf(allocation: NativeAllocation, method: string): RawBufferHandle {
    if (
      (allocation instanceof NativeAddonBuffer || allocation instanceof NativeAddonMappedFile) &&
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
 * The native addon as a {@link NativeBackend}: device facts read once, and every argument checked in
 * TypeScript before native code runs (the addon checks again). Get it from {@link loadNativeBackend}.
 */
export class NativeAddonBackend implements NativeBackend {
  /** A name for people, e.g. `"Apple M3 Max"` or `"host (Linux x64)"`. */
  readonly name: string;
  /** `"metal"` on macOS, `"host"` elsewhere. */
  readonly platform: BackendPlatform;
  /** Memory the process may use, in bytes. */
  readonly memorySize: number;
  /** Metal's recommended working set; host: 3/4 of `memorySize`. */
  readonly recommendedMaxWorkingSetSize: number;
  /** The largest buffer `newBuffer` accepts. */
  readonly maxBufferLength: number;
  /** The most live system buffers the device allows. */
  readonly resourceLimit: number;
  /** The system's page size. */
  readonly pageSize: number;
  /** Whether residency sets are available. */
  readonly supportsResidencySets: boolean;
  readonly #addon: RawAddon;

  /** @internal Use {@link loadNativeBackend}. */
  constructor(addon: RawAddon) {
    this.#addon = addon;
    const facts = addon.facts();
    this.name = facts.name;
    this.platform = facts.platform;
    this.memorySize = facts.memorySize;
    this.recommendedMaxWorkingSetSize = facts.recommendedMaxWorkingSetSize;
    this.maxBufferLength = facts.maxBufferLength;
    this.resourceLimit = facts.resourceLimit;
    this.pageSize = facts.pageSize;
    this.supportsResidencySets = facts.supportsResidencySets;
  }

  /** A new buffer of `bytes` bytes, zeroed. Throws a {@link NativeArgumentError} for a bad size. */
  newBuffer(bytes: number): NativeAddonBuffer {
    checkBufferLength(bytes, this.maxBufferLength);
    return callNative(() => new NativeAddonBuffer(new this.#addon.NativeBufferHandle(bytes), this));
  }

  /** Maps a whole file private and copy-on-write. Throws a {@link NativeSystemError} for a file that cannot be. */
  mapFile(path: string): NativeAddonMappedFile {
    checkPath(path);
    return callNative(
      () => new NativeAddonMappedFile(new this.#addon.NativeMappedFileHandle(path), path, this),
    );
  }

  /** A new residency set, or `undefined` when the device has none or cannot make one. */
  newResidencySet(): NativeAddonResidencySet | undefined {
    if (!this.supportsResidencySets) return undefined;
    try {
      return new NativeAddonResidencySet(new this.#addon.NativeResidencySetHandle(), this);
    } catch {
      // The interface's contract: a set that cannot be made is `undefined`, and the caller runs unwired.
      return undefined;
    }
  }

  /**
   * Attaches a set to the device's command queue (Metal's `addResidencySet:`; nothing to do on the host).
   * Metal: `commandQueue` (a runtime's `id<MTLCommandQueue>`) instead of the addon's own queue, the set
   * removed from it before it is released; the host refuses a queue with a {@link NativeArgumentError}.
   */
  attachResidencySet(set: NativeResidencySet, commandQueue?: bigint): void {
    checkOptionalPointer(commandQueue, "commandQueue");
    if (!(set instanceof NativeAddonResidencySet) || set.owner !== this) {
      throw new NativeArgumentError(
        "set",
        "attachResidencySet(): the set must be a residency set of this backend",
      );
    }
    if (set.released)
      throw new NativeReleasedError("attachResidencySet(): the residency set was already released");
    callNative(() =>
      commandQueue === undefined
        ? this.#addon.attachResidencySet(set.raw)
        : this.#addon.attachResidencySet(set.raw, commandQueue),
    );
  }

  /**
   * Metal: checks that `device` (a runtime's `id<MTLDevice>`) is the GPU the buffers come from; a
   * {@link NativeArgumentError} otherwise, and always on the host (no Metal device).
   */
  checkMetalDevice(device: bigint): void {
    checkOptionalPointer(device, "device");
    if (device === undefined)
      throw new NativeArgumentError("device", "checkMetalDevice(): device is required");
    callNative(() => this.#addon.checkMetalDevice(device));
  }

  /** Counters for leak checks and tests. */
  counters(): NativeCounters {
    return this.#addon.counters();
  }

  /** What the last wiring failure of any set was and how to lift the limit, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    return this.#addon.lastWiringError();
  }
}
