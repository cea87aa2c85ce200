// The example kernel addon (kernel/: node-addon-api, its own binding.gyp, built by the examples' build), as
// a runtime's native code would be reached from JavaScript: two float32 kernels that run on nuvec memory by
// address, on the libuv thread pool, each returning the promise to hand to `buffer.free({ after })`.
// Arguments are checked here first (typed errors, nothing reaches native code); the addon checks again.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ArgumentError, NativeUnavailableError } from "@nuvec/device";
import { nativeBinaryDefect } from "@nuvec/metal-native/addon";

/** The raw addon (kernel/kernel.cc). */
interface RawKernelAddon {
  scale(address: bigint, count: number, factor: number): Promise<undefined>;
  sum(address: bigint, count: number): Promise<number>;
  // macOS only (kernel/metal/kernel_metal.mm):
  scaleMetal?(metalBuffer: bigint, count: number, factor: number, commandQueue: bigint): Promise<undefined>;
  newCommandQueue?(): bigint;
}

/**
 * The Metal version (macOS builds only; compile-checked, never run where it was written): `scale` as a
 * compute kernel bound to the buffer by its `metalBuffer`, on the runtime's queue.
 */
export interface MetalKernels {
  /** A new `id<MTLCommandQueue>` on the system GPU, to pass to `Device.open({ metal: { commandQueue } })`. */
  newCommandQueue(): bigint;
  /** `data[i] *= factor` on the GPU; resolves in the command buffer's completion handler. */
  scale(metalBuffer: bigint, count: number, factor: number, commandQueue: bigint): Promise<void>;
}

/** The example kernels over `count` float32 values at `address` (a `device.native.handle(buffer).address`). */
export interface KernelAddon {
  /** `data[i] *= factor` for `i < count`, off the JavaScript thread; resolves when done. */
  scale(address: bigint, count: number, factor: number): Promise<void>;
  /** `Σ data[i]` for `i < count` (accumulated in double), off the JavaScript thread. */
  sum(address: bigint, count: number): Promise<number>;
  /** The Metal kernels, in a macOS build; `undefined` elsewhere. */
  readonly metal: MetalKernels | undefined;
}

/** The examples' folder (where kernel/ is), from src/lib (tests) or dist/ (the built programs). */
function examplesRoot(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth += 1) {
    if (existsSync(join(folder, "kernel", "binding.gyp"))) return folder;
    folder = dirname(folder);
  }
  throw new Error("the example kernel addon's folder (kernel/) was not found");
}

function checkAddress(address: unknown): asserts address is bigint {
  if (typeof address !== "bigint" || address <= 0n || address >= 1n << 64n) {
    throw new ArgumentError("address", "address must be a non-zero 64-bit pointer as a bigint");
  }
  if (address % 4n !== 0n) throw new ArgumentError("address", "address must be aligned for float32");
}

function checkCount(count: unknown): asserts count is number {
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0) {
    throw new ArgumentError("count", `count must be a non-negative safe integer, got ${String(count)}`);
  }
}

let addon: RawKernelAddon | undefined;

/**
 * Loads the example kernel addon (built by `pnpm --filter @nuvec/examples build`). Throws when it was not
 * built (Windows, or NUVEC_SKIP_NATIVE_BUILD=1), and `NativeUnavailableError` (`damaged`) when the built file
 * is damaged (checked before it is loaded).
 */
export function loadKernelAddon(): KernelAddon {
  if (addon === undefined) {
    const path = join(examplesRoot(), "kernel", "build", "Release", "nuvec_example_kernel.node");
    if (!existsSync(path)) {
      throw new Error(
        `the example kernel addon is not built (${path}): run pnpm --filter @nuvec/examples build`,
      );
    }
    // Checked as nuvec's own addons are: a truncated file would kill the process inside the dynamic loader.
    const defect = nativeBinaryDefect(path);
    if (defect !== undefined) {
      throw new NativeUnavailableError(
        `the example kernel addon ${path} is damaged: ${defect}. Rebuild it: pnpm --filter @nuvec/examples build`,
        { reason: "damaged", path },
      );
    }
    addon = createRequire(import.meta.url)(path) as RawKernelAddon;
  }
  const raw = addon;
  const { scaleMetal, newCommandQueue } = raw;
  const metal: MetalKernels | undefined =
    scaleMetal === undefined || newCommandQueue === undefined
      ? undefined
      : {
          newCommandQueue: () => newCommandQueue.call(raw),
          async scale(metalBuffer, count, factor, commandQueue) {
            checkAddress(metalBuffer);
            checkCount(count);
            checkAddress(commandQueue);
            if (typeof factor !== "number" || !Number.isFinite(factor)) {
              throw new ArgumentError("factor", `factor must be a finite number, got ${String(factor)}`);
            }
            await scaleMetal.call(raw, metalBuffer, count, factor, commandQueue);
          },
        };
  return {
    metal,
    async scale(address, count, factor) {
      checkAddress(address);
      checkCount(count);
      if (typeof factor !== "number" || !Number.isFinite(factor)) {
        throw new ArgumentError("factor", `factor must be a finite number, got ${String(factor)}`);
      }
      await raw.scale(address, count, factor);
    },
    sum(address, count) {
      checkAddress(address);
      checkCount(count);
      return raw.sum(address, count);
    },
  };
}

/**
 * The CPU address of nuvec memory, for these CPU kernels: every backend but CUDA has one (a CUDA handle gives
 * a `devicePointer` instead, for GPU kernels). Switch on `platform` like this in a runtime's own code.
 */
export function cpuAddress(handle: { readonly platform: string; readonly address?: bigint }): bigint {
  if (handle.platform === "cuda" || typeof handle.address !== "bigint") {
    throw new TypeError(`the ${handle.platform} backend's memory has no CPU address for a CPU kernel`);
  }
  return handle.address;
}

/**
 * Fills `data` with small integers (`index % modulus`), so that float32 sums of them and of their multiples
 * stay exact; returns their sum.
 */
export function fillPattern(data: Float32Array, modulus: number): number {
  let total = 0;
  for (let index = 0; index < data.length; index += 1) {
    data[index] = index % modulus;
    total += index % modulus;
  }
  return total;
}
