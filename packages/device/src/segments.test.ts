import { replayOptionsFromHeader, replayTrace } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { Device } from "./device.js";

describe("a Device under the segments policy (mock backend)", () => {
  // The figures of the segments (2 MiB for small requests, 20 MiB for large) are the allocator's
  // (segments.test.ts) and the segments fuzzing's; here, what the Device does with the backend's segments.
  it("hands out ranges of 2 MiB and 20 MiB segments: handles a range apart, bytes through the range", () => {
    const backend = new MockBackend();
    using device = Device.open({
      backend,
      policy: "segments",
      segments: { smallSegment: 2 * 1024 ** 2, largeSegment: 20 * 1024 ** 2, segmentRounding: 2 * 1024 ** 2 },
      safetyNet: false,
    });
    expect(device.info().policy).toBe("segments");
    const a = device.malloc(1000);
    const b = device.malloc(3000);
    const handleA = device.native.handle(a) as { address: bigint };
    const handleB = device.native.handle(b) as { address: bigint };
    expect(handleB.address - handleA.address).toBe(1024n);
    b.write(new Uint8Array([1, 2, 3]));
    expect([...b.read(0, 3)]).toEqual([1, 2, 3]);
    const big = device.malloc(3 * 1024 ** 2);
    expect(backend.counters().buffersMade).toBe(2); // the 2 MiB segment, then a 20 MiB one
    a.free();
    b.free();
    big.free();
    device.clearCache();
    expect(backend.counters()).toMatchObject({ buffersMade: 2, buffersReleased: 2, bufferBytes: 0 });
  });
});

describe("a trace recorded under the segments policy", () => {
  it("replays to the Device's figures exactly, from the header's allocator setup", () => {
    const backend = new MockBackend();
    using device = Device.open({ backend, policy: "segments", safetyNet: false, cacheLimit: 48 * 1024 ** 2 });
    device.startTrace("segments");
    const live = [];
    for (let round = 0; round < 200; round++) {
      const bytes = ((round * 7919) % 97) * 1024 * (round % 5 === 0 ? 700 : 1) + 1;
      live.push(device.malloc(bytes));
      if (round % 3 === 0) live.splice((round * 31) % live.length, 1)[0]!.free();
      if (round === 120) device.setCacheLimit(8 * 1024 ** 2);
    }
    const trace = device.stopTrace();
    const header = trace.header;
    if (header === undefined) throw new Error("a Device's trace opens with a header");
    expect(header.allocator).toMatchObject({
      policy: "segments",
      fresh: true,
      cacheLimit: 48 * 1024 ** 2,
    });
    const replay = replayTrace([header, ...trace.events], replayOptionsFromHeader(header));
    const stats = device.memoryStats();
    const counters = device.counters();
    expect(replay.stats).toMatchObject({
      active: stats.active,
      peakActive: stats.peakActive,
      peakReserved: stats.peakReserved,
      cache: stats.cache,
      systemAllocations: stats.systemAllocations,
      cacheLimit: stats.cacheLimit,
    });
    expect(replay.counters).toMatchObject({
      systemReleases: counters.systemReleases,
      cacheHits: counters.cacheHits,
      liveBuffers: counters.liveBuffers,
    });
    expect(counters.systemReleases).toBeGreaterThan(0);
  });

  it("over a backend with address spaces, the large pool is one expandable segment: figures are the mapped memory, a trace replays them", () => {
    const MiB = 1024 ** 2;
    const backend = new MockBackend({ mapGranularity: 2 * MiB });
    using device = Device.open({ backend, policy: "segments" });
    device.startTrace("expandable");
    const sizes = [3 * MiB, 40 * MiB, 200 * 1024, 5 * MiB + 512, 100 * MiB];
    const buffers = sizes.map((bytes) => device.malloc(bytes));
    buffers[3]!.write(new Uint8Array([7, 8, 9]), 1000);
    expect([...buffers[3]!.read(1000, 3)]).toEqual([7, 8, 9]);
    const stats = device.memoryStats();
    // One space (no memory of its own) and one small segment of 4 MiB for the 200 KiB request.
    expect(backend.counters().buffersMade).toBe(2);
    const space = device.native.handle(buffers[0]!);
    expect(space).toBeDefined();
    for (const buffer of [buffers[0], buffers[2], buffers[4]]) buffer!.free();
    const trace = device.stopTrace();
    const replayed = replayTrace(trace.events, replayOptionsFromHeader(trace.header));
    expect(replayed.stats).toEqual(device.memoryStats());
    expect(stats.reserved - 4 * MiB).toBeGreaterThanOrEqual(stats.active - 200 * 1024);
    device.clearCache();
    // What stays mapped is what the live blocks need: the mappings under buffers 1 and 3.
    expect(device.memoryStats().reserved).toBeLessThan(stats.reserved);
    expect(device.memoryStats().active).toBe(buffers[1]!.allocatedLength + buffers[3]!.allocatedLength);
    buffers[1]!.free();
    buffers[3]!.free();
    device.clearCache();
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
    device.close();
    expect(backend.counters()).toMatchObject({ buffersMade: 2, buffersReleased: 2 });
  });

  it("a backend's address spaces are all or none: a granularity without the calls, or a bad one, is refused at open", () => {
    const backend = new MockBackend({ mapGranularity: 1024 * 1024 });
    const without = Object.create(backend, { reserveAddressSpace: { value: undefined } });
    expect(() => Device.open({ backend: without })).toThrow(/backend.mapGranularity is given without/);
    const odd = Object.create(backend, { mapGranularity: { value: 3000 } });
    expect(() => Device.open({ backend: odd })).toThrow(/mapGranularity must be a power of two/);
  });
});

describe("teardown under the segments policy gives back every segment and address space", () => {
  const MiB = 1024 ** 2;
  const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

  it.each([
    ["fixed segments", {}],
    ["the expandable segment", { mapGranularity: 2 * MiB }],
  ])(
    "a free({ after }) that settles after close() gives back its segment (%s): the backend holds nothing, the last figures 0",
    async (_, options) => {
      const backend = new MockBackend(options);
      const device = Device.open({ backend, policy: "segments", safetyNet: false });
      const pending = [device.malloc(3 * MiB), device.malloc(5 * MiB)];
      device.malloc(2 * MiB);
      let settle: () => void = () => {};
      const after = new Promise<void>((resolve) => {
        settle = resolve;
      });
      for (const buffer of pending) buffer.free({ after });
      device.close();
      // A kernel may still use the pending blocks: their segment stays (and its memory, mapped or not).
      expect(backend.liveBuffers.length).toBe(1);
      settle();
      await settled();
      expect(backend.liveBuffers).toEqual([]);
      expect(backend.counters()).toMatchObject({
        bufferBytes: 0,
        buffersReleased: backend.counters().buffersMade,
      });
      expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0, cache: 0 });
      expect(device.counters()).toMatchObject({ liveBuffers: 0, pendingFrees: 0 });
    },
  );
});

describe("the segments option of Device.open", () => {
  it("is read once, each key: a getter that answers differently on a second read cannot pass the check with one value and run with another", () => {
    const reads: string[] = [];
    const segments = {
      get blockRounding() {
        reads.push("blockRounding");
        return reads.length === 1 ? 1024 : 3;
      },
    };
    const device = Device.open({
      backend: new MockBackend(),
      policy: "segments",
      segments,
      safetyNet: false,
    });
    expect(reads).toEqual(["blockRounding"]);
    expect(device.malloc(100).allocatedLength).toBe(1024);
    device.close();
  });

  it("refuses a misspelt key naming it and Device.open, nothing made on the backend", () => {
    const backend = new MockBackend();
    expect(() =>
      Device.open({ backend, policy: "segments", segments: { smallSegmnet: 1 << 22 } as never }),
    ).toThrow(
      "Device.open(): unknown option segments.smallSegmnet (the options are blockRounding, smallRequest, smallSegment, largeSegment, segmentRounding, maxSplitSize, releaseIdleOnMiss, expandable, mapAhead)",
    );
    expect([backend.liveBuffers.length, backend.liveResidencySets.length]).toEqual([0, 0]);
  });
});
