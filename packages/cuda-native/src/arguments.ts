// Argument checks of the CUDA backend beyond those of @nuvec/metal-native's wrappers (sizes, paths, sets,
// allocations of another backend): offsets, lengths and copy sources of `read`/`write`, the device ordinal.
// Made before native code runs, with the same error class and the same describer as every nuvec package.
import { ArgumentError, byteCountProblem, describeValue } from "@nuvec/stats";

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

/** Checks a count of repetitions (benchmarks): a safe integer from 0 to `maximum`. */
export function checkCount(value: unknown, name: string, maximum: number): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > maximum) {
    throw new ArgumentError(
      name,
      `${name} must be a whole number from 0 to ${maximum}, got ${typeof value} ${describeValue(value)}`,
    );
  }
  return value;
}

/** Checks the device ordinal of `loadCudaBackend`: a non-negative safe integer. */
export function checkDeviceOrdinal(device: unknown): number {
  if (typeof device !== "number" || !Number.isSafeInteger(device) || device < 0) {
    throw new ArgumentError(
      "device",
      `device must be a CUDA device ordinal (0, 1, …), got ${typeof device} ${describeValue(device)}`,
    );
  }
  return device;
}
