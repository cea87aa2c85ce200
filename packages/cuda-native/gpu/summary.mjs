#!/usr/bin/env node
// Puts the bench's figures (bench/cuda-bench.mjs --json) and PyTorch's (gpu/torch_replay.py --json), from one
// run on one GPU, side by side as Markdown tables (what the package README keeps).
// Usage: node gpu/summary.mjs BENCH.json TORCH.json [CHECKPOINT.json]
import { readFileSync } from "node:fs";

const [benchPath, torchPath, checkpointPath] = process.argv.slice(2);
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
lines.push(
  "",
  "**traces** (ns per event; peak reserved MiB: nuvec's `peakReserved` vs `torch.cuda.max_memory_reserved()`)",
  "",
);
row([
  "trace",
  "events",
  "nuvec mlx cold",
  "nuvec mlx warm",
  "nuvec bounded cold",
  "nuvec bounded warm",
  "torch cold",
  "torch warm",
  "peak reserved mlx",
  "peak reserved bounded",
  "peak reserved torch",
]);
row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]);
const names = [...new Set((bench.traces ?? []).map((entry) => entry.trace))];
for (const name of names) {
  const mlx = bench.traces.find((entry) => entry.trace === name && entry.policy === "mlx");
  const bounded = bench.traces.find((entry) => entry.trace === name && entry.policy === "bounded");
  const t = torch.traces.find((entry) => entry.trace === name);
  row([
    name,
    mlx?.events,
    fixed(mlx?.coldNsPerEvent),
    fixed(mlx?.warmNsPerEvent),
    fixed(bounded?.coldNsPerEvent),
    fixed(bounded?.warmNsPerEvent),
    fixed(t?.coldNsPerEvent),
    fixed(t?.warmNsPerEvent),
    fixed(mlx && mlx.peakReserved / MIB, 1),
    fixed(bounded && bounded.peakReserved / MIB, 1),
    fixed(t && t.peakReserved / MIB, 1),
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
