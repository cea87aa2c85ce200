// The TypeScript layer of the CUDA backend without a GPU: CudaBackend and its handles over a stand-in for the
// raw addon (the interface of native/binding.cc, in memory). What runs here is the wrappers' own logic —
// argument and state checks before any native call, typed errors, handles, ownership — which they take from
// @nuvec/metal-native/addon; the GPU run (test/cuda.test.ts, the contract suite) covers the real addon.
import { Device } from "@nuvec/device";
import { ArgumentError, type OutOfMemoryError, StateError, UnsupportedError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../native-core/test/support.js";
import { CudaBackend, CudaBuffer, CudaMappedFile, CudaResidencySet } from "../src/cuda.js";
import { fakeAddon, PAGE } from "./fake-addon.js";

function argumentOf(action: () => unknown): string {
  const error = thrown(action);
  expect(error).toBeInstanceOf(ArgumentError);
  return (error as ArgumentError).argument;
}

function backendOver(fake = fakeAddon()) {
  return { backend: new CudaBackend(fake.addon, fake.facts), calls: fake.calls };
}

describe("CudaBackend over the raw addon (no GPU)", () => {
  it("states the addon's facts once, with the device ordinal and driver version", () => {
    const { backend } = backendOver();
    expect([
      backend.name,
      backend.platform,
      backend.hostVisible,
      backend.pageSize,
      backend.device,
      backend.driverVersion,
    ]).toEqual(["Fake GPU", "cuda", false, PAGE, 0, 13000]);
    expect("checkMetalDevice" in backend).toBe(false);
  });

  it("address spaces only where the driver reports a map granularity; the Device then runs fixed segments", () => {
    const without = backendOver().backend;
    expect([without.mapGranularity, without.reserveAddressSpace, without.mapMemory]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    const fake = fakeAddon();
    const calls: string[] = [];
    fake.addon.mapMemory = (_space, offset, length) => void calls.push(`map ${offset} ${length}`);
    const backend = new CudaBackend(fake.addon, { ...fake.facts, mapGranularity: 2 * 1024 * 1024 });
    expect(backend.mapGranularity).toBe(2 * 1024 * 1024);
    const buffer = backend.newBuffer(4096);
    backend.mapMemory!(buffer, 0, 2 * 1024 * 1024);
    expect(calls).toEqual([`map 0 ${2 * 1024 * 1024}`]);
    buffer.release();
    expect(thrown(() => backend.mapMemory!(buffer, 0, 2 * 1024 * 1024))).toBeInstanceOf(StateError);
  });

  it("buffers: device pointers in a frozen handle; contents() refused; nothing to detach", () => {
    const { backend, calls } = backendOver();
    const buffer = backend.newBuffer(1000);
    expect(buffer).toBeInstanceOf(CudaBuffer);
    expect([buffer.length, buffer.allocatedSize]).toEqual([1000, 1024]);
    const handle = buffer.nativeHandle();
    expect(handle).toEqual({ platform: "cuda", devicePointer: expect.any(BigInt), device: 0 });
    expect(Object.isFrozen(handle)).toBe(true);
    expect(thrown(() => buffer.contents())).toBeInstanceOf(UnsupportedError);
    buffer.detachContents();
    expect(calls).not.toContain("detachContents");
    expect(buffer.quarantined).toBe(false);
  });

  it("read and write copy, and check offsets, lengths and sources before the addon is called", () => {
    const { backend, calls } = backendOver();
    const buffer = backend.newBuffer(64);
    buffer.write(new Uint8Array([1, 2, 3]), 10);
    expect([...buffer.read(9, 5)]).toEqual([0, 1, 2, 3, 0]);
    const before = calls.length;
    expect(argumentOf(() => buffer.write(new Uint8Array(65)))).toBe("source");
    expect(argumentOf(() => buffer.write(new Uint8Array(1), 64.5))).toBe("offset");
    expect(argumentOf(() => buffer.write("bytes" as never))).toBe("source");
    expect(argumentOf(() => buffer.read(60, 5))).toBe("length");
    expect(argumentOf(() => buffer.read(-1))).toBe("offset");
    expect(calls.length).toBe(before);
  });

  it("a released buffer refuses every call with StateError, before the addon is called", () => {
    const { backend, calls } = backendOver();
    const buffer = backend.newBuffer(64);
    buffer.release();
    const before = calls.length;
    for (const call of [
      () => buffer.read(),
      () => buffer.write(new Uint8Array(1)),
      () => buffer.nativeHandle(),
      () => buffer.contents(),
      () => buffer.detachContents(),
      () => buffer.release(),
    ]) {
      expect(thrown(call)).toMatchObject({ name: "StateError", code: "ERR_NUVEC_RELEASED" });
    }
    expect(calls.length).toBe(before);
  });

  it("what the addon throws becomes the typed error (out of device memory: OutOfMemoryError)", () => {
    const { backend } = backendOver(fakeAddon({ failAllocation: true }));
    const error = thrown(() => backend.newBuffer(4096));
    expect(error).toMatchObject({ name: "OutOfMemoryError", code: "ERR_NUVEC_ALLOCATION_FAILED" });
    expect((error as OutOfMemoryError).requested).toBe(4096);
  });

  it("mapped files: the CPU reads them; the device pointer only while wired", () => {
    const { backend } = backendOver();
    expect(argumentOf(() => backend.mapFile(""))).toBe("path");
    const mapping = backend.mapFile("/weights");
    expect(mapping).toBeInstanceOf(CudaMappedFile);
    expect([mapping.path, mapping.length, mapping.mappedLength]).toEqual(["/weights", 100, PAGE]);
    expect(mapping.contents().byteLength).toBe(100);
    expect(mapping.nativeHandle()).toEqual({ platform: "cuda", devicePointer: undefined, device: 0 });
  });

  it("residency sets take allocations of their own backend only; a command queue is Metal's", () => {
    const { backend, calls } = backendOver();
    const other = backendOver().backend;
    const set = backend.newResidencySet();
    const otherSet = other.newResidencySet();
    if (set === undefined || otherSet === undefined) throw new Error("no residency set was made");
    expect(set).toBeInstanceOf(CudaResidencySet);
    set.add(backend.newBuffer(64));
    expect(calls).toContain("set.add");
    expect(argumentOf(() => set.add(other.newBuffer(64)))).toBe("allocation");
    expect(argumentOf(() => backend.attachResidencySet(set, 0x1000n))).toBe("commandQueue");
    expect(argumentOf(() => backend.attachResidencySet(otherSet))).toBe("set");
    expect(calls).not.toContain("attachResidencySet");
    backend.attachResidencySet(set);
    expect(calls).toContain("attachResidencySet");
  });

  it("copyFromMapping passes its own handles to the addon, after checking both and the length", () => {
    const { backend, calls } = backendOver();
    const buffer = backend.newBuffer(4096);
    const mapping = backend.mapFile("/weights");
    expect(argumentOf(() => backend.copyFromMapping(mapping as never, mapping))).toBe("buffer");
    const foreign = backendOver().backend.mapFile("/weights");
    expect(argumentOf(() => backend.copyFromMapping(buffer, foreign))).toBe("mapping");
    expect(argumentOf(() => backend.copyFromMapping(buffer, mapping, 101))).toBe("length");
    backend.copyFromMapping(buffer, mapping);
    expect(calls).toContain("copyFromMapping true true 100");
    buffer.release();
    expect(thrown(() => backend.copyFromMapping(buffer, mapping))).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_RELEASED",
    });
  });

  it("timeDriverAllocFree checks its size and count", () => {
    const { backend } = backendOver();
    expect(argumentOf(() => backend.timeDriverAllocFree(0, 1))).toBe("bytes");
    expect(argumentOf(() => backend.timeDriverAllocFree(64, -1))).toBe("count");
    expect(backend.timeDriverAllocFree(64, 1)).toBe(1);
  });
});

/**
 * The fake addon with address spaces at `granularity` (a device of 1 GiB whose largest buffer is 64 MiB), and
 * what the driver holds: the live buffer handles (spaces among them) and the bytes mapped into each space.
 */
function driverWithSpaces(granularity: number) {
  const fake = fakeAddon();
  const live = new Set<object>();
  const mapped = new Map<object, Map<number, number>>();
  const Base = fake.addon.NativeBufferHandle as unknown as new (length: number) => { release(): void };
  class Tracked extends Base {
    constructor(length: number) {
      super(length);
      live.add(this);
    }
    override release(): void {
      super.release();
      live.delete(this);
      // Released, a space's mappings are freed with it (cuMemRelease of what is still mapped).
      mapped.delete(this);
    }
  }
  fake.addon.NativeBufferHandle = Tracked as never;
  fake.addon.reserveAddressSpace = (capacity) => {
    const space = new Tracked(capacity);
    mapped.set(space, new Map());
    return space as never;
  };
  fake.addon.mapMemory = (space, offset, length) => void mapped.get(space)?.set(offset, length);
  fake.addon.unmapMemory = (space, offset) => void mapped.get(space)?.delete(offset);
  const facts = { ...fake.facts, maxBufferLength: 64 * 1024 * 1024, mapGranularity: granularity };
  const backend = new CudaBackend(fake.addon, facts);
  const held = () => ({
    buffers: live.size,
    mappedBytes: [...mapped.values()].reduce(
      (sum, ranges) => sum + [...ranges.values()].reduce((a, b) => a + b, 0),
      0,
    ),
  });
  return { backend, held };
}

describe("the Device over the CUDA backend's stand-in driver", () => {
  const MiB = 1024 * 1024;

  it("a free({ after }) that settles after close() gives back the expandable segment: no buffer, no mapping, no address space left", async () => {
    const { backend, held } = driverWithSpaces(2 * MiB);
    const device = Device.open({ backend, safetyNet: false });
    expect(device.info().policy).toBe("segments");
    const pending = device.malloc(3 * MiB);
    device.malloc(600 * 1024); // a small-pool segment, freed by close()
    let settle: () => void = () => {};
    pending.free({ after: new Promise<void>((resolve) => (settle = resolve)) });
    device.close();
    // The pending block's mapping and its space stay while a kernel may use them.
    expect(held()).toEqual({ buffers: 1, mappedBytes: 16 * MiB });
    settle();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(held()).toEqual({ buffers: 0, mappedBytes: 0 });
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0, cache: 0 });
  });

  it.each([1, 4096, 3 * MiB, 128 * MiB])(
    "a driver's map granularity of %i (not a power of two from the page to the largest buffer) is no address space: the Device opens with fixed segments, nothing left after close",
    (granularity) => {
      const { backend, held } = driverWithSpaces(granularity);
      expect([backend.mapGranularity, backend.reserveAddressSpace]).toEqual([undefined, undefined]);
      const device = Device.open({ backend, safetyNet: false });
      device.malloc(3 * MiB).free();
      expect(device.memoryStats().reserved).toBe(40 * MiB);
      device.close();
      expect(held()).toEqual({ buffers: 0, mappedBytes: 0 });
    },
  );
});
