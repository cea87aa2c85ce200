// Where the decode program runs: a Device with streams and the decode kernels' module, on CUDA (the kernels
// compiled by NVRTC), on the host (the example kernel addon's `nuvec_host_kernels` table), or on the mock (the
// kernels in TypeScript). `auto` takes the first of those that works here and says why the others did not.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Device, type KernelModule, type NativeModuleSource } from "@nuvec/device";
import type { NativeBackend } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import { CUDA_DECODE_KERNELS, DECODE_KERNELS, MOCK_DECODE_KERNELS } from "./decode-kernels.js";

/** The backends the program can run on. */
export const DECODE_BACKENDS = ["auto", "cuda", "host", "mock"] as const;

/** One of {@link DECODE_BACKENDS}. */
export type DecodeBackend = (typeof DECODE_BACKENDS)[number];

/** A Device and the decode kernels loaded on it, and what was tried before it. */
export interface DecodeDevice {
  readonly device: Device;
  readonly module: KernelModule;
  /** Which backend it is. */
  readonly backend: Exclude<DecodeBackend, "auto">;
  /** For `auto`: each backend tried before this one and why it was passed over. */
  readonly passedOver: { backend: string; why: string }[];
}

/** The example kernel addon's file, whose `nuvec_host_kernels` table has the host's decode kernels. */
export function hostKernelLibrary(): string | undefined {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 4; depth += 1) {
    const path = join(folder, "kernel", "build", "Release", "nuvec_example_kernel.node");
    if (existsSync(join(folder, "kernel", "binding.gyp"))) return existsSync(path) ? path : undefined;
    folder = dirname(folder);
  }
  return undefined;
}

/** The module source with every backend's entry that is there. */
export function decodeModuleSource(): NativeModuleSource {
  const host = hostKernelLibrary();
  return { mock: MOCK_DECODE_KERNELS, cuda: CUDA_DECODE_KERNELS, ...(host === undefined ? {} : { host }) };
}

/** The CUDA backend, when `@nuvec/cuda-native` is installed and a GPU is there. */
async function cudaBackend(): Promise<NativeBackend> {
  // Not a dependency of the examples: found when installed beside them.
  const name = "@nuvec/cuda-native";
  let cuda: { loadCudaBackend: () => NativeBackend };
  try {
    cuda = (await import(name)) as typeof cuda;
  } catch {
    throw new Error(`${name} is not installed`);
  }
  return cuda.loadCudaBackend();
}

async function openOn(backend: Exclude<DecodeBackend, "auto">): Promise<DecodeDevice> {
  let device: Device;
  if (backend === "mock") {
    device = Device.open({ backend: new MockBackend({ name: "Mock device (kernels in TypeScript)" }) });
  } else if (backend === "cuda") {
    device = Device.open({ backend: await cudaBackend() });
  } else {
    device = Device.open();
    if (device.native.backend.platform !== "host") {
      const platform = device.native.backend.platform;
      device.close();
      throw new Error(`the native backend here is ${platform}, not host`);
    }
  }
  try {
    if (backend === "host" && hostKernelLibrary() === undefined) {
      throw new Error("the example kernel addon is not built (pnpm --filter @nuvec/examples build)");
    }
    const module = device.loadModule(decodeModuleSource());
    // Every kernel the loop launches, looked up now: a library without them is passed over by `auto`.
    for (const [name, parameters] of Object.entries(DECODE_KERNELS)) module.kernel(name, [...parameters]);
    return { device, module, backend, passedOver: [] };
  } catch (error) {
    device.close();
    throw error;
  }
}

/** Opens a Device for `backend` with the decode kernels; `auto` tries CUDA, the host, then the mock. */
export async function openDecodeDevice(backend: DecodeBackend): Promise<DecodeDevice> {
  if (backend !== "auto") return openOn(backend);
  const passedOver: { backend: string; why: string }[] = [];
  for (const candidate of ["cuda", "host"] as const) {
    try {
      const opened = await openOn(candidate);
      return { ...opened, passedOver };
    } catch (error) {
      passedOver.push({
        backend: candidate,
        why: ((error as Error).message ?? String(error)).split("\n")[0] ?? "",
      });
    }
  }
  return { ...(await openOn("mock")), passedOver };
}
