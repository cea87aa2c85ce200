// What only the CUDA backend does, through the Device as runtimes use it: device memory written and read by
// copies across cache reuse, the driver's out-of-memory after the cache-clearing retry, the hard limit
// refusing before the driver is asked, close() giving every byte back to the driver, wired mappings
// registered with the driver and read by the GPU through their device pointer. Needs an NVIDIA GPU (gpu/run.sh).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setImmediate as nextImmediate } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Device, OutOfMemoryError } from "@nuvec/device";
import { ArgumentError } from "@nuvec/stats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { patternBytes, thrown } from "../../native-core/test/support.js";
import { findCudaAddon } from "../src/loader.js";
import { cuda, cudaBackend, expectDriverOutOfMemory, expectSameBytes } from "./support.js";

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;

describe.runIf(cudaBackend !== undefined)("CUDA backend on a GPU", () => {
  let directory: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "nuvec-cuda-"));
  });

  afterAll(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it("facts: the device's name and total memory, the whole memory as working set, 16 KiB pages, not host-visible", () => {
    const backend = cuda();
    const { total } = backend.memoryInfo();
    expect(backend.platform).toBe("cuda");
    expect(backend.name.length).toBeGreaterThan(0);
    expect(backend.memorySize).toBe(total);
    expect(backend.recommendedMaxWorkingSetSize).toBe(total);
    expect(backend.pageSize).toBe(16 * 1024);
    expect(backend.hostVisible).toBe(false);
    expect(backend.driverVersion).toBeGreaterThan(0);
    using device = Device.open({ backend });
    // MLX's CUDA memory limit: 0.95 × total (the allocator's min(1.5·W, 0.95·M) with W = M).
    expect(device.memoryStats().memoryLimit).toBe(Math.floor(0.95 * total));
  });

  it("a pattern written with write() reads back after the buffer went through the cache (every policy)", () => {
    for (const policy of ["segments", "bounded", "mlx"] as const) {
      using device = Device.open({ backend: cuda(), policy });
      roundTrip(device);
    }
  });

  it("another library's context made current on this thread (or none) does not misdirect the backend's calls", () => {
    const backend = cuda();
    const found = findCudaAddon(
      join(dirname(fileURLToPath(import.meta.url)), ".."),
      process.platform,
      process.env.NUVEC_CUDA_NATIVE_ADDON,
    );
    const raw = "addon" in found ? (found.addon as unknown as { clearCurrentContext(): void }) : undefined;
    expect(raw).toBeDefined();
    const buffer = backend.newBuffer(4096);
    raw!.clearCurrentContext();
    // The backend makes its primary context current again before each call (was: a thread-local said it
    // still was, and the driver refused with CUDA_ERROR_INVALID_CONTEXT).
    buffer.write(patternBytes(4096, 9));
    raw!.clearCurrentContext();
    expectSameBytes(buffer.read(), patternBytes(4096, 9));
    raw!.clearCurrentContext();
    const other = backend.newBuffer(4096);
    other.release();
    buffer.release();
  });

  it("fixed segments: neighbouring blocks of one segment keep their own bytes; native.handle() is the block's", () => {
    const backend = cuda();
    using device = Device.open({ backend, segments: { expandable: false } });
    const blocks = [1000, 70_000, 3 * MIB, 5 * MIB + 3].map((bytes) => device.malloc(bytes));
    expect(device.memoryStats().systemAllocations).toBe(2); // one 4 MiB and one 40 MiB segment
    for (const [index, block] of blocks.entries()) block.write(patternBytes(block.length, index + 1));
    for (const [index, block] of blocks.entries()) {
      expectSameBytes(block.read(), patternBytes(block.length, index + 1));
    }
    const [small, next] = blocks as [(typeof blocks)[0], (typeof blocks)[0]];
    const pointer = (block: typeof small) =>
      (device.native.handle(block) as { devicePointer: bigint }).devicePointer;
    expect(pointer(next) - pointer(small)).toBe(1024n);
    for (const block of blocks) block.free();
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 44 * MIB });
    device.clearCache();
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0 });
  });

  function roundTrip(device: Device): void {
    for (const bytes of [300, 16 * 1024, 5 * MIB + 3]) {
      const pattern = patternBytes(bytes, bytes);
      const first = device.malloc(bytes);
      first.write(pattern);
      first.free();
      const hits = device.counters().cacheHits;
      const reused = device.malloc(bytes);
      expect(device.counters().cacheHits).toBe(hits + 1);
      expectSameBytes(reused.read(), pattern);
      // A partial write lands where it was asked, around it the bytes stay.
      reused.write(Uint8Array.of(1, 2, 3), 7);
      const after = reused.read();
      expect([...after.subarray(7, 10)]).toEqual([1, 2, 3]);
      expectSameBytes(after.subarray(0, 7), pattern.subarray(0, 7));
      expectSameBytes(after.subarray(10), pattern.subarray(10));
      reused.free();
    }
  }

  it("nativeHandle() gives the buffer's device pointer, distinct per live buffer", () => {
    const backend = cuda();
    const first = backend.newBuffer(MIB);
    const second = backend.newBuffer(MIB);
    try {
      const handle = first.nativeHandle();
      expect(handle.platform).toBe("cuda");
      expect(handle.device).toBe(0);
      expect(typeof handle.devicePointer).toBe("bigint");
      expect(handle.devicePointer).toBeGreaterThan(0n);
      const other = second.nativeHandle().devicePointer;
      // Two live buffers never overlap.
      const [low, high] =
        handle.devicePointer < other ? [handle.devicePointer, other] : [other, handle.devicePointer];
      expect(high - low).toBeGreaterThanOrEqual(BigInt(MIB));
    } finally {
      first.release();
      second.release();
    }
  });

  it("out of memory from the driver: OutOfMemoryError after the cache-clearing retry", () => {
    const backend = cuda();
    // Fixed segments: the cached GiB is a segment of its own, which the retry gives back (an expandable
    // segment's is the start of the block the request takes: address-space.test.ts).
    using device = Device.open({ backend, segments: { expandable: false } });
    // A cached GiB, so the retry has something to clear.
    device.malloc(GIB).free();
    expect(device.memoryStats().cache).toBe(GIB);
    // Most of the GPU taken outside the device: the driver refuses what the device's limit still allows.
    expectDriverOutOfMemory(backend, device, () => {
      const before = device.counters();
      return (error) => {
        expect(error.cause).toMatchObject({ name: "OutOfMemoryError", code: "ERR_NUVEC_ALLOCATION_FAILED" });
        const after = device.counters();
        expect(after.allocationRetries).toBe(before.allocationRetries + 1);
        expect(device.memoryStats().cache).toBe(0); // cleared for the retry
        expect(device.memoryStats().active).toBe(0);
        expect(after.systemAllocations).toBe(before.systemAllocations);
      };
    });
  });

  it("the hard memory limit refuses before the driver is asked", () => {
    const backend = cuda();
    using device = Device.open({ backend, memoryLimit: GIB });
    const made = backend.counters().buffersMade;
    const { free } = backend.memoryInfo();
    const error = thrown(() => device.malloc(2 * GIB));
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect(backend.counters().buffersMade).toBe(made);
    expect(backend.memoryInfo().free).toBe(free);
  });

  it("close() gives every device allocation back: the driver's free memory returns to where it was", () => {
    const backend = cuda();
    const path = join(directory, "weights.bin");
    writeFileSync(path, patternBytes(3 * MIB + 5, 2));
    // A first round, so that whatever the driver keeps for itself after a first use of each size (a pool
    // for small allocations) is in the baseline.
    const warmUp = Device.open({ backend });
    for (const bytes of [256, 512, 70_000]) warmUp.malloc(bytes);
    warmUp.close();
    const start = backend.counters();
    const { free } = backend.memoryInfo();
    const device = Device.open({ backend });
    const live = [256, 70_000, 64 * MIB, 300 * MIB].map((bytes) => device.malloc(bytes));
    for (const bytes of [512, 2 * MIB, 128 * MIB]) device.malloc(bytes).free(); // cached
    const weights = device.mapFile(path);
    device.setWiredLimit(GIB);
    expect(backend.memoryInfo().free).toBeLessThan(free - 400 * MIB);
    expect(live.length).toBe(4);
    expect(weights.length).toBe(3 * MIB + 5);
    device.close();
    const end = backend.counters();
    expect(end.bufferBytes).toBe(start.bufferBytes);
    expect(end.buffersReleased - start.buffersReleased).toBe(end.buffersMade - start.buffersMade);
    expect(end.mappedBytes).toBe(start.mappedBytes);
    expect(end.wiredBytes).toBe(start.wiredBytes);
    expect(backend.memoryInfo().free).toBe(free);
  });

  it("a wired mapping is registered: the GPU copies the file through its device pointer; unwired, it has none", () => {
    const backend = cuda();
    const content = patternBytes(5 * MIB + 123, 7);
    const path = join(directory, "checkpoint.bin");
    writeFileSync(path, content);
    const mapping = backend.mapFile(path);
    const buffer = backend.newBuffer(content.length);
    const set = backend.newResidencySet();
    if (set === undefined) throw new Error("the CUDA backend has residency sets");
    try {
      expect(mapping.nativeHandle().devicePointer).toBeUndefined();
      expect(thrown(() => backend.copyFromMapping(buffer, mapping))).toBeInstanceOf(ArgumentError);
      const wired = backend.counters().wiredBytes;
      set.add(mapping);
      set.commit();
      set.requestResidency();
      expect(set.wiringFailures).toBe(0);
      expect(backend.counters().wiredBytes - wired).toBe(mapping.allocatedSize);
      const handle = mapping.nativeHandle();
      expect(handle.platform).toBe("cuda");
      expect(typeof handle.devicePointer).toBe("bigint");
      backend.copyFromMapping(buffer, mapping);
      expectSameBytes(buffer.read(), content);
      // A copy from the registered pages through write() (cuMemcpyHtoD from pinned memory) too.
      buffer.write(new Uint8Array(content.length));
      buffer.write(new Uint8Array(mapping.contents()));
      expectSameBytes(buffer.read(), content);
      set.endResidency();
      expect(backend.counters().wiredBytes).toBe(wired);
      expect(mapping.nativeHandle().devicePointer).toBeUndefined();
      // Unregistered, the mapping still reads from the CPU and copies at pageable speed.
      expectSameBytes(new Uint8Array(mapping.contents()), content);
    } finally {
      set.release();
      buffer.release();
      mapping.release();
    }
  });

  it("through the Device: setWiredLimit wires device buffers (counted) and mapped files (registered)", () => {
    const backend = cuda();
    const path = join(directory, "wired.bin");
    writeFileSync(path, patternBytes(2 * MIB, 3));
    // Fixed segments: the expandable segment's device memory is not wired (address-space.test.ts).
    using device = Device.open({ backend, segments: { expandable: false } });
    const weights = device.mapFile(path);
    const buffer = device.malloc(4 * MIB);
    device.setWiredLimit(GIB);
    const stats = device.memoryStats();
    // Under the segments policy (the CUDA default) residency wires what the driver holds: the segment the
    // block is in (a 4 MiB request shares a 40 MiB segment), all of it reserved (active + cache).
    expect(device.info().policy).toBe("segments");
    expect(buffer.allocatedLength).toBe(4 * MIB);
    expect(stats.active + stats.cache).toBe(40 * MIB);
    expect(stats.wired).toBe(weights.allocatedLength + stats.active + stats.cache);
    expect(stats.wiredMapped).toBe(weights.allocatedLength);
    expect(backend.counters().wiredBytes).toBe(stats.wired);
    // The mapping is registered with the driver: the backend's handle of it has a device pointer.
    expect(weights.length).toBe(2 * MIB);
    device.setWiredLimit(0);
    expect(device.memoryStats().wired).toBe(0);
    expect(backend.counters().wiredBytes).toBe(0);
  });

  it("a registered mapping's view moved away with transfer() keeps the mapping out of reuse until the view is collected", async () => {
    // Node 20 has ArrayBuffer.prototype.transfer and gc() only behind flags; a context made after setting them
    // has both (the GPU machine runs the bundle with plain `node --test`). The moved view is an ArrayBuffer of
    // that context, over the same memory.
    setFlagsFromString("--harmony-rab-gsab-transfer");
    setFlagsFromString("--expose-gc");
    const { transfer, gc } = runInNewContext("({ transfer: ArrayBuffer.prototype.transfer, gc })") as {
      transfer: (this: ArrayBuffer) => ArrayBuffer;
      gc: () => void;
    };
    const backend = cuda();
    const content = patternBytes(3 * MIB + 5, 11);
    const path = join(directory, "moved.bin");
    writeFileSync(path, content);
    // The two counters the CUDA addon reports that NativeBackend declares optional: NaN if absent, so that
    // every comparison below fails.
    const figures = () => {
      const counters = backend.counters();
      return {
        quarantined: counters.quarantinedAllocations ?? Number.NaN,
        unmapped: counters.mappingsUnmappedByPlatform ?? Number.NaN,
        mappedBytes: counters.mappedBytes,
        bufferBytes: counters.bufferBytes,
        wiredBytes: counters.wiredBytes,
      };
    };
    // Views dropped by earlier tests may still hold their allocations (a view collected before its finalizer
    // ran cannot be told from a moved one): let them go first, so that this test's figures are its own.
    const settle = async () => {
      for (let round = 0; round < 8 && figures().quarantined !== 0; round += 1) {
        gc();
        await nextImmediate();
      }
    };
    await settle();
    const start = figures();
    expect(start.quarantined).toBe(0);
    const report = (() => {
      const mapping = backend.mapFile(path);
      const set = backend.newResidencySet();
      if (set === undefined) throw new Error("the CUDA backend has residency sets");
      set.add(mapping);
      set.commit();
      set.requestResidency();
      const registered = typeof mapping.nativeHandle().devicePointer === "bigint";
      const moved = new Uint8Array(transfer.call(mapping.contents()));
      // Unwired (unregistered from the driver) and released: the binding cannot detach the moved view, so the
      // mapping stays mapped, counted as quarantined, until the view is collected.
      set.release();
      mapping.release();
      const released = figures();
      // Another file mapped and a device buffer written meanwhile must not show through the moved view.
      const otherPath = join(directory, "other.bin");
      writeFileSync(otherPath, new Uint8Array(content.length).fill(0xa5));
      const other = backend.mapFile(otherPath);
      const buffer = backend.newBuffer(content.length);
      buffer.write(new Uint8Array(content.length).fill(0x5a));
      const intact = moved.length === content.length && moved.every((byte, index) => byte === content[index]);
      other.release();
      buffer.release();
      return {
        registered,
        quarantined: released.quarantined - start.quarantined,
        unmapped: released.unmapped - start.unmapped,
        wiredBytes: released.wiredBytes - start.wiredBytes,
        intact,
      };
    })();
    expect(report).toEqual({ registered: true, quarantined: 1, unmapped: 0, wiredBytes: 0, intact: true });
    // The view is out of reach now: once collected, the platform unmaps both files.
    await settle();
    const end = figures();
    expect(end.quarantined).toBe(0);
    expect(end.unmapped - start.unmapped).toBe(2);
    expect(end.mappedBytes).toBe(start.mappedBytes);
    expect(end.bufferBytes).toBe(start.bufferBytes);
  });
});
