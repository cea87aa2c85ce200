import { ArgumentError } from "./errors.js";

/**
 * The virtual-memory page size of Apple silicon, 16 KiB: the allocator's granule for buffers larger
 * than one page, and the default page size of {@link mappingSize}.
 */
export const PAGE = 16 * 1024;

/** The allocator's granule for buffers of up to one {@link PAGE}: 256 bytes. */
export const SMALL = 256;

/** The largest length whose size class `(length + PAGE - 1) & ~(PAGE - 1)` stays a positive int32. */
const INTEGER_ROUNDING_LIMIT = 2 ** 31 - PAGE;

/**
 * A value as nuvec's error messages show it: strings quoted, bigints with `n`, `-0` kept, objects by their
 * tag (`[object Object]`; never their own `toString`, which may throw or lie). The one describer of every
 * package's argument errors.
 */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  if ((typeof value === "object" && value !== null) || typeof value === "function") {
    return Object.prototype.toString.call(value);
  }
  return String(value);
}

/** The range a byte count must fall in, for {@link byteCountProblem}. */
export interface ByteCountRange {
  /** The smallest count accepted (default 0; 1 for a buffer's length). */
  readonly minimum?: number;
  /** The largest count accepted (default `Number.MAX_SAFE_INTEGER`). */
  readonly maximum?: number;
  /** What the message calls the maximum (`maxBufferLength`); its figure is shown beside it. */
  readonly maximumName?: string;
}

/** Why a value is not a byte count: `type` for a non-number, `range` for a number out of range. */
export interface ByteCountProblem {
  readonly kind: "type" | "range";
  readonly message: string;
}

/**
 * Why `value` is not a byte count named `name` in `range` (a safe integer from `minimum` to `maximum`), or
 * `undefined` when it is. The one byte-count check of every nuvec package: each throws an
 * {@link ArgumentError} with this message (see {@link assertByteCount}).
 */
export function byteCountProblem(
  value: unknown,
  name: string,
  range: ByteCountRange = {},
): ByteCountProblem | undefined {
  const minimum = range.minimum ?? 0;
  const maximum = range.maximum ?? Number.MAX_SAFE_INTEGER;
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= minimum && value <= maximum) {
    return undefined;
  }
  if (typeof value !== "number") {
    return {
      kind: "type",
      message: `${name} must be a number of bytes, got ${typeof value} ${describeValue(value)}`,
    };
  }
  if (Number.isSafeInteger(value) && value > maximum) {
    const limit = range.maximumName ? `${range.maximumName} (${maximum})` : String(maximum);
    return { kind: "range", message: `${name} must be at most ${limit}, got ${value}` };
  }
  const sign = minimum > 0 ? "positive" : "non-negative";
  return {
    kind: "range",
    message: `${name} must be a ${sign} safe integer number of bytes, got ${describeValue(value)}`,
  };
}

/**
 * Checks that `value` is a byte count: a non-negative safe integer. Throws an {@link ArgumentError}
 * (`ERR_NUVEC_INVALID_ARGUMENT`, `argument` set to `name`) for a value that is not a number, or a number that
 * is negative, fractional, NaN, infinite or beyond `Number.MAX_SAFE_INTEGER`; the message names the argument
 * and its value.
 *
 * `-0` is accepted as `0`.
 */
export function assertByteCount(value: unknown, name: string): asserts value is number {
  const problem = byteCountProblem(value, name);
  if (problem === undefined) return;
  throw new ArgumentError(name, problem.message);
}

/**
 * The bytes the allocator charges (in `active`) for a buffer of `length` bytes: its size class, 256-byte
 * steps up to one page, whole 16 KiB pages beyond (`0` stays `0`). `undefined` when the size class would
 * be larger than `Number.MAX_SAFE_INTEGER` (the seed's `None` on overflow).
 *
 * @throws ArgumentError when `length` is not a byte count (a non-number, negative, fractional, NaN or infinite).
 */
export function allocationSize(length: number): number | undefined {
  assertByteCount(length, "length");
  if (length === 0) return 0; // also turns -0 into 0
  // Integer rounding below 2^31 (every buffer a runtime asks for): the allocator's hot path calls this on
  // every malloc, and a floating division costs several times more. The same figures as the general form.
  if (length <= INTEGER_ROUNDING_LIMIT) {
    return length > PAGE ? (length + PAGE - 1) & ~(PAGE - 1) : (length + SMALL - 1) & ~(SMALL - 1);
  }
  const granule = length > PAGE ? PAGE : SMALL;
  const size = Math.ceil(length / granule) * granule;
  return size > Number.MAX_SAFE_INTEGER ? undefined : size;
}

/**
 * The bytes a memory-mapped file of `length` bytes counts in `mapped`: the whole file rounded up to the
 * system's pages (`pageSize`, 16 KiB on Apple silicon, 4 KiB on most Linux). `undefined` when that would
 * be larger than `Number.MAX_SAFE_INTEGER`.
 *
 * @throws ArgumentError for a bad `length`, or a `pageSize` that is not a power of two up to 1 GiB.
 */
export function mappingSize(length: number, pageSize: number = PAGE): number | undefined {
  assertByteCount(length, "length");
  assertByteCount(pageSize, "pageSize");
  if (pageSize === 0 || (pageSize & (pageSize - 1)) !== 0 || pageSize > 2 ** 30) {
    throw new ArgumentError(
      "pageSize",
      `pageSize must be a power of two between 1 and 1 GiB, got ${pageSize}`,
    );
  }
  if (length === 0) return 0;
  const size = Math.ceil(length / pageSize) * pageSize;
  return size > Number.MAX_SAFE_INTEGER ? undefined : size;
}
