import {
  chmodSync,
  lstatSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { thrown } from "../../stats/test/thrown.js";
import { Device } from "./device.js";
import { mapSafetensors, readSafetensorsHeader, SAFETENSORS_DTYPE_BYTES } from "./safetensors.js";
import { type SafetensorsTensorData, writeSafetensors } from "./safetensors-writer.js";

const { folder } = scratchFolder("nuvec-write-safetensors-");
let files = 0;
const nextPath = () => {
  files += 1;
  return join(folder, `w${files}.safetensors`);
};
const bytes = (length: number, seed: number) =>
  Uint8Array.from({ length }, (_, index) => (index * 7 + seed) & 255);

describe("writeSafetensors", () => {
  it("writes the layout of the format to the byte: length, header padded with spaces to 8, data larger elements first", () => {
    const path = nextPath();
    const a = bytes(3, 1);
    const b = new Float32Array([1.5, -2]);
    const c = new Uint16Array([0x3c00]);
    const length = writeSafetensors(
      path,
      [
        { name: "a", dtype: "U8", shape: [3], data: a },
        { name: "b", dtype: "F32", shape: [2], data: b },
        { name: "c", dtype: "F16", shape: [1], data: c },
        { name: "e", dtype: "U8", shape: [0], data: new Uint8Array(0) },
      ],
      { metadata: { format: "pt" } },
    );
    const json =
      '{"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"c":{"dtype":"F16","shape":[1],"data_offsets":[8,10]},"a":{"dtype":"U8","shape":[3],"data_offsets":[10,13]},"e":{"dtype":"U8","shape":[0],"data_offsets":[13,13]}}';
    const padded = json + " ".repeat(7 - ((json.length + 7) % 8));
    expect(padded.length % 8).toBe(0);
    const expected = Buffer.concat([
      Buffer.from(new BigUint64Array([BigInt(padded.length)]).buffer),
      Buffer.from(padded),
      Buffer.from(b.buffer),
      Buffer.from(c.buffer),
      Buffer.from(a),
    ]);
    const written = readFileSync(path);
    expect(written.equals(expected)).toBe(true);
    expect(length).toBe(expected.length);
    // No temporary file beside it.
    expect(readdirSync(folder)).toEqual([`w${files}.safetensors`]);
  });

  it("every dtype round-trips through mapSafetensors to the byte, each tensor at a multiple of its element size", () => {
    const path = nextPath();
    const tensors = Object.entries(SAFETENSORS_DTYPE_BYTES).map(([dtype, size], index) => ({
      name: `t.${dtype}`,
      dtype,
      shape: [3, index % 3],
      data: bytes(3 * (index % 3) * size, index),
    }));
    writeSafetensors(path, tensors, { metadata: { writer: "test", "": "" } });
    const device = Device.open({ backend: new MockBackend({ realFiles: true }) });
    {
      using checkpoint = mapSafetensors(device, path);
      expect(checkpoint.header.metadata).toEqual({ writer: "test", "": "" });
      expect(checkpoint.header.headerLength % 8).toBe(0);
      expect(checkpoint.header.tensors).toHaveLength(tensors.length);
      for (const tensor of tensors) {
        const read = checkpoint.header.tensors.find((entry) => entry.name === tensor.name);
        expect(read).toMatchObject({
          dtype: tensor.dtype,
          shape: tensor.shape,
          byteLength: tensor.data.length,
        });
        expect((read?.offset ?? 1) % (SAFETENSORS_DTYPE_BYTES[tensor.dtype] as number)).toBe(0);
        expect(Buffer.from(checkpoint.tensorBytes(tensor.name)).equals(Buffer.from(tensor.data))).toBe(true);
      }
    }
    expect(device.memoryStats().mapped).toBe(0);
    device.close();
  });

  it("pads the header by its bytes, not its characters: names beyond ASCII and lone surrogates read back", () => {
    const path = nextPath();
    const names = ["é", "模型.权重", "🙂", "lone \ud800", "__proto__", "10", "2"];
    writeSafetensors(
      path,
      names.map((name, index) => ({ name, dtype: "U8", shape: [1], data: bytes(1, index) })),
    );
    const header = readSafetensorsHeader(new Uint8Array(readFileSync(path)).buffer);
    expect(header.headerLength % 8).toBe(0);
    // Integer-like names stay in the given order in the file: the header is not built from an object.
    expect(header.tensors.map((tensor) => tensor.name)).toEqual(names);
  });

  it("takes a tensor's bytes as an iterable of chunks, written as they come", () => {
    const path = nextPath();
    const whole = bytes(10_000, 3);
    function* chunks() {
      for (let offset = 0; offset < whole.length; offset += 4096) yield whole.subarray(offset, offset + 4096);
    }
    writeSafetensors(path, [
      { name: "w", dtype: "I16", shape: [5000], data: chunks() },
      { name: "v", dtype: "U8", shape: [2], data: [new Uint8Array([1]), new DataView(new ArrayBuffer(1))] },
    ]);
    const file = new Uint8Array(readFileSync(path));
    const header = readSafetensorsHeader(file.buffer);
    const w = header.tensors[0];
    expect(Buffer.from(file.subarray(w?.offset, (w?.offset ?? 0) + 10_000)).equals(Buffer.from(whole))).toBe(
      true,
    );
    expect([...file.subarray(-2)]).toEqual([1, 0]);
  });

  const good = (): SafetensorsTensorData => ({
    name: "w",
    dtype: "F16",
    shape: [2],
    data: new Uint16Array(2),
  });
  // [what, tensors, options, argument, message]
  it.each([
    [
      "not an array",
      {},
      undefined,
      "tensors",
      "writeSafetensors(): tensors must be an array of tensors, got [object Object]",
    ],
    [
      "a null tensor",
      [null],
      undefined,
      "tensors[0]",
      "writeSafetensors(): tensors[0] must be an object, got null",
    ],
    [
      "a hole in a sparse array",
      (() => {
        const sparse: unknown[] = [];
        sparse[1] = good();
        return sparse;
      })(),
      undefined,
      "tensors[0]",
      "writeSafetensors(): tensors[0] must be an object, got undefined",
    ],
    [
      "an empty name",
      [{ ...good(), name: "" }],
      undefined,
      "tensors[0].name",
      'writeSafetensors(): tensors[0].name must be a non-empty string other than "__metadata__", got ""',
    ],
    [
      "the name __metadata__",
      [{ ...good(), name: "__metadata__" }],
      undefined,
      "tensors[0].name",
      'writeSafetensors(): tensors[0].name must be a non-empty string other than "__metadata__", got "__metadata__"',
    ],
    [
      "a name given twice",
      [good(), good()],
      undefined,
      "tensors[1].name",
      'writeSafetensors(): tensor "w": tensors[1].name names a tensor given before it: names are unique',
    ],
    [
      "an unknown dtype",
      [{ ...good(), dtype: "Q4" }],
      undefined,
      "tensors[0].dtype",
      'writeSafetensors(): tensor "w": tensors[0].dtype must be one of BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64, got "Q4"',
    ],
    [
      "an inherited dtype name",
      [{ ...good(), dtype: "toString" }],
      undefined,
      "tensors[0].dtype",
      expect.stringMatching(
        /^writeSafetensors\(\): tensor "w": tensors\[0\]\.dtype must be one of .*, got "toString"$/,
      ),
    ],
    [
      "a negative dimension",
      [{ ...good(), shape: [-2] }],
      undefined,
      "tensors[0].shape",
      'writeSafetensors(): tensor "w": tensors[0].shape must be an array of whole numbers ≥ 0, got [object Array]',
    ],
    [
      "a shape too large for a file",
      [{ ...good(), shape: [2 ** 40, 2 ** 40] }],
      undefined,
      "tensors[0].shape",
      'writeSafetensors(): tensor "w": tensors[0].shape [1099511627776, 1099511627776] of F16 is 2417851639229258349412352 bytes, more than a file can hold here',
    ],
    [
      "data of the wrong length",
      [{ ...good(), data: new Uint8Array(3) }],
      undefined,
      "tensors[0].data",
      'writeSafetensors(): tensor "w": tensors[0].data holds 3 bytes, its shape [2] of F16 needs 4',
    ],
    [
      "data that is no view",
      [{ ...good(), data: 5 }],
      undefined,
      "tensors[0].data",
      'writeSafetensors(): tensor "w": tensors[0].data must be a typed array, a DataView or an iterable of them, got 5',
    ],
    [
      "a string as data (iterable, but of characters)",
      [{ ...good(), data: "abcd" }],
      undefined,
      "tensors[0].data",
      'writeSafetensors(): tensor "w": tensors[0].data must be a typed array, a DataView or an iterable of them, got a string',
    ],
    [
      "a getter that throws",
      [
        {
          name: "w",
          get dtype(): string {
            throw new Error("no");
          },
        },
      ],
      undefined,
      "tensors[0].dtype",
      'writeSafetensors(): tensor "w": tensors[0].dtype could not be read',
    ],
    [
      "a name a terminal would act on, escaped in the message",
      [
        { ...good(), name: "w\u001b[2J" },
        { ...good(), name: "w\u001b[2J" },
      ],
      undefined,
      "tensors[1].name",
      'writeSafetensors(): tensor "w\\u001b[2J": tensors[1].name names a tensor given before it: names are unique',
    ],
    [
      "a non-string metadata value",
      [good()],
      { metadata: { n: 1 } },
      "metadata.n",
      "writeSafetensors(): metadata.n must be a string, got 1",
    ],
    [
      "metadata that is an array",
      [good()],
      { metadata: ["a"] },
      "metadata",
      "writeSafetensors(): metadata must be an object of strings, got [object Array]",
    ],
    [
      "an unknown option",
      [good()],
      { meta: {} },
      "meta",
      expect.stringMatching(/^writeSafetensors\(\): .*meta/),
    ],
  ])(
    "refuses %s with an ArgumentError naming the tensor and field, writing nothing",
    (_what, tensors, options, argument, message) => {
      const path = nextPath();
      const error = thrown(() => writeSafetensors(path, tensors as never, options as never));
      expect(error).toBeInstanceOf(ArgumentError);
      expect(error).toMatchObject({ code: "ERR_NUVEC_INVALID_ARGUMENT", argument, message });
      expect(readdirSync(folder)).not.toContain(`w${files}.safetensors`);
    },
  );

  it("an iterable of the wrong length, or whose iterator throws: the old file as it was, no temporary file", () => {
    const path = nextPath();
    writeFileSync(path, "old");
    const listing = () => readdirSync(folder).sort();
    const before = listing();
    const cases: [Iterable<ArrayBufferView>, unknown][] = [
      [
        [new Uint8Array(3)],
        {
          argument: "tensors[0].data",
          message:
            'writeSafetensors(): tensor "w": tensors[0].data gave 3 bytes, its shape [2] of F16 needs 4',
        },
      ],
      [
        [new Uint8Array(3), new Uint8Array(3)],
        {
          argument: "tensors[0].data",
          message:
            'writeSafetensors(): tensor "w": tensors[0].data gave more than the 4 bytes its shape [2] of F16 needs',
        },
      ],
      [
        [1 as never],
        {
          argument: "tensors[0].data",
          message:
            'writeSafetensors(): tensor "w": tensors[0].data gave a chunk that is not a typed array or DataView: 1',
        },
      ],
      [
        (function* () {
          yield new Uint8Array(2);
          throw new RangeError("the producer failed");
        })(),
        { name: "RangeError", message: "the producer failed" },
      ],
    ];
    for (const [data, expected] of cases) {
      expect(thrown(() => writeSafetensors(path, [{ ...good(), data }]))).toMatchObject(expected as object);
      expect(readFileSync(path, "utf8")).toBe("old");
      expect(listing()).toEqual(before);
    }
  });

  it("replaces an existing file keeping its permissions; through a symbolic link, the link stays and its target is new", () => {
    const path = nextPath();
    writeFileSync(path, "old");
    chmodSync(path, 0o600);
    writeSafetensors(path, [good()]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readSafetensorsHeader(new Uint8Array(readFileSync(path)).buffer).tensors).toHaveLength(1);
    const link = join(folder, "link.safetensors");
    symlinkSync(path, link);
    writeSafetensors(link, [{ ...good(), name: "through the link" }]);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readSafetensorsHeader(new Uint8Array(readFileSync(path)).buffer).tensors[0]?.name).toBe(
      "through the link",
    );
    expect(statSync(path).mode & 0o777).toBe(0o600);
    rmSync(link);
  });

  it("a folder that does not exist: the family's SystemCallError naming the path", () => {
    const path = join(folder, "missing", "m.safetensors");
    expect(thrown(() => writeSafetensors(path, [good()]))).toMatchObject({
      name: "SystemCallError",
      code: "ERR_NUVEC_SYSTEM",
      syscall: "open",
      errno: "ENOENT",
      path,
    });
  });
});
