// The NativeBackend contract (@nuvec/native-core's test/contract.ts, the suite the mock and the host addon
// pass) against the CUDA backend, with `hostVisible: false`: buffers are read and written with read/write.
// It needs an NVIDIA GPU: on the GPU machine it runs through gpu/run.sh; elsewhere the suite is skipped.

import { describeAddressSpaceContract, describeNativeBackendContract } from "@nuvec/native-core/contract";
import { describe } from "vitest";
import { cuda, cudaBackend, cudaUnavailableReason } from "./support.js";

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
} else {
  describe.skip(`NativeBackend contract: CUDA — no CUDA device here (${cudaUnavailableReason})`, () => {});
}
