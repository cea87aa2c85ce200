// Modules of kernels and their kernels, as the Device hands them out: each checks its `this`, knows its
// Device (a kernel of another Device is refused at launch), and a released module's kernels are refused.
import {
  KERNEL_PARAMETER_KINDS,
  type KernelParameterKind,
  type NativeKernel,
  type NativeModule,
} from "@nuvec/metal-native";
import { describeValue } from "@nuvec/stats";
import type { Device } from "../device.js";
import { lookAlike } from "../errors.js";
import type { StreamContext } from "./context.js";
import { badArgument, releasedObject } from "./errors.js";

let moduleOf: (kernel: Kernel) => KernelModule;
let nativeOfKernel: (kernel: Kernel) => NativeKernel;
let contextOf: (module: KernelModule) => StreamContext;
let hasKernelBrand: (value: object) => boolean;
let hasModuleBrand: (value: object) => boolean;

/** @internal Whether `value` is a Kernel a KernelModule made (a brand check: no look-alikes). */
export function isKernel(value: unknown): value is Kernel {
  return typeof value === "object" && value !== null && hasKernelBrand(value);
}

/** @internal The module, native kernel and context behind `kernel`. */
export function kernelParts(kernel: Kernel): {
  module: KernelModule;
  native: NativeKernel;
  context: StreamContext;
} {
  const module = moduleOf(kernel);
  return { module, native: nativeOfKernel(kernel), context: contextOf(module) };
}

/** Checks a declaration of parameters: an array of {@link KernelParameterKind}s. */
function checkParameters(parameters: unknown, operation: string): readonly KernelParameterKind[] {
  if (!Array.isArray(parameters)) {
    throw badArgument(
      operation,
      "parameters",
      `must be an array of parameter kinds, got ${describeValue(parameters)}`,
    );
  }
  for (const [index, kind] of parameters.entries()) {
    if (!(KERNEL_PARAMETER_KINDS as readonly unknown[]).includes(kind)) {
      throw badArgument(
        operation,
        "parameters",
        `must hold only ${KERNEL_PARAMETER_KINDS.join(", ")}, got ${describeValue(kind)} at ${index}`,
      );
    }
  }
  return Object.freeze([...parameters] as KernelParameterKind[]);
}

/** A kernel of a {@link KernelModule}: launch it with `stream.launch(kernel, shape, args)`. */
export class Kernel {
  readonly #module: KernelModule;
  readonly #native: NativeKernel;
  readonly #parameters: readonly KernelParameterKind[];

  static {
    moduleOf = (kernel) => kernel.#module;
    nativeOfKernel = (kernel) => kernel.#native;
    hasKernelBrand = (value) => #native in value;
  }

  /** @internal Made by {@link KernelModule.kernel}. */
  constructor(module: KernelModule, native: NativeKernel, parameters: readonly KernelParameterKind[]) {
    this.#module = module;
    this.#native = native;
    this.#parameters = parameters;
  }

  /** Its name in the module. */
  get name(): string {
    if (!isKernel(this)) throw lookAlike("name", "this", "a Kernel made by module.kernel()");
    return this.#native.name;
  }

  /** The kinds of its parameters, in order: what a launch's arguments are checked against. */
  get parameters(): readonly KernelParameterKind[] {
    if (!isKernel(this)) throw lookAlike("parameters", "this", "a Kernel made by module.kernel()");
    return this.#parameters;
  }

  /** The module it belongs to. */
  get module(): KernelModule {
    if (!isKernel(this)) throw lookAlike("module", "this", "a Kernel made by module.kernel()");
    return this.#module;
  }
}

function checkModule(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasModuleBrand(value)) {
    throw lookAlike(operation, "this", "a KernelModule made by device.loadModule()");
  }
}

/** Kernels loaded by {@link Device.loadModule}. Release it with `release()` (or `using`); close releases it too. */
export class KernelModule {
  readonly #context: StreamContext;
  readonly #native: NativeModule;
  readonly #onRelease: (module: KernelModule) => void;
  #released = false;

  static {
    contextOf = (module) => module.#context;
    hasModuleBrand = (value) => #native in value;
  }

  /** @internal Made by {@link Device.loadModule}. */
  constructor(context: StreamContext, native: NativeModule, onRelease: (module: KernelModule) => void) {
    this.#context = context;
    this.#native = native;
    this.#onRelease = onRelease;
  }

  /** The Device that loaded it. */
  get device(): Device {
    checkModule(this, "device");
    return this.#context.device as Device;
  }

  /** True once released (by `release()` or the device's close). */
  get released(): boolean {
    checkModule(this, "released");
    return this.#released;
  }

  /** The names of its kernels where the backend can list them (the host's table, the mock's record). */
  get kernelNames(): readonly string[] | undefined {
    checkModule(this, "kernelNames");
    const names = this.#native.kernelNames;
    return names === undefined ? undefined : Object.freeze([...names]);
  }

  /**
   * The kernel called `name`; `parameters` declares its parameter kinds where the module cannot say them
   * (CUDA checks the declaration against the driver's sizes). A `FormatError` (`ERR_NUVEC_KERNEL_NOT_FOUND`)
   * for a name the module lacks, an `ArgumentError` for a declaration that is no list of kinds or does not
   * match.
   */
  kernel(name: string, parameters?: readonly KernelParameterKind[]): Kernel {
    checkModule(this, "kernel()");
    this.#context.checkOpen("kernel()");
    if (this.#released) throw releasedObject("kernel()", "module");
    if (typeof name !== "string" || name.length === 0) {
      throw badArgument("kernel()", "name", `must be a non-empty string, got ${describeValue(name)}`);
    }
    const declared = parameters === undefined ? undefined : checkParameters(parameters, "kernel()");
    const native = declared === undefined ? this.#native.kernel(name) : this.#native.kernel(name, declared);
    return new Kernel(this, native, Object.freeze([...native.parameters]));
  }

  /** Unloads it: its kernels can no longer be launched. A second call throws a StateError. */
  release(): void {
    checkModule(this, "release()");
    if (this.#released) throw releasedObject("release()", "module");
    this.#released = true;
    this.#onRelease(this);
    this.#native.release();
  }

  /** @internal The device's close: released without a throw for one released already. */
  releaseAtClose(): void {
    if (this.#released) return;
    this.#released = true;
    this.#native.release();
  }

  /** `using module = device.loadModule(source)` releases it at the end of the scope (once). */
  [Symbol.dispose](): void {
    checkModule(this, "[Symbol.dispose]()");
    if (!this.#released && !this.#context.closed) this.release();
  }
}
