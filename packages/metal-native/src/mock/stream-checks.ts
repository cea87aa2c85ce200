// What the mock's streams check before they enqueue anything: the allocations an operation names (of this
// backend, not released), byte spans inside them, a launch's shape and its arguments against the kernel's
// parameters. A refused call enqueues nothing and changes no counter.
import type { NativeKernelArgument, NativeLaunchShape } from "@nuvec/native-core";
import { checkByteCount, releasedError } from "@nuvec/native-core";
import { ArgumentError, describeValue } from "@nuvec/stats";
import { isMockMemory, MockBufferRange, type MockStreamHold, streamHoldOf } from "./buffer.js";
import type { MockCore } from "./core.js";
import { fileHoldOf, isMockMappedFile } from "./mapped-file.js";
import type { MockKernelHandle } from "./modules.js";

/** An allocation an operation names, checked: its label, its length, and its stream hold. */
export interface NamedAllocation {
  readonly label: string;
  readonly length: number;
  readonly hold: MockStreamHold;
}

/**
 * `value` as an allocation of this backend an operation can name: a live buffer or range (or, unless
 * `buffersOnly`, a mapped file). An `ArgumentError` naming `argument` for anything else, a `StateError`
 * (`ERR_NUVEC_RELEASED`) for a released one.
 */
export function namedAllocation(
  core: MockCore,
  value: unknown,
  argument: string,
  operation: string,
  buffersOnly: boolean,
): NamedAllocation {
  const buffer = isMockMemory(value);
  const file = !buffer && !buffersOnly && isMockMappedFile(value);
  // A range is its segment's: of this backend when the segment is.
  const made = value instanceof MockBufferRange ? value.segment : value;
  if ((!buffer && !file) || !core.isOwnAllocation(made)) {
    const what = buffersOnly ? "a buffer" : "a buffer or mapped file";
    throw new ArgumentError(argument, `${operation}: ${argument} must be ${what} of this mock backend`);
  }
  if (value.released) throw releasedError(`${operation}: ${argument} (${value.label}) was already released`);
  const length = (value as { length: number }).length;
  const hold = buffer ? streamHoldOf(value) : fileHoldOf(value as Parameters<typeof fileHoldOf>[0]);
  return { label: value.label, length, hold };
}

/** Checks `offset` and `length` of a span of `size` bytes (each a byte count, the span inside). */
export function checkSpan(offset: unknown, length: unknown, size: number, names: [string, string]): void {
  checkByteCount(offset, names[0], size);
  checkByteCount(length, names[1], size - (offset as number));
}

const LARGEST_DIMENSION = 2 ** 31 - 1;

/** Checks a launch shape: `grid` and `block` three positive integers each, `sharedBytes` a byte count. */
export function checkShape(shape: unknown): NativeLaunchShape {
  if (typeof shape !== "object" || shape === null) {
    throw new ArgumentError("shape", `launch(): shape must be an object, got ${describeValue(shape)}`);
  }
  const { grid, block, sharedBytes } = shape as NativeLaunchShape;
  for (const [name, dimensions] of [
    ["grid", grid],
    ["block", block],
  ] as const) {
    const ok =
      Array.isArray(dimensions) &&
      dimensions.length === 3 &&
      dimensions.every((value) => Number.isSafeInteger(value) && value >= 1 && value <= LARGEST_DIMENSION);
    if (!ok) {
      throw new ArgumentError(
        `shape.${name}`,
        `launch(): shape.${name} must be three positive integers, got ${describeValue(dimensions)}`,
      );
    }
  }
  checkByteCount(sharedBytes, "shape.sharedBytes", Number.MAX_SAFE_INTEGER);
  return Object.freeze({
    grid: Object.freeze([grid[0], grid[1], grid[2]] as const),
    block: Object.freeze([block[0], block[1], block[2]] as const),
    sharedBytes,
  });
}

/** A launch's argument, checked: a named allocation and offset, or the scalar as the kernel gets it. */
export type CheckedArgument =
  | { readonly allocation: NamedAllocation; readonly offset: number }
  | number
  | bigint;

const INTEGER_RANGES = {
  i32: [-(2 ** 31), 2 ** 31 - 1],
  u32: [0, 2 ** 32 - 1],
} as const;

const BIGINT_RANGES = {
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u64: [0n, 2n ** 64n - 1n],
} as const;

/**
 * Checks `args` against `kernel.parameters`: as many, each of the parameter's kind, buffers of this backend
 * and live with an offset inside, integers in their kind's range (i64/u64 as bigints), floats numbers.
 */
export function checkArguments(core: MockCore, kernel: MockKernelHandle, args: unknown): CheckedArgument[] {
  const parameters = kernel.parameters;
  if (!Array.isArray(args) || args.length !== parameters.length) {
    const count = Array.isArray(args) ? `${args.length} arguments` : describeValue(args);
    throw new ArgumentError(
      "args",
      `launch(${kernel.name}): the kernel takes ${parameters.length} arguments (${parameters.join(", ")}), got ${count}`,
    );
  }
  return parameters.map((kind, index) => {
    const name = `args[${index}]`;
    const given = args[index] as Partial<NativeKernelArgument> | null;
    if (typeof given !== "object" || given === null || given.kind !== kind) {
      throw new ArgumentError(
        name,
        `launch(${kernel.name}): ${name} must be a ${kind} argument, got ${describeValue(given)}`,
      );
    }
    const operation = `launch(${kernel.name})`;
    if (kind === "buffer") {
      const { buffer, offset } = given as { buffer: unknown; offset: unknown };
      const allocation = namedAllocation(core, buffer, `${name}.buffer`, operation, false);
      checkByteCount(offset, `${name}.offset`, allocation.length);
      return { allocation, offset: offset as number };
    }
    const value = (given as { value: unknown }).value;
    if (kind === "i64" || kind === "u64") {
      const [low, high] = BIGINT_RANGES[kind];
      if (typeof value !== "bigint" || value < low || value > high) {
        throw new ArgumentError(
          name,
          `${operation}: ${name} must be a ${kind} bigint, got ${describeValue(value)}`,
        );
      }
      return value;
    }
    if (typeof value !== "number") {
      throw new ArgumentError(
        name,
        `${operation}: ${name} must be a ${kind} number, got ${describeValue(value)}`,
      );
    }
    if (kind === "i32" || kind === "u32") {
      const [low, high] = INTEGER_RANGES[kind];
      if (!Number.isInteger(value) || value < low || value > high) {
        throw new ArgumentError(name, `${operation}: ${name} must be a ${kind} integer, got ${value}`);
      }
      return value;
    }
    return kind === "f32" ? Math.fround(value) : value;
  });
}
