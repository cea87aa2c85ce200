import type {
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeModuleSource,
  NativeResidencySet,
} from "@nuvec/native-core";
import {
  allocationFailed,
  BackendFacts,
  checkBufferLength,
  checkRange,
  lookAlike,
  releasedError,
} from "@nuvec/native-core";
import { ArgumentError, mappingSize, Teardown } from "@nuvec/stats";
import { isMockMemory, MockBuffer, MockBufferRange } from "./buffer.js";
import { type MockCall, type MockCallCounts, MockCallLog } from "./calls.js";
import { MockCore, type MockWiringFault } from "./core.js";
import { MockFileTable } from "./file-table.js";
import { MockMappedFile } from "./mapped-file.js";
import type { MockModule } from "./modules.js";
import {
  type MockBackendOptions,
  type MockMappingFailure,
  mockSettings,
  readMockOptions,
} from "./options.js";
import { MockResidencySet } from "./residency-set.js";
import { MockSpaceTable } from "./space-table.js";
import { StreamHub } from "./stream-queue.js";
import { type MockStream, MockStreamCalls } from "./streams.js";

let hasBackendBrand: (value: object) => boolean;

/** The `this` of a mock backend's method or getter: a real one, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasBackendBrand(value)) {
    throw lookAlike(operation, "this", "a mock backend");
  }
}

/**
 * A pretend device implementing {@link NativeBackend} in TypeScript, for tests of everything above the
 * native addon: every device fact is settable, large buffers need no real memory, every call is counted and
 * logged, and faults can be injected (the n-th buffer fails, residency sets cannot be made, wiring fails,
 * a mapping fails). Its handles behave as the real ones must: views are detached on release, misuse throws
 * the same typed errors, residency sets follow Metal's semantics.
 */
export class MockBackend extends BackendFacts implements NativeBackend {
  /** Buffers and mappings of up to this many bytes get real memory from `contents()`. */
  readonly realMemoryUpTo: number;
  /** Whether `mapFile` falls back to real files. */
  readonly realFiles: boolean;

  /** The allocation fault in force (see {@link MockBackendOptions.failAllocation}); settable. */
  failAllocation: ((bytes: number, attempt: number) => boolean) | undefined;
  /** The mapping fault in force (see {@link MockBackendOptions.failMapping}); settable. */
  failMapping: ((path: string, attempt: number) => boolean | MockMappingFailure | undefined) | undefined;
  /** The number of residency sets that can be made, `undefined` for no limit; settable. */
  residencySetLimit: number | undefined;

  /** The granularity of address spaces, or `undefined` when the mock has none (the default). */
  readonly mapGranularity?: number;

  readonly #core: MockCore;
  readonly #streams: MockStreamCalls;

  static {
    hasBackendBrand = (value) => #core in value;
  }
  readonly #spaces: MockSpaceTable;
  readonly #files: MockFileTable;
  readonly #madeSets = new WeakSet<MockResidencySet>();
  #bufferAttempts = 0;
  #nextBufferId = 1;
  #nextSetId = 1;

  /** A pretend device; every option is checked and a bad one throws a `ArgumentError`. */
  constructor(given: MockBackendOptions = {}) {
    // Read once: an unknown key refused, each option's getter run once; the checks below see a plain object.
    const options = readMockOptions(given);
    const { facts, realMemoryUpTo, callLogLimit, mapGranularity, completion } = mockSettings(options);
    super(facts);
    this.realMemoryUpTo = realMemoryUpTo;
    this.realFiles = options.realFiles ?? true;
    this.failAllocation = options.failAllocation;
    this.failMapping = options.failMapping;
    this.residencySetLimit = options.residencySetLimit;
    this.#core = new MockCore(new MockCallLog(callLogLimit), realMemoryUpTo);
    this.#files = new MockFileTable(this.#core);
    this.#spaces = new MockSpaceTable(this.#core);
    this.#core.failWiring = options.failWiring ?? false;
    this.#streams = new MockStreamCalls(this.#core, new StreamHub(completion));
    if (mapGranularity !== undefined) {
      this.mapGranularity = mapGranularity;
    } else {
      // No address spaces: a policy sees none of the calls.
      for (const name of ["reserveAddressSpace", "mapMemory", "unmapMemory"]) {
        Object.defineProperty(this, name, { value: undefined, enumerable: false });
      }
    }
  }

  // ---------------------------------------------------------------- address spaces

  /**
   * `capacity` bytes of address space (whole granules, at most `maxBufferLength`) with no memory
   * (`allocatedSize` 0): ranges of it can be made only where {@link mapMemory} backed it.
   */
  reserveAddressSpace(capacity: number): MockBuffer {
    checkThis(this, "reserveAddressSpace()");
    return this.#spaces.reserve(
      capacity,
      this.mapGranularity as number,
      this.maxBufferLength,
      () => this.#nextBufferId++,
    );
  }

  /**
   * Backs `[offset, offset + length)` of a space with memory (whole granules, no overlap). `failAllocation`
   * applies: a map is an allocation attempt, refused with an `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`).
   */
  mapMemory(space: NativeBuffer, offset: number, length: number): void {
    checkThis(this, "mapMemory()");
    const mappings = this.#spaces.of(space, "mapMemory");
    mappings.checkGranules(offset, length, "mapMemory");
    this.#attemptAllocation("mapMemory", length);
    mappings.map(offset, length);
  }

  /** Unmaps exactly one earlier {@link mapMemory} range. */
  unmapMemory(space: NativeBuffer, offset: number, length: number): void {
    checkThis(this, "unmapMemory()");
    this.#spaces.of(space, "unmapMemory").unmap(offset, length);
  }

  /** Bytes mapped into `space` now (for tests: what a GPU's driver would hold). */
  mappedBytes(space: NativeBuffer): number {
    checkThis(this, "mappedBytes()");
    return this.#spaces.of(space, "mappedBytes").mappedBytes;
  }

  /** Counts an allocation attempt of `bytes` by `call`, and fails it when `failAllocation` says so. */
  #attemptAllocation(call: string, bytes: number): void {
    this.#bufferAttempts += 1;
    const attempt = this.#bufferAttempts;
    if (this.failAllocation?.(bytes, attempt) === true) {
      throw allocationFailed(
        bytes,
        `${call}(${bytes}) failed: the mock was told to fail allocation attempt ${attempt}`,
      );
    }
  }

  // ---------------------------------------------------------------- buffers

  /**
   * A pretend buffer of `bytes` bytes, `0 < bytes ≤ maxBufferLength` (else a `ArgumentError`,
   * with nothing changed). Its `allocatedSize` is `bytes` rounded up to whole pages from one page on, `bytes`
   * below a page. An injected fault throws a `OutOfMemoryError` (`ERR_NUVEC_ALLOCATION_FAILED`).
   */
  newBuffer(bytes: number): MockBuffer {
    checkThis(this, "newBuffer()");
    return this.#core.run("newBuffer", undefined, typeof bytes === "number" ? bytes : undefined, () => {
      this.#core.assertOpen("newBuffer()");
      checkBufferLength(bytes, this.maxBufferLength);
      this.#attemptAllocation("newBuffer", bytes);
      const allocatedSize = bytes >= this.pageSize ? (mappingSize(bytes, this.pageSize) as number) : bytes;
      const buffer = new MockBuffer(this.#core, this.#nextBufferId++, bytes, allocatedSize);
      this.#core.adopt(buffer);
      this.#core.counters.buffersMade += 1;
      this.#core.counters.bufferBytes += allocatedSize;
      return buffer;
    });
  }

  /**
   * A range of `length` bytes of `segment` from `offset` (see `NativeBackend.newBufferRange`): a
   * {@link ArgumentError} for a segment of another backend or a range outside it, a
   * `StateError` (`ERR_NUVEC_RELEASED`) for a released segment.
   */
  newBufferRange(segment: NativeBuffer, offset: number, length: number): MockBufferRange {
    checkThis(this, "newBufferRange()");
    return this.#core.run(
      "newBufferRange",
      undefined,
      typeof length === "number" ? length : undefined,
      () => {
        this.#core.assertOpen("newBufferRange()");
        const notOurs = () =>
          new ArgumentError("segment", "newBufferRange(): the segment must be a buffer of this backend");
        // The brand first: a Proxy of a real buffer passes `instanceof`.
        if (!isMockMemory(segment) || !(segment instanceof MockBuffer)) throw notOurs();
        if (segment.released) {
          throw releasedError("newBufferRange(): the segment was already released");
        }
        if (!this.#core.isLive(segment)) throw notOurs();
        checkRange(offset, length, segment.length);
        this.#spaces.get(segment)?.assertBacked(offset, length);
        return new MockBufferRange(this.#core, segment, offset, length);
      },
    );
  }

  /**
   * Valid `newBuffer` calls so far (failed ones included): `failAllocation = (_, attempt) => attempt ===
   * bufferAttempts + 1` fails the next.
   */
  get bufferAttempts(): number {
    checkThis(this, "bufferAttempts");
    return this.#bufferAttempts;
  }

  // ---------------------------------------------------------------- mapped files

  /**
   * Adds (or replaces) a virtual file: `mapFile(path)` then maps it instead of the file system. `content` is
   * the bytes (copied) or a length (zeros, no memory until `contents()`).
   */
  addFile(path: string, content: Uint8Array | number): void {
    checkThis(this, "addFile()");
    this.#files.add(path, content);
  }

  /** Removes a virtual file; returns whether there was one. Mappings already made keep their bytes. */
  removeFile(path: string): boolean {
    checkThis(this, "removeFile()");
    return this.#files.remove(path);
  }

  /** The paths of the virtual files. */
  get files(): string[] {
    checkThis(this, "files");
    return this.#files.paths();
  }

  /**
   * Maps a virtual file (see {@link addFile}) or, failing that, the real file at `path` (read through
   * `node:fs`, loaded on first use). Fails like the host layer: a missing file `open`/`ENOENT`, a directory
   * `open`/`EISDIR`, an unreadable file `open`/`EACCES`, an empty file `mmap`/`EINVAL`, a FIFO, a device or a
   * file of sysfs (`/sys`) `mmap`/`ENODEV`, each a `SystemCallError` with the path. `mappedLength` is the
   * length rounded up to pages.
   */
  mapFile(path: string): MockMappedFile {
    checkThis(this, "mapFile()");
    return this.#core.run("mapFile", undefined, typeof path === "string" ? path : undefined, () =>
      this.#files.map(path, this),
    );
  }

  // ---------------------------------------------------------------- residency sets

  /**
   * A new residency set, or `undefined` when `supportsResidencySets` is false or `residencySetLimit` sets
   * were made already (an injected creation failure).
   */
  newResidencySet(): MockResidencySet | undefined {
    checkThis(this, "newResidencySet()");
    let set: MockResidencySet | undefined;
    try {
      this.#core.assertOpen("newResidencySet()");
      const made = this.#core.counters.residencySetsMade;
      if (
        this.supportsResidencySets &&
        (this.residencySetLimit === undefined || made < this.residencySetLimit)
      ) {
        set = new MockResidencySet(this.#core, this.#nextSetId++);
        this.#core.residencySets.add(set);
        this.#madeSets.add(set);
        this.#core.counters.residencySetsMade += 1;
      }
    } catch (error) {
      this.#core.log.record("newResidencySet", undefined, undefined, "rejected", "ERR_NUVEC_RELEASED");
      throw error;
    }
    this.#core.log.record("newResidencySet", set?.label, undefined, set === undefined ? "failed" : "ok");
    return set;
  }

  /**
   * Records that `set` (a live set of this backend) is attached to the pretend command queue. A
   * `commandQueue` is refused with a `ArgumentError`: the mock has no Metal queues.
   */
  attachResidencySet(set: NativeResidencySet, commandQueue?: bigint): void {
    checkThis(this, "attachResidencySet()");
    const label = set instanceof MockResidencySet ? set.label : undefined;
    this.#core.run("attachResidencySet", label, undefined, () => {
      this.#core.assertOpen("attachResidencySet()");
      if (commandQueue !== undefined) {
        throw new ArgumentError(
          "commandQueue",
          "attachResidencySet(): the mock backend has no Metal command queues to attach a set to",
        );
      }
      if (!(set instanceof MockResidencySet) || !this.#madeSets.has(set)) {
        throw new ArgumentError("set", "attachResidencySet(): the set was not made by this mock backend");
      }
      if (set.released) {
        throw releasedError(`attachResidencySet(): ${set.label} was already released`);
      }
      this.#core.attachments.set(set, set.attachments + 1);
    });
  }

  /** The wiring fault in force: `true` fails all wiring, a predicate some; failures are counted, never thrown. */
  get failWiring(): MockWiringFault {
    checkThis(this, "failWiring");
    return this.#core.failWiring;
  }

  set failWiring(fault: MockWiringFault) {
    this.#core.failWiring = fault;
  }

  /** Lifts every injected fault. */
  clearFaults(): void {
    checkThis(this, "clearFaults()");
    this.failAllocation = undefined;
    this.failMapping = undefined;
    this.residencySetLimit = undefined;
    this.#core.failWiring = false;
  }

  // ---------------------------------------------------------------- streams (streams.ts, modules.ts)

  /** A new stream; its work runs as the `streams.completion` option says (see `MockStream`). */
  newStream(): MockStream {
    checkThis(this, "newStream()");
    return this.#streams.newStream();
  }

  /** A module of the TypeScript kernels of `source.mock`; a `FormatError` (`ERR_NUVEC_MODULE`) without one. */
  loadModule(source: NativeModuleSource): MockModule {
    checkThis(this, "loadModule()");
    return this.#streams.loadModule(source);
  }

  /**
   * Runs up to `count` operations of `stream` now (all it can by default; a wait for another stream's event
   * that has not completed stops it) and returns how many ran: how a test completes streams out of order
   * under `streams: { completion: "manual" }`.
   */
  runStream(stream: MockStream, count?: number): number {
    checkThis(this, "runStream()");
    return this.#streams.runStream(stream, count);
  }

  // ---------------------------------------------------------------- inspection

  /** A copy of the counters. */
  counters(): NativeCounters {
    checkThis(this, "counters()");
    return { ...this.#core.counters };
  }

  /** What the last wiring refused by the `failWiring` fault was, or `undefined` when none was. */
  get lastWiringError(): string | undefined {
    checkThis(this, "lastWiringError");
    return this.#core.lastWiringError;
  }

  /** The live buffers, oldest first. */
  get liveBuffers(): MockBuffer[] {
    checkThis(this, "liveBuffers");
    return this.#core.liveAllocations().filter((allocation) => allocation instanceof MockBuffer);
  }

  /** The live mappings, oldest first. */
  get liveMappings(): MockMappedFile[] {
    checkThis(this, "liveMappings");
    return this.#core.liveAllocations().filter((allocation) => allocation instanceof MockMappedFile);
  }

  /** The live residency sets, oldest first. */
  get liveResidencySets(): MockResidencySet[] {
    checkThis(this, "liveResidencySets");
    return [...this.#core.residencySets] as MockResidencySet[];
  }

  /** The live residency sets attached at least once. */
  get attachedResidencySets(): MockResidencySet[] {
    checkThis(this, "attachedResidencySets");
    return this.liveResidencySets.filter((set) => set.attachments > 0);
  }

  /** The recorded calls, oldest first (the last `callLogLimit` of them). */
  get calls(): MockCall[] {
    checkThis(this, "calls");
    return this.#core.log.calls();
  }

  /** Lifetime totals of every call by name, rejected and failed calls included. */
  callCounts(): MockCallCounts {
    checkThis(this, "callCounts()");
    return this.#core.log.counts();
  }

  /** Forgets the recorded calls (totals and counters stay). */
  clearCalls(): void {
    checkThis(this, "clearCalls()");
    this.#core.log.clear();
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    checkThis(this, "closed");
    return this.#core.closed;
  }

  /**
   * Drops the work pending on every stream (its promises reject with a `StateError`, `ERR_NUVEC_RELEASED`),
   * releases every live residency set, mapping and buffer (detaching their views) and closes the backend:
   * later calls on it throw `StateError` (`ERR_NUVEC_RELEASED`). Closing twice does nothing.
   */
  close(): void {
    checkThis(this, "close()");
    if (this.#core.closed) return;
    // Every handle is released even if one release throws; the backend is closed either way and the first
    // error is rethrown at the end.
    const teardown = new Teardown();
    // Pending work first: dropped, its promises rejected, what it held let go (so released buffers go).
    teardown.run(() => this.#streams.dropAll());
    for (const set of this.liveResidencySets) teardown.run(() => set.release());
    for (const allocation of this.#core.liveAllocations())
      teardown.run(() => (allocation as MockBuffer | MockMappedFile).release());
    this.#core.closed = true;
    this.#core.log.record("close", undefined, undefined, "ok");
    teardown.finish();
  }

  /** `close()`, for `using backend = new MockBackend()` (defined where the engine has `Symbol.dispose`). */
  declare [Symbol.dispose]: () => void;
}

if (typeof Symbol.dispose === "symbol") {
  Object.defineProperty(MockBackend.prototype, Symbol.dispose, {
    value: function dispose(this: MockBackend): void {
      this.close();
    },
    writable: true,
    configurable: true,
  });
}
