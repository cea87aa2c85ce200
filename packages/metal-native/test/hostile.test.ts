// Hostile use of the real addon, each probe in a child process so that a crash is observed as the
// child's signal (SIGABRT, SIGBUS, SIGSEGV), never as the test runner's death. The children load the built
// package (dist/), like a user would.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reportOf, runInChild } from "../../native-core/test/child.js";

// ArrayBuffer.prototype.transfer: behind a flag on Node.js 20, always there (and the flag gone) from 21.
const TRANSFER = Number(process.versions.node.split(".")[0]) < 21 ? ["--harmony-rab-gsab-transfer"] : [];

const packageRoot = fileURLToPath(new URL("..", import.meta.url));
const distIndex = JSON.stringify(join(packageRoot, "dist", "index.js"));
/** The start of a child that loads the backend and can collect garbage (`collect()`), and its flags. */
const withCollect = `import { setImmediate as nextImmediate } from "node:timers/promises";
  const { loadNativeBackend } = await import(${distIndex});
  const backend = loadNativeBackend();
  const collect = async () => { for (let round = 0; round < 4; round += 1) { gc(); await nextImmediate(); } };`;
const withCollectFlags = [...TRANSFER, "--expose-gc"];

/** Runs `source` in a child (`nodeOptions` before it); expects it to end normally, printing nothing on stderr. */
function cleanChild(source: string, nodeOptions: string[] = []): unknown {
  const outcome = runInChild(source, { nodeOptions });
  expect(outcome.stderr).toBe("");
  return reportOf(outcome);
}

describe.runIf(process.platform === "linux")("hostile use of the host addon (child processes)", () => {
  let directory: string;

  beforeAll(() => {
    directory = mkdtempSync(join(tmpdir(), "nuvec-hostile-"));
    chmodSync(directory, 0o755);
  });

  afterAll(() => {
    rmSync(directory, { recursive: true, force: true });
  });

  it("worker.terminate() in the middle of any native call never aborts the process (30 workers)", () => {
    const file = join(directory, "terminate.bin");
    writeFileSync(file, new Uint8Array(256 * 1024).fill(7));
    const report = cleanChild(
      `import { Worker } from "node:worker_threads";
       const code = \`
         const { loadNativeBackend } = await import(${distIndex});
         const { parentPort } = await import("node:worker_threads");
         const backend = loadNativeBackend();
         const mapped = backend.mapFile(${JSON.stringify(file)});
         const set = backend.newResidencySet();
         parentPort.postMessage("ready");
         for (;;) {
           const buffer = backend.newBuffer(1024 * 1024);
           buffer.contents();
           set.add(buffer); set.commit(); set.requestResidency();
           set.remove(buffer); set.commit();
           buffer.release();
           try { backend.mapFile("/nonexistent/nuvec-missing-file"); } catch {}
           try { buffer.contents(); } catch {}
           try { backend.newBuffer(-1); } catch {}
           mapped.contents();
           const again = backend.mapFile(${JSON.stringify(file)});
           again.contents();
           again.release();
           backend.counters();
         }\`;
       let terminated = 0;
       for (let round = 0; round < 30; round += 1) {
         const worker = new Worker(code, { eval: true });
         await new Promise((resolve, reject) => { worker.once("message", resolve); worker.once("error", reject); });
         await new Promise((resolve) => setTimeout(resolve, 30));
         await worker.terminate();
         terminated += 1;
       }
       console.log(JSON.stringify({ terminated }));`,
    );
    expect(report).toEqual({ terminated: 30 });
  });
  it("wiring a mapped file that someone else truncated never raises SIGBUS; wiring later neither", () => {
    const file = join(directory, "truncated.bin");
    writeFileSync(file, new Uint8Array(1024 * 1024).fill(3));
    const report = cleanChild(
      `import { readFileSync, truncateSync } from "node:fs";
       const { loadNativeBackend } = await import(${distIndex});
       const vmLck = () => Number(/^VmLck:\\s+(\\d+)/m.exec(readFileSync("/proc/self/status", "utf8"))[1]) * 1024;
       const backend = loadNativeBackend();
       const mapped = backend.mapFile(${JSON.stringify(file)});
       const set = backend.newResidencySet();
       set.add(mapped);
       set.commit();
       truncateSync(${JSON.stringify(file)}, 4096);
       set.requestResidency();
       const first = { ...backend.counters(), setFailures: set.wiringFailures, locked: vmLck() };
       set.requestResidency();
       const again = { ...backend.counters(), setFailures: set.wiringFailures, locked: vmLck() };
       const advice = set.lastWiringError;
       // The first page is still the file's: it reads through the view.
       const firstByte = new Uint8Array(mapped.contents())[0];
       set.release();
       mapped.release();
       console.log(JSON.stringify({ first, again, advice, firstByte, after: backend.counters() }));`,
    );
    const { first, again, advice, firstByte, after } = report as {
      first: { wiredBytes: number; wiringFailures: number; setFailures: number; locked: number };
      again: { wiredBytes: number; wiringFailures: number; setFailures: number; locked: number };
      advice: string;
      firstByte: number;
      after: { wiredBytes: number; mappedBytes: number };
    };
    // Truthful: nothing counted as wired, nothing locked, the failure counted and explained.
    expect(first).toMatchObject({ wiredBytes: 0, wiringFailures: 1, setFailures: 1, locked: 0 });
    expect(again).toMatchObject({ wiredBytes: 0, wiringFailures: 2, setFailures: 2, locked: 0 });
    expect(advice).toMatch(/EFAULT.*shorter than when it was mapped/);
    expect(firstByte).toBe(3);
    expect(after).toMatchObject({ wiredBytes: 0, mappedBytes: 0 });
  });
  it("a view moved away with transfer() keeps its memory out of reuse until it is collected (no aliasing, no segfault)", () => {
    const file = join(directory, "transfer.bin");
    writeFileSync(file, new Uint8Array(64 * 1024).fill(0x37));
    const report = cleanChild(
      `${withCollect}
       const report = {};
       await (async () => {
         const first = backend.newBuffer(1024 * 1024);
         new Uint8Array(first.contents()).fill(0xaa);
         const moved = new Uint8Array(first.contents().transfer());
         first.detachContents();
         report.quarantinedFlag = first.quarantined;
         first.release();
         const second = backend.newBuffer(1024 * 1024);
         const fresh = new Uint8Array(second.contents());
         fresh.fill(0x55);
         moved.fill(0x11);
         report.aliased = moved[0] === 0x55 || fresh.some((byte) => byte !== 0x55);
         report.quarantined = backend.counters().quarantinedAllocations;
         second.release();
         const mapped = backend.mapFile(${JSON.stringify(file)});
         const movedFile = new Uint8Array(mapped.contents().transfer());
         mapped.release();
         report.fileReadBack = movedFile.every((byte) => byte === 0x37);
         // A view the user dropped is held to the end of the current job (until its microtasks run), so
         // gc() in the same turn does not collect it: detachContents() detaches it, and the buffer is not
         // quarantined. (A view collected in an earlier turn, its finalizer
         // pending, still cannot be told from a moved one and quarantines its buffer: safe, and rare.)
         const dropped = backend.newBuffer(4096);
         new Uint8Array(dropped.contents())[0] = 1;
         gc();
         dropped.detachContents();
         report.droppedQuarantined = dropped.quarantined;
         dropped.release();
       })();
       await collect();
       const counters = backend.counters();
       report.after = { quarantined: counters.quarantinedAllocations, bufferBytes: counters.bufferBytes, mappedBytes: counters.mappedBytes };
       console.log(JSON.stringify(report));`,
      withCollectFlags,
    );
    expect(report).toEqual({
      quarantinedFlag: true,
      aliased: false,
      quarantined: 1,
      fileReadBack: true,
      droppedQuarantined: false,
      after: { quarantined: 0, bufferBytes: 0, mappedBytes: 0 },
    });
  });

  it("a range's view moved away with transfer() keeps the range and its segment's memory until the view is collected", () => {
    const report = cleanChild(
      `${withCollect}
       const report = {};
       const start = backend.counters();
       await (async () => {
         const segment = backend.newBuffer(1024 * 1024);
         new Uint8Array(segment.contents()).fill(0x22);
         const range = backend.newBufferRange(segment, 65536, 4096);
         const moved = new Uint8Array(range.contents().transfer());
         range.detachContents();
         report.quarantinedFlag = range.quarantined;
         range.release();
         segment.release();
         // Released twice over, yet a moved view reaches the memory: the platform has not freed it.
         report.freedWhileMoved = backend.counters().buffersFreedByPlatform - start.buffersFreedByPlatform;
         report.movedReads = moved.every((byte) => byte === 0x22);
         moved.fill(0x33);
       })();
       await collect();
       const after = backend.counters();
       report.freedAfterCollection = after.buffersFreedByPlatform - start.buffersFreedByPlatform;
       report.after = { quarantined: after.quarantinedAllocations, bufferBytes: after.bufferBytes };
       console.log(JSON.stringify(report));`,
      withCollectFlags,
    );
    expect(report).toEqual({
      quarantinedFlag: true,
      freedWhileMoved: 0,
      movedReads: true,
      freedAfterCollection: 1,
      after: { quarantined: 0, bufferBytes: 0 },
    });
  });

  it("a view moved with transfer() and posted to another thread outlives the worker that made it: its memory is abandoned at the worker's exit, never freed", () => {
    const file = join(directory, "posted.bin");
    const held = join(directory, "held.bin");
    writeFileSync(held, new Uint8Array(64 * 1024).fill(3));
    const fileBytes = new Uint8Array(100_000).map((_, index) => (index * 7) % 251);
    writeFileSync(file, fileBytes);
    const report = cleanChild(
      `import { Worker } from "node:worker_threads";
       import { readFileSync } from "node:fs";
       const MIB = 1024 * 1024;
       const worker = (code) => new Worker(\`
         const { loadNativeBackend } = await import(${distIndex});
         const { parentPort } = await import("node:worker_threads");
         const backend = loadNativeBackend();
         \${code}\`, { eval: true, type: "module" });
       const report = {};
       // 1. Moved views of buffers and mapped files, released or not, posted to this thread; the worker exits.
       const moved = [];
       const mover = worker(\`
         const post = (handle, release) => {
           const view = handle.contents().transfer();
           if (release) handle.release();
           parentPort.postMessage(view, [view]);
         };
         for (const release of [true, false]) {
           const buffer = backend.newBuffer(4 * 1024 * 1024);
           new Uint8Array(buffer.contents()).fill(0x42);
           post(buffer, release);
           post(backend.mapFile(${JSON.stringify(file)}), release);
         }\`);
       mover.on("message", (view) => moved.push(new Uint8Array(view)));
       const { loadNativeBackend } = await import(${distIndex});
       const abandonedBytes = () => loadNativeBackend().counters().abandonedBytes;
       const abandonedBefore = abandonedBytes();
       await new Promise((resolve) => mover.once("exit", resolve));
       report.abandoned = abandonedBytes() - abandonedBefore;
       // Memory freed by the worker's exit would be handed out again now.
       const churn = Array.from({ length: 64 }, () => new Uint8Array(4 * MIB).fill(7));
       const expected = readFileSync(${JSON.stringify(file)});
       report.moved = moved.map((view) =>
         view.length === expected.length ? Buffer.compare(Buffer.from(view), expected) === 0 : view.every((byte) => byte === 0x42));
       churn.length = 0;
       moved.length = 0;
       // 2. Views still attached when a worker exits or is terminated die with it: their memory goes back.
       // Counted exactly by the mapped file's lines in /proc/self/maps (anonymous memory is shared with V8
       // and malloc, whose figures move under load).
       const heldLines = () => readFileSync("/proc/self/maps", "utf8").split("\\n").filter((line) => line.endsWith(${JSON.stringify(held)})).length;
       for (const ending of ["exit", "terminate"]) {
         const holder = worker(\`
           const kept = [];
           for (let index = 0; index < 16; index += 1) {
             kept.push(backend.mapFile(${JSON.stringify(held)}).contents());  // the handle dropped, the view kept
             const buffer = backend.newBuffer(1024 * 1024);
             kept.push(buffer.contents());
           }
           globalThis.kept = kept;
           parentPort.postMessage(0);
           if (\${ending === "terminate"}) {
             for (;;) { const buffer = backend.newBuffer(1024 * 1024); new Uint8Array(buffer.contents())[0] = 1; buffer.release(); }
           }
           parentPort.once("message", () => parentPort.close());  // then exits: nothing left to run\`);
         await new Promise((resolve) => holder.once("message", resolve));
         const whileHeld = heldLines();
         const exited = new Promise((resolve) => holder.once("exit", resolve));
         if (ending === "terminate") await holder.terminate();
         else holder.postMessage(0);
         const abandonedAtStart = abandonedBytes();
         await exited;
         // A view made in the job the worker is terminated in, after the last renewal of the teardown
         // sentinel, and still attached then, is in doubt: its buffer (1 MiB) is abandoned, and counted.
         const abandoned = abandonedBytes() - abandonedAtStart;
         const inDoubt = ending === "terminate" && abandoned === 1024 * 1024;
         report[ending] = { whileHeld, after: heldLines(), abandoned: inDoubt ? 0 : abandoned };
       }
       console.log(JSON.stringify(report));`,
      TRANSFER,
    );
    expect(report).toEqual({
      moved: [true, true, true, true],
      // The two buffers of 4 MiB and the two mappings of 100,000 bytes (25 pages) the moved views reach,
      // released or not: counted process-wide.
      abandoned: 2 * (4 * 1024 * 1024 + 25 * 4096),
      exit: { whileHeld: 16, after: 0, abandoned: 0 },
      terminate: { whileHeld: 16, after: 0, abandoned: 0 },
    });
  });
});
