// What the sections of the CUDA bench (cuda-bench.mjs) share: its options, the CUDA backend (or the process
// ends, nothing measured, where there is none), the results with the machine's facts, and how a table is
// printed and saved. Apart so that each section reads on its own.
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { loadCudaBackend } from "@nuvec/cuda-native";

/** 1 MiB and 1 GiB in bytes. */
export const MIB = 1024 ** 2;
export const GIB = 1024 ** 3;
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index >= 0 && index + 1 < args.length ? args[index + 1] : fallback;
};
/** --quick: smaller sizes and fewer repeats. */
export const quick = args.includes("--quick");
/** --traces: the folder of the shared traces (section 2 is skipped without it). */
export const tracesDirectory = option("--traces", undefined);
const jsonPath = option("--json", undefined);
/** --checkpoint-dirs: the folders the checkpoint is written in (tmpfs and disk by default). */
export const checkpointDirs = option("--checkpoint-dirs", `/dev/shm,${tmpdir()}`).split(",").filter(Boolean);
/** --sections: which of malloc, traces and checkpoint run. */
export const sections = option("--sections", "malloc,traces,checkpoint").split(",");

/** The CUDA backend (the process ends here, having measured nothing, where there is none). */
export let backend;
try {
  backend = loadCudaBackend();
} catch (error) {
  // `pnpm bench` runs every package's bench: where there is no GPU there is nothing to measure.
  if (error?.code !== "ERR_NUVEC_NATIVE_UNAVAILABLE") throw error;
  console.log(`no CUDA device here, nothing to measure: ${error.message}`);
  process.exit(0);
}
/** Everything measured, with the machine's facts, as --json writes it. */
export const results = {
  date: new Date().toISOString(),
  gpu: backend.name,
  driverVersion: backend.driverVersion,
  memorySize: backend.memorySize,
  node: process.version,
};
console.log(
  `${backend.name}, driver API ${backend.driverVersion}, ${(backend.memorySize / GIB).toFixed(1)} GiB, Node.js ${process.version}`,
);

/** The median of `values`. */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Writes what was measured so far (a later step that never returns leaves the earlier figures). */
export function save() {
  if (jsonPath !== undefined) writeFileSync(jsonPath, `${JSON.stringify(results, null, 2)}\n`);
}

/** Stores `rows` under `key` in the results, saves them, and prints them as `columns` makes each row. */
export function publish(key, rows, title, columns) {
  results[key] = rows;
  save();
  console.log(`\n${title}`);
  console.table(rows.map(columns));
}
