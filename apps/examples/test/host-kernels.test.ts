// The example kernel addon's `nuvec_host_kernels` table (kernel/host_kernels.cc) on the host backend's
// streams: each kernel against the TypeScript reference the decode program checks itself with
// (src/lib/decode-model.ts), bit for bit, and append's refusal past its capacity.

import {
  loadNativeBackend,
  type NativeAllocation,
  type NativeKernelArgument,
  type NativeStream,
} from "@nuvec/metal-native";
import { describe, expect, it } from "vitest";
import { hostKernelLibrary } from "../src/lib/decode-device.js";
import { DECODE_KERNELS } from "../src/lib/decode-kernels.js";
import { add, attention, attentionScale, matvec, relu } from "../src/lib/decode-model.js";

const library = hostKernelLibrary();

/** Deterministic floats in [-2, 2): a linear congruential sequence. */
function values(count: number, seed: number): Float32Array {
  const out = new Float32Array(count);
  let state = seed >>> 0;
  for (let index = 0; index < count; index += 1) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[index] = (state / 2 ** 32) * 4 - 2;
  }
  return out;
}

const bytes = (array: Float32Array) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
const buffer = (allocation: NativeAllocation): NativeKernelArgument => ({
  kind: "buffer",
  buffer: allocation,
  offset: 0,
});
const u32 = (value: number): NativeKernelArgument => ({ kind: "u32", value });
const f32 = (value: number): NativeKernelArgument => ({ kind: "f32", value });
const one = { grid: [1, 1, 1] as const, block: [1, 1, 1] as const, sharedBytes: 0 };

describe.runIf(process.platform === "linux" && library !== undefined)(
  "the example addon's host kernels",
  () => {
    const backend = loadNativeBackend();
    const module = backend.loadModule?.({ host: library as string });

    async function floatsOf(stream: NativeStream, allocation: NativeAllocation): Promise<Float32Array> {
      const read = await stream.read(allocation, 0, allocation.length);
      return new Float32Array(read.buffer, read.byteOffset, read.byteLength / 4);
    }

    it("lists the decode kernels and the contract's, with the decode program's parameters", () => {
      expect([...(module?.kernelNames ?? [])]).toEqual([
        "fill",
        "scale",
        "add",
        "relu",
        "matvec",
        "attention",
        "append",
      ]);
      for (const [name, parameters] of Object.entries(DECODE_KERNELS)) {
        expect([...(module?.kernel(name, parameters).parameters ?? [])]).toEqual([...parameters]);
      }
    });

    it("matvec, add, relu and attention give the reference's bytes exactly", async () => {
      const stream = backend.newStream?.() as NativeStream;
      const [rows, columns, length] = [24, 40, 7];
      const w = values(rows * columns, 1);
      const x = values(columns, 2);
      const [wBuffer, xBuffer, out] = [
        backend.newBuffer(w.byteLength),
        backend.newBuffer(x.byteLength),
        backend.newBuffer(rows * 4),
      ];
      stream.write(wBuffer, 0, bytes(w));
      stream.write(xBuffer, 0, bytes(x));
      stream.launch(module?.kernel("matvec") as never, one, [
        buffer(out),
        buffer(wBuffer),
        buffer(xBuffer),
        u32(rows),
        u32(columns),
      ]);
      const expected = new Float32Array(rows);
      matvec(expected, w, x, rows, columns);
      expect(await floatsOf(stream, out)).toEqual(expected);

      const sum = backend.newBuffer(rows * 4);
      stream.launch(module?.kernel("add") as never, { ...one, block: [rows, 1, 1] }, [
        buffer(sum),
        buffer(out),
        buffer(out),
        u32(rows),
      ]);
      stream.launch(module?.kernel("relu") as never, one, [buffer(sum), u32(rows)]);
      const summed = new Float32Array(rows);
      add(summed, expected, expected, rows);
      relu(summed, rows);
      expect(await floatsOf(stream, sum)).toEqual(summed);
      expect(summed.some((value) => value === 0) && summed.some((value) => value > 0)).toBe(true);

      const width = columns;
      const keys = values(length * width, 3);
      const cached = values(length * width, 4);
      const [q, k, v, attended] = [
        xBuffer,
        backend.newBuffer(keys.byteLength),
        backend.newBuffer(cached.byteLength),
        backend.newBuffer(width * 4),
      ];
      stream.write(k, 0, bytes(keys));
      stream.write(v, 0, bytes(cached));
      const scale = attentionScale(width);
      stream.launch(module?.kernel("attention") as never, one, [
        buffer(attended),
        buffer(q),
        buffer(k),
        buffer(v),
        f32(scale),
        u32(length),
        u32(width),
      ]);
      const reference = new Float32Array(width);
      attention(reference, x, keys, cached, scale, length, width);
      expect(await floatsOf(stream, attended)).toEqual(reference);
      stream.release();
      for (const made of [wBuffer, xBuffer, out, sum, k, v, attended]) made.release();
    });

    it("append writes a cache row; past the capacity it fails the stream with the kernel's message", async () => {
      const stream = backend.newStream?.() as NativeStream;
      const cache = backend.newBuffer(3 * 8 * 4);
      const row = backend.newBuffer(8 * 4);
      const appendKernel = module?.kernel("append") as never;
      stream.write(cache, 0, new Uint8Array(cache.length));
      stream.write(row, 0, bytes(values(8, 5)));
      stream.launch(appendKernel, one, [buffer(cache), buffer(row), u32(2), u32(8), u32(3)]);
      const filled = await floatsOf(stream, cache);
      expect([...filled.subarray(16)]).toEqual([...values(8, 5)]);
      expect([...filled.subarray(0, 16)]).toEqual(new Array(16).fill(0));
      stream.launch(appendKernel, one, [buffer(cache), buffer(row), u32(3), u32(8), u32(3)]);
      await expect(stream.done()).rejects.toMatchObject({
        code: "ERR_NUVEC_SYSTEM",
        syscall: "kernel append",
        errnoNumber: 2,
        message: "the host kernel append failed (2): append at row 3 of a cache of 3 rows",
      });
      stream.release();
      cache.release();
      row.release();
    });
  },
);
