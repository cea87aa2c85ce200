#!/usr/bin/env node
// What the native addon costs: `pnpm --filter @nuvec/metal-native bench` (after a build; imports ../dist).
//  - a trivial call across N-API;
//  - newBuffer + release for 256 B (heap), 64 KiB and 16 MiB (mmap);
//  - mapFile of a 1 GiB sparse file against fs.readFile of the same file: time, and resident memory after.
import { closeSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bench } from "tinybench";
import { loadNativeBackend } from "../dist/index.js";

// The raw addon's noop() (not part of the package's API): what one call across N-API costs.
const rawAddon = createRequire(import.meta.url)("../native/build/Release/nuvec_metal_native.node");

const backend = loadNativeBackend();
console.log(
  `${backend.name} (${backend.platform}), page ${backend.pageSize} B, Node.js ${process.version}\n`,
);

const bench = new Bench({ time: 500, warmupTime: 100 });
bench.add("native call (the addon's noop)", () => rawAddon.noop());
for (const [label, bytes] of [
  ["256 B", 256],
  ["64 KiB", 64 * 1024],
  ["16 MiB", 16 * 1024 * 1024],
]) {
  bench.add(`newBuffer + release, ${label}`, () => backend.newBuffer(bytes).release());
}
bench.add("newBuffer + contents + release, 64 KiB", () => {
  const buffer = backend.newBuffer(64 * 1024);
  buffer.contents();
  buffer.release();
});
const held = backend.newBuffer(64 * 1024);
held.contents();
bench.add("contents() again (the same view), 64 KiB", () => held.contents());
await bench.run();
held.release();
console.table(
  bench.tasks.map((task) => {
    const latency = task.result?.latency;
    return {
      task: task.name,
      "mean (ns)": latency ? Math.round(latency.mean * 1e6) : "n/a",
      "p99 (ns)": latency ? Math.round((latency.p99 ?? latency.mean) * 1e6) : "n/a",
    };
  }),
);

// RSS after: the most resident memory any round added while it held the data (a mapping is paged in only
// where it is read; fs.readFile copies every byte into a Buffer).
// A 1 GiB sparse file: no disk blocks, reads as zeros (the kernel fills the pages on demand).
const directory = mkdtempSync(join(tmpdir(), "nuvec-bench-"));
const path = join(directory, "sparse-1GiB.bin");
const GiB = 1024 ** 3;
const descriptor = openSync(path, "w");
ftruncateSync(descriptor, GiB);
closeSync(descriptor);

function residentBytes() {
  return (
    Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? Number.NaN) * 1024
  );
}
const mib = (bytes) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const rows = [];
try {
  const mapTimes = [];
  let mapRss = 0;
  for (let round = 0; round < 5; round += 1) {
    const before = residentBytes();
    const started = performance.now();
    const mapped = backend.mapFile(path);
    const view = new Uint8Array(mapped.contents());
    mapTimes.push(performance.now() - started);
    mapRss = Math.max(mapRss, residentBytes() - before);
    if (view[GiB - 1] !== 0) throw new Error("unexpected content");
    mapped.release();
  }
  rows.push({
    "1 GiB sparse file": "mapFile + contents()",
    "median (ms)": median(mapTimes).toFixed(3),
    "RSS after": mib(mapRss),
  });

  const readTimes = [];
  let readRss = 0;
  for (let round = 0; round < 3; round += 1) {
    const before = residentBytes();
    const started = performance.now();
    let data = await readFile(path);
    readTimes.push(performance.now() - started);
    readRss = Math.max(readRss, residentBytes() - before);
    if (data[GiB - 1] !== 0) throw new Error("unexpected content");
    data = undefined;
    globalThis.gc?.();
  }
  rows.push({
    "1 GiB sparse file": "fs.readFile",
    "median (ms)": median(readTimes).toFixed(1),
    "RSS after": mib(readRss),
  });
} finally {
  rmSync(directory, { recursive: true, force: true });
}
console.table(rows);
