// Every error nuvec throws: one root and seven kinds, the kinds a caller catches by (a bad argument, an object
// used after free or close, out of memory, a failed system call, a native binary that cannot load, a
// malformed trace or checkpoint, an operation the backend does not support). Finer distinctions are `code`s.
// They live here, in the one package every other depends on, because this module is pure (no `node:` import).
//
// Identity never rests on one copy of a class: the ESM and the CommonJS builds of a package hold two copies,
// and so do two installed versions. So each class has a brand, a registered symbol (`Symbol.for`, the same in
// every copy in the process), set on its prototype; `instanceof` is the root's static `Symbol.hasInstance`,
// which checks the root's brand and the brand of the class on the right. That is the one mechanism: no names
// are compared, no class is adopted.

/** Every code nuvec's errors carry, by kind (see {@link ERROR_CODES}). */
export type NuvecErrorCode =
  | ArgumentErrorCode
  | StateErrorCode
  | OutOfMemoryErrorCode
  | "ERR_NUVEC_SYSTEM"
  | "ERR_NUVEC_NATIVE_UNAVAILABLE"
  | FormatErrorCode
  | UnsupportedErrorCode;

/** Codes of {@link ArgumentError}. */
export type ArgumentErrorCode =
  | "ERR_NUVEC_INVALID_ARGUMENT"
  | "ERR_NUVEC_BUFFER_TOO_LARGE"
  | "ERR_NUVEC_WIRED_LIMIT"
  | "ERR_NUVEC_FOREIGN_BUFFER"
  | "ERR_NUVEC_FOREIGN_ALLOCATION";

/** Codes of {@link StateError}. */
export type StateErrorCode =
  | "ERR_NUVEC_BUFFER_FREED"
  | "ERR_NUVEC_MAPPING_FREED"
  | "ERR_NUVEC_DOUBLE_FREE"
  | "ERR_NUVEC_RELEASED"
  | "ERR_NUVEC_DEVICE_CLOSED"
  | "ERR_NUVEC_ALLOCATOR_CLOSED"
  | "ERR_NUVEC_RESIDENCY_CLOSED"
  | "ERR_NUVEC_RESIDENCY_ALREADY_TRACKED"
  | "ERR_NUVEC_RESIDENCY_NOT_TRACKED"
  | "ERR_NUVEC_TRACE_RECORDING";

/** Codes of {@link OutOfMemoryError}. */
export type OutOfMemoryErrorCode =
  | "ERR_NUVEC_OUT_OF_MEMORY"
  | "ERR_NUVEC_RESOURCE_LIMIT"
  | "ERR_NUVEC_ALLOCATION_FAILED"
  | "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED";

/** Codes of {@link FormatError}. */
export type FormatErrorCode =
  | "ERR_NUVEC_TRACE_CORRUPT"
  | "ERR_NUVEC_TRACE_EMPTY"
  | "ERR_NUVEC_TRACE_EVENT"
  | "ERR_NUVEC_TRACE_NOT_A_FILE"
  | "ERR_NUVEC_TRACE_NOT_FOUND"
  | "ERR_NUVEC_TRACE_TOO_LARGE"
  | "ERR_NUVEC_SAFETENSORS"
  | "ERR_NUVEC_MODULE"
  | "ERR_NUVEC_KERNEL_NOT_FOUND";

/** Codes of {@link UnsupportedError}. */
export type UnsupportedErrorCode =
  | "ERR_NUVEC_NOT_HOST_VISIBLE"
  | "ERR_NUVEC_UNSUPPORTED_ENVIRONMENT"
  | "ERR_NUVEC_STREAMS_UNSUPPORTED";

/** The root's brand: every nuvec error's prototype chain carries it. */
const ROOT_BRAND = Symbol.for("nuvec.error");

function hasBrand(value: unknown, brand: symbol): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    (value as Record<symbol, unknown>)[brand] === true
  );
}

/** `value instanceof errorClass`: the root's brand and the class's own, or the prototype chain without one. */
function isInstanceOf(errorClass: object, value: unknown): boolean {
  if (!Object.hasOwn(errorClass, "brand"))
    return Function.prototype[Symbol.hasInstance].call(errorClass, value);
  return hasBrand(value, ROOT_BRAND) && hasBrand(value, (errorClass as { brand: symbol }).brand);
}

/** Gives `errorClass` its brand (`Symbol.for("nuvec.error.<name>")`) and sets it on its prototype. */
function brand(errorClass: abstract new (...args: never[]) => NuvecError, name: string): void {
  const symbol = Symbol.for(`nuvec.error.${name}`);
  Object.defineProperty(errorClass, "brand", { value: symbol });
  Object.defineProperty(errorClass.prototype, symbol, { value: true });
}

/**
 * The root of everything nuvec throws deliberately: catch it for any nuvec error. `code` is stable across
 * releases (compare it, not the message); docs/ERRORS.md lists every class and code.
 *
 * `error instanceof NuvecError` (or any of its seven kinds) holds for an error made by any copy of the class
 * (the CommonJS build beside the ESM one, a second installed version): the brand under `Symbol.for` decides,
 * not the prototype chain of one copy. A class of your own that extends one of them is matched by its own
 * prototype chain.
 */
export class NuvecError<Code extends string = NuvecErrorCode> extends Error {
  /** The brand of this class, a registered symbol; set on the prototype of its instances. */
  static readonly brand: symbol = ROOT_BRAND;
  /** A stable identifier such as `"ERR_NUVEC_OUT_OF_MEMORY"`. */
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /**
   * `value instanceof C` for the root and the seven kinds: a nuvec error (the root's brand) that carries C's
   * own brand, whichever copy of nuvec made it. A class without a brand of its own (one extending a kind)
   * matches by the prototype chain.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class on the right of `instanceof`.
    return isInstanceOf(this, value);
  }
}
Object.defineProperty(NuvecError.prototype, ROOT_BRAND, { value: true });

/**
 * A bad argument: a size that is not a byte count, an empty path, an unknown option, a request larger than
 * the device's maximum buffer (`ERR_NUVEC_BUFFER_TOO_LARGE`) or a wired limit above its working set
 * (`ERR_NUVEC_WIRED_LIMIT`), a buffer of another device (`ERR_NUVEC_FOREIGN_BUFFER`). Nothing changed.
 * `argument` names it; `requested` and `maximum` are set for the two limits.
 */
export class ArgumentError extends NuvecError<ArgumentErrorCode> {
  /** The argument's name, e.g. `"bytes"` or `"path"`. */
  readonly argument: string;
  /** The refused value, for `ERR_NUVEC_BUFFER_TOO_LARGE` and `ERR_NUVEC_WIRED_LIMIT`. */
  readonly requested?: number;
  /** The largest value allowed, for `ERR_NUVEC_BUFFER_TOO_LARGE` and `ERR_NUVEC_WIRED_LIMIT`. */
  readonly maximum?: number;

  constructor(
    argument: string,
    message: string,
    options?: { code?: ArgumentErrorCode; cause?: unknown; requested?: number; maximum?: number },
  ) {
    super(options?.code ?? "ERR_NUVEC_INVALID_ARGUMENT", message, options);
    this.argument = argument;
    if (options?.requested !== undefined) this.requested = options.requested;
    if (options?.maximum !== undefined) this.maximum = options.maximum;
  }
}
brand(ArgumentError, "ArgumentError");

/**
 * An object used when its state does not allow it: a buffer, mapped file or native handle used or freed after
 * it was freed, a device, allocator or residency manager used after `close()`, an allocation tracked twice,
 * trace recording started twice. Nothing changed.
 */
export class StateError extends NuvecError<StateErrorCode> {}
brand(StateError, "StateError");

/**
 * The fields each code of {@link OutOfMemoryError} carries: every refusal nuvec makes sets them all, and the
 * constructor asks for them by code. `error instanceof OutOfMemoryError` narrows to the union of the codes,
 * so `error.code === "ERR_NUVEC_OUT_OF_MEMORY"` then makes `error.active` a `number`.
 */
export interface OutOfMemoryErrorFields {
  /** The memory limit: the request, the figures it was added to, and the limit. */
  ERR_NUVEC_OUT_OF_MEMORY: {
    requested: number;
    active: number;
    mapped: number;
    quarantined: number;
    limit: number;
  };
  /** The device's resource limit: how many live buffers and mapped files it allows. */
  ERR_NUVEC_RESOURCE_LIMIT: { limit: number };
  /** A backend got no buffer from the system: the bytes it asked for. */
  ERR_NUVEC_ALLOCATION_FAILED: { requested: number };
  /** The allocator's retry failed too: the bytes asked for, and the backend's error as `cause`. */
  ERR_NUVEC_SYSTEM_ALLOCATION_FAILED: { requested: number; cause: unknown };
}

/** What an {@link OutOfMemoryError} of code `C` holds beyond the class's own members: its code and fields. */
export type OutOfMemoryErrorOf<C extends OutOfMemoryErrorCode> = { readonly code: C } & Readonly<
  OutOfMemoryErrorFields[C]
>;

/**
 * Every code of {@link OutOfMemoryError} with its fields, one member per code: what `instanceof` narrows an
 * error to (intersected with the class), so that comparing `code` narrows the fields.
 */
export type OutOfMemoryErrorByCode = {
  [C in OutOfMemoryErrorCode]: OutOfMemoryErrorOf<C>;
}[OutOfMemoryErrorCode];

/**
 * Memory refused: a request past the hard memory limit (`ERR_NUVEC_OUT_OF_MEMORY`, with `requested`,
 * `active`, `mapped`, `quarantined`, `limit`), past the device's resource limit (`ERR_NUVEC_RESOURCE_LIMIT`, `limit`), or a
 * system that gave no buffer (`ERR_NUVEC_ALLOCATION_FAILED` from a backend, `requested`, which the allocator
 * retries once after releasing its cache; `ERR_NUVEC_SYSTEM_ALLOCATION_FAILED` when the retry failed too,
 * `requested` and the backend's error as `cause`). Nothing changed but the cache the retry released.
 *
 * The fields are typed by code ({@link OutOfMemoryErrorFields}): after `error instanceof OutOfMemoryError`,
 * `error.code === "ERR_NUVEC_OUT_OF_MEMORY"` makes `active`, `mapped`, `quarantined` and `limit` numbers.
 */
export class OutOfMemoryError extends NuvecError<OutOfMemoryErrorCode> {
  /** Bytes the refused request asked for (a size class, or a mapping's charged bytes); all but `ERR_NUVEC_RESOURCE_LIMIT`. */
  readonly requested?: number;
  /** `active` when the request was refused (`ERR_NUVEC_OUT_OF_MEMORY`). */
  readonly active?: number;
  /** `mapped` when the request was refused (`ERR_NUVEC_OUT_OF_MEMORY`). */
  readonly mapped?: number;
  /** `quarantined` when the request was refused (`ERR_NUVEC_OUT_OF_MEMORY`): freed memory still counted. */
  readonly quarantined?: number;
  /** The limit that refused it (`ERR_NUVEC_OUT_OF_MEMORY`, `ERR_NUVEC_RESOURCE_LIMIT`). */
  readonly limit?: number;

  /** The memory limit refused `requested` bytes with `active + mapped + quarantined` counted. */
  constructor(
    code: "ERR_NUVEC_OUT_OF_MEMORY",
    message: string,
    fields: OutOfMemoryErrorFields["ERR_NUVEC_OUT_OF_MEMORY"] & { cause?: unknown },
  );
  /** The device's resource limit refused one more buffer or mapped file. */
  constructor(
    code: "ERR_NUVEC_RESOURCE_LIMIT",
    message: string,
    fields: OutOfMemoryErrorFields["ERR_NUVEC_RESOURCE_LIMIT"] & { cause?: unknown },
  );
  /** A backend got no buffer of `requested` bytes from the system (`cause`: the system's error, if any). */
  constructor(
    code: "ERR_NUVEC_ALLOCATION_FAILED",
    message: string,
    fields: OutOfMemoryErrorFields["ERR_NUVEC_ALLOCATION_FAILED"] & { cause?: unknown },
  );
  /** The system failed twice for `requested` bytes; `cause` is the backend's last error. */
  constructor(
    code: "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
    message: string,
    fields: OutOfMemoryErrorFields["ERR_NUVEC_SYSTEM_ALLOCATION_FAILED"],
  );
  constructor(
    code: OutOfMemoryErrorCode,
    message: string,
    fields?: {
      requested?: number;
      active?: number;
      mapped?: number;
      quarantined?: number;
      limit?: number;
      cause?: unknown;
    },
  ) {
    super(code, message, fields);
    if (fields?.requested !== undefined) this.requested = fields.requested;
    if (fields?.active !== undefined) this.active = fields.active;
    if (fields?.mapped !== undefined) this.mapped = fields.mapped;
    if (fields?.quarantined !== undefined) this.quarantined = fields.quarantined;
    if (fields?.limit !== undefined) this.limit = fields.limit;
  }

  /**
   * `value instanceof OutOfMemoryError` (or a class of your own extending it): decided as for every kind, by
   * the brands (see {@link NuvecError}); typed so that the error's `code` then narrows its fields.
   */
  static override [Symbol.hasInstance]<T>(
    this: abstract new (
      ...args: never[]
    ) => T,
    value: unknown,
  ): value is T & OutOfMemoryErrorByCode {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class on the right of `instanceof`.
    return isInstanceOf(this, value);
  }
}
brand(OutOfMemoryError, "OutOfMemoryError");

/** A system call failed (`open`, `fstat`, `mmap`, `mlock`, …): code `ERR_NUVEC_SYSTEM`. */
export class SystemCallError extends NuvecError<"ERR_NUVEC_SYSTEM"> {
  /** The system call that failed, e.g. `"open"`. */
  readonly syscall: string;
  /** The error's name, e.g. `"ENOENT"`. */
  readonly errno: string;
  /** The error's number on this system, e.g. `2`. */
  readonly errnoNumber: number;
  /** The file concerned, when there is one. */
  readonly path?: string;

  constructor(
    message: string,
    fields: { syscall: string; errno: string; errnoNumber: number; path?: string; cause?: unknown },
  ) {
    super("ERR_NUVEC_SYSTEM", message, fields);
    this.syscall = fields.syscall;
    this.errno = fields.errno;
    this.errnoNumber = fields.errnoNumber;
    if (fields.path !== undefined) this.path = fields.path;
  }
}
brand(SystemCallError, "SystemCallError");

/**
 * Why a native binary is unavailable:
 * - `no-prebuilt`: no prebuilt package exists for this platform (e.g. musl, linux-ppc64): build from source;
 * - `not-installed`: the platform's package exists but is not installed (optional dependencies omitted);
 * - `damaged`: an addon file is installed but damaged (truncated, empty, not a shared library for this
 *   platform, not a regular file): checked before it is loaded, so it never reaches the dynamic loader;
 *   `path` names it and the message says how to reinstall or rebuild it;
 * - `load-failed`: an addon was found but did not load (the message has the loader's error);
 * - `backend-unavailable`: the addon loaded but the system has no device for it (no Metal device, no GPU);
 * - `unsupported-platform`: no native backend exists for this platform at all (Windows).
 */
export type NativeUnavailableReason =
  | "no-prebuilt"
  | "not-installed"
  | "damaged"
  | "load-failed"
  | "backend-unavailable"
  | "unsupported-platform";

/**
 * A native binary cannot load here (code `ERR_NUVEC_NATIVE_UNAVAILABLE`): `reason` says why, the message what
 * is missing and how to build it from source. The mock backend works anywhere.
 */
export class NativeUnavailableError extends NuvecError<"ERR_NUVEC_NATIVE_UNAVAILABLE"> {
  /** Why: see {@link NativeUnavailableReason}. */
  readonly reason: NativeUnavailableReason;
  /** The addon file concerned, where one was found (always for `damaged`). */
  readonly path?: string;

  constructor(
    message: string,
    options?: { cause?: unknown; reason?: NativeUnavailableReason; path?: string },
  ) {
    super("ERR_NUVEC_NATIVE_UNAVAILABLE", message, options);
    this.reason = options?.reason ?? "load-failed";
    if (options?.path !== undefined) this.path = options.path;
  }
}
brand(NativeUnavailableError, "NativeUnavailableError");

/**
 * A trace or checkpoint that cannot be read: a trace file missing, not a file, empty, corrupt, too large, or
 * with an impossible event (the codes `ERR_NUVEC_TRACE_CORRUPT` and its siblings); a malformed safetensors checkpoint
 * (`ERR_NUVEC_SAFETENSORS`). The message names the line or tensor and what is wrong; for a checkpoint,
 * `tensor` and `field` name them too. A module of kernels that cannot be loaded (`ERR_NUVEC_MODULE`: no entry
 * for this backend, a compile or load failure, the compiler's or loader's text in `log` and in the message), or
 * a kernel name a module lacks (`ERR_NUVEC_KERNEL_NOT_FOUND`).
 */
export class FormatError extends NuvecError<FormatErrorCode> {
  /** The checkpoint's tensor at fault, as its header names it (`ERR_NUVEC_SAFETENSORS`; absent for the file's own fields). */
  declare readonly tensor?: string;
  /**
   * What of the checkpoint is wrong (`ERR_NUVEC_SAFETENSORS`): `"header_length"` (the 8-byte prefix),
   * `"header"` (the JSON), a tensor's `"entry"` (not an object), `"dtype"`, `"shape"` or `"data_offsets"`,
   * `"__metadata__"`, or `"file"` (the file changed while it was being mapped).
   */
  declare readonly field?: string;
  /** A module that does not compile or load (`ERR_NUVEC_MODULE`): the compiler's or loader's log, whole. */
  declare readonly log?: string;

  constructor(
    code: FormatErrorCode,
    message: string,
    fields?: { tensor?: string; field?: string; log?: string; cause?: unknown },
  ) {
    super(code, message, fields);
    if (fields?.tensor !== undefined) this.tensor = fields.tensor;
    if (fields?.field !== undefined) this.field = fields.field;
    if (fields?.log !== undefined) this.log = fields.log;
  }
}
brand(FormatError, "FormatError");

/**
 * An operation this backend or environment does not support: `contents()` of memory the CPU cannot address
 * (`ERR_NUVEC_NOT_HOST_VISIBLE`, CUDA device memory: copy with `read()` and `write()`); a JavaScript
 * environment without what a Device needs, such as `FinalizationRegistry` for its safety net
 * (`ERR_NUVEC_UNSUPPORTED_ENVIRONMENT`).
 */
export class UnsupportedError extends NuvecError<UnsupportedErrorCode> {}
brand(UnsupportedError, "UnsupportedError");

/** Every kind and the codes it carries: what docs/ERRORS.md lists and its test checks against. */
export const ERROR_CODES: Readonly<Record<string, readonly NuvecErrorCode[]>> = Object.freeze({
  ArgumentError: [
    "ERR_NUVEC_INVALID_ARGUMENT",
    "ERR_NUVEC_BUFFER_TOO_LARGE",
    "ERR_NUVEC_WIRED_LIMIT",
    "ERR_NUVEC_FOREIGN_BUFFER",
    "ERR_NUVEC_FOREIGN_ALLOCATION",
  ],
  StateError: [
    "ERR_NUVEC_BUFFER_FREED",
    "ERR_NUVEC_MAPPING_FREED",
    "ERR_NUVEC_DOUBLE_FREE",
    "ERR_NUVEC_RELEASED",
    "ERR_NUVEC_DEVICE_CLOSED",
    "ERR_NUVEC_ALLOCATOR_CLOSED",
    "ERR_NUVEC_RESIDENCY_CLOSED",
    "ERR_NUVEC_RESIDENCY_ALREADY_TRACKED",
    "ERR_NUVEC_RESIDENCY_NOT_TRACKED",
    "ERR_NUVEC_TRACE_RECORDING",
  ],
  OutOfMemoryError: [
    "ERR_NUVEC_OUT_OF_MEMORY",
    "ERR_NUVEC_RESOURCE_LIMIT",
    "ERR_NUVEC_ALLOCATION_FAILED",
    "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED",
  ],
  SystemCallError: ["ERR_NUVEC_SYSTEM"],
  NativeUnavailableError: ["ERR_NUVEC_NATIVE_UNAVAILABLE"],
  FormatError: [
    "ERR_NUVEC_TRACE_CORRUPT",
    "ERR_NUVEC_TRACE_EMPTY",
    "ERR_NUVEC_TRACE_EVENT",
    "ERR_NUVEC_TRACE_NOT_A_FILE",
    "ERR_NUVEC_TRACE_NOT_FOUND",
    "ERR_NUVEC_TRACE_TOO_LARGE",
    "ERR_NUVEC_SAFETENSORS",
    "ERR_NUVEC_MODULE",
    "ERR_NUVEC_KERNEL_NOT_FOUND",
  ],
  UnsupportedError: [
    "ERR_NUVEC_NOT_HOST_VISIBLE",
    "ERR_NUVEC_UNSUPPORTED_ENVIRONMENT",
    "ERR_NUVEC_STREAMS_UNSUPPORTED",
  ],
});
