import type { NativeBackend, NativeResidencySet } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { patternBytes as pattern, readOwnMemory } from "../../native-core/test/support.js";
import { scratchFolder } from "../../stats/test/scratch.js";
import { Device, type DeviceMemoryHandle } from "../src/index.js";
import {
  captureWarnings,
  deferred,
  expectNothingHeldSince,
  hostAvailable,
  hostBackend,
  turns,
  wrapBackend,
} from "./reliability/support.js";

/** The CPU address of a handle (every backend these tests run on has one; CUDA's handles have none). */
function cpuAddress(handle: DeviceMemoryHandle): bigint {
  if (handle.platform === "cuda") throw new Error("a CUDA handle has no CPU address");
  return handle.address;
}

const scratch = scratchFolder("nuvec-runtime-interop-");
let files = 0;
const writeFile = (bytes: Uint8Array) => scratch.write(`file-${files++}.bin`, bytes);

const backends: Array<[string, () => NativeBackend, boolean]> = [
  ["mock", () => new MockBackend({ name: "Mock interop", pageSize: 4096 }), false],
];
if (hostAvailable) backends.push(["host", hostBackend, true]);

describe.each(backends)("runtime interop on the %s backend", (_name, makeBackend, realMemory) => {
  const open = () => {
    const backend = makeBackend();
    return { backend, device: Device.open({ backend }) };
  };

  describe("native handles", () => {
    it("a buffer's handle: frozen, the backend's platform, lengths, and a cache hit gives the same address", () => {
      const { backend, device } = open();
      const buffer = device.malloc(1000);
      const handle = device.native.handle(buffer);
      expect(Object.isFrozen(handle)).toBe(true);
      expect(handle).toMatchObject({ platform: backend.platform, length: 1000, allocatedLength: 1024 });
      expect(cpuAddress(handle)).toBeGreaterThan(0n);
      buffer.free();
      const again = device.malloc(1000);
      expect(device.counters().cacheHits).toBe(1);
      expect(cpuAddress(device.native.handle(again))).toBe(cpuAddress(handle));
      device.close();
    });

    it("a 0-byte buffer's handle has a null address", () => {
      const { device } = open();
      const handle = device.native.handle(device.malloc(0));
      expect(handle).toMatchObject({ address: 0n, length: 0, allocatedLength: 0 });
      device.close();
    });

    it("a mapped file's handle: its length and mapped length", () => {
      const { backend, device } = open();
      const content = pattern(10_000, 7);
      const file = device.mapFile(writeFile(content));
      const handle = device.native.handle(file);
      expect(Object.isFrozen(handle)).toBe(true);
      expect(handle).toMatchObject({
        platform: backend.platform,
        length: 10_000,
        allocatedLength: file.allocatedLength,
      });
      file.free();
      device.close();
    });
    // That an address is the memory contents() shows (a buffer's, a mapped file's): the backend contract.
  });

  describe("free({ after })", () => {
    it("keeps the memory out of the cache until the promise settles; a malloc meanwhile gets other memory", async () => {
      const { backend, device } = open();
      const buffer = device.malloc(100_000);
      const view = buffer.bytes();
      view.fill(7);
      const address = cpuAddress(device.native.handle(buffer));
      const active = device.memoryStats().active;
      const kernel = deferred();
      buffer.free({ after: kernel.promise });

      expect(view.byteLength).toBe(0); // detached at once
      expect(device.memoryStats().active).toBe(active);
      expect(device.counters()).toMatchObject({ pendingFrees: 1, liveBuffers: 1, cachedBuffers: 0 });

      const other = device.malloc(100_000); // the same size class
      expect(cpuAddress(device.native.handle(other))).not.toBe(address);
      expect(device.counters().cacheMisses).toBe(2);
      if (realMemory) expect(readOwnMemory(address, 4)).toEqual(new Uint8Array([7, 7, 7, 7]));

      kernel.resolve();
      await turns();
      expect(device.counters()).toMatchObject({ pendingFrees: 0, cachedBuffers: 1 });
      expect(device.memoryStats().active).toBe(other.allocatedLength);
      const reused = device.malloc(100_000);
      expect(device.counters().cacheHits).toBe(1);
      expect(cpuAddress(device.native.handle(reused))).toBe(address);
      device.close();
      const counters = backend.counters();
      expect(counters.buffersReleased - counters.buffersMade).toBeLessThanOrEqual(0);
    });

    it("a rejected promise frees too (and is not reported as unhandled by the device)", async () => {
      const { device } = open();
      const buffer = device.malloc(4096);
      const address = cpuAddress(device.native.handle(buffer));
      const kernel = deferred();
      buffer.free({ after: kernel.promise });
      kernel.promise.catch(() => {}); // the runtime handles its own kernel's failure
      kernel.reject(new Error("the kernel failed"));
      await turns();
      expect(device.counters().pendingFrees).toBe(0);
      expect(device.memoryStats().active).toBe(0);
      expect(cpuAddress(device.native.handle(device.malloc(4096)))).toBe(address);
      device.close();
    });

    it("accepts any thenable; one whose then() throws counts as rejected and frees", async () => {
      const { device } = open();
      let release!: () => void;
      const thenable = {
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a promise, on purpose
        then: (resolve: () => void) => {
          release = resolve;
        },
      };
      device.malloc(256).free({ after: thenable as unknown as PromiseLike<unknown> });
      device.malloc(512).free({
        after: {
          // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a promise, on purpose
          then: () => {
            throw new Error("broken");
          },
        },
      });
      await turns();
      expect(device.counters().pendingFrees).toBe(1);
      release();
      await turns();
      expect(device.counters().pendingFrees).toBe(0);
      expect(device.memoryStats().active).toBe(0);
      device.close();
    });

    it("a promise that never settles is a counted leak: the memory stays in active and pendingFrees", async () => {
      const { device } = open();
      device.malloc(8192).free({ after: new Promise(() => {}) });
      await turns();
      expect(device.counters().pendingFrees).toBe(1);
      expect(device.memoryStats().active).toBe(8192);
      expect(cpuAddress(device.native.handle(device.malloc(8192)))).toBeGreaterThan(0n);
      expect(device.counters().cacheHits).toBe(0);
    });

    it("free({}) is an ordinary free (bad `after` values: the bad input catalogue)", () => {
      const { device } = open();
      device.malloc(300).free({});
      expect(device.counters()).toMatchObject({ cachedBuffers: 1, pendingFrees: 0 });
      device.close();
    });

    it("mappedFile.release({ after }) detaches views now and unmaps when the promise settles", async () => {
      const { backend, device } = open();
      const file = device.mapFile(writeFile(pattern(5000, 1)));
      const view = new Uint8Array(file.contents());
      const mapped = device.memoryStats().mapped;
      const released = backend.counters().mappingsReleased;
      const kernel = deferred();
      file.free({ after: kernel.promise });
      expect(view.byteLength).toBe(0); // every later use: the bad input catalogue
      expect(device.memoryStats().mapped).toBe(mapped);
      expect(device.counters()).toMatchObject({ pendingFrees: 1, mappings: 1 });
      expect(backend.counters().mappingsReleased).toBe(released);
      kernel.resolve();
      await turns();
      expect(device.memoryStats().mapped).toBe(0);
      expect(device.counters().pendingFrees).toBe(0);
      expect(backend.counters().mappingsReleased).toBe(released + 1);
      device.close();
    });

    it("close() releases everything else at once and each pending free when its promise settles", async () => {
      const { backend, device } = open();
      const before = backend.counters();
      device.setWiredLimit(1 << 20); // the pending buffer is wired in a residency set when close() runs
      const pending = device.malloc(20_000);
      const file = device.mapFile(writeFile(pattern(3000, 2)));
      device.malloc(1000); // live, released by close()
      device.malloc(2000).free(); // cached, released by close()
      const kernel = deferred();
      pending.free({ after: kernel.promise });
      file.free({ after: kernel.promise });
      device.close();

      const closed = backend.counters();
      expect(
        closed.buffersMade - before.buffersMade - (closed.buffersReleased - before.buffersReleased),
      ).toBe(1);
      expect(closed.mappingsMade - closed.mappingsReleased).toBe(
        before.mappingsMade - before.mappingsReleased + 1,
      );
      expect(device.memoryStats()).toMatchObject({
        active: pending.allocatedLength,
        mapped: file.allocatedLength,
      });
      expect(device.counters().pendingFrees).toBe(2);

      kernel.resolve();
      await turns();
      expectNothingHeldSince(before, backend.counters());
      expect(device.memoryStats()).toMatchObject({ active: 0, mapped: 0, activeWithMapped: 0 });
      expect(device.counters()).toMatchObject({ pendingFrees: 0, liveBuffers: 0, mappings: 0 });
    });
  });

  describe("Metal options", () => {
    // Refused where there is no Metal, naming the option: the bad input catalogue.
    it("native.residencySets() is empty without Metal residency sets", () => {
      const { device } = open();
      device.setWiredLimit(1 << 20);
      expect(device.info().residencySets).toBeGreaterThan(0);
      expect(device.native.residencySets()).toEqual([]);
      device.close();
    });
  });
});

describe("a deferred free that fails when it settles", () => {
  it("is a process warning, never an unhandled rejection (a backend closed under the device)", async () => {
    const backend = new MockBackend({ realFiles: false });
    backend.addFile("/weights.bin", 100_000);
    const device = Device.open({ backend, wiredLimit: 1 << 20 });
    const file = device.mapFile("/weights.bin");
    const kernel = deferred();
    file.free({ after: kernel.promise });
    backend.close(); // the runtime's test tears the backend down first: unwiring the file will throw
    // Captured and checked here, not printed.
    const { warnings, restore } = captureWarnings();
    try {
      kernel.resolve();
      await turns();
      await turns();
    } finally {
      restore();
    }
    expect(warnings.map((warning) => warning.options)).toEqual([{ code: "NUVEC_DEFERRED_FREE_FAILED" }]);
    expect(warnings[0]?.message).toMatch(/^nuvec: a deferred free failed: /);
    expect(device.counters().pendingFrees).toBe(0);
  });
});

describe("Metal options, with a stand-in Metal backend (the Device's plumbing; Metal itself never runs here)", () => {
  /** The mock dressed as Metal: its sets get pretend pointers, and every attach records its queue. */
  function pretendMetal() {
    const mock = new MockBackend({ name: "pretend Metal" });
    const attached: Array<{ set: bigint | undefined; queue: bigint | undefined }> = [];
    const checkedDevices: bigint[] = [];
    const pointers = new WeakMap<NativeResidencySet, bigint>();
    let nextPointer = 0x5e7_0000n;
    const backend = wrapBackend(mock, {
      platform: "metal",
      supportsResidencySets: true,
      newResidencySet: () => {
        const set = mock.newResidencySet();
        if (set === undefined) return undefined;
        nextPointer += 0x100n;
        pointers.set(set, nextPointer);
        Object.defineProperty(set, "metalResidencySet", {
          get: () => (set.released ? undefined : pointers.get(set)),
        });
        return set;
      },
      attachResidencySet: (set, queue) => {
        attached.push({ set: set.metalResidencySet, queue });
        mock.attachResidencySet(set);
      },
      checkMetalDevice: (device) => {
        checkedDevices.push(device);
        if (device !== 0xde71cen) throw new Error("not the GPU the buffers come from");
      },
    });
    return { backend, attached, checkedDevices };
  }

  it("attaches every residency set to the runtime's queue and lists the sets' handles", () => {
    const { backend, attached, checkedDevices } = pretendMetal();
    const device = Device.open({
      backend,
      metal: { commandQueue: 0x9_0000n, device: 0xde71cen },
      residencySetMaxPercent: 1,
    });
    expect(checkedDevices).toEqual([0xde71cen]);
    device.setWiredLimit(256 * 1024 ** 2);
    for (let index = 0; index < 3; index += 1) device.malloc(100 * 1024 ** 2);
    const handles = device.native.residencySets();
    expect(handles.length).toBe(device.info().residencySets);
    expect(handles.length).toBeGreaterThan(1);
    expect(attached.map((entry) => entry.queue)).toEqual(handles.map(() => 0x9_0000n));
    expect(attached.map((entry) => entry.set)).toEqual(handles);
    device.close();
    expect(device.native.residencySets()).toEqual([]);
  });

  it("without a queue, sets go to the backend's own queue", () => {
    const { backend, attached } = pretendMetal();
    const device = Device.open({ backend });
    device.setWiredLimit(1 << 20);
    expect(attached.length).toBeGreaterThan(0);
    expect(attached.every((entry) => entry.queue === undefined)).toBe(true);
    device.close();
  });

  it("a device that is not the backend's GPU is refused naming metal.device, with the reason", () => {
    const { backend } = pretendMetal();
    expect(() => Device.open({ backend, metal: { device: 0xbadn } })).toThrow(
      expect.objectContaining({ argument: "metal.device", message: expect.stringMatching(/not the GPU/) }),
    );
  });
});
