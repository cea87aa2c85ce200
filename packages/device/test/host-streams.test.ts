// The Device's streams on the real host backend (Linux): worker-thread streams over real memory, kernels from
// a host module (metal-native's standard stream kernels, built here with the C compiler). What the mock cannot
// show: work that really runs concurrently, so a missing wait would let one stream's late write land over
// another's. Skips where the host backend is not the default.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { Device } from "../src/index.js";
import { describeOnHost } from "./reliability/support.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const scratch = scratchFolder("nuvec-device-host-streams-");
const KIB = 1024;

/** The standard stream kernels (fill, scale, add, sleep, fail) as a shared library, built once. */
function kernelsLibrary(): string {
  const output = join(scratch.folder, "stream_kernels.so");
  const source = join(here, "../../metal-native/test/native/stream_kernels.c");
  const build = spawnSync(process.env.CC ?? "cc", ["-shared", "-fPIC", "-O2", "-o", output, source], {
    encoding: "utf8",
  });
  if (build.status !== 0) throw new Error(`cc failed: ${build.stderr}`);
  return output;
}

function floats(bytes: Uint8Array): number[] {
  return [...new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)];
}

describeOnHost("Device streams (host backend)", () => {
  const library = process.platform === "linux" ? kernelsLibrary() : "";
  const shape = { grid: [1], block: [64] };

  it("runs fill and scale in order and reads the result", async () => {
    using device = Device.open({ safetyNet: false });
    using stream = device.newStream();
    using module = device.loadModule({ host: library });
    const fill = module.kernel("fill");
    const scale = module.kernel("scale");
    expect(fill.parameters).toEqual(["buffer", "f32", "u32"]);
    const x = device.malloc(4 * 64);
    stream.launch(fill, shape, [x, { f32: 1.5 }, { u32: 64 }]);
    stream.launch(scale, shape, [x, { f32: 4 }, { u32: 64 }]);
    expect(floats(await stream.read(x, 0, 16))).toEqual([6, 6, 6, 6]);
    x.free();
  });

  it("a reuse on another stream waits for the old stream's late work (it really runs concurrently)", async () => {
    using device = Device.open({ safetyNet: false, policy: "mlx" });
    using module = device.loadModule({ host: library });
    const [sleep, fill] = [module.kernel("sleep"), module.kernel("fill")];
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.launch(sleep, { grid: [1], block: [1] }, [{ u32: 80 }]);
    a.launch(fill, shape, [x, { f32: 1 }, { u32: 64 }]); // lands about 80 ms from now
    x.free();
    const y = device.malloc(4 * KIB);
    expect(device.counters().cacheHits).toBe(1); // the same memory, handed out at once
    b.launch(fill, shape, [y, { f32: 2 }, { u32: 64 }]);
    const seen = await b.read(y, 0, 16);
    // Without the wait b's fill would run first and a's late fill of the old owner would overwrite it.
    expect(floats(seen)).toEqual([2, 2, 2, 2]);
    await a.done();
    expect(floats(y.read(0, 16))).toEqual([2, 2, 2, 2]);
    device.close();
  });

  it("a host use of reused memory waits for the old stream's late work first", () => {
    using device = Device.open({ safetyNet: false, policy: "mlx" });
    using module = device.loadModule({ host: library });
    const a = device.newStream();
    const x = device.malloc(4 * KIB);
    a.launch(module.kernel("sleep"), { grid: [1], block: [1] }, [{ u32: 60 }]);
    a.launch(module.kernel("fill"), shape, [x, { f32: 1 }, { u32: 64 }]);
    x.free();
    const y = device.malloc(4 * KIB);
    y.write(new Float32Array(4).fill(9));
    // The old owner's fill ran before the write (else it would land over it now).
    a.synchronize();
    expect(floats(y.read(0, 16))).toEqual([9, 9, 9, 9]);
  });

  it("a buffer used on two streams is held until both ran, then goes back on malloc", async () => {
    using device = Device.open({ safetyNet: false, policy: "mlx" });
    using module = device.loadModule({ host: library });
    const [sleep, fill] = [module.kernel("sleep"), module.kernel("fill")];
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.launch(sleep, { grid: [1], block: [1] }, [{ u32: 40 }]);
    a.launch(fill, shape, [x, { f32: 1 }, { u32: 64 }]);
    b.launch(fill, shape, [{ buffer: x, offset: 256 }, { f32: 2 }, { u32: 64 }]);
    x.free();
    expect(device.counters().streamPending).toEqual({ buffers: 1, bytes: 4 * KIB });
    expect(device.memoryStats().active).toBe(4 * KIB);
    await Promise.all([a.done(), b.done()]);
    device.malloc(16).free();
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
    expect(device.memoryStats().cache).toBe(4 * KIB + 256);
  });

  it("under the segments policy a block is reached through its segment, at its offset", async () => {
    using device = Device.open({ safetyNet: false, policy: "segments" });
    using module = device.loadModule({ host: library });
    const stream = device.newStream();
    const [first, second] = [device.malloc(4 * 64), device.malloc(4 * 64)];
    stream.launch(module.kernel("fill"), shape, [first, { f32: 3 }, { u32: 64 }]);
    stream.write(second, new Float32Array(64).fill(5));
    stream.launch(module.kernel("add"), shape, [{ buffer: second, offset: 128 }, first, second, { u32: 8 }]);
    await stream.done();
    // Host reads go through each block's own range: the same memory the stream wrote through the segment.
    expect(floats(first.read(0, 16))).toEqual([3, 3, 3, 3]);
    expect(floats(second.read(128, 16))).toEqual([8, 8, 8, 8]);
    expect(floats(second.read(0, 16))).toEqual([5, 5, 5, 5]);
    expect(floats(await stream.read(second, 124, 8))).toEqual([5, 8]);
  });

  it("close with work queued (a sleeping kernel) settles every promise and gives everything back", async () => {
    const device = Device.open({ safetyNet: false });
    const module = device.loadModule({ host: library });
    const stream = device.newStream();
    const x = device.malloc(4 * KIB);
    stream.launch(module.kernel("sleep"), { grid: [1], block: [1] }, [{ u32: 30 }]);
    const read = stream.read(x);
    x.free();
    device.close();
    const [outcome] = await Promise.allSettled([read]);
    if (outcome!.status === "rejected") expect(outcome!.reason).toMatchObject({ name: "StateError" });
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
  });
});
