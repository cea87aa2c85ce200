// Hostile traces: back-to-back traces, frees and unmaps of objects born before startTrace.
// A trace must be a self-contained history of its window: replayTrace accepts it, its ids never collide,
// and the replayed peaks equal the device's over the window.
import { replayTrace } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { Device, type MemoryStats, type Trace } from "../../src/index.js";
import { backendFacts } from "./model.js";
import { collectUntil, deferred, transfer, turns } from "./support.js";

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

/** Every figure a replay reproduces, of a device's or a replay's statistics. */
function figures({ active, peakActive, peakActiveWithMapped, mapped, cache, quarantined }: MemoryStats) {
  return { active, peakActive, peakActiveWithMapped, mapped, cache, quarantined };
}

/** Expects `trace`, replayed on a pure allocator shaped like `device`'s backend, to end with the device's figures. */
function expectReplayed(device: Device, trace: Trace): void {
  const replayed = replayTrace(trace.events, backendFacts(device.native.backend));
  expect(figures(replayed.stats)).toEqual(figures(device.memoryStats()));
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

    expect(firstTrace.header?.opening_events).toBe(5);
    // The opening: the three live buffers (at the bytes charged), then the live mapping (labelled by its
    // path), ids from 0.
    expect(firstTrace.events.slice(0, 3).map((event) => event.slice(0, 2))).toEqual([
      ["a", 0],
      ["a", 1],
      ["a", 2],
    ]);
    expect(firstTrace.events[1]).toEqual(["a", 1, 2 * MIB]);
    expect(firstTrace.events[3]).toEqual(["n", 0, "early.bin"]);
    expect(firstTrace.events[4]).toEqual(["m", 0, 300 * KIB, 0]);
    // The early buffer is freed under its own opening id, never under a new allocation's.
    expect(firstTrace.events).toContainEqual(["f", 0]);
    expect(firstTrace.events.filter((event) => event[0] === "f" && event[1] === 3)).toEqual([["f", 3]]);
    expectReplayed(device, firstTrace);

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
    // No "u" of an id never mapped in this trace (replayTrace refused the device's own trace before).
    expectReplayed(device, secondTrace);
    expect(device.memoryStats().mapped).toBe(0);
    expect(secondTrace.header).toMatchObject({ live_at_end: 2, mapped_at_end: 0 }); // early[2] and `second`

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

describe("hostile: a trace started with something in flight (was: a pending free never recorded, peak 2 MiB replayed as 1 MiB)", () => {
  it("a free({ after }) pending at the start opens the trace live, its free is recorded when it settles", async () => {
    const { device } = mockDevice();
    const pending = device.malloc(MIB);
    const { promise, resolve: open } = deferred();
    pending.free({ after: promise });
    device.resetPeak();
    device.startTrace("pending free");
    const during = device.malloc(MIB);
    open();
    await turns(3);
    const trace = device.stopTrace();
    expect(trace.events).toEqual([
      ["a", 0, MIB],
      ["a", 1, MIB],
      ["f", 0],
    ]);
    expect(trace.header?.opening_events).toBe(1);
    expect(device.memoryStats().peakActive).toBe(2 * MIB);
    expectReplayed(device, trace);
    during.free();
    device.close();
  });

  it("a pending free still pending at the end is live at the end; one settling after stopTrace is not recorded", async () => {
    const { device } = mockDevice();
    const pending = device.malloc(3 * MIB);
    const { promise, resolve: open } = deferred();
    pending.free({ after: promise });
    device.resetPeak();
    device.startTrace("still pending");
    const trace = device.stopTrace();
    expect(trace.events).toEqual([["a", 0, 3 * MIB]]);
    expect(trace.header?.live_at_end).toBe(1);
    expectReplayed(device, trace);
    open();
    await turns(3);
    expect(device.memoryStats().active).toBe(0);
    device.close();
  });

  it("a pending unmap opens the trace mapped, its unmap recorded when it settles", async () => {
    const { backend, device } = mockDevice();
    backend.addFile("weights.bin", 700 * KIB);
    const file = device.mapFile("weights.bin");
    const { promise, resolve: open } = deferred();
    file.free({ after: promise });
    const buffer = device.malloc(2 * MIB);
    device.resetPeak();
    device.startTrace("pending unmap");
    open();
    await turns(3);
    const trace = device.stopTrace();
    expect(trace.events).toEqual([
      ["a", 0, 2 * MIB],
      ["n", 0, "weights.bin"],
      ["m", 0, 700 * KIB, 0],
      ["u", 0],
    ]);
    expectReplayed(device, trace);
    buffer.free();
    device.close();
  });

  it("several pending frees and unmaps, some settling during the trace, some after: every figure agrees", async () => {
    const { backend, device } = mockDevice();
    backend.addFile("a.bin", 64 * KIB);
    backend.addFile("b.bin", 5 * MIB);
    const early = deferred();
    const late = deferred();
    device.malloc(MIB).free({ after: early.promise });
    device.malloc(4 * MIB).free({ after: late.promise });
    device.mapFile("a.bin").free({ after: early.promise });
    device.mapFile("b.bin").free({ after: late.promise });
    const kept = device.malloc(300 * KIB);
    device.clearCache();
    device.resetPeak();
    device.startTrace("mixed");
    const inTrace = device.malloc(2 * MIB);
    early.resolve();
    await turns(3);
    inTrace.free();
    const trace = device.stopTrace();
    expectReplayed(device, trace);
    expect(trace.header?.live_at_end).toBe(2); // the late pending free and `kept`
    expect(trace.header?.mapped_at_end).toBe(1);
    late.resolve();
    await turns(3);
    kept.free();
    device.close();
  });
});

describe.skipIf(process.platform !== "linux")(
  "hostile: a trace started with quarantined memory (host backend)",
  () => {
    it("opens with each quarantined buffer (a, q, then a peak reset): its give-back is recorded, the figures agree", async () => {
      const device = Device.open();
      const buffer = device.malloc(4 * MIB);
      let moved: ArrayBuffer | undefined = transfer(buffer.contents());
      buffer.free();
      expect(device.memoryStats().quarantined).toBe(4 * MIB);
      const live = device.malloc(MIB);
      device.resetPeak();
      device.startTrace("quarantined at the start");
      expectReplayed(device, device.stopTrace());
      device.startTrace("quarantine given back in the trace");
      expect(moved.byteLength).toBe(4 * MIB);
      moved = undefined;
      await collectUntil(() => device.memoryStats().quarantined === 0);
      expect(device.memoryStats().quarantined).toBe(0);
      const trace = device.stopTrace();
      expect(trace.events).toEqual([["a", 0, 4 * MIB], ["q", 0], ["p"], ["a", 1, MIB], ["r", 0]]);
      expectReplayed(device, trace);
      live.free();
      device.close();
    });
  },
);
