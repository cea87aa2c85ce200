import { ArgumentError } from "@nuvec/stats";
import { lookAlike, releasedError } from "../errors.js";
import type { NativeAllocation, NativeResidencySet } from "../types.js";
import { callNative } from "./call.js";
import type { AddonOwner } from "./owner.js";
import { ownedHandle } from "./ownership.js";
import type { RawResidencySetHandle } from "./raw.js";

let hasSetBrand: (value: object) => boolean;

/** @internal Whether `value` is a residency set an addon backend made (a brand check, as for allocations). */
export function isAddonResidencySet(value: unknown): value is AddonResidencySet {
  return typeof value === "object" && value !== null && hasSetBrand(value);
}

/** The `this` of a residency set's method or getter: a real one, else an ArgumentError naming `this`. */
function checkThis(value: unknown, operation: string): void {
  if (!isAddonResidencySet(value)) throw lookAlike(operation, "this", "a residency set of a backend");
}

/**
 * A residency set of an addon with MLX's semantics: the {@link NativeResidencySet} over a raw set handle.
 * `add`/`remove` take effect at `commit`; a set holds what it was given, so a buffer released while in a set
 * keeps its memory (and its wiring) until it is removed and the set committed, or the set is released.
 */
export abstract class AddonResidencySet implements NativeResidencySet {
  /** @internal */
  readonly raw: RawResidencySetHandle;
  /** @internal */
  readonly owner: AddonOwner;
  #released = false;

  static {
    hasSetBrand = (value) => #released in value;
  }

  /** Wraps a residency-set handle that `owner`'s addon made (a backend's `newResidencySet`). */
  protected constructor(raw: RawResidencySetHandle, owner: AddonOwner) {
    this.raw = raw;
    this.owner = owner;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkThis(this, "released");
    return this.#released;
  }

  /** Bytes of the committed allocations. */
  get allocatedSize(): number {
    checkThis(this, "allocatedSize");
    return this.raw.allocatedSize;
  }

  /** Number of committed allocations. */
  get allocationCount(): number {
    checkThis(this, "allocationCount");
    return this.raw.allocationCount;
  }

  /** Times wiring failed in this set (host: `mlock` refused; CUDA: a registration refused); never thrown. */
  get wiringFailures(): number {
    checkThis(this, "wiringFailures");
    return this.raw.wiringFailures;
  }

  /** What the last wiring failure was and how to lift the limit, or `undefined` when none happened. */
  get lastWiringError(): string | undefined {
    checkThis(this, "lastWiringError");
    return this.raw.lastWiringError;
  }

  /** Adds an allocation of this backend (effective at the next commit). Throws for a released one. */
  add(allocation: NativeAllocation): void {
    checkThis(this, "add()");
    this.#assertLive("add");
    const raw = ownedHandle(this.owner, allocation, "buffer or mapped file", "allocation", "add");
    if (allocation.released) throw releasedError("add(): the allocation was already released");
    callNative(() => this.raw.add(raw));
  }

  /** Removes an allocation (effective at the next commit); a released one may be removed. */
  remove(allocation: NativeAllocation): void {
    checkThis(this, "remove()");
    this.#assertLive("remove");
    const raw = ownedHandle(this.owner, allocation, "buffer or mapped file", "allocation", "remove");
    callNative(() => this.raw.remove(raw));
  }

  /** Applies the adds and removes since the last commit (wiring failures are counted, never thrown). */
  commit(): void {
    checkThis(this, "commit()");
    this.#assertLive("commit");
    callNative(() => this.raw.commit());
  }

  /** Wires every committed allocation, and keeps doing so for later commits. */
  requestResidency(): void {
    checkThis(this, "requestResidency()");
    this.#assertLive("requestResidency");
    callNative(() => this.raw.requestResidency());
  }

  /** Ends the residency request: nothing in the set stays wired. */
  endResidency(): void {
    checkThis(this, "endResidency()");
    this.#assertLive("endResidency");
    callNative(() => this.raw.endResidency());
  }

  /** Ends residency and frees the set (and what only it still held); further calls throw. */
  release(): void {
    checkThis(this, "release()");
    this.#assertLive("release");
    this.#released = true;
    callNative(() => this.raw.release());
  }

  /**
   * @internal This set's handle for `owner`'s `attachResidencySet`: a `ArgumentError` when it is
   * another backend's, a `StateError` (`ERR_NUVEC_RELEASED`) once released.
   */
  handleFor(owner: AddonOwner): RawResidencySetHandle {
    if (!isAddonResidencySet(this) || this.owner !== owner) {
      throw new ArgumentError("set", "attachResidencySet(): the set must be a residency set of this backend");
    }
    if (this.#released) throw releasedError("attachResidencySet(): the residency set was already released");
    return this.raw;
  }

  #assertLive(method: string): void {
    if (this.#released) throw releasedError(`${method}(): the residency set was already released`);
  }
}
