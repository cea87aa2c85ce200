// The one check of a trace's events, shared by every replay (replayTrace, replayTraceStream, the replay
// program): each event's shape, and each id's history. Its memory is bounded by what the trace keeps live,
// not by its length, and it takes any id a trace can hold (see trace-ids.ts).
import { FormatError } from "@nuvec/stats";
import {
  isByteCount,
  isTraceEvent,
  type TraceAllocate,
  type TraceEvent,
  type TraceFree,
  type TraceHeader,
} from "./trace-format.js";
import { TraceIdMap, UsedTraceIds } from "./trace-ids.js";

/** The refusal of event `index`: a FormatError (`ERR_NUVEC_TRACE_EVENT`) quoting the event's start. */
export function badEvent(index: number, event: unknown, why: string): FormatError {
  let text: string;
  try {
    text = JSON.stringify(event) ?? String(event);
  } catch {
    text = String(event);
  }
  return new FormatError("ERR_NUVEC_TRACE_EVENT", `trace event ${index} (${text.slice(0, 80)}): ${why}`);
}

const UNUSED = 0;
const LIVE = 1;
const RELEASED = 2;
// Freed with a view moved away: released, its bytes still held until a give-back event.
const QUARANTINED = 3;

/** What the refusals of one kind of id (allocations or mappings) say. */
interface IdRefusals {
  /** An allocate or map event of an id already used. */
  readonly reused: string;
  /** A free or unmap event of an id never allocated or mapped. */
  readonly unknown: string;
  /** A second free or unmap of an id. */
  readonly twice: string;
}

// The window of ids whose open state sits in a byte array: up to this many ids (64 KiB), sliding up with the
// trace's newest ids; an id still open when the window leaves it moves to a TraceIdMap.
const WINDOW_MAX = 1 << 16;

/**
 * The state (unused, live, released, quarantined) of every id of one kind. The used ids are
 * {@link UsedTraceIds} (an interval for ids given out in order). The open ones (live or quarantined) are a
 * byte per id in a window that follows the newest ids (where nearly every free of a trace lands: a byte read,
 * no hashing), and a {@link TraceIdMap} for those outside it (long-lived allocations, ids out of order). An id
 * that is used and not open is released. Memory: the window, and an entry per open id outside it.
 */
class IdStates {
  readonly #used = new UsedTraceIds();
  // 64 bytes to start, which V8 keeps on its heap (a fresh validator makes no buffer outside it); grown as ids come.
  #window = new Uint8Array(64);
  #base = 0;
  #windowOpen = 0;
  readonly #outside = new TraceIdMap<number>();
  readonly #refusals: IdRefusals;

  constructor(refusals: IdRefusals) {
    this.#refusals = refusals;
  }

  /** Marks `id` live (its allocate or map event at `index`); a FormatError when it was used before. */
  open(id: number, index: number, event: unknown): void {
    if (!this.tryOpen(id)) throw badEvent(index, event, this.#refusals.reused);
  }

  /** Marks `id` released (its free or unmap event at `index`); a FormatError unless it is live. */
  close(id: number, index: number, event: unknown, to = RELEASED): void {
    const state = this.get(id);
    if (state === UNUSED) throw badEvent(index, event, this.#refusals.unknown);
    if (state !== LIVE) throw badEvent(index, event, this.#refusals.twice);
    this.#setOpen(id, to === QUARANTINED ? QUARANTINED : 0);
  }

  /** Marks quarantined `id` given back (its "r" event at `index`); a FormatError unless it is quarantined. */
  giveBack(id: number, index: number, event: unknown): void {
    if (this.get(id) !== QUARANTINED) throw badEvent(index, event, "this id is not quarantined");
    this.#setOpen(id, 0);
  }

  /** Allocates `id` if it was never used (the common event's fast path); whether it did. */
  tryOpen(id: number): boolean {
    if (!this.#used.addIfNew(id)) return false;
    // A new id inside the window: its byte is 0 (only used ids are open).
    const offset = id - this.#base;
    if (offset >= 0 && offset < this.#window.length) {
      this.#window[offset] = LIVE;
      this.#windowOpen += 1;
    } else this.#setOpen(id, LIVE);
    return true;
  }

  /** Frees `id` if it is live (the common event's fast path); whether it did. */
  tryClose(id: number): boolean {
    const offset = id - this.#base;
    if (offset >= 0 && offset < this.#window.length) {
      if (this.#window[offset] !== LIVE) return false;
      this.#window[offset] = 0;
      this.#windowOpen -= 1;
      return true;
    }
    if (this.#outside.size === 0 || this.#outside.get(id) !== LIVE) return false;
    this.#outside.delete(id);
    return true;
  }

  get(id: number): number {
    const open = this.#openState(id);
    if (open !== 0) return open;
    return this.#used.has(id) ? RELEASED : UNUSED;
  }

  /** LIVE or QUARANTINED for an open id, else 0. */
  #openState(id: number): number {
    const offset = id - this.#base;
    if (offset >= 0 && offset < this.#window.length) return this.#window[offset] as number;
    return this.#outside.size === 0 ? 0 : (this.#outside.get(id) ?? 0);
  }

  /** Sets `id`'s open state (0: no longer open). */
  #setOpen(id: number, state: number): void {
    let offset = id - this.#base;
    if (offset >= this.#window.length && state !== 0) {
      this.#advance(id);
      offset = id - this.#base;
    }
    if (offset >= 0 && offset < this.#window.length) {
      const before = this.#window[offset] as number;
      this.#window[offset] = state;
      this.#windowOpen += (state !== 0 ? 1 : 0) - (before !== 0 ? 1 : 0);
    } else if (state === 0) this.#outside.delete(id);
    else this.#outside.set(id, state);
  }

  /** Makes the window reach `id` (above it): grown up to its maximum, then slid up, `id` in its middle. */
  #advance(id: number): void {
    const length = this.#window.length;
    if (id - this.#base < WINDOW_MAX) {
      let grown = length;
      while (grown <= id - this.#base) grown *= 2;
      const window = new Uint8Array(grown);
      window.set(this.#window);
      this.#window = window;
      return;
    }
    const base = id + 1 - (length >> 1);
    const shift = Math.min(base - this.#base, length);
    // Ids still open below the new base move to the map (found with indexOf: a native scan).
    const window = this.#window;
    for (const state of [LIVE, QUARANTINED]) {
      if (this.#windowOpen === 0) break;
      for (let at = window.indexOf(state); at !== -1 && at < shift; at = window.indexOf(state, at + 1)) {
        this.#outside.set(this.#base + at, state);
        this.#windowOpen -= 1;
      }
    }
    if (shift < length) window.copyWithin(0, shift);
    window.fill(0, length - shift);
    this.#base = base;
  }
}

/**
 * The one check of a trace's events, shared by `replayTrace`, `replayTraceStream` and the `replay`
 * program: the shape of each event, and each id's history (an id is allocated or mapped once, freed or
 * released once, and only after it was allocated or mapped; a label or stack id is defined once, and named
 * only after). Marks, labels and stacks pass through unchanged (no replay figure depends on them). Any id a trace can hold (a non-negative safe
 * integer) is taken. Memory: the live and quarantined ids, and nothing per released id when ids are given
 * out in order (as every trace writer does; about one bit per id otherwise).
 */
export class TraceValidator {
  readonly #allocations = new IdStates({
    reused: "this id was already allocated",
    unknown: "free of an id never allocated",
    twice: "this id was already freed",
  });
  readonly #mappings = new IdStates({
    reused: "this mapping id was already used",
    unknown: "release of a mapping id never mapped",
    twice: "this mapping was already released",
  });
  // Label and stack ids defined so far ("n", "s"): an event names only a defined one.
  readonly #labels = new Set<number>();
  readonly #stacks = new Set<number>();
  #index = 0;
  #header: TraceHeader | undefined;

  /** Events accepted so far (the header excluded). */
  get events(): number {
    return this.#index;
  }

  /** The header, once one was accepted. */
  get header(): TraceHeader | undefined {
    return this.#header;
  }

  /**
   * The check of `["a", id, bytes]` as the next event, for a caller that read those three itself: accepts it
   * (the id live from now on) and returns `true` when it is valid, else returns `false` with nothing recorded
   * (give the item to {@link check} then, which refuses it with its reason).
   */
  acceptAllocation(id: unknown, bytes: unknown): boolean {
    if (!isByteCount(id) || !isByteCount(bytes) || !this.#allocations.tryOpen(id as number)) return false;
    this.#index += 1;
    return true;
  }

  /** {@link acceptAllocation} for `["f", id]`: accepts the free of a live id. */
  acceptFree(id: unknown): boolean {
    if (!isByteCount(id) || !this.#allocations.tryClose(id as number)) return false;
    this.#index += 1;
    return true;
  }

  /**
   * Checks the next item: a header object (first item only) or an event. Returns the event, or `undefined`
   * for the header.
   *
   * @throws FormatError (`ERR_NUVEC_TRACE_EVENT`) naming the event's position, with nothing recorded.
   */
  check(item: unknown): TraceEvent | undefined {
    const index = this.#index;
    // The two kinds that make up nearly every trace, checked first without the general shape test.
    if (Array.isArray(item)) {
      const tag = item[0];
      if (tag === "a" && item.length === 3) {
        const id = item[1];
        if (isByteCount(id) && isByteCount(item[2]) && this.#allocations.tryOpen(id)) {
          this.#index = index + 1;
          return item as unknown as TraceAllocate;
        }
      } else if (tag === "f" && item.length === 2) {
        const id = item[1];
        if (isByteCount(id) && this.#allocations.tryClose(id)) {
          this.#index = index + 1;
          return item as unknown as TraceFree;
        }
      }
    }
    // Everything else, and every refusal (with its reason), on the general path.
    if (!Array.isArray(item)) {
      if (index === 0 && this.#header === undefined && typeof item === "object" && item !== null) {
        this.#header = item as TraceHeader;
        return undefined;
      }
      throw badEvent(index, item, "an event is an array; only the first item may be a header object");
    }
    if (!isTraceEvent(item)) {
      const tag = item[0];
      if (typeof tag !== "string" || !"afmulcpqrkns".includes(tag) || tag.length !== 1)
        throw badEvent(
          index,
          item,
          'the event tag is none of "a", "f", "m", "u", "l", "c", "p", "q", "r", "k", "n", "s"',
        );
      if ("afmuqrns".includes(tag) && !isByteCount(item[1]))
        throw badEvent(index, item, "the id is not a non-negative integer");
      if (tag === "l" && item[1] !== "memory" && item[1] !== "cache" && item[1] !== "wired")
        throw badEvent(index, item, 'the limit is not "memory", "cache" or "wired"');
      if (tag === "k") throw badEvent(index, item, 'a mark is ["k", name], its name a string');
      if (tag === "n") throw badEvent(index, item, 'a label is ["n", id, text], its text a string');
      if (tag === "s") throw badEvent(index, item, 'a stack is ["s", id, frames], its frames strings');
      throw badEvent(
        index,
        item,
        "wrong arity, or a size, label or stack id that is not a non-negative integer",
      );
    }
    // Labels and stacks: each defined once, named only once defined.
    if (item[0] === "n" || item[0] === "s") {
      const defined = item[0] === "n" ? this.#labels : this.#stacks;
      if (defined.has(item[1]))
        throw badEvent(index, item, `this ${item[0] === "n" ? "label" : "stack"} id was already defined`);
      defined.add(item[1]);
    } else if ((item[0] === "a" || item[0] === "m") && item.length > 3) {
      const label = item[3];
      if (label !== null && label !== undefined && !this.#labels.has(label))
        throw badEvent(index, item, 'a label id never defined (no earlier ["n", id, text])');
      if (item[0] === "a" && item.length === 5 && !this.#stacks.has(item[4]))
        throw badEvent(index, item, 'a stack id never defined (no earlier ["s", id, frames])');
    }
    // An id's history: "a" and "f" of allocations, "m" and "u" of mappings (a trace's two kinds of id).
    const tag = item[0];
    if (tag === "a" || tag === "m")
      (tag === "a" ? this.#allocations : this.#mappings).open(item[1], index, item);
    else if (tag === "f" || tag === "u")
      (tag === "f" ? this.#allocations : this.#mappings).close(item[1], index, item);
    else if (tag === "q") this.#allocations.close(item[1], index, item, QUARANTINED);
    else if (tag === "r") this.#allocations.giveBack(item[1], index, item);
    this.#index = index + 1;
    return item;
  }
}
