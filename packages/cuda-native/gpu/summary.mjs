#!/usr/bin/env node
// Puts the bench's figures (bench/cuda-bench.mjs --json) and PyTorch's (gpu/torch_replay.py --json), from one
// run on one GPU, side by side as Markdown tables (what the package README keeps).
// Usage: node gpu/summary.mjs BENCH.json TORCH.json [CHECKPOINT.json] [TORCH-EXPANDABLE.json]
import { readFileSync } from "node:fs";

const [benchPath, torchPath, checkpointPath, expandablePath] = process.argv.slice(2);
const read = (path) => {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return {};
  }
};
const bench = read(benchPath);
if (checkpointPath !== undefined) bench.checkpoint = read(checkpointPath).checkpoint;
let torch;
try {
  torch = JSON.parse(readFileSync(torchPath, "utf8"));
} catch {
  torch = { mallocFree: [], traces: [] };
}
const MIB = 1024 ** 2;
const lines = [];
const row = (cells) => lines.push(`| ${cells.join(" | ")} |`);
const fixed = (value, digits = 0) => (typeof value === "number" ? value.toFixed(digits) : "—");

lines.push(
  `${bench.date} · ${bench.gpu} · CUDA driver API ${bench.driverVersion} · Node.js ${bench.node}${torch.torch ? ` · PyTorch ${torch.torch}` : ""}`,
  "",
);
lines.push("**malloc + free per pair** (median ns)", "");
row([
  "bytes",
  "Device, cached",
  "cached, safetyNet off",
  "cuMemAlloc+cuMemFree (C++)",
  "newBuffer+release (JS, a miss)",
  "× cheaper than the driver",
  "× (safetyNet off)",
  "torch.empty+del, cached",
]);
row(["---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]);
for (const entry of bench.mallocFree ?? []) {
  const t = torch.mallocFree.find((candidate) => candidate.bytes === entry.bytes);
  row([
    entry.bytes,
    fixed(entry.cachedDeviceNs),
    fixed(entry.cachedNoSafetyNetNs),
    fixed(entry.driverPairNs),
    fixed(entry.backendPairNs),
    fixed(entry.ratioDriver),
    fixed(entry.ratioDriverNoSafetyNet),
    fixed(t?.cachedTorchNs),
  ]);
}
const expandable = expandablePath === undefined ? { traces: [] } : read(expandablePath);
expandable.traces ??= [];
lines.push(
  "",
  "**traces**: ns per event, cold (a fresh allocator) and warm (the same trace again); peak reserved (nuvec's " +
    "`peakReserved`, PyTorch's `max_memory_reserved()`); driver allocations (nuvec: `cuMemAlloc` calls; " +
    "PyTorch: `num_device_alloc`, every `cudaMalloc` or `cuMemCreate`+`cuMemMap`) and frees in the cold pass, driver allocations in the warm pass",
  "",
);
row([
  "trace",
  "allocator",
  "cold ns/event",
  "warm ns/event",
  "peak reserved MiB",
  "driver allocations",
  "driver frees",
  "warm driver allocations",
]);
row(["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"]);
const names = [...new Set((bench.traces ?? []).map((entry) => entry.trace))];
const torchModes = [
  ["PyTorch default", torch],
  ["PyTorch expandable_segments", expandable],
];
for (const name of names) {
  for (const policy of ["segments", "segments fixed", "bounded", "mlx"]) {
    const entry = bench.traces.find((candidate) => candidate.trace === name && candidate.policy === policy);
    if (entry === undefined) continue;
    row([
      name,
      `nuvec ${policy}`,
      fixed(entry.coldNsPerEvent),
      fixed(entry.warmNsPerEvent),
      fixed(entry.peakReserved / MIB, 1),
      entry.systemAllocations ?? "—",
      entry.systemReleases ?? "—",
      entry.warmSystemAllocations ?? "—",
    ]);
  }
  for (const [label, results] of torchModes) {
    const t = results.traces.find((entry) => entry.trace === name);
    if (t === undefined) continue;
    row([
      name,
      label,
      fixed(t.coldNsPerEvent),
      fixed(t.warmNsPerEvent),
      fixed(t.peakReserved / MIB, 1),
      t.deviceAllocCalls ?? t.cudaMallocCalls ?? "—",
      t.deviceFreeCalls ?? "—",
      t.warmDeviceAllocCalls ?? "—",
    ]);
  }
}
lines.push(
  "",
  "**targets** (nuvec `segments` against the better PyTorch mode on each figure): cold ≤, peak reserved ≤, " +
    "driver allocations ≤, warm ≤ 1/3",
  "",
);
row([
  "trace",
  "cold ns (nuvec / best PyTorch)",
  "peak reserved MiB",
  "driver allocations",
  "warm ns (nuvec / ⅓ best)",
]);
row(["---", "---", "---", "---", "---"]);
const verdict = (ours, theirs, met) =>
  typeof ours === "number" && typeof theirs === "number"
    ? `${met ? "✓" : "✗"} ${fixed(ours, ours < 100 ? 1 : 0)} / ${fixed(theirs, theirs < 100 ? 1 : 0)}`
    : "—";
for (const name of names) {
  const ours = bench.traces.find((entry) => entry.trace === name && entry.policy === "segments");
  const theirs = torchModes
    .map(([, results]) => results.traces.find((entry) => entry.trace === name))
    .filter(Boolean);
  if (ours === undefined || theirs.length === 0) continue;
  const best = (field) =>
    Math.min(...theirs.map((entry) => entry[field]).filter((value) => typeof value === "number"));
  const calls = Math.min(
    ...theirs
      .map((entry) => entry.deviceAllocCalls ?? entry.cudaMallocCalls)
      .filter((value) => typeof value === "number"),
  );
  const cold = best("coldNsPerEvent");
  const reserved = best("peakReserved") / MIB;
  const warm = best("warmNsPerEvent") / 3;
  row([
    name,
    verdict(ours.coldNsPerEvent, cold, ours.coldNsPerEvent <= cold),
    verdict(ours.peakReserved / MIB, reserved, ours.peakReserved / MIB <= reserved),
    verdict(ours.systemAllocations, calls, ours.systemAllocations <= calls),
    verdict(ours.warmNsPerEvent, warm, ours.warmNsPerEvent <= warm),
  ]);
}
lines.push("", "**1 GiB mapped checkpoint → device memory**", "");
row([
  "file on",
  "write MB/s",
  "write+fsync MB/s",
  "fault-in ms",
  "pageable GB/s",
  "register ms",
  "registered GB/s",
  "via device pointer GB/s",
  "note",
]);
row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---"]);
for (const entry of bench.checkpoint ?? []) {
  row([
    entry.where,
    fixed(entry.writeMBps),
    fixed(entry.writeAndSyncMBps),
    fixed(entry.faultInMs),
    fixed(entry.pageableGBps, 2),
    fixed(entry.registerMs),
    fixed(entry.registeredGBps, 2),
    fixed(entry.devicePointerGBps, 2),
    entry.error ??
      entry.note ??
      entry.lastWiringError ??
      (entry.copyCorrect === false ? "COPY MISMATCH" : ""),
  ]);
}
console.log(lines.join("\n"));
