// The fuzzer's reference model is the allocator's (one naive model of the policy for the whole workspace,
// written from DESIGN.md and sharing no code with @nuvec/allocator); the Device's accounts must match it.
// Below: what the fuzzers share to run a model against a Device.
import type { NativeBackend } from "@nuvec/metal-native";
import fc from "fast-check";
import { expect } from "vitest";

export {
  type ModelCounters,
  type ModelFacts,
  type ModelStats,
  type Outcome,
  PAGE,
  ReferenceModel as DeviceModel,
  sizeClass,
} from "../../../allocator/test/reference-model.js";

/** The facts a reference model takes from a backend. */
export function backendFacts(backend: NativeBackend) {
  const { recommendedMaxWorkingSetSize, memorySize, maxBufferLength, resourceLimit, pageSize } = backend;
  return { workingSet: recommendedMaxWorkingSetSize, memorySize, maxBufferLength, resourceLimit, pageSize };
}

/**
 * Checks `property` on `numRuns` runs; a failure prints fast-check's seed and path, and NUVEC_FUZZ_SEED and
 * NUVEC_FUZZ_PATH replay it.
 */
export function fuzzProperty<T>(arbitrary: fc.Arbitrary<T>, run: (value: T) => void, numRuns: number): void {
  const seed = Number(process.env.NUVEC_FUZZ_SEED);
  const path = process.env.NUVEC_FUZZ_PATH;
  fc.assert(fc.property(arbitrary, run), {
    numRuns,
    verbose: 1,
    ...(Number.isFinite(seed) ? { seed } : {}),
    ...(path === undefined ? {} : { path }),
  });
}

/**
 * Expects `actual` to hold every field of `expected` (a model's figures), comparing by hand first: expect's
 * deep equality is slow at every step of a fuzz run.
 */
export function sameFigures(actual: object, expected: object, what: string): void {
  const fields = actual as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    if (fields[key] !== value) {
      const picked = Object.fromEntries(Object.keys(expected).map((name) => [name, fields[name]]));
      expect(picked, what).toEqual(expected);
    }
  }
}
