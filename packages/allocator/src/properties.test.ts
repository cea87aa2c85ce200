import { allocationSize, mappingSize, PAGE } from "@nuvec/stats";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MiB, type TestBuffer, TestSource } from "../test/support.js";
import { type Allocation, type AllocatorPolicy, CachingAllocator, type Mapping } from "./allocator.js";
import { AllocatorError, OutOfMemoryError } from "./errors.js";

// A deliberately naive model of the policy (arrays and linear scans), to check the real data structures
// against: same decisions, same figures, after every step.
interface ModelBuffer {
  length: number;
  cachedAt: number;
}

class Model {
  cached: ModelBuffer[] = [];
  live: { buffer: ModelBuffer; sizeClass: number }[] = [];
  mappings: number[] = [];
  active = 0;
  mapped = 0;
  peak = 0;
  peakWithMapped = 0;
  liveBytes = 0;
  peakLive = 0;
  peakReserved = 0;
  systemAllocations = 0;
  hits = 0;
  released = 0;
  clock = 0;
  memoryLimit: number;
  cacheLimit: number;
  gcLimit: number;

  constructor(
    readonly workingSet: number,
    memorySize: number,
    readonly resourceLimit: number,
    readonly maxBufferLength: number,
    readonly policy: AllocatorPolicy,
    readonly releaseLargest: boolean,
  ) {
    this.memoryLimit = Math.floor(Math.min(1.5 * workingSet, 0.95 * memorySize));
    this.cacheLimit = this.memoryLimit;
    this.gcLimit = Math.min(Math.floor(0.95 * workingSet), this.memoryLimit);
  }

  get cache(): number {
    return this.cached.reduce((sum, buffer) => sum + buffer.length, 0);
  }

  releaseOldest(): void {
    const oldest = this.cached.reduce((a, b) => (a.cachedAt < b.cachedAt ? a : b));
    this.cached.splice(this.cached.indexOf(oldest), 1);
    this.released++;
  }

  releaseLargestOldest(): void {
    const largest = this.cached.reduce((a, b) =>
      a.length > b.length || (a.length === b.length && a.cachedAt < b.cachedAt) ? a : b,
    );
    this.cached.splice(this.cached.indexOf(largest), 1);
    this.released++;
  }

  releaseBytes(minimum: number): void {
    if (minimum >= 0.9 * this.cache) {
      this.released += this.cached.length;
      this.cached = [];
      return;
    }
    let freed = 0;
    while (this.cached.length > 0 && freed < minimum) {
      const oldest = this.cached.reduce((a, b) => (a.cachedAt < b.cachedAt ? a : b));
      freed += oldest.length;
      this.releaseOldest();
    }
  }

  malloc(bytes: number): "ok" | "oom" | "error" | number {
    if (bytes === 0) return -1;
    const sizeClass = allocationSize(bytes)!;
    if (sizeClass > this.maxBufferLength) return "error";
    if (this.active + this.mapped + sizeClass > this.memoryLimit) return "oom";
    const limit = this.policy === "bounded" ? 2 * sizeClass : Math.min(2 * sizeClass, sizeClass + 2 * PAGE);
    const fitting = this.cached
      .filter((buffer) => buffer.length >= sizeClass && buffer.length < limit)
      .sort((a, b) => a.length - b.length || a.cachedAt - b.cachedAt);
    let buffer = fitting[0];
    if (buffer !== undefined && this.active + this.mapped + buffer.length <= this.memoryLimit) {
      this.cached.splice(this.cached.indexOf(buffer), 1);
      this.hits++;
    } else {
      if (this.policy === "bounded") {
        const bound = 1.3 * Math.max(this.peakLive, this.liveBytes + sizeClass);
        while (this.cached.length > 0 && this.active + this.cache + sizeClass > bound) {
          if (this.releaseLargest) this.releaseLargestOldest();
          else this.releaseOldest();
        }
      }
      const required = this.active + this.mapped + this.cache + sizeClass;
      if (required >= this.gcLimit) this.releaseBytes(required - this.gcLimit);
      if (this.live.length + this.cached.length + this.mappings.length >= this.resourceLimit) {
        this.releaseBytes(Number.MAX_SAFE_INTEGER);
        if (this.live.length + this.mappings.length >= this.resourceLimit) return "error";
      }
      buffer = { length: sizeClass, cachedAt: -1 };
      this.systemAllocations++;
    }
    this.live.push({ buffer, sizeClass });
    this.active += buffer.length;
    this.peak = Math.max(this.peak, this.active);
    this.peakWithMapped = Math.max(this.peakWithMapped, this.active + this.mapped);
    this.liveBytes += sizeClass;
    this.peakLive = Math.max(this.peakLive, this.liveBytes);
    if (this.cache > this.cacheLimit) this.releaseBytes(this.cache - this.cacheLimit);
    this.peakReserved = Math.max(this.peakReserved, this.active + this.cache);
    return this.live.length - 1;
  }

  free(index: number): void {
    const [{ buffer, sizeClass }] = this.live.splice(index, 1) as [
      { buffer: ModelBuffer; sizeClass: number },
    ];
    this.active -= buffer.length;
    this.liveBytes -= sizeClass;
    if (this.cache < this.cacheLimit) {
      buffer.cachedAt = this.clock++;
      this.cached.push(buffer);
    } else {
      this.released++;
    }
  }

  addMapping(length: number): "ok" | "oom" | "error" {
    const charged = mappingSize(length, PAGE)!;
    if (this.active + this.mapped + charged > this.memoryLimit) return "oom";
    if (this.live.length + this.cached.length + this.mappings.length >= this.resourceLimit) {
      this.releaseBytes(Number.MAX_SAFE_INTEGER);
      if (this.live.length + this.mappings.length >= this.resourceLimit) return "error";
    }
    this.mappings.push(charged);
    this.mapped += charged;
    this.peakWithMapped = Math.max(this.peakWithMapped, this.active + this.mapped);
    return "ok";
  }
}

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
const operation: fc.Arbitrary<Operation> = fc.oneof(
  { arbitrary: bytes.map((value) => ({ kind: "malloc" as const, bytes: value })), weight: 10 },
  { arbitrary: fc.nat().map((pick) => ({ kind: "free" as const, pick })), weight: 8 },
  {
    arbitrary: fc
      .integer({ min: 0, max: 2 * MiB })
      .map((length) => ({ kind: "addMapping" as const, length })),
    weight: 1,
  },
  { arbitrary: fc.nat().map((pick) => ({ kind: "removeMapping" as const, pick })), weight: 1 },
  {
    arbitrary: fc
      .integer({ min: 0, max: 8 * MiB })
      .map((value) => ({ kind: "setMemoryLimit" as const, bytes: value })),
    weight: 1,
  },
  {
    arbitrary: fc
      .integer({ min: 0, max: 4 * MiB })
      .map((value) => ({ kind: "setCacheLimit" as const, bytes: value })),
    weight: 1,
  },
  { arbitrary: fc.constant({ kind: "resetPeak" as const }), weight: 1 },
  { arbitrary: fc.constant({ kind: "clearCache" as const }), weight: 1 },
);

describe.each([
  ["mlx", "least-recent"],
  ["bounded", "least-recent"],
  ["bounded", "largest"],
] as const)(
  "properties of the %s policy (%s release) against a reference model",
  (policy, boundedRelease) => {
    it("every step gives the model's figures and keeps the invariants", () => {
      fc.assert(
        fc.property(
          fc.array(operation, { minLength: 1, maxLength: 150 }),
          fc.integer({ min: 4, max: 40 }),
          (operations, resourceLimit) => {
            // W = 4 MiB: gcLimit 3984588, memoryLimit 6 MiB; small enough that every rule fires.
            const source = new TestSource({
              workingSet: 4 * MiB,
              memorySize: 8 * MiB,
              maxBufferLength: 2 * MiB,
              resourceLimit,
            });
            const allocator = new CachingAllocator(source, { policy, boundedRelease });
            const model = new Model(
              4 * MiB,
              8 * MiB,
              resourceLimit,
              2 * MiB,
              policy,
              boundedRelease === "largest",
            );
            const live: Allocation<TestBuffer>[] = [];
            const mappings: Mapping[] = [];
            for (const step of operations) {
              const before = allocator.memoryStats();
              let result: string = "ok";
              let expected: string = "ok";
              const attempt = (action: () => void) => {
                try {
                  action();
                } catch (error) {
                  if (!(error instanceof AllocatorError)) throw error;
                  result = error instanceof OutOfMemoryError ? "oom" : "error";
                }
              };
              switch (step.kind) {
                case "malloc": {
                  const outcome = model.malloc(step.bytes);
                  expected = typeof outcome === "number" ? "ok" : outcome;
                  attempt(() => {
                    const allocation = allocator.malloc(step.bytes);
                    if (allocation.allocatedLength > 0) live.push(allocation);
                  });
                  if (result === "ok") expect(live.length).toBe(model.live.length);
                  break;
                }
                case "free": {
                  if (live.length === 0) continue;
                  const index = step.pick % live.length;
                  allocator.free(live.splice(index, 1)[0]!);
                  model.free(index);
                  break;
                }
                case "addMapping":
                  expected = model.addMapping(step.length);
                  attempt(() => mappings.push(allocator.addMapping(step.length)));
                  break;
                case "removeMapping": {
                  if (mappings.length === 0) continue;
                  const index = step.pick % mappings.length;
                  allocator.removeMapping(mappings.splice(index, 1)[0]!);
                  model.mapped -= model.mappings.splice(index, 1)[0]!;
                  break;
                }
                case "setMemoryLimit":
                  allocator.setMemoryLimit(step.bytes);
                  model.memoryLimit = step.bytes;
                  model.gcLimit = Math.min(step.bytes, Math.floor(0.95 * 4 * MiB));
                  break;
                case "setCacheLimit":
                  allocator.setCacheLimit(step.bytes);
                  model.cacheLimit = step.bytes;
                  if (model.cache > step.bytes) model.releaseBytes(model.cache - step.bytes);
                  break;
                case "resetPeak":
                  allocator.resetPeak();
                  model.peak = model.active;
                  model.peakWithMapped = model.active + model.mapped;
                  break;
                case "clearCache":
                  allocator.clearCache();
                  model.releaseBytes(Number.MAX_SAFE_INTEGER);
                  break;
              }
              expect(result).toBe(expected);
              const stats = allocator.memoryStats();
              const counters = allocator.counters();
              expect(stats).toMatchObject({
                active: model.active,
                peak: model.peak,
                cache: model.cache,
                mapped: model.mapped,
                peakWithMapped: model.peakWithMapped,
                systemAllocations: model.systemAllocations,
              });
              expect(counters).toMatchObject({ peakReserved: model.peakReserved, peakLive: model.peakLive });
              // The invariants of the issue.
              expect(stats.active).toBe(
                live.reduce((sum, allocation) => sum + allocation.allocatedLength, 0),
              );
              expect(stats.cache).toBe(model.cached.reduce((sum, buffer) => sum + buffer.length, 0));
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
              expect(stats.peak).toBeGreaterThanOrEqual(stats.active);
              expect(stats.peakWithMapped).toBeGreaterThanOrEqual(stats.activeWithMapped);
              expect(source.acquired.length - source.released.length).toBe(
                counters.liveBuffers + counters.cachedBuffers,
              );
              expect(counters.liveBuffers).toBe(live.length);
              expect(counters.systemReleases).toBe(source.released.length);
              expect(counters).toMatchObject({ cacheHits: model.hits, cacheMisses: model.systemAllocations });
            }
          },
        ),
        { numRuns: 300 },
      );
    });
  },
);
