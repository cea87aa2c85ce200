// Run by worker-unmap.test.ts with --harmony-rab-gsab-transfer and --expose-gc: a mapped file's view moved
// with transfer() into a worker, the file freed, the worker ended. With no call into the Device or the backend
// afterwards, the mapping must leave this process's address space within a few sweeps, and the Device must not
// keep the process alive (it is never closed here). Prints one JSON line.
import { readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { Device } from "@nuvec/device";

const path = process.argv[2];
/** The lines of /proc/self/maps that map `path`: read from the file system, not through the backend. */
const mappings = () =>
  readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .filter((line) => line.endsWith(path)).length;

const device = Device.open();
const file = device.mapFile(path);
const moved = file.contents().transfer();
const worker = new Worker(
  // The worker keeps the view, and runs (its port listened to) until it is terminated.
  "const { parentPort } = require('node:worker_threads'); parentPort.on('message', (view) => { globalThis.kept = view; parentPort.postMessage(view.byteLength); });",
  { eval: true },
);
worker.postMessage(moved, [moved]);
const seen = await new Promise((resolve) => worker.once("message", resolve));
file.free();
const report = {
  seen,
  mappedAfterFree: mappings(),
  quarantinedAfterFree: device.memoryStats().quarantined,
  allocatedLength: file.allocatedLength,
};
await worker.terminate();
// Only the collector and the clock from here: no call into the Device or its backend.
let waited = 0;
while (mappings() > 0 && waited < 2000) {
  globalThis.gc();
  await sleep(20);
  waited += 20;
}
report.mappedAfterWorker = mappings();
report.sweptWithin2s = waited < 2000;
report.quarantinedAtEnd = device.memoryStats().quarantined;
console.log(JSON.stringify(report));
