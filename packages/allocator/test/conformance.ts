// The allocator conformance scenarios (fixtures/conformance, the repository's copy of the design's) and the one
// runner every layer replays them with: the allocator alone, and the whole Device over each backend.
import { readFileSync } from "node:fs";
import { type MemoryStats, NuvecError, OutOfMemoryError } from "@nuvec/stats";
import { expect } from "vitest";
import { conformanceFile } from "./support.js";

/** One scenario: the device, the operations, and the expected state after each. */
export interface AllocatorScenario {
  workingSet: number;
  memorySize: number;
  pageSize: number;
  ops: [string, ...number[]][];
  expect: { result: "ok" | "oom" | "error"; stats: Record<string, number> }[];
}

/** The scenarios. */
export const allocatorScenarios: AllocatorScenario[] = JSON.parse(readFileSync(conformanceFile, "utf8"));

/** The scenarios' field names (the seed's) that nuvec's `MemoryStats` names otherwise. */
const STATS_FIELD: Record<string, keyof MemoryStats> = {
  peak: "peakActive",
  peakWithMapped: "peakActiveWithMapped",
};

/** The calls every layer that runs the scenarios has under these names (the allocator, the Device). */
export interface ScenarioLayer {
  setCacheLimit(bytes: number): number;
  setMemoryLimit(bytes: number): number;
  resetPeak(): void;
  clearCache(): void;
  memoryStats(): MemoryStats;
}

/** How a layer makes and gives back the buffers (`H`) and mapped files (`M`) of a scenario. */
export interface ScenarioTarget<H, M> {
  layer: ScenarioLayer;
  malloc(bytes: number): H;
  free(buffer: H): void;
  /** Maps a file of `length` bytes (the scenario's file `id`). */
  mapFile(id: number, length: number): M;
  unmap(file: M): void;
}

/**
 * Runs every operation and checks its result and the statistics after it, to the byte; a refused operation
 * changes no figure. The scenarios state MLX's decisions: the layer runs `policy: "mlx"`.
 */
export function replayScenario<H, M>(scenario: AllocatorScenario, target: ScenarioTarget<H, M>): void {
  const { layer } = target;
  const buffers = new Map<number, H>();
  const files = new Map<number, M>();
  const operations: Record<string, (first: number, second: number) => unknown> = {
    malloc: (id, bytes) => buffers.set(id, target.malloc(bytes)),
    free: (id) => target.free(buffers.get(id) as H),
    mapFile: (id, length) => files.set(id, target.mapFile(id, length)),
    unmap: (id) => target.unmap(files.get(id) as M),
    setCacheLimit: (bytes) => layer.setCacheLimit(bytes),
    setMemoryLimit: (bytes) => layer.setMemoryLimit(bytes),
    resetPeak: () => layer.resetPeak(),
    clearCache: () => layer.clearCache(),
  };
  scenario.ops.forEach((operation, step) => {
    const [name, first, second] = operation as [string, number, number];
    const run = operations[name];
    if (run === undefined) throw new Error(`unknown operation ${name}`);
    let result: "ok" | "oom" | "error" = "ok";
    const before = layer.memoryStats();
    try {
      run(first, second);
    } catch (error) {
      if (!(error instanceof NuvecError)) throw error;
      result =
        error instanceof OutOfMemoryError && error.code === "ERR_NUVEC_OUT_OF_MEMORY" ? "oom" : "error";
    }
    const stats = layer.memoryStats();
    const expected = scenario.expect[step] as AllocatorScenario["expect"][number];
    const actual = Object.fromEntries(
      Object.keys(expected.stats).map((field) => [
        field,
        stats[STATS_FIELD[field] ?? (field as keyof MemoryStats)],
      ]),
    );
    expect({ step, operation, result, stats: actual }).toEqual({ step, operation, ...expected });
    if (result !== "ok") expect(stats).toEqual(before);
  });
}
