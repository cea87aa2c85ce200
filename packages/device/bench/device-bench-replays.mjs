// Section 3 of the Device bench (device-bench.mjs): a replay program (a trace's allocations and frees through
// a Device over the mock) against the policy alone on the same pre-read events, per event, with the figures
// both must agree on checked first. Warm: one Device and one allocator each replay the trace again and again
// (the first pass, which fills the cache, not measured), as a runtime repeats a step and as the CUDA bench's
// warm column does; the same loop drives both, each side compiled on its own, and the sides take turns
// measurement by measurement. Cold: a new Device over a new mock per replay against `replayTrace` (which
// opens its own allocator). Apart from the micro rows: this one measures a whole program, not one call.

import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CachingAllocator, replayTrace } from "@nuvec/allocator";
import { readTrace } from "@nuvec/allocator/node";
import { MockBackend } from "@nuvec/metal-native/mock";
// The allocator bench's generated decode trace (a long one: the shared traces are short).
import { decodeTrace } from "../../allocator/bench/decode-trace.mjs";
import { Device } from "../dist/index.js";
import { bestOf, GiB, MEASUREMENTS, MILLISECONDS, stopwatch } from "./device-bench-measure.mjs";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tracesDir = resolve(packageDir, "../../fixtures/traces");

// MLX's policy on both sides: the program's Device and replayTrace replay the same allocator.
const DEFAULT = { workingSet: 8 * GiB, memorySize: 16 * GiB, policy: "mlx" };

/**
 * A runtime's loop over a trace (allocations and frees; the shared traces have nothing else): the mock
 * without a call log, the live buffers kept as `replayTrace` keeps its allocations: a typed array from id to
 * slot and a compact array of the live ones. A plain array indexed by id, as long as the trace's ids (67,778
 * on gpt2-generate, 314,159 on the decode trace), costs more than the Device itself: storing each new buffer
 * into that large, old array takes the engine's write barrier and the collector's remembered set, about
 * 110–170 ns per event on those two traces over a device that does nothing, against 7–9 ns with slots.
 */
function replayProgram(events, deviceOptions, ids = idCount(events)) {
  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: DEFAULT.workingSet,
    memorySize: DEFAULT.memorySize,
    maxBufferLength: DEFAULT.workingSet,
    callLogLimit: 0,
  });
  const device = Device.open({ backend, policy: "mlx", ...deviceOptions });
  const slotOf = new Int32Array(ids); // slot + 1; 0: not live
  const live = [];
  const freeSlots = [];
  for (const event of events) {
    switch (event[0]) {
      case "a": {
        const slot = freeSlots.length > 0 ? freeSlots.pop() : live.length;
        live[slot] = device.malloc(event[2]);
        slotOf[event[1]] = slot + 1;
        break;
      }
      case "f": {
        const slot = slotOf[event[1]] - 1;
        if (slot >= 0) {
          live[slot].free();
          live[slot] = undefined;
          freeSlots.push(slot);
          slotOf[event[1]] = 0;
        }
        break;
      }
      default:
        throw new Error(`the bench replays allocations and frees only, not ${JSON.stringify(event)}`);
    }
  }
  const stats = device.memoryStats();
  const counters = device.counters();
  for (const buffer of live) buffer?.free();
  device.close();
  return {
    systemAllocations: stats.systemAllocations,
    cacheHits: counters.cacheHits,
    peakActive: stats.peakActive,
  };
}

/** One more than the largest id the trace names: the length of the id-to-slot array. */
function idCount(events) {
  let ids = 0;
  for (const event of events) if (event[1] + 1 > ids) ids = event[1] + 1;
  return ids;
}

/**
 * One warm pass, compiled per side so that each side's calls stay monomorphic: the trace's allocations and
 * frees through `context.target`, then a free of what the trace leaves live, so the next pass starts from the
 * same state with the cache warm. The live buffers are kept as in {@link replayProgram}.
 */
function warmPassOf(mallocCall, freeCall) {
  return new Function(
    "context",
    `const { events, target, slotOf, live, freeSlots } = context;
    for (const event of events) {
      if (event[0] === "a") {
        const slot = freeSlots.length > 0 ? freeSlots.pop() : live.length;
        live[slot] = ${mallocCall};
        slotOf[event[1]] = slot + 1;
      } else {
        const slot = slotOf[event[1]] - 1;
        if (slot >= 0) {
          const allocation = live[slot];
          ${freeCall};
          live[slot] = undefined;
          freeSlots.push(slot);
          slotOf[event[1]] = 0;
        }
      }
    }
    for (let slot = 0; slot < live.length; slot++) {
      const allocation = live[slot];
      if (allocation !== undefined) {
        ${freeCall};
        live[slot] = undefined;
        freeSlots.push(slot);
      }
    }
    slotOf.fill(0);`,
  );
}

/** The policy alone: MLX's allocator over buffers that cost nothing (section 1's allocator alone). */
function policyAlone() {
  return new CachingAllocator(
    {
      recommendedMaxWorkingSetSize: DEFAULT.workingSet,
      memorySize: DEFAULT.memorySize,
      maxBufferLength: DEFAULT.workingSet,
      resourceLimit: 499000,
      pageSize: 16384,
      acquire: (bytes) => ({ bytes }),
      release: () => {},
    },
    { policy: "mlx" },
  );
}

/** A Device over the mock without a call log, as {@link replayProgram} opens. */
function programDevice(deviceOptions = {}) {
  const backend = new MockBackend({
    recommendedMaxWorkingSetSize: DEFAULT.workingSet,
    memorySize: DEFAULT.memorySize,
    maxBufferLength: DEFAULT.workingSet,
    callLogLimit: 0,
  });
  return Device.open({ backend, policy: "mlx", ...deviceOptions });
}

/**
 * ns per event of warm passes, for each side (`{ target, pass }`): each target replays the trace once (not
 * measured) and once more as a warm-up, then the sides take turns, one measurement each, so that a slow
 * stretch of a shared machine does not fall on one side only; each side's figure is its best.
 */
function warmPerEvent(events, ids, sides) {
  const milliseconds = 2 * MILLISECONDS;
  const runs = sides.map(({ target, pass }) => {
    const context = { events, target, slotOf: new Int32Array(ids), live: [], freeSlots: [] };
    pass(context);
    return (ms) => perEvent(() => pass(context), events, ms);
  });
  for (const run of runs) run(milliseconds / 2);
  const best = runs.map(() => ({ wall: Number.POSITIVE_INFINITY, cpu: Number.POSITIVE_INFINITY }));
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++) {
    runs.forEach((run, side) => {
      const { wall, cpu } = run(milliseconds);
      best[side].wall = Math.min(best[side].wall, wall);
      best[side].cpu = Math.min(best[side].cpu, cpu);
    });
  }
  return best;
}

const allocatorPass = warmPassOf("target.malloc(event[2])", "target.free(allocation)");
const devicePass = warmPassOf("target.malloc(event[2])", "allocation.free()");

function perEvent(replay, events, milliseconds) {
  const start = performance.now();
  const elapsed = stopwatch();
  let replayed = 0;
  do {
    replay();
    replayed += events.length;
  } while (performance.now() - start < milliseconds);
  const { wall, cpu } = elapsed();
  return { wall: wall / replayed, cpu: cpu / replayed };
}

const traces = [];
/** Measures and prints the replay rows: each shared trace (when present) and the generated decode trace. */
export function replayRows() {
  if (existsSync(tracesDir)) {
    for (const name of ["gpt2-generate", "bert-dynamic", "resnet50-train"]) {
      traces.push({ name, events: readTrace(resolve(tracesDir, `${name}.ndjson.gz`)).events });
    }
  } else {
    console.log(`\nno shared traces at ${tracesDir}: the generated trace only`);
  }
  traces.push({ name: "decode-long (generated, seed 15)", events: decodeTrace({ seed: 15, tokens: 1000 }) });

  const ratio = (value) => `${value.toFixed(1)}× ${value <= 2 ? "✓" : "✗"}`;
  console.log(
    `\nwarm replays: the same trace again through one Device over the mock vs MLX's allocator alone, ns per event, measurements of ≥ ${2 * MILLISECONDS} ms\n`,
  );
  console.log(
    "| trace | events | policy alone | program | program / policy (goal ≤ 2×) | the same, CPU time | program, safetyNet: false (CPU time) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const { name, events } of traces) {
    const ids = idCount(events);
    const allocator = policyAlone();
    const device = programDevice();
    const unsafe = programDevice({ safetyNet: false });
    const [policyNs, programNs, unsafeNs] = warmPerEvent(events, ids, [
      { target: allocator, pass: allocatorPass },
      { target: device, pass: devicePass },
      { target: unsafe, pass: devicePass },
    ]);
    // The same policy on both sides: one more pass each, the same hits and misses.
    const before = [allocator.counters(), device.counters()];
    allocatorPass({ events, target: allocator, slotOf: new Int32Array(ids), live: [], freeSlots: [] });
    devicePass({ events, target: device, slotOf: new Int32Array(ids), live: [], freeSlots: [] });
    const after = [allocator.counters(), device.counters()];
    for (const figure of ["cacheHits", "cacheMisses", "systemReleases"]) {
      const [policy, program] = [0, 1].map((side) => after[side][figure] - before[side][figure]);
      if (program !== policy)
        throw new Error(`${name}, warm: the program's ${figure} ${program} ≠ ${policy}`);
    }
    device.close();
    unsafe.close();
    const wall = programNs.wall / policyNs.wall;
    const cpu = programNs.cpu / policyNs.cpu;
    console.log(
      `| ${name} | ${events.length} | ${policyNs.wall.toFixed(1)} | ${programNs.wall.toFixed(1)} | ${ratio(wall)} | ${policyNs.cpu.toFixed(1)} vs ${programNs.cpu.toFixed(1)}: ${ratio(cpu)} | ${unsafeNs.wall.toFixed(1)} (${unsafeNs.cpu.toFixed(1)}): ${(unsafeNs.cpu / policyNs.cpu).toFixed(1)}× |`,
    );
  }

  console.log(
    `\ncold replays: a new Device over a new mock per replay vs replayTrace alone, ns per event, measurements of ≥ ${2 * MILLISECONDS} ms\n`,
  );
  console.log("| trace | events | replayTrace | program | program / replayTrace | the same, CPU time |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const { name, events } of traces) {
    const policy = replayTrace(events, DEFAULT);
    const program = replayProgram(events, {});
    for (const figure of ["systemAllocations", "cacheHits", "peakActive"]) {
      const expected = figure === "cacheHits" ? policy.counters.cacheHits : policy.stats[figure];
      if (program[figure] !== expected)
        throw new Error(`${name}: the program's ${figure} ${program[figure]} ≠ ${expected}`);
    }
    const policyNs = bestOf(
      (ms) => perEvent(() => replayTrace(events, DEFAULT), events, ms),
      2 * MILLISECONDS,
    );
    const ids = idCount(events);
    const programNs = bestOf(
      (ms) => perEvent(() => replayProgram(events, {}, ids), events, ms),
      2 * MILLISECONDS,
    );
    console.log(
      `| ${name} | ${events.length} | ${policyNs.wall.toFixed(1)} | ${programNs.wall.toFixed(1)} | ${(programNs.wall / policyNs.wall).toFixed(1)}× | ${policyNs.cpu.toFixed(1)} vs ${programNs.cpu.toFixed(1)}: ${(programNs.cpu / policyNs.cpu).toFixed(1)}× |`,
    );
  }
}
