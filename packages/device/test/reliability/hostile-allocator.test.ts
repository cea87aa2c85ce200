// The `hostile` part of the reliability suite, for the allocator, the mock and the keep-alive: what a hostile
// or careless user does at the Device level, each case named by what must not happen. Regression tests beside
// the code: the allocator's src/hostile.test.ts, the mock's src/mock/hostile.test.ts.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import { Device } from "../../src/index.js";

const MIB = 1024 ** 2;
const { folder } = scratchFolder("nuvec-reliability-hostile-");

function snapshot(device: Device) {
  return { stats: device.memoryStats(), counters: device.counters() };
}

describe("hostile: a residency keep-alive past what a timer can wait (item 9; was: silently 1 ms)", () => {
  for (const interval of [2 ** 31, 2 ** 32, Number.MAX_SAFE_INTEGER, 1e300]) {
    it(`refuses ${interval} ms as an option and as startResidencyKeepAlive's argument`, () => {
      const backend = new MockBackend();
      expect(() => Device.open({ backend, residencyKeepAliveMilliseconds: interval })).toThrow(ArgumentError);
      expect(backend.counters().residencySetsMade).toBe(0);
      const device = Device.open({ backend: new MockBackend(), wiredLimit: MIB });
      const before = snapshot(device);
      const error = thrown(() => device.startResidencyKeepAlive(interval));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument: "intervalMilliseconds" });
      expect(snapshot(device)).toEqual(before);
      device.close();
    });
  }

  it("still takes the largest interval a timer honours, 2³¹−1 ms", () => {
    const device = Device.open({ backend: new MockBackend(), residencyKeepAliveMilliseconds: 2 ** 31 - 1 });
    device.startResidencyKeepAlive(2 ** 31 - 1);
    device.close();
  });
});

describe("hostile: the backend closed under an open Device (item 10; was: another buffer's 'already released')", () => {
  it("malloc reports the backend's own error, unchanged, and retries nothing", () => {
    const backend = new MockBackend();
    const device = Device.open({ backend });
    device.malloc(1 * MIB).free(); // one buffer in the cache
    backend.close();
    // 8 MiB: 8 + 1 cached ≤ 1.2 × 8, so the bounded policy releases nothing before the miss.
    const error = thrown(() => device.malloc(8 * MIB)) as Error;
    expect(error).toMatchObject({ code: "ERR_NUVEC_RELEASED" });
    expect(error.message).toMatch(/newBuffer\(\): the mock backend is closed/);
    expect(error.message).not.toMatch(/buffer#/);
    expect(device.counters().allocationRetries).toBe(0);
  });
  it("a miss whose bound releases a cached buffer first reports the backend's error too, and retries nothing", () => {
    const backend = new MockBackend();
    const device = Device.open({ backend });
    device.malloc(1 * MIB).free();
    backend.close(); // released the cached buffer with everything else
    // 4 MiB: 4 + 1 cached > 1.2 × 4, so the bounded policy releases the cached buffer before the miss.
    const error = thrown(() => device.malloc(4 * MIB)) as Error;
    expect(error).toMatchObject({ code: "ERR_NUVEC_RELEASED" });
    expect(error.message).toMatch(/newBuffer\(\): the mock backend is closed/);
    expect(error.message).not.toMatch(/buffer#/);
    expect(device.counters()).toMatchObject({ allocationRetries: 0, cachedBuffers: 0, systemReleases: 1 });
    expect(device.memoryStats().cache).toBe(0);
  });
  // A refusal to allocate is still retried after the cache is cleared: faults.test.ts ("fails once").
});

describe("hostile: a residency hook or release that throws during a trim (item 11; was: half a cache left, buffers leaked)", () => {
  it("clearCache releases every cached buffer even when releases throw; books balance", () => {
    const backend = new MockBackend();
    const device = Device.open({ backend });
    const buffers = [1, 2, 3, 4].map((n) => device.malloc(n * MIB));
    for (const buffer of buffers) buffer.free();
    // Release one cached native buffer behind the Device's back: its release by the cache then throws.
    const victim = backend.liveBuffers[1]!;
    victim.release();
    expect(() => device.clearCache()).toThrow(expect.objectContaining({ code: "ERR_NUVEC_RELEASED" }));
    expect(backend.liveBuffers).toHaveLength(0);
    expect(device.memoryStats().cache).toBe(0);
    expect(device.counters()).toMatchObject({ cachedBuffers: 0, systemReleases: 4 });
    device.close();
  });
});

describe("hostile: views moved away before free (item 6, mock; was: free/close threw a TypeError on Node ≥ 21)", () => {
  it("free and close after a postMessage transfer of a buffer's view", () => {
    const backend = new MockBackend();
    const device = Device.open({ backend });
    const buffer = device.malloc(64 * 1024);
    const view = buffer.contents();
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(view, [view]);
    port1.close();
    port2.close();
    buffer.free();
    const other = device.malloc(64 * 1024);
    expect(other.bytes().byteLength).toBe(64 * 1024);
    device.close();
    backend.close();
    expect(backend.closed).toBe(true);
  });
});

describe.skipIf(process.platform === "win32")(
  "hostile: mapping a FIFO on the mock (item 13; was: hung in open(2) waiting for a writer)",
  () => {
    it("is refused at once with the host's mmap/ENODEV and changes nothing", () => {
      const fifo = join(folder, "pipe");
      expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
      const device = Device.open({ backend: new MockBackend({ realFiles: true }) });
      const before = snapshot(device);
      expect(() => device.mapFile(fifo)).toThrow(
        expect.objectContaining({ code: "ERR_NUVEC_SYSTEM", syscall: "mmap", errno: "ENODEV" }),
      );
      expect(snapshot(device)).toEqual(before);
      device.close();
    });
  },
);
