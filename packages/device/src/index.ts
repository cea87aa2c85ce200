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
export {
  Device,
  DeviceBuffer,
  type DeviceCounters,
  type DeviceInfo,
  type DeviceMemoryHandle,
  type DeviceOptions,
  type FreeOptions,
  MappedFile,
  type MetalOptions,
} from "./device.js";
export {
  BufferFreedError,
  DeviceArgumentError,
  DeviceClosedError,
  DeviceError,
  type DeviceErrorCode,
  ForeignBufferError,
  MappingReleasedError,
  MemoryNotHostVisibleError,
  TraceRecordingError,
  WiredLimitError,
} from "./errors.js";
export type { DeviceTrace } from "./trace.js";
