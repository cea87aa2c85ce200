// The recorder lives in @nuvec/allocator (its trace-format module owns the format and the reader,
// trace-recorder the writer); here is a Device's trace: what it opens with, the call stacks it records
// (trace-stacks.ts) and the file it may stream to (trace-file.ts).
import { type Trace, type TraceOpening, TraceRecorder } from "@nuvec/allocator";
import type { BufferState } from "./device-buffer.js";
import type { LiveBuffers } from "./live-buffers.js";
import type { MappedFile } from "./mapped-file.js";
import { TraceFileWriter } from "./trace-file.js";
import type { checkTraceOptions } from "./trace-options.js";
import { captureStack } from "./trace-stacks.js";

export type { Trace, TraceOpening } from "@nuvec/allocator";

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
    // A mapped file is labelled by its path.
    mappings: [...inFlight.mappings, ...mappings].map((file) => [file, file.length, file.path] as const),
    quarantined: [...inFlight.quarantined],
  };
}

/**
 * @internal A trace a Device records: the allocator's recorder, with the call stack of each allocation when
 * asked (`stacks`), streaming its events to a file when asked (`file`), under a limit when asked (`limit`).
 */
export class DeviceTrace extends TraceRecorder {
  readonly #frames: number;
  readonly #file: TraceFileWriter | undefined;

  /**
   * Opens the file of `options` (checked by `checkTraceOptions`), if any, and writes its header: a refusal
   * (a file that cannot be opened or written) leaves nothing behind.
   */
  static start(
    options: ReturnType<typeof checkTraceOptions>,
    opening: () => TraceOpening,
    operation: string,
  ): DeviceTrace {
    const file = options.file === undefined ? undefined : new TraceFileWriter(options.file, operation);
    try {
      const trace = new DeviceTrace(options, opening(), file);
      file?.writeNow(`${JSON.stringify(trace.openingHeader())}\n`, operation);
      return trace;
    } catch (error) {
      try {
        file?.close(operation);
      } catch {}
      throw error;
    }
  }

  private constructor(
    options: ReturnType<typeof checkTraceOptions>,
    opening: TraceOpening,
    file: TraceFileWriter | undefined,
  ) {
    const frames = options.stacks ?? 0;
    // The sink's bytes are made when the file writer drains, which is never before the header is written
    // (after this constructor): `this` is read only then.
    super(options.name, opening, {
      ...(options.limit === undefined ? {} : { limit: options.limit }),
      ...(file === undefined
        ? {}
        : {
            sink: (words: Float64Array, length: number) =>
              file.enqueue(() => (this as DeviceTrace).ndjsonBytesOf(words, length)),
          }),
      header: {
        ...(file === undefined ? {} : { file: options.file }),
        ...(frames === 0 ? {} : { stack_frames: frames }),
      },
    });
    this.#frames = frames;
    this.#file = file;
  }

  /**
   * Records an allocation with its label and, under `stacks`, the call stack above the Device's `malloc`
   * (this method's caller).
   */
  override allocate(buffer: object, bytes: number, label?: string): number {
    const stack =
      this.#frames === 0 || this.limitReached
        ? undefined
        : captureStack(this.#frames, 1, DeviceTrace.prototype.allocate);
    return super.allocate(buffer, bytes, label, stack);
  }

  /**
   * The trace, its file (if any) written to the end and closed.
   *
   * @throws SystemCallError when a write to the file failed (the file closed; the trace ended all the same).
   */
  stop(operation: string): Trace {
    const trace = this.finish();
    this.#file?.close(operation);
    return trace;
  }
}
