// The safety net: buffers dropped without free() are given back once the garbage collector proves them
// unreachable (a FinalizationRegistry), and counted as leaks.
//
// Registering every buffer costs more than the allocator, the residency set and the native call together
// (V8's `register` and `unregister`, and the collection of their cells: ≈ 0.6 µs per malloc + free,
// packages/allocator/bench/PROFILE.md §2). Most buffers of a runtime are freed soon, often in the turn of the
// event loop they were made in, so registration waits: once per turn (an immediate) the buffers made in that
// turn and still live are registered in one batch. They need no list of their own: the Device's list of live
// buffers is in the order they were made, and every live buffer made in an earlier turn was registered at
// that turn's batch, so the ones waiting are the newest, up to the first registered one. Until its batch a
// state holds its DeviceBuffer (`owner`), which a free lets go: a buffer freed in its first turn is never
// registered and costs two field stores. The guarantee stays whole: a buffer dropped in its first turn is
// held by its state until the batch and registered then, so it is still reclaimed and counted; nothing
// holds it past that, so it is collected on the next cycles as before. Nothing changes for views: a view
// keeps its DeviceBuffer alive, waiting or registered.
import type { BufferState, DeviceBuffer } from "./device-buffer.js";
import { newFinalizationRegistry, queueMicrotaskOnce } from "./environment.js";
import type { LiveBuffers } from "./live-buffers.js";

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
  readonly #live: LiveBuffers;
  // Made with the first buffer that outlives its turn: a device whose buffers are all freed in the turn they
  // were made (a replay, a benchmark) never makes one.
  #registry: FinalizationRegistry<BufferState> | undefined;
  // The scheduled batch (an Immediate), or undefined when none is.
  #scheduled: unknown;
  #closed = false;
  readonly #flush = () => this.#registerWaiting();

  /** `live`: the Device's list of live buffers, newest first, where the buffers made this turn wait. */
  constructor(reclaim: (state: BufferState) => void, live: LiveBuffers) {
    this.#reclaim = reclaim;
    this.#live = live;
  }

  /** A buffer was made (its state linked as the newest live one): registered at the end of this turn if still live. */
  add(buffer: DeviceBuffer, state: BufferState): void {
    state.owner = buffer;
    if (this.#scheduled === undefined) this.#scheduled = schedule(this.#flush) ?? true;
  }

  /** A buffer was freed (its state no longer live): it leaves the registry, or lets go of its DeviceBuffer. */
  remove(state: BufferState): void {
    if (state.registered) {
      state.registered = false;
      this.#registry?.unregister(state);
      return;
    }
    state.owner = undefined;
  }

  /** The device closed: nothing waiting is registered any more (everything was freed). */
  close(): void {
    this.#closed = true;
    if (this.#scheduled !== undefined) cancel(this.#scheduled);
    this.#scheduled = undefined;
  }

  #registerWaiting(): void {
    this.#scheduled = undefined;
    if (this.#closed) return;
    // Newest first, up to the first registered one: the live buffers before it were registered at their batch.
    for (let state = this.#live.newest; state !== undefined && !state.registered; state = state.next) {
      const owner = state.owner;
      if (owner === undefined) continue;
      state.owner = undefined;
      this.#registry ??= newFinalizationRegistry(this.#reclaim);
      this.#registry.register(owner, state, state);
      state.registered = true;
    }
  }
}
