// The root of the family, so that one import is enough to catch any nuvec error.
export { NuvecArgumentError, NuvecError } from "@nuvec/stats";
export {
  ALLOCATION_FAILED_CODE,
  type Allocation,
  type AllocatorCounters,
  type AllocatorOptions,
  type AllocatorPolicy,
  type BoundedRelease,
  type BufferSource,
  CachingAllocator,
  DEFAULT_RESERVE_RATIO,
  isAllocationFailure,
  type Mapping,
} from "./allocator.js";
export {
  AllocatorArgumentError,
  AllocatorClosedError,
  AllocatorError,
  BufferTooLargeError,
  DoubleFreeError,
  ForeignAllocationError,
  OutOfMemoryError,
  ResourceLimitError,
  SystemAllocationError,
  TraceError,
} from "./errors.js";
export {
  CountingBufferSource,
  type ReplayOptions,
  type ReplayResult,
  replayTrace,
  TraceReplay,
  TraceValidator,
} from "./replay.js";
// The trace format: its events, header and shape test, and the writer a Device records with (the file
// reader is `@nuvec/allocator/node`'s).
export {
  isTraceEvent,
  type RecordedTrace,
  type TraceAllocate,
  type TraceClearCache,
  type TraceEvent,
  type TraceFree,
  type TraceHeader,
  type TraceLimit,
  type TraceMap,
  type TraceOpening,
  TraceRecorder,
  type TraceResetPeak,
  type TraceUnmap,
} from "./trace-format.js";
