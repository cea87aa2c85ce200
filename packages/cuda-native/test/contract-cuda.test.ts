// The NativeBackend contract (@nuvec/native-core's test/contract.ts, the suite the mock and the host addon
// pass) against the CUDA backend, with `hostVisible: false`: buffers are read and written with read/write.
// It needs an NVIDIA GPU: on the GPU machine it runs through gpu/run.sh; elsewhere the suite is skipped.
// The stream contract runs on CUDA with the standard kernels in CUDA C, compiled with NVRTC.

import {
  describeAddressSpaceContract,
  describeNativeBackendContract,
  describeStreamContract,
} from "@nuvec/native-core/contract";
import { describe } from "vitest";
import { cuda, cudaBackend, cudaUnavailableReason } from "./support.js";

/** The stream contract's standard kernels (stream-contract-kernels.ts) in CUDA C. */
export const CUDA_STANDARD_KERNELS = `
extern "C" __global__ void fill(float* x, float value, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}
extern "C" __global__ void scale(float* x, float factor, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __fmul_rn(x[i], factor);
}
extern "C" __global__ void add(float* out, const float* a, const float* b, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fadd_rn(a[i], b[i]);
}
`;

if (cudaBackend !== undefined) {
  describeNativeBackendContract("CUDA (device memory, cuMemHostRegister)", cuda, {
    realMemory: true,
    hostVisible: false,
    cycles: 100,
  });
  if (cudaBackend.mapGranularity !== undefined) {
    describeAddressSpaceContract("CUDA (cuMemAddressReserve, cuMemCreate, cuMemMap)", cuda, {
      hostVisible: false,
    });
  }
  describeStreamContract("CUDA (driver streams, NVRTC)", cuda, {
    kernels: { cuda: CUDA_STANDARD_KERNELS },
    brokenModule: { cuda: 'extern "C" __global__ void broken(float* x) { x[0] = undefined_name; }' },
  });
} else {
  describe.skip(`NativeBackend contract: CUDA — no CUDA device here (${cudaUnavailableReason})`, () => {});
}
