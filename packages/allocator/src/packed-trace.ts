// A trace checked once and kept in typed arrays, for replaying the same events many times (comparing
// policies, sweeping limits): `replayTrace(packTrace(events), options)` gives the figures of
// `replayTrace(events, options)` without reading event arrays or checking ids again on each replay.

import type { TraceEvent, TraceHeader } from "./trace-format.js";
import { TraceIdMap } from "./trace-ids.js";
import { TraceValidator } from "./trace-validator.js";

/** An allocation: `values` holds its byte count, `slots` the live slot it fills. */
export const PACKED_ALLOCATE = 0;
/** A free: `slots` holds the live slot it empties. */
export const PACKED_FREE = 1;
/** A quarantine: `slots` holds the live slot it empties, `values` the event's position in `others`. */
export const PACKED_QUARANTINE = 2;
/** Any other event: `values` holds its position in `others`. */
export const PACKED_OTHER = 3;

/** What a replay reads of a packed trace (internal to the package). */
export interface PackedParts {
  readonly kinds: Uint8Array;
  readonly values: Float64Array;
  readonly slots: Int32Array;
  readonly others: readonly TraceEvent[];
  readonly slotCount: number;
}

/** A packed trace's parts, for the replay (not exported from the package's entry). */
export let packedPartsOf: (trace: PackedTrace) => PackedParts;

/**
 * A whole trace, checked, in typed arrays: about 13 bytes per event, whatever the events' shape. Made by
 * {@link packTrace}; {@link replayTrace} takes it in place of the events. Allocation ids are replaced by
 * live slots (reused as allocations are freed), so a replay keeps its live allocations in an array as
 * long as the most the trace holds live at once.
 */
export class PackedTrace {
  /** The trace's header, when the events began with one. */
  readonly header: TraceHeader | undefined;
  /** Events (the header excluded). */
  readonly events: number;
  readonly #parts: PackedParts;

  static {
    packedPartsOf = (trace) => trace.#parts;
  }

  private constructor(header: TraceHeader | undefined, parts: PackedParts) {
    this.header = header;
    this.events = parts.kinds.length;
    this.#parts = parts;
  }

  /** @internal See {@link packTrace}. */
  static pack(items: Iterable<unknown>): PackedTrace {
    const validator = new TraceValidator();
    let capacity = Array.isArray(items) ? items.length : 1024;
    let kinds = new Uint8Array(capacity);
    let values = new Float64Array(capacity);
    let slots = new Int32Array(capacity);
    const others: TraceEvent[] = [];
    const slotOfId = new TraceIdMap<number>();
    const freeSlots: number[] = [];
    let slotCount = 0;
    let count = 0;
    for (const item of items) {
      const event = validator.check(item);
      if (event === undefined) continue;
      if (count === capacity) {
        capacity *= 2;
        kinds = grown(kinds, new Uint8Array(capacity));
        values = grown(values, new Float64Array(capacity));
        slots = grown(slots, new Int32Array(capacity));
      }
      const tag = event[0];
      if (tag === "a") {
        const slot = freeSlots.length > 0 ? (freeSlots.pop() as number) : slotCount++;
        slotOfId.set(event[1], slot);
        kinds[count] = PACKED_ALLOCATE;
        values[count] = event[2];
        slots[count] = slot;
      } else if (tag === "f" || tag === "q") {
        // The validator let through only a live id: it has a slot.
        const slot = slotOfId.get(event[1]) as number;
        slotOfId.delete(event[1]);
        freeSlots.push(slot);
        slots[count] = slot;
        if (tag === "f") kinds[count] = PACKED_FREE;
        else {
          kinds[count] = PACKED_QUARANTINE;
          values[count] = others.length;
          others.push(event);
        }
      } else {
        kinds[count] = PACKED_OTHER;
        values[count] = others.length;
        others.push(event);
      }
      count++;
    }
    return new PackedTrace(validator.header, {
      kinds: kinds.subarray(0, count),
      values: values.subarray(0, count),
      slots: slots.subarray(0, count),
      others,
      slotCount,
    });
  }
}

function grown<T extends Uint8Array | Float64Array | Int32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}

/**
 * Checks a trace's items (an optional header object first, then events) as a replay does and packs them
 * for {@link replayTrace}, which replays a {@link PackedTrace} with the figures of the items themselves,
 * under any options. For a trace replayed more than once: the check and the reading of event arrays are
 * paid here, once.
 *
 * @throws FormatError (`ERR_NUVEC_TRACE_EVENT`) for an impossible event, as a replay of the items would:
 * nothing is packed then.
 */
export function packTrace(items: Iterable<TraceEvent | TraceHeader>): PackedTrace {
  return PackedTrace.pack(items);
}
