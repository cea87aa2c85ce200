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
  TraceError,
  WiredLimitError,
} from "./errors.js";
export { type DeviceTrace, type TraceEvent, type TraceHeader, TraceRecorder } from "./trace.js";
