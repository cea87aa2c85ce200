// Records a workload for the memory view while it is replayed: each allocation's events and size, the bytes
// each policy charged for it, and each policy's reserved memory wherever it changed. Memory: a few typed-array
// entries per allocation and per change, whatever the trace's length.
import type { CoreInput } from "./core.js";

/** A typed array that grows by doubling. */
class Growing<T extends Float64Array | Uint32Array | Int32Array> {
  #array: T;
  length = 0;
  readonly #make: (length: number) => T;

  constructor(make: (length: number) => T) {
    this.#make = make;
    this.#array = make(1024);
  }

  push(value: number): void {
    if (this.length === this.#array.length) {
      const grown = this.#make(this.#array.length * 2);
      grown.set(this.#array);
      this.#array = grown;
    }
    this.#array[this.length] = value;
    this.length += 1;
  }

  set(index: number, value: number): void {
    this.#array[index] = value;
  }

  get(index: number): number {
    return this.#array[index] as number;
  }

  /** The values pushed, in an array of their own length. */
  done(): T {
    return this.#array.slice(0, this.length) as T;
  }
}

const f64 = () => new Growing((length) => new Float64Array(length));
const u32 = () => new Growing((length) => new Uint32Array(length));

/** What {@link WorkloadRecorder.finish} returns: the view's inputs and each allocation's label. */
export interface RecordedWorkload extends CoreInput {
  /** Per allocation: an index into the labels given to `allocate` (`-1`: none). */
  label: Int32Array;
  /** Per allocation: an index into the trace's stacks (`["s", id, frames]`; `-1`: none); absent when none. */
  stack?: Int32Array;
  /** The trace's marks (`["k", name]`): each before event `at[k]`, named `names[k]`; none when left out. */
  marks?: { at: Uint32Array; names: string[] };
}

/**
 * Records a workload event by event for the memory view. Call `allocate` / `free` for the event's allocation
 * (if any), then `endEvent` with each policy's reserved bytes after it.
 */
export class WorkloadRecorder {
  readonly #policies: string[];
  readonly #start = u32();
  readonly #end = u32();
  readonly #size = f64();
  readonly #label = new Growing((length) => new Int32Array(length));
  readonly #stack = new Growing((length) => new Int32Array(length));
  #stacked = false;
  readonly #charged: Growing<Float64Array>[];
  readonly #reservedAt: Growing<Uint32Array>[];
  readonly #reservedValue: Growing<Float64Array>[];
  readonly #mappedAt = u32();
  readonly #mappedValue = f64();
  readonly #markAt = u32();
  readonly #markNames: string[] = [];
  readonly #ordinalOfId = new Map<number, number>();
  #events = 0;

  /** A recorder for `policies` (in the order `endEvent` gets their figures). */
  constructor(policies: readonly string[]) {
    this.#policies = [...policies];
    this.#charged = this.#policies.map(f64);
    this.#reservedAt = this.#policies.map(u32);
    this.#reservedValue = this.#policies.map(f64);
  }

  /** Events recorded so far. */
  get events(): number {
    return this.#events;
  }

  /** Allocation `id` of `size` bytes at the current event; `charged[p]`: what policy `p` charged (0: refused). */
  allocate(id: number, size: number, charged: readonly number[], label = -1, stack = -1): void {
    const ordinal = this.#start.length;
    this.#ordinalOfId.set(id, ordinal);
    this.#start.push(this.#events);
    this.#end.push(0xffffffff);
    this.#size.push(size);
    this.#label.push(label);
    this.#stack.push(stack);
    if (stack >= 0) this.#stacked = true;
    for (let policy = 0; policy < this.#charged.length; policy += 1) {
      (this.#charged[policy] as Growing<Float64Array>).push(charged[policy] ?? 0);
    }
  }

  /** Frees allocation `id` at the current event (an id never allocated is ignored: the trace was checked). */
  free(id: number): void {
    const ordinal = this.#ordinalOfId.get(id);
    if (ordinal === undefined) return;
    this.#ordinalOfId.delete(id);
    this.#end.set(ordinal, this.#events);
  }

  /** A mark (a step, a phase) before the next event; its name is kept to 120 characters. */
  mark(name: string): void {
    this.#markAt.push(this.#events);
    this.#markNames.push(name.length > 120 ? `${name.slice(0, 119)}…` : name);
  }

  /**
   * Ends the current event: `reserved[p]` is policy `p`'s `active + cache` after it, `mapped` the bytes of
   * mapped files.
   */
  endEvent(reserved: readonly number[], mapped = 0): void {
    const last = this.#mappedValue.length === 0 ? 0 : this.#mappedValue.get(this.#mappedValue.length - 1);
    if (mapped !== last) {
      this.#mappedAt.push(this.#events);
      this.#mappedValue.push(mapped);
    }
    for (let policy = 0; policy < this.#reservedAt.length; policy += 1) {
      const values = this.#reservedValue[policy] as Growing<Float64Array>;
      const value = reserved[policy] ?? 0;
      if (values.length === 0 || values.get(values.length - 1) !== value) {
        (this.#reservedAt[policy] as Growing<Uint32Array>).push(this.#events);
        values.push(value);
      }
    }
    this.#events += 1;
  }

  /** The recorded workload (allocations never freed end at `events`). */
  finish(): RecordedWorkload {
    const end = this.#end.done();
    for (let index = 0; index < end.length; index += 1) {
      if (end[index] === 0xffffffff) end[index] = this.#events;
    }
    return {
      events: this.#events,
      start: this.#start.done(),
      end,
      size: this.#size.done(),
      label: this.#label.done(),
      ...(this.#stacked ? { stack: this.#stack.done() } : {}),
      policies: this.#policies.map((name, policy) => ({
        name,
        charged: (this.#charged[policy] as Growing<Float64Array>).done(),
        reservedAt: (this.#reservedAt[policy] as Growing<Uint32Array>).done(),
        reservedValue: (this.#reservedValue[policy] as Growing<Float64Array>).done(),
      })),
      external: [],
      mapped: { at: this.#mappedAt.done(), value: this.#mappedValue.done() },
      marks: { at: this.#markAt.done(), names: [...this.#markNames] },
    };
  }
}
