// The safety net: buffers dropped without free() are given back once the garbage collector proves them
// unreachable (a FinalizationRegistry), and counted as leaks.
//
// Registering every buffer costs more than the allocator, the residency set and the native call together
// (V8's `register` and `unregister`, and the collection of their cells: ≈ 0.6 µs per malloc + free,
// packages/allocator/bench/PROFILE.md §2). Most buffers of a runtime are freed soon, often in the turn of the
// event loop they were made in, so registration waits: `malloc` appends the buffer to a pending list, and
// once per turn (an immediate) the buffers of that list are registered in one batch. A buffer freed in its
// first turn is never registered: its entry leaves the list at once (the last entry moves into its place,
// and the state remembers where its entry is), so the list holds exactly the live buffers made this turn and
// a long synchronous loop never scans it. The guarantee stays whole: a buffer dropped in its first turn is
// held by the pending list until the batch and registered then, so it is still reclaimed and counted; the
// list never holds it past that, so it is collected on the next cycles as before. Nothing changes for views:
// a view keeps its DeviceBuffer alive, pending or registered.
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

/** @internal The safety net of one Device: `reclaim` runs for each live buffer whose DeviceBuffer was collected. */
export class SafetyNet {
  readonly #reclaim: (state: BufferState) => void;
  // Made with the first buffer that outlives its turn: a device whose buffers are all freed in the turn they
  // were made (a replay, a benchmark) never makes one.
  #registry: FinalizationRegistry<BufferState> | undefined;
  // Live buffers made this turn, as pairs in the first `#pendingLength` slots: the DeviceBuffer (the
  // registry's target) and its state (held value and unregister token), whose `pendingAt` is where the pair
  // starts. A flat array of pairs that never shrinks within a turn (the slots past the length are cleared):
  // adding and removing are indexed stores, which the engine compiles inline, where a push or a pop is a call.
  #pending: (DeviceBuffer | BufferState | undefined)[] = [];
  #pendingLength = 0;
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
    const at = this.#pendingLength;
    pending[at] = buffer;
    pending[at + 1] = state;
    this.#pendingLength = at + 2;
    state.pendingAt = at;
    if (this.#scheduled === undefined) this.#scheduled = schedule(this.#flush) ?? true;
  }

  /** A buffer was freed (its state no longer live): it leaves the registry, or the pending list. */
  remove(state: BufferState): void {
    if (state.registered) {
      state.registered = false;
      this.#registry?.unregister(state);
      return;
    }
    const at = state.pendingAt;
    if (at < 0) return;
    // The last pair moves into the freed one's place (nothing when it is the last).
    state.pendingAt = -1;
    const pending = this.#pending;
    const last = this.#pendingLength - 2;
    if (at !== last) {
      const moved = pending[last + 1] as BufferState;
      pending[at] = pending[last];
      pending[at + 1] = moved;
      moved.pendingAt = at;
    }
    pending[last] = undefined;
    pending[last + 1] = undefined;
    this.#pendingLength = last;
  }

  /** The device closed: nothing pending is registered any more (everything was freed). */
  close(): void {
    this.#closed = true;
    this.#forgetPending();
    if (this.#scheduled !== undefined) cancel(this.#scheduled);
    this.#scheduled = undefined;
  }

  #registerPending(): void {
    this.#scheduled = undefined;
    const length = this.#pendingLength;
    const pending = this.#forgetPending();
    if (this.#closed) return;
    for (let index = 0; index < length; index += 2) {
      const state = pending[index + 1] as BufferState;
      if (state.live) {
        this.#registry ??= newFinalizationRegistry(this.#reclaim);
        this.#registry.register(pending[index] as DeviceBuffer, state, state);
        state.registered = true;
      }
    }
  }

  /** Empties the pending list (each state told it has no entry any more); returns what it held. */
  #forgetPending(): (DeviceBuffer | BufferState | undefined)[] {
    const pending = this.#pending;
    const length = this.#pendingLength;
    this.#pending = [];
    this.#pendingLength = 0;
    for (let index = 1; index < length; index += 2) (pending[index] as BufferState).pendingAt = -1;
    return pending;
  }
}
