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
//
// The options, the backend and the results are in cuda-bench-setup.mjs; sections 2 and 3 in
// cuda-bench-traces.mjs and cuda-bench-checkpoint.mjs.
import { performance } from "node:perf_hooks";
import { Device } from "@nuvec/device";
import { checkpoint } from "./cuda-bench-checkpoint.mjs";
import { backend, MIB, median, publish, quick, save, sections } from "./cuda-bench-setup.mjs";
import { addressSpaces, traces } from "./cuda-bench-traces.mjs";

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

if (sections.includes("malloc")) mallocFree();
if (sections.includes("traces")) {
  addressSpaces();
  traces();
}
if (sections.includes("checkpoint")) checkpoint();
save();
