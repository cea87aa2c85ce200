// The Device's streams over the mock backend: launches, writes, reads, copies, events and waits in order,
// the default stream, modules and kernels, and what close settles.
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import { addBias, mockStreamOf, runStream, scale, streamDevice } from "../../test/streams-support.js";
import { Device, Kernel, KernelModule, Stream, StreamEvent } from "../index.js";

const scratch = scratchFolder("nuvec-streams-");

/** A member of the mock, its methods bound to it (the mock's brand checks see the mock, not the Proxy). */
function bound(target: MockBackend, key: string | symbol): unknown {
  const value: unknown = Reflect.get(target, key, target);
  return typeof value === "function" ? value.bind(target) : value;
}

function floats(bytes: Uint8Array): number[] {
  return [...new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4)];
}

describe("streams on the mock", () => {
  it("runs the STREAMS.md example: write, launch, read in order", async () => {
    const { device } = streamDevice();
    using stream = device.newStream();
    using module = device.loadModule({ mock: { scale } });
    const kernel = module.kernel("scale", ["buffer", "f32", "u32"]);
    const n = 300;
    const x = device.malloc(4 * n);
    stream.write(x, new Float32Array(n).fill(1.5));
    stream.launch(kernel, { grid: [Math.ceil(n / 256)], block: [256] }, [x, { f32: 2 }, { u32: n }]);
    const result = floats(await stream.read(x));
    expect(result).toHaveLength(n);
    expect(result.every((value) => value === 3)).toBe(true);
    expect(stream.position).toBe(3);
    x.free();
    await stream.done();
    device.close();
  });

  it("hands out classes with brands: Stream, KernelModule, Kernel, StreamEvent", () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const module = device.loadModule({ mock: { scale } });
    const kernel = module.kernel("scale");
    const event = stream.record();
    expect(stream).toBeInstanceOf(Stream);
    expect(module).toBeInstanceOf(KernelModule);
    expect(kernel).toBeInstanceOf(Kernel);
    expect(event).toBeInstanceOf(StreamEvent);
    expect(kernel.name).toBe("scale");
    expect(kernel.parameters).toEqual(["buffer", "f32", "u32"]);
    expect(kernel.module).toBe(module);
    expect(module.kernelNames).toEqual(["scale"]);
    expect(stream.device).toBe(device);
    expect(module.device).toBe(device);
    expect(typeof stream.id).toBe("number");
    const lookAlike = Object.create(Stream.prototype) as Stream;
    expect(thrown(() => lookAlike.record())).toMatchObject({ name: "ArgumentError", argument: "this" });
    device.close();
  });

  it("takes { buffer, offset }, 64-bit scalars and a mapped-file-free copy between buffers", async () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const kernel = device.loadModule({ mock: { addBias } }).kernel("addBias");
    const source = device.malloc(16);
    const target = device.malloc(16);
    stream.write(
      source,
      Uint8Array.from({ length: 16 }, (_, i) => i),
    );
    stream.launch(kernel, { grid: [1], block: [8] }, [
      { buffer: target, offset: 8 },
      source,
      { u64: 2n ** 64n - 1n },
      { u32: 8 },
    ]);
    stream.copy(target, source, { targetOffset: 0, sourceOffset: 4, length: 4 });
    const bytes = await stream.read(target);
    expect([...bytes]).toEqual([4, 5, 6, 7, 0, 0, 0, 0, 255, 0, 1, 2, 3, 4, 5, 6]);
    expect([...(await stream.read(target, 9, 3))]).toEqual([0, 1, 2]);
    device.close();
  });

  it("takes a mapped file as a source: read, copy and a kernel's argument", async () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const path = scratch.write(
      "weights.bin",
      Uint8Array.from({ length: 32 }, (_, i) => i),
    );
    const file = device.mapFile(path);
    const kernel = device.loadModule({ mock: { addBias } }).kernel("addBias");
    const x = device.malloc(32);
    stream.copy(x, file, { sourceOffset: 16, length: 8 });
    expect([...(await stream.read(x, 0, 8))]).toEqual([16, 17, 18, 19, 20, 21, 22, 23]);
    expect([...(await stream.read(file, 30))]).toEqual([30, 31]);
    stream.launch(kernel, { grid: [1], block: [1] }, [
      x,
      { buffer: file, offset: 4 },
      { u64: 100n },
      { u32: 2 },
    ]);
    expect([...(await stream.read(x, 0, 2))]).toEqual([104, 105]);
    device.close();
  });

  it("orders work across streams with record and wait (manual completion, out of order)", async () => {
    const { device, mock } = streamDevice("manual");
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4);
    a.write(x, Uint8Array.of(1, 2, 3, 4));
    const written = a.record();
    b.wait(written);
    const read = b.read(x);
    expect(written.completed).toBe(false);
    // b cannot pass its wait before a ran.
    expect(runStream(mock, b)).toBe(0);
    expect(runStream(mock, a)).toBe(1);
    expect(written.completed).toBe(true);
    expect(written.released).toBe(false);
    runStream(mock, b);
    expect([...(await read)]).toEqual([1, 2, 3, 4]);
    device.close();
  });

  it("synchronize() of a stream, an event and the device runs what was given (manual completion)", () => {
    const { device, mock } = streamDevice("manual");
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(8);
    a.write(x, Uint8Array.of(9));
    b.write(x, Uint8Array.of(7), 4);
    const event = a.record();
    event.synchronize();
    expect(event.completed).toBe(true);
    expect(mockStreamOf(a).pending).toBe(0);
    expect(mockStreamOf(b).pending).toBe(1);
    device.synchronize();
    expect(mockStreamOf(b).pending).toBe(0);
    expect([...x.read()]).toEqual([9, 0, 0, 0, 7, 0, 0, 0]);
    a.synchronize();
    expect(mock.counters().buffersMade).toBe(1);
    device.close();
  });

  it("has a default stream, made on first use, that release() refuses and close releases", () => {
    const { device, mock } = streamDevice();
    expect(mock.callCounts().newStream ?? 0).toBe(0);
    const stream = device.defaultStream;
    expect(device.defaultStream).toBe(stream);
    expect(thrown(() => stream.release())).toMatchObject({ name: "ArgumentError", argument: "this" });
    stream[Symbol.dispose]();
    expect(stream.released).toBe(false);
    device.close();
    expect(stream.released).toBe(true);
    expect(thrown(() => stream.record())).toMatchObject({ code: "ERR_NUVEC_DEVICE_CLOSED" });
  });

  it("refuses a backend without streams with an UnsupportedError naming the backend", () => {
    const mock = new MockBackend();
    const bare = new Proxy(mock, {
      get: (target, key) => (key === "newStream" || key === "loadModule" ? undefined : bound(target, key)),
    });
    const device = Device.open({ backend: bare, safetyNet: false });
    for (const call of [() => device.newStream(), () => device.defaultStream, () => device.loadModule({})]) {
      expect(thrown(call)).toMatchObject({
        name: "UnsupportedError",
        code: "ERR_NUVEC_STREAMS_UNSUPPORTED",
        message: expect.stringContaining(`mock backend "${mock.name}"`),
      });
    }
    device.close();
  });

  it("refuses at open a backend with one of newStream and loadModule", () => {
    const mock = new MockBackend();
    const half = new Proxy(mock, {
      get: (target, key) => (key === "loadModule" ? undefined : bound(target, key)),
    });
    expect(thrown(() => Device.open({ backend: half }))).toMatchObject({
      name: "ArgumentError",
      argument: "backend.loadModule",
    });
  });

  it("settles every pending promise on close and never hangs (manual completion: nothing ran)", async () => {
    const { device } = streamDevice("manual");
    const stream = device.newStream();
    const x = device.malloc(64);
    stream.write(x, new Uint8Array(64).fill(3));
    const read = stream.read(x);
    const done = stream.done();
    const event = stream.record();
    const eventDone = event.done();
    device.close();
    const outcomes = await Promise.allSettled([read, done, eventDone]);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ name: "StateError" });
    }
    expect(event.released).toBe(true);
    expect(device.memoryStats().active).toBe(0);
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
  });

  it("a module's kernels: a missing name is a FormatError, a released module refuses launches", () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const module = device.loadModule({ mock: { scale } });
    expect(thrown(() => module.kernel("nope"))).toMatchObject({
      name: "FormatError",
      code: "ERR_NUVEC_KERNEL_NOT_FOUND",
    });
    const kernel = module.kernel("scale");
    module.release();
    expect(module.released).toBe(true);
    const x = device.malloc(4);
    expect(
      thrown(() => stream.launch(kernel, { grid: [1], block: [1] }, [x, { f32: 1 }, { u32: 1 }])),
    ).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_RELEASED",
    });
    expect(stream.position).toBe(0);
    expect(thrown(() => module.release())).toMatchObject({ code: "ERR_NUVEC_RELEASED" });
    expect(thrown(() => device.loadModule({}))).toMatchObject({
      name: "FormatError",
      code: "ERR_NUVEC_MODULE",
    });
    device.close();
  });
});
