import { mappingSize, NuvecError, OutOfMemoryError, PAGE } from "@nuvec/stats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Outcome, ReferenceModel } from "../test/reference-model.js";
import { MiB, type TestBuffer, TestSource } from "../test/support.js";
import type { Allocation, Mapping } from "./allocation.js";
import { CachingAllocator } from "./allocator.js";

type Operation =
  | { kind: "malloc"; bytes: number }
  | { kind: "free"; pick: number }
  | { kind: "addMapping"; length: number }
  | { kind: "removeMapping"; pick: number }
  | { kind: "setMemoryLimit"; bytes: number }
  | { kind: "setCacheLimit"; bytes: number }
  | { kind: "resetPeak" }
  | { kind: "clearCache" };

const bytes = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 4 * 256 }), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 4 * PAGE }), weight: 3 },
  { arbitrary: fc.integer({ min: 1, max: 3 * MiB }), weight: 2 },
  { arbitrary: fc.constantFrom(256, 512, 768, PAGE, 2 * PAGE, 3 * PAGE, 1 * MiB), weight: 3 },
);
// Few, large lengths (above the bounded policy's rounding threshold, most of them past the slack of one
// another): the bound releases on most misses, and the release orders' choices happen often.
const largeBytes = fc.oneof(
  { arbitrary: fc.integer({ min: 200 * 1024, max: 2 * MiB }), weight: 1 },
  {
    arbitrary: fc.constantFrom(256 * 1024, 300 * 1024, 640 * 1024, 1 * MiB, 1536 * 1024, 2 * MiB),
    weight: 2,
  },
);
const operationsOf = (sizes: fc.Arbitrary<number>, scale: number): fc.Arbitrary<Operation> =>
  fc.oneof(
    { arbitrary: sizes.map((value) => ({ kind: "malloc" as const, bytes: value })), weight: 10 },
    { arbitrary: fc.nat().map((pick) => ({ kind: "free" as const, pick })), weight: 8 },
    {
      arbitrary: fc
        .integer({ min: 0, max: 2 * MiB * scale })
        .map((length) => ({ kind: "addMapping" as const, length })),
      weight: 1,
    },
    { arbitrary: fc.nat().map((pick) => ({ kind: "removeMapping" as const, pick })), weight: 1 },
    {
      arbitrary: fc
        .integer({ min: 0, max: 8 * MiB * scale })
        .map((value) => ({ kind: "setMemoryLimit" as const, bytes: value })),
      weight: 1,
    },
    {
      arbitrary: fc
        .integer({ min: 0, max: 4 * MiB * scale })
        .map((value) => ({ kind: "setCacheLimit" as const, bytes: value })),
      weight: 1,
    },
    { arbitrary: fc.constant({ kind: "resetPeak" as const }), weight: 1 },
    { arbitrary: fc.constant({ kind: "clearCache" as const }), weight: 1 },
  );
// The device of each: W = 4 MiB (gcLimit 3984588, memoryLimit 6 MiB), small enough that every rule fires;
// for the large sizes W = 64 MiB, so that the bounded policy's bound, not the GC limit, decides what goes.
const workloads = {
  mixed: { operations: operationsOf(bytes, 1), scale: 1 },
  large: { operations: operationsOf(largeBytes, 16), scale: 16 },
};

describe.each([
  ["mlx", "least-recent", "mixed"],
  ["bounded", "fitting", "mixed"],
  ["bounded", "least-recent", "mixed"],
  ["bounded", "largest", "mixed"],
  ["mlx", "least-recent", "large"],
  ["bounded", "fitting", "large"],
  ["bounded", "least-recent", "large"],
  ["bounded", "largest", "large"],
] as const)(
  "properties of the %s policy (%s release, %s sizes) against a reference model",
  (policy, boundedRelease, sizes) => {
    it("every step gives the model's figures and keeps the invariants", () => {
      fc.assert(
        fc.property(
          fc.array(workloads[sizes].operations, { minLength: 1, maxLength: 150 }),
          fc.integer({ min: 4, max: 40 }),
          (operations, resourceLimit) => {
            const scale = workloads[sizes].scale;
            const facts = {
              workingSet: 4 * MiB * scale,
              memorySize: 8 * MiB * scale,
              maxBufferLength: 2 * MiB * scale,
              resourceLimit,
              pageSize: PAGE,
            };
            const source = new TestSource(facts);
            const allocator = new CachingAllocator(source, { policy, boundedRelease });
            // The shared naive model (test/reference-model.ts): same decisions, same figures, every step.
            const model = new ReferenceModel(facts, { policy, release: boundedRelease });
            const expectation = (outcome: Outcome<unknown>) =>
              outcome.ok ? "ok" : outcome.refusal === "out-of-memory" ? "oom" : "error";
            // Live allocations and mappings with their ids in the model (none for a 0-byte one).
            const live: { allocation: Allocation<TestBuffer>; id: number }[] = [];
            const mappings: { mapping: Mapping; id: number }[] = [];
            let nextMappingId = 0;
            for (const step of operations) {
              const before = allocator.memoryStats();
              let result: string = "ok";
              let expected: string = "ok";
              const attempt = (action: () => void) => {
                try {
                  action();
                } catch (error) {
                  if (!(error instanceof NuvecError)) throw error;
                  result =
                    error instanceof OutOfMemoryError && error.code === "ERR_NUVEC_OUT_OF_MEMORY"
                      ? "oom"
                      : "error";
                }
              };
              switch (step.kind) {
                case "malloc": {
                  const outcome = model.malloc(step.bytes);
                  expected = expectation(outcome);
                  attempt(() => {
                    const allocation = allocator.malloc(step.bytes);
                    if (outcome.ok && outcome.value !== undefined) {
                      // The very buffer the model hands out (its ids count system buffers from 1, as the
                      // source's serials from 0), and its length.
                      expect(allocation.buffer!.serial + 1).toBe(outcome.value.id);
                      expect(allocation.allocatedLength).toBe(outcome.value.length);
                      live.push({ allocation, id: outcome.value.id });
                    }
                  });
                  if (result === "ok") expect(live.length).toBe(model.live.size);
                  break;
                }
                case "free": {
                  if (live.length === 0) continue;
                  const { allocation, id } = live.splice(step.pick % live.length, 1)[0]!;
                  allocator.free(allocation);
                  model.free(id);
                  break;
                }
                case "addMapping": {
                  const id = nextMappingId++;
                  expected = expectation(model.mapFile(step.length, id));
                  attempt(() => mappings.push({ mapping: allocator.addMapping(step.length), id }));
                  break;
                }
                case "removeMapping": {
                  if (mappings.length === 0) continue;
                  const { mapping, id } = mappings.splice(step.pick % mappings.length, 1)[0]!;
                  allocator.removeMapping(mapping);
                  model.release(id);
                  break;
                }
                case "setMemoryLimit":
                  expect(allocator.setMemoryLimit(step.bytes)).toBe(model.setMemoryLimit(step.bytes));
                  break;
                case "setCacheLimit":
                  expect(allocator.setCacheLimit(step.bytes)).toBe(model.setCacheLimit(step.bytes));
                  break;
                case "resetPeak":
                  allocator.resetPeak();
                  model.resetPeak();
                  break;
                case "clearCache":
                  allocator.clearCache();
                  model.clearCache();
                  break;
              }
              expect(result).toBe(expected);
              const stats = allocator.memoryStats();
              const counters = allocator.counters();
              expect(stats).toMatchObject(model.stats());
              expect(counters).toMatchObject(model.counters());
              expect(counters.peakLive).toBe(model.peakLive);
              // The invariants of the issue.
              expect(stats.active).toBe(
                live.reduce((sum, { allocation }) => sum + allocation.allocatedLength, 0),
              );
              expect(stats.cache).toBe(model.cache.reduce((sum, buffer) => sum + buffer.length, 0));
              // A successful malloc or mapping that charged bytes stays within the memory limit. One that
              // charged nothing (a 0-byte malloc succeeds under any limit, even one already exceeded after the
              // limit was lowered) must leave active and mapped exactly as they were.
              if ((step.kind === "malloc" || step.kind === "addMapping") && result === "ok") {
                if (stats.active + stats.mapped === before.active + before.mapped) {
                  expect(step.kind === "malloc" ? step.bytes : mappingSize(step.length, PAGE)).toBe(0);
                } else {
                  expect(stats.active + stats.mapped).toBeLessThanOrEqual(stats.memoryLimit);
                }
              }
              expect(stats.peakActive).toBeGreaterThanOrEqual(stats.active);
              expect(stats.peakActiveWithMapped).toBeGreaterThanOrEqual(stats.activeWithMapped);
              expect(stats.peakReserved).toBeGreaterThanOrEqual(stats.reserved);
              // The bounded policy's bound holds at every step: reserved within 1.2 × the live high-water mark.
              if (policy === "bounded") {
                expect(stats.reserved).toBeLessThanOrEqual(1.2 * model.highWaterLive);
              }
              expect(source.acquired.length - source.released.length).toBe(
                counters.liveBuffers + counters.cachedBuffers,
              );
              expect(counters.liveBuffers).toBe(live.length);
              expect(counters.systemReleases).toBe(source.released.length);
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  },
);
