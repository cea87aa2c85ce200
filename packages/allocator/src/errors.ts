import { NuvecArgumentError, NuvecError } from "@nuvec/stats";

/**
 * The base class of every error the allocator throws, a {@link NuvecError}. `code` is stable across releases
 * (compare it, not the message); the subclass says which kind of refusal it was.
 */
export class AllocatorError extends NuvecError {}

/**
 * A buffer or mapping would push `active + mapped` past the memory limit (nuvec's hard limit: MLX only
 * treats its limit as a guideline). Nothing changed.
 */
export class OutOfMemoryError extends AllocatorError {
  constructor(
    /** Bytes the refused request would have added (the size class, or the charged bytes of a mapping). */
    readonly requested: number,
    /** `active` when the request was refused. */
    readonly active: number,
    /** `mapped` when the request was refused. */
    readonly mapped: number,
    /** The memory limit that refused it. */
    readonly limit: number,
    /** `quarantined` when the request was refused: freed buffers held for views moved away. */
    readonly quarantined = 0,
  ) {
    super(
      "ERR_NUVEC_OUT_OF_MEMORY",
      quarantined === 0
        ? `out of memory: ${requested} bytes requested with ${active} active and ${mapped} mapped ` +
            `would exceed the memory limit of ${limit} bytes`
        : `out of memory: ${requested} bytes requested with ${active} active, ${mapped} mapped and ` +
            `${quarantined} quarantined (freed buffers held until the views moved away from them are ` +
            `collected) would exceed the memory limit of ${limit} bytes`,
    );
  }
}

/**
 * One more system buffer or mapped file would exceed the device's resource limit (Metal's limit on live
 * resources), even after the whole cache was released.
 */
export class ResourceLimitError extends AllocatorError {
  constructor(
    /** The device's resource limit. */
    readonly limit: number,
  ) {
    super(
      "ERR_NUVEC_RESOURCE_LIMIT",
      `resource limit exceeded: the device allows at most ${limit} live buffers and mapped files`,
    );
  }
}

/**
 * A bad argument: a size that is not a byte count, a bad option. Nothing changed. An instance of
 * {@link NuvecArgumentError} too (`instanceof` holds), as every argument error of nuvec.
 */
export class AllocatorArgumentError extends AllocatorError {
  constructor(
    /** The argument's name, e.g. `"memoryLimit"`. */
    readonly argument: string,
    message: string,
    options?: { cause?: unknown },
    code = "ERR_NUVEC_INVALID_ARGUMENT",
  ) {
    super(code, message, options);
  }
}
NuvecArgumentError.adopt(AllocatorArgumentError);

/** A request larger than the device's maximum buffer length. Nothing changed. */
export class BufferTooLargeError extends AllocatorArgumentError {
  constructor(
    /** The refused request, in bytes. */
    readonly requested: number,
    /** The device's maximum buffer length. */
    readonly maxBufferLength: number,
  ) {
    super(
      "bytes",
      `cannot allocate ${requested} bytes: larger than the device's maximum buffer length of ${maxBufferLength} bytes`,
      undefined,
      "ERR_NUVEC_BUFFER_TOO_LARGE",
    );
  }
}

/** An allocation or mapping was given back twice. Nothing changed. */
export class DoubleFreeError extends AllocatorError {
  constructor(what: "allocation" | "mapping") {
    super("ERR_NUVEC_DOUBLE_FREE", `this ${what} was already given back`);
  }
}

/** An allocation or mapping that this allocator did not hand out. Nothing changed. */
export class ForeignAllocationError extends AllocatorError {
  constructor(what: "allocation" | "mapping") {
    super("ERR_NUVEC_FOREIGN_ALLOCATION", `this ${what} was not made by this allocator`);
  }
}

/** Any call after `close()`. */
export class AllocatorClosedError extends AllocatorError {
  constructor(operation: string) {
    super("ERR_NUVEC_ALLOCATOR_CLOSED", `cannot ${operation}: the allocator is closed`);
  }
}

/**
 * The buffer source failed to allocate twice: once, then again after the whole cache was released (the
 * retry). `cause` is the source's last error.
 */
export class SystemAllocationError extends AllocatorError {
  constructor(
    /** The size class the source was asked for. */
    readonly requested: number,
    cause: unknown,
  ) {
    super(
      "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
      `the system could not allocate a buffer of ${requested} bytes, even after the cache was released`,
      { cause },
    );
  }
}

/** A trace that cannot be replayed or read: missing, empty, corrupt, or with an impossible event. */
export class TraceError extends AllocatorError {}
