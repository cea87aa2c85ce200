// The checks of a launch before anything is enqueued: the shape (1 to 3 positive whole numbers for the grid
// and the block, a byte count for shared memory) and each scalar argument against its parameter's kind.
// Buffer arguments are resolved by the stream (stream.ts), which knows the device.
import type { KernelParameterKind, NativeKernelArgument, NativeLaunchShape } from "@nuvec/metal-native";
import { describeValue } from "@nuvec/stats";
import { badArgument } from "./errors.js";

/** The shape of a launch: blocks in the grid and threads in a block (1 to 3 dimensions), shared bytes. */
export interface LaunchShape {
  /** Blocks in the grid: 1 to 3 positive whole numbers (x, y, z; missing ones are 1). */
  readonly grid: readonly number[];
  /** Threads in a block: 1 to 3 positive whole numbers. */
  readonly block: readonly number[];
  /** Dynamic shared memory in bytes (default 0). */
  readonly sharedBytes?: number;
}

/** A scalar argument of a launch: one key, the parameter's kind; 64-bit integers are bigints. */
export type ScalarArgument =
  | { readonly i32: number }
  | { readonly u32: number }
  | { readonly f32: number }
  | { readonly f64: number }
  | { readonly i64: bigint }
  | { readonly u64: bigint };

const U32_MAX = 2 ** 32 - 1;
const SHAPE_KEYS = new Set(["grid", "block", "sharedBytes"]);
const INTEGER_RANGES = {
  i32: [-(2 ** 31), 2 ** 31 - 1],
  u32: [0, U32_MAX],
} as const;
const BIGINT_RANGES = {
  i64: [-(2n ** 63n), 2n ** 63n - 1n],
  u64: [0n, 2n ** 64n - 1n],
} as const;
const F32_MAX = 3.4028234663852886e38;

function dimensions(value: unknown, name: "grid" | "block", operation: string): [number, number, number] {
  if (!Array.isArray(value) || value.length < 1 || value.length > 3) {
    throw badArgument(
      operation,
      `shape.${name}`,
      `must be an array of 1 to 3 positive whole numbers, got ${describeValue(value)}`,
    );
  }
  const result: [number, number, number] = [1, 1, 1];
  for (let index = 0; index < value.length; index += 1) {
    const dimension: unknown = value[index];
    if (
      typeof dimension !== "number" ||
      !Number.isInteger(dimension) ||
      dimension < 1 ||
      dimension > U32_MAX
    ) {
      throw badArgument(
        operation,
        `shape.${name}`,
        `must hold positive whole numbers of at most ${U32_MAX}, got ${describeValue(dimension)} at ${index}`,
      );
    }
    result[index] = dimension;
  }
  return result;
}

/** Checks a launch's shape and returns it as the backend takes it (three dimensions each, shared bytes). */
export function checkShape(shape: unknown, operation: string): NativeLaunchShape {
  if (shape === null || typeof shape !== "object" || Array.isArray(shape)) {
    throw badArgument(
      operation,
      "shape",
      `must be { grid, block, sharedBytes? }, got ${describeValue(shape)}`,
    );
  }
  for (const key of Object.keys(shape)) {
    if (!SHAPE_KEYS.has(key))
      throw badArgument(operation, "shape", `has an unknown key "${key}" (grid, block, sharedBytes)`);
  }
  const { grid, block, sharedBytes } = shape as Record<string, unknown>;
  const checkedGrid = dimensions(grid, "grid", operation);
  const checkedBlock = dimensions(block, "block", operation);
  if (
    sharedBytes !== undefined &&
    (typeof sharedBytes !== "number" ||
      !Number.isInteger(sharedBytes) ||
      sharedBytes < 0 ||
      sharedBytes > U32_MAX)
  ) {
    throw badArgument(
      operation,
      "shape.sharedBytes",
      `must be a whole number of bytes from 0 to ${U32_MAX}, got ${describeValue(sharedBytes)}`,
    );
  }
  return Object.freeze({
    grid: Object.freeze(checkedGrid),
    block: Object.freeze(checkedBlock),
    sharedBytes: (sharedBytes as number | undefined) ?? 0,
  });
}

/** Whether `value` is shaped as a scalar argument (an object with one of the scalar kinds as its only key). */
export function isScalarShaped(value: object): boolean {
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] as string) in SCALAR_KINDS;
}

const SCALAR_KINDS = { i32: 1, u32: 1, f32: 1, f64: 1, i64: 1, u64: 1 } as const;

/**
 * Checks the scalar `value` given for a parameter of `kind` (argument `argument` of `operation`): `{ [kind]:
 * x }` with x an integer in range for i32/u32, a bigint in range for i64/u64, any number for f64, and for f32
 * any number that is NaN, infinite or within f32's range (a finite value beyond it would become infinity).
 */
export function checkScalar(
  kind: Exclude<KernelParameterKind, "buffer">,
  value: unknown,
  argument: string,
  operation: string,
): NativeKernelArgument {
  if (value === null || typeof value !== "object" || !isScalarShaped(value)) {
    throw badArgument(
      operation,
      argument,
      `must be { ${kind}: value } for a ${kind} parameter, got ${describeValue(value)}`,
    );
  }
  const [given] = Object.keys(value) as (keyof typeof SCALAR_KINDS)[];
  if (given !== kind)
    throw badArgument(operation, argument, `is a ${given} where the kernel takes a ${kind}`);
  const x: unknown = (value as Record<string, unknown>)[kind];
  if (kind === "i64" || kind === "u64") {
    const [low, high] = BIGINT_RANGES[kind];
    if (typeof x !== "bigint" || x < low || x > high) {
      throw badArgument(
        operation,
        argument,
        `must be a bigint from ${low} to ${high} for ${kind}, got ${describeValue(x)}`,
      );
    }
    return Object.freeze({ kind, value: x });
  }
  if (typeof x !== "number")
    throw badArgument(operation, argument, `must be a number for ${kind}, got ${describeValue(x)}`);
  if (kind === "i32" || kind === "u32") {
    const [low, high] = INTEGER_RANGES[kind];
    if (!Number.isInteger(x) || x < low || x > high) {
      throw badArgument(
        operation,
        argument,
        `must be a whole number from ${low} to ${high} for ${kind}, got ${describeValue(x)}`,
      );
    }
  } else if (kind === "f32" && Number.isFinite(x) && !Number.isFinite(Math.fround(x))) {
    throw badArgument(
      operation,
      argument,
      `${x} is beyond f32's range (±${F32_MAX}) and would become infinity`,
    );
  }
  return Object.freeze({ kind, value: x });
}
