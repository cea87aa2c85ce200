#!/usr/bin/env node
// Replays each shared trace (../shared/traces beside the repository) through the built allocator and prints
// nanoseconds per event (best of several runs; reading and parsing excluded), both policies side by side,
// and the allocator's own memory per cached buffer. Run after `pnpm run build`:
//   pnpm --filter @nuvec/allocator bench            (or: node bench/replay-bench.mjs [--runs N])
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { CachingAllocator, CountingBufferSource, replayTrace } from "../dist/index.js";
import { readTrace } from "../dist/node.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repoRoot = resolve(packageDir, "../..");
const tracesDir = resolve(repoRoot, "../shared/traces");
const runsFlag = process.argv.indexOf("--runs");
// Short traces finish a run in under a millisecond: keep going for a minimum time too, so the JIT is warm.
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 25;
const MINIMUM_MILLISECONDS = 400;
const TRACES = ["gpt2-generate", "bert-dynamic", "resnet50-train"];
const DEFAULT = { workingSet: 8589934592, memorySize: 17179869184 };

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
// Twice: one collection can leave survivors of the young generation in `heapUsed`.
const collectGarbage = () => {
  gc();
  gc();
};

function best(events, options) {
  let fastest = Number.POSITIVE_INFINITY;
  let result;
  const start = performance.now();
  for (let run = 0; run < runs || performance.now() - start < MINIMUM_MILLISECONDS; run++) {
    result = replayTrace(events, options);
    fastest = Math.min(fastest, result.nsPerEvent);
  }
  return { result, nsPerEvent: fastest };
}

function memoryPerCachedBuffer(count) {
  const source = new CountingBufferSource({ workingSet: 2 ** 50 });
  collectGarbage();
  const allocator = new CachingAllocator(source);
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

if (!existsSync(tracesDir)) {
  console.log(`no traces at ${tracesDir}: nothing to replay`);
} else {
  console.log(
    `node ${process.version}, best of at least ${runs} runs and ${MINIMUM_MILLISECONDS} ms per row, configuration "default" (W 8 GiB, M 16 GiB)\n`,
  );
  console.log("| trace | policy | events | ns/event | reserved/live | system allocations | cache hits |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const trace of TRACES) {
    const { events } = readTrace(resolve(tracesDir, `${trace}.ndjson.gz`));
    const variants = {
      mlx: { policy: "mlx" },
      bounded: { policy: "bounded" },
      "bounded, largest first, 1.2": { policy: "bounded", boundedRelease: "largest", reserveRatio: 1.2 },
    };
    let mlxAllocations;
    for (const [name, variant] of Object.entries(variants)) {
      const { result, nsPerEvent } = best(events, { ...DEFAULT, ...variant });
      const { peakReserved, peakLive, cacheHits } = result.counters;
      const allocations = result.stats.systemAllocations;
      mlxAllocations ??= allocations;
      const ratio = name === "mlx" ? "" : ` (${(allocations / mlxAllocations).toFixed(2)}× mlx)`;
      console.log(
        `| ${trace} | ${name} | ${result.events} | ${nsPerEvent.toFixed(1)} | ${(peakReserved / peakLive).toFixed(2)} | ${allocations}${ratio} | ${cacheHits} |`,
      );
    }
  }
}
let memory = memoryPerCachedBuffer(200_000);
for (let attempt = 0; attempt < 2; attempt++) {
  const again = memoryPerCachedBuffer(200_000);
  if (again.bytes < memory.bytes) memory = again;
}
console.log(
  `\nallocator memory per cached buffer: ${memory.bytes.toFixed(0)} bytes (${memory.cached} cached, 4096 lengths)`,
);
