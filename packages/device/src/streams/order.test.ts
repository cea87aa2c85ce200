// Stream-ordered free on the mock with manual completion: what a free does with a buffer used on no, one or
// several streams, the waits a reuse on another stream gets, the host waits of host uses and releases, and
// the figures (single-stream work has exactly the figures of work without streams).

import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { addBias, mockStreamOf, runStream, streamDevice } from "../../test/streams-support.js";
import { Device, type DeviceBuffer } from "../index.js";

const KIB = 1024;

function waits(mock: { callCounts(): Record<string, number | undefined> }): number {
  return mock.callCounts()["stream.wait"] ?? 0;
}

describe("stream-ordered free", () => {
  it("a buffer used on one stream goes back at once; that stream reuses it with no wait", () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(16).fill(1));
    x.free();
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 4 * KIB });
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
    const y = device.malloc(4 * KIB);
    expect(device.counters().cacheHits).toBe(1);
    a.write(y, new Uint8Array(16).fill(2));
    expect(waits(mock)).toBe(0);
    expect(mockStreamOf(a).pending).toBe(2);
    device.close();
  });

  it("a reuse on another stream first waits for the old stream's work, device-side", async () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(16).fill(1));
    x.free();
    const y = device.malloc(4 * KIB);
    b.write(y, new Uint8Array(16).fill(2));
    const read = b.read(y, 0, 16);
    expect(waits(mock)).toBe(1);
    // b cannot run past its wait before a ran: the old owner's write lands first, then the new owner's.
    expect(runStream(mock, b)).toBe(0);
    runStream(mock, a);
    runStream(mock, b);
    expect([...(await read)]).toEqual(new Array(16).fill(2));
    // A second use on b waits no more, nor does one after a is known complete.
    b.write(y, new Uint8Array(1));
    expect(waits(mock)).toBe(1);
    device.close();
  });

  it("a host use of fenced memory (read, write, contents, native.handle) waits for the old stream on the host", () => {
    for (const use of [
      (y: DeviceBuffer) => y.read(0, 4),
      (y: DeviceBuffer) => y.write(new Uint8Array(4)),
      (y: DeviceBuffer) => y.contents(),
      (y: DeviceBuffer) => (y.device as Device).native.handle(y),
    ]) {
      const { device } = streamDevice("manual", { policy: "mlx" });
      const a = device.newStream();
      const x = device.malloc(4 * KIB);
      a.write(x, new Uint8Array(16).fill(1));
      x.free();
      const y = device.malloc(4 * KIB);
      expect(mockStreamOf(a).pending).toBe(1);
      use(y);
      expect(mockStreamOf(a).pending).toBe(0);
      device.close();
    }
  });

  it("releasing fenced memory to the system (clearCache) waits for the old stream first", () => {
    const { device } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(16).fill(1));
    x.free();
    expect(mockStreamOf(a).pending).toBe(1);
    device.clearCache();
    expect(mockStreamOf(a).pending).toBe(0);
    expect(device.memoryStats()).toMatchObject({ reserved: 0, cache: 0 });
    device.close();
  });

  it("a buffer used on several streams is held until each ran, counted, and goes back on malloc", () => {
    const { device, mock } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(16).fill(1));
    b.write(x, new Uint8Array(16).fill(2), 16);
    x.free();
    expect(device.memoryStats()).toMatchObject({ active: 4 * KIB, cache: 0 });
    expect(device.counters().streamPending).toEqual({ buffers: 1, bytes: 4 * KIB });
    // Never a host wait on malloc: nothing ran, and the held buffer is not handed out.
    const other = device.malloc(4 * KIB);
    expect(mockStreamOf(a).pending).toBe(1);
    expect(device.counters()).toMatchObject({ cacheHits: 0, streamPending: { buffers: 1 } });
    other.free();
    runStream(mock, a);
    device.malloc(16).free();
    expect(device.counters().streamPending).toEqual({ buffers: 1, bytes: 4 * KIB });
    runStream(mock, b);
    expect(device.counters().streamPending.buffers).toBe(1);
    const last = device.malloc(64);
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
    expect(device.memoryStats().active).toBe(last.allocatedLength);
    device.close();
  });

  it("device.synchronize() gives held buffers back; close gives back what is still held", () => {
    const { device } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const held = (): DeviceBuffer => {
      const x = device.malloc(4 * KIB);
      a.write(x, new Uint8Array(1));
      b.write(x, new Uint8Array(1), 1);
      x.free();
      return x;
    };
    held();
    device.synchronize();
    expect(device.counters().streamPending.buffers).toBe(0);
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 4 * KIB });
    held();
    expect(device.counters().streamPending.buffers).toBe(1);
    device.close();
    expect(device.memoryStats()).toMatchObject({ active: 0, reserved: 0 });
    expect(device.counters().streamPending).toEqual({ buffers: 0, bytes: 0 });
  });

  it("a stream released before the free does not count: the buffer goes back at once", () => {
    const { device } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(1));
    b.write(x, new Uint8Array(1), 1);
    b.release();
    x.free();
    expect(device.counters().streamPending.buffers).toBe(0);
    expect(device.memoryStats().active).toBe(0);
    device.close();
  });

  it("a free with { after } goes through the stream order once the promise settles", async () => {
    const { device } = streamDevice("manual", { policy: "mlx" });
    const a = device.newStream();
    const b = device.newStream();
    const x = device.malloc(4 * KIB);
    a.write(x, new Uint8Array(1));
    b.write(x, new Uint8Array(1), 1);
    x.free({ after: Promise.resolve() });
    await new Promise((resolve) => setImmediate(resolve));
    expect(device.counters()).toMatchObject({
      pendingFrees: 0,
      streamPending: { buffers: 1, bytes: 4 * KIB },
    });
    device.close();
  });

  it("single-stream work has exactly the figures of the same work without streams", () => {
    const sizes = [100, 4 * KIB, 70 * KIB, 3, 1024 * KIB, 4 * KIB, 512, 70 * KIB, 8 * KIB];
    const run = (device: Device, onStream: boolean): unknown[] => {
      const stream = onStream ? device.newStream() : undefined;
      const seen: unknown[] = [];
      const live: DeviceBuffer[] = [];
      for (const [index, size] of [...sizes, ...[...sizes].reverse()].entries()) {
        const buffer = device.malloc(size);
        if (stream !== undefined) stream.write(buffer, new Uint8Array(Math.min(size, 8)).fill(index));
        else buffer.write(new Uint8Array(Math.min(size, 8)).fill(index));
        live.push(buffer);
        if (index % 3 === 2) live.splice(index % live.length, 1)[0]!.free();
        if (index % 7 === 6) device.clearCache();
        seen.push(device.memoryStats());
      }
      for (const buffer of live) buffer.free();
      seen.push(device.memoryStats());
      const { cacheHits, cacheMisses, systemReleases, liveBuffers } = device.counters();
      seen.push({ cacheHits, cacheMisses, systemReleases, liveBuffers });
      return seen;
    };
    for (const policy of ["mlx", "bounded", "segments"] as const) {
      const plain = streamDevice("manual", { policy });
      const streamed = streamDevice("manual", { policy });
      expect(run(streamed.device, true)).toEqual(run(plain.device, false));
      plain.device.close();
      streamed.device.close();
    }
  });
});

describe("streams under the segments policy", () => {
  for (const expandable of [false, true]) {
    it(`reach a block through its segment at the block's offset${expandable ? " (one expandable segment)" : ""}`, async () => {
      const mock = new MockBackend({
        streams: { completion: "auto" },
        ...(expandable ? { mapGranularity: 2 * 1024 * KIB } : {}),
      });
      const device = Device.open({ backend: mock, policy: "segments", safetyNet: false });
      const stream = device.newStream();
      const kernel = device.loadModule({ mock: { addBias } }).kernel("addBias");
      const [first, second] = [device.malloc(3 * KIB), device.malloc(5 * KIB)];
      stream.write(first, new Uint8Array(16).fill(1));
      stream.write(
        second,
        Uint8Array.from({ length: 16 }, (_, i) => i),
      );
      stream.launch(kernel, { grid: [1], block: [1] }, [
        { buffer: first, offset: 8 },
        second,
        { u64: 10n },
        { u32: 4 },
      ]);
      stream.copy(second, first, { targetOffset: 100, length: 12 });
      // Read back through the stream (test/host-streams.test.ts reads through the blocks' ranges on the host).
      expect([...(await stream.read(first, 0, 12))]).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 10, 11, 12, 13]);
      expect([...(await stream.read(second, 0, 4))]).toEqual([0, 1, 2, 3]);
      expect([...(await stream.read(second, 100, 12))]).toEqual([1, 1, 1, 1, 1, 1, 1, 1, 10, 11, 12, 13]);
      device.close();
      expect(mock.counters().bufferBytes).toBe(0);
    });
  }
});
