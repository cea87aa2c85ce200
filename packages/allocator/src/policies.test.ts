import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { CachingAllocator } from "./allocator.js";
import { CountingBufferSource } from "./counting-source.js";
import { ALLOCATOR_POLICIES } from "./policy-names.js";
import { replayTrace } from "./replay.js";

describe("ALLOCATOR_POLICIES", () => {
  const source = () => new CountingBufferSource({ workingSet: 1 << 30 });

  it("starts with the default policy", () => {
    expect(new CachingAllocator(source()).policy).toBe(ALLOCATOR_POLICIES[0]);
  });

  it("lists names the allocator accepts, each once, and each replays", () => {
    expect(new Set(ALLOCATOR_POLICIES).size).toBe(ALLOCATOR_POLICIES.length);
    for (const policy of ALLOCATOR_POLICIES) {
      expect(new CachingAllocator(source(), { policy }).policy).toBe(policy);
      const result = replayTrace(
        [
          ["a", 0, 1000],
          ["f", 0],
          ["a", 1, 1000],
        ],
        { policy },
      );
      expect(result.counters.cacheHits).toBe(1);
    }
  });

  it("is frozen, and a name not in it is refused", () => {
    expect(Object.isFrozen(ALLOCATOR_POLICIES)).toBe(true);
    expect(() => new CachingAllocator(source(), { policy: "lru" as never })).toThrow(ArgumentError);
  });
});
