// The trace recorder lives in @nuvec/allocator (its trace-format module owns the format, the reader and the
// writer); here is what a trace the Device starts opens with.
import type { TraceOpening } from "@nuvec/allocator";
import type { BufferState } from "./device-buffer.js";
import type { LiveBuffers } from "./live-buffers.js";
import type { MappedFile } from "./mapped-file.js";

export { type Trace, type TraceOpening, TraceRecorder } from "@nuvec/allocator";

/**
 * @internal What a trace started now opens with, so that it replays on its own: everything the figures count
 * at that moment. The buffers in `active` at the bytes each is charged (a cache hit can hand out up to twice
 * the request, and the peaks must agree): those whose free waits for a promise, then the live ones, oldest
 * first; the mapped files in `mapped` at their lengths, pending unmaps first; the quarantined buffers. What
 * is in flight is recorded when it lands (the free, the unmap, the give-back), as for anything else.
 */
export function traceOpening(
  buffers: LiveBuffers,
  mappings: Iterable<MappedFile>,
  inFlight: {
    /** Buffers whose free waits for a promise: still in `active`. */
    buffers: Iterable<BufferState>;
    /** Mapped files whose unmap waits for a promise: still in `mapped`. */
    mappings: Iterable<MappedFile>;
    /** Freed buffers the backend still holds (`quarantined`), with their bytes. */
    quarantined: Iterable<readonly [object, number]>;
  },
): TraceOpening {
  return {
    buffers: [...inFlight.buffers, ...buffers.oldestFirst()].map(
      (state) => [state, state.allocation.allocatedLength] as const,
    ),
    mappings: [...inFlight.mappings, ...mappings].map((file) => [file, file.length] as const),
    quarantined: [...inFlight.quarantined],
  };
}
