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
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NativeBackend } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { type ModelPlace, SegmentsModel } from "../../../allocator/test/segments-model.js";
import { bufferState } from "../../src/device-buffer.js";
import { Device, type DeviceBuffer, type MappedFile } from "../../src/index.js";
import { budget, hostAvailable, hostBackend, hostUnavailableReason } from "./support.js";

const KIB = 1024;
const MIB = 1024 ** 2;

const folder = mkdtempSync(join(tmpdir(), "nuvec-segments-fuzz-"));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const files = [100, 4097, 70_000].map((length, index) => {
  const path = join(folder, `file-${index}.bin`);
  writeFileSync(path, randomFillSync(new Uint8Array(length)));
  return path;
});

type Step =
  | { kind: "malloc"; bytes: number }
  | { kind: "free"; pick: number }
  | { kind: "memory" | "cache"; bytes: number }
  | { kind: "clear" | "peak" }
  | { kind: "map"; file: number }
  | { kind: "unmap"; pick: number };

interface LiveBlock {
  buffer: DeviceBuffer;
  place: ModelPlace;
  mark: number;
}

const steps = (largest: number, limitRange: number): fc.Arbitrary<Step[]> =>
  fc.array(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc.integer({ min: 0, max: 64 * KIB }).map((bytes) => ({ kind: "malloc", bytes }) as Step),
      },
      {
        weight: 3,
        arbitrary: fc.integer({ min: 0, max: largest }).map((bytes) => ({ kind: "malloc", bytes }) as Step),
      },
      { weight: 7, arbitrary: fc.nat(1000).map((pick) => ({ kind: "free", pick }) as Step) },
      {
        weight: 1,
        arbitrary: fc
          .integer({ min: 0, max: limitRange })
          .map((bytes) => ({ kind: "memory", bytes }) as Step),
      },
      {
        weight: 1,
        arbitrary: fc.integer({ min: 0, max: limitRange }).map((bytes) => ({ kind: "cache", bytes }) as Step),
      },
      { weight: 1, arbitrary: fc.constantFrom<Step>({ kind: "clear" }, { kind: "peak" }) },
      { weight: 1, arbitrary: fc.nat(files.length - 1).map((file) => ({ kind: "map", file }) as Step) },
      { weight: 1, arbitrary: fc.nat(1000).map((pick) => ({ kind: "unmap", pick }) as Step) },
    ),
    { maxLength: 300 },
  );

/** Where a live buffer's block is: its segment (the backend's buffer) and its offset there. */
function placeOf(buffer: DeviceBuffer): { segment: object; offset: number } {
  const range = bufferState(buffer).allocation.buffer as unknown as { segment: object; offset: number };
  return { segment: range.segment, offset: range.offset };
}

type Opened = { device: Device; backend: NativeBackend; memoryLimit?: number };

function run(open: () => Opened, list: Step[]): void {
  const { device, backend, memoryLimit } = open();
  const model = new SegmentsModel({
    workingSet: backend.recommendedMaxWorkingSetSize,
    memorySize: backend.memorySize,
    maxBufferLength: backend.maxBufferLength,
    resourceLimit: backend.resourceLimit,
    pageSize: backend.pageSize,
  });
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
        case "free": {
          if (live.length === 0) break;
          const [block] = live.splice(step.pick % live.length, 1);
          block!.buffer.free();
          model.free(block!.place);
          break;
        }
        case "memory":
          device.setMemoryLimit(step.bytes);
          model.setMemoryLimit(step.bytes);
          break;
        case "cache":
          device.setCacheLimit(step.bytes);
          model.setCacheLimit(step.bytes);
          break;
        case "clear":
          device.clearCache();
          model.clearCache();
          break;
        case "peak":
          device.resetPeak();
          model.resetPeak();
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
          const outcome = model.mapFile(file?.length ?? [100, 4097, 70_000][step.file]!, id);
          expect(outcome.ok, `${what}: ${String(refused)}`).toBe(file !== undefined);
          if (file !== undefined) mapped.push({ file, id });
          break;
        }
        case "unmap": {
          if (mapped.length === 0) break;
          const [entry] = mapped.splice(step.pick % mapped.length, 1);
          entry!.file.free();
          model.release(entry!.id);
          break;
        }
      }
      const stats = device.memoryStats();
      const counters = device.counters();
      const expected = model.stats();
      for (const key of Object.keys(expected)) {
        if ((stats as unknown as Record<string, number>)[key] !== expected[key])
          expect(stats, `${what}: memoryStats()`).toMatchObject(expected);
      }
      const expectedCounters = model.counters();
      for (const key of Object.keys(expectedCounters)) {
        if ((counters as unknown as Record<string, number>)[key] !== expectedCounters[key])
          expect(counters, `${what}: counters()`).toMatchObject(expectedCounters);
      }
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
  const after = backend.counters();
  expect(after.buffersMade - start.buffersMade).toBe(after.buffersReleased - start.buffersReleased);
  expect(after.bufferBytes).toBe(start.bufferBytes);
}

function property(open: () => Opened, numRuns: number, largest: number): void {
  const seed = Number(process.env.NUVEC_FUZZ_SEED);
  const path = process.env.NUVEC_FUZZ_PATH;
  fc.assert(
    fc.property(steps(largest, 120 * MIB), (list) => run(open, list)),
    {
      numRuns,
      ...(Number.isFinite(seed) ? { seed } : {}),
      ...(path === undefined ? {} : { path }),
    },
  );
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

  it.skipIf(!hostAvailable)(
    `on the host backend${hostAvailable ? "" : ` (skipped: ${hostUnavailableReason})`}: ${hostRuns} runs`,
    () => {
      property(
        () => {
          const backend = hostBackend();
          const memoryLimit = 256 * MIB;
          return { device: Device.open({ backend, policy: "segments", memoryLimit }), backend, memoryLimit };
        },
        hostRuns,
        24 * MIB,
      );
    },
  );
});
