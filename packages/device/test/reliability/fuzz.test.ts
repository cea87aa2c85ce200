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
import { randomFillSync } from "node:crypto";
import type { NativeBackend } from "@nuvec/metal-native";
import { MockBackend, MockMappedFile } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import { bufferState } from "../../src/device-buffer.js";
import { Device, type DeviceBuffer, type MappedFile } from "../../src/index.js";
import { backendFacts, DeviceModel, fuzzProperty, type ModelFacts, sameFigures, sizeClass } from "./model.js";
import {
  budget,
  describeOnHost,
  expectNothingHeldSince,
  held,
  hostAvailable,
  hostBackend,
  hostUnavailableReason,
  sectionFigures,
  transfer,
} from "./support.js";

const KIB = 1024;
const MIB = 1024 ** 2;

const scratch = scratchFolder("nuvec-reliability-fuzz-");

/** Files to map: lengths around the page sizes of both platforms. */
const files = [1, 100, 4095, 4096, 4097, 16384, 16385, 100_000, MIB + 3].map((length, index) => {
  const bytes = randomFillSync(new Uint8Array(length));
  return { path: scratch.write(`file-${index}.bin`, bytes), bytes };
});

interface LiveBuffer {
  buffer: DeviceBuffer;
  modelId: number | undefined;
  /** Bytes written through contents(): offset → value. */
  written: Map<number, number>;
  /** Views handed out while it lives (they must stay valid until it is freed). */
  views: Uint8Array[];
}

interface LiveFile {
  file: MappedFile;
  modelId: number;
  source: Uint8Array;
}

interface World {
  device: Device;
  openOther: () => Device;
  /** The second Device on the same backend: it holds nothing between steps (see otherDevice). */
  other: Device | undefined;
  /** A trace window being recorded: the sizes of the mallocs it must end with, in order. */
  trace: { mallocs: number[] } | undefined;
  /** Steps since the last full sweep of the bytes and views. */
  sinceSweep: number;
  mock: MockBackend | undefined;
  buffers: LiveBuffer[];
  files: LiveFile[];
  /** Views of freed buffers and released files: must read byteLength 0. */
  stale: Uint8Array[];
  /** Model id of each system buffer the device holds. */
  ids: Map<object, number>;
  wiredLimit: number;
  workingSet: number;
  startCounters: ReturnType<NativeBackend["counters"]>;
  nextMappingId: number;
  /** Views moved away with transfer() (moveAway), held to the end of the run: their buffers stay quarantined. */
  moved: Uint8Array[];
}

/**
 * What the runs of one shape did, for RELIABILITY.md: runs, steps, refusals and cache hits checked, steps on
 * the second Device, trace windows checked, buffers freed after their view was moved away (quarantined), and
 * the property's wall time (measured, never asserted).
 */
const newTally = () => ({
  runs: 0,
  steps: 0,
  refusals: 0,
  cacheHits: 0,
  otherDeviceSteps: 0,
  traceWindows: 0,
  movedAway: 0,
  milliseconds: 0,
});
const tallies: Record<string, ReturnType<typeof newTally>> = {};
sectionFigures("fuzz", { backends: tallies, hostSkipped: hostAvailable ? undefined : hostUnavailableReason });
const tally = (name: string) => (tallies[name] ??= newTally());

/** A full sweep of every live buffer's written bytes, every mapped file and every stale view this often. */
const SWEEP_EVERY = 64;

function sameValue(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) expect(actual, what).toBe(expected);
}

function atMost(actual: number, bound: number, what: string): void {
  if (!(actual <= bound)) expect(actual, what).toBeLessThanOrEqual(bound);
}

const refusalCodes = {
  "out-of-memory": "ERR_NUVEC_OUT_OF_MEMORY",
  "resource-limit": "ERR_NUVEC_RESOURCE_LIMIT",
  "too-large": "ERR_NUVEC_BUFFER_TOO_LARGE",
} as const;

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown }).code;
}

/** The native buffer behind a DeviceBuffer (the device's internal state). */
function nativeOf(buffer: DeviceBuffer): object | undefined {
  return bufferState(buffer).allocation.buffer as object | undefined;
}

/** The system buffers the second Device holds (none between its steps; counted in case it ever does). */
function otherHeld(world: World): number {
  if (world.other === undefined) return 0;
  const counters = world.other.counters();
  return counters.liveBuffers + counters.cachedBuffers;
}

function checkBuffer(live: LiveBuffer, name: string): void {
  if (live.written.size === 0) return;
  const fresh = new Uint8Array(live.buffer.contents());
  sameValue(fresh.byteLength, live.buffer.length, `${name}: contents() length`);
  for (const view of [fresh, ...live.views]) {
    sameValue(view.byteLength, live.buffer.length, `${name}: a live view's length`);
    for (const [offset, value] of live.written) {
      if (view[offset] !== value) {
        throw new Error(`${name}: byte ${offset} of a live buffer reads ${view[offset]}, wrote ${value}`);
      }
    }
  }
}

function checkFile(live: LiveFile, name: string): void {
  const view = new Uint8Array(live.file.contents());
  sameValue(view.byteLength, live.source.byteLength, `${name}: mapped length`);
  const last = live.source.byteLength - 1;
  for (const offset of [0, last >> 1, last])
    sameValue(view[offset], live.source[offset], `${name}: mapped byte`);
}

/**
 * Every check that holds after any step: the figures always, the bytes of what the step touched (`touched`)
 * at once, and everything else every {@link SWEEP_EVERY} steps (`sweep` forces it).
 */
function checkWorld(
  model: DeviceModel,
  world: World,
  name: string,
  touched?: LiveBuffer | LiveFile,
  sweep = false,
): void {
  const { device } = world;
  const stats = device.memoryStats();
  sameFigures(stats, model.stats(), `${name}: memoryStats()`);
  sameValue(stats.wiredLimit, world.wiredLimit, `${name}: wiredLimit`);
  atMost(stats.wired, world.wiredLimit, `${name}: wired ≤ wiredLimit`);
  atMost(stats.wiredMapped, stats.wired, `${name}: wiredMapped ≤ wired`);
  const counters = device.counters();
  sameFigures(counters, model.counters(), `${name}: counters()`);
  sameValue(counters.mappings, world.files.length, `${name}: mappings`);
  // The backend holds exactly the system buffers and mappings of the model (and of the second Device).
  const backend = counters.backend;
  const start = world.startCounters;
  const [now, then] = [held(backend), held(start)];
  sameFigures(
    { buffers: now.buffers - then.buffers, mappings: now.mappings - then.mappings },
    { buffers: model.live.size + model.cache.length + otherHeld(world), mappings: model.mappings.size },
    `${name}: what the backend holds`,
  );
  if (world.mock !== undefined) {
    // What the mock reports wired (the second Device wires nothing: its wired limit stays 0).
    sameValue(stats.wired, backend.wiredBytes, `${name}: wired = the mock's wiredBytes`);
  } else if (backend.wiringFailures === start.wiringFailures) {
    sameValue(
      backend.wiredBytes - start.wiredBytes,
      stats.wired,
      `${name}: wired = the backend's wiredBytes`,
    );
  }
  if (touched !== undefined) {
    if ("buffer" in touched) checkBuffer(touched, name);
    else checkFile(touched, name);
  }
  world.sinceSweep += 1;
  if (!sweep && world.sinceSweep < SWEEP_EVERY) return;
  world.sinceSweep = 0;
  if (world.mock !== undefined) {
    // wiredMapped summed independently of the residency manager.
    let wiredMapped = 0;
    for (const set of world.mock.liveResidencySets) {
      for (const allocation of set.committedAllocations()) {
        if (allocation instanceof MockMappedFile && set.isWired(allocation))
          wiredMapped += allocation.allocatedSize;
      }
    }
    sameValue(stats.wiredMapped, wiredMapped, `${name}: wiredMapped summed over the mock's sets`);
  }
  // Data written reads back, through new and old views alike; stale views stay detached.
  for (const live of world.buffers) checkBuffer(live, name);
  for (const live of world.files) checkFile(live, name);
  for (const view of world.stale) sameValue(view.byteLength, 0, `${name}: a stale view's length`);
}

type Command = fc.Command<DeviceModel, World>;

/**
 * A command of the run: `act` does the step on the Device and the model (and returns the buffer or file whose
 * bytes it touched); every step is counted and ends with {@link checkWorld}.
 */
function command(
  name: string,
  label: string,
  act: (model: DeviceModel, world: World) => LiveBuffer | LiveFile | undefined,
  check: (model: DeviceModel) => boolean = () => true,
): Command {
  return {
    check,
    run(model, world) {
      tally(name).steps += 1;
      checkWorld(model, world, name, act(model, world));
    },
    toString: () => label,
  };
}

/** Calls `action`, which must refuse (the model says so), with the refusal's code. */
function expectRefusal(
  action: () => unknown,
  refusal: keyof typeof refusalCodes,
  what: string,
  name: string,
) {
  expect(codeOf(thrown(action)), what).toBe(refusalCodes[refusal]);
  tally(name).refusals += 1;
}

const malloc = (bytes: number, name: string) =>
  command(name, `malloc(${bytes})`, (model, world) => {
    const hitsBefore = model.cacheHits;
    const outcome = model.malloc(bytes);
    if (!outcome.ok) {
      expectRefusal(() => world.device.malloc(bytes), outcome.refusal, `malloc(${bytes})`, name);
    } else {
      const buffer = world.device.malloc(bytes);
      expect(buffer.length).toBe(bytes);
      const handed = outcome.value;
      if (handed === undefined) {
        expect(buffer.allocatedLength).toBe(0);
        buffer.free(); // counted nowhere, freeing it is a no-op
      } else {
        expect(buffer.allocatedLength).toBe(handed.length);
        const native = nativeOf(buffer)!;
        // A cache hit hands back the very buffer the model chose (smallest fitting, oldest of its length).
        if (model.cacheHits > hitsBefore) expect(world.ids.get(native)).toBe(handed.id);
        else expect(world.ids.has(native)).toBe(false);
        world.ids.set(native, handed.id);
        world.buffers.push({ buffer, modelId: handed.id, written: new Map(), views: [] });
      }
      world.trace?.mallocs.push(bytes);
    }
    if (model.cacheHits > hitsBefore) tally(name).cacheHits += 1;
    return undefined;
  });

const hasBuffers = (model: DeviceModel) => model.live.size > 0;

/** Frees the `pick`-th live buffer or mapped file, in the model too: its views read 0 bytes from then on. */
const letGo = (what: "buffer" | "file", pick: number, name: string) =>
  command(
    name,
    `${what === "buffer" ? "free" : "release"}(#${pick})`,
    (model, world) => {
      const list: (LiveBuffer | LiveFile)[] = what === "buffer" ? world.buffers : world.files;
      const [live] = list.splice(pick % list.length, 1) as [LiveBuffer | LiveFile];
      const held = "buffer" in live ? live.buffer : live.file;
      const views = [new Uint8Array(held.contents()), ...("views" in live ? live.views : [])];
      if ("buffer" in live) model.free(live.modelId!);
      else model.release(live.modelId);
      held.free();
      sameValue(held.freed, true, `a freed ${what}`);
      for (const stale of views) sameValue(stale.byteLength, 0, `a freed ${what}'s view`);
      world.stale.push(...views);
      return undefined;
    },
    (model) => (what === "buffer" ? model.live.size : model.mappings.size) > 0,
  );

/** Buffers up to this size are moved away (the moved views are held to the end of the run). */
const MOVE_AT_MOST = 64 * KIB;

/**
 * Moves a live buffer's view away with transfer() and frees the buffer (host backend): the buffer is never
 * reused, and its bytes stay counted, in `quarantined` and against the memory limit, while the moved view
 * lives (to the end of the run).
 */
const moveAway = (pick: number, name: string) =>
  command(
    name,
    `moveAway(#${pick})`,
    (model, world) => {
      const index = pick % world.buffers.length;
      const live = world.buffers[index]!;
      if (live.buffer.allocatedLength > MOVE_AT_MOST) return undefined;
      world.buffers.splice(index, 1);
      const moved = new Uint8Array(transfer(live.buffer.contents()));
      for (const [offset, value] of live.written) sameValue(moved[offset], value, "a moved view's byte");
      world.moved.push(moved);
      model.freeQuarantined(live.modelId!);
      live.buffer.free();
      for (const stale of live.views) sameValue(stale.byteLength, 0, "a moved buffer's other view");
      world.stale.push(...live.views);
      tally(name).movedAway += 1;
      return undefined;
    },
    hasBuffers,
  );

const write = (pick: number, where: number, value: number, keepView: boolean, name: string) =>
  command(
    name,
    `write(#${pick}, ${where.toFixed(3)}, ${value})`,
    (_model, world) => {
      const live = world.buffers[pick % world.buffers.length]!;
      const view = new Uint8Array(live.buffer.contents());
      // Anywhere in the view (exactly `length` bytes, whatever the size class), and its last byte.
      for (const offset of [Math.floor(where * live.buffer.length), live.buffer.length - 1]) {
        view[offset] = value;
        live.written.set(offset, value);
      }
      if (keepView && live.views.length < 4) live.views.push(view);
      return live;
    },
    hasBuffers,
  );

const mapFile = (fileIndex: number, name: string) => {
  const source = files[fileIndex]!;
  const what = `mapFile(${source.bytes.byteLength} bytes)`;
  return command(name, what, (model, world) => {
    const id = world.nextMappingId++;
    const outcome = model.mapFile(source.bytes.byteLength, id);
    if (!outcome.ok) {
      expectRefusal(() => world.device.mapFile(source.path), outcome.refusal, what, name);
    } else {
      const file = world.device.mapFile(source.path);
      expect(file.length).toBe(source.bytes.byteLength);
      expect(file.allocatedLength).toBe(outcome.value);
      world.files.push({ file, modelId: id, source: source.bytes });
    }
    return world.files.at(-1);
  });
};

const limit = (which: "memory" | "cache" | "wired", bytes: number, name: string) =>
  command(name, `set${which[0]!.toUpperCase()}${which.slice(1)}Limit(${bytes})`, (model, world) => {
    const { device } = world;
    if (which === "memory") {
      expect(device.setMemoryLimit(bytes)).toBe(model.setMemoryLimit(bytes));
    } else if (which === "cache") {
      expect(device.setCacheLimit(bytes)).toBe(model.setCacheLimit(bytes));
    } else if (bytes > world.workingSet) {
      expect(() => device.setWiredLimit(bytes)).toThrow(
        expect.objectContaining({ code: "ERR_NUVEC_WIRED_LIMIT" }),
      );
      tally(name).refusals += 1;
    } else {
      expect(device.setWiredLimit(bytes)).toBe(world.wiredLimit);
      world.wiredLimit = bytes;
    }
    return undefined;
  });

const simple = (which: "clearCache" | "resetPeak" | "refreshResidency", name: string) =>
  command(name, `${which}()`, (model, world) => {
    world.device[which]();
    if (which === "clearCache") model.clearCache();
    if (which === "resetPeak") model.resetPeak();
    return undefined;
  });

/**
 * The process's other user: a second Device on the same backend. It opens, mallocs, writes and frees (its
 * cache limit is 0 and it frees at once, so it holds nothing between steps and cannot move this Device's
 * limits, whatever accounts a limit is kept in), and closes; meanwhile the first Device's figures, bytes and
 * buffer identities must not change.
 */
const otherDevice = (action: "open" | "malloc" | "close", bytes: number, name: string) =>
  command(name, action === "malloc" ? `other.malloc(${bytes})` : `other.${action}()`, (_model, world) => {
    tally(name).otherDeviceSteps += 1;
    if (action === "open") {
      world.other ??= world.openOther();
    } else if (action === "close") {
      world.other?.close();
      world.other = undefined;
    } else if (world.other !== undefined) {
      let buffer: DeviceBuffer | undefined;
      try {
        buffer = world.other.malloc(bytes);
      } catch (error) {
        // Its own limits (or the host's memory) may refuse; a refusal is typed and changes nothing here.
        expect(codeOf(error)).toMatch(/^ERR_NUVEC_/);
      }
      if (buffer !== undefined) {
        const native = nativeOf(buffer);
        // Never one of this Device's buffers, live or cached.
        if (native !== undefined) sameValue(world.ids.has(native), false, "the other Device's buffer");
        const view = new Uint8Array(buffer.contents());
        view.fill(0xa5);
        buffer.free();
        sameValue(view.byteLength, 0, "the other Device's freed view");
      }
    }
    return undefined;
  });

/**
 * A trace window: starts a trace, or stops the one running and checks that it ends with the window's
 * mallocs, in order (it may open with more: a trace can describe what was live at its start).
 */
const trace = (name: string) =>
  command(name, "trace()", (_model, world) => {
    if (world.trace === undefined) {
      world.device.startTrace(`fuzz-${name}`);
      world.trace = { mallocs: [] };
    } else {
      const events = world.device.stopTrace().events;
      const allocated = events.filter((event) => event[0] === "a").map((event) => event[2] as number);
      expect(allocated.slice(allocated.length - world.trace.mallocs.length)).toEqual(world.trace.mallocs);
      world.trace = undefined;
      tally(name).traceWindows += 1;
    }
    return undefined;
  });

interface Shape {
  name: string;
  facts: ModelFacts;
  /** Largest sizes asked for, and the range of limits tried. */
  largest: number;
  limitRange: number;
  wiredRange: number;
  /** The memory limit the device is opened with (the host's default would allow gigabytes). */
  memoryLimit: number | undefined;
  /** Wired limits tried besides the range (the working set and one above it, where that is cheap). */
  wiredChoices: number[];
  open: () => { device: Device; backend: NativeBackend; mock: MockBackend | undefined };
  /** A second Device on the same backend (cache limit 0, wired limit 0). */
  openOther: (backend: NativeBackend) => Device;
  /** Whether views are moved away with transfer() (the host backend quarantines their buffers). */
  movesViews?: boolean;
}

function commandsFor(shape: Shape): fc.Arbitrary<Iterable<Command>> {
  const { name, facts } = shape;
  const size = fc.oneof(
    { weight: 1, arbitrary: fc.constant(0) },
    // Sizes that come back, so that the cache is hit (and the reuse window's edges are met).
    { weight: 6, arbitrary: fc.constantFrom(200, 256, 1000, 4096, 16384, 20000, 40000, 65536, 100_000) },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 600 }) },
    { weight: 4, arbitrary: fc.integer({ min: 1, max: 40 * KIB }) },
    { weight: 3, arbitrary: fc.integer({ min: 16 * KIB, max: 300 * KIB }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: shape.largest }) },
    {
      weight: 1,
      arbitrary: fc.integer({
        min: Math.max(1, facts.maxBufferLength - 20 * KIB),
        max: Math.min(facts.maxBufferLength + 40 * KIB, Number.MAX_SAFE_INTEGER),
      }),
    },
  );
  const limits = fc.oneof(
    fc.integer({ min: 0, max: shape.limitRange }),
    fc.integer({ min: 0, max: 4 * MIB }),
    fc.constant(shape.memoryLimit ?? Math.floor(Math.min(1.5 * facts.workingSet, 0.95 * facts.memorySize))),
  );
  const pick = fc.nat({ max: 1000 });
  const commands: fc.Arbitrary<Command>[] = [
    size.map((bytes) => malloc(bytes, name)),
    size.map((bytes) => malloc(bytes, name)),
    size.map((bytes) => malloc(bytes, name)),
    pick.map((index) => letGo("buffer", index, name)),
    pick.map((index) => letGo("buffer", index, name)),
    fc
      .tuple(
        pick,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 255 }),
        fc.boolean(),
      )
      .map(([index, where, value, keep]) => write(index, where, value, keep, name)),
    fc.nat({ max: files.length - 1 }).map((index) => mapFile(index, name)),
    pick.map((index) => letGo("file", index, name)),
    limits.map((bytes) => limit("memory", bytes, name)),
    limits.map((bytes) => limit("cache", bytes, name)),
    fc
      .oneof(fc.integer({ min: 0, max: shape.wiredRange }), fc.constantFrom(...shape.wiredChoices))
      .map((bytes) => limit("wired", bytes, name)),
    fc.constant(simple("clearCache", name)),
    fc.constant(simple("resetPeak", name)),
    fc.constant(simple("refreshResidency", name)),
    fc.constantFrom("open", "close").map((action) => otherDevice(action, 0, name)),
    fc.integer({ min: 0, max: 200 * KIB }).map((bytes) => otherDevice("malloc", bytes, name)),
    fc.constant(trace(name)),
  ];
  if (shape.movesViews === true) commands.push(pick.map((index) => moveAway(index, name)));
  const replayPath = process.env.NUVEC_FUZZ_REPLAY_PATH;
  return fc.commands(commands, {
    // Long runs: opening a Device costs more than a step, and deep states find more.
    maxCommands: MAX_COMMANDS,
    // Lengths spread up to maxCommands (the default size keeps them near 50).
    size: "max",
    ...(replayPath === undefined ? {} : { replayPath }),
  });
}

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

/** The longest command sequence of one run (runs average about half of it). */
const MAX_COMMANDS = budget("NUVEC_FUZZ_MAX_COMMANDS", 400, 400);
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
