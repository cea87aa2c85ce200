import { readFileSync } from "node:fs";
import type { MemoryStats } from "@nuvec/stats";
import { NuvecError, OutOfMemoryError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { conformanceFile, type TestBuffer, TestSource } from "../test/support.js";
import type { Allocation, Mapping } from "./allocation.js";
import { CachingAllocator } from "./allocator.js";

type Operation =
  | ["malloc", number, number]
  | ["free", number]
  | ["mapFile", number, number]
  | ["unmap", number]
  | ["setCacheLimit", number]
  | ["setMemoryLimit", number]
  | ["resetPeak"]
  | ["clearCache"];

interface Scenario {
  workingSet: number;
  memorySize: number;
  pageSize: number;
  ops: Operation[];
  expect: { result: "ok" | "oom" | "error"; stats: Record<string, number> }[];
}

const scenarios: Scenario[] = JSON.parse(readFileSync(conformanceFile, "utf8"));

/** The scenarios' field names (the seed's) that nuvec's `MemoryStats` names otherwise. */
const STATS_FIELD: Record<string, keyof MemoryStats> = {
  peak: "peakActive",
  peakWithMapped: "peakActiveWithMapped",
};

describe("the conformance scenarios (fixtures/conformance)", () => {
  it.each(scenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i: every step gives the expected result and statistics",
    (_index, scenario) => {
      const source = new TestSource({
        workingSet: scenario.workingSet,
        memorySize: scenario.memorySize,
        pageSize: scenario.pageSize,
        maxBufferLength: scenario.workingSet,
        resourceLimit: 499_000,
      });
      // The scenarios state MLX's decisions: the policy is named.
      const allocator = new CachingAllocator(source, { policy: "mlx" });
      const allocations = new Map<number, Allocation<TestBuffer>>();
      const mappings = new Map<number, Mapping>();
      scenario.ops.forEach((operation, step) => {
        let result: "ok" | "oom" | "error" = "ok";
        const before = allocator.memoryStats();
        try {
          switch (operation[0]) {
            case "malloc":
              allocations.set(operation[1], allocator.malloc(operation[2]));
              break;
            case "free":
              allocator.free(allocations.get(operation[1])!);
              break;
            case "mapFile":
              mappings.set(operation[1], allocator.addMapping(operation[2]));
              break;
            case "unmap":
              allocator.removeMapping(mappings.get(operation[1])!);
              break;
            case "setCacheLimit":
              allocator.setCacheLimit(operation[1]);
              break;
            case "setMemoryLimit":
              allocator.setMemoryLimit(operation[1]);
              break;
            case "resetPeak":
              allocator.resetPeak();
              break;
            case "clearCache":
              allocator.clearCache();
              break;
          }
        } catch (error) {
          if (!(error instanceof NuvecError)) throw error;
          result =
            error instanceof OutOfMemoryError && error.code === "ERR_NUVEC_OUT_OF_MEMORY" ? "oom" : "error";
        }
        const stats = allocator.memoryStats();
        const expected = scenario.expect[step]!;
        const actual = Object.fromEntries(
          Object.keys(expected.stats).map((field) => [
            field,
            stats[STATS_FIELD[field] ?? (field as keyof MemoryStats)],
          ]),
        );
        expect({ step, operation, result, stats: actual }).toEqual({ step, operation, ...expected });
        if (result !== "ok") expect(stats).toEqual(before);
      });
    },
  );
});
