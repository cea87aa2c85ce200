import { describe, expect, it } from "vitest";
import type { TestBuffer } from "../test/support.js";
import { KiB, MiB, TestSource, thrown } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import {
  type AllocatorOptions,
  type AllocatorPolicy,
  DEFAULT_BOUNDED_RELEASE,
  DEFAULT_RESERVE_RATIO,
} from "./options.js";
import { ROUNDED_ABOVE } from "./policy.js";

function make(policy: AllocatorPolicy, options: AllocatorOptions<TestBuffer> = {}) {
  const source = new TestSource({ workingSet: 1024 * MiB, memorySize: 2048 * MiB });
  return { source, allocator: new CachingAllocator(source, { policy, ...options }) };
}

describe("the bounded policy", () => {
  it('is the default, with ratio 1.2 and release order "fitting"; mlx is one option away', () => {
    expect(new CachingAllocator(new TestSource()).policy).toBe("bounded");
    expect(make("mlx").allocator.policy).toBe("mlx");
    expect(make("bounded").allocator.policy).toBe("bounded");
    expect(DEFAULT_RESERVE_RATIO).toBe(1.2);
    expect(DEFAULT_BOUNDED_RELEASE).toBe("fitting");
  });

  it("reuse: the smallest cached length n ≤ s ≤ n + the unspent slack, with no 2n window", () => {
    const { allocator } = make("bounded");
    const big = allocator.malloc(12 * MiB);
    const keep = allocator.malloc(20 * MiB);
    allocator.free(big); // hwmLive 32 MiB, live 20 MiB, cache 12 MiB
    // Slack 0.2 × 32 = 6.4 MiB, none spent: 12 > 5 + 6.4, no hit; a miss of exactly 5 MiB (a multiple of
    // its step, 512 KiB).
    expect(allocator.malloc(5 * MiB).allocatedLength).toBe(5 * MiB);
    // Slack 0.2 × max(32, 25 + 8) = 6.6 MiB, none spent: 12 ≤ 8 + 6.6, a hit of 1.5 × n.
    expect(allocator.malloc(8 * MiB).allocatedLength).toBe(12 * MiB);
    allocator.free(keep);
    // MLX's window is min(2n, n + 2 pages): the same cached 12 MiB buffer is too long for 8 MiB there.
    const mlx = make("mlx");
    mlx.allocator.free(mlx.allocator.malloc(12 * MiB));
    expect(mlx.allocator.malloc(8 * MiB).allocatedLength).toBe(8 * MiB);
  });

  it("reuse: the surplus handed out already is spent slack", () => {
    const { allocator } = make("bounded");
    const keep = allocator.malloc(10 * MiB);
    const a = allocator.malloc(2 * MiB + 768 * KiB);
    const b = allocator.malloc(2 * MiB + 768 * KiB);
    allocator.free(a);
    allocator.free(b); // hwmLive 15.5 MiB, live 10 MiB: slack 3.1 MiB; two cached 2.75 MiB buffers
    const c = allocator.malloc(1 * MiB); // 2.75 ≤ 1 + 3.1: a hit, 1.75 MiB of the slack spent
    expect(c.allocatedLength).toBe(2 * MiB + 768 * KiB);
    // 1.35 MiB left: the other 2.75 MiB buffer is over 1 + 1.35 MiB for a second 1 MiB request.
    expect(allocator.malloc(1 * MiB).allocatedLength).toBe(1 * MiB);
    allocator.free(keep);
  });

  it("a miss above 256 KiB rounds up to eight steps per power of two when the slack covers it", () => {
    const { allocator } = make("bounded");
    expect(ROUNDED_ABOVE).toBe(256 * KiB);
    // 256 KiB itself is not rounded; 300 KiB is size class 304 KiB, rounded to 320 KiB (steps of 32 KiB).
    expect(allocator.malloc(256 * KiB).allocatedLength).toBe(256 * KiB);
    expect(allocator.malloc(300 * KiB).allocatedLength).toBe(320 * KiB);
    // 5 MiB + 1 byte: size class 5 MiB + 16 KiB, steps of 512 KiB: 5.5 MiB, within 0.2 × 5.5 MiB.
    expect(allocator.malloc(5 * MiB + 1).allocatedLength).toBe(5 * MiB + 512 * KiB);
    // The MLX policy never rounds past the size class.
    expect(make("mlx").allocator.malloc(300 * KiB).allocatedLength).toBe(304 * KiB);
  });

  it("a miss keeps its size class when the unspent slack does not cover the rounding", () => {
    const tight = make("bounded", { reserveRatio: 1 });
    expect(tight.allocator.malloc(300 * KiB).allocatedLength).toBe(304 * KiB);
    const { allocator } = make("bounded");
    allocator.free(allocator.malloc(10 * MiB));
    // Slack 0.2 × 10 = 2 MiB: the cached 10 MiB buffer serves 8 MiB, and its 2 MiB surplus spends it all.
    expect(allocator.malloc(8 * MiB).allocatedLength).toBe(10 * MiB);
    // Size class 4 MiB + 16 KiB, which rounds to 4.5 MiB (496 KiB more): the slack, 0.2 × (12 MiB +
    // 16 KiB) less the 2 MiB spent, is 413 KiB, so the buffer is the size class.
    expect(allocator.malloc(4 * MiB + 1).allocatedLength).toBe(4 * MiB + 16 * KiB);
  });

  it("on a miss, releases cached buffers while active + cache + length > ratio × max(hwmLive, live + n)", () => {
    for (const [boundedRelease, expected] of [
      ["least-recent", [1, 16]],
      ["fitting", [16]],
    ] as const) {
      const { source, allocator } = make("bounded", { boundedRelease });
      const a = allocator.malloc(1 * MiB);
      const keep = allocator.malloc(4 * MiB);
      allocator.free(a); // live 4 MiB, hwmLive 5 MiB, cache 1 MiB
      allocator.malloc(2 * MiB); // 4 + 1 + 2 = 7 ≤ 1.2 × max(5, 6) = 7.2: a stays
      allocator.malloc(3 * MiB); // 6 + 1 + 3 = 10 ≤ 1.2 × 9 = 10.8: a stays
      const big = allocator.malloc(16 * MiB); // 9 + 1 + 16 = 26 ≤ 1.2 × 25 = 30: a stays
      expect(source.released).toEqual([]);
      allocator.free(big);
      allocator.free(keep); // live 5 MiB, hwmLive 25 MiB, cache a, big, keep: 21 MiB
      // A miss of 26 MiB: 5 + 21 + 26 = 52 > 1.2 × 31 = 37.2, by 14.8 MiB. Least recent first: a, then big
      // (35 ≤ 37.2); fitting: big alone is enough (36 ≤ 37.2).
      allocator.malloc(26 * MiB);
      expect(source.released.map((buffer) => buffer.length / MiB)).toEqual(expected);
      expect(allocator.memoryStats().cache).toBe((21 - expected.reduce((sum, x) => sum + x, 0)) * MiB);
    }
  });

  it("never lends a cached buffer past the slack, even to one buffer at a time", () => {
    const { source, allocator } = make("bounded");
    allocator.free(allocator.malloc(10 * MiB)); // hwmLive 10 MiB, cache 10 MiB
    // 10 > 1 + 0.2 × 10: no hit; a miss of 1 MiB, and 0 + 10 + 1 ≤ 1.2 × 10: the 10 MiB buffer stays.
    const small = allocator.malloc(1 * MiB);
    expect(small.allocatedLength).toBe(1 * MiB);
    expect(source.released).toEqual([]);
    allocator.free(small);
    // Nothing live again: 2 MiB finds no hit either; 0 + 11 + 2 > 12 by 1 MiB, and the 1 MiB buffer goes.
    expect(allocator.malloc(2 * MiB).allocatedLength).toBe(2 * MiB);
    expect(allocator.counters()).toMatchObject({ cacheHits: 0, cacheMisses: 3, systemAllocations: 3 });
    expect(source.released.map((buffer) => buffer.length / MiB)).toEqual([1]);
    expect(allocator.memoryStats()).toMatchObject({ active: 2 * MiB, cache: 10 * MiB });
  });

  it("small requests held after a large buffer was cached stay within the bound at every step", () => {
    const { source, allocator } = make("bounded");
    allocator.free(allocator.malloc(10 * MiB));
    const held: ReturnType<typeof allocator.malloc>[] = [];
    const reserved: number[] = [];
    for (let index = 0; index < 12; index++) {
      held.push(allocator.malloc(1 * MiB));
      reserved.push(allocator.memoryStats().reserved / MiB);
    }
    // The 10 MiB buffer stays for two requests (1 + 10 + 1 ≤ 12), and goes on the third (2 + 10 + 1 > 12).
    expect(reserved).toEqual([11, 12, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(source.released.map((buffer) => buffer.length / MiB)).toEqual([10]);
    expect(allocator.memoryStats()).toMatchObject({ active: 12 * MiB, cache: 0, peakReserved: 12 * MiB });
    expect(allocator.counters().peakLive).toBe(12 * MiB);
    for (const allocation of held) allocator.free(allocation);
  });

  it("the bound applies to the mlx policy never, nor to a hit", () => {
    const { source, allocator } = make("mlx");
    const ten = allocator.malloc(10 * MiB);
    const keep = allocator.malloc(1 * MiB);
    allocator.free(ten); // hwmLive 11 MiB
    allocator.malloc(4 * MiB); // 1 + 10 + 4 = 15 > 1.2 × 11: bounded would release, mlx keeps
    expect(source.released).toEqual([]);
    const bounded = make("bounded");
    const tenBounded = bounded.allocator.malloc(10 * MiB);
    const held = bounded.allocator.malloc(1 * MiB);
    bounded.allocator.free(tenBounded);
    // No hit (10 > 4 + 2.2): a miss, and 1 + 10 + 4 > 1.2 × 11.
    bounded.allocator.malloc(4 * MiB);
    expect(bounded.source.released).toHaveLength(1);
    const hit = make("bounded");
    hit.allocator.free(hit.allocator.malloc(10 * MiB));
    expect(hit.allocator.malloc(9 * MiB).allocatedLength).toBe(10 * MiB); // a hit: nothing released
    expect(hit.source.released).toEqual([]);
    allocator.free(keep);
    bounded.allocator.free(held);
  });

  it("its high-water mark is not reset by resetPeak, which restarts peakLive", () => {
    const { source, allocator } = make("bounded");
    allocator.free(allocator.malloc(10 * MiB)); // hwmLive 10 MiB
    allocator.resetPeak();
    expect(allocator.counters().peakLive).toBe(0);
    // A miss: 0 + 10 + 1 ≤ 1.2 × 10 keeps the 10 MiB buffer (a bound from peakLive, 1 MiB, would not).
    const held = allocator.malloc(1 * MiB);
    expect(held.allocatedLength).toBe(1 * MiB);
    expect(source.released).toEqual([]);
    expect(allocator.counters().peakLive).toBe(1 * MiB);
  });

  it("peakLive counts the size classes of live requests, not the buffers handed out (both policies)", () => {
    // Under bounded a ratio of 2 lets the 768-byte buffer serve 512 bytes (its slack at 1.2 is 153 bytes).
    for (const [policy, options] of [
      ["mlx", {}],
      ["bounded", { reserveRatio: 2 }],
    ] as const) {
      const { allocator } = make(policy, options);
      allocator.free(allocator.malloc(768)); // live peak 768
      allocator.malloc(512); // a hit on the 768 buffer: live 512, active 768
      allocator.malloc(512); // a miss: live 1024, active 1280
      expect(allocator.counters().peakLive).toBe(1024);
      expect(allocator.memoryStats().peakActive).toBe(1280);
    }
  });
});

describe("the bounded policy's release orders", () => {
  /**
   * Cached 1, 6 and 2 MiB buffers (in that order), nothing live, hwmLive 9 MiB; each request is longer than
   * all of them (no reuse): a miss that first brings the cache within 1.2 × max(hwmLive, n).
   */
  function released(boundedRelease: "fitting" | "least-recent" | "largest", request: number): number[] {
    const { source, allocator } = make("bounded", { boundedRelease });
    const buffers = [1, 6, 2].map((mebibytes) => allocator.malloc(mebibytes * MiB));
    for (const buffer of buffers) allocator.free(buffer);
    allocator.malloc(request);
    return source.released.map((buffer) => buffer.length / MiB);
  }

  it('"fitting": the smallest cached length that alone is enough, else the largest, then again', () => {
    // 36 MiB: 9 + 36 over 1.2 × 36 = 43.2 by 1.8 MiB: the 2 MiB buffer alone is enough.
    expect(released("fitting", 36 * MiB)).toEqual([2]);
    // 8 MiB: 9 + 8 over 1.2 × 9 = 10.8 by 6.2 MiB: no buffer is enough, the 6 MiB one goes; then 0.2 MiB
    // over, and the 1 MiB buffer is the smallest enough.
    expect(released("fitting", 8 * MiB)).toEqual([6, 1]);
  });

  it('"largest": the oldest buffer of the largest length first', () => {
    expect(released("largest", 36 * MiB)).toEqual([6]);
    expect(released("largest", 8 * MiB)).toEqual([6, 2]);
  });

  it('"least-recent": the least recently cached first', () => {
    expect(released("least-recent", 36 * MiB)).toEqual([1, 6]);
    expect(released("least-recent", 8 * MiB)).toEqual([1, 6]);
  });

  it("a release order outside the three is refused, with nothing made", () => {
    const source = new TestSource();
    expect(
      thrown(() => new CachingAllocator(source, { boundedRelease: "random" as "largest" })),
    ).toMatchObject({
      name: "ArgumentError",
      code: "ERR_NUVEC_INVALID_ARGUMENT",
      argument: "boundedRelease",
      message:
        'new CachingAllocator(): boundedRelease must be "fitting", "least-recent" or "largest", got "random"',
    });
    expect(source.acquired).toEqual([]);
  });
});
