#!/usr/bin/env node
// Every policy on every workload of fixtures/traces (the three shared traces, the three from the examples'
// snapshots, the generated decode loop), configuration "default" of the traces' README (W 8 GiB, M 16 GiB):
// the workload's peak live bytes (size classes), each policy's peak reserved and its ratio to that, and its
// system allocations; and the system allocations made in the second half of the workload's events (where a
// workload in a steady state makes none), for the decode loop also per 1,000 steps; and those of a second pass
// over the workload (everything the first left live freed, then the same events again). The README's table of all policies is
// this script's output. Run after `pnpm run build` (it replays dist/):
//   node bench/policy-table.mjs [--json]
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ALLOCATOR_POLICIES, replayTrace } from "../dist/index.js";
import { readTrace } from "../dist/node.js";

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tracesDir = resolve(packageDir, "../../fixtures/traces");
const DEFAULT = { workingSet: 8589934592, memorySize: 17179869184 };
const TRACES = [
  "gpt2-generate",
  "bert-dynamic",
  "resnet50-train",
  "inference-loop",
  "transformer-train",
  "toy-train",
  "decode-growing",
];
const MiB = 1024 * 1024;

// Every policy with its defaults, and the bounded policy with its other release orders.
const VARIANTS = [
  ...ALLOCATOR_POLICIES.map((policy) => ({ label: policy, options: { policy } })),
  { label: "bounded, largest first", options: { policy: "bounded", boundedRelease: "largest" } },
  { label: "bounded, least recent first", options: { policy: "bounded", boundedRelease: "least-recent" } },
];

/**
 * The events twice over, as a workload run again from the start: what is live at the end of the first pass is
 * freed, then the same events with ids past the first pass's. Returns them and where the second pass starts.
 */
export function twoPasses(events) {
  let nextId = 0;
  for (const event of events) if (event[0] === "a") nextId = Math.max(nextId, event[1] + 1);
  const live = new Set();
  for (const event of events) {
    if (event[0] === "a") live.add(event[1]);
    else if (event[0] === "f") live.delete(event[1]);
  }
  const second = events.map((event) =>
    event[0] === "a" ? ["a", event[1] + nextId, event[2]] : ["f", event[1] + nextId],
  );
  const all = [...events, ...[...live].map((id) => ["f", id])];
  return { events: [...all, ...second], secondStart: all.length };
}

/** The system allocations of a second pass over `events` with `options`. */
function secondPass(events, options) {
  const { events: both, secondStart } = twoPasses(events);
  let atStart = 0;
  const result = replayTrace(both, {
    ...DEFAULT,
    ...options,
    onEvent: (_event, index, allocator) => {
      if (index === secondStart - 1) atStart = allocator.memoryStats().systemAllocations;
    },
  });
  return result.stats.systemAllocations - atStart;
}

/** The replay of `events` with `options`, with the system allocations counted at the trace's midpoint. */
function measure(events, options) {
  const middle = Math.floor(events.length / 2);
  let atMiddle = 0;
  const result = replayTrace(events, {
    ...DEFAULT,
    ...options,
    onEvent: (_event, index, allocator) => {
      if (index === middle - 1) atMiddle = allocator.memoryStats().systemAllocations;
    },
  });
  return {
    peakLive: result.counters.peakLive,
    peakReserved: result.stats.peakReserved,
    systemAllocations: result.stats.systemAllocations,
    secondHalf: result.stats.systemAllocations - atMiddle,
    secondPass: secondPass(events, options),
  };
}

const rows = [];
for (const name of TRACES) {
  const { events } = readTrace(resolve(tracesDir, `${name}.ndjson.gz`));
  const figures = Object.fromEntries(VARIANTS.map(({ label, options }) => [label, measure(events, options)]));
  // The workload's own peak: the size classes live at once (the mlx and bounded policies count the same).
  const peakLive = figures.mlx.peakLive;
  if (figures.bounded.peakLive !== peakLive) throw new Error(`${name}: the live peaks differ`);
  for (const { label } of VARIANTS) {
    const f = figures[label];
    rows.push({
      trace: name,
      policy: label,
      events: events.length,
      peakLive,
      peakReserved: f.peakReserved,
      ratio: f.peakReserved / peakLive,
      systemAllocations: f.systemAllocations,
      vsMlx: f.systemAllocations / figures.mlx.systemAllocations,
      secondHalf: f.secondHalf,
      secondPass: f.secondPass,
    });
  }
}

const mib = (bytes) => (bytes / MiB).toFixed(1);
console.log(
  `node ${process.version}; configuration "default" (W 8 GiB, M 16 GiB); system allocations in the second half of the events\n`,
);
console.log(
  "| workload | policy | peak live MiB | peak reserved MiB | reserved / live | system allocations | vs mlx | in the second half | a second pass |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const row of rows) {
  // decode-growing's second half is its last 2,500 steps (to within 10 events: 210 a step, 24 more a request).
  const steady =
    row.trace === "decode-growing"
      ? `${row.secondHalf} (${((row.secondHalf * 1000) / 2500).toFixed(1)} per 1,000 steps)`
      : `${row.secondHalf}`;
  console.log(
    `| ${row.trace} | ${row.policy} | ${mib(row.peakLive)} | ${mib(row.peakReserved)} | ${row.ratio.toFixed(2)} | ${row.systemAllocations} | ${row.vsMlx.toFixed(2)}× | ${steady} | ${row.secondPass} |`,
  );
}
if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 1));
