#!/usr/bin/env node
// The policy's speed, side by side with a C++ reference of the same MLX policy (reference/mlx-policy.cc,
// compiled with the system's g++ -O2 when present; skipped with a message when not), on every trace of
// fixtures/traces and on a generated long decode-style trace (decode-trace.mjs).
// Before timing, every trace is replayed by both sides under the traces' three configurations and their
// figures are checked equal: the reference is provably the same policy (the bench exits 1 otherwise).
// Then: both policies' figures and speed, and the allocator's memory per cached buffer.
// Run after `pnpm run build` (it replays dist/):
//   pnpm --filter @nuvec/allocator bench     (or: node bench/replay-bench.mjs [--milliseconds N]
//                                              [--measurements N])
// Each ns/event is the best of three (--measurements) measurements of at least --milliseconds (default 1000)
// of whole replays back to back (a fresh allocator each; the trace read and parsed once beforehand), after a
// warm-up, in wall-clock time and, apart, in the process's CPU time (steadier on a shared machine). The
// TypeScript side replays the events two ways: the event arrays themselves (checked on every replay) and a
// PackedTrace (packTrace: checked once, in typed arrays, as the C++ side reads its pre-read binary pairs).
// The sides take turns, one measurement each, so a busy second of a shared machine does not fall on one only.
import { existsSync, readdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { CachingAllocator, CountingBufferSource, packTrace, replayTrace } from "../dist/index.js";
import { readTrace } from "../dist/node.js";
import { buildReference } from "./cpp-reference.mjs";
import { decodeTrace } from "./decode-trace.mjs";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = resolve(packageDir, "../..");
const tracesDir = resolve(repoRoot, "fixtures/traces");
const flag = process.argv.indexOf("--milliseconds");
const MILLISECONDS = flag > 0 ? Number(process.argv[flag + 1]) : 1000;
const measurementsFlag = process.argv.indexOf("--measurements");
// More measurements give a busy machine more chances at a quiet second.
const MEASUREMENTS = measurementsFlag > 0 ? Number(process.argv[measurementsFlag + 1]) : 3;
// The three shared traces first (the design's figures are theirs), then the other workloads of the folder.
const SHARED_TRACES = ["gpt2-generate", "bert-dynamic", "resnet50-train"];
// The configurations of fixtures/traces/README.md (set right after opening, memory limit first).
// MLX's policy, named: the C++ reference is MLX's, and the variants below override it.
const CONFIGURATIONS = {
  default: { workingSet: 8589934592, memorySize: 17179869184, policy: "mlx" },
  cache64: { workingSet: 8589934592, memorySize: 17179869184, cacheLimit: 67108864, policy: "mlx" },
  small: { workingSet: 536870912, memorySize: 1073741824, memoryLimit: 8589934592, policy: "mlx" },
};
const FIGURES = [
  "active",
  "peak",
  "cache",
  "systemAllocations",
  "systemReleases",
  "cacheHits",
  "cacheMisses",
  "peakReserved",
  "peakLive",
  "liveBuffers",
  "cachedBuffers",
];

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
// Twice: one collection can leave survivors of the young generation in `heapUsed`.
const collectGarbage = () => {
  gc();
  gc();
};

const sizeClass = (bytes) =>
  bytes > 16384 ? Math.ceil(bytes / 16384) * 16384 : Math.ceil(bytes / 256) * 256;
const distinctSizeClasses = (events) =>
  new Set(events.filter((event) => event[0] === "a" && event[2] > 0).map((event) => sizeClass(event[2])))
    .size;

/**
 * ns per event of whole replays back to back for at least `milliseconds`; `events` is the event arrays or
 * their PackedTrace.
 */
function measure(events, options, milliseconds) {
  const count = Array.isArray(events) ? events.length : events.events;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  let replayed = 0;
  let elapsed;
  do {
    replayTrace(events, options);
    replayed += count;
    elapsed = performance.now() - start;
  } while (elapsed < milliseconds);
  const cpu = process.cpuUsage(cpuStart);
  return { wall: (elapsed * 1e6) / replayed, cpu: ((cpu.user + cpu.system) * 1e3) / replayed };
}

/** The best of the measurements (wall-clock and CPU time apart) after a warm-up of half a measurement. */
function bestOf(events, options, milliseconds = MILLISECONDS) {
  measure(events, options, milliseconds / 2);
  const best = { wall: Number.POSITIVE_INFINITY, cpu: Number.POSITIVE_INFINITY };
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++) {
    const { wall, cpu } = measure(events, options, milliseconds);
    best.wall = Math.min(best.wall, wall);
    best.cpu = Math.min(best.cpu, cpu);
  }
  return best;
}

function figuresOf(result) {
  // The reference prints `peak` for MLX's one peak, nuvec's `peakActive`.
  const figures = { ...result.stats, ...result.counters, peak: result.stats.peakActive };
  return Object.fromEntries(FIGURES.map((name) => [name, figures[name]]));
}

function memoryPerCachedBuffer(count) {
  const source = new CountingBufferSource({ workingSet: 2 ** 50 });
  collectGarbage();
  const allocator = new CachingAllocator(source, { policy: "mlx" });
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  let live = [];
  // 4096 distinct lengths, as a cache of many shapes would hold.
  for (let index = 0; index < count; index++) live.push(allocator.malloc(256 * (1 + (index % 4096))));
  for (const allocation of live) allocator.free(allocation);
  live = undefined;
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  const cached = allocator.counters().cachedBuffers;
  return { bytes: (after - before) / cached, cached };
}

const traces = [];
if (existsSync(tracesDir)) {
  const others = readdirSync(tracesDir)
    .filter((file) => file.endsWith(".ndjson.gz"))
    .map((file) => file.replace(".ndjson.gz", ""))
    .filter((name) => !SHARED_TRACES.includes(name))
    .sort();
  for (const name of [...SHARED_TRACES, ...others]) {
    traces.push({ name, events: readTrace(resolve(tracesDir, `${name}.ndjson.gz`)).events });
  }
} else {
  console.log(`no traces at ${tracesDir}: the generated trace only`);
}
traces.push({ name: "decode-long (generated, seed 15)", events: decodeTrace({ seed: 15, tokens: 1000 }) });

const reference = buildReference();
console.log(
  `node ${process.version}; each ns/event the best of ${MEASUREMENTS} measurements of ≥ ${MILLISECONDS} ms of whole replays, after a warm-up`,
);
if (reference.skipped !== undefined) console.log(`C++ reference skipped: ${reference.skipped}`);

// 1. The same policy: every figure equal, on every trace under every configuration.
let mismatches = 0;
if (reference.skipped === undefined) {
  for (const trace of traces) {
    trace.eventsPath = reference.writeEvents(trace.events);
    for (const [configuration, options] of Object.entries(CONFIGURATIONS)) {
      const script = figuresOf(replayTrace(trace.events, options));
      const cpp = reference.run(trace.eventsPath, options);
      const different = FIGURES.filter((name) => script[name] !== cpp[name]);
      if (different.length > 0) {
        mismatches++;
        console.log(
          `MISMATCH ${trace.name} ${configuration}: ${different.map((name) => `${name} TS ${script[name]} C++ ${cpp[name]}`).join(", ")}`,
        );
      }
    }
  }
  console.log(
    mismatches === 0
      ? `\nfigures equal, TS and C++, on ${traces.length} traces × ${Object.keys(CONFIGURATIONS).length} configurations (${FIGURES.join(", ")})`
      : `\n${mismatches} trace/configuration pairs differ: the C++ reference is not the same policy`,
  );
}

// 2. Speed, MLX policy, configuration "default": TypeScript (packed and the event arrays) and C++ side by
// side, in wall-clock time and in CPU time (the process's: it leaves out the seconds other processes of a
// shared machine had the core; the TypeScript side's includes V8's helper threads, e.g. concurrent GC).
console.log('\nMLX policy, configuration "default" (W 8 GiB, M 16 GiB), ns per event\n');
console.log(
  "| trace | events | size classes | TS, packed | C++ | packed / C++ | TS, packed, CPU time | C++, CPU time | packed / C++, CPU time | TS, event arrays, CPU time | arrays / C++, CPU time |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
const unmeasured = () => ({ wall: Number.POSITIVE_INFINITY, cpu: Number.POSITIVE_INFINITY });
const keepBest = (best, { wall, cpu }) => {
  best.wall = Math.min(best.wall, wall);
  best.cpu = Math.min(best.cpu, cpu);
};
for (const trace of traces) {
  const options = CONFIGURATIONS.default;
  const packed = packTrace(trace.events);
  measure(trace.events, options, MILLISECONDS / 2); // warm-ups
  measure(packed, options, MILLISECONDS / 2);
  const arrays = unmeasured();
  const script = unmeasured();
  const cpp = unmeasured();
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++) {
    keepBest(arrays, measure(trace.events, options, MILLISECONDS));
    keepBest(script, measure(packed, options, MILLISECONDS));
    if (reference.skipped === undefined) {
      const timing = { milliseconds: MILLISECONDS, measurements: 1 };
      const { nsPerEvent, cpuNsPerEvent } = reference.run(trace.eventsPath, options, timing);
      keepBest(cpp, { wall: Math.min(...nsPerEvent), cpu: Math.min(...cpuNsPerEvent) });
    }
  }
  trace.mlxNsPerEvent = arrays;
  const known = reference.skipped === undefined;
  const cell = (value) => (known ? value.toFixed(1) : "—");
  const ratio = (numerator, denominator) => (known ? `${(numerator / denominator).toFixed(2)}×` : "—");
  console.log(
    `| ${trace.name} | ${trace.events.length} | ${distinctSizeClasses(trace.events)} | ${script.wall.toFixed(1)} | ${cell(cpp.wall)} | ${ratio(script.wall, cpp.wall)} | ${script.cpu.toFixed(1)} | ${cell(cpp.cpu)} | ${ratio(script.cpu, cpp.cpu)} | ${arrays.cpu.toFixed(1)} | ${ratio(arrays.cpu, cpp.cpu)} |`,
  );
}
if (reference.skipped === undefined) reference.dispose();

// 3. Both policies: figures and speed (shorter measurements).
console.log('\nboth policies, configuration "default"\n');
console.log(
  "| trace | policy | ns/event | ns/event, CPU time | reserved/live | system allocations | cache hits |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- |");
const VARIANTS = {
  mlx: { policy: "mlx" },
  bounded: { policy: "bounded" },
  "bounded, largest first": { policy: "bounded", boundedRelease: "largest" },
};
for (const trace of traces) {
  let mlxAllocations;
  for (const [name, variant] of Object.entries(VARIANTS)) {
    const options = { ...CONFIGURATIONS.default, ...variant };
    const result = replayTrace(trace.events, options);
    const nsPerEvent = name === "mlx" ? trace.mlxNsPerEvent : bestOf(trace.events, options, MILLISECONDS / 2);
    const { peakLive, cacheHits } = result.counters;
    const { peakReserved } = result.stats;
    const allocations = result.stats.systemAllocations;
    mlxAllocations ??= allocations;
    const ratio = name === "mlx" ? "" : ` (${(allocations / mlxAllocations).toFixed(2)}× mlx)`;
    console.log(
      `| ${trace.name} | ${name} | ${nsPerEvent.wall.toFixed(1)} | ${nsPerEvent.cpu.toFixed(1)} | ${(peakReserved / peakLive).toFixed(2)} | ${allocations}${ratio} | ${cacheHits} |`,
    );
  }
}

// 4. The allocator's own memory per cached buffer (goal ≤ 96 bytes).
let memory = memoryPerCachedBuffer(200_000);
for (let attempt = 0; attempt < 2; attempt++) {
  const again = memoryPerCachedBuffer(200_000);
  if (again.bytes < memory.bytes) memory = again;
}
console.log(
  `\nallocator memory per cached buffer: ${memory.bytes.toFixed(0)} bytes (goal ≤ 96; V8 heap growth over ${memory.cached} cached buffers of 4096 lengths, best of 3)`,
);
if (mismatches > 0) process.exitCode = 1;
