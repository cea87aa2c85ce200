// The shared conformance scenarios of the allocator, run through the whole Device over the mock backend:
// the expected state after every step, to the byte (fixtures/conformance).
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { allocatorScenarios, replayOnDevice, scenarioFacts } from "../test/conformance.js";
import { Device } from "./index.js";

describe("allocator conformance scenarios through the Device over the mock", () => {
  it.each(allocatorScenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i",
    (_index, scenario) => {
      const backend = new MockBackend({ ...scenarioFacts(scenario), realFiles: false });
      const device = Device.open({ backend, policy: "mlx" });
      replayOnDevice(device, scenario, (id, length) => {
        backend.addFile(`file-${id}`, length);
        return `file-${id}`;
      });
      device.close();
      const counters = backend.counters();
      expect(counters.buffersMade).toBe(counters.buffersReleased);
      expect(counters.mappingsMade).toBe(counters.mappingsReleased);
    },
  );
});
