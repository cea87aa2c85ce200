// The shared allocator conformance scenarios through the whole Device on the real host backend: real memory
// behind every buffer (mmap'ed, never touched, so nothing becomes resident) and real sparse files mapped.
// The host's own facts cannot be set, so a thin wrapper presents each scenario's device (working set, memory
// size, 16 KiB pages for the mapping charge) while every buffer, mapping and residency set is the host's.
import { truncateSync } from "node:fs";
import type { NativeBackend } from "@nuvec/metal-native";
import { it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { Device } from "../src/index.js";
import { type AllocatorScenario, allocatorScenarios, replayOnDevice, scenarioFacts } from "./conformance.js";
import { describeOnHost, expectNothingHeldSince, hostBackend, wrapBackend } from "./reliability/support.js";

const scratch = scratchFolder("nuvec-host-conformance-");

/** The host backend seen as the scenario's device: its facts replaced, its calls untouched. */
function asScenarioDevice(backend: NativeBackend, scenario: AllocatorScenario): NativeBackend {
  const name = `${backend.name} as a ${scenario.workingSet}-byte working set`;
  return wrapBackend(backend, { ...scenarioFacts(scenario), name });
}

function sparseFile(name: string, length: number): string {
  const path = scratch.write(name, "");
  truncateSync(path, length);
  return path;
}

describeOnHost("conformance scenarios", () => {
  it.each(allocatorScenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i",
    (index, scenario) => {
      const backend = hostBackend();
      const before = backend.counters();
      const device = Device.open({ backend: asScenarioDevice(backend, scenario), policy: "mlx" });
      replayOnDevice(device, scenario, (id, length) => sparseFile(`${index}-${id}.bin`, length));
      device.close();
      expectNothingHeldSince(before, backend.counters());
    },
  );
});
