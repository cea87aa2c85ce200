// The trace recorder lives in @nuvec/allocator (its trace-format module owns the format, the reader and the
// writer); here is what a trace the Device starts opens with.
import type { TraceOpening } from "@nuvec/allocator";
import type { LiveBuffers } from "./live-buffers.js";
import type { MappedFile } from "./mapped-file.js";

export { type Trace, type TraceOpening, TraceRecorder } from "@nuvec/allocator";

/**
 * @internal What a trace started now opens with, so that it replays on its own: the live buffers, oldest first, at
 * the bytes each is charged (a cache hit can hand out up to twice the request, and the peaks must agree),
 * and the mapped files at their lengths.
 */
export function traceOpening(buffers: LiveBuffers, mappings: Iterable<MappedFile>): TraceOpening {
  return {
    buffers: buffers.oldestFirst().map((state) => [state, state.allocation.allocatedLength] as const),
    mappings: [...mappings].map((file) => [file, file.length] as const),
  };
}
