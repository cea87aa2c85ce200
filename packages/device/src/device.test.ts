import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it, vi } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { collectUntil, turns } from "../test/reliability/support.js";
import { ownerOfView } from "./device-buffer.js";
import { Device, type DeviceBuffer, OutOfMemoryError } from "./index.js";

const GIB = 1024 ** 3;
const MIB = 1024 ** 2;

function mockDevice(options: ConstructorParameters<typeof MockBackend>[0] = {}, deviceOptions = {}) {
  const backend = new MockBackend({
    memorySize: 16 * GIB,
    recommendedMaxWorkingSetSize: 8 * GIB,
    maxBufferLength: 8 * GIB,
    realFiles: false,
    ...options,
  });
  const device = Device.open({ backend, ...deviceOptions });
  return { backend, device };
}

describe("Device.open", () => {
  it("takes MLX's default limits from the device facts, and limits given as options", () => {
    // min(1.5·8 GiB, 0.95·16 GiB)
    const limits = { memoryLimit: 12 * GIB, cacheLimit: 12 * GIB, wiredLimit: 0 };
    expect(mockDevice().device.memoryStats()).toMatchObject(limits);
    expect(mockDevice().device.info()).toMatchObject({
      platform: "mock",
      policy: "bounded",
      residencySupported: true,
      closed: false,
      gcLimit: Math.floor(0.95 * 8 * GIB),
    });
    const given = { memoryLimit: 2 * GIB, cacheLimit: 64 * MIB, wiredLimit: GIB };
    expect(mockDevice({}, given).device.memoryStats()).toMatchObject(given);
  });

  it("takes residencySetMaxPercent as a number: 1 caps each set at 1% of W, 0 and 100 mean one set, whatever MLX's variable says", () => {
    const setsFor = (percent: number | undefined) => {
      const { device } = mockDevice({}, percent === undefined ? {} : { residencySetMaxPercent: percent });
      device.setWiredLimit(GIB);
      for (let index = 0; index < 3; index += 1) device.malloc(100 * MIB);
      const sets = device.info().residencySets;
      device.close();
      return sets;
    };
    vi.stubEnv("MLX_RESIDENCY_SET_MAX_PCT", "1");
    try {
      // 1% of 8 GiB: about 82 MiB a set, so 100 MiB buffers need several sets.
      const capped = setsFor(1);
      expect(capped).toBeGreaterThan(1);
      expect(setsFor(undefined)).toBe(capped); // the variable says 1 too
      expect(setsFor(0)).toBe(1);
      expect(setsFor(100)).toBe(1);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("malloc and free", () => {
  // Size classes, the cache and its reuse (the very buffer the model picks): the allocator's tests and the
  // model-based fuzzing (test/reliability/fuzz.test.ts).
  it("gives an empty buffer for 0 bytes, counted nowhere", () => {
    const { device } = mockDevice();
    const empty = device.malloc(0);
    expect(empty.length).toBe(0);
    expect(empty.contents().byteLength).toBe(0);
    expect(device.memoryStats()).toMatchObject({ active: 0, systemAllocations: 0 });
    empty.free();
    expect(() => empty.free()).toThrow(
      expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" }),
    );
  });

  it("refuses past the hard memory limit with OutOfMemoryError, nothing changed", () => {
    const { device } = mockDevice({}, { memoryLimit: 10 * MIB });
    const held = device.malloc(8 * MIB);
    const before = device.memoryStats();
    const error = thrown(() => device.malloc(4 * MIB));
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_OUT_OF_MEMORY", limit: 10 * MIB, active: 8 * MIB });
    expect(device.memoryStats()).toEqual(before);
    held.free();
  });
});

describe("contents and views", () => {
  it("writes read back; a freed buffer's views are detached and never show the next owner's data", () => {
    const { device } = mockDevice();
    const first = device.malloc(4096);
    const view = first.bytes();
    expect(view.length).toBe(4096);
    view.set([1, 2, 3]);
    expect([...first.bytes().subarray(0, 3)]).toEqual([1, 2, 3]);
    const whole = first.contents();
    first.free();
    expect(whole.byteLength).toBe(0);
    expect(view.length).toBe(0);
    const second = device.malloc(4096); // the same cached buffer, next owner
    expect(device.counters().cacheHits).toBe(1);
    second.bytes().fill(9);
    expect(view[0]).toBeUndefined();
    view[0] = 42; // writes to a detached view go nowhere
    expect(second.bytes()[0]).toBe(9);
  });

  it("ties each view to the buffer that handed it out, once, and the next owner's view to the next owner", () => {
    const { device } = mockDevice();
    const buffer = device.malloc(4096);
    const view = buffer.contents();
    expect(buffer.contents()).toBe(view); // the same view: tied once, no second stamp
    expect(ownerOfView(view)).toBe(buffer);
    expect(ownerOfView(new ArrayBuffer(8))).toBeUndefined();
    buffer.free();
    const next = device.malloc(4096); // the cached buffer
    const fresh = next.contents();
    expect(fresh).not.toBe(view);
    expect(ownerOfView(fresh)).toBe(next);
    expect(ownerOfView(view)).toBe(buffer);
    next.free();
  });

  it("ties a non-extensible view to its buffer too", () => {
    const sealed = new MockBackend({ realFiles: false });
    const newBuffer = sealed.newBuffer.bind(sealed);
    sealed.newBuffer = (bytes: number) => {
      const buffer = newBuffer(bytes);
      const contents = buffer.contents.bind(buffer);
      buffer.contents = () => Object.preventExtensions(contents());
      return buffer;
    };
    const device = Device.open({ backend: sealed });
    const buffer = device.malloc(4096);
    const view = buffer.contents();
    expect(Object.isExtensible(view)).toBe(false);
    expect(buffer.contents()).toBe(view);
    expect(ownerOfView(view)).toBe(buffer);
    buffer.free();
    expect(view.byteLength).toBe(0);
  });

  it("detaches on free only what an owner asked for: no backend call for a buffer whose contents nobody read", () => {
    const { device, backend } = mockDevice();
    const detaches = () => backend.callCounts()["buffer.detachContents"];
    device.malloc(4096).free();
    device.malloc(4096).free(); // the cached buffer, again without a view
    expect(detaches()).toBe(0);
    const viewed = device.malloc(4096);
    const view = viewed.bytes();
    viewed.free();
    expect(detaches()).toBe(1);
    expect(view.byteLength).toBe(0);
    const copied = device.malloc(4096); // write() and read() copy without a view: nothing to detach
    copied.write(new Uint8Array([1, 2, 3]));
    expect([...copied.read(0, 3)]).toEqual([1, 2, 3]);
    copied.free();
    expect(detaches()).toBe(1);
  });
});

// Mapped files' charge (mappingSize at the backend's page size), release, and a refusal past the memory limit
// that unmaps again: the model-based fuzzing (test/reliability/fuzz.test.ts) checks them at every step.

describe("wired memory", () => {
  it("wires buffers and mapped files up to the wired limit; cached buffers stay wired", () => {
    const { device, backend } = mockDevice();
    const buffer = device.malloc(MIB);
    backend.addFile("w.bin", 3 * MIB);
    const file = device.mapFile("w.bin");
    expect(device.memoryStats()).toMatchObject({ wired: 0, wiredMapped: 0 });
    expect(device.setWiredLimit(8 * MIB)).toBe(0);
    expect(device.memoryStats()).toMatchObject({ wiredLimit: 8 * MIB, wired: 4 * MIB, wiredMapped: 3 * MIB });
    expect(backend.counters().wiredBytes).toBe(4 * MIB);
    buffer.free(); // to the cache: still wired, as MLX
    expect(device.memoryStats()).toMatchObject({ wired: 4 * MIB, cache: MIB });
    device.clearCache();
    expect(device.memoryStats()).toMatchObject({ wired: 3 * MIB, cache: 0 });
    expect(device.setWiredLimit(MIB)).toBe(8 * MIB);
    expect(device.memoryStats()).toMatchObject({ wired: 0, wiredMapped: 0 });
    file.free();
  });

  it("refreshes residency of non-empty sets, by hand and on a keep-alive timer", () => {
    vi.useFakeTimers();
    try {
      const { device, backend } = mockDevice({}, { wiredLimit: GIB, residencyKeepAliveMilliseconds: 1000 });
      const requests = () => backend.counters().residencyRequests;
      const start = requests();
      device.refreshResidency(); // the only set is empty: nothing renewed
      expect(requests()).toBe(start);
      const buffer = device.malloc(MIB);
      device.refreshResidency();
      expect(requests()).toBe(start + 1);
      vi.advanceTimersByTime(3000);
      expect(requests()).toBe(start + 4);
      device.stopResidencyKeepAlive();
      vi.advanceTimersByTime(3000);
      expect(requests()).toBe(start + 4);
      buffer.free();
      device.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps working without residency support: the limit is stored, nothing wired", () => {
    const { device } = mockDevice({ supportsResidencySets: false });
    expect(device.info().residencySupported).toBe(false);
    device.malloc(MIB);
    expect(device.setWiredLimit(GIB)).toBe(0);
    expect(device.memoryStats()).toMatchObject({ wiredLimit: GIB, wired: 0 });
  });
});

// The setters' previous values, setCacheLimit's trim and resetPeak: the fuzzing checks them against the model.

describe("close", () => {
  it("releases everything and is idempotent (later use: the bad input catalogue)", () => {
    const { device, backend } = mockDevice({}, { wiredLimit: GIB });
    const live = device.malloc(MIB);
    const view = live.contents();
    device.malloc(2 * MIB).free();
    backend.addFile("f.bin", 5000);
    device.mapFile("f.bin");
    device.close();
    device.close();
    const counters = backend.counters();
    expect(counters.buffersMade).toBe(counters.buffersReleased);
    expect(counters.mappingsMade).toBe(counters.mappingsReleased);
    expect(counters.wiredBytes).toBe(0);
    expect(view.byteLength).toBe(0);
    expect(device.closed).toBe(true);
    expect(device.info().closed).toBe(true);
    // The last statistics and counters stay readable: everything released.
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, mapped: 0, wired: 0 });
    expect(device.counters()).toMatchObject({ liveBuffers: 0, mappings: 0, cachedBuffers: 0 });
  });

  it("works with using", () => {
    const backend = new MockBackend({ realFiles: false });
    {
      using device = Device.open({ backend });
      using buffer = device.malloc(100);
      expect(buffer.length).toBe(100);
    }
    expect(backend.counters().buffersReleased).toBe(backend.counters().buffersMade);
  });
});

describe("the safety net", () => {
  const gc = (globalThis as { gc?: () => void }).gc;

  it.skipIf(gc === undefined)("gives back a buffer dropped without free(), and counts it", async () => {
    const { device } = mockDevice();
    (() => device.malloc(MIB))();
    expect(device.memoryStats().active).toBe(MIB);
    await collectUntil(() => device.counters().leakedBuffers > 0);
    expect(device.counters().leakedBuffers).toBe(1);
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: MIB });
  });

  it.skipIf(gc === undefined)(
    "can be turned off: a dropped buffer then stays live until close()",
    async () => {
      const { device, backend } = mockDevice({}, { safetyNet: false });
      (() => device.malloc(MIB))();
      await collectUntil(() => false);
      expect(device.counters()).toMatchObject({ leakedBuffers: 0, liveBuffers: 1 });
      expect(device.memoryStats().active).toBe(MIB);
      device.close();
      expect(backend.counters().buffersReleased).toBe(backend.counters().buffersMade);
    },
  );

  it("registers only buffers that outlive the turn they were made in, once each, in one batch", async () => {
    const register = vi.spyOn(FinalizationRegistry.prototype, "register");
    const unregister = vi.spyOn(FinalizationRegistry.prototype, "unregister");
    try {
      const { device } = mockDevice();
      for (let index = 0; index < 10_000; index += 1) device.malloc(4096).free();
      const kept = [device.malloc(MIB), device.malloc(2 * MIB)];
      const freedLater = device.malloc(4096);
      freedLater.free();
      expect(register).not.toHaveBeenCalled();
      await turns();
      expect(register).toHaveBeenCalledTimes(2);
      expect(unregister).not.toHaveBeenCalled();
      for (const buffer of kept) buffer.free();
      expect(unregister).toHaveBeenCalledTimes(2);
      await turns();
      expect(register).toHaveBeenCalledTimes(2);
      expect(device.counters()).toMatchObject({ liveBuffers: 0, leakedBuffers: 0 });
    } finally {
      register.mockRestore();
      unregister.mockRestore();
    }
  });

  it("registers the buffers still live after frees in any order in their turn, each once", async () => {
    const register = vi.spyOn(FinalizationRegistry.prototype, "register");
    try {
      const { device } = mockDevice();
      const made = Array.from({ length: 6 }, (_, index) => device.malloc(4096 * (index + 1)));
      // The oldest, one in the middle and the newest: each free moves another entry into its place.
      for (const index of [0, 3, 5]) made[index]!.free();
      const later = device.malloc(MIB);
      made[1]!.free();
      await turns();
      const registered = register.mock.calls.map(([target]) => target);
      expect(registered).toHaveLength(3);
      expect(new Set(registered)).toEqual(new Set([made[2], made[4], later]));
      for (const buffer of [made[2]!, made[4]!, later]) buffer.free();
      expect(device.counters()).toMatchObject({ liveBuffers: 0, leakedBuffers: 0 });
    } finally {
      register.mockRestore();
    }
  });

  it("registers each turn's live buffers once, on two devices at once, never an earlier turn's again", async () => {
    const register = vi.spyOn(FinalizationRegistry.prototype, "register");
    try {
      const [one, two] = [mockDevice().device, mockDevice().device];
      const first = [one.malloc(4096), two.malloc(4096), one.malloc(8192)];
      await turns();
      expect(register.mock.calls.map(([target]) => target)).toEqual(expect.arrayContaining(first));
      expect(register).toHaveBeenCalledTimes(3);
      // A later turn: buffers of both devices between an earlier turn's, one freed in its turn, one of the
      // earlier turn freed now.
      const second = [two.malloc(4096), one.malloc(4096)];
      one.malloc(MIB).free();
      first[0]!.free();
      await turns();
      const registered = register.mock.calls.slice(3).map(([target]) => target);
      expect(registered).toHaveLength(2);
      expect(new Set(registered)).toEqual(new Set(second));
      for (const buffer of [...first.slice(1), ...second]) buffer.free();
      for (const device of [one, two])
        expect(device.counters()).toMatchObject({ liveBuffers: 0, leakedBuffers: 0 });
    } finally {
      register.mockRestore();
    }
  });

  it.skipIf(gc === undefined)(
    "reclaims a buffer dropped in a long turn among thousands freed in it",
    async () => {
      const { device } = mockDevice();
      const kept: DeviceBuffer[] = [];
      (() => {
        for (let index = 0; index < 20_000; index += 1) {
          const buffer = device.malloc(4096 + (index % 7) * 256);
          if (index % 1000 === 0) kept.push(buffer);
          else if (index !== 12_345) buffer.free(); // 12345 is dropped, never freed
        }
      })();
      expect(device.counters().liveBuffers).toBe(kept.length + 1);
      await collectUntil(() => device.counters().leakedBuffers > 0);
      expect(device.counters()).toMatchObject({ leakedBuffers: 1, liveBuffers: kept.length });
      for (const buffer of kept) buffer.free();
      expect(device.memoryStats().active).toBe(0);
    },
  );

  it.skipIf(gc === undefined)(
    "never reclaims a buffer freed after its first turn, nor one closed",
    async () => {
      const { device } = mockDevice();
      let freed: DeviceBuffer | undefined = device.malloc(MIB);
      (() => device.malloc(2 * MIB))(); // dropped: reclaimed once
      await turns(); // both registered
      freed.free();
      freed = undefined;
      await collectUntil(() => device.counters().leakedBuffers > 0);
      await collectUntil(() => false);
      expect(device.counters()).toMatchObject({ leakedBuffers: 1, liveBuffers: 0, cachedBuffers: 2 });
      (() => device.malloc(MIB))(); // dropped, then the device closes before the batch
      device.close();
      await collectUntil(() => false);
      expect(device.counters()).toMatchObject({ leakedBuffers: 1, liveBuffers: 0 });
    },
  );

  it("counts live buffers through any order of frees", () => {
    const { device } = mockDevice();
    const buffers = Array.from({ length: 6 }, (_, index) => device.malloc(1000 * (index + 1)));
    device.malloc(0);
    for (const index of [2, 0, 5, 3]) buffers[index]?.free();
    expect(device.counters().liveBuffers).toBe(2);
    expect(device.memoryStats().active).toBe(2048 + 5120);
    device.close();
    expect(device.counters().liveBuffers).toBe(0);
  });

  it.skipIf(gc === undefined)("never while a view over it is reachable", async () => {
    const { device } = mockDevice();
    const view = (() => device.malloc(4096).bytes())();
    view[0] = 5;
    await collectUntil(() => device.counters().leakedBuffers > 0);
    expect(device.counters().leakedBuffers).toBe(0);
    expect(device.memoryStats().active).toBe(4096);
    const next = device.malloc(4096); // a new system buffer: the old one is still owned through the view
    expect(device.memoryStats().systemAllocations).toBe(2);
    expect(view[0]).toBe(5);
    next.free();
  });
});

describe("memory history", () => {
  it("records allocations, frees, mappings and limit changes in the trace format", () => {
    const { device, backend } = mockDevice();
    const before = device.malloc(10); // live at the start: the trace opens with it (at its 256 bytes charged)
    device.startTrace("unit");
    expect(() => device.startTrace()).toThrow(
      expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_TRACE_RECORDING" }),
    );
    const a = device.malloc(1000);
    const b = device.malloc(2000);
    a.free();
    before.free(); // allocated before the trace: freed under its opening id
    backend.addFile("m.bin", 5000);
    const file = device.mapFile("m.bin");
    device.setCacheLimit(MIB);
    device.setMemoryLimit(GIB);
    device.setWiredLimit(MIB);
    device.clearCache();
    device.resetPeak();
    file.free();
    const trace = device.stopTrace();
    expect(trace.events).toEqual([
      ["a", 0, 256],
      ["a", 1, 1000],
      ["a", 2, 2000],
      ["f", 1],
      ["f", 0],
      // A mapped file is labelled by its path.
      ["n", 0, "m.bin"],
      ["m", 0, 5000, 0],
      ["l", "cache", MIB],
      ["l", "memory", GIB],
      ["l", "wired", MIB],
      ["c"],
      ["p"],
      ["u", 0],
    ]);
    expect(trace.header).toMatchObject({
      name: "unit",
      events: 13,
      opening_events: 1,
      allocations: 3,
      live_at_end: 1,
      peak_live_bytes: 3256,
    });
    const lines = trace
      .toNdjson()
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(lines[0]).toEqual(trace.header);
    expect(lines.slice(1)).toEqual(trace.events);
    expect(() => device.stopTrace()).toThrow(
      expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_TRACE_RECORDING" }),
    );
    b.free();
  });
});

describe("cache policies", () => {
  // What each policy keeps (the bounded one's reserve bound, MLX's keeping everything) is the allocator's
  // (bounded.test.ts, properties.test.ts); the Device runs the one asked for, the bounded one by default.
  it("runs MLX's policy on request (the bounded one by default: Device.open above)", () => {
    expect(mockDevice({}, { policy: "mlx" }).device.info().policy).toBe("mlx");
  });
});
