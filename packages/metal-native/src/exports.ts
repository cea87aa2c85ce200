// What both entries (`@nuvec/metal-native` and `@nuvec/metal-native/mock`) export: the root of the error family
// and the kinds a backend throws (every kind is in `@nuvec/stats`), and the interface.

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
  ViewMechanism,
} from "@nuvec/native-core";
export {
  ArgumentError,
  NativeUnavailableError,
  type NativeUnavailableReason,
  NuvecError,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";
