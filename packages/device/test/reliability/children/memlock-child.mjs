// Run by faults.test.ts under a lowered RLIMIT_MEMLOCK (and without CAP_IPC_LOCK): wiring must fail, be
// counted and reported, and the device must keep working. Prints one JSON line.
import { readFileSync } from "node:fs";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;

function vmLck() {
  const match = readFileSync("/proc/self/status", "utf8").match(/^VmLck:\s+(\d+) kB/m);
  return match ? Number(match[1]) * 1024 : 0;
}

const vmLckBefore = vmLck();
const device = Device.open();
const buffers = [device.malloc(4 * MIB), device.malloc(4 * MIB), device.malloc(100)];
device.setWiredLimit(64 * MIB);
const vmLckWired = vmLck();
const counters = device.counters();
const wiringFailures = counters.backend.wiringFailures;
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
device.refreshResidency();
for (const buffer of buffers) buffer.free();
device.close();
const after = device.native.backend.counters();
console.log(
  JSON.stringify({
    wiringFailures,
    lastWiringError,
    wiredBytes: counters.backend.wiredBytes,
    vmLckBefore,
    vmLckWired,
    vmLckAfter: vmLck(),
    worked,
    liveAfterClose: after.buffersMade - after.buffersReleased,
  }),
);
