// What both entries (`@nuvec/metal-native` and `@nuvec/metal-native/mock`) export: the error family, so that
// one import is enough to catch any nuvec error, and the interface.
export {
  ArgumentError,
  FormatError,
  NativeUnavailableError,
  type NativeUnavailableReason,
  NuvecError,
  type NuvecErrorCode,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";
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
