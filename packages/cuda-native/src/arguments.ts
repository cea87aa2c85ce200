// Argument checks of the CUDA backend: the same refusals, with the same errors, as @nuvec/metal-native's
// backends (its src/arguments.ts), made before native code runs; plus offsets, lengths and copy sources.
import { NativeArgumentError } from "@nuvec/metal-native";

/** A value for a message: strings quoted, bigints with `n`, `-0` kept. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "bigint") return `${value}n`;
  if (Object.is(value, -0)) return "-0";
  if (typeof value === "object" && value !== null) return Object.prototype.toString.call(value);
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

/** Checks an offset or a length: a safe integer from 0 to `limit`. */
export function checkRange(value: unknown, name: string, limit: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > limit) {
    throw new NativeArgumentError(
      name,
      `${name} must be a whole number from 0 to ${limit}, got ${typeof value === "number" ? describeValue(value) : `${typeof value} ${describeValue(value)}`}`,
    );
  }
  return value;
}

/** Checks a copy source: an `ArrayBuffer` or an `ArrayBuffer` view (typed array, `DataView`, `Buffer`). */
export function checkSource(source: unknown): ArrayBuffer | ArrayBufferView {
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return source;
  throw new NativeArgumentError(
    "source",
    `source must be an ArrayBuffer or an ArrayBuffer view, got ${typeof source} ${describeValue(source)}`,
  );
}

/** Checks the device ordinal of `loadCudaBackend`: a non-negative safe integer. */
export function checkDeviceOrdinal(device: unknown): number {
  if (typeof device !== "number" || !Number.isSafeInteger(device) || device < 0) {
    throw new NativeArgumentError(
      "device",
      `device must be a CUDA device ordinal (0, 1, …), got ${typeof device} ${describeValue(device)}`,
    );
  }
  return device;
}
