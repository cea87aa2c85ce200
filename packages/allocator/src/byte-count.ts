import { ArgumentError, byteCountProblem } from "@nuvec/stats";

/**
 * The allocator's one check of a byte count at its public API (sizes, limits, the source's facts): a
 * non-negative safe integer, else an `ArgumentError` naming the argument. Callers (the Device) rely on
 * it and do not check again.
 */
export function checkedByteCount(value: unknown, name: string): number {
  // `+ 0` reads -0 as 0: a limit set to -0 reads back 0.
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) return value + 0;
  const problem = byteCountProblem(value, name);
  if (problem) throw new ArgumentError(name, problem.message);
  return value as number;
}

/**
 * Bytes of freed buffers the source still holds for a view moved out of its reach, counted against the
 * memory limit. One object, shared by the allocator (which counts) and the segments policy (which checks).
 */
export interface QuarantineCount {
  bytes: number;
}
