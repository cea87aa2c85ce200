// Buffers freed and files unmapped while a view of theirs was moved out of the backend's reach (transfer(),
// postMessage): the backend holds their memory until the last holder of that view drops it, and the Device
// counts it in `quarantined` (and against the memory limit) until then. The backend learns of it when that
// holder's engine lets the memory go (a collection, perhaps on another thread), so asking more than once per
// job would rarely learn anything new.
import type { CachingAllocator } from "@nuvec/allocator";
import type { NativeBuffer, NativeMappedFile } from "@nuvec/metal-native";
import { queueMicrotaskOnce } from "./environment.js";

/** What may be held: a released buffer or mapped file, which says how many bytes the backend still holds. */
type Held = Pick<NativeBuffer | NativeMappedFile, "quarantinedBytes">;

/** The quarantined buffers and mappings of one Device, each counted until the backend frees it. */
export class Quarantine {
  readonly #allocator: CachingAllocator<NativeBuffer>;
  #held: { native: Held; bytes: number; owner: object | undefined }[] = [];
  #askedThisJob = false;

  constructor(allocator: CachingAllocator<NativeBuffer>) {
    this.#allocator = allocator;
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
   * `native` was released without caching (its view moved away): counted as `bytes` (the allocation's
   * length, a mapping's mapped length) while the backend still holds its memory. Returns whether it does;
   * `owner` is what {@link settle} names when it is given back (none for a mapping).
   */
  hold(native: Held, bytes: number, owner: object | undefined): boolean {
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
    const still: { native: Held; bytes: number; owner: object | undefined }[] = [];
    let given = 0;
    const owners: object[] = [];
    for (const entry of this.#held) {
      if ((entry.native.quarantinedBytes ?? 0) > 0) still.push(entry);
      else {
        given += entry.bytes;
        if (entry.owner !== undefined) owners.push(entry.owner);
      }
    }
    this.#held = still;
    if (given > 0) this.#allocator.removeQuarantined(given);
    for (const owner of owners) givenBack(owner);
  }
}
