// The allocator's errors reach Device users unchanged: re-exported so one import is enough.
export {
  AllocatorArgumentError,
  AllocatorError,
  type AllocatorPolicy,
  type BoundedRelease,
  BufferTooLargeError,
  OutOfMemoryError,
  ResourceLimitError,
  SystemAllocationError,
  type TraceEvent,
  type TraceHeader,
} from "@nuvec/allocator";
// What a Device user needs to read its statistics, so that `npm install @nuvec/device` is the whole install.
export {
  emptyMemoryStats,
  type FormatMemoryStatsOptions,
  formatBytes,
  formatMemoryStats,
  type MemoryStats,
  NuvecArgumentError,
  NuvecError,
} from "@nuvec/stats";
export { Device } from "./device.js";
export { DeviceBuffer } from "./device-buffer.js";
export {
  BufferFreedError,
  DeviceArgumentError,
  DeviceClosedError,
  DeviceError,
  type DeviceErrorCode,
  ForeignBufferError,
  MappingReleasedError,
  MemoryNotHostVisibleError,
  SafetensorsFormatError,
  TraceRecordingError,
  WiredLimitError,
} from "./errors.js";
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
export type { Trace } from "./trace.js";
