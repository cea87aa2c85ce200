// Buffers freed while a view of theirs was moved out of the backend's reach (transfer(), postMessage): the
// backend holds their memory until that view is collected, and the Device counts it in `quarantined` (and
// against the memory limit) until then. The backend gives such memory back only when a view's finalizer
// runs, after a turn of the event loop, so asking it more than once per job would learn nothing new.
import type { CachingAllocator } from "@nuvec/allocator";
import type { NativeBuffer } from "@nuvec/metal-native";
import { queueMicrotaskOnce } from "./environment.js";

/** The quarantined buffers of one Device, each counted at its allocated length until the backend frees it. */
export class Quarantine {
  readonly #allocator: CachingAllocator<NativeBuffer>;
  #held: { native: NativeBuffer; bytes: number; owner: object }[] = [];
  #askedThisJob = false;

  constructor(allocator: CachingAllocator<NativeBuffer>) {
    this.#allocator = allocator;
  }

  /** The owners of the freed buffers still held, with the bytes each is counted at (oldest first). */
  held(): (readonly [object, number])[] {
    return this.#held.map((entry) => [entry.owner, entry.bytes] as const);
  }

  /** How many freed buffers are still held. */
  get size(): number {
    return this.#held.length;
  }

  /**
   * `native` was released without caching (its view moved away): counted as `bytes` (the allocation's
   * length) while the backend still holds its memory. Returns whether it does; `owner` is what
   * {@link settle} names when it is given back.
   */
  hold(native: NativeBuffer, bytes: number, owner: object): boolean {
    if ((native.quarantinedBytes ?? 0) === 0) return false;
    this.#allocator.addQuarantined(bytes);
    this.#held.push({ native, bytes, owner });
    return true;
  }

  /**
   * Takes what the backend gave back out of `quarantined`, telling `givenBack` each owner: at most once per
   * job unless `always`.
   */
  settle(givenBack: (owner: object) => void, always = false): void {
    if (this.#held.length === 0 || (this.#askedThisJob && !always)) return;
    this.#askedThisJob = true;
    queueMicrotaskOnce(() => {
      this.#askedThisJob = false;
    });
    const still: { native: NativeBuffer; bytes: number; owner: object }[] = [];
    let given = 0;
    const owners: object[] = [];
    for (const entry of this.#held) {
      if ((entry.native.quarantinedBytes ?? 0) > 0) still.push(entry);
      else {
        given += entry.bytes;
        owners.push(entry.owner);
      }
    }
    this.#held = still;
    if (given > 0) this.#allocator.removeQuarantined(given);
    for (const owner of owners) givenBack(owner);
  }
}
