// Run by faults.test.ts under a 64 KiB RLIMIT_MEMLOCK (and without CAP_IPC_LOCK): wiring fails. It must be
// counted and reported, the residency figure (memoryStats().wired) next to what the platform locked
// (counters().wiredByPlatform, VmLck), with one process warning per Device, and the device must keep working.
// Prints one JSON line.
import { readFileSync } from "node:fs";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const vmLck = () =>
  Number(/^VmLck:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;
const warnings = [];
process.on("warning", (warning) =>
  warnings.push({ name: warning.name, code: warning.code, message: warning.message }),
);

const vmLckBefore = vmLck();
const device = Device.open();
const buffers = [device.malloc(4 * MIB), device.malloc(4 * MIB), device.malloc(100)];
device.setWiredLimit(64 * MIB);
const vmLckWired = vmLck();
const stats = device.memoryStats();
const counters = device.counters();
const lastWiringError = device.native.backend.lastWiringError;

// Keeps working: writes read back, frees, reuse from the cache, refresh (fails again, never throws).
let worked = true;
for (let round = 0; round < 50; round += 1) {
  const buffer = device.malloc((round + 1) * 4096);
  const bytes = buffer.bytes();
  bytes.fill(round & 0xff);
  if (bytes[bytes.length - 1] !== (round & 0xff)) worked = false;
  buffer.free();
  if (bytes.byteLength !== 0) worked = false;
}
// More failures on the same Device: no second warning.
device.refreshResidency();
device.setWiredLimit(32 * MIB);
buffers.push(device.malloc(2 * MIB));
// A second Device warns once too.
const second = Device.open({ wiredLimit: 16 * MIB });
second.malloc(2 * MIB);
await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
second.close();
for (const buffer of buffers) buffer.free();
device.close();
const after = device.native.backend.counters();
console.log(
  JSON.stringify({
    wiringFailures: counters.wiringFailures,
    backendWiringFailures: counters.backend.wiringFailures,
    lastWiringError,
    wired: stats.wired,
    wiredByPlatform: counters.wiredByPlatform,
    backendWired: counters.backend.wiredBytes,
    vmLckBefore,
    vmLckWired,
    vmLckAfter: vmLck(),
    worked,
    liveAfterClose: after.buffersMade - after.buffersReleased,
    warnings,
  }),
);
