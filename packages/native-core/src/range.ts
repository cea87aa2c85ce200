// What every backend's buffer ranges share: the check of a range's place in its segment, and where a
// range's memory is for native code (the segment's pointers moved by the offset).
import { ArgumentError, byteCountProblem } from "@nuvec/stats";
import type { NativeMemoryHandle } from "./types.js";

/**
 * Checks `offset` and `length` of a range of a `segmentLength`-byte buffer: whole numbers, `length ≥ 1`,
 * `offset + length ≤ segmentLength`; else an {@link ArgumentError} naming the argument.
 */
export function checkRange(offset: unknown, length: unknown, segmentLength: number): void {
  const offsetProblem = byteCountProblem(offset, "offset", {
    maximum: segmentLength - 1,
    maximumName: "the segment's length less one",
  });
  if (offsetProblem) throw new ArgumentError("offset", offsetProblem.message);
  const lengthProblem = byteCountProblem(length, "length", {
    minimum: 1,
    maximum: segmentLength - (offset as number),
    maximumName: "the bytes after offset",
  });
  if (lengthProblem) throw new ArgumentError("length", lengthProblem.message);
}

/**
 * The handle of memory `offset` bytes into the memory of `handle`: every address (`address`, CUDA's
 * `devicePointer`, Metal's `gpuAddress`) moved by `offset`; Metal's `metalBuffer` stays the segment's, with
 * `offset` saying where in it the range begins (bind it at that offset). Frozen.
 */
export function offsetHandle<Handle extends NativeMemoryHandle>(handle: Handle, offset: number): Handle {
  const moved: Record<string, unknown> = { ...handle };
  const by = BigInt(offset);
  for (const field of ["address", "devicePointer", "gpuAddress"]) {
    const value = moved[field];
    if (typeof value === "bigint" && value !== 0n) moved[field] = value + by;
  }
  if ("metalBuffer" in moved) moved.offset = ((handle as { offset?: number }).offset ?? 0) + offset;
  return Object.freeze(moved) as Handle;
}
