// Argument checks shared by every backend of this package (the addon's wrapper and the mock), so that both
// refuse the same values with the same errors before anything changes — and before native code runs.
import { NativeArgumentError } from "./errors.js";

/** A value for a message: strings quoted, bigints with `n`, `-0` kept. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  return String(value);
}

/** Checks a buffer length: a positive safe integer no larger than `maxBufferLength`. */
export function checkBufferLength(bytes: unknown, maxBufferLength: number): number {
  if (typeof bytes !== "number") {
    throw new NativeArgumentError(
      "bytes",
      `bytes must be a number of bytes, got ${typeof bytes} ${describeValue(bytes)}`,
    );
  }
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new NativeArgumentError(
      "bytes",
      `bytes must be a positive safe integer number of bytes, got ${describeValue(bytes)}`,
    );
  }
  if (bytes > maxBufferLength) {
    throw new NativeArgumentError(
      "bytes",
      `bytes must be at most maxBufferLength (${maxBufferLength}), got ${bytes}`,
    );
  }
  return bytes;
}

/** Checks a file path: a non-empty string without NUL characters (which the system would cut short). */
export function checkPath(path: unknown): string {
  if (typeof path !== "string") {
    throw new NativeArgumentError("path", `path must be a string, got ${typeof path} ${describeValue(path)}`);
  }
  if (path.length === 0) throw new NativeArgumentError("path", "path must not be empty");
  if (path.includes("\0")) {
    throw new NativeArgumentError(
      "path",
      `path must not contain a NUL character, got ${JSON.stringify(path)}`,
    );
  }
  return path;
}
