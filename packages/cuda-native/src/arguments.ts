// Argument checks of the CUDA backend beyond those of the shared addon wrappers (sizes, paths, sets, copies,
// allocations of another backend): counts of the bench calls and the device ordinal.
// Made before native code runs, with the same error class and the same describer as every nuvec package.
import { ArgumentError, describeValue } from "@nuvec/stats";

export { checkByteCount } from "@nuvec/metal-native/addon";

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
