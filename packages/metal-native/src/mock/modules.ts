// The mock's modules: kernels written in TypeScript (the `mock` entry of a module source), looked up by name
// and run by the mock's streams over the bytes of the buffers they name.
import type {
  KernelParameterKind,
  MockKernel,
  NativeKernel,
  NativeLaunchShape,
  NativeModule,
  NativeModuleSource,
} from "@nuvec/native-core";
import {
  KERNEL_PARAMETER_KINDS,
  kernelNotFound,
  lookAlike,
  moduleError,
  releasedError,
} from "@nuvec/native-core";
import { ArgumentError, describeValue } from "@nuvec/stats";
import type { MockCore } from "./core.js";

/** What a launch runs: the kernel's `run`, as the module read it at load. */
export type MockKernelRun = (
  args: readonly (Uint8Array | number | bigint)[],
  shape: NativeLaunchShape,
) => void;

let hasKernelBrand: (value: object) => boolean;
let kernelInternals: (kernel: MockKernelHandle) => { module: MockModule; run: MockKernelRun };
let hasModuleBrand: (value: object) => boolean;

/** A kernel of a {@link MockModule}: its name, its parameters, and the module it belongs to. */
export class MockKernelHandle implements NativeKernel {
  readonly name: string;
  readonly parameters: readonly KernelParameterKind[];
  readonly #module: MockModule;
  readonly #run: MockKernelRun;

  static {
    hasKernelBrand = (value) => #run in value;
    kernelInternals = (kernel) => ({ module: kernel.#module, run: kernel.#run });
  }

  /** Made by {@link MockModule.kernel} only. */
  constructor(
    module: MockModule,
    name: string,
    parameters: readonly KernelParameterKind[],
    run: MockKernelRun,
  ) {
    this.#module = module;
    this.name = name;
    this.parameters = parameters;
    this.#run = run;
    Object.freeze(this);
  }

  /** The module it belongs to. */
  get module(): MockModule {
    if (!isMockKernel(this)) throw lookAlike("module", "this", "a kernel of a mock module");
    return this.#module;
  }
}

/** Whether `value` is a kernel a mock module made (a brand check: no `Object.create`, no Proxy). */
export function isMockKernel(value: unknown): value is MockKernelHandle {
  return typeof value === "object" && value !== null && hasKernelBrand(value);
}

/** The module and the `run` of a mock kernel. Internal. */
export function kernelParts(kernel: MockKernelHandle): { module: MockModule; run: MockKernelRun } {
  return kernelInternals(kernel);
}

/** A kernel as the module read it at load: its parameters (frozen) and `run`. */
interface LoadedKernel {
  readonly parameters: readonly KernelParameterKind[];
  readonly run: MockKernelRun;
}

/**
 * A module of TypeScript kernels made by `MockBackend.loadModule`. Each kernel's `parameters` and `run` are
 * read once, at load; `release()` unloads it (launches already enqueued still run: they hold the kernel).
 */
export class MockModule implements NativeModule {
  /** Its number among the backend's modules, from 1. */
  readonly id: number;
  /** `"module#<id>"`: how the call log names it. */
  readonly label: string;
  readonly kernelNames: readonly string[];
  readonly #core: MockCore;
  readonly #kernels: ReadonlyMap<string, LoadedKernel>;
  readonly #handles = new Map<string, MockKernelHandle>();
  #released = false;

  static {
    hasModuleBrand = (value) => #released in value;
  }

  /** Made by {@link loadMockModule} only. */
  constructor(core: MockCore, id: number, kernels: ReadonlyMap<string, LoadedKernel>) {
    this.#core = core;
    this.id = id;
    this.label = `module#${id}`;
    this.#kernels = kernels;
    this.kernelNames = Object.freeze([...kernels.keys()]);
  }

  /** True once `release()` was called. */
  get released(): boolean {
    checkModuleThis(this, "released");
    return this.#released;
  }

  /**
   * The kernel called `name` (the same object on every call). A `FormatError` (`ERR_NUVEC_KERNEL_NOT_FOUND`)
   * for a name the module does not have; `parameters`, when given, must be the kernel's own (else an
   * `ArgumentError`); a `StateError` (`ERR_NUVEC_RELEASED`) after release.
   */
  kernel(name: string, parameters?: readonly KernelParameterKind[]): MockKernelHandle {
    checkModuleThis(this, "kernel()");
    return this.#core.run("module.kernel", this.label, typeof name === "string" ? name : undefined, () => {
      this.#core.assertOpen(`${this.label}.kernel()`);
      if (this.#released) throw releasedError(`${this.label}.kernel(): the module was already released`);
      if (typeof name !== "string") {
        throw new ArgumentError("name", `kernel(name): name must be a string, got ${describeValue(name)}`);
      }
      const loaded = this.#kernels.get(name);
      if (loaded === undefined) {
        const has = this.kernelNames.length === 0 ? "none" : this.kernelNames.join(", ");
        throw kernelNotFound(
          `${this.label}.kernel(${JSON.stringify(name)}): the module has no kernel of that name (it has ${has})`,
        );
      }
      if (parameters !== undefined) checkDeclaration(name, parameters, loaded.parameters);
      let handle = this.#handles.get(name);
      if (handle === undefined) {
        handle = new MockKernelHandle(this, name, loaded.parameters, loaded.run);
        this.#handles.set(name, handle);
      }
      return handle;
    });
  }

  /** Unloads it: its kernels can no longer be looked up or launched. A second call throws. */
  release(): void {
    checkModuleThis(this, "release()");
    this.#core.run("module.release", this.label, undefined, () => {
      if (this.#released) throw releasedError(`${this.label}.release(): the module was already released`);
      this.#released = true;
    });
  }
}

function checkModuleThis(value: unknown, operation: string): void {
  if (typeof value !== "object" || value === null || !hasModuleBrand(value)) {
    throw lookAlike(operation, "this", "a mock module");
  }
}

/** Checks a declaration of a kernel's parameters against the kernel's own: the same kinds in the same order. */
function checkDeclaration(name: string, declared: unknown, own: readonly KernelParameterKind[]): void {
  const kinds = parameterKinds(declared);
  if (kinds === undefined) {
    throw new ArgumentError(
      "parameters",
      `kernel(${JSON.stringify(name)}, parameters): parameters must be an array of ${KERNEL_PARAMETER_KINDS.join(", ")}, got ${shown(declared)}`,
    );
  }
  if (kinds.length !== own.length || kinds.some((kind, index) => kind !== own[index])) {
    throw new ArgumentError(
      "parameters",
      `kernel(${JSON.stringify(name)}, parameters): declared (${kinds.join(", ")}) but the kernel takes (${own.join(", ")})`,
    );
  }
}

/** `value` for a message: an array as JSON (when it can be), anything else as `describeValue` says it. */
function shown(value: unknown): string {
  if (Array.isArray(value)) {
    try {
      return JSON.stringify(value);
    } catch {
      return describeValue(value);
    }
  }
  return describeValue(value);
}

/** `value` as parameter kinds (a copy), or `undefined` when it is not an array of them. */
function parameterKinds(value: unknown): KernelParameterKind[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const kinds = [...value];
  return kinds.every((kind) => (KERNEL_PARAMETER_KINDS as readonly unknown[]).includes(kind))
    ? (kinds as KernelParameterKind[])
    : undefined;
}

/**
 * Loads the `mock` entry of `source`: an `ArgumentError` for a source that is not an object, a `FormatError`
 * (`ERR_NUVEC_MODULE`) when it has no `mock` entry or an entry's kernel is not `{ parameters, run }` (what is
 * wrong in the error's `log`, a line per kernel).
 */
export function loadMockModule(core: MockCore, id: number, source: NativeModuleSource): MockModule {
  if (typeof source !== "object" || source === null) {
    throw new ArgumentError(
      "source",
      `loadModule(source): source must be an object, got ${describeValue(source)}`,
    );
  }
  const entry = (source as { mock?: unknown }).mock;
  if (entry === undefined) {
    const entries = Object.keys(source);
    const has = entries.length === 0 ? "no entry" : `entries for ${entries.join(", ")}`;
    throw moduleError(
      `loadModule(): the source has no mock entry (it has ${has}); the mock backend runs kernels written in TypeScript: { mock: { name: { parameters, run } } }`,
    );
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    throw moduleError(
      "loadModule(): the mock entry must be an object of kernels by name",
      `mock: expected an object, got ${describeValue(entry)}`,
    );
  }
  const kernels = new Map<string, LoadedKernel>();
  const problems: string[] = [];
  for (const [name, kernel] of Object.entries(entry as Record<string, MockKernel>)) {
    const parameters = parameterKinds((kernel as Partial<MockKernel> | null)?.parameters);
    const run = (kernel as Partial<MockKernel> | null)?.run;
    if (parameters === undefined) {
      problems.push(
        `${name}: parameters must be an array of ${KERNEL_PARAMETER_KINDS.join(", ")}, got ${shown((kernel as Partial<MockKernel> | null)?.parameters)}`,
      );
    } else if (typeof run !== "function") {
      problems.push(`${name}: run must be a function, got ${describeValue(run)}`);
    } else {
      const bound = run.bind(kernel) as MockKernelRun;
      kernels.set(name, Object.freeze({ parameters: Object.freeze(parameters), run: bound }));
    }
  }
  if (problems.length > 0) {
    throw moduleError(
      `loadModule(): ${problems.length} kernel${problems.length === 1 ? "" : "s"} of the mock entry cannot be loaded`,
      problems.join("\n"),
    );
  }
  return new MockModule(core, id, kernels);
}
