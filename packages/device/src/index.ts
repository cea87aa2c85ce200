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
export type { MemoryStats } from "@nuvec/stats";
export {
  Device,
  DeviceBuffer,
  type DeviceCounters,
  type DeviceInfo,
  type DeviceOptions,
  MappedFile,
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
export { type DeviceTrace, TraceRecorder } from "./trace.js";
