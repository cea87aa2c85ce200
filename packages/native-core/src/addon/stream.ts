// A stream and its events over an addon's stream handles (native/napi/stream_handles.h): the NativeStream
// and NativeEvent of streams.ts. Arguments are checked here first (a buffer of this backend, a kernel of it,
// kinds against the kernel's parameters); the addon checks again for memory safety, enqueues nothing when a
// call throws, and keeps every allocation an operation names until the operation has run.
import { ArgumentError } from "@nuvec/stats";
import { lookAlike, releasedError } from "../errors.js";
import type {
  NativeEvent,
  NativeKernel,
  NativeKernelArgument,
  NativeLaunchShape,
  NativeStream,
} from "../streams.js";
import type { NativeAllocation, NativeBuffer } from "../types.js";
import { callNative, typedPromise } from "./call.js";
import { isAddonKernel } from "./module.js";
import type { AddonOwner } from "./owner.js";
import { ownedHandle } from "./ownership.js";
import type { RawEventHandle, RawKernelArgument, RawStreamHandle } from "./raw.js";

let hasStreamBrand: (value: object) => boolean;
let hasEventBrand: (value: object) => boolean;

/** @internal Whether `value` is a stream an addon backend made (a brand check). */
export function isAddonStream(value: unknown): value is AddonStream {
  return typeof value === "object" && value !== null && hasStreamBrand(value);
}

/** @internal Whether `value` is an event an addon stream recorded (a brand check). */
export function isAddonEvent(value: unknown): value is AddonEvent {
  return typeof value === "object" && value !== null && hasEventBrand(value);
}

function checkStreamThis(value: unknown, operation: string): asserts value is AddonStream {
  if (!isAddonStream(value)) throw lookAlike(operation, "this", "a stream of a backend");
}

function checkEventThis(value: unknown, operation: string): asserts value is AddonEvent {
  if (!isAddonEvent(value)) throw lookAlike(operation, "this", "an event of a stream");
}

/** A launch dimension list: 1 to 3 positive whole numbers below 2^32. */
function checkDimensions(value: unknown, name: string): readonly number[] {
  if (!Array.isArray(value) || value.length < 1 || value.length > 3) {
    throw new ArgumentError(name, `launch(): ${name} must be 1 to 3 dimensions`);
  }
  for (const size of value) {
    if (!Number.isInteger(size) || size < 1 || size > 0xffffffff) {
      throw new ArgumentError(name, `launch(): ${name} dimensions must be whole numbers from 1 to 2^32 - 1`);
    }
  }
  return value as readonly number[];
}

/** An ordered queue of work on an addon's device (see {@link NativeStream}). */
export class AddonStream implements NativeStream {
  /** @internal */
  readonly raw: RawStreamHandle;
  /** @internal */
  readonly owner: AddonOwner;
  /** A number unique among this backend's streams. */
  readonly id: number;
  #released = false;

  static {
    hasStreamBrand = (value) => #released in value;
  }

  /** @internal Wraps a stream handle that `owner`'s addon made (the backend's `newStream`). */
  constructor(raw: RawStreamHandle, owner: AddonOwner) {
    this.raw = raw;
    this.owner = owner;
    this.id = raw.id;
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkStreamThis(this, "released");
    return this.#released;
  }

  /** Enqueues a launch of `kernel` (of this backend) with `args`, checked against its parameters. */
  launch(kernel: NativeKernel, shape: NativeLaunchShape, args: readonly NativeKernelArgument[]): void {
    checkStreamThis(this, "launch()");
    if (!isAddonKernel(kernel) || kernel.owner !== this.owner) {
      throw new ArgumentError("kernel", "launch(): the kernel must be a kernel of a module of this backend");
    }
    if (typeof shape !== "object" || shape === null) {
      throw new ArgumentError("shape", "launch(): shape must be { grid, block, sharedBytes }");
    }
    const grid = checkDimensions(shape.grid, "grid");
    const block = checkDimensions(shape.block, "block");
    const sharedBytes = shape.sharedBytes ?? 0;
    if (!Number.isInteger(sharedBytes) || sharedBytes < 0 || sharedBytes > 0xffffffff) {
      throw new ArgumentError("sharedBytes", "launch(): sharedBytes must be a whole number of bytes");
    }
    const parameters = kernel.parameters;
    if (!Array.isArray(args) || args.length !== parameters.length) {
      throw new ArgumentError(
        "args",
        `launch(): the kernel ${kernel.name} takes ${parameters.length} arguments, got ${Array.isArray(args) ? args.length : "no array"}`,
      );
    }
    const raw: RawKernelArgument[] = [];
    parameters.forEach((kind, index) => {
      const arg = args[index] as NativeKernelArgument | undefined;
      if (typeof arg !== "object" || arg === null || arg.kind !== kind) {
        throw new ArgumentError("args", `launch(): argument ${index} of ${kernel.name} must be a ${kind}`);
      }
      if (arg.kind === "buffer") {
        const handle = ownedHandle(this.owner, arg.buffer, "buffer or mapped file", "args", "launch");
        if (arg.buffer.released) throw releasedError(`launch(): argument ${index} was released`);
        raw.push(arg.offset === 0 || arg.offset === undefined ? handle : [handle, arg.offset]);
      } else {
        raw.push(arg.value);
      }
    });
    callNative(() => this.raw.launch(kernel.raw, grid, block, sharedBytes, raw));
  }

  /** Enqueues a copy of `source`'s bytes (taken now) into `target` at `offset`. */
  write(target: NativeBuffer, offset: number, source: Uint8Array): void {
    checkStreamThis(this, "write()");
    const handle = ownedHandle(this.owner, target, "buffer", "target", "write");
    if (!(source instanceof Uint8Array))
      throw new ArgumentError("source", "write(): source must be a Uint8Array");
    callNative(() => this.raw.write(handle, offset, source));
  }

  /** Enqueues a copy out of `source`; resolves with the bytes once the stream ran it. */
  read(source: NativeAllocation, offset: number, length: number): Promise<Uint8Array> {
    checkStreamThis(this, "read()");
    const handle = ownedHandle(this.owner, source, "buffer or mapped file", "source", "read");
    return typedPromise(callNative(() => this.raw.read(handle, offset, length)));
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
    const to = ownedHandle(this.owner, target, "buffer", "target", "copy");
    const from = ownedHandle(this.owner, source, "buffer or mapped file", "source", "copy");
    callNative(() => this.raw.copy(to, targetOffset, from, sourceOffset, length));
  }

  /** An event after everything enqueued so far. */
  record(): NativeEvent {
    checkStreamThis(this, "record()");
    return new AddonEvent(
      callNative(() => this.raw.record()),
      this,
    );
  }

  /** Later work on this stream waits for `event` (of any stream of this backend), without the host. */
  wait(event: NativeEvent): void {
    checkStreamThis(this, "wait()");
    if (!isAddonEvent(event) || event.stream.owner !== this.owner) {
      throw new ArgumentError("event", "wait(): the event must be an event of a stream of this backend");
    }
    callNative(() => this.raw.wait(event.raw));
  }

  /** Resolves once everything enqueued so far has run (rejects with the first failure's typed error). */
  done(): Promise<void> {
    checkStreamThis(this, "done()");
    return typedPromise(callNative(() => this.raw.done()));
  }

  /** Waits on this thread until everything enqueued so far has run. */
  synchronize(): void {
    checkStreamThis(this, "synchronize()");
    callNative(() => this.raw.synchronize());
  }

  /** Waits for its work, then gives the stream back; a second call throws. */
  release(): void {
    checkStreamThis(this, "release()");
    if (this.#released) throw releasedError("release(): this stream was already released");
    callNative(() => this.raw.release());
    this.#released = true;
  }
}

/** A point in one stream's order (see {@link NativeEvent}). */
export class AddonEvent implements NativeEvent {
  /** @internal */
  readonly raw: RawEventHandle;
  /** The stream it was recorded on. */
  readonly stream: AddonStream;
  #released = false;

  static {
    hasEventBrand = (value) => #released in value;
  }

  /** @internal Wraps an event handle that `stream` recorded. */
  constructor(raw: RawEventHandle, stream: AddonStream) {
    this.raw = raw;
    this.stream = stream;
  }

  /** Whether the work before it has run; throws the typed error of its failure. */
  query(): boolean {
    checkEventThis(this, "query()");
    return callNative(() => this.raw.query());
  }

  /** Resolves once it has completed. */
  done(): Promise<void> {
    checkEventThis(this, "done()");
    return typedPromise(callNative(() => this.raw.done()));
  }

  /** Waits on this thread until it has completed. */
  synchronize(): void {
    checkEventThis(this, "synchronize()");
    callNative(() => this.raw.synchronize());
  }

  /** Gives back what it holds; a second call throws. */
  release(): void {
    checkEventThis(this, "release()");
    if (this.#released) throw releasedError("release(): this event was already released");
    callNative(() => this.raw.release());
    this.#released = true;
  }
}
