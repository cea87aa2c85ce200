#!/usr/bin/env node
// Every policy on every workload of fixtures/traces (the three shared traces, the three from the examples'
// snapshots, the generated decode loop), configuration "default" of the traces' README (W 8 GiB, M 16 GiB):
// the workload's peak live bytes (size classes), each policy's peak reserved and its ratio to that, and its
// system allocations; for every policy, the system allocations made in the second half of the workload (its
// steady state), and for the decode loop the same per 1,000 steps. The README's table of all policies is
// this script's output. Run after `pnpm run build` (it replays dist/):
//   node bench/policy-table.mjs [--markdown]
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { ALLOCATOR_POLICIES, replayTrace } from "../dist/index.js";
import { readTrace } from "../dist/node.js";
import { decodeTrace } from "./generate-decode-trace.mjs";

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

/** The repository's copy of `name`'s events, and where each step starts for the generated decode loop. */
function workload(name) {
  const { events } = readTrace(resolve(tracesDir, `${name}.ndjson.gz`));
  if (name !== "decode-growing") return { events };
  // The fixture is the generator's default (5,000 steps, seed 7): its step boundaries come from the generator.
  const generated = decodeTrace();
  if (generated.events.length !== events.length) throw new Error("decode-growing differs from its generator");
  return { events, stepStarts: generated.stepStarts };
}

/** The replay of `events` under `policy`, with the system allocations counted at the trace's midpoint. */
function measure(events, policy, stepStarts) {
  const middle = Math.floor(events.length / 2);
  const middleStep = stepStarts === undefined ? undefined : Math.floor(stepStarts.length / 2);
  const middleEvent = middleStep === undefined ? middle : stepStarts[middleStep];
  let atMiddle = 0;
  const result = replayTrace(events, {
    ...DEFAULT,
    policy,
    onEvent: (_event, index, allocator) => {
      if (index === middleEvent - 1) atMiddle = allocator.memoryStats().systemAllocations;
    },
  });
  const secondHalf = result.stats.systemAllocations - atMiddle;
  const steps = stepStarts === undefined ? undefined : stepStarts.length - middleStep;
  return {
    peakLive: result.counters.peakLive,
    peakReserved: result.stats.peakReserved,
    systemAllocations: result.stats.systemAllocations,
    secondHalf,
    perThousandSteps: steps === undefined ? undefined : (secondHalf * 1000) / steps,
  };
}

const rows = [];
for (const name of TRACES) {
  const { events, stepStarts } = workload(name);
  const figures = Object.fromEntries(
    ALLOCATOR_POLICIES.map((policy) => [policy, measure(events, policy, stepStarts)]),
  );
  // The workload's own peak: the size classes live at once (the mlx and bounded policies count the same).
  const peakLive = figures.mlx.peakLive;
  if (figures.bounded.peakLive !== peakLive) throw new Error(`${name}: the live peaks differ`);
  for (const policy of ALLOCATOR_POLICIES) {
    const f = figures[policy];
    rows.push({
      trace: name,
      policy,
      events: events.length,
      peakLive,
      peakReserved: f.peakReserved,
      ratio: f.peakReserved / peakLive,
      systemAllocations: f.systemAllocations,
      vsMlx: f.systemAllocations / figures.mlx.systemAllocations,
      secondHalf: f.secondHalf,
      perThousandSteps: f.perThousandSteps,
    });
  }
}

const mib = (bytes) => (bytes / MiB).toFixed(1);
console.log(
  `node ${process.version}; configuration "default" (W 8 GiB, M 16 GiB); the second half: of the events (of the steps for decode-growing)\n`,
);
console.log(
  "| workload | policy | peak live MiB | peak reserved MiB | reserved / live | system allocations | vs mlx | in the second half |",
);
console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const row of rows) {
  const steady =
    row.perThousandSteps === undefined
      ? `${row.secondHalf}`
      : `${row.secondHalf} (${row.perThousandSteps.toFixed(1)} per 1,000 steps)`;
  console.log(
    `| ${row.trace} | ${row.policy} | ${mib(row.peakLive)} | ${mib(row.peakReserved)} | ${row.ratio.toFixed(2)} | ${row.systemAllocations} | ${row.vsMlx.toFixed(2)}× | ${steady} |`,
  );
}
if (process.argv.includes("--json")) console.log(JSON.stringify(rows, null, 1));
