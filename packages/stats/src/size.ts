/**
 * The virtual-memory page size of Apple silicon, 16 KiB: the allocator's granule for buffers larger
 * than one page, and the default page size of {@link mappingSize}.
 */
export const PAGE = 16 * 1024;

/** The allocator's granule for buffers of up to one {@link PAGE}: 256 bytes. */
export const SMALL = 256;

/** The largest length whose size class `(length + PAGE - 1) & ~(PAGE - 1)` stays a positive int32. */
const INTEGER_ROUNDING_LIMIT = 2 ** 31 - PAGE;

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  return String(value);
}

/**
 * Checks that `value` is a byte count: a non-negative safe integer. Throws a `TypeError` for a value that
 * is not a number and a `RangeError` for a number that is negative, fractional, NaN, infinite or beyond
 * `Number.MAX_SAFE_INTEGER`; the message names the argument and its value.
 *
 * `-0` is accepted as `0`.
 */
export function assertByteCount(value: unknown, name: string): asserts value is number {
  if (typeof value !== "number") {
    throw new TypeError(`${name} must be a number of bytes, got ${typeof value} ${describe(value)}`);
  }
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(
      `${name} must be a non-negative safe integer number of bytes, got ${describe(value)}`,
    );
  }
}

/**
 * The bytes the allocator charges (in `active`) for a buffer of `length` bytes: its size class, 256-byte
 * steps up to one page, whole 16 KiB pages beyond (`0` stays `0`). `undefined` when the size class would
 * be larger than `Number.MAX_SAFE_INTEGER` (the seed's `None` on overflow).
 *
 * @throws TypeError when `length` is not a number; RangeError when it is negative, fractional, NaN or infinite.
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
 * @throws TypeError / RangeError for a bad `length`, or a `pageSize` that is not a positive power of two.
 */
export function mappingSize(length: number, pageSize: number = PAGE): number | undefined {
  assertByteCount(length, "length");
  assertByteCount(pageSize, "pageSize");
  if (pageSize === 0 || (pageSize & (pageSize - 1)) !== 0 || pageSize > 2 ** 30) {
    throw new RangeError(`pageSize must be a power of two between 1 and 1 GiB, got ${pageSize}`);
  }
  if (length === 0) return 0;
  const size = Math.ceil(length / pageSize) * pageSize;
  return size > Number.MAX_SAFE_INTEGER ? undefined : size;
}
