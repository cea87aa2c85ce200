// The raw interface of a nuvec addon (native/binding.cc of @nuvec/metal-native and of @nuvec/cuda-native):
// handle classes whose methods check their arguments again, for memory safety, and throw plain `Error`s with
// a `code` (and syscall, errno, errnoNumber, path, bytes, argument) that callNative turns into typed errors.
import type { KernelParameterKind } from "../streams.js";
import type { BackendPlatform, NativeCounters } from "../types.js";

/** What the addon's buffer and mapped-file handles have in common. */
export interface RawAllocationHandle {
  readonly length: number;
  readonly allocatedSize: number;
  readonly released: boolean;
  /** After release: the bytes still held for a view moved away, until it is collected; else 0. */
  readonly quarantinedBytes?: number;
  /** Where the addon's {@link SlotCalls} find this handle (see there). */
  readonly slot: number;
  /**
   * An external `ArrayBuffer` over the first `length` bytes (default: all), or a typed refusal (memory the
   * CPU cannot address).
   */
  contents(length?: number): ArrayBuffer;
  /**
   * Detaches the views handed out so far; true when one of them had escaped (moved away by someone else),
   * so the memory must never be reused. An addon that cannot tell returns nothing (read as false).
   */
  detachContents(): boolean | undefined;
  /**
   * A copy of `length` bytes from `offset` (checked again by the addon): into the start of `target` when
   * given (an `ArrayBuffer` of at least `length` bytes), else into a new `ArrayBuffer`; returns the one written.
   */
  read(offset: number, length: number, target?: ArrayBuffer): ArrayBuffer;
  /** Copies `source` (an `ArrayBuffer` or a view of one) in at `offset` (checked again by the addon). */
  write(source: ArrayBuffer | ArrayBufferView, offset: number): void;
  release(): void;
}

/** A buffer handle of the addon (`new addon.NativeBufferHandle(bytes)`). */
export type RawBufferHandle = RawAllocationHandle;

/** A mapped-file handle of the addon (`new addon.NativeMappedFileHandle(path)`). */
export interface RawMappedFileHandle extends RawAllocationHandle {
  readonly mappedLength: number;
}

/** A residency-set handle of the addon (`new addon.NativeResidencySetHandle()`). */
export interface RawResidencySetHandle {
  readonly allocatedSize: number;
  readonly allocationCount: number;
  readonly wiringFailures: number;
  readonly lastWiringError: string | undefined;
  readonly released: boolean;
  add(allocation: RawAllocationHandle): void;
  remove(allocation: RawAllocationHandle): void;
  commit(): void;
  requestResidency(): void;
  endResidency(): void;
  release(): void;
}

/** The device facts as the addon reports them (`addon.facts()`); an addon may report more. */
export interface RawFacts {
  name: string;
  platform: BackendPlatform;
  memorySize: number;
  recommendedMaxWorkingSetSize: number;
  maxBufferLength: number;
  resourceLimit: number;
  pageSize: number;
  supportsResidencySets: boolean;
}

/** What an addon keeps for views: counts that must not grow with the number of views made. */
export interface ViewBookkeeping {
  /** Views on record in the ownership state (handed out and attached, or moved away, not yet ended). */
  readonly records: number;
  /** Views listed for detaching on release. */
  readonly listed: number;
  /** Allocations with such a list. */
  readonly listingAllocations: number;
}

/**
 * The calls made for every view and copy, by a handle's `slot` rather than on the handle object: the addon then
 * finds the handle in a table instead of unwrapping the object (a lookup through the engine's generic
 * property path, the largest cost of a view). A slot that is not a live handle's is refused.
 */
export interface SlotCalls {
  /** `contents(length)` of the handle in `slot`. */
  contentsOf(slot: number, length?: number): ArrayBuffer;
  /** `detachContents()` of the handle in `slot`. */
  detachContentsOf(slot: number): boolean | undefined;
  /** `read(offset, length, target?)` of the handle in `slot`. */
  readOf(slot: number, offset: number, length: number, target?: ArrayBuffer): ArrayBuffer;
  /** `write(source, offset)` of the handle in `slot`. */
  writeOf(slot: number, source: ArrayBuffer | ArrayBufferView, offset: number): void;
}

/** The addon's module: its handle classes and the calls every backend makes. */
export interface RawAddon extends SlotCalls, Partial<RawStreamCalls> {
  NativeBufferHandle: new (bytes: number) => RawBufferHandle;
  NativeMappedFileHandle: new (path: string) => RawMappedFileHandle;
  NativeResidencySetHandle: new () => RawResidencySetHandle;
  facts(): RawFacts;
  counters(): NativeCounters;
  /**
   * The figures of `counters()` written into `values` (a `Float64Array` of the 18 counters, in the order
   * `NativeCounters` lists them), making no object; absent from an addon built before it.
   */
  countersInto?(values: Float64Array): void;
  lastWiringError(): string | undefined;
  attachResidencySet(set: RawResidencySetHandle, commandQueue?: bigint): void;
  /** Renews the teardown sentinel when a view made after it may still be attached (end of a job). */
  secureViews?(): void;
  /** How views are made: V8's backing stores, or Node-API's external ArrayBuffers (the fallback). */
  readonly viewMechanism?: "backing-store" | "node-api";
  /** Why not backing stores, when not. */
  readonly viewMechanismReason?: string;
  /** What the addon keeps for views (see {@link ViewBookkeeping}). */
  viewBookkeeping?(): ViewBookkeeping;
}

/** A kernel handle of the addon (`module.kernel(name, parameters?)`): its name and parameter kinds. */
export interface RawKernelHandle {
  readonly name: string;
  readonly parameters: readonly KernelParameterKind[];
}

/** An event handle of the addon (`stream.record()`). */
export interface RawEventHandle {
  readonly released: boolean;
  /** Whether the work before it ran; throws the typed error of a failure. */
  query(): boolean;
  done(): Promise<void>;
  synchronize(): void;
  release(): void;
}

/**
 * A launch argument as the addon takes it, in the kernel's parameter order: a buffer handle, or
 * `[handle, offset]`; a number for i32, u32, f32 and f64; a bigint for i64 and u64.
 */
export type RawKernelArgument =
  | RawAllocationHandle
  | readonly [RawAllocationHandle, number]
  | number
  | bigint;

/** A stream handle of the addon (`addon.newStream()`). */
export interface RawStreamHandle {
  readonly id: number;
  readonly released: boolean;
  launch(
    kernel: RawKernelHandle,
    grid: readonly number[],
    block: readonly number[],
    sharedBytes: number,
    args: readonly RawKernelArgument[],
  ): void;
  write(target: RawAllocationHandle, offset: number, source: Uint8Array): void;
  read(source: RawAllocationHandle, offset: number, length: number): Promise<Uint8Array>;
  copy(
    target: RawAllocationHandle,
    targetOffset: number,
    source: RawAllocationHandle,
    sourceOffset: number,
    length: number,
  ): void;
  record(): RawEventHandle;
  wait(event: RawEventHandle): void;
  done(): Promise<void>;
  synchronize(): void;
  release(): void;
}

/** A module handle of the addon (`addon.loadModule(kind, text, options?)`). */
export interface RawModuleHandle {
  /** Its kernels' names; `undefined` where the platform cannot list a module's kernels. */
  readonly kernelNames: readonly string[] | undefined;
  readonly released: boolean;
  kernel(name: string, parameters?: readonly KernelParameterKind[]): RawKernelHandle;
  release(): void;
}

/** The stream calls of an addon whose platform has streams (absent from an addon built without them). */
export interface RawStreamCalls {
  /** Why the platform has no streams, or `undefined` when it has them. */
  streamsUnavailable(): string | undefined;
  newStream(): RawStreamHandle;
  loadModule(
    kind: "host" | "cuda" | "ptx" | "metal",
    text: string,
    options?: readonly string[],
  ): RawModuleHandle;
}
