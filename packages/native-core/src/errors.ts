import { NuvecArgumentError, NuvecError } from "@nuvec/stats";

/** Codes of the errors a native backend throws. */
export type NativeErrorCode =
  | "ERR_NUVEC_INVALID_ARGUMENT"
  | "ERR_NUVEC_RELEASED"
  | "ERR_NUVEC_SYSTEM"
  | "ERR_NUVEC_ALLOCATION_FAILED"
  | "ERR_NUVEC_NATIVE_UNAVAILABLE"
  | "ERR_NUVEC_NOT_HOST_VISIBLE";

/** The base class of every error a native backend throws, a {@link NuvecError}: `code` says which. */
export class NativeError extends NuvecError<NativeErrorCode> {}

/**
 * A bad argument (negative, fractional, NaN or too large size, bad path type): caught before native code runs.
 * An instance of {@link NuvecArgumentError} too (`instanceof` holds), as every argument error of nuvec.
 */
export class NativeArgumentError extends NativeError {
  constructor(
    /** The argument's name. */
    readonly argument: string,
    message: string,
  ) {
    super("ERR_NUVEC_INVALID_ARGUMENT", message);
  }
}
NuvecArgumentError.adopt(NativeArgumentError);

/** A handle (buffer, mapping, residency set, backend) used after it was released or closed. */
export class NativeReleasedError extends NativeError {
  constructor(message: string) {
    super("ERR_NUVEC_RELEASED", message);
  }
}

/** A system call failed (`open`, `fstat`, `mmap`, `mlock`, …): `syscall`, `errno` (its name) and `path`. */
export class NativeSystemError extends NativeError {
  constructor(
    /** The system call that failed, e.g. `"open"`. */
    readonly syscall: string,
    /** The error's name, e.g. `"ENOENT"`. */
    readonly errno: string,
    /** The error's number on this system, e.g. `2`. */
    readonly errnoNumber: number,
    message: string,
    /** The file concerned, when there is one. */
    readonly path?: string,
  ) {
    super("ERR_NUVEC_SYSTEM", message);
  }
}

/** The system could not give a buffer of the requested size (Metal returned nil; host `mmap` failed). */
export class NativeAllocationError extends NativeError {
  constructor(
    /** The bytes asked for. */
    readonly bytes: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("ERR_NUVEC_ALLOCATION_FAILED", message, options);
  }
}

/**
 * Why the native addon is unavailable:
 * - `no-prebuilt`: no prebuilt package exists for this platform (e.g. musl, linux-ppc64): build from source;
 * - `not-installed`: the platform's package exists but is not installed (optional dependencies omitted);
 * - `load-failed`: an addon was found but did not load (the message has the loader's error);
 * - `backend-unavailable`: the addon loaded but the system has no device for it (no Metal device);
 * - `unsupported-platform`: no native backend exists for this platform at all (Windows).
 */
export type NativeUnavailableReason =
  | "no-prebuilt"
  | "not-installed"
  | "load-failed"
  | "backend-unavailable"
  | "unsupported-platform";

/**
 * The native addon cannot load here: `reason` says why, the message says what is missing and how to build it
 * from source (`npx @nuvec/metal-native build`). The mock (`@nuvec/metal-native/mock`) works anywhere.
 */
export class NativeUnavailableError extends NativeError {
  /** Why: see {@link NativeUnavailableReason}. */
  readonly reason: NativeUnavailableReason;

  constructor(message: string, options?: { cause?: unknown; reason?: NativeUnavailableReason }) {
    super("ERR_NUVEC_NATIVE_UNAVAILABLE", message, options);
    this.reason = options?.reason ?? "load-failed";
  }
}

/** `contents()` of memory the CPU cannot address (CUDA device memory): copy with `read()`/`write()` instead. */
export class NativeNotHostVisibleError extends NativeError {
  constructor(message: string) {
    super("ERR_NUVEC_NOT_HOST_VISIBLE", message);
  }
}
