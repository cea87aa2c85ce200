// Section 2 of the CUDA bench (cuda-bench.mjs): the shared traces replayed through a Device over the CUDA
// backend under the segments, bounded and mlx policies (ns per event, peak reserved, driver calls), and the
// cost of the expandable segment's address-space calls against cuMemAlloc. Apart from the malloc pairs and
// the checkpoint copy, which measure single calls and bandwidth.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gunzipSync } from "node:zlib";
import { Device } from "@nuvec/device";
import { backend, MIB, publish, tracesDirectory } from "./cuda-bench-setup.mjs";

function readTraceEvents(path) {
  const lines = gunzipSync(readFileSync(path)).toString("utf8").split("\n");
  const events = [];
  let header;
  for (const line of lines) {
    if (line.length === 0) continue;
    const value = JSON.parse(line);
    if (Array.isArray(value)) events.push(value);
    else header = value;
  }
  return { header, events };
}

function replay(device, events) {
  const live = new Map();
  const start = performance.now();
  for (const event of events) {
    if (event[0] === "a") live.set(event[1], device.malloc(event[2]));
    else if (event[0] === "f") {
      live.get(event[1]).free();
      live.delete(event[1]);
    }
  }
  const elapsed = performance.now() - start;
  for (const buffer of live.values()) buffer.free();
  return (elapsed * 1e6) / events.length;
}

/** Times the backend's allocating calls until `restore()` (the Device calls them through the backend object). */
function timeDriverCalls() {
  let total = 0;
  const names = ["newBuffer", "mapMemory", "unmapMemory", "reserveAddressSpace"];
  const originals = new Map();
  for (const name of names) {
    const original = backend[name];
    if (typeof original !== "function") continue;
    originals.set(name, Object.getOwnPropertyDescriptor(backend, name));
    backend[name] = (...args) => {
      const start = performance.now();
      try {
        return original.apply(backend, args);
      } finally {
        total += performance.now() - start;
      }
    };
  }
  return {
    milliseconds: () => total,
    restore() {
      for (const [name, descriptor] of originals) {
        if (descriptor === undefined) delete backend[name];
        else Object.defineProperty(backend, name, descriptor);
      }
    },
  };
}

/** ns per mapMemory + unmapMemory of `bytes` in one address space, and per reserve + release. */
export function addressSpaces() {
  if (backend.mapGranularity === undefined) return;
  const rows = [];
  for (const bytes of [2 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]) {
    const space = backend.reserveAddressSpace(1024 * MIB);
    const count = 20;
    let mapNs = 0;
    let unmapNs = 0;
    for (let index = 0; index < count; index++) {
      let start = performance.now();
      backend.mapMemory(space, 0, bytes);
      mapNs += (performance.now() - start) * 1e6;
      start = performance.now();
      backend.unmapMemory(space, 0, bytes);
      unmapNs += (performance.now() - start) * 1e6;
    }
    space.release();
    const pairs = 20;
    const start = performance.now();
    for (let index = 0; index < pairs; index++) backend.newBuffer(bytes).release();
    const allocNs = ((performance.now() - start) * 1e6) / pairs;
    rows.push({ bytes, mapNs: mapNs / count, unmapNs: unmapNs / count, allocFreeNs: allocNs });
  }
  publish(
    "addressSpaces",
    rows,
    "mapMemory / unmapMemory against newBuffer + release (ns per call)",
    (row) => ({
      MiB: row.bytes / MIB,
      "mapMemory ns": Math.round(row.mapNs),
      "unmapMemory ns": Math.round(row.unmapNs),
      "newBuffer+release ns": Math.round(row.allocFreeNs),
    }),
  );
}

/** Section 2: the shared traces replayed through a Device under each policy (when --traces names their folder). */
export function traces() {
  if (tracesDirectory === undefined) return;
  const rows = [];
  const files = readdirSync(tracesDirectory)
    .filter((name) => name.endsWith(".ndjson.gz"))
    .sort();
  for (const file of files) {
    const { events } = readTraceEvents(join(tracesDirectory, file));
    const variants = [
      { name: "segments", options: { policy: "segments" } },
      { name: "segments fixed", options: { policy: "segments", segments: { expandable: false } } },
      { name: "bounded", options: { policy: "bounded" } },
      { name: "mlx", options: { policy: "mlx" } },
    ];
    for (const { name: policy, options } of variants) {
      // Three fresh Devices (each pass from an empty cache is cold); the median cold and the best warm,
      // and the time spent in the backend's allocating calls (newBuffer, mapMemory, unmapMemory).
      const runs = [];
      for (let repeat = 0; repeat < 3; repeat++) {
        const freeBefore = backend.memoryInfo().free;
        const driver = timeDriverCalls();
        const device = Device.open({ backend, ...options });
        const coldNs = replay(device, events);
        const coldDriverMs = driver.milliseconds();
        const cold = device.counters();
        const coldStats = device.memoryStats();
        const driverPeak = freeBefore - backend.memoryInfo().free; // what the cache still holds on the GPU
        const warmNs = Math.min(replay(device, events), replay(device, events));
        const warm = device.counters();
        driver.restore();
        runs.push({
          coldNs,
          warmNs,
          coldDriverMs,
          cold,
          coldStats,
          driverPeak,
          warmSystemAllocations: warm.systemAllocations - cold.systemAllocations,
        });
        device.close();
      }
      runs.sort((a, b) => a.coldNs - b.coldNs);
      const median = runs[1];
      rows.push({
        trace: file.replace(".ndjson.gz", ""),
        policy,
        events: events.length,
        coldNsPerEvent: median.coldNs,
        coldDriverMs: median.coldDriverMs,
        warmNsPerEvent: Math.min(...runs.map((run) => run.warmNs)),
        peakReserved: median.coldStats.peakReserved,
        peakActive: median.coldStats.peakActive,
        cacheAtEnd: median.coldStats.cache,
        driverBytesHeldAtEnd: median.driverPeak,
        systemAllocations: median.cold.systemAllocations,
        systemReleases: median.cold.systemReleases,
        warmSystemAllocations: Math.max(...runs.map((run) => run.warmSystemAllocations)),
        cacheHits: median.cold.cacheHits,
      });
    }
  }
  const title = "traces through the Device over CUDA (cold: from an empty cache; warm: the same again)";
  publish("traces", rows, title, (row) => ({
    trace: row.trace,
    policy: row.policy,
    events: row.events,
    "cold ns/event": Math.round(row.coldNsPerEvent),
    "cold: in driver calls ms": row.coldDriverMs.toFixed(1),
    "warm ns/event": Math.round(row.warmNsPerEvent),
    "peak reserved MiB": (row.peakReserved / MIB).toFixed(1),
    "cuMemAlloc calls": row.systemAllocations,
    "cuMemFree calls": row.systemReleases,
    "warm cuMemAlloc": row.warmSystemAllocations,
  }));
}
