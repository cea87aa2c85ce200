import { ArgumentError } from "@nuvec/stats";
import { checkBufferLength, checkOptionalPointer, checkPath } from "../arguments.js";
import { lookAlike, releasedError } from "../errors.js";
import { BackendFacts } from "../facts.js";
import { checkRange } from "../range.js";
import type { NativeModule, NativeModuleSource, NativeStream } from "../streams.js";
import type { NativeBackend, NativeBuffer, NativeCounters, NativeResidencySet } from "../types.js";
import { isAddonAllocation } from "./allocation.js";
import { AddonBuffer } from "./buffer.js";
import { AddonBufferRange } from "./buffer-range.js";
import { callNative } from "./call.js";
import type { AddonMappedFile } from "./mapped-file.js";
import { AddonModule, moduleArguments } from "./module.js";
import type { AddonOwner } from "./owner.js";
import { type AllocationKind, ownedHandle } from "./ownership.js";
import type {
  RawAddon,
  RawAllocationHandle,
  RawBufferHandle,
  RawFacts,
  RawMappedFileHandle,
  RawResidencySetHandle,
  SlotCalls,
  ViewBookkeeping,
} from "./raw.js";
import { type AddonResidencySet, isAddonResidencySet } from "./residency-set.js";
import { AddonStream } from "./stream.js";

let hasBackendBrand: (value: object) => boolean;

/** The `this` of a backend's method or getter: a backend an addon loader made, else an ArgumentError. */
function checkThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasBackendBrand(value)) {
    throw lookAlike(operation, "this", "a native backend");
  }
}

/**
 * A {@link NativeBackend} over a nuvec addon: device facts read once, every argument checked in TypeScript
 * before native code runs (the addon checks again, for memory safety only), and what the addon throws turned
 * into typed errors. A subclass says which wrapper classes it makes (`wrapBuffer`, `wrapMappedFile`,
 * `wrapResidencySet`) and adds the calls of its own addon.
 */
export abstract class AddonBackend<
    TBuffer extends AddonBuffer = AddonBuffer,
    TMappedFile extends AddonMappedFile = AddonMappedFile,
    TResidencySet extends AddonResidencySet = AddonResidencySet,
  >
  extends BackendFacts
  implements NativeBackend, AddonOwner
{
  readonly #addon: RawAddon;
  // What the addon's countersInto writes the counters into, one per backend (its 18 figures).
  readonly #counterValues = new Float64Array(18);

  static {
    hasBackendBrand = (value) => #addon in value;
  }

  /** A backend over `addon`, whose device reported `facts` (`addon.facts()`, once). */
  protected constructor(addon: RawAddon, facts: RawFacts) {
    super(facts);
    this.#addon = addon;
    // A platform without streams (or an addon built before them): newStream and loadModule are absent, as
    // NativeBackend says, rather than methods that always throw.
    let unavailable: string | undefined = "this addon has no streams";
    try {
      if (addon.streamsUnavailable !== undefined) unavailable = addon.streamsUnavailable();
    } catch {
      // The device is gone: no streams either.
    }
    if (unavailable !== undefined) {
      Object.defineProperty(this, "newStream", { value: undefined });
      Object.defineProperty(this, "loadModule", { value: undefined });
    }
  }

  /** A new stream (host: a worker thread; CUDA: a driver stream). Absent where the platform has none. */
  newStream(): NativeStream {
    checkThis(this, "newStream()");
    const addon = this.#addon;
    if (addon.newStream === undefined) throw releasedError("newStream(): this addon has no streams");
    return new AddonStream(
      callNative(() => (addon.newStream as () => ReturnType<NonNullable<RawAddon["newStream"]>>)()),
      this,
    );
  }

  /**
   * Loads a module from this backend's entry of `source` (host: a library's path; CUDA: source or PTX;
   * Metal: MSL). A `FormatError` (`ERR_NUVEC_MODULE`) when there is none or it does not load, with the
   * loader's or compiler's text in `log`. Absent where the platform has no streams.
   */
  loadModule(source: NativeModuleSource): NativeModule {
    checkThis(this, "loadModule()");
    const addon = this.#addon;
    const [kind, text, options] = moduleArguments(this.platform, source);
    const load = addon.loadModule;
    if (load === undefined) throw releasedError("loadModule(): this addon has no streams");
    return new AddonModule(
      callNative(() => load(kind, text, options)),
      this,
    );
  }

  /** @internal The addon's calls by slot (see {@link SlotCalls}). */
  get slotCalls(): SlotCalls {
    checkThis(this, "slotCalls");
    return this.#addon;
  }

  /** A new buffer of `bytes` bytes. Throws a `ArgumentError` for a bad size (0 < bytes ≤ maxBufferLength). */
  newBuffer(bytes: number): TBuffer {
    checkThis(this, "newBuffer()");
    checkBufferLength(bytes, this.maxBufferLength);
    return callNative(() => this.wrapBuffer(new this.#addon.NativeBufferHandle(bytes)));
  }

  /**
   * A range of `length` bytes of `segment` from `offset` (see `NativeBackend.newBufferRange`). Made in
   * TypeScript: no native call.
   */
  newBufferRange(segment: NativeBuffer, offset: number, length: number): NativeBuffer {
    checkThis(this, "newBufferRange()");
    // The brand first: a Proxy of a real buffer passes `instanceof` and forwards `owner`.
    if (
      !isAddonAllocation(segment) ||
      !(segment instanceof AddonBuffer) ||
      segment.owner !== this ||
      segment.isRange
    ) {
      throw new ArgumentError("segment", "newBufferRange(): the segment must be a buffer of this backend");
    }
    if (segment.released) throw releasedError("newBufferRange(): the segment was already released");
    checkRange(offset, length, segment.length);
    return this.wrapRange(segment as TBuffer, offset, length);
  }

  /** Maps a whole file private and copy-on-write. Throws a `SystemCallError` for a file that cannot be. */
  mapFile(path: string): TMappedFile {
    checkThis(this, "mapFile()");
    checkPath(path);
    return callNative(() => this.wrapMappedFile(new this.#addon.NativeMappedFileHandle(path), path));
  }

  /** A new residency set, or `undefined` when the device has none or cannot make one. */
  newResidencySet(): TResidencySet | undefined {
    checkThis(this, "newResidencySet()");
    if (!this.supportsResidencySets) return undefined;
    try {
      return this.wrapResidencySet(new this.#addon.NativeResidencySetHandle());
    } catch {
      // The interface's contract: a set that cannot be made is `undefined`, and the caller runs unwired.
      return undefined;
    }
  }

  /**
   * Attaches a set to the device's command queue (Metal's `addResidencySet:`; nothing to do elsewhere).
   * Metal: `commandQueue` (a runtime's `id<MTLCommandQueue>`) instead of the addon's own queue, the set
   * removed from it before it is released; other backends refuse a queue with a `ArgumentError`.
   */
  attachResidencySet(set: NativeResidencySet, commandQueue?: bigint): void {
    checkThis(this, "attachResidencySet()");
    checkOptionalPointer(commandQueue, "commandQueue");
    if (!isAddonResidencySet(set)) {
      throw new ArgumentError("set", "attachResidencySet(): the set must be a residency set of this backend");
    }
    const raw = set.handleFor(this);
    if (commandQueue === undefined) {
      callNative(() => this.#addon.attachResidencySet(raw));
      return;
    }
    if (this.platform !== "metal") {
      throw new ArgumentError(
        "commandQueue",
        `attachResidencySet(): the ${this.platform} backend has no Metal command queue`,
      );
    }
    callNative(() => this.#addon.attachResidencySet(raw, commandQueue));
  }

  /**
   * Counters for leak checks and tests: a fresh object each call. The addon writes the figures into an array
   * this backend keeps (`countersInto`) and the object is made here, which costs a fraction of the addon
   * setting each named field itself (bench/counters-bench.mjs of `@nuvec/device`).
   */
  counters(): NativeCounters {
    checkThis(this, "counters()");
    const addon = this.#addon;
    if (addon.countersInto === undefined) return addon.counters();
    const values = this.#counterValues;
    addon.countersInto(values);
    return {
      buffersMade: values[0] as number,
      buffersReleased: values[1] as number,
      bufferBytes: values[2] as number,
      mappingsMade: values[3] as number,
      mappingsReleased: values[4] as number,
      mappedBytes: values[5] as number,
      residencySetsMade: values[6] as number,
      commits: values[7] as number,
      residencyRequests: values[8] as number,
      wiredBytes: values[9] as number,
      wiringFailures: values[10] as number,
      quarantinedAllocations: values[11] as number,
      quarantinedBytes: values[12] as number,
      abandonedAllocations: values[13] as number,
      abandonedBytes: values[14] as number,
      buffersFreedByPlatform: values[15] as number,
      mappingsUnmappedByPlatform: values[16] as number,
      residencySetsFreedByPlatform: values[17] as number,
    };
  }

  /**
   * @internal The end of a job in which this backend handed out views: the addon covers those still
   * attached with its teardown sentinel. Never throws (it runs from a microtask).
   */
  secureViews(): void {
    try {
      this.#addon.secureViews?.();
    } catch {
      // A worker being terminated refuses new buffers: the views stay in doubt, abandoned at its teardown.
    }
  }

  /**
   * How this backend's addon makes views: `"backing-store"` (V8's BackingStore API, where the addon was
   * built for this Node.js major) or `"node-api"` (external ArrayBuffers, everywhere else); see the
   * native-core DECISIONS.md.
   */
  get viewMechanism(): "backing-store" | "node-api" {
    checkThis(this, "viewMechanism");
    return this.#addon.viewMechanism ?? "node-api";
  }

  /**
   * @internal What the addon keeps for views (tests that it does not grow with the views made); `undefined`
   * from an addon that does not say.
   */
  viewBookkeeping(): ViewBookkeeping | undefined {
    checkThis(this, "viewBookkeeping()");
    return this.#addon.viewBookkeeping?.();
  }

  /** What the last wiring failure of any set was and how to lift the limit, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    checkThis(this, "lastWiringError");
    return this.#addon.lastWiringError();
  }

  /** Wraps a buffer handle this backend's addon made (`newBuffer`). */
  protected abstract wrapBuffer(raw: RawBufferHandle): TBuffer;

  /** A range of `segment` (checked): the subclass's class of ranges. */
  protected wrapRange(segment: TBuffer, offset: number, length: number): NativeBuffer {
    return new AddonBufferRange(segment, offset, length);
  }

  /** Wraps a mapped-file handle of `path` this backend's addon made (`mapFile`). */
  protected abstract wrapMappedFile(raw: RawMappedFileHandle, path: string): TMappedFile;

  /** Wraps a residency-set handle this backend's addon made (`newResidencySet`). */
  protected abstract wrapResidencySet(raw: RawResidencySetHandle): TResidencySet;

  /**
   * The addon handle of `value` when it is a `kind` this backend made, for a call of the subclass's own
   * addon that takes handles; else a `ArgumentError` naming `argument` and `method`.
   */
  protected handleOf(
    value: unknown,
    kind: AllocationKind,
    argument: string,
    method: string,
  ): RawAllocationHandle {
    return ownedHandle(this, value, kind, argument, method);
  }
}
