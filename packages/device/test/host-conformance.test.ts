// The shared allocator conformance scenarios through the whole Device on the real host backend: real memory
// behind every buffer (mmap'ed, never touched, so nothing becomes resident) and real sparse files mapped.
// The host's own facts cannot be set, so a thin wrapper presents each scenario's device (working set, memory
// size, 16 KiB pages for the mapping charge) while every buffer, mapping and residency set is the host's.
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadNativeBackend, type NativeBackend } from "@nuvec/metal-native";
import { afterAll, describe, expect, it } from "vitest";
import { Device } from "../src/index.js";
import { type AllocatorScenario, allocatorScenarios, replayOnDevice, scenarioFacts } from "./conformance.js";

let host: NativeBackend | undefined;
try {
  host = process.platform === "linux" ? loadNativeBackend() : undefined;
} catch {
  host = undefined;
}
const folder = mkdtempSync(join(tmpdir(), "nuvec-host-conformance-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The host backend seen as the scenario's device: its facts replaced, its calls untouched. */
function asScenarioDevice(backend: NativeBackend, scenario: AllocatorScenario): NativeBackend {
  return {
    ...scenarioFacts(scenario),
    name: `${backend.name} as a ${scenario.workingSet}-byte working set`,
    platform: backend.platform,
    supportsResidencySets: backend.supportsResidencySets,
    newBuffer: (bytes) => backend.newBuffer(bytes),
    mapFile: (path) => backend.mapFile(path),
    newResidencySet: () => backend.newResidencySet(),
    attachResidencySet: (set) => backend.attachResidencySet(set),
    counters: () => backend.counters(),
  };
}

function sparseFile(name: string, length: number): string {
  const path = join(folder, name);
  const descriptor = openSync(path, "w");
  ftruncateSync(descriptor, length);
  closeSync(descriptor);
  return path;
}

describe.skipIf(host === undefined)("conformance scenarios on the host backend", () => {
  it.each(allocatorScenarios.map((scenario, index) => [index, scenario] as const))(
    "scenario %i",
    (index, scenario) => {
      const backend = host as NativeBackend;
      const before = backend.counters();
      const device = Device.open({ backend: asScenarioDevice(backend, scenario), policy: "mlx" });
      replayOnDevice(device, scenario, (id, length) => sparseFile(`${index}-${id}.bin`, length));
      device.close();
      const after = backend.counters();
      expect(after.buffersMade - before.buffersMade).toBe(after.buffersReleased - before.buffersReleased);
      expect(after.mappingsMade - before.mappingsMade).toBe(after.mappingsReleased - before.mappingsReleased);
      expect(after.bufferBytes).toBe(before.bufferBytes);
    },
  );
});
