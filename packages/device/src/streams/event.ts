// An event recorded on a stream: a point in its order that the host can await and other streams can wait
// for. Its backend event is given back as soon as it is known to have completed (or when it is released, or
// the device closes).
import type { NativeEvent } from "@nuvec/metal-native";
import { lookAlike } from "../errors.js";
import type { StreamContext } from "./context.js";
import { releasedObject } from "./errors.js";
import { queried, releaseQuietly, type StreamCore } from "./stream-core.js";

let partsOf: (event: StreamEvent) => { core: StreamCore; position: number; context: StreamContext };
let hasEventBrand: (value: object) => boolean;

/** @internal Whether `value` is a StreamEvent a Stream recorded (a brand check). */
export function isStreamEvent(value: unknown): value is StreamEvent {
  return typeof value === "object" && value !== null && hasEventBrand(value);
}

/** @internal The stream, position and context of `event`. */
export function eventParts(event: StreamEvent): {
  core: StreamCore;
  position: number;
  context: StreamContext;
} {
  return partsOf(event);
}

function checkEvent(value: unknown, operation: string): void {
  if (!isStreamEvent(value)) throw lookAlike(operation, "this", "a StreamEvent made by stream.record()");
}

/** A point in a stream's order, from {@link Stream.record}: complete once the work enqueued before it ran. */
export class StreamEvent {
  readonly #context: StreamContext;
  readonly #core: StreamCore;
  readonly #position: number;
  readonly #onSettle: (event: StreamEvent) => void;
  #native: NativeEvent | undefined;
  #completed = false;
  #released = false;

  static {
    partsOf = (event) => ({ core: event.#core, position: event.#position, context: event.#context });
    hasEventBrand = (value) => #core in value;
  }

  /** @internal Made by {@link Stream.record}; `onSettle` runs once its backend event is given back. */
  constructor(
    context: StreamContext,
    core: StreamCore,
    native: NativeEvent,
    onSettle: (event: StreamEvent) => void,
  ) {
    this.#context = context;
    this.#core = core;
    this.#position = core.position;
    this.#native = native;
    this.#onSettle = onSettle;
  }

  /** Whether the work before it has run, without waiting. */
  get completed(): boolean {
    checkEvent(this, "completed");
    if (this.#completed || this.#native === undefined || this.#context.closed) return this.#completed;
    if (queried(this.#native)) this.#complete();
    return this.#completed;
  }

  /** True once released (by `release()`, or the device's close). */
  get released(): boolean {
    checkEvent(this, "released");
    return this.#released;
  }

  /** Resolves once the work before it has run (rejects with a StateError when the device closes first). */
  done(): Promise<void> {
    checkEvent(this, "done()");
    if (this.#completed) return Promise.resolve();
    this.#context.checkOpen("done()");
    if (this.#released || this.#native === undefined) {
      const refused = Promise.reject(releasedObject("done()", "event"));
      refused.catch(() => {}); // marked handled, as every promise of a stream is
      return refused;
    }
    return this.#context.settleOnClose(this.#native.done(), () => this.#complete());
  }

  /** Waits on this thread until the work before it has run. */
  synchronize(): void {
    checkEvent(this, "synchronize()");
    if (this.#completed) return;
    this.#context.checkOpen("synchronize()");
    if (this.#released || this.#native === undefined) throw releasedObject("synchronize()", "event");
    this.#native.synchronize();
    this.#complete();
  }

  /** Gives back what it holds; a second call throws a StateError. */
  release(): void {
    checkEvent(this, "release()");
    if (this.#released) throw releasedObject("release()", "event");
    this.#released = true;
    this.#giveBack();
  }

  /** `using event = stream.record()` releases it at the end of the scope (once). */
  [Symbol.dispose](): void {
    checkEvent(this, "[Symbol.dispose]()");
    if (!this.#released) this.release();
  }

  /** @internal The backend event, while held (a wait on a completed event needs none). */
  nativeEvent(): NativeEvent | undefined {
    return this.#native;
  }

  /** @internal The device's close: the backend event is given back. */
  releaseAtClose(): void {
    this.#released = true;
    this.#giveBack();
  }

  #complete(): void {
    if (this.#completed) return;
    this.#completed = true;
    this.#core.reached(this.#position);
    this.#giveBack();
  }

  #giveBack(): void {
    const native = this.#native;
    if (native === undefined) return;
    this.#native = undefined;
    releaseQuietly(native);
    this.#onSettle(this);
  }
}
