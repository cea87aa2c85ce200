// The example kernel addon (kernel/) on nuvec memory, on the real host backend: a runtime's native kernels
// reading and writing DeviceBuffers and mapped files by their native handles, and frees deferred until the
// kernels' promises settle (what free({ after }) does once a promise settles or rejects is the Device's own
// test: packages/device/test/runtime-interop.test.ts). Then the `kernel` program end to end.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Device } from "@nuvec/device";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { cpuAddress, fillPattern, loadKernelAddon } from "../src/lib/kernel-addon.js";
import { run, scratchFolder } from "./support.js";

const folder = scratchFolder("nuvec-kernel-");

// Only where the host backend and the addon are built: Linux here and in CI (macOS runs Metal, never here).
const onHost = process.platform === "linux";

describe.runIf(onHost)("the example kernel addon on nuvec memory (host backend)", () => {
  const kernels = loadKernelAddon();
  const COUNT = 1 << 20;
  const BYTES = COUNT * 4;

  /** A buffer of COUNT float32 (index % 5), its view, their sum, and its address for the kernels. */
  function filled(device: Device) {
    const buffer = device.malloc(BYTES);
    const data = new Float32Array(buffer.contents(), 0, COUNT);
    const total = fillPattern(data, 5);
    return { buffer, data, total, address: cpuAddress(device.native.handle(buffer)) };
  }

  it("a kernel's writes are visible through contents(): the same memory, no copy", async () => {
    using device = Device.open();
    const { buffer, data, total, address } = filled(device);
    await kernels.scale(address, COUNT, 3);
    for (const index of [0, 1, 4, 777, COUNT - 1]) expect(data[index]).toBe(3 * (index % 5));
    data[10] = 100; // and JavaScript's writes reach the kernel
    expect(await kernels.sum(address, COUNT)).toBe(3 * total - 3 * (10 % 5) + 100);
    buffer.free();
  });

  it("while a kernel runs on a buffer freed with { after }, a malloc of its size class gets other memory and the kernel's result is intact", async () => {
    using device = Device.open();
    const { buffer, total, address } = filled(device);
    const kernel = kernels.scale(address, COUNT, 2).then(() => kernels.sum(address, COUNT));
    buffer.free({ after: kernel });
    expect(device.counters().pendingFrees).toBe(1);
    const other = device.malloc(BYTES);
    expect(other.allocatedLength).toBe(buffer.allocatedLength);
    expect(cpuAddress(device.native.handle(other))).not.toBe(address);
    // Had the memory been reused, this would overwrite the kernel's data before its sum ran.
    new Float32Array(other.contents()).fill(-1);
    expect(await kernel).toBe(2 * total);
  });

  it("a mapped file's handle addresses the file's bytes", async () => {
    const values = new Float32Array(3000);
    for (let index = 0; index < values.length; index += 1) values[index] = (index % 11) - 5;
    const path = join(folder, "floats.bin");
    writeFileSync(path, new Uint8Array(values.buffer));
    using device = Device.open();
    const file = device.mapFile(path);
    const handle = device.native.handle(file);
    expect(handle.length).toBe(values.byteLength);
    const expected = values.reduce((sum, value) => sum + value, 0);
    expect(await kernels.sum(cpuAddress(handle), values.length)).toBe(expected);
    const sumBeforeRelease = kernels.sum(cpuAddress(handle), values.length);
    file.free({ after: sumBeforeRelease });
    expect(await sumBeforeRelease).toBe(expected);
  });

  it("refuses bad arguments with typed errors before any native code runs", () => {
    for (const [call, argument] of [
      [() => kernels.sum(0n, 1), "address"],
      [() => kernels.sum(6n, 1), "address"],
      [() => kernels.sum(2n ** 64n, 1), "address"],
      [() => kernels.sum(4096n, -1), "count"],
      [() => kernels.sum(4096n, 1.5), "count"],
      [() => kernels.sum(4096 as never, 1), "address"],
    ] as const) {
      expect(call).toThrow(ArgumentError);
      expect(call).toThrow(expect.objectContaining({ argument }));
    }
    return expect(kernels.scale(4096n, 1, Number.NaN)).rejects.toMatchObject({ argument: "factor" });
  });
});

describe.runIf(onHost)("the kernel program", () => {
  it("runs the flow end to end and reports the stats while the kernel ran", () => {
    const result = run("kernel", ["--json", "--count", "500000"]);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout);
    expect(report).toMatchObject({
      backend: "host",
      zeroCopy: true,
      viewDetached: true,
      otherMemoryWhileRunning: true,
      resultIntact: true,
      cacheHitSameAddress: true,
      ok: true,
    });
    expect(report.total).toBe(report.expected);
    // The freed buffer (500000 float32) still counted in `active` while its kernel ran, at the length the
    // bounded default gave it: a miss above 256 KiB rounded up to an eighth of a power of two, 2 MiB.
    expect(report.whileRunning).toEqual({ active: 2 * 1024 * 1024, pendingFrees: 1 });
    expect(report.afterSettling.pendingFrees).toBe(0);
  });
});
