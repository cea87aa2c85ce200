#!/usr/bin/env node
// The Device's hot paths, each figure next to its goal (issue 15):
//   1. malloc(n).free() of a cached size on the host backend, default options (safety net on) and
//      `safetyNet: false`, next to the allocator alone;
//   2. the first contents() of a buffer (an external ArrayBuffer, detached again on free) and repeated calls;
//   3. the examples' replay program (a Device over the mock, as apps/examples/src/replay.ts runs a trace)
//      against `replayTrace` alone on the same pre-read events.
// Each figure is the best of three measurements after a warm-up. The host rows run first: the mock rows
// would otherwise make the Device's calls into its backend polymorphic before the goals are measured.
// Run after `pnpm run build`: pnpm --filter @nuvec/device bench   (or: node bench/device-bench.mjs
// [--milliseconds N] [--measurements N]; default 500 ms for the micro rows, twice that for the replays, and
// three measurements)
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CachingAllocator, replayTrace } from "@nuvec/allocator";
import { readTrace } from "@nuvec/allocator/node";
import { MockBackend } from "@nuvec/metal-native/mock";
// The allocator bench's generated decode trace (a long one: the shared traces are short).
import { decodeTrace } from "../../allocator/bench/decode-trace.mjs";
import { Device } from "../dist/index.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tracesDir = resolve(packageDir, "../../../shared/traces");
const flag = process.argv.indexOf("--milliseconds");
const MILLISECONDS = flag > 0 ? Number(process.argv[flag + 1]) : 500;
const measurementsFlag = process.argv.indexOf("--measurements");
// More measurements give a busy machine more chances at a quiet second.
const MEASUREMENTS = measurementsFlag > 0 ? Number(process.argv[measurementsFlag + 1]) : 3;
const KiB = 1024;
const GiB = 1024 ** 3;

/**
 * A loop of `body` compiled on its own (`new Function`): each row gets its own type feedback, so what one
 * row calls does not make another row's call sites polymorphic.
 */
function loopOf(body) {
  return new Function("context", "count", `for (let index = 0; index < count; index++) { ${body} }`);
}

/** ns per iteration of `loop(context, batch)` run in batches for at least `milliseconds`. */
function measure(loop, context, milliseconds) {
  const batch = 10_000;
  const start = performance.now();
  let iterations = 0;
  let elapsed;
  do {
    loop(context, batch);
    iterations += batch;
    elapsed = performance.now() - start;
  } while (elapsed < milliseconds);
  return (elapsed * 1e6) / iterations;
}

function bestOf(run, milliseconds) {
  run(milliseconds / 2); // warm-up
  let best = Number.POSITIVE_INFINITY;
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++)
    best = Math.min(best, run(milliseconds));
  return best;
}

const bestLoop = (body, context, milliseconds = MILLISECONDS) =>
  bestOf((ms) => measure(loopOf(body), context, ms), milliseconds);

const rows = [];
const row = (what, ns, goal = "") => {
  rows.push({ what, ns, goal });
  console.log(`| ${what} | ${ns.toFixed(0)} | ${goal} |`);
};
const verdict = (ns, goal) => `≤ ${goal} ${ns <= goal ? "✓" : "✗"}`;

console.log(
  `node ${process.version}; best of ${MEASUREMENTS} measurements of ≥ ${MILLISECONDS} ms each, after a warm-up\n`,
);
console.log("| path | ns | goal |");
console.log("| --- | --- | --- |");

// 1. malloc(n).free() of a cached size.
const allocator = new CachingAllocator({
  recommendedMaxWorkingSetSize: 8 * GiB,
  memorySize: 16 * GiB,
  maxBufferLength: 8 * GiB,
  resourceLimit: 499000,
  pageSize: 16384,
  acquire: (bytes) => ({ bytes }),
  release: () => {},
});
row(
  "allocator alone: free(malloc(64 KiB)), cached",
  bestLoop("context.allocator.free(context.allocator.malloc(context.size));", { allocator, size: 64 * KiB }),
);

let host;
let hostUnsafe;
try {
  host = Device.open();
  hostUnsafe = Device.open({ safetyNet: false });
} catch (error) {
  console.log(`| host backend unavailable: ${error.message} | | |`);
}
if (host !== undefined) {
  const mallocFree = "context.device.malloc(context.size).free();";
  for (const size of [256, 64 * KiB]) {
    const label = size === 256 ? "256 B" : "64 KiB";
    const safe = bestLoop(mallocFree, { device: host, size });
    row(`host, default options (safety net): malloc(${label}).free()`, safe, verdict(safe, 200));
    const unsafe = bestLoop(mallocFree, { device: hostUnsafe, size });
    row(`host, safetyNet: false: malloc(${label}).free()`, unsafe, verdict(unsafe, 150));
  }

  // 2. contents(). In a malloc + contents() + free() cycle the first contents() pays for the external
  // ArrayBuffer, its detaching on free and its collection later: that cycle minus malloc + free is its cost.
  const size = 64 * KiB;
  const cycle = bestLoop(
    "const buffer = context.device.malloc(context.size); buffer.contents(); buffer.free();",
    { device: host, size },
  );
  const bare = bestLoop(mallocFree, { device: host, size });
  row("host: malloc(64 KiB) + first contents() + free()", cycle);
  row("host: first contents() (that cycle − malloc + free)", cycle - bare, verdict(cycle - bare, 1000));
  // The call alone: 256 fresh buffers, contents() once each (their detaching and collection not counted).
  const firstCall = bestOf((milliseconds) => {
    const buffers = new Array(256);
    let timed = 0;
    let calls = 0;
    const start = performance.now();
    while (performance.now() - start < milliseconds) {
      for (let index = 0; index < buffers.length; index++) buffers[index] = host.malloc(size);
      const before = performance.now();
      for (let index = 0; index < buffers.length; index++) buffers[index].contents();
      timed += performance.now() - before;
      calls += buffers.length;
      for (let index = 0; index < buffers.length; index++) buffers[index].free();
    }
    return (timed * 1e6) / calls;
  }, MILLISECONDS);
  row("host: first contents(), the call alone (batch of 256 buffers)", firstCall);
  const held = host.malloc(size);
  held.contents();
  row("host: repeated contents() of a live buffer", bestLoop("context.buffer.contents();", { buffer: held }));
  held.free();
}

// Over the mock, for comparison (after the host rows: see the top).
const mock = Device.open({ backend: new MockBackend() });
const mockUnsafe = Device.open({ backend: new MockBackend(), safetyNet: false });
row(
  "mock, default options: malloc(64 KiB).free()",
  bestLoop("context.device.malloc(context.size).free();", { device: mock, size: 64 * KiB }),
);
row(
  "mock, safetyNet: false: malloc(64 KiB).free()",
  bestLoop("context.device.malloc(context.size).free();", { device: mockUnsafe, size: 64 * KiB }),
);
mock.close();
mockUnsafe.close();
host?.close();
hostUnsafe?.close();

// 3. The replay program against the policy alone, per event, on the same pre-read events.
const DEFAULT = { workingSet: 8 * GiB, memorySize: 16 * GiB };

/** apps/examples/src/replay.ts's loop (allocations and frees; the shared traces have nothing else). */
function replayProgram(events, deviceOptions) {
  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: DEFAULT.workingSet,
    memorySize: DEFAULT.memorySize,
    maxBufferLength: DEFAULT.workingSet,
  });
  const device = Device.open({ backend, policy: "mlx", ...deviceOptions });
  const buffers = new Map();
  for (const event of events) {
    switch (event[0]) {
      case "a":
        buffers.set(event[1], device.malloc(event[2]));
        break;
      case "f":
        buffers.get(event[1])?.free();
        buffers.delete(event[1]);
        break;
      default:
        throw new Error(`the bench replays allocations and frees only, not ${JSON.stringify(event)}`);
    }
  }
  const stats = device.memoryStats();
  const counters = device.counters();
  for (const buffer of buffers.values()) buffer.free();
  device.close();
  return { systemAllocations: stats.systemAllocations, cacheHits: counters.cacheHits, peak: stats.peak };
}

function perEvent(replay, events, milliseconds) {
  const start = performance.now();
  let replayed = 0;
  let elapsed;
  do {
    replay();
    replayed += events.length;
    elapsed = performance.now() - start;
  } while (elapsed < milliseconds);
  return (elapsed * 1e6) / replayed;
}

const traces = [];
if (existsSync(tracesDir)) {
  for (const name of ["gpt2-generate", "bert-dynamic", "resnet50-train"]) {
    traces.push({ name, events: readTrace(resolve(tracesDir, `${name}.ndjson.gz`)).events });
  }
} else {
  console.log(`\nno shared traces at ${tracesDir}: the generated trace only`);
}
traces.push({ name: "decode-long (generated, seed 15)", events: decodeTrace({ seed: 15, tokens: 1000 }) });

console.log(
  `\nreplay program (Device over the mock, as apps/examples/src/replay.ts) vs replayTrace alone, ns per event, measurements of ≥ ${2 * MILLISECONDS} ms\n`,
);
console.log(
  "| trace | events | replayTrace | program | program / policy (goal ≤ 3×) | program, safetyNet: false |",
);
console.log("| --- | --- | --- | --- | --- | --- |");
for (const { name, events } of traces) {
  const policy = replayTrace(events, DEFAULT);
  const program = replayProgram(events, {});
  for (const figure of ["systemAllocations", "cacheHits", "peak"]) {
    const expected = figure === "cacheHits" ? policy.counters.cacheHits : policy.stats[figure];
    if (program[figure] !== expected)
      throw new Error(`${name}: the program's ${figure} ${program[figure]} ≠ ${expected}`);
  }
  const policyNs = bestOf((ms) => perEvent(() => replayTrace(events, DEFAULT), events, ms), 2 * MILLISECONDS);
  const programNs = bestOf((ms) => perEvent(() => replayProgram(events, {}), events, ms), 2 * MILLISECONDS);
  const unsafeNs = bestOf(
    (ms) => perEvent(() => replayProgram(events, { safetyNet: false }), events, ms),
    2 * MILLISECONDS,
  );
  const ratio = programNs / policyNs;
  console.log(
    `| ${name} | ${events.length} | ${policyNs.toFixed(1)} | ${programNs.toFixed(1)} | ${ratio.toFixed(1)}× ${ratio <= 3 ? "✓" : "✗"} | ${unsafeNs.toFixed(1)} |`,
  );
}
