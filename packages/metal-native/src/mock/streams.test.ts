// The mock's streams beyond the contract (@nuvec/native-core/contract's stream suite): manual completion,
// out-of-order runs, what an operation holds and when the counters let it go, close with work pending,
// failures of a kernel, and the call log.
import type { NativeKernelArgument, NativeLaunchShape, NativeStream } from "@nuvec/native-core";
import { ArgumentError, OutOfMemoryError, StateError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { MOCK_STANDARD_KERNELS } from "../../../native-core/test/stream-contract-kernels.js";
import { thrown } from "../../../native-core/test/support.js";
import { MockBackend, MockStream } from "../mock.js";

const shape = (n: number): NativeLaunchShape => ({
  grid: [Math.ceil(n / 64), 1, 1],
  block: [64, 1, 1],
  sharedBytes: 0,
});
const buffer = (allocation: object, offset = 0) =>
  ({ kind: "buffer", buffer: allocation, offset }) as NativeKernelArgument;
const f32 = (value: number): NativeKernelArgument => ({ kind: "f32", value });
const u32 = (value: number): NativeKernelArgument => ({ kind: "u32", value });
const floats = (values: number[]) => new Uint8Array(Float32Array.from(values).buffer);
const asFloats = (bytes: Uint8Array) => [...new Float32Array(bytes.slice().buffer)];
const released = expect.objectContaining({ name: "StateError", code: "ERR_NUVEC_RELEASED" });

function manual() {
  const mock = new MockBackend({ streams: { completion: "manual" } });
  const module = mock.loadModule({ mock: MOCK_STANDARD_KERNELS });
  return { mock, scale: module.kernel("scale"), fill: module.kernel("fill"), module };
}

/** Whether `promise` has settled, after the microtasks queued so far ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe("mock streams, manual completion", () => {
  it("run nothing until runStream, which runs the count asked for and says how many ran", async () => {
    const { mock, scale } = manual();
    const stream = mock.newStream();
    const x = mock.newBuffer(16);
    stream.write(x, 0, floats([1, 2, 3, 4]));
    stream.launch(scale, shape(4), [buffer(x), f32(2), u32(4)]);
    const read = stream.read(x, 0, 16);
    const event = stream.record();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect([stream.pending, event.query(), await settled(read)]).toEqual([3, false, false]);
    expect(asFloats(x.read(0, 16))).toEqual([0, 0, 0, 0]);
    expect(mock.runStream(stream, 1)).toBe(1);
    expect(asFloats(x.read(0, 16))).toEqual([1, 2, 3, 4]);
    expect(mock.runStream(stream)).toBe(2);
    expect(mock.runStream(stream)).toBe(0);
    expect([stream.pending, event.query()]).toEqual([0, true]);
    expect(asFloats(await read)).toEqual([2, 4, 6, 8]);
  });

  it("complete streams out of order: a wait holds its stream until the other ran that far", async () => {
    const { mock, scale, fill } = manual();
    const [first, second] = [mock.newStream(), mock.newStream()];
    const x = mock.newBuffer(16);
    first.launch(fill, shape(4), [buffer(x), f32(3), u32(4)]);
    const filled = first.record();
    first.launch(scale, shape(4), [buffer(x), f32(100), u32(4)]); // after the event: not waited for
    second.wait(filled);
    second.launch(scale, shape(4), [buffer(x), f32(2), u32(4)]);
    const read = second.read(x, 0, 16);
    expect(mock.runStream(second)).toBe(0); // held by the wait
    expect(mock.runStream(first, 1)).toBe(1);
    expect(filled.query()).toBe(true);
    expect(mock.runStream(second)).toBe(3);
    expect(asFloats(await read)).toEqual([6, 6, 6, 6]);
    expect(first.pending).toBe(1);
    mock.runStream(first);
    expect(asFloats(x.read(0, 16))).toEqual([600, 600, 600, 600]);
  });

  it("run what a blocking wait needs: synchronize() runs the stream and the streams it waits for", () => {
    const { mock, fill, scale } = manual();
    const [first, second] = [mock.newStream(), mock.newStream()];
    const x = mock.newBuffer(8);
    first.launch(fill, shape(2), [buffer(x), f32(5), u32(2)]);
    second.wait(first.record());
    second.launch(scale, shape(2), [buffer(x), f32(3), u32(2)]);
    const end = second.record();
    end.synchronize();
    expect([first.pending, second.pending, end.query()]).toEqual([0, 0, true]);
    expect(asFloats(x.read(0, 8))).toEqual([15, 15]);
  });

  it("hold a released buffer's memory and counters until the operations naming it ran", async () => {
    const { mock, scale } = manual();
    const stream = mock.newStream();
    const x = mock.newBuffer(4096);
    const y = mock.newBuffer(4096);
    stream.write(x, 0, floats([1, 2]));
    stream.launch(scale, shape(2), [buffer(x), f32(4), u32(2)]);
    stream.copy(y, 0, x, 0, 8);
    const view = x.contents();
    x.release();
    expect([x.released, view.byteLength, x.streamHolds, y.streamHolds]).toEqual([true, 0, 3, 1]);
    expect(thrown(() => x.contents())).toEqual(released);
    const held = mock.counters();
    expect([held.buffersReleased, held.bufferBytes]).toEqual([0, 2 * 4096]);
    expect(mock.liveBuffers).toEqual([x, y]);
    mock.runStream(stream, 2);
    expect([mock.counters().buffersReleased, x.streamHolds]).toEqual([0, 1]);
    mock.runStream(stream);
    expect([mock.counters().buffersReleased, mock.counters().bufferBytes, x.streamHolds]).toEqual([
      1, 4096, 0,
    ]);
    expect(mock.liveBuffers).toEqual([y]);
    expect(asFloats(y.read(0, 8))).toEqual([4, 8]);
  });

  it("hold a released mapping until a copy out of it ran", () => {
    const { mock } = manual();
    mock.addFile("/weights.bin", Uint8Array.of(9, 8, 7, 6));
    const stream = mock.newStream();
    const file = mock.mapFile("/weights.bin");
    const x = mock.newBuffer(4);
    stream.copy(x, 0, file, 1, 3);
    file.release();
    expect([file.streamHolds, mock.counters().mappingsReleased, mock.liveMappings.length]).toEqual([1, 0, 1]);
    mock.runStream(stream);
    expect([mock.counters().mappingsReleased, mock.counters().mappedBytes, mock.liveMappings.length]).toEqual(
      [1, 0, 0],
    );
    expect([...x.read(0, 4)]).toEqual([8, 7, 6, 0]);
  });

  it("drop pending work at close: its promises reject with a StateError, what it held is let go", async () => {
    const { mock, scale } = manual();
    const stream = mock.newStream();
    const x = mock.newBuffer(64);
    stream.launch(scale, shape(16), [buffer(x), f32(2), u32(16)]);
    const read = stream.read(x, 0, 64);
    const event = stream.record();
    const done = event.done();
    const forgotten = stream.read(x, 0, 4); // never awaited: no unhandled rejection
    x.release();
    mock.close();
    await expect(read).rejects.toEqual(released);
    await expect(done).rejects.toEqual(released);
    expect(forgotten).toBeInstanceOf(Promise);
    expect(mock.counters()).toMatchObject({ buffersMade: 1, buffersReleased: 1, bufferBytes: 0 });
    expect(thrown(() => event.query())).toEqual(released);
    expect(thrown(() => stream.record())).toEqual(released);
    expect(thrown(() => mock.newStream())).toEqual(released);
  });
});

describe("mock streams, auto completion", () => {
  it("run a batch in a macrotask after the calls that enqueued it", async () => {
    const mock = new MockBackend();
    const { fill } = { fill: mock.loadModule({ mock: MOCK_STANDARD_KERNELS }).kernel("fill") };
    const stream = mock.newStream();
    const x = mock.newBuffer(8);
    stream.launch(fill, shape(2), [buffer(x), f32(1.25), u32(2)]);
    const event = stream.record();
    await Promise.resolve();
    expect([event.query(), stream.pending]).toEqual([false, 1]);
    await event.done();
    expect(asFloats(x.read(0, 8))).toEqual([1.25, 1.25]);
  });

  it("run a stream held by a wait once the one operation it waits for ran", async () => {
    const mock = new MockBackend();
    const fill = mock.loadModule({ mock: MOCK_STANDARD_KERNELS }).kernel("fill");
    const [first, second] = [mock.newStream(), mock.newStream()];
    const x = mock.newBuffer(8);
    const y = mock.newBuffer(8);
    second.write(y, 0, floats([9, 9])); // the second stream's macrotask comes first, and stops at the wait
    first.launch(fill, shape(2), [buffer(x), f32(4), u32(2)]);
    second.wait(first.record());
    second.copy(y, 0, x, 0, 8);
    expect(asFloats(await second.read(y, 0, 8))).toEqual([4, 4]);
  });

  it("skip the work after a failing kernel, reporting its failure at every point after it; the points before resolve", async () => {
    const mock = new MockBackend();
    const failing = mock
      .loadModule({
        mock: {
          boom: {
            parameters: ["u32"],
            run() {
              throw new RangeError("boom");
            },
          },
        },
      })
      .kernel("boom");
    const stream = mock.newStream();
    const before = stream.record();
    stream.launch(failing, shape(1), [u32(1)]);
    const after = stream.record();
    const x = mock.newBuffer(4);
    const read = stream.read(x, 0, 4);
    await before.done();
    await expect(after.done()).rejects.toThrow("boom");
    await expect(read).rejects.toThrow("boom"); // later work is skipped
    await expect(stream.done()).rejects.toThrow("boom");
    expect(thrown(() => stream.synchronize())).toBeInstanceOf(RangeError);
  });

  it("fail an operation on a buffer with no real memory with an OutOfMemoryError, at its points", async () => {
    const mock = new MockBackend({ realMemoryUpTo: 1024 });
    const fill = mock.loadModule({ mock: MOCK_STANDARD_KERNELS }).kernel("fill");
    const stream = mock.newStream();
    const large = mock.newBuffer(4096);
    stream.launch(fill, shape(4), [buffer(large), f32(1), u32(4)]);
    const error = await stream.done().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(OutOfMemoryError);
    expect(error).toMatchObject({ code: "ERR_NUVEC_ALLOCATION_FAILED" });
  });
});

describe("mock stream calls", () => {
  it("pass scalars as the kernel takes them: f32 rounded, 64-bit integers as bigints", async () => {
    const mock = new MockBackend();
    const seen: unknown[] = [];
    const probe = mock
      .loadModule({
        mock: {
          probe: {
            parameters: ["f32", "f64", "i32", "u32", "i64", "u64"],
            run: (args) => seen.push(...args),
          },
        },
      })
      .kernel("probe");
    const stream = mock.newStream();
    const args: NativeKernelArgument[] = [
      { kind: "f32", value: 0.1 },
      { kind: "f64", value: 0.1 },
      { kind: "i32", value: -(2 ** 31) },
      { kind: "u32", value: 2 ** 32 - 1 },
      { kind: "i64", value: -(2n ** 63n) },
      { kind: "u64", value: 2n ** 64n - 1n },
    ];
    stream.launch(probe, shape(1), args);
    await stream.done();
    expect(seen).toEqual([Math.fround(0.1), 0.1, -(2 ** 31), 2 ** 32 - 1, -(2n ** 63n), 2n ** 64n - 1n]);
    const out: [NativeKernelArgument, string][] = [
      [{ kind: "i32", value: 2 ** 31 }, "args[2]"],
      [{ kind: "u32", value: -1 }, "args[3]"],
      [{ kind: "i32", value: 1.5 }, "args[2]"],
      [{ kind: "i64", value: 1 } as never, "args[4]"],
      [{ kind: "u64", value: -1n }, "args[5]"],
    ];
    for (const [bad, argument] of out) {
      const index = Number(argument.slice(5, -1));
      const given = args.map((arg, at) => (at === index ? bad : arg));
      const error = thrown(() => stream.launch(probe, shape(1), given));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error).toMatchObject({ argument });
    }
    expect(stream.pending).toBe(0);
  });

  it("are logged and counted, refusals as rejected", () => {
    const { mock, scale } = manual();
    mock.clearCalls();
    const stream = mock.newStream();
    const x = mock.newBuffer(16);
    stream.launch(scale, shape(4), [buffer(x), f32(2), u32(4)]);
    expect(thrown(() => stream.launch(scale, shape(4), [buffer(x)]))).toBeInstanceOf(ArgumentError);
    stream.write(x, 4, Uint8Array.of(1, 2));
    mock.runStream(stream);
    const calls = mock.calls.filter((call) => call.call !== "newBuffer");
    expect(calls.map(({ call, target, argument, outcome }) => [call, target, argument, outcome])).toEqual([
      ["newStream", "stream#1", undefined, "ok"],
      ["stream.launch", "stream#1", "scale", "ok"],
      ["stream.launch", "stream#1", "scale", "rejected"],
      ["stream.write", "stream#1", 2, "ok"],
      ["runStream", "stream#1", undefined, "ok"],
    ]);
    expect(mock.callCounts()).toMatchObject({
      "stream.launch": 2,
      "module.kernel": 2,
      loadModule: 1,
      runStream: 1,
    });
  });

  it("refuse look-alikes, foreign and released handles, and bad options", () => {
    const { mock, scale } = manual();
    const other = new MockBackend();
    const stream = mock.newStream();
    const theirs = other.newBuffer(16);
    expect(thrown(() => Object.create(MockStream.prototype).record())).toMatchObject({ argument: "this" });
    expect(thrown(() => stream.launch(scale, shape(4), [buffer(theirs), f32(1), u32(4)]))).toBeInstanceOf(
      ArgumentError,
    );
    expect(thrown(() => stream.wait(other.newStream().record()))).toMatchObject({ argument: "event" });
    expect(thrown(() => mock.runStream(other.newStream()))).toMatchObject({ argument: "stream" });
    expect(thrown(() => mock.runStream(stream, -1))).toMatchObject({ argument: "count" });
    const gone: NativeStream = mock.newStream();
    gone.release();
    expect(thrown(() => mock.runStream(gone as MockStream))).toEqual(released);
    expect(
      thrown(() => stream.launch(scale, { grid: [1, 1], block: [1, 1, 1], sharedBytes: 0 } as never, [])),
    ).toMatchObject({ argument: "shape.grid" });
    expect(thrown(() => new MockBackend({ streams: { completion: "later" as never } }))).toMatchObject({
      argument: "streams.completion",
    });
    expect(thrown(() => new MockBackend({ streams: { order: 1 } as never }))).toMatchObject({
      argument: "streams",
    });
    expect(stream.pending).toBe(0);
    expect(StateError).toBeDefined();
  });
});
