// Address spaces on a GPU: device address space reserved with nothing behind it, memory mapped into it a
// granule at a time and unmapped again, and the segments policy's expandable large pool that grows over it,
// as a runtime sees it through the Device. Needs an NVIDIA GPU (gpu/run.sh).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Device } from "@nuvec/device";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { patternBytes } from "../../native-core/test/support.js";
import type { CudaBufferRange } from "../src/index.js";
import { cuda, cudaBackend, expectDriverOutOfMemory, expectSameBytes } from "./support.js";

const MIB = 1024 ** 2;

const GIB = 1024 ** 3;

describe.runIf(cudaBackend !== undefined && cudaBackend.mapGranularity !== undefined)(
  "address spaces on a GPU",
  () => {
    // The backend's facts of address spaces are the contract's (describeAddressSpaceContract); here, what
    // only the driver can say.
    it("a reserved space takes no device memory until mapped; a range's device pointer is the space's plus its offset; unmapped, the driver has the memory back", () => {
      const backend = cuda();
      const granule = backend.mapGranularity!;
      expect(granule % (64 * 1024)).toBe(0);
      const before = backend.memoryInfo().free;
      const space = backend.reserveAddressSpace(8 * granule);
      expect(space.allocatedSize).toBe(0);
      expect(backend.memoryInfo().free).toBe(before);
      backend.mapMemory(space, granule, 2 * granule);
      expect(before - backend.memoryInfo().free).toBeGreaterThanOrEqual(2 * granule);
      const range = backend.newBufferRange(space, granule + 512, granule) as CudaBufferRange;
      const bytes = patternBytes(granule, 7);
      range.write(bytes);
      expectSameBytes(range.read(), bytes);
      const base = (space.nativeHandle() as { devicePointer: bigint }).devicePointer;
      expect((range.nativeHandle() as { devicePointer: bigint }).devicePointer).toBe(
        base + BigInt(granule + 512),
      );
      range.release();
      backend.unmapMemory(space, granule, 2 * granule);
      expect(backend.memoryInfo().free).toBe(before);
      space.release();
    });

    it("the Device's default policy grows one expandable segment: reserved is whole mappings, bytes survive reuse, clearCache gives the memory back", () => {
      const backend = cuda();
      const granule = backend.mapGranularity!;
      const before = backend.memoryInfo().free;
      const device = Device.open({ backend });
      const sizes = [3 * MIB, 40 * MIB, 5 * MIB + 512, 100 * MIB, 64 * MIB];
      const buffers = sizes.map((size, index) => {
        const buffer = device.malloc(size);
        buffer.write(patternBytes(size, index + 1));
        return buffer;
      });
      const stats = device.memoryStats();
      expect(stats.reserved % granule).toBe(0);
      expect(stats.reserved).toBeGreaterThanOrEqual(stats.active);
      for (const [index, buffer] of buffers.entries()) {
        expectSameBytes(buffer.read(), patternBytes(sizes[index]!, index + 1));
      }
      for (const buffer of buffers) buffer.free();
      // The same requests again find their memory mapped: no system allocation, nothing more reserved.
      const again = sizes.map((size) => device.malloc(size));
      expect(device.memoryStats()).toMatchObject({
        reserved: stats.reserved,
        systemAllocations: stats.systemAllocations,
      });
      for (const buffer of again) buffer.free();
      device.clearCache();
      expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
      device.close();
      expect(backend.memoryInfo().free).toBe(before);
    });

    it("out of memory from the driver: the typed error, the space's books as they were, and the request succeeds once memory is back", () => {
      const backend = cuda();
      using device = Device.open({ backend });
      const kept = device.malloc(64 * MIB);
      device.malloc(GIB).free();
      expectDriverOutOfMemory(backend, device, () => {
        const stats = device.memoryStats();
        return () => {
          expect(device.counters().allocationRetries).toBe(1);
          expect(device.memoryStats()).toMatchObject({
            active: stats.active,
            systemAllocations: stats.systemAllocations,
          });
          expect(device.memoryStats().reserved).toBeLessThanOrEqual(stats.reserved);
        };
      });
      kept.free();
    });

    it("wiring under an expandable segment: mapped files are registered; device memory in the space is resident by nature and not counted", () => {
      const backend = cuda();
      const directory = mkdtempSync(join(tmpdir(), "nuvec-space-"));
      try {
        const path = join(directory, "wired.bin");
        writeFileSync(path, patternBytes(2 * MIB, 3));
        using device = Device.open({ backend });
        const weights = device.mapFile(path);
        const buffer = device.malloc(4 * MIB);
        device.setWiredLimit(GIB);
        const stats = device.memoryStats();
        expect(stats.wired).toBe(weights.allocatedLength);
        expect(stats.wiredMapped).toBe(weights.allocatedLength);
        expect(backend.counters().wiredBytes).toBe(stats.wired);
        buffer.free();
      } finally {
        rmSync(directory, { recursive: true, force: true });
      }
    });

    it("two Devices on one GPU each grow a segment of their own: figures apart, bytes kept, each close gives back its own", () => {
      const backend = cuda();
      const before = backend.memoryInfo().free;
      const first = Device.open({ backend });
      const second = Device.open({ backend });
      const a = first.malloc(48 * MIB);
      const b = second.malloc(48 * MIB);
      a.write(patternBytes(4096, 1));
      b.write(patternBytes(4096, 2));
      expect(first.memoryStats().active).toBe(48 * MIB);
      expect(second.memoryStats().active).toBe(48 * MIB);
      // A buffer of one Device is refused by the other.
      expect(() => second.free(a)).toThrow();
      a.free();
      first.clearCache();
      expect(first.memoryStats().reserved).toBe(0);
      expectSameBytes(b.read(0, 4096), patternBytes(4096, 2));
      first.close();
      expectSameBytes(b.read(0, 4096), patternBytes(4096, 2));
      second.close();
      expect(backend.memoryInfo().free).toBe(before);
    });

    it("stream work and copies on an address space reach only mapped memory: an unmapped span is an ArgumentError, nothing runs there, and the context stays usable", async () => {
      const backend = cuda();
      const granule = backend.mapGranularity!;
      const space = backend.reserveAddressSpace(4 * granule);
      backend.mapMemory(space, granule, granule);
      const stream = backend.newStream!();
      const module = backend.loadModule!({
        cuda: 'extern "C" __global__ void fill(float* x, float v, unsigned n) { unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = v; }',
      });
      const fill = module.kernel("fill", ["buffer", "f32", "u32"]);
      const shape = { grid: [1, 1, 1], block: [64, 1, 1], sharedBytes: 0 } as const;
      const other = backend.newBuffer(4096);
      // A block across the end of the mapping, and one wholly in unmapped memory.
      const across = backend.newBufferRange(space, 2 * granule - 64, 128);
      const unmapped = backend.newBufferRange(space, 3 * granule, 64);
      const refusals: Array<() => unknown> = [
        () => stream.write(space, 0, new Uint8Array(4)),
        () => stream.write(across, 0, new Uint8Array(128)),
        () => stream.read(space, 2 * granule, 4),
        () => stream.copy(other, 0, across, 0, 128),
        () => stream.copy(unmapped, 0, other, 0, 64),
        () =>
          stream.launch(fill, shape, [
            { kind: "buffer", buffer: unmapped, offset: 0 },
            { kind: "f32", value: 1 },
            { kind: "u32", value: 16 },
          ]),
        () =>
          stream.launch(fill, shape, [
            { kind: "buffer", buffer: space, offset: 8 },
            { kind: "f32", value: 1 },
            { kind: "u32", value: 16 },
          ]),
        () => unmapped.write(new Uint8Array(4), 0),
        () => across.read(0, 128),
      ];
      for (const refused of refusals) {
        const error = (() => {
          try {
            refused();
          } catch (caught) {
            return caught;
          }
        })();
        expect(error).toBeInstanceOf(ArgumentError);
      }
      // Mapped memory, the space itself at a block's offset and a range at the mapping's end, still works.
      stream.launch(fill, shape, [
        { kind: "buffer", buffer: across, offset: 0 },
        { kind: "f32", value: 2.5 },
        { kind: "u32", value: 16 },
      ]);
      stream.copy(other, 0, space, 2 * granule - 64, 64);
      const bytes = await stream.read(other, 0, 64);
      expect([...new Float32Array(bytes.buffer, bytes.byteOffset, 16)]).toEqual(new Array(16).fill(2.5));
      await stream.done();
      for (const made of [across, unmapped, other, module, stream]) made.release();
      backend.unmapMemory(space, granule, granule);
      space.release();
    });
  },
);
