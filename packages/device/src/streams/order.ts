// Stream-ordered free (docs/STREAMS.md "Stream-ordered memory"): each live buffer's state records the streams
// that used it and each one's position at the last use. A free then either gives the memory back at once,
// leaving a fence (stream, position) on it that later uses on other streams and on the host honour, or, for
// a buffer used on several streams, holds it until an event on each has completed. Nothing here waits on the
// host but a host use of fenced memory and a release of it to the system.
import type { NativeBuffer, NativeEvent } from "@nuvec/metal-native";
import type { BufferState } from "../device-buffer.js";
import { queried, releaseQuietly, type StreamCore } from "./stream-core.js";

/** A buffer freed while several streams still had work naming it: given back once every event completed. */
interface HeldBuffer {
  readonly state: BufferState;
  readonly events: NativeEvent[];
}

/**
 * The memory a fence is kept on: the system buffer, or under the segments policy the segment a block is a
 * range of (blocks merge and split, so a later block may overlap a freed one anywhere in its segment).
 */
export function memoryKey(state: BufferState): object | undefined {
  const allocation = state.allocation as {
    readonly record?: { readonly segment?: { readonly buffer?: object } };
  };
  return allocation.record?.segment?.buffer ?? state.allocation.buffer;
}

/** @internal A Device's stream order: fences on freed memory, and the buffers held for several streams. */
export class StreamOrder {
  // Memory given back while a stream's work may still name it: stream → position of that work.
  readonly #fences = new Map<object, Map<StreamCore, number>>();
  #held: HeldBuffer[] = [];
  /** Bytes of the held buffers (their `allocatedLength`), in `active` until given back. */
  heldBytes = 0;
  readonly #giveBack: (state: BufferState) => void;

  /** `giveBack` frees a held buffer's allocation once its streams are done (to the allocator, into the trace). */
  constructor(giveBack: (state: BufferState) => void) {
    this.#giveBack = giveBack;
  }

  /** Buffers held for several streams (`counters().streamPending.buffers`). */
  get heldBuffers(): number {
    return this.#held.length;
  }

  /** The states of the held buffers (still in `active`: what a trace started now opens with). */
  heldStates(): BufferState[] {
    return this.#held.map((held) => held.state);
  }

  /**
   * At malloc: a buffer whose memory carries a fence remembers it (`state.fence`), so that its first uses
   * honour it. A cheap test while no fence exists.
   */
  adopt(state: BufferState): void {
    if (this.#fences.size === 0) return;
    const key = memoryKey(state);
    if (key !== undefined && this.#fences.has(key)) state.fence = this;
  }

  /**
   * Before an operation on `stream` names the buffer: its memory's fences of other streams become device-side
   * waits (none for work already known complete or already waited for).
   */
  beforeUse(state: BufferState, stream: StreamCore): void {
    if (state.fence === undefined) return;
    const key = memoryKey(state) as object;
    const fence = this.#fences.get(key);
    if (fence === undefined) {
      state.fence = undefined;
      return;
    }
    for (const [other, position] of fence) {
      if (other.isComplete(position)) fence.delete(other);
      else other.orderBefore(stream, position);
    }
    if (fence.size === 0) {
      this.#fences.delete(key);
      state.fence = undefined;
    }
  }

  /** After an operation on `stream` named the buffer: it was used there, up to the stream's position. */
  used(state: BufferState, stream: StreamCore): void {
    if (state.uses === undefined) state.uses = new Map();
    state.uses.set(stream, stream.position);
  }

  /** Before a host use of the buffer (contents, read, write): waits for its memory's fences. */
  beforeHostUse(state: BufferState): void {
    state.fence = undefined;
    const key = memoryKey(state);
    if (key !== undefined) this.#settleOnHost(key);
  }

  /** Before the allocator gives `buffer` back to the system: waits for the work a fence on it names. */
  beforeRelease(buffer: NativeBuffer): void {
    if (this.#fences.size > 0) this.#settleOnHost(buffer);
  }

  #settleOnHost(key: object): void {
    const fence = this.#fences.get(key);
    if (fence === undefined) return;
    for (const [stream, position] of fence) stream.synchronizeThrough(position);
    this.#fences.delete(key);
  }

  /**
   * A free of a buffer that streams used: true when it is held (used on several open streams), else its
   * memory carries a fence of the one stream that used it (when that work is not known complete) and the
   * caller gives it back at once.
   */
  hold(state: BufferState): boolean {
    const uses = state.uses;
    if (uses === undefined) return false;
    state.uses = undefined;
    let open = 0;
    for (const stream of uses.keys()) if (!stream.released) open += 1;
    if (open >= 2) {
      const events: NativeEvent[] = [];
      // As PyTorch's record_stream: an event at each stream's position now (what the free is ordered after).
      for (const stream of uses.keys()) if (!stream.released) events.push(stream.native.record());
      this.#held.push({ state, events });
      this.heldBytes += state.allocation.allocatedLength;
      return true;
    }
    const key = memoryKey(state);
    if (key === undefined) return false;
    for (const [stream, position] of uses) {
      if (stream.isComplete(position)) continue;
      let fence = this.#fences.get(key);
      if (fence === undefined) {
        fence = new Map();
        this.#fences.set(key, fence);
      }
      fence.set(stream, Math.max(position, fence.get(stream) ?? 0));
    }
    return false;
  }

  /** Gives back every held buffer whose events have all completed (the malloc path; never waits). */
  poll(): void {
    if (this.#held.length === 0) return;
    const waiting: HeldBuffer[] = [];
    const done: HeldBuffer[] = [];
    for (const held of this.#held) (held.events.every(queried) ? done : waiting).push(held);
    if (done.length === 0) return;
    this.#held = waiting;
    for (const held of done) this.#release(held);
  }

  /** Gives back every held buffer now (after every stream was synchronized or released: at close). */
  releaseAll(): void {
    const all = this.#held;
    this.#held = [];
    for (const held of all) this.#release(held);
  }

  #release(held: HeldBuffer): void {
    for (const event of held.events) releaseQuietly(event);
    this.heldBytes -= held.state.allocation.allocatedLength;
    this.#giveBack(held.state);
  }

  /** A released stream's work has run: its fences go (they are complete). */
  forget(stream: StreamCore): void {
    for (const [key, fence] of this.#fences) {
      fence.delete(stream);
      if (fence.size === 0) this.#fences.delete(key);
    }
  }
}
