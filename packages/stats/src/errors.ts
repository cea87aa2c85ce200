// The root of every error nuvec throws. It lives here, in the one package every other depends on, because this
// module is pure (no `node:` import): the same class serves the browser-safe packages and the native ones.
//
// Identity never rests on one copy of a class: the ESM and the CommonJS builds of a package hold two copies,
// and so do two installed versions. So an error carries a marker under a registered symbol (`Symbol.for`,
// shared by every copy in the process), as vercel/ai's `AISDKError` does, and `instanceof` on any class of the
// family consults it (`Symbol.hasInstance`) instead of the prototype chain alone.

/** Registered marker on the prototype of every nuvec error, in every build and every installed copy. */
const NUVEC_ERROR = Symbol.for("nuvec.error");
/** Registered marker of the argument errors: {@link NuvecArgumentError} and the packages' argument classes. */
const ARGUMENT_ERROR = Symbol.for("nuvec.error.argument");

function isMarked(value: unknown, marker: symbol): boolean {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    (value as Record<symbol, unknown>)[marker] === true
  );
}

/**
 * The class of everything nuvec throws deliberately: every error class of every `@nuvec/*` package derives
 * from it. `code` is stable across releases (compare it, not the message); docs/ERRORS.md lists every code.
 *
 * `error instanceof NuvecError` (or any subclass) also holds for an error made by another copy of the class,
 * the CommonJS build beside the ESM one or a second installed version: a subclass matches by its name along
 * the error's prototype chain. `NuvecError.isInstance(error)` says the same as a function.
 *
 * `Code` is the union of codes a package's base class may carry (`class DeviceError extends
 * NuvecError<DeviceErrorCode> {}`): a subclass passing any other code does not compile.
 */
export class NuvecError<Code extends string = string> extends Error {
  /** A stable identifier such as `"ERR_NUVEC_OUT_OF_MEMORY"`. */
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }

  /**
   * Whether `value` is an instance of this class, made by any copy of nuvec: `NuvecError.isInstance(e)`,
   * `OutOfMemoryError.isInstance(e)`. The same as `value instanceof ThisClass`.
   */
  static isInstance<T>(this: abstract new (...args: never[]) => T, value: unknown): value is T {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the subclass the method was called on.
    return isInstanceOf(this, value);
  }

  /**
   * `instanceof` for the family: an error of this very copy of the class (the prototype chain), or a nuvec
   * error of another copy whose prototype chain holds a class of the same name.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class on the right of `instanceof`.
    return isInstanceOf(this, value);
  }
}
Object.defineProperty(NuvecError.prototype, NUVEC_ERROR, { value: true });

function isInstanceOf(errorClass: abstract new (...args: never[]) => unknown, value: unknown): boolean {
  if (Function.prototype[Symbol.hasInstance].call(errorClass, value)) return true;
  if (!isMarked(value, NUVEC_ERROR)) return false;
  if (errorClass === NuvecError) return true;
  if (errorClass === NuvecArgumentError) return isMarked(value, ARGUMENT_ERROR);
  // Another copy of the class: the same name along the error's prototype chain. (A class's name is its
  // identity within the family: the packages' export test checks that no two share one.)
  for (let proto = Object.getPrototypeOf(value); proto !== null; proto = Object.getPrototypeOf(proto)) {
    const owner: unknown = Object.hasOwn(proto, "constructor") ? proto.constructor : undefined;
    if (typeof owner === "function" && owner.name === errorClass.name) return true;
  }
  return false;
}

/**
 * A bad argument: a size that is not a byte count, an empty path, an unknown option. Nothing changed.
 * `argument` names it; `code` is `ERR_NUVEC_INVALID_ARGUMENT`, or a more precise code (such as
 * `ERR_NUVEC_BUFFER_TOO_LARGE`) for a subclass.
 *
 * Every argument error of nuvec is an instance of this class, whichever layer found the fault: the packages'
 * own argument classes (`AllocatorArgumentError`, `DeviceArgumentError`, `ResidencyArgumentError`,
 * `NativeArgumentError`) stay subclasses of their package's error class and carry the argument marker that
 * `instanceof NuvecArgumentError` reads.
 */
export class NuvecArgumentError extends NuvecError {
  /** The argument's name, e.g. `"bytes"` or `"path"`. */
  readonly argument: string;

  constructor(argument: string, message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? "ERR_NUVEC_INVALID_ARGUMENT", message, options);
    this.argument = argument;
  }

  /**
   * Makes the instances of `errorClass`, a class of another branch of the family (such as a package's
   * argument class deriving from its package's error class), count as argument errors: `instanceof
   * NuvecArgumentError` holds for them. Its instances must have an `argument` string.
   */
  static adopt(
    errorClass: abstract new (...args: never[]) => NuvecError & { readonly argument: string },
  ): void {
    Object.defineProperty(errorClass.prototype, ARGUMENT_ERROR, { value: true });
  }
}
NuvecArgumentError.adopt(NuvecArgumentError);
