// The Device's live buffers: what close() frees and a trace opens with. Their count is the allocator's
// (`liveBuffers`); this list only holds them.
import type { BufferState } from "./device-buffer.js";

/**
 * @internal An intrusive list of the live buffers' states, newest first: linking and unlinking cost a few nanoseconds
 * on the malloc/free path, where a Set's hashing costs tens.
 */
export class LiveBuffers {
  /** The most recently linked state; `undefined` when the list is empty. */
  newest: BufferState | undefined = undefined;

  /** Adds `state` as the newest. */
  link(state: BufferState): void {
    const head = this.newest;
    state.next = head;
    if (head !== undefined) head.previous = state;
    this.newest = state;
  }

  /** Takes `state` out of the list; nothing for a state never linked (a 0-byte buffer). */
  unlink(state: BufferState): void {
    const { previous, next } = state;
    if (previous !== undefined) previous.next = next;
    else if (this.newest === state) this.newest = next;
    else return;
    if (next !== undefined) next.previous = previous;
    state.previous = undefined;
    state.next = undefined;
  }

  /** The states, oldest first (the order a trace's opening lists them in). */
  oldestFirst(): BufferState[] {
    const states: BufferState[] = [];
    for (let state = this.newest; state !== undefined; state = state.next) states.push(state);
    return states.reverse();
  }
}
