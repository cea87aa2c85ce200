// What both entries (`@nuvec/metal-native` and `@nuvec/metal-native/mock`) export: the root of the error family
// and the kinds a backend throws (every kind is in `@nuvec/stats`), and the interface.

export type {
  BackendPlatform,
  DeviceFacts,
  HostMemoryHandle,
  KernelParameterKind,
  MetalMemoryHandle,
  MockKernel,
  MockMemoryHandle,
  NativeAllocation,
  NativeBackend,
  NativeBuffer,
  NativeCounters,
  NativeEvent,
  NativeKernel,
  NativeKernelArgument,
  NativeLaunchShape,
  NativeMappedFile,
  NativeMemoryHandle,
  NativeModule,
  NativeModuleSource,
  NativeResidencySet,
  NativeStream,
  NativeStreamCalls,
  ViewMechanism,
} from "@nuvec/native-core";
export { KERNEL_PARAMETER_KINDS } from "@nuvec/native-core";
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
