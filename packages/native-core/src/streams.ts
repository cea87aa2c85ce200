// Streams, events and kernels: the part of a backend that runs work on its memory, in order. Every backend
// that has them implements these interfaces (the mock in TypeScript, the host with worker threads, CUDA with
// the driver's streams, Metal with command queues); the Device checks every argument before a call reaches
// them, and the contract suite pins what each must do alike.
import type { NativeAllocation, NativeBuffer } from "./types.js";

/** The kinds a kernel parameter can have: a buffer (its device address), or a scalar of the named type. */
export type KernelParameterKind = "buffer" | "i32" | "u32" | "f32" | "i64" | "u64" | "f64";

/** Every {@link KernelParameterKind}, the one list the argument checks use. */
export const KERNEL_PARAMETER_KINDS: readonly KernelParameterKind[] = Object.freeze([
  "buffer",
  "i32",
  "u32",
  "f32",
  "i64",
  "u64",
  "f64",
]);

/**
 * One argument of a launch, as a backend receives it (already checked by the Device): a buffer, or the part
 * of one from `offset` (the kernel sees the address of that byte), or a scalar. Scalars of 64-bit integer
 * kinds are bigints, the others numbers.
 */
export type NativeKernelArgument =
  | { readonly kind: "buffer"; readonly buffer: NativeAllocation; readonly offset: number }
  | { readonly kind: "i32" | "u32" | "f32" | "f64"; readonly value: number }
  | { readonly kind: "i64" | "u64"; readonly value: bigint };

/** The shape of a launch: blocks in the grid, threads in a block, and dynamic shared memory in bytes. */
export interface NativeLaunchShape {
  readonly grid: readonly [number, number, number];
  readonly block: readonly [number, number, number];
  readonly sharedBytes: number;
}

/** A kernel of a loaded module: its name and the parameters it takes, in order. */
export interface NativeKernel {
  readonly name: string;
  readonly parameters: readonly KernelParameterKind[];
}

/**
 * A kernel the mock backend runs, in TypeScript: `run` gets the arguments of a launch with each buffer as the
 * bytes it names (a `Uint8Array` over the buffer's memory from the argument's offset), and the launch shape.
 */
export interface MockKernel {
  readonly parameters: readonly KernelParameterKind[];
  run(args: readonly (Uint8Array | number | bigint)[], shape: NativeLaunchShape): void;
}

/**
 * What a module is loaded from, one entry per backend kind (a runtime passes all it has and each backend
 * takes its own):
 * - `cuda`: CUDA C source, compiled at run time with NVRTC (loaded with `dlopen` where present), or `{ ptx }`
 *   for PTX text; `options` are NVRTC's (`-arch` defaults to the device's);
 * - `metal`: Metal Shading Language source (`newLibraryWithSource:`);
 * - `host`: the path of a shared library (a native addon is one) that exports the kernel table
 *   `nuvec_host_kernels` (see the host backend's README for its C declaration);
 * - `mock`: kernels in TypeScript, by name.
 */
export interface NativeModuleSource {
  readonly cuda?:
    | string
    | { readonly source: string; readonly options?: readonly string[] }
    | { readonly ptx: string };
  readonly metal?: string;
  readonly host?: string;
  readonly mock?: Readonly<Record<string, MockKernel>>;
}

/** A loaded module: its kernels, looked up by name. */
export interface NativeModule {
  /** The names of its kernels, where the backend can list them (the host's table, the mock's record). */
  readonly kernelNames?: readonly string[];
  /**
   * The kernel called `name`. `parameters` declares its parameters where the module cannot say them itself
   * (CUDA reads their sizes from the driver and checks the declaration against them; the host's table and
   * the mock's record carry them). A `FormatError` for a name the module does not have, an `ArgumentError`
   * for a declaration that does not match.
   */
  kernel(name: string, parameters?: readonly KernelParameterKind[]): NativeKernel;
  /** Unloads it; kernels of it can no longer be launched. A second call throws. */
  release(): void;
}

/** A point in one stream's order: complete once all work enqueued on the stream before it has run. */
export interface NativeEvent {
  /** The stream it was recorded on. */
  readonly stream: NativeStream;
  /** Whether it has completed, without waiting. */
  query(): boolean;
  /** Resolves once it has completed (rejects with a typed error when the work failed or the device closed). */
  done(): Promise<void>;
  /** Waits on this thread until it has completed. */
  synchronize(): void;
  /** Gives back what it holds; a second call throws. */
  release(): void;
}

/**
 * An ordered queue of work on a device. Each call enqueues and returns at once; the work runs in the order
 * enqueued. Every allocation an operation names is kept (never given back to the system) until that
 * operation has completed, whatever is released meanwhile.
 *
 * A call on a released stream (`done()` included: it throws, it does not return a rejected promise), or one
 * naming a released event, module or allocation, throws a `StateError` (`ERR_NUVEC_RELEASED`) and enqueues
 * nothing. An operation that fails (a kernel's error) fails the stream: its later work is skipped, and every
 * event, `read`, `done()` and `synchronize()` after the failure reports it. The stream contract suite
 * (`describeStreamContract` of `@nuvec/native-core/contract`) pins what every backend must do alike.
 */
export interface NativeStream {
  /** A number unique among the backend's streams, for traces and messages. */
  readonly id: number;
  /** Enqueues a launch of `kernel` with `args` (checked against `kernel.parameters` by the caller). */
  launch(kernel: NativeKernel, shape: NativeLaunchShape, args: readonly NativeKernelArgument[]): void;
  /** Enqueues a copy of `source` (its bytes taken at the call) into `target` at `offset`. */
  write(target: NativeBuffer, offset: number, source: Uint8Array): void;
  /** Enqueues a copy of `length` bytes of `source` from `offset`; resolves with them once it ran. */
  read(source: NativeAllocation, offset: number, length: number): Promise<Uint8Array>;
  /** Enqueues a copy of `length` bytes from `source` at `sourceOffset` to `target` at `targetOffset`. */
  copy(
    target: NativeBuffer,
    targetOffset: number,
    source: NativeAllocation,
    sourceOffset: number,
    length: number,
  ): void;
  /** Records an event after everything enqueued so far. */
  record(): NativeEvent;
  /** Makes later work on this stream wait for `event` (of any stream of the same backend), without the host. */
  wait(event: NativeEvent): void;
  /** Resolves once everything enqueued so far has run. */
  done(): Promise<void>;
  /** Waits on this thread until everything enqueued so far has run. */
  synchronize(): void;
  /** Waits for its work, then gives back what it holds; a second call throws. */
  release(): void;
}

/** The calls of a backend with streams: both or neither. */
export interface NativeStreamCalls {
  /** A new stream. Throws a typed error when the device cannot make one. */
  newStream(): NativeStream;
  /**
   * Loads a module from the entry of `source` for this backend. A `FormatError` when there is none, or when
   * it does not compile (the compiler's log in the message and in `log`).
   */
  loadModule(source: NativeModuleSource): NativeModule;
}
