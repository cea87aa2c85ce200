// A trace streamed to a file that fills up (the test runs this under a small RLIMIT_FSIZE): the failed write
// is kept and thrown by stopTrace() as a SystemCallError, with the counters as they were and the device
// still able to trace. Prints one JSON line.

import { Device } from "@nuvec/device";
import { MockBackend } from "@nuvec/metal-native/mock";

const device = Device.open({ backend: new MockBackend({ recommendedMaxWorkingSetSize: 1 << 30 }) });
let rejections = 0;
process.on("unhandledRejection", () => {
  rejections += 1;
});
device.startTrace({ file: process.argv[2] });
for (let index = 0; index < 300_000; index++) {
  device.malloc(4096 + (index % 7) * 1024, { label: `layer ${index % 3}` }).free();
  if (index % 50_000 === 0) await new Promise((resolve) => setImmediate(resolve));
}
const before = JSON.stringify(device.counters());
let error;
try {
  device.stopTrace();
} catch (caught) {
  error = caught;
}
const unchanged = JSON.stringify(device.counters()) === before;
device.startTrace();
device.malloc(8).free();
const after = device.stopTrace().events.length;
await new Promise((resolve) => setTimeout(resolve, 20));
console.log(
  JSON.stringify({
    name: error?.name,
    code: error?.code,
    errno: error?.errno,
    syscall: error?.syscall,
    unchanged,
    after,
    rejections,
  }),
);
