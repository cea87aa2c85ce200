// How the Device bench (device-bench.mjs) measures: its options, loops compiled one per row, a stopwatch of
// wall-clock and CPU time, the best of several measurements after a warm-up, and a row of the table. Apart
// from the rows so that each section measures the same way.

import { performance } from "node:perf_hooks";

const flag = process.argv.indexOf("--milliseconds");
/** --milliseconds: how long each micro row is measured (the replays twice as long). */
export const MILLISECONDS = flag > 0 ? Number(process.argv[flag + 1]) : 500;
const measurementsFlag = process.argv.indexOf("--measurements");
// More measurements give a busy machine more chances at a quiet second.
/** --measurements: how many measurements each figure is the best of. */
export const MEASUREMENTS = measurementsFlag > 0 ? Number(process.argv[measurementsFlag + 1]) : 3;
/** 1 KiB and 1 GiB in bytes. */
export const KiB = 1024;
export const GiB = 1024 ** 3;

/**
 * A loop of `body` compiled on its own (`new Function`): each row gets its own type feedback, so what one
 * row calls does not make another row's call sites polymorphic.
 */
export function loopOf(body) {
  return new Function("context", "count", `for (let index = 0; index < count; index++) { ${body} }`);
}

/** A stopwatch of wall-clock and CPU time (the process's, V8's helper threads included). */
export function stopwatch() {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(cpu);
    return { wall: (performance.now() - wall) * 1e6, cpu: (used.user + used.system) * 1e3 };
  };
}

/** ns per iteration of `loop(context, batch)` run in batches for at least `milliseconds` ({ wall, cpu }). */
function measure(loop, context, milliseconds) {
  const batch = 10_000;
  const start = performance.now();
  const elapsed = stopwatch();
  let iterations = 0;
  do {
    loop(context, batch);
    iterations += batch;
  } while (performance.now() - start < milliseconds);
  const { wall, cpu } = elapsed();
  return { wall: wall / iterations, cpu: cpu / iterations };
}

/** The best of the measurements after a warm-up, wall-clock and CPU time apart. */
export function bestOf(run, milliseconds) {
  run(milliseconds / 2); // warm-up
  const best = { wall: Number.POSITIVE_INFINITY, cpu: Number.POSITIVE_INFINITY };
  for (let measurement = 0; measurement < MEASUREMENTS; measurement++) {
    const { wall, cpu } = run(milliseconds);
    best.wall = Math.min(best.wall, wall);
    best.cpu = Math.min(best.cpu, cpu);
  }
  return best;
}

/** The difference of two figures, wall-clock and CPU time apart. */
export const difference = (a, b) => ({ wall: a.wall - b.wall, cpu: a.cpu - b.cpu });

/** The best measurement of a loop of `body` over `context`. */
export const bestLoop = (body, context, milliseconds = MILLISECONDS) =>
  bestOf((ms) => measure(loopOf(body), context, ms), milliseconds);

/** Prints a row of the table: `ns` (wall-clock and CPU time) against `goal` when there is one. */
export const row = (what, ns, goal) => {
  const verdict = (value) => (goal === undefined ? "" : value <= goal ? " ✓" : " ✗");
  console.log(
    `| ${what} | ${ns.wall.toFixed(0)}${verdict(ns.wall)} | ${ns.cpu.toFixed(0)}${verdict(ns.cpu)} | ${goal === undefined ? "" : `≤ ${goal}`} |`,
  );
};
