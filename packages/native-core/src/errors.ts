// What a native backend throws, each one of the family's kinds (`@nuvec/stats`) with its code: the addon's
// plain errors become these in one place (addon/call.ts), the mock throws the same.
import { ArgumentError, OutOfMemoryError, StateError, SystemCallError, UnsupportedError } from "@nuvec/stats";

/**
 * An object that only looks like the handle `operation` takes (`Object.create` of the class's prototype, a
 * Proxy of a real one): `argument` is the parameter, or `"this"` for a method called on another object.
 */
export function lookAlike(operation: string, argument: string, what: string): ArgumentError {
  return new ArgumentError(
    argument,
    `${operation}: ${argument} must be ${what}, not an object that looks like one`,
  );
}

/** A handle (buffer, mapping, residency set, backend) used after it was released or closed. */
export function releasedError(message: string): StateError {
  return new StateError("ERR_NUVEC_RELEASED", message);
}

/** A system call failed (`open`, `fstat`, `mmap`, `mlock`, …). */
export function systemCallError(
  syscall: string,
  errno: string,
  errnoNumber: number,
  message: string,
  path?: string,
): SystemCallError {
  return new SystemCallError(message, {
    syscall,
    errno,
    errnoNumber,
    ...(path === undefined ? {} : { path }),
  });
}

/** The system could not give a buffer of `bytes` (Metal returned nil; host `mmap` failed). */
export function allocationFailed(
  bytes: number,
  message: string,
  options?: { cause?: unknown },
): OutOfMemoryError {
  return new OutOfMemoryError("ERR_NUVEC_ALLOCATION_FAILED", message, { requested: bytes, ...options });
}

/** `contents()` of memory the CPU cannot address (CUDA device memory): copy with `read()`/`write()` instead. */
export function notHostVisible(message: string): UnsupportedError {
  return new UnsupportedError("ERR_NUVEC_NOT_HOST_VISIBLE", message);
}
