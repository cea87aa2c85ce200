// The engine of one mock stream: its queue of operations, how far it has run, the promises waiting for a
// point of it, and the one failure that sticks. Internal: `MockStream` and `MockEvent` are its faces.
import type { MockStreamHold } from "./buffer.js";
import type { MockStreamCompletion } from "./options.js";

/** One enqueued operation: what it holds, what it waits for, what it does, and how it fails. */
export interface Operation {
  /** The allocations it names, held from the enqueue until it ran or was dropped (one hold per naming). */
  readonly holds: readonly MockStreamHold[];
  /** A point of another stream (or this one) it waits for: `stream.wait(event)`. */
  readonly wait?: { readonly queue: StreamQueue; readonly position: number };
  /** Does the work; a throw is the operation's failure. */
  run(): void;
  /** Settles what the operation promised (a read) with a failure or the drop's error. */
  fail?(error: unknown): void;
}

interface Waiter {
  readonly position: number;
  resolve(): void;
  reject(error: unknown): void;
}

/** Runs `task` in a macrotask: `setImmediate` where there is one, else `setTimeout(task, 0)`. */
function defer(task: () => void): void {
  const immediate = (globalThis as { setImmediate?: (task: () => void) => unknown }).setImmediate;
  if (typeof immediate === "function") immediate(task);
  else setTimeout(task, 0);
}

/** Every queue of one backend, and how they complete (see {@link MockStreamCompletion}). */
export class StreamHub {
  readonly completion: MockStreamCompletion;
  /** The queues of live streams. */
  readonly queues = new Set<StreamQueue>();

  constructor(completion: MockStreamCompletion) {
    this.completion = completion;
  }

  /** Auto completion: runs what `queue` can run in a macrotask, once per batch. */
  schedule(queue: StreamQueue): void {
    if (this.completion !== "auto" || queue.scheduled || queue.dropped !== undefined) return;
    queue.scheduled = true;
    defer(() => {
      queue.scheduled = false;
      queue.runReady(Number.POSITIVE_INFINITY, false);
    });
  }

  /** `queue` ran an operation: auto completion schedules the queues whose next operation waits on it. */
  progressed(queue: StreamQueue): void {
    if (this.completion !== "auto") return;
    for (const other of this.queues) {
      if (other !== queue && other.nextWaitsOn() === queue) this.schedule(other);
    }
  }

  /** Drops the pending work of every queue with `error` (the backend closes). */
  dropAll(error: Error): void {
    for (const queue of this.queues) queue.drop(error);
    this.queues.clear();
  }
}

/**
 * One stream's queue. Positions count operations: an event at position `p` is complete once `p` operations
 * ran. The first operation to fail sticks: the stream's later operations are skipped (a read among them
 * rejects), and every point at or after it reports that failure.
 */
export class StreamQueue {
  readonly label: string;
  /** Operations enqueued so far. */
  enqueued = 0;
  /** Operations run so far (failed ones included). */
  completed = 0;
  /** Whether a macrotask is due to run it (auto completion). */
  scheduled = false;
  /** The error its pending work was dropped with (the backend closed), once it was. */
  dropped: Error | undefined;
  readonly #hub: StreamHub;
  #operations: Operation[] = [];
  #head = 0;
  #waiters: Waiter[] = [];
  #failure: { readonly at: number; readonly error: unknown } | undefined;

  constructor(hub: StreamHub, label: string) {
    this.#hub = hub;
    this.label = label;
    hub.queues.add(this);
  }

  /** Operations enqueued and not run. */
  get pending(): number {
    return this.enqueued - this.completed;
  }

  /** Appends an operation, its allocations held until it ran or was dropped. */
  enqueue(operation: Operation): void {
    for (const hold of operation.holds) hold.hold();
    this.#operations.push(operation);
    this.enqueued += 1;
    this.#hub.schedule(this);
  }

  /** The queue the next operation waits on (reached or not), if it is a wait. */
  nextWaitsOn(): StreamQueue | undefined {
    return this.#operations[this.#head]?.wait?.queue;
  }

  /**
   * Runs up to `limit` operations in order. A wait for a point not reached stops it, unless `force` (a
   * blocking wait), which runs the other queue up to that point first. Returns how many ran.
   */
  runReady(limit: number, force: boolean): number {
    let ran = 0;
    while (ran < limit && this.pending > 0 && this.dropped === undefined && this.#step(force)) ran += 1;
    return ran;
  }

  /** Runs (forcing waits) until `position` operations ran, or the queue was dropped. */
  runTo(position: number, force = true): void {
    while (this.completed < position && this.dropped === undefined && this.#step(force));
  }

  /** The failure a point reports: the sticky failure when it happened at or before `position`. */
  failureAt(position: number): { error: unknown } | undefined {
    const failure = this.#failure;
    return failure !== undefined && failure.at <= position ? { error: failure.error } : undefined;
  }

  /** A promise of `position` being reached: resolves, or rejects with the failure or the drop's error. */
  whenReached(position: number): Promise<void> {
    const promise = new Promise<void>((resolve, reject) => {
      if (this.completed >= position) {
        const failure = this.failureAt(position);
        if (failure === undefined) resolve();
        else reject(failure.error);
      } else if (this.dropped !== undefined) {
        reject(this.dropped);
      } else {
        this.#waiters.push({ position, resolve, reject });
      }
    });
    // Handled here, so that work dropped at close never takes the process down as an unhandled rejection;
    // a caller who awaits it still gets the rejection.
    promise.catch(() => {});
    return promise;
  }

  /** Drops every pending operation (letting go of what they hold) and rejects what waits, with `error`. */
  drop(error: Error): void {
    if (this.dropped !== undefined) return;
    this.dropped = error;
    const operations = this.#operations.slice(this.#head);
    this.#operations = [];
    this.#head = 0;
    for (const operation of operations) {
      for (const hold of operation.holds) hold.letGo();
      operation.fail?.(error);
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }

  #step(force: boolean): boolean {
    const operation = this.#operations[this.#head];
    if (operation === undefined) return false;
    const wait = operation.wait;
    if (wait !== undefined && wait.queue.completed < wait.position) {
      if (!force) return false;
      wait.queue.runTo(wait.position, true);
      if (wait.queue.completed < wait.position) return false;
    }
    this.#head += 1;
    if (this.#head > 64 && this.#head * 2 > this.#operations.length) {
      this.#operations = this.#operations.slice(this.#head);
      this.#head = 0;
    }
    try {
      // After a failure the stream's later work is skipped: it reports that failure.
      if (this.#failure !== undefined) throw this.#failure.error;
      operation.run();
    } catch (error) {
      this.#failure ??= { at: this.completed + 1, error };
      operation.fail?.(error);
    } finally {
      for (const hold of operation.holds) hold.letGo();
    }
    this.completed += 1;
    this.#settle();
    this.#hub.progressed(this);
    return true;
  }

  #settle(): void {
    if (this.#waiters.length === 0) return;
    const still: Waiter[] = [];
    const reached: Waiter[] = [];
    for (const waiter of this.#waiters) (waiter.position <= this.completed ? reached : still).push(waiter);
    this.#waiters = still;
    for (const waiter of reached) {
      const failure = this.failureAt(waiter.position);
      if (failure === undefined) waiter.resolve();
      else waiter.reject(failure.error);
    }
  }
}
