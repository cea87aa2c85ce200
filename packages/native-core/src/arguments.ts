// Argument checks shared by every backend (the addon wrapper and the mock), so that all
// refuse the same values with the same errors before anything changes — and before native code runs.
import { ArgumentError, byteCountProblem, describeValue } from "@nuvec/stats";

/** Checks a buffer length: a positive safe integer no larger than `maxBufferLength`. */
export function checkBufferLength(bytes: unknown, maxBufferLength: number): number {
  const problem = byteCountProblem(bytes, "bytes", {
    minimum: 1,
    maximum: maxBufferLength,
    maximumName: "maxBufferLength",
  });
  if (problem) throw new ArgumentError("bytes", problem.message);
  return bytes as number;
}

/**
 * Checks the length of a view (`contents(length)`): a whole number of bytes from 1 to `available`, the
 * bytes of the buffer or range.
 */
export function checkViewLength(length: unknown, available: number): number {
  if (typeof length !== "number" || !Number.isSafeInteger(length) || length < 1 || length > available) {
    throw new ArgumentError(
      "length",
      `contents(length): length must be a whole number of bytes from 1 to ${available}, got ${describeValue(length)}`,
    );
  }
  return length;
}

/** Checks a file path: a non-empty string without NUL characters (which the system would cut short). */
export function checkPath(path: unknown): string {
  if (typeof path !== "string") {
    throw new ArgumentError("path", `path must be a string, got ${typeof path} ${describeValue(path)}`);
  }
  if (path.length === 0) throw new ArgumentError("path", "path must not be empty");
  if (path.includes("\0")) {
    throw new ArgumentError("path", `path must not contain a NUL character, got ${JSON.stringify(path)}`);
  }
  return path;
}

/** Checks a pointer argument: `undefined`, or a `bigint` in (0, 2^64). */
export function checkOptionalPointer(value: unknown, name: string): asserts value is bigint | undefined {
  if (value === undefined) return;
  if (typeof value !== "bigint" || value <= 0n || value >= 1n << 64n) {
    throw new ArgumentError(
      name,
      `${name} must be a non-zero 64-bit pointer given as a bigint, got ${describeValue(value)}`,
    );
  }
}

/** Checks a byte count (an offset, a length, a size) from `minimum` (default 0) to `maximum`. */
export function checkByteCount(value: unknown, name: string, maximum: number, minimum = 0): number {
  const problem = byteCountProblem(value, name, { minimum, maximum });
  if (problem) throw new ArgumentError(name, problem.message);
  return value as number;
}

/** Checks a copy source: an `ArrayBuffer` or an `ArrayBuffer` view (typed array, `DataView`, `Buffer`). */
export function checkSource(source: unknown): ArrayBuffer | ArrayBufferView {
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return source;
  throw new ArgumentError(
    "source",
    `source must be an ArrayBuffer or an ArrayBuffer view, got ${typeof source} ${describeValue(source)}`,
  );
}
