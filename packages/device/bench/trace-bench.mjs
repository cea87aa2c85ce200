#!/usr/bin/env node
// What tracing costs: (1) the memory a trace in memory holds per event at 4 million events; (2) the longest
// garbage-collection pause (PerformanceObserver "gc" entries) in a 20,000-step decode-like loop, untraced,
// traced in memory and traced to a gzip file; (3) the time a malloc + free pair costs untraced, traced, with a
// label, with 8 stack frames and streamed to a file (best of three, on the mock backend: the Device's own
// work). Run after `pnpm run build`, with the collector exposed:
//   node --expose-gc bench/trace-bench.mjs [--events N] [--steps N]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { MockBackend } from "@nuvec/metal-native/mock";
import { Device } from "../dist/index.js";

const argument = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const EVENTS = argument("--events", 4_000_000);
const STEPS = argument("--steps", 20_000);
const folder = mkdtempSync(join(tmpdir(), "nuvec-trace-bench-"));
if (typeof globalThis.gc !== "function") throw new Error("run with node --expose-gc");

const open = () =>
  Device.open({ backend: new MockBackend({ recommendedMaxWorkingSetSize: 64 * 1024 ** 3 }) });
const yieldNow = () => new Promise((resolve) => setImmediate(resolve));

function resident() {
  globalThis.gc();
  globalThis.gc();
  const usage = process.memoryUsage();
  return {
    heap: usage.heapUsed, // `external` includes the typed arrays' memory (`arrayBuffers`).
    external: usage.external,
    rss: usage.rss,
  };
}

// 1. Resident bytes per event: malloc + free pairs of a few sizes, two events each.
function residentInMemory() {
  const device = open();
  device.malloc(1024).free();
  const before = resident();
  device.startTrace({ name: "resident" });
  for (let index = 0; index < EVENTS / 2; index++) device.malloc(256 << (index % 8)).free();
  const during = resident();
  const trace = device.stopTrace();
  const held = during.heap - before.heap + (during.external - before.external);
  console.log(
    `resident: ${trace.header.events} events, ${(held / trace.header.events).toFixed(2)} bytes an event ` +
      `(heap ${((during.heap - before.heap) / 1024 ** 2).toFixed(1)} MiB, typed arrays ` +
      `${((during.external - before.external) / 1024 ** 2).toFixed(1)} MiB; rss ${(during.rss / 1024 ** 2).toFixed(0)} MiB)`,
  );
  device.close();
}
residentInMemory();

// 1b. The same streamed to a gzip file, yielding every 10,000 pairs: what the recorder and the writer hold.
async function residentStreamed() {
  const device = open();
  device.malloc(1024).free();
  const before = resident();
  device.startTrace({ name: "resident", file: join(folder, "resident.ndjson.gz") });
  let most = Number.NEGATIVE_INFINITY;
  for (let index = 0; index < EVENTS / 2; index++) {
    device.malloc(256 << (index % 8)).free();
    if (index % 10_000 === 9_999) {
      await yieldNow();
      if (index % 500_000 === 499_999) {
        const now = resident();
        most = Math.max(most, now.heap - before.heap + (now.external - before.external));
      }
    }
  }
  const trace = device.stopTrace();
  console.log(
    `resident, streamed to a gzip file: ${trace.header.events} events, at most ${(most / 1024 ** 2).toFixed(1)} MiB ` +
      `held (heap and typed arrays, sampled every 1,000,000 events)`,
  );
  device.close();
}
if (!process.argv.includes("--decode-only")) await residentStreamed();

// 2. GC pauses in a decode-like loop: per step a mark, 99 buffers (a few sizes), freed by the step's end,
// and a yield (the program awaits its GPU work).
async function decode(mode) {
  const device = open();
  const pauses = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push(entry.duration);
  });
  globalThis.gc();
  observer.observe({ entryTypes: ["gc"] });
  const file = join(folder, mode === "plain" ? "decode.ndjson" : "decode.ndjson.gz");
  if (mode === "memory") device.startTrace({ name: "decode" });
  if (mode === "file" || mode === "plain") device.startTrace({ name: "decode", file });
  const started = performance.now();
  const step = [];
  for (let index = 0; index < STEPS; index++) {
    device.mark("step");
    for (let layer = 0; layer < 99; layer++) step.push(device.malloc(4096 << (layer % 5), { label: "act" }));
    for (const buffer of step) buffer.free();
    step.length = 0;
    await yieldNow();
  }
  const trace = mode === "none" ? undefined : device.stopTrace();
  const elapsed = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 100));
  observer.disconnect();
  const max = Math.max(0, ...pauses);
  const events = trace?.header.events ?? 0;
  const size =
    mode === "file" || mode === "plain" ? `, file ${(statSync(file).size / 1024 ** 2).toFixed(1)} MiB` : "";
  console.log(
    `decode ${STEPS} steps, trace ${mode}: ${events} events, ${elapsed.toFixed(0)} ms, ${pauses.length} GCs, ` +
      `longest ${max.toFixed(1)} ms, total ${pauses.reduce((a, b) => a + b, 0).toFixed(0)} ms${size}`,
  );
  device.close();
}
const modes = process.argv.includes("--decode-only")
  ? process.argv.slice(process.argv.indexOf("--decode-only") + 1)
  : ["none", "memory", "file"];
for (const mode of modes) await decode(mode);
if (process.argv.includes("--decode-only")) process.exit(0);

// 3. A malloc + free pair, ns (best of three runs of 200,000; 20,000 under stacks).
async function pair(label, options, mallocOptions, count = 200_000) {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < 3; run++) {
    const device = open();
    if (options !== undefined) device.startTrace(options);
    const started = performance.now();
    for (let index = 0; index < count; index++) device.malloc(4096, mallocOptions).free();
    best = Math.min(best, ((performance.now() - started) * 1e6) / count);
    if (options !== undefined) device.stopTrace();
    device.close();
    await yieldNow();
  }
  console.log(`malloc + free, ${label}: ${best.toFixed(0)} ns`);
}
await pair("no trace", undefined, undefined);
await pair("no trace, labelled", undefined, { label: "kv-cache" });
await pair("traced in memory", { name: "pair" }, undefined);
await pair("traced in memory, labelled", { name: "pair" }, { label: "kv-cache" });
await pair("traced to a gzip file", { name: "pair", file: join(folder, "pair.ndjson.gz") }, undefined);
await pair("traced with 8 stack frames", { name: "pair", stacks: 8 }, undefined, 20_000);
rmSync(folder, { recursive: true, force: true });
