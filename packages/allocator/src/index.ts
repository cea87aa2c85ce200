// The root of the error family and the kinds the allocator throws (every kind is in `@nuvec/stats`).
export { ArgumentError, FormatError, NuvecError, OutOfMemoryError, StateError } from "@nuvec/stats";
export type { Allocation, Mapping } from "./allocation.js";
export { CachingAllocator } from "./allocator.js";
export { ALLOCATION_FAILED_CODE, type BufferSource, isAllocationFailure } from "./buffer-source.js";
export type { AllocatorCounters } from "./counters.js";
export { CountingBufferSource, CountingMappingSource } from "./counting-source.js";
export type { MappingSource } from "./expandable.js";
export {
  type AllocatorOptions,
  type AllocatorPolicy,
  type BoundedRelease,
  DEFAULT_BOUNDED_RELEASE,
  DEFAULT_POLICY,
  DEFAULT_RESERVE_RATIO,
} from "./options.js";
// A trace checked once and packed, for replaying it many times.
export { PackedTrace, packTrace } from "./packed-trace.js";
// Every policy name and every bounded release order, the default first (tools compare exactly these, the
// option checks accept exactly these).
export { ALLOCATOR_POLICIES, BOUNDED_RELEASES } from "./policy-names.js";
export {
  type ReplayOptions,
  type ReplayResult,
  replayOptionsFromHeader,
  replayTrace,
  TraceReplay,
} from "./replay.js";
export {
  checkSegmentOptions,
  EXPANDABLE_SEGMENT_DEFAULTS,
  SEGMENT_DEFAULTS,
  SEGMENT_OPTIONS_RULE,
  type SegmentOptions,
} from "./segment-options.js";
// The trace format: its events, header and shape test, and the writer a Device records with (the file
// reader is `@nuvec/allocator/node`'s).
export {
  isTraceEvent,
  type Trace,
  type TraceAllocate,
  type TraceAllocatorSetup,
  type TraceClearCache,
  type TraceEvent,
  type TraceFree,
  type TraceHeader,
  type TraceLabel,
  type TraceLimit,
  type TraceMap,
  type TraceMark,
  type TraceOpening,
  type TraceResetPeak,
  type TraceStack,
  type TraceUnmap,
} from "./trace-format.js";
// A map by trace id with no entry limit (what a replay keeps per live id), and the one check of a trace.
export { TraceIdMap } from "./trace-ids.js";
export { TraceRecorder, type TraceRecorderOptions } from "./trace-recorder.js";
export { TraceValidator } from "./trace-validator.js";
