import type { SchemaType } from "@nuvec/stats";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, expectTypeOf, it } from "vitest";
import { thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { CountingBufferSource } from "./counting-source.js";
import type { ALLOCATOR_OPTIONS } from "./option-schema.js";
import type { AllocatorOptions } from "./options.js";

const source = () => new CountingBufferSource({ workingSet: 1 << 30 });

describe("the allocator's options, declared once", () => {
  it("declare exactly AllocatorOptions", () => {
    // The hooks' parameter is the source's buffer type: `never` accepts the hooks of every source.
    expectTypeOf<SchemaType<typeof ALLOCATOR_OPTIONS.fields>>().toEqualTypeOf<AllocatorOptions<never>>();
  });

  it.each([
    [{ policy: "lru" }, "policy"],
    [{ reserveRatio: "1.3" }, "reserveRatio"],
    [{ onAcquire: 1 }, "onAcquire"],
    [{ memoryLimit: -1 }, "memoryLimit"],
    [{ memoryLimt: 1 }, "memoryLimt"],
    [{ segments: { blockRounding: 3 } }, "segments.blockRounding"],
  ])("refuses %j with an ArgumentError naming %s", (options, argument) => {
    const error = thrown(() => new CachingAllocator(source(), options as AllocatorOptions<number>));
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).argument).toBe(argument);
  });

  it("reads a limit of -0 back as 0", () => {
    const allocator = new CachingAllocator(source(), { cacheLimit: -0, memoryLimit: -0 });
    expect(Object.is(allocator.memoryStats().cacheLimit, 0)).toBe(true);
    expect(Object.is(allocator.memoryStats().memoryLimit, 0)).toBe(true);
    allocator.setCacheLimit(-0);
    expect(Object.is(allocator.memoryStats().cacheLimit, 0)).toBe(true);
    allocator.setMemoryLimit(-0);
    expect(Object.is(allocator.memoryStats().memoryLimit, 0)).toBe(true);
  });
});
