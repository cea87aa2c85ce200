// The Device fuzzer's commands (fuzz.test.ts): malloc, free, moving a buffer's view away, writes, mapped
// files, limits, the second Device and trace windows, each applied to the model and the world, and the
// arbitrary of their sequences for a device shape. Apart from the world they act on (fuzz-world.ts) and the
// runner that checks the world after each of them.
import type { NativeBackend } from "@nuvec/metal-native";
import type { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { expect } from "vitest";
import { thrown } from "../../../stats/test/thrown.js";
import type { Device, DeviceBuffer } from "../../src/index.js";
import {
  checkWorld,
  codeOf,
  files,
  KIB,
  type LiveBuffer,
  type LiveFile,
  MIB,
  nativeOf,
  refusalCodes,
  sameValue,
  tally,
  type World,
} from "./fuzz-world.js";
import type { DeviceModel, ModelFacts } from "./model.js";
import { budget, transfer } from "./support.js";

/** The longest command sequence of one run (runs average about half of it). */
const MAX_COMMANDS = budget("NUVEC_FUZZ_MAX_COMMANDS", 400, 400);

/** A command of the fuzzer, over the model and the world. */
export type Command = fc.Command<DeviceModel, World>;

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
export const trace = (name: string) =>
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

/** A device shape fuzzed: its name, the model's facts, the sizes and limits tried, and how to open it. */
export interface Shape {
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

/** The arbitrary of command sequences for `shape`, at most MAX_COMMANDS long. */
export function commandsFor(shape: Shape): fc.Arbitrary<Iterable<Command>> {
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
