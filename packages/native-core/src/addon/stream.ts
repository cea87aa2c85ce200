// A stream and its events over an addon's stream handles (native/napi/stream_handles.h): the NativeStream
// and NativeEvent of streams.ts. Arguments are checked here first (a buffer of this backend, a kernel of it,
// kinds against the kernel's parameters); the addon checks again for memory safety, enqueues nothing when a
// call throws, and keeps every allocation an operation names until the operation has run.
import { ArgumentError } from "@nuvec/stats";
import { checkReadSpan, checkWriteSpan } from "../arguments.js";
import { lookAlike, releasedError } from "../errors.js";
import type {
  NativeEvent,
  NativeKernel,
  NativeKernelArgument,
  NativeLaunchShape,
  NativeStream,
} from "../streams.js";
import type { NativeAllocation, NativeBuffer } from "../types.js";
import { isAddonBufferRange } from "./buffer-range.js";
import { callNative, typedPromise } from "./call.js";
import { isAddonKernel } from "./module.js";
import type { AddonOwner } from "./owner.js";
import { type AllocationKind, ownedHandle } from "./ownership.js";
import type { RawAllocationHandle, RawEventHandle, RawKernelArgument, RawStreamHandle } from "./raw.js";

/** Where an argument's bytes are for the addon: a handle, and where the argument begins in it. */
interface Resolved {
  readonly raw: RawAllocationHandle;
  /** 0 for a buffer or mapped file; a range's offset in its segment. */
  readonly base: number;
  /** The argument's own length. */
  readonly length: number;
  readonly range: boolean;
}

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

  /**
   * The addon's handle for `value`: a buffer or mapped file of this backend, or a range of one of its buffers
   * made in TypeScript (`newBufferRange` where the backend makes ranges without a native object), which is its
   * segment's handle from the range's offset; the queued work then pins the segment.
   */
  #resolve(value: unknown, kind: AllocationKind, argument: string, method: string): Resolved {
    if (isAddonBufferRange(value)) {
      if (value.segment.owner !== this.owner) {
        throw new ArgumentError(argument, `${method}(): the ${argument} must be a ${kind} of this backend`);
      }
      if (value.released || value.segment.released) {
        throw releasedError(`${method}(): the ${argument} was already released`);
      }
      return { raw: value.segment.raw, base: value.offset, length: value.length, range: true };
    }
    const raw = ownedHandle(this.owner, value, kind, argument, method);
    return { raw, base: 0, length: (value as NativeAllocation).length, range: false };
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
        const target = this.#resolve(arg.buffer, "buffer or mapped file", "args", "launch");
        if (arg.buffer.released) throw releasedError(`launch(): argument ${index} was released`);
        const offset = arg.offset ?? 0;
        if (target.range) checkReadSpan(offset, 0, target.length);
        const at = target.base + offset;
        raw.push(at === 0 ? target.raw : [target.raw, at]);
      } else {
        raw.push(arg.value);
      }
    });
    callNative(() => this.raw.launch(kernel.raw, grid, block, sharedBytes, raw));
  }

  /** Enqueues a copy of `source`'s bytes (taken now) into `target` at `offset`. */
  write(target: NativeBuffer, offset: number, source: Uint8Array): void {
    checkStreamThis(this, "write()");
    const to = this.#resolve(target, "buffer", "target", "write");
    if (!(source instanceof Uint8Array))
      throw new ArgumentError("source", "write(): source must be a Uint8Array");
    if (to.range) checkWriteSpan(source, offset, to.length);
    callNative(() => this.raw.write(to.raw, to.base + offset, source));
  }

  /** Enqueues a copy out of `source`; resolves with the bytes once the stream ran it. */
  read(source: NativeAllocation, offset: number, length: number): Promise<Uint8Array> {
    checkStreamThis(this, "read()");
    const from = this.#resolve(source, "buffer or mapped file", "source", "read");
    if (from.range) checkReadSpan(offset, length, from.length);
    return typedPromise(callNative(() => this.raw.read(from.raw, from.base + offset, length)));
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
    const to = this.#resolve(target, "buffer", "target", "copy");
    const from = this.#resolve(source, "buffer or mapped file", "source", "copy");
    if (to.range) checkReadSpan(targetOffset, length, to.length);
    if (from.range) checkReadSpan(sourceOffset, length, from.length);
    callNative(() =>
      this.raw.copy(to.raw, to.base + targetOffset, from.raw, from.base + sourceOffset, length),
    );
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
