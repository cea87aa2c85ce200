// The mock's streams and events (NativeStream, NativeEvent of @nuvec/native-core): every call checked and
// logged, the work run in order by the stream's queue (stream-queue.ts) over the mock buffers' bytes.
import type {
  NativeAllocation,
  NativeBuffer,
  NativeEvent,
  NativeKernel,
  NativeKernelArgument,
  NativeLaunchShape,
  NativeModuleSource,
  NativeStream,
} from "@nuvec/native-core";
import { lookAlike, releasedError } from "@nuvec/native-core";
import { ArgumentError, describeValue } from "@nuvec/stats";
import type { MockCore } from "./core.js";
import { isMockKernel, kernelParts, loadMockModule, type MockModule } from "./modules.js";
import { checkArguments, checkShape, checkSpan, namedAllocation } from "./stream-checks.js";
import { type StreamHub, StreamQueue } from "./stream-queue.js";

let streamParts: (stream: MockStream) => { queue: StreamQueue; core: MockCore };
let hasStreamBrand: (value: object) => boolean;
let hasEventBrand: (value: object) => boolean;
let eventParts: (event: MockEvent) => { queue: StreamQueue; position: number; core: MockCore };

/** Whether `value` is a stream a mock backend made (a brand check). */
export function isMockStream(value: unknown): value is MockStream {
  return typeof value === "object" && value !== null && hasStreamBrand(value);
}

/** The queue and backend state of a mock stream. Internal. */
export function mockStreamParts(stream: MockStream): { queue: StreamQueue; core: MockCore } {
  return streamParts(stream);
}

function checkStreamThis(value: unknown, operation: string): asserts value is MockStream {
  if (!isMockStream(value)) throw lookAlike(operation, "this", "a stream of a mock backend");
}

function checkEventThis(value: unknown, operation: string): asserts value is MockEvent {
  if (typeof value !== "object" || value === null || !hasEventBrand(value)) {
    throw lookAlike(operation, "this", "an event of a mock backend");
  }
}

/** The bytes of `source` (a `Uint8Array` or any `ArrayBuffer` view), copied now. */
function bytesOf(source: unknown): Uint8Array {
  if (!ArrayBuffer.isView(source)) {
    throw new ArgumentError(
      "source",
      `write(): source must be a Uint8Array or another ArrayBuffer view, got ${describeValue(source)}`,
    );
  }
  return new Uint8Array(source.buffer, source.byteOffset, source.byteLength).slice();
}

/**
 * A point in a mock stream's order (`MockStream.record()`): complete once every operation enqueued on the
 * stream before it has run. `done()` rejects with the stream's failure when an operation before it failed,
 * and with a `StateError` (`ERR_NUVEC_RELEASED`) when the backend closed before it was reached.
 */
export class MockEvent implements NativeEvent {
  readonly stream: MockStream;
  /** `"event#<id>"`: how the call log names it. */
  readonly label: string;
  readonly #core: MockCore;
  readonly #queue: StreamQueue;
  readonly #position: number;
  #released = false;

  static {
    hasEventBrand = (value) => #position in value;
    eventParts = (event) => ({ queue: event.#queue, position: event.#position, core: event.#core });
  }

  /** Made by {@link MockStream.record} only. */
  constructor(core: MockCore, stream: MockStream, queue: StreamQueue, id: number) {
    this.#core = core;
    this.stream = stream;
    this.#queue = queue;
    this.#position = queue.enqueued;
    this.label = `event#${id}`;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkEventThis(this, "released");
    return this.#released;
  }

  /** Whether every operation before it has run (failed ones included), without running anything. */
  query(): boolean {
    checkEventThis(this, "query()");
    return this.#core.run("event.query", this.label, undefined, () => {
      this.#assertLive("query");
      return this.#queue.completed >= this.#position;
    });
  }

  /** Resolves once it is complete (see the class). */
  done(): Promise<void> {
    checkEventThis(this, "done()");
    return this.#core.run("event.done", this.label, undefined, () => {
      this.#assertLive("done");
      return this.#queue.whenReached(this.#position);
    });
  }

  /**
   * Waits until it is complete: the mock runs the stream's work up to it now (and the work of other streams
   * it waits for), as a device would while the host waits, in either completion mode. Throws the stream's
   * failure when an operation before it failed.
   */
  synchronize(): void {
    checkEventThis(this, "synchronize()");
    this.#core.run("event.synchronize", this.label, undefined, () => {
      this.#assertLive("synchronize");
      this.#queue.runTo(this.#position);
      const failure = this.#queue.failureAt(this.#position);
      if (failure !== undefined) throw failure.error;
      if (this.#queue.completed < this.#position) throw this.#queue.dropped;
    });
  }

  /** Gives it back; a second call throws. A `wait` already enqueued for it still waits. */
  release(): void {
    checkEventThis(this, "release()");
    this.#core.run("event.release", this.label, undefined, () => {
      if (this.#released) throw releasedError(`${this.label}.release(): the event was already released`);
      this.#released = true;
    });
  }

  #assertLive(method: string): void {
    this.#core.assertOpen(`${this.label}.${method}()`);
    if (this.#released) throw releasedError(`${this.label}.${method}(): the event was already released`);
  }
}

/**
 * A mock stream (`MockBackend.newStream()`): an ordered queue of launches, writes, reads, copies and waits.
 * Every call is checked before anything is enqueued (a refused call enqueues nothing and changes no
 * counter); each operation holds the allocations it names until it ran or was dropped, so a buffer released
 * meanwhile keeps its memory (and its place in the counters) until then. When the work runs is the backend's
 * `streams.completion` option: a macrotask after the enqueue (`"auto"`), or `mock.runStream()` (`"manual"`).
 */
export class MockStream implements NativeStream {
  readonly id: number;
  /** `"stream#<id>"`: how the call log names it. */
  readonly label: string;
  readonly #core: MockCore;
  readonly #calls: MockStreamCalls;
  readonly #queue: StreamQueue;
  #released = false;

  static {
    hasStreamBrand = (value) => #queue in value;
    streamParts = (stream) => ({ queue: stream.#queue, core: stream.#core });
  }

  /** Made by `MockBackend.newStream()` only. */
  constructor(core: MockCore, calls: MockStreamCalls, hub: StreamHub, id: number) {
    this.#core = core;
    this.#calls = calls;
    this.id = id;
    this.label = `stream#${id}`;
    this.#queue = new StreamQueue(hub, this.label);
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkStreamThis(this, "released");
    return this.#released;
  }

  /** Operations enqueued that have not run yet. */
  get pending(): number {
    checkStreamThis(this, "pending");
    return this.#queue.pending;
  }

  /**
   * Enqueues a launch: the kernel's `run` gets each buffer argument as a `Uint8Array` over the buffer's
   * memory from its offset, and each scalar as a number (`f32` rounded to single precision) or a bigint.
   */
  launch(kernel: NativeKernel, shape: NativeLaunchShape, args: readonly NativeKernelArgument[]): void {
    checkStreamThis(this, "launch()");
    const name = isMockKernel(kernel) ? kernel.name : undefined;
    this.#core.run("stream.launch", this.label, name, () => {
      this.#assertLive("launch");
      if (!isMockKernel(kernel) || !this.#calls.ownModule(kernel.module)) {
        throw new ArgumentError(
          "kernel",
          "launch(): kernel must be a kernel of a module of this mock backend",
        );
      }
      const { module, run } = kernelParts(kernel);
      if (module.released) {
        throw releasedError(`launch(${kernel.name}): its module (${module.label}) was already released`);
      }
      const checkedShape = checkShape(shape);
      const checked = checkArguments(this.#core, kernel, args);
      const holds = checked.flatMap((argument) =>
        typeof argument === "object" ? [argument.allocation.hold] : [],
      );
      this.#queue.enqueue({
        holds,
        run: () => {
          const values = checked.map((argument) =>
            typeof argument === "object"
              ? argument.allocation.hold.bytes().subarray(argument.offset)
              : argument,
          );
          run(values, checkedShape);
        },
      });
    });
  }

  /** Enqueues a copy of `source`'s bytes (taken now) into `target` at `offset`. */
  write(target: NativeBuffer, offset: number, source: Uint8Array): void {
    checkStreamThis(this, "write()");
    const length = ArrayBuffer.isView(source) ? source.byteLength : undefined;
    this.#core.run("stream.write", this.label, length, () => {
      this.#assertLive("write");
      const into = namedAllocation(this.#core, target, "target", "write()", true);
      const bytes = bytesOf(source);
      checkSpan(offset, bytes.byteLength, into.length, ["offset", "source.byteLength"]);
      this.#queue.enqueue({ holds: [into.hold], run: () => into.hold.bytes().set(bytes, offset) });
    });
  }

  /** Enqueues a copy out of `length` bytes of `source` from `offset`; resolves with them once it ran. */
  read(source: NativeAllocation, offset: number, length: number): Promise<Uint8Array> {
    checkStreamThis(this, "read()");
    return this.#core.run("stream.read", this.label, typeof length === "number" ? length : undefined, () => {
      this.#assertLive("read");
      const from = namedAllocation(this.#core, source, "source", "read()", false);
      checkSpan(offset, length, from.length, ["offset", "length"]);
      let settle: { resolve(bytes: Uint8Array): void; reject(error: unknown): void } | undefined;
      const promise = new Promise<Uint8Array>((resolve, reject) => {
        settle = { resolve, reject };
      });
      promise.catch(() => {}); // see StreamQueue.whenReached
      const { resolve, reject } = settle as NonNullable<typeof settle>;
      this.#queue.enqueue({
        holds: [from.hold],
        run: () => resolve(from.hold.bytes().slice(offset, offset + length)),
        fail: reject,
      });
      return promise;
    });
  }

  /** Enqueues a copy of `length` bytes from `source` at `sourceOffset` to `target` at `targetOffset`. */
  copy(
    target: NativeBuffer,
    targetOffset: number,
    source: NativeAllocation,
    sourceOffset: number,
    length: number,
  ): void {
    checkStreamThis(this, "copy()");
    this.#core.run("stream.copy", this.label, typeof length === "number" ? length : undefined, () => {
      this.#assertLive("copy");
      const into = namedAllocation(this.#core, target, "target", "copy()", true);
      const from = namedAllocation(this.#core, source, "source", "copy()", false);
      checkSpan(sourceOffset, length, from.length, ["sourceOffset", "length"]);
      checkSpan(targetOffset, length, into.length, ["targetOffset", "length"]);
      this.#queue.enqueue({
        holds: [into.hold, from.hold],
        run: () => {
          // A copy of the span first: source and target may be the same memory.
          const bytes = from.hold.bytes().slice(sourceOffset, sourceOffset + length);
          into.hold.bytes().set(bytes, targetOffset);
        },
      });
    });
  }

  /** An event after everything enqueued so far. */
  record(): MockEvent {
    checkStreamThis(this, "record()");
    return this.#core.run("stream.record", this.label, undefined, () => {
      this.#assertLive("record");
      return new MockEvent(this.#core, this, this.#queue, this.#calls.nextEventId());
    });
  }

  /** Later work on this stream waits for `event` (of any stream of this backend). */
  wait(event: NativeEvent): void {
    checkStreamThis(this, "wait()");
    const label =
      typeof event === "object" && event !== null && hasEventBrand(event)
        ? (event as MockEvent).label
        : undefined;
    this.#core.run("stream.wait", this.label, label, () => {
      this.#assertLive("wait");
      if (label === undefined || eventParts(event as MockEvent).core !== this.#core) {
        throw new ArgumentError("event", "wait(): event must be an event of this mock backend");
      }
      const waited = event as MockEvent;
      if (waited.released) throw releasedError(`wait(): ${waited.label} was already released`);
      const { queue, position } = eventParts(waited);
      this.#queue.enqueue({ holds: [], wait: { queue, position }, run: () => {} });
    });
  }

  /** Resolves once everything enqueued so far has run (rejects as {@link MockEvent.done} does). */
  done(): Promise<void> {
    checkStreamThis(this, "done()");
    return this.#core.run("stream.done", this.label, undefined, () => {
      this.#assertLive("done");
      return this.#queue.whenReached(this.#queue.enqueued);
    });
  }

  /** Runs everything enqueued so far now (see {@link MockEvent.synchronize}); throws the stream's failure. */
  synchronize(): void {
    checkStreamThis(this, "synchronize()");
    this.#core.run("stream.synchronize", this.label, undefined, () => {
      this.#assertLive("synchronize");
      const position = this.#queue.enqueued;
      this.#queue.runTo(position);
      const failure = this.#queue.failureAt(position);
      if (failure !== undefined) throw failure.error;
    });
  }

  /** Runs its work (as `synchronize()`, a failure not thrown), then gives it back; a second call throws. */
  release(): void {
    checkStreamThis(this, "release()");
    this.#core.run("stream.release", this.label, undefined, () => {
      this.#assertLive("release");
      this.#queue.runTo(this.#queue.enqueued);
      this.#released = true;
      this.#calls.forget(this.#queue);
    });
  }

  #assertLive(method: string): void {
    this.#core.assertOpen(`${this.label}.${method}()`);
    if (this.#released) throw releasedError(`${this.label}.${method}(): the stream was already released`);
  }
}

/**
 * The stream calls of one mock backend (`newStream`, `loadModule`, `runStream`, and what `close()` does to
 * pending work): the backend wires these in. Internal.
 */
export class MockStreamCalls {
  readonly #core: MockCore;
  readonly #hub: StreamHub;
  readonly #modules = new WeakSet<MockModule>();
  #nextStreamId = 1;
  #nextEventId = 1;
  #nextModuleId = 1;

  constructor(core: MockCore, hub: StreamHub) {
    this.#core = core;
    this.#hub = hub;
  }

  /** A new stream. */
  newStream(): MockStream {
    return this.#core.run("newStream", `stream#${this.#nextStreamId}`, undefined, () => {
      this.#core.assertOpen("newStream()");
      return new MockStream(this.#core, this, this.#hub, this.#nextStreamId++);
    });
  }

  /** The `mock` entry of `source` loaded (see `loadMockModule`). */
  loadModule(source: NativeModuleSource): MockModule {
    return this.#core.run("loadModule", `module#${this.#nextModuleId}`, undefined, () => {
      this.#core.assertOpen("loadModule()");
      const module = loadMockModule(this.#core, this.#nextModuleId, source);
      this.#nextModuleId += 1;
      this.#modules.add(module);
      return module;
    });
  }

  /** Whether `module` was loaded by this backend. */
  ownModule(module: MockModule): boolean {
    return this.#modules.has(module);
  }

  /** The next event's id, taken. */
  nextEventId(): number {
    return this.#nextEventId++;
  }

  /** A released stream's queue leaves the live set. */
  forget(queue: StreamQueue): void {
    this.#hub.queues.delete(queue);
  }

  /** Runs up to `count` operations of `stream` (all it can by default), not waiting for other streams. */
  runStream(stream: unknown, count?: number): number {
    const label = isMockStream(stream) ? stream.label : undefined;
    return this.#core.run("runStream", label, count, () => {
      this.#core.assertOpen("runStream()");
      if (!isMockStream(stream) || mockStreamParts(stream).core !== this.#core) {
        throw new ArgumentError("stream", "runStream(): stream must be a stream of this mock backend");
      }
      if (stream.released) throw releasedError(`runStream(): ${stream.label} was already released`);
      if (count !== undefined && (!Number.isSafeInteger(count) || count < 0)) {
        throw new ArgumentError(
          "count",
          `runStream(): count must be a non-negative safe integer, got ${describeValue(count)}`,
        );
      }
      return mockStreamParts(stream).queue.runReady(count ?? Number.POSITIVE_INFINITY, false);
    });
  }

  /** Drops every stream's pending work, rejecting what waits for it (the backend closes). */
  dropAll(): void {
    this.#hub.dropAll(releasedError("the mock backend was closed with this work pending: it was dropped"));
  }
}
