// Whether this machine has a CUDA device: the GPU tests run where it has, and the loader's refusal is tested
// where it has not (CI). Any other error than NativeUnavailableError is a bug and fails the import.
import { NativeUnavailableError } from "@nuvec/metal-native";
import { type CudaBackend, loadCudaBackend } from "../src/index.js";

function probe(): { backend: CudaBackend } | { reason: string } {
  try {
    return { backend: loadCudaBackend() };
  } catch (error) {
    if (error instanceof NativeUnavailableError) return { reason: error.message };
    throw error;
  }
}

const probed = probe();

/** The CUDA backend of device 0, or `undefined` where there is none. */
export const cudaBackend: CudaBackend | undefined = "backend" in probed ? probed.backend : undefined;

/** Why there is no CUDA backend here (`undefined` when there is one). */
export const cudaUnavailableReason: string | undefined = "reason" in probed ? probed.reason : undefined;

/** The CUDA backend; throws where there is none (used inside GPU-only suites). */
export function cuda(): CudaBackend {
  if (cudaBackend === undefined) throw new Error(`no CUDA backend: ${cudaUnavailableReason}`);
  return cudaBackend;
}
