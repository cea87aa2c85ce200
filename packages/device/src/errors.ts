import { NuvecArgumentError, NuvecError } from "@nuvec/stats";

/** Codes of the errors the Device throws itself (the allocator's and the backend's keep their own codes). */
export type DeviceErrorCode =
  | "ERR_NUVEC_INVALID_ARGUMENT"
  | "ERR_NUVEC_DEVICE_CLOSED"
  | "ERR_NUVEC_BUFFER_FREED"
  | "ERR_NUVEC_MAPPING_RELEASED"
  | "ERR_NUVEC_FOREIGN_BUFFER"
  | "ERR_NUVEC_WIRED_LIMIT"
  | "ERR_NUVEC_TRACE"
  | "ERR_NUVEC_NOT_HOST_VISIBLE"
  | "ERR_NUVEC_SAFETENSORS";

/** The base class of the errors the Device throws, a {@link NuvecError}: `code` says which. */
export class DeviceError extends NuvecError<DeviceErrorCode> {}

/**
 * A bad argument: a path that is not a non-empty string, an interval that is not positive, …. An instance of
 * {@link NuvecArgumentError} too (`instanceof` holds), as every argument error of nuvec.
 */
export class DeviceArgumentError extends DeviceError {
  constructor(
    /** The argument's name. */
    readonly argument: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("ERR_NUVEC_INVALID_ARGUMENT", message, options);
  }
}
NuvecArgumentError.adopt(DeviceArgumentError);

/** The device was closed: nothing can be allocated, mapped or changed any more. */
export class DeviceClosedError extends DeviceError {
  constructor(operation: string) {
    super("ERR_NUVEC_DEVICE_CLOSED", `${operation}: the device is closed`);
  }
}

/** A buffer was used or freed after it was freed (double free, use after free). */
export class BufferFreedError extends DeviceError {
  constructor(operation: string) {
    super("ERR_NUVEC_BUFFER_FREED", `${operation}: the buffer was already freed`);
  }
}

/** A mapped file was used or released after it was released. */
export class MappingReleasedError extends DeviceError {
  constructor(operation: string) {
    super("ERR_NUVEC_MAPPING_RELEASED", `${operation}: the mapped file was already released`);
  }
}

/** A buffer or mapping of another device was handed to this one. */
export class ForeignBufferError extends DeviceError {
  constructor(operation: string) {
    super("ERR_NUVEC_FOREIGN_BUFFER", `${operation}: the buffer belongs to another device`);
  }
}

/** A wired limit above the device's recommended working set (refused, as MLX does). */
export class WiredLimitError extends DeviceError {
  /** The limit asked for. */
  readonly requested: number;
  /** The largest limit allowed: the recommended max working set. */
  readonly maximum: number;

  constructor(requested: number, maximum: number) {
    super(
      "ERR_NUVEC_WIRED_LIMIT",
      `setWiredLimit(${requested}): a wired limit larger than the maximum working set size (${maximum} bytes) is not allowed`,
    );
    this.requested = requested;
    this.maximum = maximum;
  }
}

/** Trace recording misused: started twice, stopped while not recording. */
export class TraceRecordingError extends DeviceError {
  constructor(message: string) {
    super("ERR_NUVEC_TRACE", message);
  }
}

/** `contents()` of a buffer the CPU cannot address (CUDA device memory): use `read()` and `write()`. */
export class MemoryNotHostVisibleError extends DeviceError {
  constructor(operation: string) {
    super(
      "ERR_NUVEC_NOT_HOST_VISIBLE",
      `${operation}: this device's memory is not host-visible (the CPU cannot address it): copy with read() and write()`,
    );
  }
}

/** A file that is not a well-formed safetensors checkpoint; the message names the tensor and what is wrong. */
export class SafetensorsFormatError extends DeviceError {
  constructor(message: string) {
    super("ERR_NUVEC_SAFETENSORS", message);
  }
}
