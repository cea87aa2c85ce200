// A recording fake of the calls the residency manager makes on Metal, with Metal's semantics: `add` and
// `remove` are pending until `commit`. It refuses what Metal would not do silently (adding an allocation a
// set already holds, removing one it does not, using a released set), so a manager bug shows as a throw.
import type { ResidencyBackend, ResidencySetHandle } from "../src/index.js";

/** A pretend allocation: identity is the object, `size` is what `allocatedSize` reports. */
export interface FakeAllocation {
  readonly name: string;
  size: number;
}

/** Makes a pretend allocation. */
export function allocation(name: string, size: number): FakeAllocation {
  return { name, size };
}

/** One event the fake saw, in order. */
export type FakeEvent =
  | { kind: "create"; set: number }
  | { kind: "createFailed"; attempt: number }
  | { kind: "attach"; set: number }
  | { kind: "add" | "remove"; set: number; allocation: string }
  | { kind: "commit" | "request" | "end" | "release"; set: number };

/** A set that records everything done to it. */
export class FakeSet implements ResidencySetHandle<FakeAllocation> {
  readonly committed = new Set<FakeAllocation>();
  readonly pending = new Map<FakeAllocation, "add" | "remove">();
  commits = 0;
  requests = 0;
  ended = 0;
  released = false;
  attached = false;

  constructor(
    readonly index: number,
    private readonly log: FakeEvent[],
  ) {}

  /** What the set will hold after the next commit. */
  holding(): Set<FakeAllocation> {
    const result = new Set(this.committed);
    for (const [item, change] of this.pending) {
      if (change === "add") result.add(item);
      else result.delete(item);
    }
    return result;
  }

  /** Bytes of the committed allocations, by their size now. */
  committedBytes(): number {
    let total = 0;
    for (const item of this.committed) total += item.size;
    return total;
  }

  add(item: FakeAllocation): void {
    this.#live();
    if (this.holding().has(item)) throw new Error(`set ${this.index} already holds ${item.name}`);
    if (this.pending.get(item) === "remove") this.pending.delete(item);
    else this.pending.set(item, "add");
    this.log.push({ kind: "add", set: this.index, allocation: item.name });
  }

  remove(item: FakeAllocation): void {
    this.#live();
    if (!this.holding().has(item)) throw new Error(`set ${this.index} does not hold ${item.name}`);
    if (this.pending.get(item) === "add") this.pending.delete(item);
    else this.pending.set(item, "remove");
    this.log.push({ kind: "remove", set: this.index, allocation: item.name });
  }

  commit(): void {
    this.#live();
    for (const [item, change] of this.pending) {
      if (change === "add") this.committed.add(item);
      else this.committed.delete(item);
    }
    this.pending.clear();
    this.commits++;
    this.log.push({ kind: "commit", set: this.index });
  }

  requestResidency(): void {
    this.#live();
    this.requests++;
    this.log.push({ kind: "request", set: this.index });
  }

  endResidency(): void {
    this.#live();
    this.ended++;
    this.log.push({ kind: "end", set: this.index });
  }

  release(): void {
    this.#live();
    this.released = true;
    this.log.push({ kind: "release", set: this.index });
  }

  #live(): void {
    if (this.released) throw new Error(`set ${this.index} was released`);
  }
}

/** Options of the fake backend. */
export interface FakeBackendOptions {
  supportsResidencySets?: boolean;
  /** Whether creation attempt `attempt` (0 for the first) fails; none fail by default. */
  failCreation?: (attempt: number) => boolean;
}

/** A backend that records every call. */
export class FakeBackend implements ResidencyBackend<FakeAllocation, FakeSet> {
  readonly supportsResidencySets: boolean;
  readonly sets: FakeSet[] = [];
  readonly log: FakeEvent[] = [];
  creationAttempts = 0;
  readonly sizeReads = new Map<FakeAllocation, number>();
  readonly #failCreation: (attempt: number) => boolean;

  constructor(options: FakeBackendOptions = {}) {
    this.supportsResidencySets = options.supportsResidencySets ?? true;
    this.#failCreation = options.failCreation ?? (() => false);
  }

  newResidencySet(): FakeSet | undefined {
    const attempt = this.creationAttempts++;
    if (this.#failCreation(attempt)) {
      this.log.push({ kind: "createFailed", attempt });
      return undefined;
    }
    const set = new FakeSet(this.sets.length, this.log);
    this.sets.push(set);
    this.log.push({ kind: "create", set: set.index });
    return set;
  }

  attachResidencySet(set: FakeSet): void {
    if (set.attached) throw new Error(`set ${set.index} attached twice`);
    set.attached = true;
    this.log.push({ kind: "attach", set: set.index });
  }

  allocatedSize(item: FakeAllocation): number {
    this.sizeReads.set(item, (this.sizeReads.get(item) ?? 0) + 1);
    return item.size;
  }

  /** Commits per set. */
  commits(): number[] {
    return this.sets.map((set) => set.commits);
  }

  /** Residency requests per set. */
  requests(): number[] {
    return this.sets.map((set) => set.requests);
  }

  /** Committed bytes per set. */
  committedBytes(): number[] {
    return this.sets.map((set) => set.committedBytes());
  }

  /** Sets with adds or removes not yet committed. */
  uncommitted(): number[] {
    return this.sets.filter((set) => set.pending.size > 0).map((set) => set.index);
  }

  /** Forgets the log and the counters (not the sets' contents), to look at one operation alone. */
  resetCounters(): void {
    this.log.length = 0;
    for (const set of this.sets) {
      set.commits = 0;
      set.requests = 0;
    }
  }
}
