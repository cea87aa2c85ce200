// Run in a worker thread by worker.test.ts: a Device on this thread's own host backend, used for real, then
// left open (close = false) so that only the addon's cleanup hooks can give its memory back.
import { parentPort, workerData } from "node:worker_threads";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const device = Device.open();
device.setWiredLimit(4 * MIB);
const buffers = [];
let ok = true;
for (let index = 0; index < 16; index += 1) {
  const buffer = device.malloc(MIB + index);
  const bytes = buffer.bytes();
  bytes.fill(index);
  buffers.push(buffer);
}
for (const [index, buffer] of buffers.entries()) if (buffer.bytes()[MIB - 1] !== index) ok = false;
for (const buffer of buffers.slice(0, 8)) buffer.free();
const stats = device.memoryStats();
const counters = device.counters().backend;
if (workerData.close) device.close();
parentPort.postMessage({ ok, stats, counters });
