// Modules of kernels and their kernels over an addon's handles (native/napi/stream_handles.h): the
// NativeModule and NativeKernel of streams.ts, and how a NativeModuleSource becomes the addon's loadModule
// call for the backend's platform.
import { ArgumentError, FormatError } from "@nuvec/stats";
import { lookAlike, releasedError } from "../errors.js";
import {
  KERNEL_PARAMETER_KINDS,
  type KernelParameterKind,
  type NativeKernel,
  type NativeModule,
  type NativeModuleSource,
} from "../streams.js";
import type { BackendPlatform } from "../types.js";
import { callNative } from "./call.js";
import type { AddonOwner } from "./owner.js";
import type { RawKernelHandle, RawModuleHandle, RawStreamCalls } from "./raw.js";

let hasModuleBrand: (value: object) => boolean;
let hasKernelBrand: (value: object) => boolean;

/** @internal Whether `value` is a kernel of an addon module (a brand check). */
export function isAddonKernel(value: unknown): value is AddonKernel {
  return typeof value === "object" && value !== null && hasKernelBrand(value);
}

function checkModuleThis(value: unknown, operation: string): asserts value is AddonModule {
  if (typeof value !== "object" || value === null || !hasModuleBrand(value)) {
    throw lookAlike(operation, "this", "a module of a backend");
  }
}

/** A kernel of a loaded module: its name and parameter kinds. */
export class AddonKernel implements NativeKernel {
  /** @internal */
  readonly raw: RawKernelHandle;
  /** @internal */
  readonly owner: AddonOwner;
  readonly name: string;
  readonly parameters: readonly KernelParameterKind[];
  readonly #module: AddonModule;

  static {
    hasKernelBrand = (value) => #module in value;
  }

  /** @internal */
  constructor(raw: RawKernelHandle, module: AddonModule, owner: AddonOwner) {
    this.raw = raw;
    this.owner = owner;
    this.#module = module;
    this.name = raw.name;
    this.parameters = Object.freeze([...raw.parameters]);
  }
}

/** A loaded module of an addon: its kernels by name (see {@link NativeModule}). */
export class AddonModule implements NativeModule {
  /** @internal */
  readonly raw: RawModuleHandle;
  /** @internal */
  readonly owner: AddonOwner;
  /** The names of its kernels, as the module lists them; `undefined` where the platform cannot list them. */
  readonly kernelNames: readonly string[] | undefined;
  #released = false;

  static {
    hasModuleBrand = (value) => #released in value;
  }

  /** @internal Wraps a module handle that `owner`'s addon loaded. */
  constructor(raw: RawModuleHandle, owner: AddonOwner) {
    this.raw = raw;
    this.owner = owner;
    this.kernelNames = raw.kernelNames === undefined ? undefined : Object.freeze([...raw.kernelNames]);
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkModuleThis(this, "released");
    return this.#released;
  }

  /**
   * The kernel called `name`: a `FormatError` (`ERR_NUVEC_KERNEL_NOT_FOUND`) when the module lacks it, an
   * `ArgumentError` when `parameters` does not match what the module says.
   */
  kernel(name: string, parameters?: readonly KernelParameterKind[]): NativeKernel {
    checkModuleThis(this, "kernel()");
    if (typeof name !== "string") throw new ArgumentError("name", "kernel(): name must be a string");
    if (parameters !== undefined) {
      if (!Array.isArray(parameters) || parameters.some((kind) => !KERNEL_PARAMETER_KINDS.includes(kind))) {
        throw new ArgumentError(
          "parameters",
          `kernel(): parameters must be kinds of ${KERNEL_PARAMETER_KINDS.join(", ")}`,
        );
      }
    }
    const raw = callNative(() => this.raw.kernel(name, parameters));
    return new AddonKernel(raw, this, this.owner);
  }

  /** Unloads it once no queued launch of its kernels may still run; a second call throws. */
  release(): void {
    checkModuleThis(this, "release()");
    if (this.#released) throw releasedError("release(): this module was already released");
    callNative(() => this.raw.release());
    this.#released = true;
  }
}

/** The addon's loadModule arguments for `platform`'s entry of `source`, or a FormatError when it has none. */
export function moduleArguments(
  platform: BackendPlatform,
  source: NativeModuleSource,
): Parameters<RawStreamCalls["loadModule"]> {
  if (typeof source !== "object" || source === null) {
    throw new ArgumentError("source", "loadModule(): source must be an object of entries by backend");
  }
  const missing = () =>
    new FormatError("ERR_NUVEC_MODULE", `loadModule(): the source has no ${platform} entry`, { log: "" });
  switch (platform) {
    case "host":
      if (source.host === undefined) throw missing();
      if (typeof source.host !== "string")
        throw new ArgumentError("source", "loadModule(): host must be a path");
      return ["host", source.host];
    case "metal":
      if (source.metal === undefined) throw missing();
      if (typeof source.metal !== "string")
        throw new ArgumentError("source", "loadModule(): metal must be MSL source");
      return ["metal", source.metal];
    case "cuda": {
      const cuda = source.cuda;
      if (cuda === undefined) throw missing();
      if (typeof cuda === "string") return ["cuda", cuda];
      if (typeof cuda === "object" && cuda !== null && "ptx" in cuda && typeof cuda.ptx === "string") {
        return ["ptx", cuda.ptx];
      }
      if (typeof cuda === "object" && cuda !== null && "source" in cuda && typeof cuda.source === "string") {
        const options = cuda.options ?? [];
        if (!Array.isArray(options) || options.some((option) => typeof option !== "string")) {
          throw new ArgumentError("source", "loadModule(): cuda.options must be strings");
        }
        return ["cuda", cuda.source, options];
      }
      throw new ArgumentError("source", "loadModule(): cuda must be source, { source, options? } or { ptx }");
    }
    default:
      throw missing();
  }
}
