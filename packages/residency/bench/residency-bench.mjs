// Measures the manager alone (the set handles below do nothing but count), on the built package:
// `pnpm --filter @nuvec/residency bench` (after `build`). Figures go to the README by hand.
import { Bench } from "tinybench";
import { Residency } from "../dist/index.js";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function backend() {
  let calls = 0;
  const handle = () => ({
    add() {
      calls++;
    },
    remove() {
      calls++;
    },
    commit() {
      calls++;
    },
    requestResidency() {
      calls++;
    },
  });
  return {
    supportsResidencySets: true,
    newResidencySet: handle,
    attachResidencySet() {},
    allocatedSize: (allocation) => allocation.size,
    calls: () => calls,
  };
}

/** A manager on a 64 GiB working set (5 %: 3.2 GiB per set) holding `count` wired allocations of `size`. */
function filled(count, size, capacity = 64 * GiB) {
  const residency = new Residency(backend(), { workingSet: 64 * GiB, maxPercentPerSet: null });
  residency.setWiredLimit(capacity);
  const items = Array.from({ length: count }, () => ({ size }));
  for (const item of items) residency.insert(item, false);
  return { residency, items };
}

const bench = new Bench({ time: 1000, warmupTime: 200 });

{
  const { residency } = filled(1000, MiB);
  const item = { size: MiB };
  bench.add("insert + erase, wired (1,000 allocations in set 0, first fit)", () => {
    residency.insert(item, false);
    residency.erase(item);
  });
}
{
  // 32 sets of 3.2 GiB each full: every placement scans all 32 and falls to the emptiest.
  const { residency } = filled(32 * 4, 820 * MiB, 200 * GiB);
  const item = { size: 820 * MiB };
  bench.add("insert + erase, wired (32 full sets, falls to the emptiest)", () => {
    residency.insert(item, false);
    residency.erase(item);
  });
}
{
  const { residency } = filled(1000, MiB, 1000 * MiB);
  const item = { size: MiB };
  bench.add("insert + erase, waiting (over the wired limit)", () => {
    residency.insert(item, false);
    residency.erase(item);
  });
}
for (const count of [1000, 10_000]) {
  const { residency } = filled(count, MiB);
  let grow = false;
  bench.add(`setWiredLimit 0 ↔ ${count} MiB over ${count.toLocaleString("en")} allocations of 1 MiB`, () => {
    residency.setWiredLimit(grow ? count * MiB : 0);
    grow = !grow;
  });
}

await bench.run();
console.table(
  bench.tasks.map((task) => ({
    task: task.name,
    "mean (µs)": Number((task.result.latency.mean * 1000).toFixed(3)),
    "p99 (µs)": Number((task.result.latency.p99 * 1000).toFixed(3)),
    "ops/s": Math.round(task.result.throughput.mean),
    samples: task.result.latency.samplesCount,
  })),
);
