// A Device's streams, modules and events, and the context they share (context.ts): what device.newStream(),
// defaultStream, loadModule(), synchronize() and close() do for streams. The Device holds one and adds thin
// methods over it.
import type { NativeBackend, NativeBuffer, NativeModuleSource } from "@nuvec/metal-native";
import { describeValue, type Teardown } from "@nuvec/stats";
import { type BufferState, bufferState, isDeviceBuffer } from "../device-buffer.js";
import { bufferFreed, deviceClosed, foreignBuffer, mappingFreed } from "../errors.js";
import { isMappedFile, mappedFileState } from "../mapped-file.js";
import type { ResolvedBuffer, StreamContext } from "./context.js";
import { badArgument, streamsUnsupported } from "./errors.js";
import type { StreamEvent } from "./event.js";
import { KernelModule } from "./kernel.js";
import type { StreamOrder } from "./order.js";
import { Stream } from "./stream.js";
import { StreamCore } from "./stream-core.js";

// Taken at load, as the Device's other intrinsics (environment.ts): a patched Promise.prototype.then cannot
// leave a stream's promise unsettled at close.
const PromiseIntrinsic = Promise;
const promiseThen = Promise.prototype.then;
const reflectApply = Reflect.apply;

/**
 * The segment and offset of a block the segments policy handed out (the allocation's record), or
 * `undefined` for a buffer of its own (the size-class policies, a 0-byte buffer).
 */
function blockOf(state: BufferState): { segment: { buffer: NativeBuffer }; offset: number } | undefined {
  if (state.allocation.buffer === undefined) return undefined;
  const record = (
    state.allocation as { readonly record?: { segment?: { buffer?: unknown }; offset?: unknown } }
  ).record;
  const segment = record?.segment;
  if (segment?.buffer === undefined || typeof record?.offset !== "number") return undefined;
  return record as { segment: { buffer: NativeBuffer }; offset: number };
}

/** @internal The stream side of one Device. */
export class DeviceStreams implements StreamContext {
  readonly device: object;
  readonly order: StreamOrder;
  readonly #backend: NativeBackend;
  readonly #isClosed: () => boolean;
  readonly #streams = new Map<StreamCore, Stream>();
  readonly #modules = new Set<KernelModule>();
  readonly #events = new Set<StreamEvent>();
  // What close() rejects if the backend has not settled it by then.
  readonly #unsettled = new Set<(error: Error) => void>();
  #default: Stream | undefined = undefined;

  constructor(device: object, backend: NativeBackend, order: StreamOrder, isClosed: () => boolean) {
    this.device = device;
    this.#backend = backend;
    this.order = order;
    this.#isClosed = isClosed;
  }

  get closed(): boolean {
    return this.#isClosed();
  }

  checkOpen(operation: string): void {
    if (this.#isClosed()) throw deviceClosed(operation);
  }

  /** Live streams (the default one included, once made). */
  get streamCount(): number {
    return this.#streams.size;
  }

  resolve(value: unknown, argument: string, operation: string, writable: boolean): ResolvedBuffer {
    if (isDeviceBuffer(value)) {
      if (value.device !== this.device) throw foreignBuffer(operation);
      const state = bufferState(value);
      if (!state.live) throw bufferFreed(operation);
      const block = blockOf(state);
      if (block !== undefined) {
        return { state, native: block.segment.buffer, base: block.offset, length: state.allocation.length };
      }
      return { state, native: state.allocation.buffer, base: 0, length: state.allocation.length };
    }
    if (isMappedFile(value)) {
      if (writable) throw badArgument(operation, argument, "is a mapped file: it is a source only");
      if (value.device !== this.device) throw foreignBuffer(operation);
      const state = mappedFileState(value);
      if (!state.live) throw mappingFreed(operation);
      return { state: undefined, native: state.native, base: 0, length: state.native.length };
    }
    throw badArgument(
      operation,
      argument,
      `must be a DeviceBuffer${writable ? "" : " or a MappedFile"} of this device, got ${describeValue(value)}`,
    );
  }

  settleOnClose<T, U = T>(promise: Promise<T>, then?: (value: T) => U): Promise<U> {
    const settled = new PromiseIntrinsic<U>((resolve, reject) => {
      const rejecter = (error: Error) => reject(error);
      this.#unsettled.add(rejecter);
      reflectApply(promiseThen, promise, [
        (value: T) => {
          this.#unsettled.delete(rejecter);
          if (then === undefined) resolve(value as unknown as U);
          else {
            try {
              resolve(then(value));
            } catch (error) {
              reject(error);
            }
          }
        },
        (error: unknown) => {
          this.#unsettled.delete(rejecter);
          reject(error);
        },
      ]);
    });
    // Marked handled: a rejection the caller awaits later, or never, must not end the process.
    reflectApply(promiseThen, settled, [undefined, () => {}]);
    return settled;
  }

  /** A new stream (`device.newStream()`). */
  newStream(operation = "newStream()"): Stream {
    this.checkOpen(operation);
    const make = this.#backend.newStream;
    if (make === undefined) throw streamsUnsupported(operation, this.#backend);
    const core = new StreamCore(make());
    const stream = new Stream({
      context: this,
      core,
      isDefault: false,
      onRelease: (released) => this.#forget(released),
      events: this.#events,
    });
    this.#streams.set(core, stream);
    return stream;
  }

  /** The device's own stream, made on first use. */
  defaultStream(): Stream {
    this.checkOpen("defaultStream");
    if (this.#default !== undefined) return this.#default;
    const make = this.#backend.newStream;
    if (make === undefined) throw streamsUnsupported("defaultStream", this.#backend);
    const core = new StreamCore(make());
    const stream = new Stream({
      context: this,
      core,
      isDefault: true,
      onRelease: (released) => this.#forget(released),
      events: this.#events,
    });
    this.#streams.set(core, stream);
    this.#default = stream;
    return stream;
  }

  #forget(core: StreamCore): void {
    this.#streams.delete(core);
    core.dropEvent();
    this.order.forget(core);
  }

  /** Kernels from this backend's entry of `source` (`device.loadModule(source)`). */
  loadModule(source: NativeModuleSource): KernelModule {
    this.checkOpen("loadModule()");
    const load = this.#backend.loadModule;
    if (load === undefined) throw streamsUnsupported("loadModule()", this.#backend);
    if (source === null || typeof source !== "object" || Array.isArray(source)) {
      throw badArgument(
        "loadModule()",
        "source",
        `must be an object of entries (cuda, metal, host, mock), got ${describeValue(source)}`,
      );
    }
    const module = new KernelModule(this, load(source), (released) => this.#modules.delete(released));
    this.#modules.add(module);
    return module;
  }

  /** Every stream has run what it was given (a host wait); held buffers whose streams are done go back. */
  synchronize(): void {
    this.checkOpen("synchronize()");
    for (const core of this.#streams.keys()) {
      const position = core.position;
      core.native.synchronize();
      core.reached(position);
    }
    this.order.poll();
  }

  /**
   * The device's close: every stream released (the backend waits for its work, or drops it), every event
   * and module given back, every promise still pending rejected with a StateError, every held buffer given
   * back. Each step runs even when one throws (`teardown`).
   */
  close(teardown: Teardown): void {
    for (const core of [...this.#streams.keys()]) {
      core.released = true;
      teardown.run(() => core.dropEvent());
      teardown.run(() => core.native.release());
    }
    this.#streams.clear();
    for (const event of [...this.#events]) teardown.run(() => event.releaseAtClose());
    this.#events.clear();
    for (const module of [...this.#modules]) teardown.run(() => module.releaseAtClose());
    this.#modules.clear();
    // The error is made only when a promise waits for it: a device that never used a stream pays nothing.
    if (this.#unsettled.size > 0) {
      const error = deviceClosed("the stream's work");
      for (const reject of [...this.#unsettled]) reject(error);
      this.#unsettled.clear();
    }
    teardown.run(() => this.order.releaseAll());
  }
}
