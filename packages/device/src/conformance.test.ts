// The shared conformance scenarios of the allocator, run through the whole Device over the mock backend:
// the expected state after every step, to the byte. Skips when ../shared/conformance is absent.
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { Device, type DeviceBuffer, type MappedFile } from "./index.js";

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

const file = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../shared/conformance/allocator-scenarios.json",
);
const scenarios: Scenario[] = existsSync(file) ? JSON.parse(readFileSync(file, "utf8")) : [];

describe.skipIf(scenarios.length === 0)(
  "allocator conformance scenarios through the Device over the mock",
  () => {
    it.each(scenarios.map((scenario, index) => [index, scenario] as const))(
      "scenario %i",
      (_index, scenario) => {
        const backend = new MockBackend({
          memorySize: scenario.memorySize,
          recommendedMaxWorkingSetSize: scenario.workingSet,
          maxBufferLength: scenario.workingSet,
          pageSize: scenario.pageSize,
          resourceLimit: 499000,
          realFiles: false,
        });
        const device = Device.open({ backend });
        const buffers = new Map<number, DeviceBuffer>();
        const files = new Map<number, MappedFile>();
        scenario.ops.forEach((operation, step) => {
          let result: "ok" | "oom" | "error" = "ok";
          try {
            switch (operation[0]) {
              case "malloc":
                buffers.set(operation[1], device.malloc(operation[2]));
                break;
              case "free":
                (buffers.get(operation[1]) as DeviceBuffer).free();
                break;
              case "mapFile":
                backend.addFile(`file-${operation[1]}`, operation[2]);
                files.set(operation[1], device.mapFile(`file-${operation[1]}`));
                break;
              case "unmap":
                (files.get(operation[1]) as MappedFile).release();
                break;
              case "setCacheLimit":
                device.setCacheLimit(operation[1]);
                break;
              case "setMemoryLimit":
                device.setMemoryLimit(operation[1]);
                break;
              case "resetPeak":
                device.resetPeak();
                break;
              case "clearCache":
                device.clearCache();
                break;
            }
          } catch (error) {
            result = (error as { code?: string }).code === "ERR_NUVEC_OUT_OF_MEMORY" ? "oom" : "error";
          }
          const expected = scenario.expect[step] as Scenario["expect"][number];
          const stats = device.memoryStats() as unknown as Record<string, number>;
          const actual = Object.fromEntries(Object.keys(expected.stats).map((key) => [key, stats[key]]));
          expect({ step, operation, result, stats: actual }).toEqual({
            step,
            operation,
            result: expected.result,
            stats: expected.stats,
          });
        });
        device.close();
        const counters = backend.counters();
        expect(counters.buffersMade).toBe(counters.buffersReleased);
        expect(counters.mappingsMade).toBe(counters.mappingsReleased);
      },
    );
  },
);
