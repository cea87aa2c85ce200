#!/usr/bin/env node
// What `device.counters()` costs: N calls in one go (N = 1,000 and 100,000, each loop compiled on its own and
// warmed first), ns per call in wall-clock and CPU time, on the host backend and on the mock, beside its two
// parts (the backend's `counters()` alone, the allocator's `counters()` alone) and beside `memoryStats()`.
// Each figure is the best of the rounds (`--rounds`, default 7; one measurement of every row per round, so a
// slow stretch of the machine costs each row alike). Every call's result is read (a field summed), so no
// call is left out by the compiler.
// Run after `pnpm run build`: node --expose-gc bench/counters-bench.mjs [--rounds N]
import { CachingAllocator } from "@nuvec/allocator";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Device } from "../dist/index.js";

const roundsFlag = process.argv.indexOf("--rounds");
const ROUNDS = roundsFlag > 0 ? Number(process.argv[roundsFlag + 1]) : 7;
const COUNTS = [1_000, 100_000];
const WARM_UP_CALLS = 300_000;

/** A loop of `count` calls of `call(context)` compiled on its own, so that rows share no call site. */
function loopOf(call) {
  return new Function(
    "context",
    "count",
    `let sum = 0; for (let index = 0; index < count; index++) { sum += ${call}; } return sum;`,
  );
}

/** ns per call of one run of `loop` over `count` calls ({ wall, cpu }: the process's CPU time). */
function once(loop, context, count) {
  globalThis.gc?.();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const sum = loop(context, count);
  const wallNs = (performance.now() - wall) * 1e6;
  const used = process.cpuUsage(cpu);
  if (!Number.isFinite(sum)) throw new Error("a call answered no number");
  return { wall: wallNs / count, cpu: ((used.user + used.system) * 1e3) / count };
}

const rows = [];
function addRow(name, call, context) {
  const loops = new Map(COUNTS.map((count) => [count, loopOf(call)]));
  for (const [count, loop] of loops) {
    for (let done = 0; done < WARM_UP_CALLS; done += count) loop(context, count);
  }
  rows.push({
    name,
    loops,
    context,
    best: new Map(COUNTS.map((count) => [count, { wall: Infinity, cpu: Infinity }])),
  });
}

let host;
try {
  host = Device.open({ safetyNet: false });
} catch (error) {
  console.log(`host backend unavailable: ${error.message}`);
}
const mockDevice = Device.open({ backend: new MockBackend(), safetyNet: false });
// A few live and cached buffers, so the figures are not those of an empty device.
const live = [];
for (const device of [host, mockDevice]) {
  if (device === undefined) continue;
  for (let index = 0; index < 8; index++) live.push(device.malloc(4096 * (index + 1)));
  device.malloc(65536).free();
}
const allocator = new CachingAllocator({
  recommendedMaxWorkingSetSize: 8 * 1024 ** 3,
  memorySize: 16 * 1024 ** 3,
  maxBufferLength: 8 * 1024 ** 3,
  resourceLimit: 499000,
  pageSize: 16384,
  acquire: (bytes) => ({ bytes }),
  release: () => {},
});

if (host !== undefined) {
  addRow("host: device.counters()", "context.device.counters().cacheHits", { device: host });
  addRow("host: backend.counters() alone", "context.backend.counters().buffersMade", {
    backend: host.native.backend,
  });
  addRow("host: device.memoryStats()", "context.device.memoryStats().active", { device: host });
}
addRow("mock: device.counters()", "context.device.counters().cacheHits", { device: mockDevice });
addRow("mock: backend.counters() alone", "context.backend.counters().buffersMade", {
  backend: mockDevice.native.backend,
});
addRow("allocator alone: counters()", "context.allocator.counters().cacheHits", { allocator });

for (let round = 0; round < ROUNDS; round++) {
  for (const row of rows) {
    for (const [count, loop] of row.loops) {
      const { wall, cpu } = once(loop, row.context, count);
      const best = row.best.get(count);
      best.wall = Math.min(best.wall, wall);
      best.cpu = Math.min(best.cpu, cpu);
    }
  }
}

const ns = (figure) => `${figure.wall.toFixed(0)} (${figure.cpu.toFixed(0)})`;
console.log(`node ${process.version}; best of ${ROUNDS} rounds; ns per call, CPU time in parentheses\n`);
console.log(`| call | ${COUNTS.map((count) => `${count.toLocaleString("en-US")} calls`).join(" | ")} |`);
console.log(`| --- | ${COUNTS.map(() => "---").join(" | ")} |`);
for (const row of rows)
  console.log(`| ${row.name} | ${COUNTS.map((count) => ns(row.best.get(count))).join(" | ")} |`);
for (const buffer of live) buffer.free();
host?.close();
mockDevice.close();
