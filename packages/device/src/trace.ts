// The trace recorder lives in @nuvec/allocator (its trace-format module owns the format, the reader and the
// writer); the Device keeps importing it from here, under the names it always had.
export { type RecordedTrace as DeviceTrace, type TraceOpening, TraceRecorder } from "@nuvec/allocator";
