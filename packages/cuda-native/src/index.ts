/**
 * `@nuvec/cuda-native`: nuvec's CUDA backend. {@link loadCudaBackend} gives an NVIDIA GPU as the
 * `NativeBackend` of `@nuvec/metal-native` (device memory from the CUDA driver API, loaded at run time), so
 * `Device.open({ backend: loadCudaBackend() })` runs MLX's allocator policy, limits, statistics, residency
 * and traces on real GPU memory.
 *
 * @packageDocumentation
 */

// The root of the error family and the kinds a backend throws, as @nuvec/metal-native exports them.
export {
  ArgumentError,
  NativeUnavailableError,
  NuvecError,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/metal-native";
export {
  CudaBackend,
  CudaBuffer,
  type CudaBufferHandle,
  CudaBufferRange,
  CudaMappedFile,
  type CudaMappedFileHandle,
  CudaResidencySet,
} from "./cuda.js";
export { type CudaBackendOptions, loadCudaBackend } from "./loader.js";
