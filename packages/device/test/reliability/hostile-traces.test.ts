// Hostile traces: back-to-back traces, frees and unmaps of objects born before startTrace.
// A trace must be a self-contained history of its window: replayTrace accepts it, its ids never collide,
// and the replayed peaks equal the device's over the window.
import { replayTrace } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { Device, type Trace } from "../../src/index.js";

const KIB = 1024;
const MIB = 1024 ** 2;

function mockDevice() {
  const backend = new MockBackend({
    memorySize: 16 * 1024 * MIB,
    recommendedMaxWorkingSetSize: 8 * 1024 * MIB,
    maxBufferLength: 1024 * MIB,
    realFiles: false,
  });
  return { backend, device: Device.open({ backend }) };
}

/** Replays `trace` on a pure allocator shaped like `device`'s backend. */
function replay(device: Device, trace: Trace) {
  const backend = device.native.backend;
  return replayTrace(trace.events, {
    workingSet: backend.recommendedMaxWorkingSetSize,
    memorySize: backend.memorySize,
    maxBufferLength: backend.maxBufferLength,
    pageSize: backend.pageSize,
  });
}

describe("hostile: traces", () => {
  it("back-to-back traces with frees and unmaps of objects born before the trace replay to the device's figures", () => {
    const { backend, device } = mockDevice();
    backend.addFile("early.bin", 300 * KIB);
    backend.addFile("late.bin", 70 * KIB);
    const early = [device.malloc(100 * KIB), device.malloc(2 * MIB), device.malloc(5 * KIB)];
    const earlyFile = device.mapFile("early.bin");
    device.clearCache();
    device.resetPeak();

    device.startTrace("first");
    const first = [device.malloc(MIB), device.malloc(40 * KIB)];
    early[0]?.free(); // born before the trace: must not free the trace's own id 0
    const lateFile = device.mapFile("late.bin");
    first[0]?.free();
    const big = device.malloc(3 * MIB);
    const firstTrace = device.stopTrace();
    const firstStats = device.memoryStats();

    expect(firstTrace.header?.opening_events).toBe(4);
    // The opening: the three live buffers (at the bytes charged), then the live mapping, ids from 0.
    expect(firstTrace.events.slice(0, 3).map((event) => event.slice(0, 2))).toEqual([
      ["a", 0],
      ["a", 1],
      ["a", 2],
    ]);
    expect(firstTrace.events[1]).toEqual(["a", 1, 2 * MIB]);
    expect(firstTrace.events[3]).toEqual(["m", 0, 300 * KIB]);
    // The early buffer is freed under its own opening id, never under a new allocation's.
    expect(firstTrace.events).toContainEqual(["f", 0]);
    expect(firstTrace.events.filter((event) => event[0] === "f" && event[1] === 3)).toEqual([["f", 3]]);
    const firstReplay = replay(device, firstTrace);
    expect(firstReplay.stats.peakActive).toBe(firstStats.peakActive);
    expect(firstReplay.stats.peakActiveWithMapped).toBe(firstStats.peakActiveWithMapped);
    expect(firstReplay.stats.active).toBe(firstStats.active);
    expect(firstReplay.stats.mapped).toBe(firstStats.mapped);

    // The second trace starts at once: everything of the first trace is pre-trace now.
    device.clearCache();
    device.resetPeak();
    device.startTrace("second");
    first[1]?.free();
    earlyFile.free(); // born before both traces
    lateFile.free(); // born in the first trace
    const second = device.malloc(512 * KIB);
    big.free();
    early[1]?.free();
    const secondTrace = device.stopTrace();
    const secondStats = device.memoryStats();
    // No "u" of an id never mapped in this trace (replayTrace refused the device's own trace before).
    const secondReplay = replay(device, secondTrace);
    expect(secondReplay.stats.peakActive).toBe(secondStats.peakActive);
    expect(secondReplay.stats.peakActiveWithMapped).toBe(secondStats.peakActiveWithMapped);
    expect(secondReplay.stats.active).toBe(secondStats.active);
    expect(secondReplay.stats.mapped).toBe(0);
    expect(secondTrace.header?.live_at_end).toBe(2); // early[2] and `second`
    expect(secondTrace.header?.mapped_at_end).toBe(0);

    second.free();
    early[2]?.free();
    device.close();
  });

  it("a trace started with nothing live has no opening events", () => {
    const { device } = mockDevice();
    device.startTrace("empty start");
    const buffer = device.malloc(4 * KIB);
    const trace = device.stopTrace();
    expect(trace.header?.opening_events).toBe(0);
    expect(trace.events).toEqual([["a", 0, 4 * KIB]]);
    buffer.free();
    device.close();
  });
});
