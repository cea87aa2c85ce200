// The allocator conformance scenarios (fixtures/conformance) replayed through a whole Device with the
// allocator's runner: one adapter for every backend, each giving its own way to make a file of a given length.
import {
  type AllocatorScenario,
  allocatorScenarios,
  replayScenario,
} from "../../allocator/test/conformance.js";
import type { Device } from "../src/index.js";

export { type AllocatorScenario, allocatorScenarios };

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

/** Replays `scenario` on `device` (opened with `policy: "mlx"`), its files made by `makeFile`. */
export function replayOnDevice(
  device: Device,
  scenario: AllocatorScenario,
  makeFile: (id: number, length: number) => string,
): void {
  replayScenario(scenario, {
    layer: device,
    malloc: (bytes) => device.malloc(bytes),
    free: (buffer) => buffer.free(),
    mapFile: (id, length) => device.mapFile(makeFile(id, length)),
    unmap: (file) => file.free(),
  });
}
