// The allocator conformance scenarios (fixtures/conformance, the repository's copy of the design's), replayed through
// a whole Device: one runner for every backend, each giving its own way to make a file of a given length.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import type { Device, DeviceBuffer, MappedFile } from "../src/index.js";

/** One scenario: the device, the operations, and the expected state after each. */
export interface AllocatorScenario {
  workingSet: number;
  memorySize: number;
  pageSize: number;
  ops: (string | number)[][];
  expect: { result: "ok" | "oom" | "error"; stats: Record<string, number> }[];
}

const file = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../fixtures/conformance/allocator-scenarios.json",
);

/** The scenarios (the repository's copy, fixtures/conformance). */
export const allocatorScenarios: AllocatorScenario[] = JSON.parse(readFileSync(file, "utf8"));

/** The device facts a scenario describes (max buffer length = working set, Metal's resource limit). */
export function scenarioFacts(scenario: AllocatorScenario) {
  return {
    recommendedMaxWorkingSetSize: scenario.workingSet,
    memorySize: scenario.memorySize,
    maxBufferLength: scenario.workingSet,
    resourceLimit: 499000,
    pageSize: scenario.pageSize,
  };
}

/** The scenarios' field names (the seed's) that nuvec's `MemoryStats` names otherwise. */
const STATS_FIELD: Record<string, string> = { peak: "peakActive", peakWithMapped: "peakActiveWithMapped" };

/**
 * Runs every operation and checks the result and the statistics after each, to the byte. The scenarios state
 * MLX's decisions: open `device` with `policy: "mlx"`.
 */
export function replayScenario(
  device: Device,
  scenario: AllocatorScenario,
  makeFile: (id: number, length: number) => string,
): void {
  const buffers = new Map<number, DeviceBuffer>();
  const files = new Map<number, MappedFile>();
  scenario.ops.forEach((operation, step) => {
    let result: "ok" | "oom" | "error" = "ok";
    try {
      const [name, first, second] = operation as [string, number, number];
      if (name === "malloc") buffers.set(first, device.malloc(second));
      else if (name === "free") (buffers.get(first) as DeviceBuffer).free();
      else if (name === "mapFile") files.set(first, device.mapFile(makeFile(first, second)));
      else if (name === "unmap") (files.get(first) as MappedFile).free();
      else if (name === "setCacheLimit") device.setCacheLimit(first);
      else if (name === "setMemoryLimit") device.setMemoryLimit(first);
      else if (name === "resetPeak") device.resetPeak();
      else if (name === "clearCache") device.clearCache();
      else throw new Error(`unknown operation ${name}`);
    } catch (error) {
      result = (error as { code?: string }).code === "ERR_NUVEC_OUT_OF_MEMORY" ? "oom" : "error";
    }
    const expected = scenario.expect[step] as AllocatorScenario["expect"][number];
    const stats = device.memoryStats() as unknown as Record<string, number>;
    const actual = Object.fromEntries(
      Object.keys(expected.stats).map((key) => [key, stats[STATS_FIELD[key] ?? key]]),
    );
    expect({ step, operation, result, stats: actual }).toEqual({ step, operation, ...expected });
  });
}
