// Buffers freed and files unmapped while a view of theirs was moved out of the backend's reach (transfer(),
// postMessage): the backend holds their memory until the last holder of that view drops it, and the Device
// counts it in `quarantined` (and against the memory limit) until then. The backend learns of it when that
// holder's engine lets the memory go (a collection, perhaps on another thread), so asking more than once per
// job would rarely learn anything new. A view that ends on another thread (a worker) is only queued in the
// backend, which frees the memory at the next call into it from the Device's thread: while anything is held,
// an unref'd timer asks every SWEEP_MILLISECONDS, so the memory goes back without waiting for the Device's
// next call, and the timer never keeps the process alive.
import type { Allocation, CachingAllocator } from "@nuvec/allocator";
import type { NativeBuffer, NativeMappedFile } from "@nuvec/metal-native";
import { queueMicrotaskOnce } from "./environment.js";
import { KeepAliveTimer } from "./keep-alive.js";

/** How often the Device asks the backend what it gave back while anything is quarantined. */
export const SWEEP_MILLISECONDS = 100;

/** What may be held: a released buffer or mapped file, which says how many bytes the backend still holds. */
type Held = Pick<NativeBuffer | NativeMappedFile, "quarantinedBytes">;

/** One held buffer (its allocation, whose quarantine the allocator counts) or mapping (counted at `bytes`). */
interface Entry {
  native: Held;
  allocation: Allocation<NativeBuffer> | undefined;
  bytes: number;
  owner: object | undefined;
}

/**
 * The quarantined buffers and mappings of one Device, each counted until the backend frees it: a buffer by
 * the allocator's quarantine, which counts what the backend holds for it (under the segments policy its
 * block, or its whole segment once the segment went back), a mapping at its mapped length.
 */
export class Quarantine {
  readonly #allocator: CachingAllocator<NativeBuffer>;
  readonly #givenBack: (owner: object) => void;
  readonly #isOpen: () => boolean;
  readonly #sweep = new KeepAliveTimer();
  #held: Entry[] = [];
  #askedThisJob = false;

  /**
   * `givenBack` is told each owner the backend gave back; `isOpen` says whether the Device is still open (the
   * sweep stops once it is not: the allocator is gone).
   */
  constructor(
    allocator: CachingAllocator<NativeBuffer>,
    givenBack: (owner: object) => void,
    isOpen: () => boolean,
  ) {
    this.#allocator = allocator;
    this.#givenBack = givenBack;
    this.#isOpen = isOpen;
  }

  /** The owners of the freed buffers still held, with the bytes each is counted at (oldest first). */
  held(): (readonly [object, number])[] {
    const owned: (readonly [object, number])[] = [];
    // A mapping has no owner to name (a trace opens with the buffers only).
    for (const entry of this.#held) if (entry.owner !== undefined) owned.push([entry.owner, entry.bytes]);
    return owned;
  }

  /** How many freed buffers are still held. */
  get size(): number {
    return this.#held.length;
  }

  /**
   * Frees `allocation`, whose view moved away, into the allocator's quarantine (never cached), `native`
   * being its buffer, released. Returns whether the backend still holds its memory; when it does not, the
   * quarantine ends at once. `owner` is what {@link settle} names when it is given back.
   */
  holdBuffer(native: Held, allocation: Allocation<NativeBuffer>, owner: object): boolean {
    this.#allocator.quarantine(allocation);
    if ((native.quarantinedBytes ?? 0) === 0) {
      this.#allocator.endQuarantine(allocation);
      return false;
    }
    this.#push({ native, allocation, bytes: allocation.allocatedLength, owner });
    return true;
  }

  /**
   * `native` (a mapping) was released while a view of it was moved away: counted as `bytes` (its mapped
   * length) while the backend still holds it. Returns whether it does.
   */
  hold(native: Held, bytes: number, owner: object | undefined): boolean {
    if ((native.quarantinedBytes ?? 0) === 0) return false;
    this.#allocator.addQuarantined(bytes);
    this.#push({ native, allocation: undefined, bytes, owner });
    return true;
  }

  #push(entry: Entry): void {
    this.#held.push(entry);
    if (this.#held.length === 1) this.#sweep.start(SWEEP_MILLISECONDS, () => this.#sweepOnce());
  }

  /** The timer's turn: what the backend gave back leaves the books; the timer stops when nothing is held. */
  #sweepOnce(): void {
    if (!this.#isOpen()) {
      this.#sweep.stop();
      return;
    }
    try {
      this.settle(true);
    } catch {
      // A timer must not throw (it would end the process): the Device's next call asks again and throws it.
    }
  }

  /**
   * Takes what the backend gave back out of `quarantined`, telling `givenBack` each owner: at most once per
   * job unless `always`.
   */
  settle(always = false): void {
    if (this.#held.length === 0 || (this.#askedThisJob && !always)) return;
    this.#askedThisJob = true;
    queueMicrotaskOnce(() => {
      this.#askedThisJob = false;
    });
    const still: Entry[] = [];
    let given = 0;
    const owners: object[] = [];
    for (const entry of this.#held) {
      if ((entry.native.quarantinedBytes ?? 0) > 0) still.push(entry);
      else {
        if (entry.allocation !== undefined) this.#allocator.endQuarantine(entry.allocation);
        else given += entry.bytes;
        if (entry.owner !== undefined) owners.push(entry.owner);
      }
    }
    this.#held = still;
    if (still.length === 0) this.#sweep.stop();
    if (given > 0) this.#allocator.removeQuarantined(given);
    for (const owner of owners) this.#givenBack(owner);
  }
}
