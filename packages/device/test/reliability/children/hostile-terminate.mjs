// Run by hostile-native.test.ts: 30 workers, each looping over Device calls that make views or throw
// (malloc 1 MiB, contents(), free(); mapFile of a missing path; a mapped file's contents()), terminated
// after 30 ms. worker.terminate() used to abort the process (a C++ exception out of the addon): now it
// must not. Prints one JSON line.
import { Worker } from "node:worker_threads";

const path = process.argv[2];
const code = `
  const { Device } = await import("@nuvec/device");
  const { parentPort } = await import("node:worker_threads");
  const device = Device.open({ wiredLimit: 4 * 1024 * 1024 });
  const mapped = device.mapFile(${JSON.stringify(path)});
  parentPort.postMessage("ready");
  for (;;) {
    const buffer = device.malloc(1024 * 1024);
    buffer.contents();
    buffer.free();
    try { device.mapFile("/nonexistent/nuvec-missing-file"); } catch {}
    mapped.contents();
    device.memoryStats();
    device.counters();
  }`;
let terminated = 0;
for (let round = 0; round < 30; round += 1) {
  const worker = new Worker(code, { eval: true });
  await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 30));
  await worker.terminate();
  terminated += 1;
}
console.log(JSON.stringify({ terminated }));
