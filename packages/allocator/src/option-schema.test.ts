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
    [{ segments: { smallSegmnet: 1 << 21 } }, "segments.smallSegmnet"],
    [{ segments: { expandable: "no" } }, "segments.expandable"],
    [{ segments: { mapAhead: -1 } }, "segments.mapAhead"],
    [{ segments: [] }, "segments"],
  ])("refuses %j with an ArgumentError naming %s", (options, argument) => {
    const error = thrown(() => new CachingAllocator(source(), options as AllocatorOptions<number>));
    expect(error).toBeInstanceOf(ArgumentError);
    expect((error as ArgumentError).argument).toBe(argument);
  });

  it("segments: a misspelt key is refused naming it and the entry point; each key is read once", () => {
    const error = thrown(
      () =>
        new CachingAllocator(source(), {
          policy: "segments",
          segments: { blockRounding: 512, smallSegmnet: 1 } as never,
        }),
    );
    expect((error as Error).message).toBe(
      "new CachingAllocator(): unknown option segments.smallSegmnet (the options are blockRounding, smallRequest, smallSegment, largeSegment, segmentRounding, maxSplitSize, releaseIdleOnMiss, expandable, mapAhead)",
    );
    const reads: string[] = [];
    const segments = new Proxy(
      { smallSegment: 8 << 20, largeSegment: 32 << 20 },
      {
        get: (target, key, receiver) => {
          reads.push(String(key));
          return Reflect.get(target, key, receiver);
        },
      },
    );
    const allocator = new CachingAllocator(
      { ...source(), range: (buffer: number) => buffer, releaseRange: () => {} } as never,
      { policy: "segments", segments },
    );
    expect(allocator.segmentOptions).toMatchObject({ smallSegment: 8 << 20, largeSegment: 32 << 20 });
    expect(reads.filter((key) => key === "smallSegment" || key === "largeSegment").sort()).toEqual([
      "largeSegment",
      "smallSegment",
    ]);
    // The rules between the sizes name the entry point too.
    expect(
      thrown(() => new CachingAllocator(source(), { segments: { smallSegment: 1024, smallRequest: 2048 } })),
    ).toMatchObject({
      argument: "segments.smallSegment",
      message: "new CachingAllocator(): segments.smallSegment must hold a small request (2048), got 1024",
    });
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
