import { PAGE } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { MiB, TestSource } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";
import { type AllocatorPolicy, DEFAULT_RESERVE_RATIO } from "./options.js";

function make(policy: AllocatorPolicy, reserveRatio?: number) {
  const source = new TestSource({ workingSet: 1024 * MiB, memorySize: 2048 * MiB });
  return { source, allocator: new CachingAllocator(source, { policy, reserveRatio }) };
}

describe("the bounded policy", () => {
  it("is the default, with 1.3 the default ratio; mlx is one option away", () => {
    expect(new CachingAllocator(new TestSource()).policy).toBe("bounded");
    expect(make("mlx").allocator.policy).toBe("mlx");
    expect(make("bounded").allocator.policy).toBe("bounded");
    expect(DEFAULT_RESERVE_RATIO).toBe(1.3);
  });

  it("rule 1: reuses the smallest cached length in [n, 2n), without MLX's n + 2·PAGE bound", () => {
    for (const [policy, expected] of [
      ["mlx", 1 * MiB],
      ["bounded", 1 * MiB + 2 * PAGE],
    ] as const) {
      const { allocator } = make(policy);
      allocator.free(allocator.malloc(1 * MiB + 2 * PAGE));
      expect(allocator.malloc(1 * MiB).allocatedLength).toBe(expected);
    }
    const { allocator } = make("bounded");
    allocator.free(allocator.malloc(2 * MiB));
    expect(allocator.malloc(1 * MiB).allocatedLength).toBe(1 * MiB); // 2n is outside the window
  });

  it("rule 2: on a miss, releases LRU buffers while active + cache + n > ratio × max(hwmLive, live + n)", () => {
    const { source, allocator } = make("bounded");
    const a = allocator.malloc(1 * MiB);
    allocator.free(a); // live 0, hwmLive 1 MiB, cache 1 MiB
    allocator.malloc(4 * MiB); // 0 + 1 + 4 = 5 MiB ≤ 1.3 × 4 MiB = 5.2 MiB: a stays
    expect(source.released).toEqual([]);
    const b = allocator.malloc(3 * MiB + 256 * 1024); // 4 + 1 + 3.25 = 8.25 ≤ 1.3 × 7.25 = 9.425: a stays
    expect(source.released).toEqual([]);
    allocator.free(b); // live 4 MiB, hwm 7.25 MiB, cache 4.25 MiB
    allocator.malloc(8 * MiB); // 4 + 4.25 + 8 = 16.25 > 1.3 × 12 = 15.6: release a (1 MiB) → 15.25 ≤ 15.6
    expect(source.released).toEqual([a.buffer]);
    expect(allocator.memoryStats().cache).toBe(3 * MiB + 256 * 1024);
  });

  it("rule 2 does not apply to the mlx policy, nor to a hit", () => {
    const { source, allocator } = make("mlx");
    allocator.free(allocator.malloc(10 * MiB)); // hwmLive 10 MiB
    allocator.malloc(4 * MiB); // 0 + 10 + 4 = 14 > 1.3 × 10 = 13: bounded would release, mlx keeps
    expect(source.released).toEqual([]);
    const bounded = make("bounded");
    bounded.allocator.free(bounded.allocator.malloc(10 * MiB));
    bounded.allocator.malloc(4 * MiB);
    expect(bounded.source.released).toHaveLength(1);
    const hit = make("bounded");
    hit.allocator.free(hit.allocator.malloc(10 * MiB));
    expect(hit.allocator.malloc(6 * MiB).allocatedLength).toBe(10 * MiB); // a hit: nothing released
    expect(hit.source.released).toEqual([]);
  });

  it("its high-water mark is not reset by resetPeak, which restarts peakLive", () => {
    const { source, allocator } = make("bounded");
    allocator.free(allocator.malloc(10 * MiB)); // hwmLive 10 MiB
    allocator.resetPeak();
    expect(allocator.counters().peakLive).toBe(0);
    allocator.malloc(1 * MiB); // 10 + 1 ≤ 1.3 × 10: the cached buffer stays
    expect(source.released).toEqual([]);
    expect(allocator.counters().peakLive).toBe(1 * MiB);
  });

  it("a larger ratio keeps more", () => {
    const tight = make("bounded", 1);
    tight.allocator.free(tight.allocator.malloc(1 * MiB));
    tight.allocator.malloc(4 * MiB); // 5 > 1 × 4
    expect(tight.source.released).toHaveLength(1);
  });

  it("peakLive counts the size classes of live requests, not the buffers handed out (both policies)", () => {
    for (const policy of ["mlx", "bounded"] as const) {
      const { allocator } = make(policy);
      allocator.free(allocator.malloc(768)); // live peak 768
      allocator.malloc(512); // a hit on the 768 buffer: live 512, active 768
      allocator.malloc(512); // a miss: live 1024, active 1280
      expect(allocator.counters().peakLive).toBe(1024);
      expect(allocator.memoryStats().peakActive).toBe(1280);
    }
  });

  it('boundedRelease: "largest" releases the oldest buffer of the largest length first', () => {
    const source = new TestSource({ workingSet: 1024 * MiB, memorySize: 2048 * MiB });
    const allocator = new CachingAllocator(source, { policy: "bounded", boundedRelease: "largest" });
    const a = allocator.malloc(1 * MiB);
    const b = allocator.malloc(6 * MiB);
    const c = allocator.malloc(1 * MiB + PAGE);
    allocator.free(a);
    allocator.free(b);
    allocator.free(c); // hwmLive 8 MiB + 16 KiB, cache the same
    allocator.malloc(3 * MiB); // 8 + 3 > 1.3 × 8: the 6 MiB buffer goes (least-recent would take a, then b)
    expect(source.released).toEqual([b.buffer]);
    expect(() => new CachingAllocator(source, { boundedRelease: "random" as "largest" })).toThrow(
      /boundedRelease/,
    );
  });
});
