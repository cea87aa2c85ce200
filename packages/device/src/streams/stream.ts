// A stream of a Device: an ordered queue of launches and copies on the device's buffers. Every call is
// checked whole before anything is enqueued (a refused call enqueues nothing and changes no counter); then
// the fences of the buffers' memory become waits, the backend enqueues, and each buffer records that this
// stream used it, up to the stream's new position (what stream-ordered free works from).
import type { NativeKernelArgument } from "@nuvec/metal-native";
import { describeValue } from "@nuvec/stats";
import type { Device } from "../device.js";
import type { BufferState, DeviceBuffer } from "../device-buffer.js";
import { lookAlike } from "../errors.js";
import type { MappedFile } from "../mapped-file.js";
import { checkScalar, checkShape, type LaunchShape, type ScalarArgument } from "./args.js";
import type { ResolvedBuffer, StreamContext } from "./context.js";
import { badArgument, foreignObject, releasedObject } from "./errors.js";
import { eventParts, isStreamEvent, StreamEvent } from "./event.js";
import { isKernel, type Kernel, kernelParts } from "./kernel.js";
import type { StreamCore } from "./stream-core.js";

/** A buffer argument of a launch: a buffer or mapped file (its first byte), or one from `offset`. */
export type BufferArgument =
  | DeviceBuffer
  | MappedFile
  | { readonly buffer: DeviceBuffer | MappedFile; readonly offset: number };

/** One argument of {@link Stream.launch}: a buffer, `{ buffer, offset }`, or a scalar `{ f32: 2 }`, `{ u64: 5n }`. */
export type KernelArgument = BufferArgument | ScalarArgument;

/** Options of {@link Stream.copy}: where in each buffer, and how many bytes (default: the rest of the source). */
export interface StreamCopyOptions {
  readonly targetOffset?: number;
  readonly sourceOffset?: number;
  readonly length?: number;
}

/** @internal What a Stream is made with by its Device. */
export interface StreamSetup {
  readonly context: StreamContext;
  readonly core: StreamCore;
  readonly isDefault: boolean;
  /** Runs at `release()` (the stream leaves the device's books, its fences go). */
  readonly onRelease: (core: StreamCore) => void;
  /** Events recorded and not yet given back, for the device's close. */
  readonly events: Set<StreamEvent>;
}

let setupOf: (stream: Stream) => StreamSetup;
let hasStreamBrand: (value: object) => boolean;

/** @internal Whether `value` is a Stream a Device made (a brand check). */
export function isStream(value: unknown): value is Stream {
  return typeof value === "object" && value !== null && hasStreamBrand(value);
}

/** @internal The core of a stream (its order), for the device. */
export function streamCore(stream: Stream): StreamCore {
  return setupOf(stream).core;
}

function whole(value: unknown, argument: string, operation: string, maximum: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > maximum) {
    throw badArgument(
      operation,
      argument,
      `must be a whole number from 0 to ${maximum}, got ${describeValue(value)}`,
    );
  }
  return value;
}

/** The setup of `value`, a Stream of an open device and not released; else the error saying which. */
function checkedSetup(value: unknown, operation: string): StreamSetup {
  if (!isStream(value)) throw lookAlike(operation, "this", "a Stream made by device.newStream()");
  const setup = setupOf(value);
  setup.context.checkOpen(operation);
  if (setup.core.released) throw releasedObject(operation, "stream");
  return setup;
}

/**
 * The bytes of a write's `source` as one new `Uint8Array` over them (what the backend takes at the call, no
 * copy): its bounds read once, so a view whose own `byteLength` getter answers differently later cannot pass
 * the check with one length and be copied with another. A detached buffer or a view whose bounds do not lie
 * in its buffer is an ArgumentError.
 */
function sourceBytes(source: unknown, operation: string): Uint8Array {
  if (!(source instanceof ArrayBuffer || ArrayBuffer.isView(source))) {
    throw badArgument(
      operation,
      "source",
      `must be an ArrayBuffer or an ArrayBuffer view, got ${describeValue(source)}`,
    );
  }
  try {
    return source instanceof ArrayBuffer
      ? new Uint8Array(source)
      : new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  } catch (error) {
    throw badArgument(
      operation,
      "source",
      `cannot be read: ${error instanceof Error ? error.message : describeValue(error)}`,
    );
  }
}

/** An ordered queue of work on a Device: from {@link Device.newStream} or {@link Device.defaultStream}. */
export class Stream {
  readonly #setup: StreamSetup;

  static {
    setupOf = (stream) => stream.#setup;
    hasStreamBrand = (value) => #setup in value;
  }

  /** @internal Made by the Device. */
  constructor(setup: StreamSetup) {
    this.#setup = setup;
  }

  /** The backend's number for it, unique among the backend's streams (for traces and messages). */
  get id(): number {
    if (!isStream(this)) throw lookAlike("id", "this", "a Stream made by device.newStream()");
    return this.#setup.core.native.id;
  }

  /** The Device it belongs to. */
  get device(): Device {
    if (!isStream(this)) throw lookAlike("device", "this", "a Stream made by device.newStream()");
    return this.#setup.context.device as Device;
  }

  /** True once released (by `release()` or the device's close). */
  get released(): boolean {
    if (!isStream(this)) throw lookAlike("released", "this", "a Stream made by device.newStream()");
    return this.#setup.core.released || this.#setup.context.closed;
  }

  /** Operations enqueued so far (launches, writes, reads and copies): the stream's position. */
  get position(): number {
    if (!isStream(this)) throw lookAlike("position", "this", "a Stream made by device.newStream()");
    return this.#setup.core.position;
  }

  /**
   * Enqueues a launch of `kernel` over `shape` with `args`, one per parameter of `kernel.parameters`: a
   * buffer (or mapped file) or `{ buffer, offset }` for `"buffer"`, `{ [kind]: value }` for a scalar.
   */
  launch(kernel: Kernel, shape: LaunchShape, args: readonly KernelArgument[]): void {
    const { context, core } = checkedSetup(this, "launch()");
    const operation = "launch()";
    if (!isKernel(kernel))
      throw badArgument(
        operation,
        "kernel",
        `must be a Kernel from module.kernel(), got ${describeValue(kernel)}`,
      );
    const parts = kernelParts(kernel);
    if (parts.context !== context) throw foreignObject(operation, "kernel", "kernel");
    if (parts.module.released) throw releasedObject(operation, "module");
    const checkedShape = checkShape(shape, operation);
    const parameters = kernel.parameters;
    if (!Array.isArray(args) || args.length !== parameters.length) {
      throw badArgument(
        operation,
        "args",
        `must be an array of ${parameters.length} arguments (${parameters.join(", ")}), got ${Array.isArray(args) ? `${args.length}` : describeValue(args)}`,
      );
    }
    const natives: NativeKernelArgument[] = [];
    const states: BufferState[] = [];
    for (let index = 0; index < parameters.length; index += 1) {
      const kind = parameters[index]!;
      const value: unknown = args[index];
      const argument = `args[${index}]`;
      if (kind !== "buffer") {
        natives.push(checkScalar(kind, value, argument, operation));
        continue;
      }
      const { resolved, offset } = this.#bufferArgument(context, value, argument);
      if (resolved.state !== undefined) states.push(resolved.state);
      natives.push(
        Object.freeze({ kind: "buffer", buffer: resolved.native!, offset: resolved.base + offset }),
      );
    }
    this.#enqueue(core, states, () => core.native.launch(parts.native, checkedShape, Object.freeze(natives)));
  }

  #bufferArgument(
    context: StreamContext,
    value: unknown,
    argument: string,
  ): { resolved: ResolvedBuffer; offset: number } {
    const operation = "launch()";
    let target = value;
    let offset = 0;
    if (value !== null && typeof value === "object" && Object.hasOwn(value, "buffer")) {
      const keys = Object.keys(value);
      if (keys.some((key) => key !== "buffer" && key !== "offset")) {
        throw badArgument(operation, argument, "must be a buffer or { buffer, offset }");
      }
      target = (value as { buffer: unknown }).buffer;
      offset = (value as { offset?: unknown }).offset as number;
      if (offset === undefined) offset = 0;
    }
    const resolved = context.resolve(target, argument, operation, false);
    if (resolved.native === undefined) {
      throw badArgument(operation, argument, "is a 0-byte buffer: it has no memory for a kernel");
    }
    if (
      typeof offset !== "number" ||
      !Number.isSafeInteger(offset) ||
      offset < 0 ||
      offset >= resolved.length
    ) {
      throw badArgument(
        operation,
        `${argument}.offset`,
        `must be a whole number from 0 to ${resolved.length - 1} (inside the ${resolved.length}-byte buffer), got ${describeValue(offset)}`,
      );
    }
    return { resolved, offset };
  }

  /**
   * Enqueues a copy of `source`'s bytes (taken at the call) into `buffer` at `offset` (default 0); they must
   * fit. An empty source enqueues nothing.
   */
  write(buffer: DeviceBuffer, source: ArrayBuffer | ArrayBufferView, offset = 0): void {
    const { context, core } = checkedSetup(this, "write()");
    const operation = "write()";
    const target = context.resolve(buffer, "buffer", operation, true);
    const bytes = sourceBytes(source, operation);
    whole(offset, "offset", operation, target.length);
    if (bytes.byteLength > target.length - offset) {
      throw badArgument(
        operation,
        "source",
        `of ${bytes.byteLength} bytes does not fit at offset ${offset} of a ${target.length}-byte buffer`,
      );
    }
    if (bytes.byteLength === 0) return;
    this.#enqueue(core, [target.state!], () =>
      core.native.write(target.native as never, target.base + offset, bytes),
    );
  }

  /**
   * Enqueues a copy of `length` bytes of `buffer` (or a mapped file) from `offset` (default: from 0 to the
   * end); resolves with them once the stream ran it. Rejects with a StateError when the device closes first.
   */
  read(buffer: DeviceBuffer | MappedFile, offset = 0, length?: number): Promise<Uint8Array> {
    const { context, core } = checkedSetup(this, "read()");
    const operation = "read()";
    const source = context.resolve(buffer, "buffer", operation, false);
    whole(offset, "offset", operation, source.length);
    const count =
      length === undefined
        ? source.length - offset
        : whole(length, "length", operation, source.length - offset);
    if (count === 0) return Promise.resolve(new Uint8Array(0));
    let promise: Promise<Uint8Array> | undefined;
    this.#enqueue(core, source.state === undefined ? [] : [source.state], () => {
      promise = core.native.read(source.native!, source.base + offset, count);
    });
    return context.settleOnClose(promise!);
  }

  /**
   * Enqueues a device-side copy of `length` bytes (default: the rest of the source) from `source` (a buffer
   * or a mapped file) at `sourceOffset` to `target` at `targetOffset`. Overlapping spans of one buffer are
   * refused.
   */
  copy(target: DeviceBuffer, source: DeviceBuffer | MappedFile, options: StreamCopyOptions = {}): void {
    const { context, core } = checkedSetup(this, "copy()");
    const operation = "copy()";
    const to = context.resolve(target, "target", operation, true);
    const from = context.resolve(source, "source", operation, false);
    if (options === null || typeof options !== "object") {
      throw badArgument(
        operation,
        "options",
        `must be { targetOffset?, sourceOffset?, length? }, got ${describeValue(options)}`,
      );
    }
    for (const key of Object.keys(options)) {
      if (key !== "targetOffset" && key !== "sourceOffset" && key !== "length") {
        throw badArgument(
          operation,
          "options",
          `has an unknown key "${key}" (targetOffset, sourceOffset, length)`,
        );
      }
    }
    const targetOffset = whole(options.targetOffset ?? 0, "options.targetOffset", operation, to.length);
    const sourceOffset = whole(options.sourceOffset ?? 0, "options.sourceOffset", operation, from.length);
    const length =
      options.length === undefined
        ? from.length - sourceOffset
        : whole(options.length, "options.length", operation, from.length - sourceOffset);
    if (length > to.length - targetOffset) {
      throw badArgument(
        operation,
        "options.length",
        `${length} bytes do not fit at offset ${targetOffset} of a ${to.length}-byte target`,
      );
    }
    const [targetStart, sourceStart] = [to.base + targetOffset, from.base + sourceOffset];
    if (
      to.native === from.native &&
      targetStart < sourceStart + length &&
      sourceStart < targetStart + length
    ) {
      throw badArgument(operation, "options", "the source and target spans of one buffer overlap");
    }
    if (length === 0) return;
    const states = [to.state!];
    if (from.state !== undefined && from.state !== to.state) states.push(from.state);
    this.#enqueue(core, states, () =>
      core.native.copy(to.native as never, targetStart, from.native!, sourceStart, length),
    );
  }

  /** The one way work is enqueued: fences honoured, the backend called, then the uses recorded. */
  #enqueue(core: StreamCore, states: readonly BufferState[], call: () => void): void {
    const order = setupOf(this).context.order;
    for (const state of states) order.beforeUse(state, core);
    call();
    core.position += 1;
    for (const state of states) order.used(state, core);
  }

  /** An event after everything enqueued so far. Release it (or `using`) when done; close releases it too. */
  record(): StreamEvent {
    const { context, core, events } = checkedSetup(this, "record()");
    const native = core.native.record();
    const event = new StreamEvent(context, core, native, (settled) => events.delete(settled));
    events.add(event);
    return event;
  }

  /** Later work on this stream waits for `event` (of any stream of this device), without the host. */
  wait(event: StreamEvent): void {
    const { context, core } = checkedSetup(this, "wait()");
    if (!isStreamEvent(event))
      throw badArgument(
        "wait()",
        "event",
        `must be a StreamEvent from stream.record(), got ${describeValue(event)}`,
      );
    const parts = eventParts(event);
    if (parts.context !== context) throw foreignObject("wait()", "event", "event");
    if (event.released) throw releasedObject("wait()", "event");
    if (parts.core === core || event.completed) return;
    core.native.wait(event.nativeEvent()!);
    if ((core.waitedFor.get(parts.core) ?? 0) < parts.position)
      core.waitedFor.set(parts.core, parts.position);
  }

  /** Resolves once everything enqueued so far has run (rejects with a StateError when the device closes first). */
  done(): Promise<void> {
    const { context, core } = checkedSetup(this, "done()");
    const position = core.position;
    return context.settleOnClose(core.native.done(), () => core.reached(position));
  }

  /** Waits on this thread until everything enqueued so far has run. */
  synchronize(): void {
    const { core } = checkedSetup(this, "synchronize()");
    const position = core.position;
    core.native.synchronize();
    core.reached(position);
  }

  /**
   * Waits for its work, then gives back what it holds. A second call throws a StateError; the default
   * stream is the device's (released by its close) and refuses.
   */
  release(): void {
    const setup = checkedSetup(this, "release()");
    if (setup.isDefault) {
      throw badArgument("release()", "this", "is the device's default stream: device.close() releases it");
    }
    setup.core.released = true;
    setup.onRelease(setup.core);
    setup.core.native.release();
  }

  /** `using stream = device.newStream()` releases it at the end of the scope (the default stream: nothing). */
  [Symbol.dispose](): void {
    if (!isStream(this)) throw lookAlike("[Symbol.dispose]()", "this", "a Stream made by device.newStream()");
    const setup = this.#setup;
    if (!setup.isDefault && !setup.core.released && !setup.context.closed) this.release();
  }
}
