export {
  type Allocation,
  type AllocatorCounters,
  type AllocatorOptions,
  type AllocatorPolicy,
  type BoundedRelease,
  type BufferSource,
  CachingAllocator,
  DEFAULT_RESERVE_RATIO,
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
  type TraceAllocate,
  type TraceEvent,
  type TraceFree,
  type TraceHeader,
} from "./replay.js";
