// Model-based fuzzing of the Device's streams on the mock with manual completion: several streams, launches,
// writes, reads, copies, frees, records, waits, runs of single streams (out of order, part way), host uses,
// synchronizes, stream releases, clearCache, and events that never complete until close. After every step the
// model (streams-model.ts) checks every figure against a shadow Device without streams, the held frees
// against `streamPending`, and that no memory was touched by an older owner's work after a newer owner's
// (no reuse while work naming it is pending on another stream without a wait); at the end, close settles
// every promise and gives everything back.
//
// A failure prints fast-check's seed and path; replay it with NUVEC_FUZZ_SEED=<seed> NUVEC_FUZZ_PATH=<path>.
import type { MockKernel } from "@nuvec/metal-native";
import { MockBackend } from "@nuvec/metal-native/mock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bufferState } from "../../src/device-buffer.js";
import { Device, type DeviceBuffer, type Kernel } from "../../src/index.js";
import { mockStreamOf } from "../streams-support.js";
import { type ModelBuffer, StreamsModel } from "./streams-model.js";
import { budget, sectionFigures } from "./support.js";

const KIB = 1024;
// Few size classes, so that freed memory is often reused while work naming it is still pending.
const SIZES = [16, 100, 4 * KIB, 9 * KIB];
const MAX_STREAMS = 4;

let current: StreamsModel | undefined;

/** Marks its op as run and touches the op's memory as the op's owner (the safety ledger). */
const tag: MockKernel = {
  parameters: ["buffer", "u32"],
  run(args) {
    const model = current as StreamsModel;
    const op = model.ops[args[1] as number]!;
    op.ran = true;
    model.touch(op.memory, op.owner, `tag launch ${args[1] as number}`);
    (args[0] as Uint8Array)[0] = op.owner & 0xff;
  },
};

type Command =
  | { kind: "malloc"; size: number }
  | { kind: "free"; buffer: number }
  | { kind: "launch"; stream: number; buffer: number }
  | { kind: "write"; stream: number; buffer: number; bytes: number }
  | { kind: "read"; stream: number; buffer: number }
  | { kind: "copy"; stream: number; target: number; source: number }
  | { kind: "record"; stream: number }
  | { kind: "wait"; stream: number; event: number }
  | { kind: "run"; stream: number; count: number | undefined }
  | { kind: "host"; buffer: number; write: boolean }
  | { kind: "syncStream"; stream: number }
  | { kind: "syncDevice" }
  | { kind: "newStream" }
  | { kind: "release"; stream: number }
  | { kind: "clearCache" };

const index = fc.nat(63);
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant("malloc" as const), size: fc.nat(SIZES.length - 1) }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("free" as const), buffer: index }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("launch" as const), stream: index, buffer: index }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("write" as const),
      stream: index,
      buffer: index,
      bytes: fc.nat(16),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("read" as const), stream: index, buffer: index }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("copy" as const), stream: index, target: index, source: index }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("record" as const), stream: index }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("wait" as const), stream: index, event: index }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("run" as const),
      stream: index,
      count: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("host" as const), buffer: index, write: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("syncStream" as const), stream: index }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("syncDevice" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("newStream" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("release" as const), stream: index }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("clearCache" as const) }) },
);

const segmentIds = new WeakMap<object, number>();

/**
 * The memory a buffer is, for the safety ledger: its system buffer, or under the segments policy its block's
 * segment and offset (ranges are new objects for every block, the memory is the segment's).
 */
function memoryOf(buffer: DeviceBuffer): unknown {
  const allocation = bufferState(buffer).allocation as {
    buffer: object | undefined;
    record?: { segment?: { buffer?: object }; offset?: number };
  };
  const segment = allocation.record?.segment?.buffer;
  if (segment === undefined || allocation.record?.offset === undefined) return allocation.buffer;
  if (!segmentIds.has(segment)) segmentIds.set(segment, nextSegmentId++);
  return `${segmentIds.get(segment)}@${allocation.record.offset}`;
}
let nextSegmentId = 0;

const tally = { runs: 0, steps: 0, heldFrees: 0, fencedReuses: 0, pendingAtClose: 0 };

/** One step on the device and the model; returns the promises it made (settled by the end of the run). */
function step(model: StreamsModel, kernel: Kernel, c: Command, promises: Promise<unknown>[]): void {
  const { device, streams, live } = model;
  const pick = <T>(list: readonly T[], i: number): T | undefined =>
    list.length === 0 ? undefined : list[i % list.length];
  const open = streams.filter((entry) => !entry.released);
  const stream = "stream" in c ? pick(open, c.stream) : undefined;
  const streamIndex = stream === undefined ? -1 : streams.indexOf(stream);
  const use = (entry: ModelBuffer) => entry.streams.add(streamIndex);
  switch (c.kind) {
    case "malloc": {
      model.poll();
      const bytes = SIZES[c.size]!;
      const buffer = device.malloc(bytes);
      const shadow = model.shadow.malloc(bytes);
      live.push({ buffer, shadow, owner: model.nextOwner(), streams: new Set() });
      const memory = memoryOf(buffer);
      if (model.ops.some((op) => !op.ran && op.memory === memory)) tally.fencedReuses += 1;
      return;
    }
    case "free": {
      const entry = pick(live, c.buffer);
      if (entry === undefined) return;
      live.splice(live.indexOf(entry), 1);
      if (model.openUses(entry).length >= 2) tally.heldFrees += 1;
      entry.buffer.free();
      model.free(entry);
      return;
    }
    case "launch": {
      const entry = pick(live, c.buffer);
      if (entry === undefined || stream === undefined) return;
      const op = model.ops.length;
      model.ops.push({ owner: entry.owner, memory: memoryOf(entry.buffer), ran: false });
      stream.stream.launch(kernel, { grid: [1], block: [1] }, [entry.buffer, { u32: op }]);
      use(entry);
      return;
    }
    case "write": {
      const entry = pick(live, c.buffer);
      if (entry === undefined || stream === undefined) return;
      stream.stream.write(entry.buffer, new Uint8Array(c.bytes).fill(entry.owner & 0xff));
      if (c.bytes > 0) use(entry);
      return;
    }
    case "read": {
      const entry = pick(live, c.buffer);
      if (entry === undefined || stream === undefined) return;
      const read = stream.stream.read(entry.buffer, 0, 8);
      // Settled by the end of the run (close rejects it when its stream never ran); a failed run must not
      // leave it unhandled.
      read.catch(() => {});
      promises.push(read);
      use(entry);
      return;
    }
    case "copy": {
      const target = pick(live, c.target);
      const source = pick(live, c.source);
      if (target === undefined || source === undefined || target === source || stream === undefined) return;
      stream.stream.copy(target.buffer, source.buffer, { length: 16 });
      use(target);
      use(source);
      return;
    }
    case "record":
      if (stream !== undefined) model.events.push(stream.stream.record());
      return;
    case "wait": {
      const event = pick(model.events, c.event);
      if (event === undefined || stream === undefined || event.released) return;
      stream.stream.wait(event);
      return;
    }
    case "run":
      if (stream !== undefined) model.mock.runStream(mockStreamOf(stream.stream), c.count);
      return;
    case "host": {
      const entry = pick(live, c.buffer);
      if (entry === undefined) return;
      if (c.write) entry.buffer.write(new Uint8Array(4).fill(entry.owner & 0xff));
      else entry.buffer.read(0, 4);
      model.hostUse(memoryOf(entry.buffer), entry.owner, "a host use");
      return;
    }
    case "syncStream":
      stream?.stream.synchronize();
      return;
    case "syncDevice":
      device.synchronize();
      model.poll();
      return;
    case "newStream":
      if (open.length < MAX_STREAMS) streams.push({ stream: device.newStream(), released: false });
      return;
    case "release":
      if (stream === undefined || open.length <= 1) return;
      stream.stream.release();
      stream.released = true;
      return;
    case "clearCache":
      device.clearCache();
      model.shadow.clearCache();
      return;
  }
}

async function run(commands: Command[], policy: "mlx" | "bounded" | "segments"): Promise<void> {
  const mock = new MockBackend({ streams: { completion: "manual" } });
  const device = Device.open({ backend: mock, policy, safetyNet: false });
  const shadow = Device.open({ backend: new MockBackend(), policy, safetyNet: false });
  const model = new StreamsModel(device, shadow, mock);
  current = model;
  const kernel = device.loadModule({ mock: { tag } }).kernel("tag");
  model.streams.push(
    { stream: device.newStream(), released: false },
    { stream: device.newStream(), released: false },
  );
  const promises: Promise<unknown>[] = [];
  try {
    for (const [number, c] of commands.entries()) {
      step(model, kernel, c, promises);
      model.check(`step ${number} (${c.kind})`);
      tally.steps += 1;
    }
    tally.pendingAtClose += model.streams.reduce(
      (sum, entry) => sum + (entry.released ? 0 : mockStreamOf(entry.stream).pending),
      0,
    );
    device.close();
    // Close settles every promise, and leaves nothing held.
    const settled = await Promise.race([
      Promise.allSettled(promises).then(() => true),
      new Promise((resolve) => setTimeout(() => resolve(false), 2000)),
    ]);
    expect(settled, "every read settled after close").toBe(true);
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0, cache: 0 });
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
    expect(mock.counters().bufferBytes).toBe(0);
    expect(model.violations).toEqual([]);
    tally.runs += 1;
  } finally {
    current = undefined;
    device.close();
    shadow.close();
  }
}

const runs = budget("NUVEC_STREAMS_FUZZ_RUNS", 60, 2000);
const maxCommands = budget("NUVEC_STREAMS_FUZZ_COMMANDS", 120, 300);
sectionFigures("streams-fuzz", tally);

describe("streams fuzz (mock, manual completion)", () => {
  for (const policy of ["mlx", "bounded", "segments"] as const) {
    it(`every figure, streamPending and memory safety after every step (${policy})`, async () => {
      const seed = Number(process.env.NUVEC_FUZZ_SEED);
      const path = process.env.NUVEC_FUZZ_PATH;
      await fc.assert(
        fc.asyncProperty(
          fc.array(command, { minLength: 10, maxLength: maxCommands, size: "max" }),
          (commands) => run(commands, policy),
        ),
        {
          numRuns: runs,
          verbose: 1,
          ...(Number.isFinite(seed) ? { seed } : {}),
          ...(path === undefined ? {} : { path }),
        },
      );
      expect(tally.heldFrees).toBeGreaterThan(0);
      expect(tally.fencedReuses).toBeGreaterThan(0);
    }, 120_000);
  }
});
