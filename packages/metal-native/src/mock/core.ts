import type { NativeAllocation, NativeCounters } from "@nuvec/native-core";
import { releasedError } from "@nuvec/native-core";
import { ArgumentError, NuvecError } from "@nuvec/stats";
import type { MockCallLog, MockCallName } from "./calls.js";

/** Decides whether wiring an allocation fails: `true` for all, a predicate for some. */
export type MockWiringFault = boolean | ((allocation: NativeAllocation) => boolean);

/** What every mock allocation (buffer or mapping) shows the backend. */
export interface MockAllocationLike {
  /** e.g. `"buffer#3"`. */
  readonly label: string;
  readonly allocatedSize: number;
  readonly released: boolean;
}

/**
 * The state one {@link MockBackend} shares with its handles: counters, the call log, the live handles and the
 * wiring fault. Internal: not exported from `@nuvec/metal-native/mock`.
 */
export class MockCore {
  readonly counters: NativeCounters = {
    buffersMade: 0,
    buffersReleased: 0,
    bufferBytes: 0,
    mappingsMade: 0,
    mappingsReleased: 0,
    mappedBytes: 0,
    residencySetsMade: 0,
    commits: 0,
    residencyRequests: 0,
    wiredBytes: 0,
    wiringFailures: 0,
  };
  // Live buffers, mappings and address spaces in creation order: a list linked through each one's stamp
  // (see Made), where a Set's entry costs a hash-table insert and delete per buffer.
  /** @internal The oldest live allocation (the list's head). */
  oldestLive: MockAllocationLike | undefined = undefined;
  /** @internal The newest live allocation (the list's tail). */
  newestLive: MockAllocationLike | undefined = undefined;
  /** Live residency sets, in creation order. */
  readonly residencySets = new Set<object>();
  /** How often each residency set was attached (kept after its release). */
  readonly attachments = new WeakMap<object, number>();
  /** The wiring fault in force. */
  failWiring: MockWiringFault = false;
  /** What the last refused wiring was, as the host's `mlock` advice reads (the backend's `lastWiringError`). */
  lastWiringError: string | undefined = undefined;
  /** True once the backend is closed. */
  closed = false;
  readonly log: MockCallLog;
  /** Buffers and mappings up to this many bytes get real memory from `contents()`. */
  readonly realMemoryUpTo: number;

  constructor(log: MockCallLog, realMemoryUpTo: number) {
    this.log = log;
    this.realMemoryUpTo = realMemoryUpTo;
  }

  /**
   * Runs `body` as the call `call` and records it: `"ok"` when it returns, `"rejected"` for an argument or
   * released-handle error, `"failed"` for any other error (which is rethrown).
   */
  run<T>(
    call: MockCallName,
    target: string | undefined,
    argument: number | string | undefined,
    body: () => T,
  ): T {
    let result: T;
    try {
      result = body();
    } catch (error) {
      const code = error instanceof NuvecError ? error.code : undefined;
      const rejected = code === "ERR_NUVEC_INVALID_ARGUMENT" || code === "ERR_NUVEC_RELEASED";
      this.log.record(call, target, argument, rejected ? "rejected" : "failed", code);
      throw error;
    }
    this.log.record(call, target, argument, "ok");
    return result;
  }

  /** Throws a `StateError` (`ERR_NUVEC_RELEASED`) once the backend is closed. */
  assertOpen(what: string): void {
    if (this.closed) throw releasedError(`${what}: the mock backend is closed`);
  }

  /**
   * Checks that `allocation` is a live-or-released buffer or mapping of this backend; throws a
   * `ArgumentError` for anything else.
   */
  assertOwnAllocation(allocation: unknown, what: string): asserts allocation is MockAllocationLike {
    if (!this.isOwnAllocation(allocation)) {
      throw new ArgumentError(
        "allocation",
        `${what}: the allocation is not a buffer or mapped file of this mock backend`,
      );
    }
  }

  /** Registers a new buffer or mapping: marked as this backend's, and live (the newest). */
  adopt(allocation: MockAllocationLike): void {
    Made.mark(allocation, this);
  }

  /** A buffer or mapping gave its memory back: no longer live (nothing when it was not). */
  leave(allocation: MockAllocationLike): void {
    Made.unlink(allocation, this);
  }

  /** Whether `allocation` is a live buffer or mapping of this backend. */
  isLive(allocation: unknown): boolean {
    return typeof allocation === "object" && allocation !== null && Made.isLive(allocation, this);
  }

  /** The live buffers and mappings, oldest first. */
  liveAllocations(): MockAllocationLike[] {
    const live: MockAllocationLike[] = [];
    for (let allocation = this.oldestLive; allocation !== undefined; allocation = Made.next(allocation))
      live.push(allocation);
    return live;
  }

  /** Whether `allocation` was made by this backend (live or released). */
  isOwnAllocation(allocation: unknown): allocation is MockAllocationLike {
    return typeof allocation === "object" && allocation !== null && Made.by(allocation) === this;
  }

  /**
   * Wires `allocation` unless the wiring fault says it fails, in which case the failure is counted (never
   * thrown). Returns whether it is wired.
   */
  wire(allocation: NativeAllocation): boolean {
    const fault = this.failWiring;
    const fails = typeof fault === "function" ? fault(allocation) : fault;
    if (fails) {
      this.counters.wiringFailures += 1;
      this.lastWiringError = `mock: wiring ${allocation.allocatedSize} bytes failed (the failWiring fault)`;
      return false;
    }
    this.counters.wiredBytes += allocation.allocatedSize;
    return true;
  }

  /** Unwires a wired allocation. */
  unwire(allocation: NativeAllocation): void {
    this.counters.wiredBytes -= allocation.allocatedSize;
  }
}

/** The base constructor returns the object given, so a subclass's private field is installed on it. */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the return override installs the subclass's private field on target
    return target as Stamp;
  }
}

/**
 * Which backend made an allocation, and its place in that backend's list of live ones: private fields
 * installed on the allocation itself. A brand check on them (`#core in value`) costs a property lookup where
 * a WeakSet costs a hash-table entry per allocation (and the collector's work on it); a Proxy or a copy of an
 * allocation has no such field, as it had no entry.
 */
class Made extends Stamp {
  readonly #core: MockCore;
  #live = true;
  #previous: MockAllocationLike | undefined;
  #next: MockAllocationLike | undefined = undefined;

  private constructor(target: MockAllocationLike, core: MockCore) {
    super(target);
    this.#core = core;
    this.#previous = core.newestLive;
    if (core.newestLive === undefined) core.oldestLive = target;
    else (core.newestLive as unknown as Made).#next = target;
    core.newestLive = target;
  }

  /** Marks `allocation` as made by `core`'s backend and links it as the newest live one (once: at its making). */
  static mark(allocation: MockAllocationLike, core: MockCore): void {
    new Made(allocation, core);
  }

  /** The core whose backend made `value`, if any. */
  static by(value: object): MockCore | undefined {
    return #core in value ? (value as unknown as Made).#core : undefined;
  }

  /** Whether `value` is a live allocation of `core`. */
  static isLive(value: object, core: MockCore): boolean {
    return #core in value && (value as unknown as Made).#core === core && (value as unknown as Made).#live;
  }

  /** The next newer live allocation. */
  static next(allocation: MockAllocationLike): MockAllocationLike | undefined {
    return (allocation as unknown as Made).#next;
  }

  /** Takes `allocation` out of `core`'s live list (nothing when it is not in it). */
  static unlink(allocation: MockAllocationLike, core: MockCore): void {
    if (!(#core in allocation)) return;
    const made = allocation as unknown as Made;
    if (made.#core !== core || !made.#live) return;
    made.#live = false;
    const previous = made.#previous;
    const next = made.#next;
    if (previous === undefined) core.oldestLive = next;
    else (previous as unknown as Made).#next = next;
    if (next === undefined) core.newestLive = previous;
    else (next as unknown as Made).#previous = previous;
    made.#previous = undefined;
    made.#next = undefined;
  }
}
