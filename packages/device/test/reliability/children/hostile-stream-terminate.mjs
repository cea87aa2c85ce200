// Run by hostile-stream-host.test.ts: workers, each with a Device on the host backend whose two streams have
// kernels (sleeps, fills), writes, copies and reads queued and running over 4 MiB buffers, some freed under
// the work, terminated with worker.terminate() at once or 0-40 ms later. The process must live, give back
// what the workers held (the backend's counters, resident memory, file descriptors, threads) and keep the
// main thread's Device working. Prints one JSON line.
import { readdirSync, readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const library = process.argv[2];
const rounds = Number(process.argv[3] ?? 20);

/** A field of /proc/self/status as a number (kB for sizes). */
function status(field) {
  const line = readFileSync("/proc/self/status", "utf8").match(new RegExp(`^${field}:\\s+(\\d+)`, "m"));
  return Number(line?.[1] ?? 0);
}
const process_ = () => ({
  rssKiB: status("VmRSS"),
  threads: status("Threads"),
  fds: readdirSync("/proc/self/fd").length,
  maps: readFileSync("/proc/self/maps", "utf8").split("\n").length - 1,
});

const device = Device.open({ safetyNet: false });
const module = device.loadModule({ host: library });
const fill = module.kernel("fill");
const stream = device.newStream();
const shape = { grid: [1], block: [64] };

/** One fill and read on the main thread's Device: the floats read back. */
async function works(value) {
  const x = device.malloc(MIB);
  stream.launch(fill, shape, [x, { f32: value }, { u32: 64 }]);
  const bytes = await stream.read(x, 0, 8);
  x.free();
  device.clearCache();
  return [...new Float32Array(bytes.buffer, bytes.byteOffset, 2)];
}

const code = `
  const { Device } = await import("@nuvec/device");
  const { parentPort, workerData } = await import("node:worker_threads");
  const device = Device.open({ safetyNet: false });
  const module = device.loadModule({ host: workerData.library });
  const [sleep, fill] = [module.kernel("sleep"), module.kernel("fill")];
  const streams = [device.newStream(), device.newStream()];
  const buffers = [0, 1, 2, 3].map(() => device.malloc(4 * 1024 * 1024));
  for (const buffer of buffers) buffer.bytes().fill(1); // resident: a leak would show in VmRSS
  for (let round = 0; round < 20; round += 1) {
    for (const [index, stream] of streams.entries()) {
      const x = buffers[(round + index) % 4];
      stream.launch(sleep, { grid: [1], block: [1] }, [{ u32: 5 }]);
      stream.launch(fill, { grid: [1], block: [64] }, [x, { f32: round }, { u32: 1024 * 1024 }]);
      stream.write(x, new Uint8Array(4096).fill(round));
      stream.copy(buffers[(round + index + 1) % 4], x, { length: 1024 * 1024 });
      stream.read(x, 0, 64).then(() => {}, () => {});
    }
  }
  buffers[0].free();
  buffers[1].free();
  const done = streams[0].done().then(() => {}, () => {});
  parentPort.postMessage("queued");
  setInterval(() => device.memoryStats(), 1);`;

/** Starts a worker, waits for its work to be queued, terminates it `delay` ms later. */
async function terminateOne(delay) {
  const worker = new Worker(code, { eval: true, workerData: { library } });
  await new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
  await worker.terminate();
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 250)); // the backend's 100 ms timer
// One worker first: what the first worker makes once for the process (V8's and libc's arenas, libuv's
// descriptors) is not counted as a leak of the others.
await terminateOne(10);
await settle();
const beforeWork = await works(1);
const before = { process: process_(), backend: device.counters().backend };
let terminated = 0;
const delays = [];
for (let round = 0; round < rounds; round += 1) {
  const delay = round % 5 === 0 ? 0 : (round * 7) % 41;
  delays.push(delay);
  await terminateOne(delay);
  terminated += 1;
}
await settle();
// Threads join and descriptors close a little after a worker's exit event: on a loaded machine later than the
// settling time, so the count is read again until both are back (or 10 s passed, and the test shows what stayed).
let after = { process: process_(), backend: device.counters().backend };
for (
  let retry = 0;
  retry < 100 &&
  (after.process.threads !== before.process.threads || after.process.fds !== before.process.fds);
  retry += 1
) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  after = { process: process_(), backend: device.counters().backend };
}
const afterWork = await works(7);
const live = (counters) => counters.buffersMade - counters.buffersReleased;
stream.release();
module.release();
device.close();
const closed = device.counters().backend;
console.log(
  JSON.stringify({
    terminated,
    beforeWork,
    afterWork,
    liveBuffers: { before: live(before.backend), after: live(after.backend), closed: live(closed) },
    bufferBytes: {
      before: before.backend.bufferBytes,
      after: after.backend.bufferBytes,
      closed: closed.bufferBytes,
    },
    quarantined: after.backend.quarantinedAllocations,
    abandoned: after.backend.abandonedAllocations,
    // The backend's counters are this thread's: a worker's buffers are its own.
    buffersMadeHere: after.backend.buffersMade - before.backend.buffersMade,
    fds: { before: before.process.fds, after: after.process.fds },
    maps: { before: before.process.maps, after: after.process.maps },
    threads: { before: before.process.threads, after: after.process.threads },
    rssGrowthKiB: after.process.rssKiB - before.process.rssKiB,
    delays,
  }),
);
