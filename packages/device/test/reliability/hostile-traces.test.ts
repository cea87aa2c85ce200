// Hostile traces: back-to-back traces, frees and unmaps of objects born before startTrace.
// A trace must be a self-contained history of its window: replayTrace accepts it, its ids never collide,
// and the replayed peaks equal the device's over the window.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
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

/** A promise and the function that settles it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** A few turns of the event loop: deferred frees settle. */
async function turns(count = 3): Promise<void> {
  for (let turn = 0; turn < count; turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** Every figure a replay reproduces, of a device's or a replay's statistics. */
function figures(stats: {
  active: number;
  peakActive: number;
  peakActiveWithMapped: number;
  mapped: number;
  cache: number;
  quarantined: number;
}) {
  const { active, peakActive, peakActiveWithMapped, mapped, cache, quarantined } = stats;
  return { active, peakActive, peakActiveWithMapped, mapped, cache, quarantined };
}

describe("hostile: a trace started with something in flight (was: a pending free never recorded, peak 2 MiB replayed as 1 MiB)", () => {
  it("a free({ after }) pending at the start opens the trace live, its free is recorded when it settles", async () => {
    const { device } = mockDevice();
    const pending = device.malloc(MIB);
    const { promise, open } = gate();
    pending.free({ after: promise });
    device.resetPeak();
    device.startTrace("pending free");
    const during = device.malloc(MIB);
    open();
    await turns();
    const trace = device.stopTrace();
    expect(trace.events).toEqual([
      ["a", 0, MIB],
      ["a", 1, MIB],
      ["f", 0],
    ]);
    expect(trace.header?.opening_events).toBe(1);
    expect(device.memoryStats().peakActive).toBe(2 * MIB);
    expect(figures(replay(device, trace).stats)).toEqual(figures(device.memoryStats()));
    during.free();
    device.close();
  });

  it("a pending free still pending at the end is live at the end; one settling after stopTrace is not recorded", async () => {
    const { device } = mockDevice();
    const pending = device.malloc(3 * MIB);
    const { promise, open } = gate();
    pending.free({ after: promise });
    device.resetPeak();
    device.startTrace("still pending");
    const trace = device.stopTrace();
    expect(trace.events).toEqual([["a", 0, 3 * MIB]]);
    expect(trace.header?.live_at_end).toBe(1);
    expect(figures(replay(device, trace).stats)).toEqual(figures(device.memoryStats()));
    open();
    await turns();
    expect(device.memoryStats().active).toBe(0);
    device.close();
  });

  it("a pending unmap opens the trace mapped, its unmap recorded when it settles", async () => {
    const { backend, device } = mockDevice();
    backend.addFile("weights.bin", 700 * KIB);
    const file = device.mapFile("weights.bin");
    const { promise, open } = gate();
    file.free({ after: promise });
    const buffer = device.malloc(2 * MIB);
    device.resetPeak();
    device.startTrace("pending unmap");
    open();
    await turns();
    const trace = device.stopTrace();
    expect(trace.events).toEqual([
      ["a", 0, 2 * MIB],
      ["m", 0, 700 * KIB],
      ["u", 0],
    ]);
    expect(figures(replay(device, trace).stats)).toEqual(figures(device.memoryStats()));
    buffer.free();
    device.close();
  });

  it("several pending frees and unmaps, some settling during the trace, some after: every figure agrees", async () => {
    const { backend, device } = mockDevice();
    backend.addFile("a.bin", 64 * KIB);
    backend.addFile("b.bin", 5 * MIB);
    const early = gate();
    const late = gate();
    device.malloc(MIB).free({ after: early.promise });
    device.malloc(4 * MIB).free({ after: late.promise });
    device.mapFile("a.bin").free({ after: early.promise });
    device.mapFile("b.bin").free({ after: late.promise });
    const kept = device.malloc(300 * KIB);
    device.clearCache();
    device.resetPeak();
    device.startTrace("mixed");
    const inTrace = device.malloc(2 * MIB);
    early.open();
    await turns();
    inTrace.free();
    const trace = device.stopTrace();
    expect(figures(replay(device, trace).stats)).toEqual(figures(device.memoryStats()));
    expect(trace.header?.live_at_end).toBe(2); // the late pending free and `kept`
    expect(trace.header?.mapped_at_end).toBe(1);
    late.open();
    await turns();
    kept.free();
    device.close();
  });
});

describe.skipIf(process.platform !== "linux")(
  "hostile: a trace started with quarantined memory (host backend)",
  () => {
    it("opens with each quarantined buffer (a, q, then a peak reset): its give-back is recorded, the figures agree", async () => {
      setFlagsFromString("--harmony-rab-gsab-transfer");
      const transfer = runInNewContext("ArrayBuffer.prototype.transfer") as (
        this: ArrayBuffer,
      ) => ArrayBuffer;
      const gc = (globalThis as { gc?: () => void }).gc;
      if (gc === undefined) throw new Error("run with --expose-gc (vitest.config.ts)");
      const device = Device.open();
      const buffer = device.malloc(4 * MIB);
      let moved: ArrayBuffer | undefined = transfer.call(buffer.contents());
      buffer.free();
      expect(device.memoryStats().quarantined).toBe(4 * MIB);
      const live = device.malloc(MIB);
      device.resetPeak();
      device.startTrace("quarantined at the start");
      const atStart = replay(device, device.stopTrace());
      expect(figures(atStart.stats)).toEqual(figures(device.memoryStats()));
      device.startTrace("quarantine given back in the trace");
      expect(moved.byteLength).toBe(4 * MIB);
      moved = undefined;
      for (let turn = 0; turn < 50 && device.memoryStats().quarantined > 0; turn += 1) {
        gc();
        await turns(1);
      }
      expect(device.memoryStats().quarantined).toBe(0);
      const trace = device.stopTrace();
      expect(trace.events).toEqual([["a", 0, 4 * MIB], ["q", 0], ["p"], ["a", 1, MIB], ["r", 0]]);
      expect(figures(replay(device, trace).stats)).toEqual(figures(device.memoryStats()));
      live.free();
      device.close();
    });
  },
);
