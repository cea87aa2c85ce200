// Model-based fuzzing of the Device: random sequences of every operation, compared after every step with the
// reference model of model.ts (every MemoryStats field, the counters, which system buffer a cache hit hands
// back), with the bytes written into live buffers and mapped files read back, and the views of freed buffers
// detached. On the mock (many runs, two device shapes) and on the real host backend (fewer runs).
// Besides the operations of one Device: a second Device on the same backend (the process's other user),
// trace windows (startTrace/stopTrace), clearCache and limit changes. Every step compares the figures; the
// bytes of the buffer or file a step touched are read back at once, and every live and stale view is swept
// every SWEEP_EVERY steps and at the end of each run (the sweep is what made the harness slow).
//
// A failure prints fast-check's seed, path and the commands' replayPath; replay it with
//   NUVEC_FUZZ_SEED=<seed> NUVEC_FUZZ_PATH=<path> NUVEC_FUZZ_REPLAY_PATH=<replayPath> \
//     npx vitest run test/reliability/fuzz.test.ts -t "<test name>"
//
// The world the commands act on and its check after every step are in fuzz-world.ts, the commands in
// fuzz-commands.ts; this file runs them on each device shape.
import { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Device } from "../../src/index.js";
import { type Command, commandsFor, type Shape, trace } from "./fuzz-commands.js";
import { checkWorld, files, MIB, tally, type World } from "./fuzz-world.js";
import { backendFacts, DeviceModel, fuzzProperty, sizeClass } from "./model.js";
import { budget, describeOnHost, expectNothingHeldSince, hostBackend } from "./support.js";

function fuzz(shape: Shape, numRuns: number): void {
  const began = performance.now();
  try {
    fuzzProperty(commandsFor(shape), (commands) => fuzzRun(shape, commands), numRuns);
  } finally {
    tally(shape.name).milliseconds += Math.round(performance.now() - began);
  }
}

function fuzzRun(shape: Shape, commands: Iterable<Command>): void {
  const { device, backend, mock } = shape.open();
  tally(shape.name).runs += 1;
  const startCounters = backend.counters();
  const world: World = {
    device,
    other: undefined,
    trace: undefined,
    sinceSweep: 0,
    openOther: () => shape.openOther(backend),
    mock,
    buffers: [],
    files: [],
    stale: [],
    ids: new Map(),
    wiredLimit: 0,
    workingSet: backend.recommendedMaxWorkingSetSize,
    startCounters,
    nextMappingId: 1,
    moved: [],
  };
  // The Device's default policy; a memory limit given at open is also where the cache limit starts.
  const model = new DeviceModel(shape.facts, { policy: "bounded" });
  if (shape.memoryLimit !== undefined) {
    model.setMemoryLimit(shape.memoryLimit);
    model.setCacheLimit(shape.memoryLimit);
  }
  try {
    fc.modelRun(() => ({ model, real: world }), commands);
    checkWorld(model, world, `${shape.name}: end of run`, undefined, true);
    if (world.trace !== undefined) trace(shape.name).run(model, world);
  } finally {
    world.other?.close();
    device.close();
  }
  // Nothing outlives close(): every buffer and mapping the backend made is released, nothing wired.
  expectNothingHeldSince(startCounters, backend.counters());
  for (const view of [...world.stale, ...world.buffers.flatMap((live) => live.views)]) {
    expect(view.byteLength).toBe(0);
  }
  mock?.close();
}

function mockShape(name: string, pageSize: number, resourceLimit: number): Shape {
  const memorySize = 64 * MIB;
  const options = { memorySize, pageSize, maxBufferLength: 8 * MIB, resourceLimit };
  const facts = backendFacts(new MockBackend(options));
  return {
    name,
    facts,
    largest: 6 * MIB,
    limitRange: 80 * MIB,
    wiredRange: 16 * MIB,
    memoryLimit: undefined,
    wiredChoices: [facts.workingSet, facts.workingSet + 1],
    open: () => {
      // Virtual files: the same bytes as on disk, without reading the disk at every mapping.
      const mock = new MockBackend(options);
      for (const file of files) mock.addFile(file.path, file.bytes);
      return { device: Device.open({ backend: mock }), backend: mock, mock };
    },
    openOther: (backend) => Device.open({ backend, cacheLimit: 0 }),
  };
}

const mockRuns = budget("NUVEC_FUZZ_RUNS", 300, 3000);
const hostRuns = budget("NUVEC_FUZZ_HOST_RUNS", 80, 350);

// A whole fuzzing run is one test: about a minute on an idle 2-core machine, several on a loaded one. Its
// bound is there to end a hung run, not to time it.
const fuzzTimeout = { timeout: 900_000 };

describe("model-based fuzzing on the mock", () => {
  it(`Apple-like device (16 KiB pages, resource limit 24): ${mockRuns} runs`, fuzzTimeout, () => {
    fuzz(mockShape("mock-16k", 16384, 24), mockRuns);
  });

  it(`Linux-like device (4 KiB pages, resource limit 12): ${mockRuns} runs`, fuzzTimeout, () => {
    fuzz(mockShape("mock-4k", 4096, 12), mockRuns);
  });
});

describeOnHost("model-based fuzzing", () => {
  it(`real memory: ${hostRuns} runs`, fuzzTimeout, () => {
    const backend = hostBackend();
    fuzz(
      {
        name: "host",
        facts: backendFacts(backend),
        largest: 6 * MIB,
        limitRange: 80 * MIB,
        wiredRange: 8 * MIB,
        memoryLimit: 96 * MIB,
        // Above the working set is refused before anything is wired; the working set itself would lock GiBs.
        wiredChoices: [backend.recommendedMaxWorkingSetSize + 1],
        open: () => ({ device: Device.open({ memoryLimit: 96 * MIB }), backend, mock: undefined }),
        openOther: () => Device.open({ memoryLimit: 16 * MIB, cacheLimit: 0 }),
        movesViews: true,
      },
      hostRuns,
    );
  });
});

// The size class the model charges is the one the Device reports (a spot check of the model itself).
describe("the model", () => {
  it("rounds like allocationSize", () => {
    expect([0, 1, 256, 257, 16384, 16385].map(sizeClass)).toEqual([0, 256, 256, 512, 16384, 32768]);
  });
});
