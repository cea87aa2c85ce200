// The Device on the real host backend (Linux): real memory behind buffers, real wiring (mlock) seen in
// the kernel's VmLck, files mapped without a copy. Skips where the host backend is not the default.
import { randomFillSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Device } from "../src/index.js";

const MIB = 1024 ** 2;
const onLinux = process.platform === "linux";
const folder = mkdtempSync(join(tmpdir(), "nuvec-device-host-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function status(field: string): number {
  const match = readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return match ? Number(match[1]) * 1024 : 0;
}

describe.skipIf(!onLinux)("Device on the host backend", () => {
  it("opens the host backend by default, with the kernel's page size", () => {
    using device = Device.open();
    const info = device.info();
    expect(info.platform).toBe("host");
    expect(info.pageSize).toBeGreaterThanOrEqual(4096);
    expect(info.recommendedMaxWorkingSetSize).toBeLessThanOrEqual(info.memorySize);
    expect(device.memoryStats().memoryLimit).toBe(
      Math.min(Math.floor(1.5 * info.recommendedMaxWorkingSetSize), Math.floor(0.95 * info.memorySize)),
    );
  });

  it("has real bytes behind buffers, kept through the cache only for their owner", () => {
    using device = Device.open();
    const first = device.malloc(3 * MIB + 5);
    const bytes = first.bytes();
    bytes.fill(0xab);
    expect(bytes[3 * MIB + 4]).toBe(0xab);
    first.free();
    expect(bytes.length).toBe(0);
    const second = device.malloc(3 * MIB);
    expect(device.counters().cacheHits).toBe(1);
    expect(second.bytes()[0]).toBe(0xab); // the cached buffer's memory, not zeroed (as MLX: reuse is free)
    second.free();
  });

  it("wires for real: VmLck rises by the wired bytes after setWiredLimit and falls after", () => {
    using device = Device.open();
    const before = status("VmLck");
    const buffer = device.malloc(4 * MIB);
    device.setWiredLimit(16 * MIB);
    const stats = device.memoryStats();
    const failures = device.counters().backend.wiringFailures;
    if (failures === 0) {
      expect(stats.wired).toBe(4 * MIB);
      expect(status("VmLck") - before).toBeGreaterThanOrEqual(4 * MIB);
    } else {
      // Not privileged and past RLIMIT_MEMLOCK: counted, reported, never thrown.
      expect(failures).toBeGreaterThan(0);
    }
    device.setWiredLimit(0);
    expect(device.memoryStats().wired).toBe(0);
    expect(status("VmLck")).toBe(before);
    buffer.free();
  });

  it("maps a file read back byte for byte, with no rise in resident anonymous memory", () => {
    const path = join(folder, "weights.bin");
    const data = randomFillSync(Buffer.alloc(32 * MIB + 123));
    writeFileSync(path, data);
    using device = Device.open();
    const anonymousBefore = status("RssAnon");
    using file = device.mapFile(path);
    const view = new Uint8Array(file.contents());
    expect(view.length).toBe(data.length);
    expect(Buffer.compare(Buffer.from(view.buffer, view.byteOffset, view.byteLength), data)).toBe(0);
    const anonymousAfter = status("RssAnon");
    // Reading 32 MiB through the mapping adds file-backed pages, not anonymous ones (a copy would add 32 MiB).
    expect(anonymousAfter - anonymousBefore).toBeLessThan(8 * MIB);
    expect(device.memoryStats().mapped).toBe(
      Math.ceil(data.length / device.info().pageSize) * device.info().pageSize,
    );
    view[0] = (view[0] as number) ^ 0xff; // private copy-on-write: the file is untouched
    expect(readFileSync(path)[0]).toBe(data[0]);
  });

  it("close releases every buffer, mapping and wired byte", () => {
    const lockedBefore = status("VmLck");
    const device = Device.open({ wiredLimit: 8 * MIB });
    const path = join(folder, "small.bin");
    writeFileSync(path, Buffer.alloc(100_000, 1));
    device.mapFile(path);
    for (let index = 0; index < 100; index += 1) device.malloc(1000 * (index + 1));
    device.close();
    const backend = device.native.backend.counters();
    expect(backend.buffersMade).toBe(backend.buffersReleased);
    expect(backend.mappingsMade).toBe(backend.mappingsReleased);
    expect(status("VmLck")).toBe(lockedBefore);
  });
});
