// The two lists of names the option checks accept: ALLOCATOR_POLICIES (its behaviour under every policy is
// policies.test.ts's) and BOUNDED_RELEASES, typed as tuples of their unions.
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, expectTypeOf, it } from "vitest";
import { CachingAllocator } from "./allocator.js";
import { CountingBufferSource } from "./counting-source.js";
import {
  type AllocatorPolicy,
  type BoundedRelease,
  DEFAULT_BOUNDED_RELEASE,
  DEFAULT_POLICY,
} from "./options.js";
import { ALLOCATOR_POLICIES, BOUNDED_RELEASES } from "./policy-names.js";

const source = () => new CountingBufferSource({ workingSet: 1 << 30 });

describe("the lists of names", () => {
  it("are readonly tuples of exactly their unions, the default first", () => {
    expectTypeOf(ALLOCATOR_POLICIES).toEqualTypeOf<readonly ["bounded", "mlx", "segments"]>();
    expectTypeOf(BOUNDED_RELEASES).toEqualTypeOf<readonly ["fitting", "least-recent", "largest"]>();
    expectTypeOf<(typeof ALLOCATOR_POLICIES)[number]>().toEqualTypeOf<AllocatorPolicy>();
    expectTypeOf<(typeof BOUNDED_RELEASES)[number]>().toEqualTypeOf<BoundedRelease>();
    // @ts-expect-error readonly: a tool cannot add a name of its own, and at run time the list is frozen.
    expect(() => ALLOCATOR_POLICIES.push("lru")).toThrow(TypeError);
    expect([ALLOCATOR_POLICIES[0], BOUNDED_RELEASES[0]]).toEqual([DEFAULT_POLICY, DEFAULT_BOUNDED_RELEASE]);
    expect([Object.isFrozen(ALLOCATOR_POLICIES), Object.isFrozen(BOUNDED_RELEASES)]).toEqual([true, true]);
  });

  it("every release order is accepted under the bounded policy, each once; another is refused", () => {
    expect(new Set(BOUNDED_RELEASES).size).toBe(3);
    for (const boundedRelease of BOUNDED_RELEASES) {
      expect(() => new CachingAllocator(source(), { policy: "bounded", boundedRelease })).not.toThrow();
    }
    expect(() => new CachingAllocator(source(), { boundedRelease: "random" as BoundedRelease })).toThrow(
      ArgumentError,
    );
  });
});
