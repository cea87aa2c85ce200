// Every refusal of a stream call: the error's kind, code and argument, and that nothing was enqueued and no
// figure or counter moved (the device's, the backend's, the stream's position and the mock queue's).
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../../stats/test/scratch.js";
import { thrown } from "../../../stats/test/thrown.js";
import { addBias, figures, mockStreamOf, scale, streamDevice } from "../../test/streams-support.js";
import type { KernelArgument, LaunchShape } from "../index.js";

const scratch = scratchFolder("nuvec-stream-refusals-");

function setup() {
  const { device, mock } = streamDevice("manual");
  const other = streamDevice("manual");
  const stream = device.newStream();
  const module = device.loadModule({ mock: { scale, addBias } });
  const kernel = module.kernel("scale");
  const bias = module.kernel("addBias");
  const x = device.malloc(64);
  const y = device.malloc(64);
  const empty = device.malloc(0);
  const freed = device.malloc(64);
  freed.free();
  const foreign = other.device.malloc(64);
  const foreignKernel = other.device.loadModule({ mock: { scale } }).kernel("scale");
  const foreignEvent = other.device.newStream().record();
  const released = device.newStream();
  released.release();
  const releasedEvent = stream.record();
  releasedEvent.release();
  const file = device.mapFile(scratch.write("weights.bin", new Uint8Array(100).fill(7)));
  const freedFile = device.mapFile(scratch.write("old.bin", new Uint8Array(10)));
  freedFile.free();
  const shape: LaunchShape = { grid: [1], block: [16] };
  return {
    device,
    mock,
    other,
    stream,
    kernel,
    bias,
    x,
    y,
    empty,
    freed,
    foreign,
    foreignKernel,
    foreignEvent,
    released,
    releasedEvent,
    file,
    freedFile,
    shape,
  };
}

type Setup = ReturnType<typeof setup>;

/** What must not move: the figures, the backend's calls, the stream's position and its queue. */
function snapshot(s: Setup): unknown {
  return {
    figures: figures(s.device),
    position: s.stream.position,
    pending: mockStreamOf(s.stream).pending,
    backend: s.mock.counters(),
  };
}

const cases: [string, (s: Setup) => unknown, Record<string, unknown>][] = [
  [
    "launch: a freed buffer",
    (s) => s.stream.launch(s.kernel, s.shape, [s.freed, { f32: 1 }, { u32: 1 }]),
    { name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" },
  ],
  [
    "launch: a buffer of another device",
    (s) => s.stream.launch(s.kernel, s.shape, [s.foreign, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_BUFFER" },
  ],
  [
    "launch: a kernel of another device",
    (s) => s.stream.launch(s.foreignKernel, s.shape, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "kernel" },
  ],
  [
    "launch: no kernel",
    (s) => s.stream.launch({} as never, s.shape, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "kernel" },
  ],
  [
    "launch: a released stream",
    (s) => s.released.launch(s.kernel, s.shape, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  [
    "launch: too few arguments",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1 }]),
    { name: "ArgumentError", argument: "args" },
  ],
  [
    "launch: too many arguments",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1 }, { u32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args" },
  ],
  [
    "launch: args not an array",
    (s) => s.stream.launch(s.kernel, s.shape, "x" as never),
    { name: "ArgumentError", argument: "args" },
  ],
  [
    "launch: a scalar for a buffer",
    (s) => s.stream.launch(s.kernel, s.shape, [{ u32: 1 }, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[0]" },
  ],
  [
    "launch: a buffer for a scalar",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, s.y, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[1]" },
  ],
  [
    "launch: an i32 for an f32",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { i32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[1]" },
  ],
  [
    "launch: a bare number",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, 2 as never, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[1]" },
  ],
  [
    "launch: f32 beyond its range",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1e39 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[1]" },
  ],
  [
    "launch: u32 negative",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1 }, { u32: -1 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: u32 of 2^32",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1 }, { u32: 2 ** 32 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: u32 fractional",
    (s) => s.stream.launch(s.kernel, s.shape, [s.x, { f32: 1 }, { u32: 1.5 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: u64 as a number",
    (s) => s.stream.launch(s.bias, s.shape, [s.x, s.y, { u64: 1 as never }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: u64 negative",
    (s) => s.stream.launch(s.bias, s.shape, [s.x, s.y, { u64: -1n }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: u64 of 2^64",
    (s) => s.stream.launch(s.bias, s.shape, [s.x, s.y, { u64: 2n ** 64n }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[2]" },
  ],
  [
    "launch: an offset at the end",
    (s) => s.stream.launch(s.kernel, s.shape, [{ buffer: s.x, offset: 64 }, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[0].offset" },
  ],
  [
    "launch: a negative offset",
    (s) => s.stream.launch(s.kernel, s.shape, [{ buffer: s.x, offset: -1 }, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[0].offset" },
  ],
  [
    "launch: an unknown key beside buffer",
    (s) => s.stream.launch(s.kernel, s.shape, [{ buffer: s.x, size: 4 } as never, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[0]" },
  ],
  [
    "launch: a 0-byte buffer",
    (s) => s.stream.launch(s.kernel, s.shape, [s.empty, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "args[0]" },
  ],
  [
    "launch: the second buffer freed (the first not enqueued)",
    (s) => s.stream.launch(s.bias, s.shape, [s.x, s.freed, { u64: 1n }, { u32: 1 }]),
    { name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" },
  ],
  [
    "shape: not an object",
    (s) => s.stream.launch(s.kernel, [1] as never, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape" },
  ],
  [
    "shape: an empty grid",
    (s) => s.stream.launch(s.kernel, { grid: [], block: [1] }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.grid" },
  ],
  [
    "shape: four dimensions",
    (s) => s.stream.launch(s.kernel, { grid: [1, 1, 1, 1], block: [1] }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.grid" },
  ],
  [
    "shape: a zero block",
    (s) => s.stream.launch(s.kernel, { grid: [1], block: [0] }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.block" },
  ],
  [
    "shape: a fractional block",
    (s) => s.stream.launch(s.kernel, { grid: [1], block: [1.5] }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.block" },
  ],
  [
    "shape: a number for grid",
    (s) => s.stream.launch(s.kernel, { grid: 4 as never, block: [1] }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.grid" },
  ],
  [
    "shape: negative shared bytes",
    (s) =>
      s.stream.launch(s.kernel, { grid: [1], block: [1], sharedBytes: -1 }, [s.x, { f32: 1 }, { u32: 1 }]),
    { name: "ArgumentError", argument: "shape.sharedBytes" },
  ],
  [
    "shape: an unknown key",
    (s) =>
      s.stream.launch(s.kernel, { grid: [1], block: [1], threads: 2 } as never, [
        s.x,
        { f32: 1 },
        { u32: 1 },
      ]),
    { name: "ArgumentError", argument: "shape" },
  ],
  [
    "write: a freed buffer",
    (s) => s.stream.write(s.freed, new Uint8Array(4)),
    { name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" },
  ],
  [
    "write: a buffer of another device",
    (s) => s.stream.write(s.foreign, new Uint8Array(4)),
    { name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_BUFFER" },
  ],
  [
    "write: a source that is no bytes",
    (s) => s.stream.write(s.x, [1, 2] as never),
    { name: "ArgumentError", argument: "source" },
  ],
  [
    "write: a detached source",
    (s) => {
      const source = new ArrayBuffer(8);
      structuredClone(source, { transfer: [source] });
      s.stream.write(s.x, source);
    },
    { name: "ArgumentError", argument: "source" },
  ],
  [
    "write: a view whose own byteLength lies (past its buffer)",
    (s) => {
      const source = new Uint8Array(4);
      Object.defineProperty(source, "byteLength", { get: () => 32 });
      s.stream.write(s.x, source);
    },
    { name: "ArgumentError", argument: "source" },
  ],
  [
    "write: a source that does not fit",
    (s) => s.stream.write(s.x, new Uint8Array(8), 60),
    { name: "ArgumentError", argument: "source" },
  ],
  [
    "write: an offset beyond the buffer",
    (s) => s.stream.write(s.x, new Uint8Array(0), 65),
    { name: "ArgumentError", argument: "offset" },
  ],
  [
    "write: a released stream",
    (s) => s.released.write(s.x, new Uint8Array(4)),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  [
    "read: a freed buffer",
    (s) => s.stream.read(s.freed),
    { name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" },
  ],
  [
    "read: a length beyond the buffer",
    (s) => s.stream.read(s.x, 8, 57),
    { name: "ArgumentError", argument: "length" },
  ],
  [
    "read: a fractional offset",
    (s) => s.stream.read(s.x, 0.5),
    { name: "ArgumentError", argument: "offset" },
  ],
  [
    "copy: overlapping spans of one buffer",
    (s) => s.stream.copy(s.x, s.x, { targetOffset: 4, length: 8 }),
    { name: "ArgumentError", argument: "options" },
  ],
  [
    "copy: more than the target holds",
    (s) => s.stream.copy(s.x, s.y, { targetOffset: 8 }),
    { name: "ArgumentError", argument: "options.length" },
  ],
  [
    "copy: an unknown option",
    (s) => s.stream.copy(s.x, s.y, { bytes: 4 } as never),
    { name: "ArgumentError", argument: "options" },
  ],
  [
    "copy: a foreign source",
    (s) => s.stream.copy(s.x, s.foreign),
    { name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_BUFFER" },
  ],
  [
    "copy: a freed target",
    (s) => s.stream.copy(s.freed, s.x),
    { name: "StateError", code: "ERR_NUVEC_BUFFER_FREED" },
  ],
  [
    "wait: an event of another device",
    (s) => s.stream.wait(s.foreignEvent),
    { name: "ArgumentError", argument: "event" },
  ],
  [
    "wait: a released event",
    (s) => s.stream.wait(s.releasedEvent),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  ["wait: no event", (s) => s.stream.wait({} as never), { name: "ArgumentError", argument: "event" }],
  ["kernel: an empty name", (s) => s.kernel.module.kernel(""), { name: "ArgumentError", argument: "name" }],
  [
    "kernel: a name that is no string",
    (s) => s.kernel.module.kernel(7 as never),
    { name: "ArgumentError", argument: "name" },
  ],
  [
    "write: a mapped file as the target",
    (s) => s.stream.write(s.file as never, new Uint8Array(1)),
    { name: "ArgumentError", argument: "buffer" },
  ],
  [
    "copy: a mapped file as the target",
    (s) => s.stream.copy(s.file as never, s.x),
    { name: "ArgumentError", argument: "target" },
  ],
  [
    "read: a buffer of another device",
    (s) => s.stream.read(s.foreign),
    { name: "ArgumentError", code: "ERR_NUVEC_FOREIGN_BUFFER" },
  ],
  [
    "read: a freed mapped file",
    (s) => s.stream.read(s.freedFile),
    { name: "StateError", code: "ERR_NUVEC_MAPPING_FREED" },
  ],
  [
    "release: a released stream",
    (s) => s.released.release(),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  [
    "event: synchronize after release",
    (s) => s.releasedEvent.synchronize(),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  [
    "event: a second release",
    (s) => s.releasedEvent.release(),
    { name: "StateError", code: "ERR_NUVEC_RELEASED" },
  ],
  [
    "kernel: a declaration that is no list of kinds",
    (s) => s.kernel.module.kernel("scale", ["buffer", "f16"] as never),
    { name: "ArgumentError", argument: "parameters" },
  ],
  [
    "loadModule: no object",
    (s) => s.device.loadModule("x" as never),
    { name: "ArgumentError", argument: "source" },
  ],
];

describe("stream refusals", () => {
  for (const [name, call, expected] of cases) {
    it(`${name}: refused, nothing enqueued, nothing counted`, () => {
      const s = setup();
      const before = snapshot(s);
      const error = thrown(() => call(s));
      expect(error).toMatchObject(expected);
      expect(snapshot(s)).toEqual(before);
      s.device.close();
      s.other.device.close();
    });
  }

  it("takes f32 NaN and infinities (a kernel's sentinels), and f64 anything", () => {
    const s = setup();
    for (const f32 of [Number.NaN, Number.POSITIVE_INFINITY, -3.4028234663852886e38]) {
      s.stream.launch(s.kernel, s.shape, [s.x, { f32 }, { u32: 0 }] as KernelArgument[]);
    }
    expect(s.stream.position).toBe(3);
    s.device.close();
    s.other.device.close();
  });

  it("everything after close is a StateError ERR_NUVEC_DEVICE_CLOSED", () => {
    const s = setup();
    s.device.close();
    for (const call of [
      () => s.stream.write(s.x, new Uint8Array(1)),
      () => s.stream.record(),
      () => s.device.newStream(),
      () => s.device.loadModule({}),
      () => s.device.synchronize(),
      () => s.kernel.module.kernel("scale"),
    ]) {
      expect(thrown(call)).toMatchObject({ name: "StateError", code: "ERR_NUVEC_DEVICE_CLOSED" });
    }
    s.other.device.close();
  });
});
