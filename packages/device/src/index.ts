// The allocator's names a Device user meets: the `policy` and `boundedRelease` options' types and the lists
// `Device.open` checks them against (readonly tuples, the default first), and the trace format.
export {
  ALLOCATOR_POLICIES,
  type AllocatorPolicy,
  BOUNDED_RELEASES,
  type BoundedRelease,
  type TraceEvent,
  type TraceHeader,
} from "@nuvec/allocator";
// How the backend's addon makes views (`device.native.backend.viewMechanism`).
export type { KernelParameterKind, MockKernel, NativeModuleSource, ViewMechanism } from "@nuvec/metal-native";
// What a Device user needs to read its statistics and catch its errors, so that `npm install @nuvec/device`
// is the whole install.
export {
  ArgumentError,
  emptyMemoryStats,
  FormatError,
  type FormatMemoryStatsOptions,
  formatBytes,
  formatMemoryStats,
  type MemoryStats,
  NativeUnavailableError,
  NuvecError,
  type NuvecErrorCode,
  OutOfMemoryError,
  type OutOfMemoryErrorByCode,
  type OutOfMemoryErrorCode,
  type OutOfMemoryErrorFields,
  type OutOfMemoryErrorOf,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";
export { Device } from "./device.js";
export { DeviceBuffer } from "./device-buffer.js";
export { MappedFile } from "./mapped-file.js";
export { DeviceNative } from "./native-access.js";
export type {
  DeviceCounters,
  DeviceInfo,
  DeviceMemoryHandle,
  DeviceOptions,
  FreeOptions,
  MetalOptions,
} from "./options.js";
export {
  type MappedSafetensors,
  mapSafetensors,
  readSafetensorsHeader,
  SAFETENSORS_DTYPE_BYTES,
  type SafetensorsHeader,
  type SafetensorsTensor,
} from "./safetensors.js";
export {
  type SafetensorsTensorData,
  type WriteSafetensorsOptions,
  writeSafetensors,
} from "./safetensors-writer.js";
export type { LaunchShape, ScalarArgument } from "./streams/args.js";
export { StreamEvent } from "./streams/event.js";
export { Kernel, KernelModule } from "./streams/kernel.js";
export { type KernelArgument, Stream, type StreamCopyOptions } from "./streams/stream.js";
export type { Trace } from "./trace.js";
export type { MallocOptions, TraceOptions } from "./trace-options.js";
