// Replays fixtures/conformance/residency-scenarios.json (the repository's copy of the design's random operation
// sequences with the state after every step, from an independent model of the seed) and checks every value.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Residency } from "../src/index.js";
import { allocation, type FakeAllocation, FakeBackend, type FakeSet } from "./fake-backend.js";

type Operation = ["insert", number, number, boolean] | ["erase", number] | ["resize", number] | ["refresh"];

interface State {
  wired: number;
  wiredMapped: number;
  sets: number;
  capacity: number;
  setBytes: number[];
}

interface Scenario {
  workingSet: number;
  pct: string | null;
  ops: Operation[];
  states: State[];
  commits: number[];
  requests: number[];
}

const file = new URL("../../../fixtures/conformance/residency-scenarios.json", import.meta.url);
const scenarios: Scenario[] = JSON.parse(readFileSync(file, "utf8"));

function stateOf(residency: Residency<FakeAllocation, FakeSet>): State {
  return {
    wired: residency.wired,
    wiredMapped: residency.wiredMapped,
    sets: residency.setCount,
    capacity: residency.wiredLimit,
    setBytes: residency.setBytes(),
  };
}

describe("conformance: residency-scenarios.json", () => {
  it("has all 20 scenarios", () => {
    expect(scenarios.length).toBe(20);
  });

  it.each(scenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i reproduces every state, commit and request",
    (_index, scenario) => {
      const backend = new FakeBackend();
      const residency = new Residency(backend, {
        workingSet: scenario.workingSet,
        maxPercentPerSet: scenario.pct,
      });
      const allocations = new Map<number, FakeAllocation>();
      scenario.ops.forEach((operation, step) => {
        switch (operation[0]) {
          case "insert": {
            const [, key, bytes, mapped] = operation;
            const item = allocation(String(key), bytes);
            allocations.set(key, item);
            residency.insert(item, mapped);
            break;
          }
          case "erase":
            residency.erase(allocations.get(operation[1])!);
            break;
          case "resize":
            residency.setWiredLimit(operation[1]);
            break;
          case "refresh":
            residency.refresh();
            break;
        }
        expect(stateOf(residency), `after step ${step}: ${JSON.stringify(operation)}`).toEqual(
          scenario.states[step],
        );
        // Every operation commits what it changed, and the backend holds what the manager counts.
        expect(backend.uncommitted(), `uncommitted sets after step ${step}`).toEqual([]);
        expect(backend.committedBytes(), `backend bytes after step ${step}`).toEqual(residency.setBytes());
      });
      expect(backend.commits()).toEqual(scenario.commits);
      expect(backend.requests()).toEqual(scenario.requests);
    },
  );
});
