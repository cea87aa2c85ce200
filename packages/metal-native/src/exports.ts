// What both entries (`@nuvec/metal-native` and `@nuvec/metal-native/mock`) export: the root of the error
// family, so that one import is enough to catch any nuvec error, this package's errors, and the interface.

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
} from "@nuvec/native-core";
export {
  NativeAllocationError,
  NativeArgumentError,
  NativeError,
  type NativeErrorCode,
  NativeReleasedError,
  NativeSystemError,
  NativeUnavailableError,
} from "@nuvec/native-core";
export { NuvecArgumentError, NuvecError } from "@nuvec/stats";
