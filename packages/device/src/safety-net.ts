// The safety net: buffers dropped without free() are given back once the garbage collector proves them
// unreachable (a FinalizationRegistry), and counted as leaks.
//
// Registering every buffer costs more than the allocator, the residency set and the native call together
// (V8's `register` and `unregister`, and the collection of their cells: ≈ 0.6 µs per malloc + free,
// packages/allocator/bench/PROFILE.md §2). Most buffers of a runtime are freed soon, often in the turn of the
// event loop they were made in, so registration waits: `malloc` appends the buffer to a pending list, and
// once per turn (an immediate) the buffers of that list still live are registered in one batch. A buffer
// freed in its first turn is never registered and costs two array stores. The guarantee stays whole: a
// buffer dropped in its first turn is held by the pending list until the batch and registered then, so it is
// still reclaimed and counted; the list never holds it past that, so it is collected on the next cycles as
// before. Nothing changes for views: a view keeps its DeviceBuffer alive, pending or registered.
import type { BufferState, DeviceBuffer } from "./device-buffer.js";
import { newFinalizationRegistry, queueMicrotaskOnce } from "./environment.js";

// The scheduler of the batch, taken once: a test framework's fake timers installed later must not stop the
// registration (queueMicrotask where there is no setImmediate, e.g. in a browser with the mock backend). A
// closed device cancels its batch, so that nothing keeps it reachable until the next turn.
const hasImmediate =
  typeof globalThis.setImmediate === "function" && typeof globalThis.clearImmediate === "function";
const schedule: (callback: () => void) => unknown = hasImmediate
  ? globalThis.setImmediate.bind(globalThis)
  : (callback) => queueMicrotaskOnce(callback);
const cancel: (scheduled: unknown) => void = hasImmediate
  ? (scheduled) => globalThis.clearImmediate(scheduled as ReturnType<typeof setImmediate>)
  : () => {};

/** Pending entries (two slots each) at which a long synchronous loop compacts out the freed ones. */
const FIRST_COMPACTION = 2048;

/** @internal The safety net of one Device: `reclaim` runs for each live buffer whose DeviceBuffer was collected. */
export class SafetyNet {
  readonly #reclaim: (state: BufferState) => void;
  // Made with the first buffer that outlives its turn: a device whose buffers are all freed in the turn they
  // were made (a replay, a benchmark) never makes one.
  #registry: FinalizationRegistry<BufferState> | undefined;
  // Buffers made this turn, as pairs: the DeviceBuffer (the registry's target) and its state (held value and
  // unregister token). A flat array of pairs: one push of two, no object per entry.
  #pending: (DeviceBuffer | BufferState)[] = [];
  #compactAt = FIRST_COMPACTION;
  // The scheduled batch (an Immediate), or undefined when none is.
  #scheduled: unknown;
  #closed = false;
  readonly #flush = () => this.#registerPending();

  constructor(reclaim: (state: BufferState) => void) {
    this.#reclaim = reclaim;
  }

  /** A buffer was made: registered at the end of this turn if it is still live then. */
  add(buffer: DeviceBuffer, state: BufferState): void {
    const pending = this.#pending;
    // Two indexed stores, which the engine compiles inline (a push of two values is a builtin call).
    const at = pending.length;
    pending[at] = buffer;
    pending[at + 1] = state;
    if (at + 2 >= this.#compactAt) this.#compact();
    if (this.#scheduled === undefined) this.#scheduled = schedule(this.#flush) ?? true;
  }

  /** A buffer was freed (its state no longer live): it leaves the registry, or the pending list. */
  remove(state: BufferState): void {
    if (state.registered) {
      state.registered = false;
      this.#registry?.unregister(state);
      return;
    }
    // The common `malloc(n)` … `free()` of the last buffer made: take it off the list at once. Other pending
    // buffers freed this turn are skipped by the batch (or compacted out).
    const pending = this.#pending;
    if (pending[pending.length - 1] === state) {
      pending.pop();
      pending.pop();
    }
  }

  /** The device closed: nothing pending is registered any more (everything was freed). */
  close(): void {
    this.#closed = true;
    this.#pending = [];
    if (this.#scheduled !== undefined) cancel(this.#scheduled);
    this.#scheduled = undefined;
  }

  #registerPending(): void {
    this.#scheduled = undefined;
    const pending = this.#pending;
    this.#pending = [];
    this.#compactAt = FIRST_COMPACTION;
    if (this.#closed) return;
    for (let index = 0; index < pending.length; index += 2) {
      const state = pending[index + 1] as BufferState;
      if (state.live) {
        this.#registry ??= newFinalizationRegistry(this.#reclaim);
        this.#registry.register(pending[index] as DeviceBuffer, state, state);
        state.registered = true;
      }
    }
  }

  /** Drops the freed pairs in place; a list still mostly live (many buffers kept) doubles its threshold. */
  #compact(): void {
    const pending = this.#pending;
    let kept = 0;
    for (let index = 0; index < pending.length; index += 2) {
      const state = pending[index + 1] as BufferState;
      if (state.live) {
        pending[kept] = pending[index] as DeviceBuffer;
        pending[kept + 1] = state;
        kept += 2;
      }
    }
    pending.length = kept;
    if (kept * 2 > this.#compactAt) this.#compactAt *= 2;
  }
}
