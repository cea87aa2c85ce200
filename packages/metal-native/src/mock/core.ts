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
  /** Live buffers and mappings, in creation order. */
  readonly allocations = new Set<MockAllocationLike>();
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

  /** Registers a new buffer or mapping: marked as this backend's, and live. */
  adopt(allocation: MockAllocationLike): void {
    Made.mark(allocation, this);
    this.allocations.add(allocation);
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
 * Which backend made an allocation: a private field installed on the allocation itself. A brand check on it
 * (`#core in value`) costs a property lookup where a WeakSet costs a hash-table entry per allocation (and
 * the collector's work on it); a Proxy or a copy of an allocation has no such field, as it had no entry.
 */
class Made extends Stamp {
  readonly #core: MockCore;

  private constructor(target: object, core: MockCore) {
    super(target);
    this.#core = core;
  }

  /** Marks `allocation` as made by `core`'s backend (once: an allocation is adopted when it is made). */
  static mark(allocation: object, core: MockCore): void {
    new Made(allocation, core);
  }

  /** The core whose backend made `value`, if any. */
  static by(value: object): MockCore | undefined {
    return #core in value ? (value as unknown as Made).#core : undefined;
  }
}
