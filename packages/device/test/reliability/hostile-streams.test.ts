// Hostile uses of the Device's streams on the mock: frees under running work, launches naming freed or
// foreign buffers, objects of another Device, look-alikes, kernels that throw, and closes with work pending.
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { thrown } from "../../../stats/test/thrown.js";
import { Device, Kernel, Stream, StreamEvent } from "../../src/index.js";
import { figures, mockStreamOf, runStream, scale, streamDevice } from "../streams-support.js";
import { foreignHandle as foreign, transfer } from "./support.js";

const KIB = 1024;

describe("hostile stream use", () => {
  it("a free under running work: the memory is neither reused nor unmapped under it", async () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const kernel = device.loadModule({ mock: { scale } }).kernel("scale");
    const x = device.malloc(4 * KIB);
    a.write(x, new Float32Array(4).fill(1));
    a.launch(kernel, { grid: [1], block: [1] }, [x, { f32: 3 }, { u32: 4 }]);
    const seen = a.read(x, 0, 16);
    x.free();
    // The cache hands the memory out at once, but another stream's use of it waits for a.
    const y = device.malloc(4 * KIB);
    b.write(y, new Float32Array(4).fill(7));
    expect(runStream(mock, b)).toBe(0);
    runStream(mock, a);
    expect([...new Float32Array((await seen).buffer)]).toEqual([3, 3, 3, 3]);
    runStream(mock, b);
    expect([...new Float32Array(y.read(0, 16).buffer)]).toEqual([7, 7, 7, 7]);
    device.close();
    expect(mock.counters().bufferBytes).toBe(0);
  });

  it("a launch naming a freed buffer, a foreign buffer, a foreign kernel or a foreign event is refused", () => {
    const one = streamDevice("manual");
    const two = streamDevice("manual");
    const stream = one.device.newStream();
    const kernel = one.device.loadModule({ mock: { scale } }).kernel("scale");
    const theirs = two.device.loadModule({ mock: { scale } }).kernel("scale");
    const freed = one.device.malloc(16);
    freed.free();
    const foreign = two.device.malloc(16);
    const shape = { grid: [1], block: [1] };
    expect(thrown(() => stream.launch(kernel, shape, [freed, { f32: 1 }, { u32: 1 }]))).toMatchObject({
      code: "ERR_NUVEC_BUFFER_FREED",
    });
    expect(thrown(() => stream.launch(kernel, shape, [foreign, { f32: 1 }, { u32: 1 }]))).toMatchObject({
      code: "ERR_NUVEC_FOREIGN_BUFFER",
    });
    expect(
      thrown(() => stream.launch(theirs, shape, [one.device.malloc(16), { f32: 1 }, { u32: 1 }])),
    ).toMatchObject({ name: "ArgumentError", argument: "kernel" });
    expect(thrown(() => stream.wait(two.device.newStream().record()))).toMatchObject({
      name: "ArgumentError",
      argument: "event",
    });
    expect(stream.position).toBe(0);
    expect(mockStreamOf(stream).pending).toBe(0);
    one.device.close();
    two.device.close();
  });

  it("two Devices at once: write, read and copy naming the other's buffer are refused with every figure unchanged; closing one leaves the other's pending work to run", async () => {
    const one = streamDevice("manual");
    const two = streamDevice("manual");
    const s = one.device.newStream();
    const t = two.device.newStream();
    const a = one.device.malloc(64);
    const b = two.device.malloc(64);
    const state = () => ({
      one: figures(one.device),
      two: figures(two.device),
      mocks: [one.mock.counters(), two.mock.counters()],
      pending: [mockStreamOf(s).pending, mockStreamOf(t).pending],
    });
    const before = state();
    expect(thrown(() => s.write(b, new Uint8Array(4)))).toMatchObject(foreign("write()"));
    expect(thrown(() => s.read(b))).toMatchObject(foreign("read()"));
    expect(thrown(() => s.copy(a, b))).toMatchObject(foreign("copy()"));
    expect(thrown(() => s.copy(b, a))).toMatchObject(foreign("copy()"));
    expect(state()).toEqual(before);
    expect([s.position, t.position]).toEqual([0, 0]);
    s.write(a, new Uint8Array(8).fill(3));
    const mine = s.read(a, 0, 8);
    t.write(b, new Uint8Array(8).fill(5));
    const theirs = t.read(b, 0, 8).catch((error: unknown) => error);
    two.device.close();
    expect(await theirs).toMatchObject({ name: "StateError" });
    expect(two.mock.counters().bufferBytes).toBe(0);
    expect(mockStreamOf(s).pending).toBe(2);
    expect(runStream(one.mock, s)).toBe(2);
    expect([...(await mine)]).toEqual([3, 3, 3, 3, 3, 3, 3, 3]);
    expect(thrown(() => s.write(b, new Uint8Array(4)))).toMatchObject(foreign("write()"));
    a.free();
    one.device.close();
    expect(one.mock.counters().bufferBytes).toBe(0);
  });

  it("a view moved away with transfer() while a launch, write and read name the buffer (mock): the bytes leave with the view, the work never reaches it nor the next owner", async () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const stream = device.newStream();
    const kernel = device.loadModule({ mock: { scale } }).kernel("scale");
    const x = device.malloc(64);
    x.write(new Float32Array(16).fill(1));
    stream.launch(kernel, { grid: [1], block: [1] }, [x, { f32: 3 }, { u32: 16 }]);
    stream.write(x, new Uint8Array(4).fill(9), 60);
    const read = stream.read(x, 0, 8);
    const moved = new Float32Array(transfer(x.contents()));
    x.free();
    // The mock's memory is a JavaScript ArrayBuffer: what moved away cannot be reached, so nothing is held.
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 256, quarantined: 0 }); // 256: its allocated length
    expect(mockStreamOf(stream).pending).toBe(3);
    const next = device.malloc(64);
    expect(device.counters().cacheHits).toBe(1);
    next.bytes().fill(0x55); // a host use of reused memory: the old stream's work runs first
    expect(mockStreamOf(stream).pending).toBe(0);
    expect(runStream(mock, stream)).toBe(0);
    // The queued work ran on the buffer's fresh zeroed memory: the moved bytes and the next owner's are intact.
    expect([...new Float32Array((await read).buffer)]).toEqual([0, 0]);
    expect([...moved]).toEqual(new Array(16).fill(1));
    expect(next.bytes().every((byte) => byte === 0x55)).toBe(true);
    next.free();
    device.close();
    expect(mock.counters()).toMatchObject({ buffersMade: 1, buffersReleased: 1, bufferBytes: 0 });
  });

  it("look-alikes (Object.create of each prototype, a Proxy of a real one) are ArgumentErrors", () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const kernel = device.loadModule({ mock: { scale } }).kernel("scale");
    const x = device.malloc(16);
    const proxy = new Proxy(stream, {});
    expect(thrown(() => proxy.record())).toMatchObject({ name: "ArgumentError", argument: "this" });
    expect(thrown(() => (Object.create(StreamEvent.prototype) as StreamEvent).done())).toMatchObject({
      argument: "this",
    });
    const fakeKernel = Object.create(Kernel.prototype) as Kernel;
    expect(
      thrown(() => stream.launch(fakeKernel, { grid: [1], block: [1] }, [x, { f32: 1 }, { u32: 1 }])),
    ).toMatchObject({ argument: "kernel" });
    expect(
      thrown(() =>
        stream.launch(new Proxy(kernel, {}), { grid: [1], block: [1] }, [x, { f32: 1 }, { u32: 1 }]),
      ),
    ).toMatchObject({ argument: "kernel" });
    expect(thrown(() => stream.write(new Proxy(x, {}), new Uint8Array(1)))).toMatchObject({
      argument: "buffer",
    });
    expect(thrown(() => (Object.create(Stream.prototype) as Stream).position)).toMatchObject({
      argument: "this",
    });
    expect(stream.position).toBe(0);
    device.close();
  });

  it("a kernel that throws: the read after it rejects, the process lives, the figures balance at close", async () => {
    const { device } = streamDevice();
    const stream = device.newStream();
    const boom = device
      .loadModule({
        mock: {
          boom: {
            parameters: ["buffer"],
            run() {
              throw new Error("kernel fault");
            },
          },
        },
      })
      .kernel("boom");
    const x = device.malloc(16);
    stream.launch(boom, { grid: [1], block: [1] }, [x]);
    const outcome = await stream.read(x).then(
      () => "resolved",
      (error: unknown) => error,
    );
    expect(outcome).not.toBe("resolved");
    x.free();
    device.close();
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
  });

  it("close with work pending on every stream (manual completion, nothing ran): settles, never hangs", async () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const streams = [device.newStream(), device.newStream(), device.defaultStream];
    const promises: Promise<unknown>[] = [];
    const buffers = [device.malloc(4 * KIB), device.malloc(8 * KIB)];
    for (const stream of streams) {
      for (const buffer of buffers) {
        stream.write(buffer, new Uint8Array(8));
        promises.push(stream.read(buffer, 0, 8), stream.done());
      }
      promises.push(stream.record().done());
    }
    buffers[0]!.free();
    expect(device.counters().streamPending.buffers).toBe(1);
    device.close();
    const outcomes = await Promise.allSettled(promises);
    expect(outcomes).toHaveLength(promises.length);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") expect(outcome.reason).toMatchObject({ name: "StateError" });
    }
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
    expect(mock.counters().bufferBytes).toBe(0);
  });

  it("the backend closed under an open Device with work pending: stream calls throw typed errors, close completes", async () => {
    const mock = new MockBackend({ streams: { completion: "manual" } });
    const device = Device.open({ backend: mock, safetyNet: false });
    const stream = device.newStream();
    const x = device.malloc(64);
    stream.write(x, new Uint8Array(8));
    const read = stream.read(x).catch((error: unknown) => error);
    mock.close();
    expect(thrown(() => stream.write(x, new Uint8Array(1)))).toMatchObject({ name: "StateError" });
    expect(stream.position).toBe(2);
    expect(await read).toMatchObject({ name: "StateError" });
    expect(thrown(() => device.close())).toMatchObject({ name: "StateError" });
    expect(device.closed).toBe(true);
  });
});
