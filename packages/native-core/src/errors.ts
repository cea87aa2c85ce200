// What a native backend throws, each one of the family's kinds (`@nuvec/stats`) with its code: the addon's
// plain errors become these in one place (addon/call.ts), the mock throws the same.
import {
  ArgumentError,
  FormatError,
  OutOfMemoryError,
  StateError,
  SystemCallError,
  UnsupportedError,
} from "@nuvec/stats";

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

/**
 * A module of kernels that cannot be loaded (`ERR_NUVEC_MODULE`): its source has no entry for this backend, or
 * the entry does not compile or load. `log` (the compiler's or loader's text) is appended to the message and
 * kept whole in the error's `log`.
 */
export function moduleError(message: string, log?: string): FormatError {
  if (log === undefined || log === "") return new FormatError("ERR_NUVEC_MODULE", message);
  return new FormatError("ERR_NUVEC_MODULE", `${message}:\n${log}`, { log });
}

/** `module.kernel(name)` of a name the module does not have (`ERR_NUVEC_KERNEL_NOT_FOUND`). */
export function kernelNotFound(message: string): FormatError {
  return new FormatError("ERR_NUVEC_KERNEL_NOT_FOUND", message);
}
