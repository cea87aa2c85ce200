import { describe, it } from "vitest";
import { allocatorScenarios, replayScenario } from "../test/conformance.js";
import { TestSource } from "../test/support.js";
import { CachingAllocator } from "./allocator.js";

describe("the conformance scenarios (fixtures/conformance)", () => {
  it.each(allocatorScenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i: every step gives the expected result and statistics",
    (_index, scenario) => {
      const source = new TestSource({
        workingSet: scenario.workingSet,
        memorySize: scenario.memorySize,
        pageSize: scenario.pageSize,
        maxBufferLength: scenario.workingSet,
        resourceLimit: 499_000,
      });
      const allocator = new CachingAllocator(source, { policy: "mlx" });
      replayScenario(scenario, {
        layer: allocator,
        malloc: (bytes) => allocator.malloc(bytes),
        free: (allocation) => allocator.free(allocation),
        mapFile: (_id, length) => allocator.addMapping(length),
        unmap: (mapping) => allocator.removeMapping(mapping),
      });
    },
  );
});
