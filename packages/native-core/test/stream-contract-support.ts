// What the stream contract suite's tests share: launch shapes, float bytes, kernel arguments, typed errors.
import type { NuvecError, NuvecErrorCode } from "@nuvec/stats";
import { expect } from "vitest";
import type { NativeAllocation, NativeKernelArgument, NativeLaunchShape } from "../src/index.js";
import { thrown } from "./support.js";

/** The launch shape of `n` elements, one per thread: blocks of 64. */
export function elementsShape(n: number): NativeLaunchShape {
  return { grid: [Math.max(1, Math.ceil(n / 64)), 1, 1], block: [64, 1, 1], sharedBytes: 0 };
}

/** The bytes of `values` as 32-bit floats. */
export function f32Bytes(values: readonly number[]): Uint8Array {
  return new Uint8Array(Float32Array.from(values).buffer);
}

/** `bytes` read as 32-bit floats. */
export function asFloats(bytes: Uint8Array): number[] {
  return [...new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))];
}

export const buffer = (allocation: NativeAllocation, offset = 0): NativeKernelArgument => ({
  kind: "buffer",
  buffer: allocation,
  offset,
});
export const f32 = (value: number): NativeKernelArgument => ({ kind: "f32", value });
export const u32 = (value: number): NativeKernelArgument => ({ kind: "u32", value });

/** Expects `action` to throw a {@link NuvecError} of class `type` with `code`; returns it. */
export function expectError<T extends NuvecError>(
  action: () => unknown,
  type: abstract new (...args: never[]) => T,
  code: NuvecErrorCode,
): T {
  const error = thrown(action);
  expect(error).toBeInstanceOf(type);
  expect((error as NuvecError).code).toBe(code);
  return error as T;
}
