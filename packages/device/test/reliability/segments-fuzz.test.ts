// Model-based fuzzing of a Device under the segments policy: random sequences of mallocs, frees, writes,
// limit changes, cache clears, peak resets and mapped files, compared after every step with the naive model
// of allocator/test/segments-model.ts (every MemoryStats field, the counters, the segments the backend holds,
// where each block is in its segment). Bytes written at both ends of every live block read back after every
// step: on the host backend the blocks are ranges of real memory, so a block that overlapped another would
// show. On the mock (more runs) and on the real host backend.
//
// A failure prints fast-check's seed and path; replay it with
//   NUVEC_FUZZ_SEED=<seed> NUVEC_FUZZ_PATH=<path> npx vitest run test/reliability/segments-fuzz.test.ts
import { randomFillSync } from "node:crypto";
import type { NativeBackend } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type ModelPlace, SegmentsModel } from "../../../allocator/test/segments-model.js";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { bufferState } from "../../src/device-buffer.js";
import { Device, type DeviceBuffer, type MappedFile } from "../../src/index.js";
import { backendFacts, fuzzProperty, sameFigures } from "./model.js";
import { budget, expectNothingHeldSince, hostBackend, itOnHost } from "./support.js";

const KIB = 1024;
const MIB = 1024 ** 2;

const scratch = scratchFolder("nuvec-segments-fuzz-");
const fileLengths = [100, 4097, 70_000];
const files = fileLengths.map((length, index) =>
  scratch.write(`file-${index}.bin`, randomFillSync(new Uint8Array(length))),
);

type Step =
  | { kind: "malloc"; bytes: number }
  | { kind: "free"; pick: number }
  | { kind: "setMemoryLimit" | "setCacheLimit"; bytes: number }
  | { kind: "clearCache" | "resetPeak" }
  | { kind: "map"; file: number }
  | { kind: "unmap"; pick: number };

interface LiveBlock {
  buffer: DeviceBuffer;
  place: ModelPlace;
  mark: number;
}

const steps = (largest: number, limitRange: number): fc.Arbitrary<Step[]> => {
  const malloc = (max: number) =>
    fc.integer({ min: 0, max }).map((bytes): Step => ({ kind: "malloc", bytes }));
  const limit = (kind: "setMemoryLimit" | "setCacheLimit") =>
    fc.integer({ min: 0, max: limitRange }).map((bytes): Step => ({ kind, bytes }));
  return fc.array(
    fc.oneof(
      { weight: 6, arbitrary: malloc(64 * KIB) },
      { weight: 3, arbitrary: malloc(largest) },
      { weight: 7, arbitrary: fc.nat(1000).map((pick): Step => ({ kind: "free", pick })) },
      { weight: 1, arbitrary: limit("setMemoryLimit") },
      { weight: 1, arbitrary: limit("setCacheLimit") },
      { weight: 1, arbitrary: fc.constantFrom<Step>({ kind: "clearCache" }, { kind: "resetPeak" }) },
      { weight: 1, arbitrary: fc.nat(files.length - 1).map((file): Step => ({ kind: "map", file })) },
      { weight: 1, arbitrary: fc.nat(1000).map((pick): Step => ({ kind: "unmap", pick })) },
    ),
    { maxLength: 300 },
  );
};

/** Where a live buffer's block is: its segment (the backend's buffer) and its offset there. */
function placeOf(buffer: DeviceBuffer): { segment: object; offset: number } {
  const range = bufferState(buffer).allocation.buffer as unknown as { segment: object; offset: number };
  return { segment: range.segment, offset: range.offset };
}

type Opened = { device: Device; backend: NativeBackend; memoryLimit?: number };

function run(open: () => Opened, list: Step[]): void {
  const { device, backend, memoryLimit } = open();
  const model = new SegmentsModel(backendFacts(backend));
  if (memoryLimit !== undefined) {
    // Opened with a memory limit: the cache limit defaults to it, as the Device's does.
    model.setMemoryLimit(memoryLimit);
    model.setCacheLimit(memoryLimit);
  }
  const start = backend.counters();
  const live: LiveBlock[] = [];
  const mapped: { file: MappedFile; id: number }[] = [];
  // The backend's buffer behind each model segment, learnt when the model makes the segment.
  const segments = new Map<number, object>();
  let nextMapping = 1;
  let mark = 1;
  try {
    for (const [index, step] of list.entries()) {
      const what = `step ${index} ${JSON.stringify(step)}`;
      switch (step.kind) {
        case "free":
          // The pick-th live block, if any (an empty list splices nothing).
          for (const block of live.splice(step.pick % live.length, 1)) {
            block.buffer.free();
            model.free(block.place);
          }
          break;
        case "malloc": {
          const outcome = model.malloc(step.bytes);
          if (!outcome.ok) {
            expect(() => device.malloc(step.bytes), what).toThrow();
            break;
          }
          const buffer = device.malloc(step.bytes);
          const place = outcome.value;
          if (place === undefined) {
            expect(buffer.allocatedLength, what).toBe(0);
            buffer.free();
            break;
          }
          expect(buffer.allocatedLength, what).toBe(place.length);
          const actual = placeOf(buffer);
          expect(actual.offset, what).toBe(place.offset);
          const known = segments.get(place.segment);
          if (known === undefined) segments.set(place.segment, actual.segment);
          else expect(actual.segment === known, `${what}: the model's segment`).toBe(true);
          mark = (mark % 250) + 1;
          buffer.write(Uint8Array.of(mark), 0);
          buffer.write(Uint8Array.of(mark), buffer.length - 1);
          live.push({ buffer, place, mark });
          break;
        }
        case "setMemoryLimit":
        case "setCacheLimit":
          device[step.kind](step.bytes);
          model[step.kind](step.bytes);
          break;
        case "clearCache":
        case "resetPeak":
          device[step.kind]();
          model[step.kind]();
          break;
        case "map": {
          const path = files[step.file]!;
          const id = nextMapping++;
          let file: MappedFile | undefined;
          let refused: unknown;
          try {
            file = device.mapFile(path);
          } catch (error) {
            refused = error;
          }
          const outcome = model.mapFile(file?.length ?? fileLengths[step.file]!, id);
          expect(outcome.ok, `${what}: ${String(refused)}`).toBe(file !== undefined);
          if (file !== undefined) mapped.push({ file, id });
          break;
        }
        case "unmap":
          for (const entry of mapped.splice(step.pick % mapped.length, 1)) {
            entry.file.free();
            model.release(entry.id);
          }
          break;
      }
      sameFigures(device.memoryStats(), model.stats(), `${what}: memoryStats()`);
      const counters = device.counters();
      sameFigures(counters, model.counters(), `${what}: counters()`);
      const held =
        counters.backend.buffersMade -
        start.buffersMade -
        (counters.backend.buffersReleased - start.buffersReleased);
      expect(held, `${what}: segments the backend holds`).toBe(model.segments.length);
      // Both ends of every live block still read what was written there.
      for (const block of live) {
        const { buffer } = block;
        if (buffer.read(0, 1)[0] !== block.mark || buffer.read(buffer.length - 1, 1)[0] !== block.mark) {
          throw new Error(`${what}: a live block lost its bytes (${JSON.stringify(block.place)})`);
        }
      }
    }
  } finally {
    device.close();
  }
  expectNothingHeldSince(start, backend.counters());
}

function property(open: () => Opened, numRuns: number, largest: number): void {
  fuzzProperty(steps(largest, 120 * MIB), (list) => run(open, list), numRuns);
}

const mockRuns = budget("NUVEC_FUZZ_RUNS", 400, 3000);
const hostRuns = budget("NUVEC_FUZZ_HOST_RUNS", 80, 400);

describe("model-based fuzzing of the segments policy", () => {
  it(`on the mock (4 KiB pages, resource limit 12): ${mockRuns} runs`, () => {
    property(
      () => {
        const backend = new MockBackend({
          memorySize: 256 * MIB,
          pageSize: 4096,
          resourceLimit: 12,
          realMemoryUpTo: 64 * MIB,
        });
        return { device: Device.open({ backend, policy: "segments" }), backend };
      },
      mockRuns,
      48 * MIB,
    );
  });

  itOnHost(`on the host backend: ${hostRuns} runs`, () => {
    property(
      () => {
        const backend = hostBackend();
        const memoryLimit = 256 * MIB;
        return { device: Device.open({ backend, policy: "segments", memoryLimit }), backend, memoryLimit };
      },
      hostRuns,
      24 * MIB,
    );
  });
});
