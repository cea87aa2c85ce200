// Which figures a refusal moves, under every policy (docs/ERRORS.md, the allocator's README): a refusal by the
// memory limit adds one to `outOfMemoryRefusals` and moves nothing else; a system allocation that fails twice
// adds one to `allocationRetries` and leaves the cache it released to make room released, exactly as
// `clearCache()` would; every other refusal moves nothing.
import { describe, expect, it } from "vitest";
import { figures, MiB, refusal, type TestBuffer, TestSource, thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { ALLOCATOR_POLICIES } from "./policy-names.js";

/** The test source with the ranges the segments policy makes of its segments (records, as its buffers). */
class Source extends TestSource {
  #ranges = 0;

  range(_segment: TestBuffer, _offset: number, length: number): TestBuffer {
    this.#ranges += 1;
    return { serial: -this.#ranges, length };
  }

  releaseRange(): void {}
}

/** An allocator of `policy` with one live buffer and two cached ones (of 1 and 2 MiB). */
function withCache(policy: (typeof ALLOCATOR_POLICIES)[number], resourceLimit?: number) {
  const source = new Source(resourceLimit === undefined ? {} : { resourceLimit });
  const allocator = new CachingAllocator(source, { policy, memoryLimit: 64 * MiB });
  const live = allocator.malloc(4 * MiB);
  allocator.free(allocator.malloc(1 * MiB));
  allocator.free(allocator.malloc(2 * MiB));
  return { source, allocator, live };
}

/** `figures` with `outOfMemoryRefusals` and `allocationRetries` moved by the amounts given. */
function plus(
  before: ReturnType<typeof figures>,
  moved: { outOfMemoryRefusals?: number; allocationRetries?: number },
): ReturnType<typeof figures> {
  const counters = { ...before.counters };
  counters.outOfMemoryRefusals += moved.outOfMemoryRefusals ?? 0;
  counters.allocationRetries += moved.allocationRetries ?? 0;
  return { stats: before.stats, counters };
}

describe.each(ALLOCATOR_POLICIES)("the figures a refusal moves (%s)", (policy) => {
  it("a malloc past the memory limit: outOfMemoryRefusals + 1, nothing else", () => {
    const { allocator } = withCache(policy);
    const before = figures(allocator);
    expect(thrown(() => allocator.malloc(61 * MiB))).toEqual(
      refusal("OutOfMemoryError", "ERR_NUVEC_OUT_OF_MEMORY"),
    );
    expect(figures(allocator)).toEqual(plus(before, { outOfMemoryRefusals: 1 }));
  });

  it("a mapping past the memory limit: outOfMemoryRefusals + 1, nothing else", () => {
    const { allocator } = withCache(policy);
    const before = figures(allocator);
    expect(thrown(() => allocator.addMapping(61 * MiB))).toEqual(
      refusal("OutOfMemoryError", "ERR_NUVEC_OUT_OF_MEMORY"),
    );
    expect(figures(allocator)).toEqual(plus(before, { outOfMemoryRefusals: 1 }));
  });

  it("a system allocation that fails twice: allocationRetries + 1, the cache released as clearCache() releases it", () => {
    const { source, allocator } = withCache(policy);
    const twin = withCache(policy).allocator;
    twin.clearCache();
    source.failNext = 2;
    expect(thrown(() => allocator.malloc(50 * MiB))).toEqual(
      refusal("OutOfMemoryError", "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED"),
    );
    expect(figures(allocator)).toEqual(plus(figures(twin), { allocationRetries: 1 }));
    expect(source.held.size).toBe(allocator.counters().liveBuffers);
  });

  it("the resource limit, a bad byte count, a double free, a foreign allocation: nothing moves", () => {
    const { allocator, live } = withCache(policy, 3);
    const other = new CachingAllocator(new Source(), { policy });
    const foreign = other.malloc(1 * MiB);
    allocator.free(live);
    const before = figures(allocator);
    for (const [call, error] of [
      [() => allocator.malloc(-1), refusal("ArgumentError", "ERR_NUVEC_INVALID_ARGUMENT")],
      [() => allocator.free(live), refusal("StateError", "ERR_NUVEC_DOUBLE_FREE")],
      [() => allocator.free(foreign), refusal("ArgumentError", "ERR_NUVEC_FOREIGN_ALLOCATION")],
    ] as const) {
      expect(thrown(call)).toEqual(error);
      expect(figures(allocator)).toEqual(before);
    }
    const full = new CachingAllocator(new Source({ resourceLimit: 2 }), { policy });
    full.malloc(30 * MiB);
    full.malloc(30 * MiB);
    const beforeFull = figures(full);
    expect(thrown(() => full.malloc(30 * MiB))).toEqual(
      refusal("OutOfMemoryError", "ERR_NUVEC_RESOURCE_LIMIT"),
    );
    expect(figures(full)).toEqual(beforeFull);
  });
});
