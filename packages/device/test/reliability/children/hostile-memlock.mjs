// Run by hostile-native.test.ts under a 64 KiB RLIMIT_MEMLOCK without CAP_IPC_LOCK: wiring fails. The
// residency figure (memoryStats().wired) and what the platform really locked (counters().wiredByPlatform,
// VmLck) are reported side by side, and one process warning per Device says so. Prints one JSON line.
import { readFileSync } from "node:fs";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const vmLck = () =>
  Number(/^VmLck:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;
const warnings = [];
process.on("warning", (warning) =>
  warnings.push({ name: warning.name, code: warning.code, message: warning.message }),
);

const first = Device.open();
const buffers = [first.malloc(4 * MIB), first.malloc(4 * MIB), first.malloc(100)];
first.setWiredLimit(64 * MIB);
const stats = first.memoryStats();
const counters = first.counters();
const locked = vmLck();
// More failures on the same Device: no second warning.
first.refreshResidency();
first.setWiredLimit(32 * MIB);
buffers.push(first.malloc(2 * MIB));
// A second Device warns once too.
const second = Device.open({ wiredLimit: 16 * MIB });
second.malloc(2 * MIB);
await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
console.log(
  JSON.stringify({
    wired: stats.wired,
    wiredByPlatform: counters.wiredByPlatform,
    backendWired: counters.backend.wiredBytes,
    wiringFailures: counters.wiringFailures,
    locked,
    warnings,
  }),
);
