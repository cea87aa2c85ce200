/**
 * `@nuvec/cuda-native`: nuvec's CUDA backend. {@link loadCudaBackend} gives an NVIDIA GPU as the
 * `NativeBackend` of `@nuvec/metal-native` (device memory from the CUDA driver API, loaded at run time), so
 * `Device.open({ backend: loadCudaBackend() })` runs MLX's allocator policy, limits, statistics, residency
 * and traces on real GPU memory.
 *
 * @packageDocumentation
 */

export {
  ArgumentError,
  FormatError,
  NativeUnavailableError,
  NuvecError,
  type NuvecErrorCode,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";
export {
  CudaBackend,
  CudaBuffer,
  type CudaBufferHandle,
  CudaMappedFile,
  type CudaMappedFileHandle,
  CudaResidencySet,
} from "./cuda.js";
export { type CudaBackendOptions, loadCudaBackend } from "./loader.js";
