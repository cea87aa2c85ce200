// Builds and runs the C++ reference of the MLX policy (reference/mlx-policy.cc) for the replay bench: compiled
// with the system's g++ -O2 into a temporary folder, fed the same pre-read events as a compact binary file.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const source = resolve(dirname(fileURLToPath(import.meta.url)), "reference/mlx-policy.cc");

/**
 * Compiles the reference; returns a runner, or `{ skipped: why }` when g++ is missing or fails.
 * The runner's `dispose()` removes the temporary folder (the binary and the event files).
 */
export function buildReference() {
  const folder = mkdtempSync(join(tmpdir(), "nuvec-mlx-policy-"));
  const binary = join(folder, "mlx-policy");
  const compiled = spawnSync("g++", ["-O2", "-std=c++17", "-o", binary, source], { encoding: "utf8" });
  if (compiled.error !== undefined || compiled.status !== 0) {
    rmSync(folder, { recursive: true, force: true });
    const why =
      compiled.error?.code === "ENOENT"
        ? "no g++ on this machine"
        : `g++ failed: ${(compiled.error?.message ?? compiled.stderr).trim().slice(0, 400)}`;
    return { skipped: why };
  }
  let files = 0;
  return {
    /** Writes `events` (["a", id, bytes] / ["f", id]) as int64 pairs (id, bytes; -1 for a free). */
    writeEvents(events) {
      const pairs = new BigInt64Array(events.length * 2);
      for (let index = 0; index < events.length; index++) {
        const event = events[index];
        if (event[0] !== "a" && event[0] !== "f") {
          throw new Error(
            `the C++ reference replays allocations and frees only, not ${JSON.stringify(event)}`,
          );
        }
        pairs[2 * index] = BigInt(event[1]);
        pairs[2 * index + 1] = event[0] === "a" ? BigInt(event[2]) : -1n;
      }
      const path = join(folder, `events-${files++}.bin`);
      writeFileSync(path, pairs);
      return path;
    },
    /**
     * Replays an events file under a configuration ({ workingSet, memorySize, memoryLimit?, cacheLimit? });
     * with `timing` ({ milliseconds, measurements }) also measures ns per event. Returns the parsed figures.
     */
    run(eventsPath, configuration, timing) {
      const args = [
        eventsPath,
        String(configuration.workingSet),
        String(configuration.memorySize),
        configuration.memoryLimit === undefined ? "-" : String(configuration.memoryLimit),
        configuration.cacheLimit === undefined ? "-" : String(configuration.cacheLimit),
      ];
      if (timing !== undefined) args.push(String(timing.milliseconds), String(timing.measurements));
      const ran = spawnSync(binary, args, { encoding: "utf8", maxBuffer: 1 << 20 });
      if (ran.error !== undefined || ran.status !== 0) {
        throw new Error(`the C++ reference failed: ${(ran.error?.message ?? ran.stderr).trim()}`);
      }
      return JSON.parse(ran.stdout);
    },
    dispose() {
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
