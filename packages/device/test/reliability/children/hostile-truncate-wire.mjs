// Run by hostile-native.test.ts: maps a 1 MiB file, lets "someone else" truncate it to 4 KiB, then wires it
// through the Device (setWiredLimit), and again later. Must not crash (SIGBUS); prints one JSON line.
import { readFileSync, truncateSync } from "node:fs";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const path = process.argv[2];
const vmLck = () =>
  Number(/^VmLck:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;

const device = Device.open();
const file = device.mapFile(path);
truncateSync(path, 4096);
device.setWiredLimit(2 * MIB);
const first = { counters: device.counters().backend, stats: device.memoryStats(), locked: vmLck() };
// Re-wiring later: a lower then higher limit, and a refresh.
device.setWiredLimit(0);
device.setWiredLimit(2 * MIB);
device.refreshResidency();
const again = { counters: device.counters().backend, locked: vmLck() };
const firstByte = new Uint8Array(file.contents())[0];
file.free();
device.close();
console.log(
  JSON.stringify({ first, again, firstByte, after: device.counters().backend, lockedAfter: vmLck() }),
);
