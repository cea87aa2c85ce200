// What a Stream, a KernelModule and a StreamEvent need of their Device: whether it is open, its stream order,
// its buffers resolved and checked, and the promises to settle when it closes. The Device makes one
// (DeviceStreams in device-streams.ts), so the classes here never import the Device.
import type { NativeAllocation } from "@nuvec/metal-native";
import type { BufferState } from "../device-buffer.js";
import type { StreamOrder } from "./order.js";

/**
 * A buffer argument, checked: its state (a mapped file has none), the allocation the backend is given, where
 * the buffer begins in it (`base`), and the buffer's length. Under the segments policy the allocation is the
 * block's segment and `base` the block's offset in it: every backend's streams take whole buffers, and the
 * segment's memory is what the block is.
 */
export interface ResolvedBuffer {
  readonly state: BufferState | undefined;
  readonly native: NativeAllocation | undefined;
  readonly base: number;
  readonly length: number;
}

/** @internal The Device's side of its streams. */
export interface StreamContext {
  /** The Device (what `stream.device` returns, and what ownership is checked against). */
  readonly device: object;
  readonly order: StreamOrder;
  /** True once the device was closed. */
  readonly closed: boolean;
  /** Throws a StateError when the device is closed. */
  checkOpen(operation: string): void;
  /**
   * `value` as a buffer of this device: a live DeviceBuffer or MappedFile of it, else an ArgumentError
   * (`argument` names it) or a StateError (freed).
   */
  resolve(value: unknown, argument: string, operation: string, writable: boolean): ResolvedBuffer;
  /** `promise`, settled by close() with a StateError if the backend has not settled it by then. */
  settleOnClose<T, U = T>(promise: Promise<T>, then?: (value: T) => U): Promise<U>;
}
