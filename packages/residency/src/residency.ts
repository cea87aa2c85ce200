import { StateError, Teardown } from "@nuvec/stats";
import { assertBytes } from "./errors.js";
import { RESIDENCY_OPTIONS } from "./option-schema.js";
import { MAX_RESIDENCY_SETS, maxPercentPerSetFromEnvironment, residencySetCap } from "./set-cap.js";
import type { ResidencyBackend, ResidencyOptions, ResidencySetHandle } from "./types.js";

/** A tracked allocation: the size it was inserted with, and its set (`undefined` while it waits). */
interface Placement {
  readonly size: number;
  readonly mapped: boolean;
  set: number | undefined;
}

/** A residency set and the bytes wired in it. */
interface SetEntry<S> {
  readonly handle: S;
  bytes: number;
}

/**
 * The residency-set manager of MLX's Metal backend (`resident.cpp`, by way of nuvec-gpu's `Residency`):
 * keeps allocations wired (resident) while the wired total stays within the wired limit, spread over at
 * most {@link MAX_RESIDENCY_SETS} sets of a capped size.
 *
 * Allocations are keyed by identity (the same object to `insert` and `erase`). An allocation that does not
 * fit under the wired limit waits, tracked but outside every set, and joins when the limit grows. Every
 * operation commits each set it changed exactly once, so Metal applies a batch of changes in one go.
 *
 * On a backend without residency sets, or when the first set cannot be made, the manager is unsupported:
 * every call is a no-op (the wired limit is still stored and reported).
 */
export class Residency<A, S extends ResidencySetHandle<A> = ResidencySetHandle<A>> {
  readonly #backend: ResidencyBackend<A, S>;
  readonly #sets: SetEntry<S>[] = [];
  // A Map walks in insertion order, which makes resize deterministic (the seed's HashMap does not).
  readonly #placements = new Map<A, Placement>();
  #supported: boolean;
  #cap: number;
  #wiredLimit = 0;
  #wired = 0;
  #wiredMapped = 0;
  #closed = false;

  /**
   * A manager over `backend` for a GPU of `options.workingSet` bytes. Makes the first set right away (as
   * the seed does); if that fails, the manager is unsupported.
   *
   * @throws ArgumentError when `options.workingSet` is not a non-negative safe integer.
   */
  constructor(backend: ResidencyBackend<A, S>, given: ResidencyOptions) {
    // Every option checked by its declaration (each read once); residency uses what the check returned.
    const options: ResidencyOptions = RESIDENCY_OPTIONS.parse(given);
    const percentText =
      options.maxPercentPerSet === undefined ? maxPercentPerSetFromEnvironment() : options.maxPercentPerSet;
    this.#backend = backend;
    this.#cap = residencySetCap(options.workingSet, percentText);
    this.#supported = backend.supportsResidencySets === true;
    if (this.#supported && !this.#addSet()) this.#supported = false;
  }

  /** Whether allocations can be wired: the backend has residency sets and the first one was made. */
  get supported(): boolean {
    return this.#supported;
  }

  /** Bytes wired now (the sizes read at insert of every wired allocation); never more than {@link wiredLimit}. */
  get wired(): number {
    return this.#wired;
  }

  /** The part of {@link wired} that belongs to allocations inserted as mapped files. */
  get wiredMapped(): number {
    return this.#wiredMapped;
  }

  /** The wired limit in bytes (0 until {@link resize}; MLX's default wires nothing). */
  get wiredLimit(): number {
    return this.#wiredLimit;
  }

  /** Residency sets made so far (they are kept until {@link close}, even when emptied). */
  get setCount(): number {
    return this.#sets.length;
  }

  /** The per-set cap in bytes that placements use now (0: everything goes to one set). */
  get maxBytesPerSet(): number {
    return this.#cap;
  }

  /** Allocations tracked now, wired or waiting. */
  get tracked(): number {
    return this.#placements.size;
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Tracks a new allocation (`mapped`: it is a mapped file's, counted in {@link wiredMapped} too). Its size
   * is read from the backend now, once. It is wired, and its set committed, if `wired + size ≤ wiredLimit`;
   * otherwise it waits. A no-op when unsupported.
   *
   * @throws StateError when the allocation is already tracked, or after {@link close}.
   * @throws ArgumentError when the backend reports a size that is not a non-negative safe integer.
   */
  insert(allocation: A, mapped: boolean): void {
    this.#assertOpen();
    if (!this.#supported) return;
    if (this.#placements.has(allocation)) {
      throw new StateError(
        "ERR_NUVEC_RESIDENCY_ALREADY_TRACKED",
        "this allocation is already tracked by the residency manager (inserted twice)",
      );
    }
    const size = this.#backend.allocatedSize(allocation);
    assertBytes(size, "allocatedSize");
    const placement: Placement = { size: size === 0 ? 0 : size, mapped: mapped === true, set: undefined };
    // Wire before tracking: should the backend throw in `add`, the allocation is not left half-recorded.
    const index = this.#wired + size <= this.#wiredLimit ? this.#wire(allocation, placement) : undefined;
    this.#placements.set(allocation, placement);
    if (index !== undefined) this.#sets[index]!.handle.commit();
  }

  /**
   * Stops tracking an allocation, before it is released: if it was wired, it leaves its set and that set is
   * committed. A no-op when unsupported.
   *
   * @throws StateError when the allocation is not tracked, or after {@link close}.
   */
  erase(allocation: A): void {
    this.#assertOpen();
    if (!this.#supported) return;
    const placement = this.#placements.get(allocation);
    if (placement === undefined) {
      throw new StateError(
        "ERR_NUVEC_RESIDENCY_NOT_TRACKED",
        "this allocation is not tracked by the residency manager (never inserted, or erased already)",
      );
    }
    const index = this.#unwire(allocation, placement);
    if (index !== undefined) this.#sets[index]!.handle.commit();
    this.#placements.delete(allocation);
  }

  /**
   * Sets the wired limit. When it grows, waiting allocations join, in insertion order, each one that still
   * fits; when it shrinks below {@link wired}, wired allocations leave, in insertion order, until the total
   * is within the limit. Each set that changed is committed once. When unsupported, only stores the limit.
   *
   * @throws ArgumentError when `bytes` is not a non-negative safe integer.
   * @throws StateError after {@link close}.
   */
  setWiredLimit(bytes: number): void {
    this.#assertOpen();
    assertBytes(bytes, "bytes");
    this.#wiredLimit = bytes === 0 ? 0 : bytes;
    if (!this.#supported) return;
    const changed = new Set<number>();
    if (this.#wired < bytes) {
      let room = bytes - this.#wired;
      for (const [allocation, placement] of this.#placements) {
        if (placement.set === undefined && placement.size <= room) {
          room -= placement.size;
          changed.add(this.#wire(allocation, placement));
        }
      }
    } else if (this.#wired > bytes) {
      for (const [allocation, placement] of this.#placements) {
        if (this.#wired <= bytes) break;
        const index = this.#unwire(allocation, placement);
        if (index !== undefined) changed.add(index);
      }
    }
    // Commit once per changed set, after all the adds and removes: a commit is where Metal does the work
    // (and the host backend its mlock/munlock calls), so a change of the limit over thousands of allocations costs as
    // many commits as sets it touched, not one per allocation.
    this.#sets.forEach((set, index) => {
      if (changed.has(index)) set.handle.commit();
    });
  }

  /**
   * Renews the residency request of every set that holds something: macOS may let a set's allocations go
   * after the GPU idles, despite the standing request. A no-op when unsupported.
   *
   * @throws StateError after {@link close}.
   */
  refresh(): void {
    this.#assertOpen();
    for (const set of this.#sets) {
      if (set.bytes !== 0) set.handle.requestResidency();
    }
  }

  /**
   * Sets the per-set cap for later placements, in bytes, without the 64 MiB floor (0: one set). A test
   * hook, as MLX's `set_max_bytes_per_set`: allocations already placed stay where they are.
   *
   * @throws ArgumentError when `bytes` is not a non-negative safe integer.
   * @throws StateError after {@link close}.
   */
  setCap(bytes: number): void {
    this.#assertOpen();
    assertBytes(bytes, "bytes");
    this.#cap = bytes === 0 ? 0 : bytes;
  }

  /** The wired bytes of each set, in the order the sets were made (empty when unsupported). */
  setBytes(): number[] {
    this.#assertOpen();
    return this.#sets.map((set) => set.bytes);
  }

  /**
   * The index of the set an allocation is wired in (in {@link setBytes} order), or `undefined` when it is
   * waiting or not tracked.
   */
  setIndexOf(allocation: A): number | undefined {
    this.#assertOpen();
    return this.#placements.get(allocation)?.set;
  }

  /** Whether an allocation is tracked and wired. */
  isWired(allocation: A): boolean {
    return this.setIndexOf(allocation) !== undefined;
  }

  /** Whether an allocation is tracked (wired or waiting). */
  has(allocation: A): boolean {
    this.#assertOpen();
    return this.#placements.has(allocation);
  }

  /**
   * Unwires and forgets every allocation, then ends the residency of every set and releases it (each when
   * the handle has `endResidency` / `release`). Calling it again does nothing; any other call afterwards
   * throws a {@link StateError} with code `ERR_NUVEC_RESIDENCY_CLOSED`. The counters read 0. Exception-safe:
   * a handle that throws does not stop the others; the first failure is rethrown at the end.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    // Every allocation is unwired and every set released even when a handle throws; the first failure is
    // rethrown once all ran (later ones attached as its `suppressed`).
    const teardown = new Teardown();
    const changed = new Set<number>();
    for (const [allocation, placement] of this.#placements) {
      if (placement.set !== undefined) changed.add(placement.set);
      teardown.run(() => this.#unwire(allocation, placement));
    }
    this.#placements.clear();
    // What a throwing handle left counted is unwired all the same: the sets are released below.
    this.#wired = 0;
    this.#wiredMapped = 0;
    // Commit the removals first, so a handle without endResidency/release is left holding nothing.
    this.#sets.forEach((set, index) => {
      if (changed.has(index)) teardown.run(() => set.handle.commit());
    });
    for (const set of this.#sets) {
      teardown.run(() => set.handle.endResidency?.());
      teardown.run(() => set.handle.release?.());
    }
    this.#sets.length = 0;
    this.#supported = false;
    teardown.finish();
  }

  /** Makes a set, commits it, requests its residency and attaches it to the queue; false when it cannot. */
  #addSet(): boolean {
    const handle = this.#backend.newResidencySet();
    if (handle === undefined || handle === null) return false;
    handle.commit();
    handle.requestResidency();
    this.#backend.attachResidencySet(handle);
    this.#sets.push({ handle, bytes: 0 });
    return true;
  }

  /**
   * MLX's choice of set for `bytes` more: the first with room; else the first emptied set after set 0 (set
   * 0 is the one every placement falls back to, so it is never counted as "emptied"); else a new set while
   * fewer than {@link MAX_RESIDENCY_SETS} exist and one can be made; else the emptiest.
   */
  #choose(bytes: number): number {
    if (this.#cap === 0) return 0;
    let empty: number | undefined;
    let emptiest = 0;
    for (let index = 0; index < this.#sets.length; index++) {
      const size = this.#sets[index]!.bytes;
      if (size + bytes <= this.#cap) return index;
      if (empty === undefined && index !== 0 && size === 0) empty = index;
      if (size < this.#sets[emptiest]!.bytes) emptiest = index;
    }
    if (empty !== undefined) return empty;
    if (this.#sets.length < MAX_RESIDENCY_SETS && this.#addSet()) return this.#sets.length - 1;
    return emptiest;
  }

  /** Wires a tracked allocation into a chosen set, without committing; returns the set. */
  #wire(allocation: A, placement: Placement): number {
    const index = this.#choose(placement.size);
    const set = this.#sets[index]!;
    set.handle.add(allocation);
    set.bytes += placement.size;
    placement.set = index;
    this.#wired += placement.size;
    if (placement.mapped) this.#wiredMapped += placement.size;
    return index;
  }

  /** Unwires a tracked allocation, without committing; returns the set it left (undefined: it was waiting). */
  #unwire(allocation: A, placement: Placement): number | undefined {
    const index = placement.set;
    if (index === undefined) return undefined;
    const set = this.#sets[index]!;
    set.handle.remove(allocation);
    set.bytes -= placement.size;
    placement.set = undefined;
    this.#wired -= placement.size;
    if (placement.mapped) this.#wiredMapped -= placement.size;
    return index;
  }

  #assertOpen(): void {
    if (this.#closed) {
      throw new StateError(
        "ERR_NUVEC_RESIDENCY_CLOSED",
        "the residency manager is closed: make a new one to wire again",
      );
    }
  }
}
