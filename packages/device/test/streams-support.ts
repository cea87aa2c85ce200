// Helpers of the stream tests: a Device over a mock backend with streams, its kernels, and the native mock
// stream behind a Device's Stream (to run it by hand under manual completion).
import type { MockKernel } from "@nuvec/metal-native";
import { MockBackend, type MockStream } from "@nuvec/metal-native/mock";
import { Device, type Stream } from "../src/index.js";
import { streamCore } from "../src/streams/stream.js";

/** A Device over a fresh mock backend whose streams complete as `completion` says. */
export function streamDevice(
  completion: "auto" | "manual" = "auto",
  options: { policy?: "mlx" | "bounded" | "segments"; memoryLimit?: number } = {},
): { device: Device; mock: MockBackend } {
  const mock = new MockBackend({ streams: { completion } });
  const device = Device.open({ backend: mock, safetyNet: false, ...options });
  return { device, mock };
}

/** The mock stream behind `stream`. */
export function mockStreamOf(stream: Stream): MockStream {
  return streamCore(stream).native as MockStream;
}

/** Runs up to `count` operations of `stream` on the mock (all it can by default); returns how many ran. */
export function runStream(mock: MockBackend, stream: Stream, count?: number): number {
  return mock.runStream(mockStreamOf(stream), count);
}

/** `x[i] *= f` for `n` floats of a buffer. */
export const scale: MockKernel = {
  parameters: ["buffer", "f32", "u32"],
  run(args) {
    const bytes = args[0] as Uint8Array;
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const f = args[1] as number;
    const n = args[2] as number;
    for (let i = 0; i < n; i += 1) view.setFloat32(4 * i, view.getFloat32(4 * i, true) * f, true);
  },
};

/** `target[i] = source[i] + b` for `n` bytes, with a 64-bit bias taken modulo 256. */
export const addBias: MockKernel = {
  parameters: ["buffer", "buffer", "u64", "u32"],
  run(args) {
    const target = args[0] as Uint8Array;
    const source = args[1] as Uint8Array;
    const bias = Number((args[2] as bigint) % 256n);
    const n = args[3] as number;
    for (let i = 0; i < n; i += 1) target[i] = ((source[i] as number) + bias) & 0xff;
  },
};

/** Every figure and counter of `device`, as one comparable value. */
export function figures(device: Device): unknown {
  return { stats: device.memoryStats(), counters: device.counters() };
}
