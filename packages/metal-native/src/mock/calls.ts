import type { NuvecErrorCode } from "@nuvec/stats";

/** The calls a {@link MockBackend} records, named as `handle.method` for calls on a handle. */
export type MockCallName =
  | "newBuffer"
  | "buffer.contents"
  | "buffer.detachContents"
  | "buffer.read"
  | "buffer.write"
  | "buffer.nativeHandle"
  | "buffer.release"
  | "newBufferRange"
  | "range.contents"
  | "range.detachContents"
  | "range.read"
  | "range.write"
  | "range.nativeHandle"
  | "range.release"
  | "mapFile"
  | "mappedFile.contents"
  | "mappedFile.nativeHandle"
  | "mappedFile.detachContents"
  | "mappedFile.release"
  | "newResidencySet"
  | "attachResidencySet"
  | "residencySet.add"
  | "residencySet.remove"
  | "residencySet.commit"
  | "residencySet.requestResidency"
  | "residencySet.endResidency"
  | "residencySet.release"
  | "newStream"
  | "loadModule"
  | "module.kernel"
  | "module.release"
  | "stream.launch"
  | "stream.write"
  | "stream.read"
  | "stream.copy"
  | "stream.record"
  | "stream.wait"
  | "stream.done"
  | "stream.synchronize"
  | "stream.release"
  | "event.query"
  | "event.done"
  | "event.synchronize"
  | "event.release"
  | "runStream"
  | "close";

/**
 * How a recorded call ended: `"ok"`; `"rejected"` when it threw a `ArgumentError` or a
 * `StateError` (`ERR_NUVEC_RELEASED`) before anything changed; `"failed"` when the pretend system failed (an injected
 * or simulated allocation, mapping or system-call failure, or a residency set that could not be made).
 */
export type MockCallOutcome = "ok" | "rejected" | "failed";

/** One call made on a {@link MockBackend} or on one of its handles. */
export interface MockCall {
  /** The call's number over the backend's lifetime, from 1 (not reset by `clearCalls`). */
  readonly sequence: number;
  /** Which call. */
  readonly call: MockCallName;
  /** The handle the call was made on or made, e.g. `"buffer#3"`, `"mapping#1"`, `"set#2"`. */
  readonly target: string | undefined;
  /**
   * The argument: bytes for `newBuffer`, the path for `mapFile`, the allocation's label for `add`/`remove`,
   * the kernel's name for `module.kernel` and `stream.launch`, the bytes for a stream's `write`, `read` and
   * `copy`, the event's label for `stream.wait`, the count asked for by `runStream`.
   */
  readonly argument: number | string | undefined;
  /** How it ended. */
  readonly outcome: MockCallOutcome;
  /** The thrown error's `code`, when it threw. */
  readonly errorCode: NuvecErrorCode | undefined;
}

/** Lifetime totals of every call, by name (not reset by `clearCalls`). */
export type MockCallCounts = Record<MockCallName, number>;

function zeroCounts(): MockCallCounts {
  return {
    newBuffer: 0,
    "buffer.contents": 0,
    "buffer.detachContents": 0,
    "buffer.read": 0,
    "buffer.write": 0,
    "buffer.nativeHandle": 0,
    "buffer.release": 0,
    newBufferRange: 0,
    "range.contents": 0,
    "range.detachContents": 0,
    "range.read": 0,
    "range.write": 0,
    "range.nativeHandle": 0,
    "range.release": 0,
    mapFile: 0,
    "mappedFile.contents": 0,
    "mappedFile.nativeHandle": 0,
    "mappedFile.detachContents": 0,
    "mappedFile.release": 0,
    newResidencySet: 0,
    attachResidencySet: 0,
    "residencySet.add": 0,
    "residencySet.remove": 0,
    "residencySet.commit": 0,
    "residencySet.requestResidency": 0,
    "residencySet.endResidency": 0,
    "residencySet.release": 0,
    newStream: 0,
    loadModule: 0,
    "module.kernel": 0,
    "module.release": 0,
    "stream.launch": 0,
    "stream.write": 0,
    "stream.read": 0,
    "stream.copy": 0,
    "stream.record": 0,
    "stream.wait": 0,
    "stream.done": 0,
    "stream.synchronize": 0,
    "stream.release": 0,
    "event.query": 0,
    "event.done": 0,
    "event.synchronize": 0,
    "event.release": 0,
    runStream: 0,
    close: 0,
  };
}

/** The call log of one backend: the last `limit` calls, and lifetime totals by name. */
export class MockCallLog {
  readonly #limit: number;
  #calls: MockCall[] = [];
  #sequence = 0;
  // Lifetime totals, one slot per name: a lookup by name and an increment of one monomorphic field, where
  // an increment keyed by the name on one object of every name costs several times that per call.
  readonly #counts = new Map<string, { count: number }>(
    Object.keys(zeroCounts()).map((name) => [name, { count: 0 }]),
  );

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Appends a call; drops the oldest ones beyond the limit. */
  record(
    call: MockCallName,
    target: string | undefined,
    argument: number | string | undefined,
    outcome: MockCallOutcome,
    errorCode?: NuvecErrorCode,
  ): void {
    this.#sequence += 1;
    const slot = this.#counts.get(call);
    if (slot !== undefined) slot.count += 1;
    else this.#counts.set(call, { count: 1 });
    if (this.#limit === 0) return;
    this.#calls.push({ sequence: this.#sequence, call, target, argument, outcome, errorCode });
    // Trim in batches so that recording stays O(1) amortised.
    if (this.#calls.length >= 2 * this.#limit) this.#calls = this.#calls.slice(-this.#limit);
  }

  /** The recorded calls, oldest first (at most `limit` of them). */
  calls(): MockCall[] {
    return this.#calls.length > this.#limit ? this.#calls.slice(-this.#limit) : this.#calls.slice();
  }

  /** Lifetime totals by name. */
  counts(): MockCallCounts {
    const counts = zeroCounts() as Record<string, number>;
    for (const [name, slot] of this.#counts) counts[name] = slot.count;
    return counts as MockCallCounts;
  }

  /** Forgets the recorded calls (the totals and the sequence go on). */
  clear(): void {
    this.#calls = [];
  }
}
