// The Device's own refusals, each one of the family's kinds (`@nuvec/stats`) with its code and message. The
// allocator's and the backend's errors reach Device users unchanged.
import { ArgumentError, FormatError, StateError, UnsupportedError } from "@nuvec/stats";

/** The device was closed: nothing can be allocated, mapped or changed any more. */
export function deviceClosed(operation: string): StateError {
  return new StateError("ERR_NUVEC_DEVICE_CLOSED", `${operation}: the device is closed`);
}

/** A buffer used or freed after it was freed (double free, use after free). */
export function bufferFreed(operation: string): StateError {
  return new StateError("ERR_NUVEC_BUFFER_FREED", `${operation}: the buffer was already freed`);
}

/** A mapped file used or freed after it was freed. */
export function mappingFreed(operation: string): StateError {
  return new StateError("ERR_NUVEC_MAPPING_FREED", `${operation}: the mapped file was already freed`);
}

/** A buffer or mapped file of another device handed to this one. */
export function foreignBuffer(operation: string): ArgumentError {
  return new ArgumentError("handle", `${operation}: the buffer or mapped file belongs to another device`, {
    code: "ERR_NUVEC_FOREIGN_BUFFER",
  });
}

/**
 * A wired limit above the device's recommended working set (refused, as MLX does): `setWiredLimit(bytes)`,
 * or `Device.open`'s `wiredLimit` option (`argument` "wiredLimit").
 */
export function wiredLimitTooLarge(requested: number, maximum: number, argument = "bytes"): ArgumentError {
  const where = argument === "bytes" ? `setWiredLimit(${requested})` : "Device.open()";
  return new ArgumentError(
    argument,
    `${where}: a wired limit larger than the maximum working set size (${maximum} bytes) is not allowed`,
    { code: "ERR_NUVEC_WIRED_LIMIT", requested, maximum },
  );
}

/** Trace recording misused: started twice, stopped while not recording. */
export function traceRecording(message: string): StateError {
  return new StateError("ERR_NUVEC_TRACE_RECORDING", message);
}

/** `contents()` of a buffer the CPU cannot address (CUDA device memory): use `read()` and `write()`. */
export function notHostVisible(operation: string): UnsupportedError {
  return new UnsupportedError(
    "ERR_NUVEC_NOT_HOST_VISIBLE",
    `${operation}: this device's memory is not host-visible (the CPU cannot address it): copy with read() and write()`,
  );
}

/**
 * A file that is not a well-formed safetensors checkpoint, or changed while it was mapped: the message says
 * what is wrong, `tensor` and `field` name where (the tensor, when one is at fault).
 */
export function safetensorsFormat(
  message: string,
  where: { tensor?: string; field: string; cause?: unknown },
): FormatError {
  return new FormatError("ERR_NUVEC_SAFETENSORS", message, where);
}

/**
 * An object that only looks like what `operation` takes (`Object.create` of the class's prototype, a Proxy of
 * a real one, a copy): `argument` is the parameter, or `"this"` for a method called on another object.
 */
export function lookAlike(operation: string, argument: string, what: string): ArgumentError {
  return new ArgumentError(
    argument,
    `${operation}: ${argument} must be ${what}, not an object that looks like one`,
  );
}
