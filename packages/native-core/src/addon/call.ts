import { ArgumentError, FormatError, NativeUnavailableError, NuvecError } from "@nuvec/stats";
import { allocationFailed, notHostVisible, releasedError, systemCallError } from "../errors.js";

/** The fields of an error the addon throws (native/binding.cc's typed errors). */
interface RawError {
  code?: unknown;
  message?: unknown;
  argument?: unknown;
  syscall?: unknown;
  errno?: unknown;
  errnoNumber?: unknown;
  path?: unknown;
  bytes?: unknown;
  log?: unknown;
}

/**
 * Turns an error thrown by an addon into the matching class of errors.ts; anything else passes through. The
 * calls made for every view and copy catch with it themselves rather than through {@link callNative}: no
 * closure per call for the collector.
 */
export function typedError(error: unknown): unknown {
  if (error instanceof NuvecError || typeof error !== "object" || error === null) return error;
  const raw = error as RawError;
  const message = typeof raw.message === "string" ? raw.message : String(error);
  switch (raw.code) {
    case "ERR_NUVEC_INVALID_ARGUMENT":
      return new ArgumentError(typeof raw.argument === "string" ? raw.argument : "argument", message);
    case "ERR_NUVEC_RELEASED":
      return releasedError(message);
    case "ERR_NUVEC_SYSTEM":
      return systemCallError(
        String(raw.syscall),
        String(raw.errno),
        typeof raw.errnoNumber === "number" ? raw.errnoNumber : 0,
        message,
        typeof raw.path === "string" ? raw.path : undefined,
      );
    case "ERR_NUVEC_ALLOCATION_FAILED":
      return allocationFailed(typeof raw.bytes === "number" ? raw.bytes : 0, message, {
        cause: error,
      });
    case "ERR_NUVEC_NATIVE_UNAVAILABLE":
      // The addon loaded: what it lacks is the device (no GPU, no driver, no residency sets).
      return new NativeUnavailableError(message, { cause: error, reason: "backend-unavailable" });
    case "ERR_NUVEC_NOT_HOST_VISIBLE":
      return notHostVisible(message);
    case "ERR_NUVEC_MODULE":
      // A module that does not load: the loader's or compiler's text in `log` (and in the message).
      return new FormatError("ERR_NUVEC_MODULE", message, {
        cause: error,
        ...(typeof raw.log === "string" ? { log: raw.log } : {}),
      });
    case "ERR_NUVEC_KERNEL_NOT_FOUND":
      return new FormatError("ERR_NUVEC_KERNEL_NOT_FOUND", message, { cause: error });
    default:
      return error;
  }
}

/**
 * Runs a call into a nuvec addon: the one place where what it throws (a plain `Error` with a `code`)
 * becomes the matching `NuvecError` class; anything else passes through unchanged.
 */
export function callNative<T>(body: () => T): T {
  try {
    return body();
  } catch (error) {
    throw typedError(error);
  }
}

/**
 * A promise of the addon (a stream's read or done, an event's done) whose rejection becomes the matching
 * `NuvecError` class, as {@link callNative} does for what a call throws.
 */
export function typedPromise<T>(promise: Promise<T>): Promise<T> {
  const typed = promise.catch((error: unknown) => {
    throw typedError(error);
  });
  // Marked handled: a rejection the caller awaits later, or never, must not end the process.
  typed.catch(() => {});
  return typed;
}
