import type { NativeAllocation, NativeResidencySet } from "@nuvec/native-core";
import { lookAlike, releasedError } from "@nuvec/native-core";
import type { MockCore } from "./core.js";

/** How often each method of one {@link MockResidencySet} was called (rejected calls included). */
export interface MockResidencySetCalls {
  adds: number;
  removes: number;
  commits: number;
  residencyRequests: number;
  residencyEnds: number;
}

/**
 * A pretend residency set made by {@link MockBackend.newResidencySet}, with Metal's semantics exactly as the
 * host layer implements them with `mlock`: `add` and `remove` take effect at `commit`; `requestResidency`
 * wires every committed allocation and stands, so that each later `commit` wires what it adds and unwires
 * what it removes; `endResidency` unwires everything. Wiring that fails (the backend's `failWiring`) is
 * counted in `wiringFailures`, never thrown. A set holds its allocations the way Metal's does: releasing a
 * buffer does not take it out of a set (remove it and commit).
 */
let hasSetBrand: (value: object) => boolean;

/** The `this` of a mock residency set's method or getter: a real one, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasSetBrand(value)) {
    throw lookAlike(operation, "this", "a residency set of a mock backend");
  }
}

export class MockResidencySet implements NativeResidencySet {
  /** Its number among the backend's residency sets, from 1. */
  readonly id: number;
  /** `"set#<id>"`: how the call log names it. */
  readonly label: string;
  readonly #core: MockCore;
  /** Membership with the uncommitted adds and removes applied. */
  readonly #staged = new Set<NativeAllocation>();
  /** Membership as of the last commit. */
  #committed = new Set<NativeAllocation>();
  readonly #wired = new Set<NativeAllocation>();
  #allocatedSize = 0;
  #wiredBytes = 0;
  #residencyRequested = false;
  #wiringFailures = 0;
  #released = false;

  static {
    hasSetBrand = (value) => #released in value;
  }
  readonly #calls: MockResidencySetCalls = {
    adds: 0,
    removes: 0,
    commits: 0,
    residencyRequests: 0,
    residencyEnds: 0,
  };

  /** Made by {@link MockBackend.newResidencySet} only. */
  constructor(core: MockCore, id: number) {
    this.#core = core;
    this.id = id;
    this.label = `set#${id}`;
  }

  /** Bytes of the committed allocations, as of the last commit. */
  get allocatedSize(): number {
    checkThis(this, "allocatedSize");
    return this.#allocatedSize;
  }

  /** Number of committed allocations. */
  get allocationCount(): number {
    checkThis(this, "allocationCount");
    return this.#committed.size;
  }

  /** Times wiring one of this set's allocations failed. */
  get wiringFailures(): number {
    checkThis(this, "wiringFailures");
    return this.#wiringFailures;
  }

  /** Bytes of this set's allocations wired right now. */
  get wiredBytes(): number {
    checkThis(this, "wiredBytes");
    return this.#wiredBytes;
  }

  /** Whether a residency request stands (`requestResidency` called, `endResidency` not since). */
  get residencyRequested(): boolean {
    checkThis(this, "residencyRequested");
    return this.#residencyRequested;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkThis(this, "released");
    return this.#released;
  }

  /** Times the set was attached with `attachResidencySet`. */
  get attachments(): number {
    checkThis(this, "attachments");
    return this.#core.attachments.get(this) ?? 0;
  }

  /** How often each method was called (a copy). */
  get calls(): MockResidencySetCalls {
    checkThis(this, "calls");
    return { ...this.#calls };
  }

  /** Whether adds or removes wait for a commit. */
  get hasUncommittedChanges(): boolean {
    checkThis(this, "hasUncommittedChanges");
    if (this.#staged.size !== this.#committed.size) return true;
    for (const allocation of this.#staged) if (!this.#committed.has(allocation)) return true;
    return false;
  }

  /** The committed allocations, in the order they were added. */
  committedAllocations(): NativeAllocation[] {
    checkThis(this, "committedAllocations()");
    return [...this.#committed];
  }

  /** Whether `allocation` is wired through this set right now. */
  isWired(allocation: NativeAllocation): boolean {
    checkThis(this, "isWired()");
    return this.#wired.has(allocation);
  }

  /**
   * Adds an allocation of this backend (effective at the next `commit`; adding twice is adding once).
   * Throws a `ArgumentError` for a foreign allocation and a `StateError` (`ERR_NUVEC_RELEASED`) for a
   * released one or after the set's release.
   */
  add(allocation: NativeAllocation): void {
    checkThis(this, "add()");
    this.#calls.adds += 1;
    this.#core.run("residencySet.add", this.label, this.#describe(allocation), () => {
      this.#assertLive("add");
      this.#core.assertOwnAllocation(allocation, `${this.label}.add()`);
      if (allocation.released) {
        throw releasedError(`${this.label}.add(): ${allocation.label} was already released`);
      }
      this.#staged.add(allocation);
    });
  }

  /**
   * Removes an allocation (effective at the next `commit`; removing one that is not in the set does nothing).
   * A released allocation may be removed.
   */
  remove(allocation: NativeAllocation): void {
    checkThis(this, "remove()");
    this.#calls.removes += 1;
    this.#core.run("residencySet.remove", this.label, this.#describe(allocation), () => {
      this.#assertLive("remove");
      this.#core.assertOwnAllocation(allocation, `${this.label}.remove()`);
      this.#staged.delete(allocation);
    });
  }

  /** Applies the adds and removes since the last commit; with a standing request, wires and unwires them. */
  commit(): void {
    checkThis(this, "commit()");
    this.#calls.commits += 1;
    this.#core.run("residencySet.commit", this.label, undefined, () => {
      this.#assertLive("commit");
      this.#core.counters.commits += 1;
      const previous = this.#committed;
      this.#committed = new Set(this.#staged);
      let allocatedSize = 0;
      for (const allocation of this.#committed) allocatedSize += allocation.allocatedSize;
      this.#allocatedSize = allocatedSize;
      if (!this.#residencyRequested) return;
      for (const allocation of previous) if (!this.#committed.has(allocation)) this.#unwire(allocation);
      for (const allocation of this.#committed) if (!previous.has(allocation)) this.#wire(allocation);
    });
  }

  /** Wires every committed allocation that is not wired yet, and makes the request stand for later commits. */
  requestResidency(): void {
    checkThis(this, "requestResidency()");
    this.#calls.residencyRequests += 1;
    this.#core.run("residencySet.requestResidency", this.label, undefined, () => {
      this.#assertLive("requestResidency");
      this.#core.counters.residencyRequests += 1;
      this.#residencyRequested = true;
      for (const allocation of this.#committed) if (!this.#wired.has(allocation)) this.#wire(allocation);
    });
  }

  /** Unwires everything and ends the standing request. */
  endResidency(): void {
    checkThis(this, "endResidency()");
    this.#calls.residencyEnds += 1;
    this.#core.run("residencySet.endResidency", this.label, undefined, () => {
      this.#assertLive("endResidency");
      this.#endResidency();
    });
  }

  /** Ends residency and frees the set; further calls throw `StateError` (`ERR_NUVEC_RELEASED`). */
  release(): void {
    checkThis(this, "release()");
    this.#core.run("residencySet.release", this.label, undefined, () => {
      this.#assertLive("release");
      this.#endResidency();
      this.#released = true;
      this.#staged.clear();
      this.#committed = new Set();
      this.#allocatedSize = 0;
      this.#core.residencySets.delete(this);
    });
  }

  #endResidency(): void {
    this.#residencyRequested = false;
    for (const allocation of [...this.#wired]) this.#unwire(allocation);
  }

  #wire(allocation: NativeAllocation): void {
    if (this.#core.wire(allocation)) {
      this.#wired.add(allocation);
      this.#wiredBytes += allocation.allocatedSize;
    } else {
      this.#wiringFailures += 1;
    }
  }

  #unwire(allocation: NativeAllocation): void {
    if (!this.#wired.delete(allocation)) return;
    this.#wiredBytes -= allocation.allocatedSize;
    this.#core.unwire(allocation);
  }

  #assertLive(method: string): void {
    if (this.#released) {
      throw releasedError(`${this.label}.${method}(): the residency set was already released`);
    }
  }

  #describe(allocation: unknown): string | undefined {
    return this.#core.isOwnAllocation(allocation) ? allocation.label : undefined;
  }
}
