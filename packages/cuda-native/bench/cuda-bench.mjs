#!/usr/bin/env node
// The CUDA backend measured on a GPU, side by side in one run (gpu/run.sh runs it, with
// gpu/torch_replay.py beside it for PyTorch's figures):
//
//  1. malloc + free: a cached buffer through the Device, against cuMemAlloc + cuMemFree per pair (timed in
//     C++, and through the backend from JavaScript, which is what a cache miss costs).
//  2. The shared traces replayed through a Device over the CUDA backend (real device memory on every miss),
//     `segments` (the CUDA default), `bounded` and `mlx` policies: ns per event, peak reserved (active +
//     cache) and driver calls.
//  3. A 1 GiB mapped checkpoint copied to device memory from pageable pages, then from the wired (registered)
//     mapping, in GB/s; first how fast the file is written and its pages faulted in, on tmpfs and on disk.
//
// Usage: node bench/cuda-bench.mjs [--traces DIR] [--json FILE] [--checkpoint-dirs DIR,DIR] [--quick]
// (pnpm --filter @nuvec/cuda-native bench runs it from dist on a machine with a GPU.)
import {
  closeSync,
  fsyncSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gunzipSync } from "node:zlib";
import { loadCudaBackend } from "@nuvec/cuda-native";
import { Device } from "@nuvec/device";

const MIB = 1024 ** 2;
const GIB = 1024 ** 3;
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index >= 0 && index + 1 < args.length ? args[index + 1] : fallback;
};
const quick = args.includes("--quick");
const tracesDirectory = option("--traces", undefined);
const jsonPath = option("--json", undefined);
const checkpointDirs = option("--checkpoint-dirs", `/dev/shm,${tmpdir()}`).split(",").filter(Boolean);
const sections = option("--sections", "malloc,traces,checkpoint").split(",");

let backend;
try {
  backend = loadCudaBackend();
} catch (error) {
  // `pnpm bench` runs every package's bench: where there is no GPU there is nothing to measure.
  if (error?.code !== "ERR_NUVEC_NATIVE_UNAVAILABLE") throw error;
  console.log(`no CUDA device here, nothing to measure: ${error.message}`);
  process.exit(0);
}
const results = {
  date: new Date().toISOString(),
  gpu: backend.name,
  driverVersion: backend.driverVersion,
  memorySize: backend.memorySize,
  node: process.version,
};
console.log(
  `${backend.name}, driver API ${backend.driverVersion}, ${(backend.memorySize / GIB).toFixed(1)} GiB, Node.js ${process.version}`,
);

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// ------------------------------------------------------------------------------------------------ 1.
/** Writes what was measured so far (a later step that never returns leaves the earlier figures). */
function save() {
  if (jsonPath !== undefined) writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
}

/** Stores `rows` under `key` in the results, saves them, and prints them as `columns` makes each row. */
function publish(key, rows, title, columns) {
  results[key] = rows;
  save();
  console.log(`\n${title}`);
  console.table(rows.map(columns));
}

/** Median ns per cached malloc + free pair through `device`. */
function cachedPair(device, bytes) {
  device.malloc(bytes).free();
  const pairs = quick ? 20_000 : 100_000;
  const runs = [];
  for (let run = 0; run < 5; run += 1) {
    const start = performance.now();
    for (let index = 0; index < pairs; index += 1) device.malloc(bytes).free();
    runs.push(((performance.now() - start) * 1e6) / pairs);
  }
  return median(runs);
}

function mallocFree() {
  const rows = [];
  const device = Device.open({ backend });
  // The safety net (a FinalizationRegistry for buffers dropped without free()) costs a register and an
  // unregister per pair; a runtime that frees every buffer can turn it off.
  const unguarded = Device.open({ backend, safetyNet: false });
  for (const bytes of [256, 64 * 1024, 16 * MIB, 256 * MIB]) {
    // The cached path: after the first malloc, every malloc is a cache hit.
    const cached = cachedPair(device, bytes);
    const cachedUnguarded = cachedPair(unguarded, bytes);
    const driverCount = bytes >= 16 * MIB ? 100 : 400;
    backend.timeDriverAllocFree(bytes, 10); // warm-up
    const driverRuns = [0, 1, 2].map(() => backend.timeDriverAllocFree(bytes, driverCount));
    const jsRuns = [];
    for (let run = 0; run < 3; run += 1) {
      const start = performance.now();
      for (let index = 0; index < driverCount; index += 1) backend.newBuffer(bytes).release();
      jsRuns.push(((performance.now() - start) * 1e6) / driverCount);
    }
    const driver = median(driverRuns);
    const throughBackend = median(jsRuns);
    rows.push({
      bytes,
      cachedDeviceNs: cached,
      cachedNoSafetyNetNs: cachedUnguarded,
      driverPairNs: driver,
      backendPairNs: throughBackend,
      ratioDriver: driver / cached,
      ratioBackend: throughBackend / cached,
      ratioDriverNoSafetyNet: driver / cachedUnguarded,
    });
  }
  device.close();
  unguarded.close();
  publish(
    "mallocFree",
    rows,
    "malloc + free per pair (median; cached = through the Device, a cache hit)",
    (row) => ({
      bytes: row.bytes,
      "Device cached ns": Math.round(row.cachedDeviceNs),
      "cached, safetyNet off": Math.round(row.cachedNoSafetyNetNs),
      "cuMemAlloc+cuMemFree ns (C++)": Math.round(row.driverPairNs),
      "newBuffer+release ns (JS)": Math.round(row.backendPairNs),
      "× cheaper than driver": Math.round(row.ratioDriver),
      "× cheaper than JS miss": Math.round(row.ratioBackend),
      "× (safetyNet off)": Math.round(row.ratioDriverNoSafetyNet),
    }),
  );
}

// ------------------------------------------------------------------------------------------------ 2.
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
function addressSpaces() {
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

function traces() {
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

// ------------------------------------------------------------------------------------------------ 3.
function gbps(bytes, milliseconds) {
  return bytes / (milliseconds / 1000) / 1e9;
}

function timeMs(body) {
  const start = performance.now();
  body();
  return performance.now() - start;
}

/** Writes `bytes` in 64 MiB chunks and fsyncs; gives up after `budgetMs` (a slow disk), saying how far it got. */
function writeFile(path, bytes, budgetMs) {
  const chunk = new Uint8Array(64 * MIB);
  for (let index = 0; index < chunk.length; index += 4096) chunk[index] = (index >>> 12) & 0xff;
  const descriptor = openSync(path, "w");
  const start = performance.now();
  let written = 0;
  try {
    while (written < bytes && performance.now() - start < budgetMs) {
      written += writeSync(descriptor, chunk, 0, Math.min(chunk.length, bytes - written));
    }
    const writtenMs = performance.now() - start;
    fsyncSync(descriptor);
    const syncedMs = performance.now() - start;
    return { written, writtenMs, syncedMs, complete: written === bytes };
  } finally {
    closeSync(descriptor);
  }
}

function checkpoint() {
  const bytes = quick ? 256 * MIB : GIB;
  const rows = [];
  for (const base of checkpointDirs) {
    let directory;
    try {
      directory = mkdtempSync(join(base, "nuvec-checkpoint-"));
    } catch (error) {
      rows.push({ where: base, error: String(error.message) });
      continue;
    }
    const path = join(directory, "checkpoint.bin");
    const row = { where: base, bytes };
    results.checkpoint = rows;
    rows.push(row);
    try {
      const write = writeFile(path, bytes, 60_000);
      row.writeMBps = write.written / (write.writtenMs / 1000) / 1e6;
      row.writeAndSyncMBps = write.written / (write.syncedMs / 1000) / 1e6;
      row.writeComplete = write.complete;
      if (!write.complete) {
        row.note = `wrote only ${(write.written / MIB).toFixed(0)} MiB in 60 s`;
        save();
        continue;
      }
      const mapping = backend.mapFile(path);
      const view = new Uint8Array(mapping.contents());
      // Fault every page in (what MAP_POPULATE would do), reading one byte per 4 KiB.
      let sum = 0;
      row.faultInMs = timeMs(() => {
        for (let offset = 0; offset < view.length; offset += 4096) sum += view[offset];
      });
      row.checksum = sum;
      const buffer = backend.newBuffer(mapping.length);
      buffer.write(view); // warm-up (and the device pages)
      row.pageableGBps = median(
        [0, 1, 2].map(() =>
          gbps(
            bytes,
            timeMs(() => buffer.write(view)),
          ),
        ),
      );
      save();
      console.log(`${base}: pageable copy ${row.pageableGBps.toFixed(2)} GB/s; registering the mapping…`);
      const set = backend.newResidencySet();
      set.add(mapping);
      set.commit();
      row.registerMs = timeMs(() => set.requestResidency());
      row.wiringFailures = set.wiringFailures;
      save();
      row.lastWiringError = set.lastWiringError;
      if (set.wiringFailures === 0) {
        row.registeredGBps = median(
          [0, 1, 2].map(() =>
            gbps(
              bytes,
              timeMs(() => buffer.write(view)),
            ),
          ),
        );
        row.devicePointerGBps = median(
          [0, 1, 2].map(() =>
            gbps(
              bytes,
              timeMs(() => backend.copyFromMapping(buffer, mapping)),
            ),
          ),
        );
        const check = buffer.read(bytes - 4096, 4096);
        row.copyCorrect = check.every((value, index) => value === view[bytes - 4096 + index]);
      }
      row.unregisterMs = timeMs(() => set.endResidency());
      set.release();
      buffer.release();
      mapping.release();
    } catch (error) {
      row.error = String(error.message);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
    save();
  }
  console.log(`\n${bytes / MIB} MiB mapped checkpoint → device memory`);
  console.table(
    rows.map((row) => ({
      where: row.where,
      "write MB/s": row.writeMBps?.toFixed(0),
      "write+fsync MB/s": row.writeAndSyncMBps?.toFixed(0),
      "fault-in ms": row.faultInMs?.toFixed(0),
      "pageable GB/s": row.pageableGBps?.toFixed(2),
      "register ms": row.registerMs?.toFixed(0),
      "registered GB/s": row.registeredGBps?.toFixed(2),
      "via device ptr GB/s": row.devicePointerGBps?.toFixed(2),
      note: row.error ?? row.note ?? row.lastWiringError ?? "",
    })),
  );
}

if (sections.includes("malloc")) mallocFree();
if (sections.includes("traces")) {
  addressSpaces();
  traces();
}
if (sections.includes("checkpoint")) checkpoint();
save();
