// Run by hostile-stream-host.test.ts with --harmony-rab-gsab-transfer and --expose-gc on the host backend: a
// buffer's view moved away with transfer() (or posted to a worker) while stream work naming the buffer is
// queued behind a 400 ms sleep. The work must land in the old memory only, never in the next owner's, and
// the memory stays quarantined until both the view and the work are gone. Prints one JSON line.
import { setImmediate as nextImmediate } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { Device } from "@nuvec/device";

const KIB = 1024;
const SIZE = 64 * KIB;
const library = process.argv[2];
const report = {};

async function collect() {
  for (let round = 0; round < 4; round += 1) {
    globalThis.gc();
    await nextImmediate();
  }
}

const device = Device.open({ safetyNet: false, policy: "mlx" });
const module = device.loadModule({ host: library });
const [sleep, fill] = [module.kernel("sleep"), module.kernel("fill")];
const stream = device.newStream();
const source = device.malloc(SIZE);
source.bytes().fill(0x33);

/** The figures the probe pins: quarantine, the cache and the backend's buffers. */
function figures() {
  const stats = device.memoryStats();
  const counters = device.counters();
  return {
    active: stats.active,
    cache: stats.cache,
    quarantined: stats.quarantined,
    quarantinedAllocations: counters.backend.quarantinedAllocations,
    buffersMade: counters.backend.buffersMade,
    buffersFreedByPlatform: counters.backend.buffersFreedByPlatform,
    cacheHits: counters.cacheHits,
    streamPending: counters.streamPending.buffers,
  };
}

/** Enqueues, after a 400 ms sleep, one operation of `kind` naming `x`; returns a pending read or undefined. */
function enqueue(kind, x) {
  stream.launch(sleep, { grid: [1], block: [1] }, [{ u32: 400 }]);
  if (kind === "launch") stream.launch(fill, { grid: [1], block: [64] }, [x, { f32: 2 }, { u32: SIZE / 4 }]);
  if (kind === "write") stream.write(x, new Uint8Array(SIZE).fill(0x44));
  if (kind === "copy-into") stream.copy(x, source);
  if (kind === "copy-from") stream.copy(source, x);
  if (kind === "read") return stream.read(x, 0, 16);
  return undefined;
}

// Each kind twice: the moved view kept until the work ran, and the view collected while the work is queued.
for (const kind of ["launch", "write", "copy-into", "copy-from", "read"]) {
  for (const viewFate of ["kept", "collected"]) {
    const before = figures();
    let moved;
    let read;
    (() => {
      const x = device.malloc(SIZE);
      x.bytes().fill(0x11);
      read = enqueue(kind, x);
      moved = new Uint8Array(x.contents().transfer());
      x.free();
    })();
    const afterFree = figures();
    if (viewFate === "collected") {
      moved = undefined;
      await collect();
    }
    const whileQueued = figures();
    // The next owner of that size: never the quarantined memory, so the queued work cannot reach it.
    const next = device.malloc(SIZE);
    next.bytes().fill(0x55);
    const readBytes = read === undefined ? undefined : [...(await read).subarray(0, 4)];
    await stream.done();
    const afterWork = figures();
    const movedHead = moved === undefined ? undefined : [...moved.subarray(0, 4)];
    moved = undefined;
    await collect();
    const end = figures();
    report[`${kind}/${viewFate}`] = {
      afterFree: diff(before, afterFree),
      whileQueued: diff(before, whileQueued),
      afterWork: diff(before, afterWork),
      end: diff(before, end),
      nextUntouched: next.bytes().every((byte) => byte === 0x55),
      movedHead,
      readBytes,
      sourceHead: [...source.bytes().subarray(0, 4)],
    };
    next.free();
    device.clearCache();
    source.bytes().fill(0x33);
  }
}

/** The figures of `after` that differ from `before`, as differences. */
function diff(before, after) {
  const out = {};
  for (const key of Object.keys(after)) if (after[key] !== before[key]) out[key] = after[key] - before[key];
  return out;
}

// A postMessage transfer of the view itself is refused by Node (the backend's memory is not transferable):
// the view stays attached and the queued fill reaches it. The moved view (after transfer()) can be posted: the
// worker holds it until it exits, the memory quarantined until the worker let it go and the work ran.
{
  const worker = new Worker(
    `const { parentPort } = require("node:worker_threads");
     let held;
     parentPort.on("message", (view) => {
       if (view === "drop") { parentPort.postMessage([...held.subarray(0, 4)]); held = undefined; return; }
       held = view; parentPort.postMessage(view.byteLength);
     });`,
    { eval: true },
  );
  const reply = () => new Promise((resolve) => worker.once("message", resolve));
  const before = figures();
  const x = device.malloc(SIZE);
  x.bytes().fill(0x11);
  enqueue("launch", x);
  const view = x.contents();
  let refusal;
  try {
    worker.postMessage(view, [view.buffer]);
  } catch (error) {
    refusal = { name: error.name, message: error.message };
  }
  const stillAttached = view.byteLength;
  const moved = new Uint8Array(x.contents().transfer());
  worker.postMessage(moved, [moved.buffer]);
  const seenByWorker = await reply();
  x.free();
  const afterFree = figures();
  const next = device.malloc(SIZE);
  next.bytes().fill(0x55);
  await stream.done();
  const afterWork = figures();
  worker.postMessage("drop");
  const workerHeadAfterWork = await reply();
  await worker.terminate();
  await collect();
  await new Promise((resolve) => setTimeout(resolve, 250)); // the backend's 100 ms timer gives it back
  const end = figures();
  report.postMessage = {
    refusal,
    stillAttached,
    viewLengthAfterTransfer: view.byteLength,
    workerHeadAfterWork,
    movedLength: moved.byteLength,
    seenByWorker,
    afterFree: diff(before, afterFree),
    afterWork: diff(before, afterWork),
    end: diff(before, end),
    nextUntouched: next.bytes().every((byte) => byte === 0x55),
  };
  next.free();
  device.clearCache();
}

source.free();
stream.release();
module.release();
device.close();
await collect();
const counters = device.counters().backend;
report.closed = {
  quarantinedAllocations: counters.quarantinedAllocations,
  liveBuffers: counters.buffersMade - counters.buffersReleased,
  bufferBytes: counters.bufferBytes,
};
console.log(JSON.stringify(report));
