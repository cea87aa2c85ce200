// What both entries (`@nuvec/metal-native` and `@nuvec/metal-native/mock`) export: the root of the error
// family, so that one import is enough to catch any nuvec error, this package's errors, and the interface.
export { NuvecArgumentError, NuvecError } from "@nuvec/stats";
export {
  NativeAllocationError,
  NativeArgumentError,
  NativeError,
  type NativeErrorCode,
  NativeReleasedError,
  NativeSystemError,
  NativeUnavailableError,
} from "./errors.js";
export type {
  BackendPlatform,
  DeviceFacts,
  HostMemoryHandle,
  MetalMemoryHandle,
  MockMemoryHandle,
  NativeAllocation,
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeMappedFile,
  NativeMemoryHandle,
  NativeResidencySet,
} from "./types.js";
