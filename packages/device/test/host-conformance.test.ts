// The shared allocator conformance scenarios through the whole Device on the real host backend: real memory
// behind every buffer (mmap'ed, never touched, so nothing becomes resident) and real sparse files mapped.
// The host's own facts cannot be set, so a thin wrapper presents each scenario's device (working set, memory
// size, 16 KiB pages for the mapping charge) while every buffer, mapping and residency set is the host's.
import { closeSync, existsSync, ftruncateSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadNativeBackend, type NativeBackend } from "@nuvec/metal-native";
import { afterAll, describe, expect, it } from "vitest";
import { Device, type DeviceBuffer, type MappedFile } from "../src/index.js";

interface Scenario {
  workingSet: number;
  memorySize: number;
  pageSize: number;
  ops: (string | number)[][];
  expect: { result: "ok" | "oom" | "error"; stats: Record<string, number> }[];
}

const file = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../shared/conformance/allocator-scenarios.json",
);
const scenarios: Scenario[] = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : [];
let host: NativeBackend | undefined;
try {
  host = process.platform === "linux" ? loadNativeBackend() : undefined;
} catch {
  host = undefined;
}
const folder = mkdtempSync(join(tmpdir(), "nuvec-host-conformance-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** The host backend seen as the scenario's device: its facts replaced, its calls untouched. */
function asScenarioDevice(backend: NativeBackend, scenario: Scenario): NativeBackend {
  return {
    name: `${backend.name} as a ${scenario.workingSet}-byte working set`,
    platform: backend.platform,
    recommendedMaxWorkingSetSize: scenario.workingSet,
    memorySize: scenario.memorySize,
    maxBufferLength: scenario.workingSet,
    resourceLimit: 499000,
    pageSize: scenario.pageSize,
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

describe.skipIf(host === undefined || scenarios.length === 0)(
  "conformance scenarios on the host backend",
  () => {
    it.each(scenarios.map((scenario, index) => [index, scenario] as const))(
      "scenario %i",
      (index, scenario) => {
        const backend = host as NativeBackend;
        const before = backend.counters();
        const device = Device.open({ backend: asScenarioDevice(backend, scenario) });
        const buffers = new Map<number, DeviceBuffer>();
        const files = new Map<number, MappedFile>();
        scenario.ops.forEach((operation, step) => {
          let result: "ok" | "oom" | "error" = "ok";
          try {
            const [name, first, second] = operation as [string, number, number];
            if (name === "malloc") buffers.set(first, device.malloc(second));
            else if (name === "free") (buffers.get(first) as DeviceBuffer).free();
            else if (name === "mapFile")
              files.set(first, device.mapFile(sparseFile(`${index}-${first}.bin`, second)));
            else if (name === "unmap") (files.get(first) as MappedFile).release();
            else if (name === "setCacheLimit") device.setCacheLimit(first);
            else if (name === "setMemoryLimit") device.setMemoryLimit(first);
            else if (name === "resetPeak") device.resetPeak();
            else if (name === "clearCache") device.clearCache();
          } catch (error) {
            result = (error as { code?: string }).code === "ERR_NUVEC_OUT_OF_MEMORY" ? "oom" : "error";
          }
          const expected = scenario.expect[step] as Scenario["expect"][number];
          const stats = device.memoryStats() as unknown as Record<string, number>;
          const actual = Object.fromEntries(Object.keys(expected.stats).map((key) => [key, stats[key]]));
          expect({ step, operation, result, stats: actual }).toEqual({ step, operation, ...expected });
        });
        device.close();
        const after = backend.counters();
        expect(after.buffersMade - before.buffersMade).toBe(after.buffersReleased - before.buffersReleased);
        expect(after.mappingsMade - before.mappingsMade).toBe(
          after.mappingsReleased - before.mappingsReleased,
        );
        expect(after.bufferBytes).toBe(before.bufferBytes);
      },
    );
  },
);
