// What the Device knows of one stream's progress: how many operations it was given (its position), how far it
// is known to have run, and the event it last recorded for the Device's own ordering. Stream-ordered free
// (order.ts) works on these; the public Stream (stream.ts) wraps one.
import type { NativeEvent, NativeStream } from "@nuvec/metal-native";

/** An internal event and the position it was recorded at. */
interface PositionEvent {
  readonly event: NativeEvent;
  readonly position: number;
}

/** @internal One stream's order: its position and what is known to have completed. */
export class StreamCore {
  readonly native: NativeStream;
  /** Operations enqueued so far (launches, writes, reads, copies): the position after the last one. */
  position = 0;
  /** Every operation up to this position is known to have run. */
  completedThrough = 0;
  /** Released (its work waited for, or dropped at close): every position counts as complete. */
  released = false;
  /** For each other stream, the position of it this stream's later work already waits for. */
  readonly waitedFor = new Map<StreamCore, number>();
  // The last event the Device recorded on this stream for a wait or a host wait, reused while it covers the
  // position asked for.
  #last: PositionEvent | undefined = undefined;

  constructor(native: NativeStream) {
    this.native = native;
  }

  /** Whether everything up to `position` is known to have run; asks the last internal event, never waits. */
  isComplete(position: number): boolean {
    if (this.released || position <= this.completedThrough) return true;
    const last = this.#last;
    if (last === undefined || last.position < position) return false;
    if (!queried(last.event)) return false;
    this.reached(last.position);
    return true;
  }

  /** Everything up to `position` has run (learnt from a done(), a synchronize or an event). */
  reached(position: number): void {
    if (position > this.completedThrough) this.completedThrough = position;
  }

  /** An event that completes once everything up to `position` has run: the last one when it covers it. */
  eventAt(position: number): NativeEvent {
    const last = this.#last;
    if (last !== undefined && last.position >= position) return last.event;
    const event = this.native.record();
    this.#last = { event, position: this.position };
    if (last !== undefined) releaseQuietly(last.event);
    return event;
  }

  /** Makes `other`'s later work wait (device-side) for this stream's work up to `position`. */
  orderBefore(other: StreamCore, position: number): void {
    if (other === this || this.isComplete(position)) return;
    if ((other.waitedFor.get(this) ?? 0) >= position) return;
    other.native.wait(this.eventAt(position));
    other.waitedFor.set(this, Math.max(position, this.#last?.position ?? position));
  }

  /** Waits on this thread until everything up to `position` has run. */
  synchronizeThrough(position: number): void {
    if (this.isComplete(position)) return;
    this.eventAt(position).synchronize();
    this.reached(this.#last?.position ?? position);
  }

  /** Gives back the internal event (at release and close). */
  dropEvent(): void {
    const last = this.#last;
    this.#last = undefined;
    if (last !== undefined) releaseQuietly(last.event);
  }
}

/** An event's query; a failed one counts as complete (failed work runs no more). */
export function queried(event: NativeEvent): boolean {
  try {
    return event.query();
  } catch {
    return true;
  }
}

/** Releases an event, ignoring a backend that already gave it back (a close under it). */
export function releaseQuietly(event: NativeEvent): void {
  try {
    event.release();
  } catch {
    // Released already, or the backend is gone: nothing is held any more.
  }
}
