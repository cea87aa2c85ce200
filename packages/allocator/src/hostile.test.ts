// Hostile use of the allocator: errors from the buffer source other than a refusal
// to allocate propagate unchanged, and a release or hook that throws never stops a trim half way, never leaks
// a buffer and never leaves a counter wrong.

import { describe, expect, it } from "vitest";
import { MiB, refusal, type TestBuffer, TestSource, thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { BufferCache } from "./buffer-cache.js";
import { isAllocationFailure } from "./buffer-source.js";
import { CachedBuffer } from "./cached-buffer.js";
import type { AllocatorOptions } from "./options.js";

class ClosedSourceError extends Error {
  readonly code = "ERR_NUVEC_RELEASED";
}

function make(options: AllocatorOptions<TestBuffer> = {}) {
  const source = new TestSource();
  return { source, allocator: new CachingAllocator(source, options) };
}

function held(source: TestSource, allocator: CachingAllocator<TestBuffer>): void {
  const counters = allocator.counters();
  expect(source.held.size).toBe(counters.liveBuffers + counters.cachedBuffers);
  expect(counters.systemReleases).toBe(source.released.length);
}

describe("the retry after a failed system allocation", () => {
  it("retries only an allocation failure: any other error propagates unchanged, the cache stays, and no release error replaces it", () => {
    const { source, allocator } = make({ policy: "mlx" });
    allocator.free(allocator.malloc(1 * MiB));
    const closed = new ClosedSourceError("the backend is closed");
    source.acquireError = closed;
    expect(thrown(() => allocator.malloc(4 * MiB))).toBe(closed);
    expect(allocator.counters()).toMatchObject({ allocationRetries: 0, systemReleases: 0, cachedBuffers: 1 });
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 1 * MiB, systemAllocations: 1 });
    // After the backend closed, releasing any cached buffer throws "already released" too: a malloc that
    // cleared the cache on any error would report that in place of the source's own error.
    source.releaseError = () => new Error("buffer already released");
    expect(thrown(() => allocator.malloc(2 * MiB))).toBe(closed);
  });

  it("still retries a refusal (code ERR_NUVEC_ALLOCATION_FAILED or a RangeError)", () => {
    expect(isAllocationFailure(Object.assign(new Error("no"), { code: "ERR_NUVEC_ALLOCATION_FAILED" }))).toBe(
      true,
    );
    expect(isAllocationFailure(new RangeError("Array buffer allocation failed"))).toBe(true);
    expect(isAllocationFailure(new TypeError("x"))).toBe(false);
    expect(isAllocationFailure(Object.assign(new Error("no"), { code: "ERR_NUVEC_RELEASED" }))).toBe(false);
    expect(isAllocationFailure("ERR_NUVEC_ALLOCATION_FAILED")).toBe(false);
    // What a retried refusal becomes: allocator.test.ts ("throws OutOfMemoryError ... when the retry fails too").
  });

  it("asks the source's own isAllocationFailure when it has one", () => {
    const source = new TestSource();
    source.isAllocationFailure = (error: unknown) => error instanceof ClosedSourceError;
    const allocator = new CachingAllocator(source);
    source.acquireError = new ClosedSourceError("treated as a refusal by this source");
    expect(() => allocator.malloc(1 * MiB)).toThrow(
      refusal("OutOfMemoryError", "ERR_NUVEC_SYSTEM_ALLOCATION_FAILED"),
    );
    expect(allocator.counters().allocationRetries).toBe(1);
  });
});

describe("exception-safe trimming and release", () => {
  function cacheOf(count: number, failing: Set<number>) {
    const released: number[] = [];
    const cache = new BufferCache<number>((record) => {
      released.push(record.buffer);
      if (failing.has(record.buffer)) throw new Error(`release ${record.buffer} failed`);
    });
    const owner = {};
    for (let index = 0; index < count; index++) cache.put(new CachedBuffer(index, 256 * (index + 1), owner));
    return { cache, released };
  }

  it("clear releases every buffer when some releases throw, and rethrows the first error", () => {
    const { cache, released } = cacheOf(5, new Set([1, 3]));
    expect(() => cache.clear()).toThrow("release 1 failed");
    expect(released).toEqual([0, 1, 2, 3, 4]);
    expect(cache).toMatchObject({ bytes: 0, buffers: 0 });
    expect(cache.lruSnapshot()).toEqual([]);
  });

  it("a partial trim goes on past a throwing release and frees what it was asked", () => {
    const { cache, released } = cacheOf(6, new Set([0]));
    // 256 + 512 + 768 = 1536 bytes from the oldest: three releases, the first of which throws.
    expect(() => cache.release(1500)).toThrow("release 0 failed");
    expect(released).toEqual([0, 1, 2]);
    expect(cache.lruSnapshot()).toEqual([1024, 1280, 1536]);
    expect(cache).toMatchObject({ bytes: 1024 + 1280 + 1536, buffers: 3 });
  });

  it("releases the buffer to the source even when the onRelease hook throws", () => {
    let hookCalls = 0;
    const { source, allocator } = make({
      onRelease: () => {
        hookCalls++;
        throw new Error("hook failed");
      },
    });
    for (const allocation of [
      allocator.malloc(1 * MiB),
      allocator.malloc(2 * MiB),
      allocator.malloc(3 * MiB),
    ])
      allocator.free(allocation);
    expect(() => allocator.clearCache()).toThrow("hook failed");
    expect(hookCalls).toBe(3);
    expect(source.held.size).toBe(0);
    expect(allocator.counters()).toMatchObject({ systemReleases: 3, cachedBuffers: 0 });
    expect(allocator.memoryStats().cache).toBe(0);
    held(source, allocator);
  });

  it("a hook and a release that both throw: the hook's error comes out, the release's in its `suppressed`", () => {
    const { source, allocator } = make({
      onRelease: () => {
        throw new Error("hook failed");
      },
    });
    allocator.free(allocator.malloc(1 * MiB));
    source.releaseError = () => new Error("release failed");
    let thrown: unknown;
    try {
      allocator.clearCache();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ message: "hook failed" });
    expect((thrown as { suppressed?: Error[] }).suppressed?.map((error) => error.message)).toEqual([
      "release failed",
    ]);
    expect(source.held.size).toBe(0);
    expect(allocator.counters()).toMatchObject({ systemReleases: 1, cachedBuffers: 0 });
  });

  it("close releases the whole cache and closes even when a release throws", () => {
    const { source, allocator } = make();
    for (const allocation of [allocator.malloc(1 * MiB), allocator.malloc(2 * MiB)])
      allocator.free(allocation);
    source.releaseError = (buffer) => (buffer.serial === 0 ? new Error("first release failed") : undefined);
    expect(() => allocator.close()).toThrow("first release failed");
    expect(source.held.size).toBe(0);
    expect(() => allocator.memoryStats()).toThrow(
      expect.objectContaining({ code: "ERR_NUVEC_ALLOCATOR_CLOSED" }),
    );
    expect(() => allocator.close()).not.toThrow();
  });

  it("clearCache with several failing releases: the first comes out, the later ones in its `suppressed`", () => {
    const { source, allocator } = make();
    for (const allocation of [1, 2, 3].map((n) => allocator.malloc(n * MiB))) allocator.free(allocation);
    source.releaseError = (buffer) =>
      buffer.serial !== 1 ? new Error(`release ${buffer.serial} failed`) : undefined;
    const error = thrown(() => allocator.clearCache());
    expect((error as Error).message).toBe("release 0 failed");
    expect((error as { suppressed: Error[] }).suppressed.map((later) => later.message)).toEqual([
      "release 2 failed",
    ]);
    expect(source.held.size).toBe(0);
    held(source, allocator);
  });

  it("setCacheLimit trims to the limit past a throwing release; counters stay right", () => {
    const { source, allocator } = make();
    const sizes = [1, 2, 3, 4].map((n) => n * MiB);
    for (const allocation of sizes.map((size) => allocator.malloc(size))) allocator.free(allocation);
    source.releaseError = (buffer) => (buffer.serial === 0 ? new Error("release failed") : undefined);
    expect(() => allocator.setCacheLimit(4 * MiB)).toThrow("release failed");
    expect(allocator.memoryStats().cache).toBeLessThanOrEqual(4 * MiB);
    held(source, allocator);
  });

  it("a malloc whose trim after the allocation throws is refused and changes no figure", () => {
    // MLX's policy: the bounded one would release cached buffers to its bound before the miss below (0 + 5 +
    // 1 MiB over 1.2 × 3 MiB), not in the trim after it.
    const { source, allocator } = make({ policy: "mlx" });
    const a = allocator.malloc(1 * MiB);
    const b = allocator.malloc(2 * MiB);
    allocator.setCacheLimit(2 * MiB);
    allocator.free(b); // cache 2 MiB, at the limit
    allocator.free(a); // released at once (cache not under its limit)
    allocator.setCacheLimit(3 * MiB);
    const c = allocator.malloc(3 * MiB);
    allocator.free(c); // cached: 5 MiB, over the limit until the next malloc trims it
    allocator.resetPeak();
    const stats = allocator.memoryStats();
    const counters = allocator.counters();
    source.releaseError = () => new Error("release failed");
    // A miss (nothing cached fits 1 MiB); the cache, over its limit, is trimmed after the buffer is made.
    expect(() => allocator.malloc(1 * MiB)).toThrow("release failed");
    expect(allocator.memoryStats()).toMatchObject({ active: 0, peakActive: stats.peakActive });
    expect(allocator.counters()).toMatchObject({ liveBuffers: 0, peakLive: counters.peakLive });
    held(source, allocator);
  });

  it("a free that releases at once and throws still gives the allocation back", () => {
    const { source, allocator } = make({ cacheLimit: 0 });
    const allocation = allocator.malloc(1 * MiB);
    source.releaseError = () => new Error("release failed");
    expect(() => allocator.free(allocation)).toThrow("release failed");
    expect(allocator.memoryStats()).toMatchObject({ active: 0, cache: 0 });
    held(source, allocator);
  });
});
