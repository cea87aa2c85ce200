import { renameSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError, FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { thrown } from "../../stats/test/thrown.js";
import { wrapBackend } from "../test/reliability/support.js";
import { Device } from "./device.js";
import { mapSafetensors, readSafetensorsHeader } from "./safetensors.js";

/** A safetensors file: the 8-byte length, `header` (JSON, or text as given), then `dataBytes` of data. */
function checkpoint(header: unknown, data: Uint8Array | number = 64): Uint8Array {
  const body = new TextEncoder().encode(typeof header === "string" ? header : JSON.stringify(header));
  const bytes = typeof data === "number" ? new Uint8Array(data) : data;
  const file = new Uint8Array(8 + body.length + bytes.length);
  new DataView(file.buffer).setBigUint64(0, BigInt(body.length), true);
  file.set(body, 8);
  file.set(bytes, 8 + body.length);
  return file;
}

const arrayBufferOf = (bytes: Uint8Array): ArrayBuffer => bytes.slice().buffer;
const tensor = (offsets: unknown[], shape = [4], dtype = "U8") => ({ dtype, shape, data_offsets: offsets });

describe("readSafetensorsHeader", () => {
  it("reads tensors in file order with their offsets from the start of the file, and the metadata", () => {
    const header = {
      __metadata__: { format: "pt" },
      b: tensor([6, 34], [7], "F32"),
      a: tensor([0, 6], [3], "F16"),
    };
    const bytes = checkpoint(header, 34);
    const read = readSafetensorsHeader(arrayBufferOf(bytes));
    const dataStart = 8 + read.headerLength;
    expect(read.headerLength).toBe(bytes.length - 8 - 34);
    expect(read.metadata).toEqual({ format: "pt" });
    expect(read.tensors).toEqual([
      { name: "a", dtype: "F16", shape: [3], offset: dataStart, byteLength: 6 },
      { name: "b", dtype: "F32", shape: [7], offset: dataStart + 6, byteLength: 28 },
    ]);
  });

  const prefix = (length: bigint) => {
    const bytes = new Uint8Array(16);
    new DataView(bytes.buffer).setBigUint64(0, length, true);
    return bytes;
  };

  // [what, file, message, tensor, field]: the message whole, and the properties that name where.
  it.each([
    [
      "a file too short for the length",
      new Uint8Array(3),
      "the file is truncated: 3 bytes, 5 bytes missing from its 8-byte header length",
      undefined,
      "header_length",
    ],
    [
      "a header longer than the file",
      new Uint8Array([255, 0, 0, 0, 0, 0, 0, 0, 123]),
      "the file is truncated: its header length 255 needs 263 bytes, the file has 9 (254 bytes missing)",
      undefined,
      "header_length",
    ],
    [
      "a header length of 2**64-1, printed exactly",
      prefix(2n ** 64n - 1n),
      "header length 18446744073709551615 is over the limit of 104857600 bytes (100 MiB)",
      undefined,
      "header_length",
    ],
    [
      "a header length of 2**53+1, printed exactly",
      prefix(2n ** 53n + 1n),
      "header length 9007199254740993 is over the limit of 104857600 bytes (100 MiB)",
      undefined,
      "header_length",
    ],
    ["a header that is not JSON", checkpoint("{not json"), /^the header is not JSON: /, undefined, "header"],
    [
      "a null header",
      checkpoint("null"),
      "the header is null, not an object of tensors",
      undefined,
      "header",
    ],
    [
      "an array header",
      checkpoint("[]"),
      "the header is an array, not an object of tensors",
      undefined,
      "header",
    ],
    [
      "a null tensor",
      checkpoint({ a: null }),
      "tensor a: its entry is null, not an object of dtype, shape and data_offsets",
      "a",
      "entry",
    ],
    [
      "a string tensor",
      checkpoint({ a: "x" }),
      'tensor a: its entry is "x", not an object of dtype, shape and data_offsets',
      "a",
      "entry",
    ],
    [
      "an unknown dtype, named",
      checkpoint({ a: tensor([0, 4], [4], "Q4") }),
      'tensor a: unknown dtype "Q4" (one of BOOL, U8, I8, F8_E4M3, F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64)',
      "a",
      "dtype",
    ],
    [
      "a number as dtype",
      checkpoint({ a: tensor([0, 4], [4], 5 as never) }),
      /^tensor a: unknown dtype 5 \(one of BOOL,/,
      "a",
      "dtype",
    ],
    [
      "no dtype",
      checkpoint({ a: { shape: [4], data_offsets: [0, 4] } }),
      /^tensor a: no dtype \(one of BOOL,/,
      "a",
      "dtype",
    ],
    [
      "an inherited dtype name",
      checkpoint({ a: tensor([0, 1], [1], "constructor") }),
      /^tensor a: unknown dtype "constructor"/,
      "a",
      "dtype",
    ],
    [
      "a fractional dimension",
      checkpoint({ a: tensor([0, 4], [1.5]) }),
      "tensor a: shape [1.5] is not an array of whole numbers ≥ 0",
      "a",
      "shape",
    ],
    [
      "offsets that do not match the shape",
      checkpoint({ a: tensor([0, 4], [4], "F16") }),
      "tensor a: data_offsets [0, 4] hold 4 bytes, its shape [4] of F16 needs 8",
      "a",
      "data_offsets",
    ],
    [
      "a shape whose bytes pass 2**53, counted exactly",
      checkpoint({ a: tensor([0, 8], [2 ** 40, 2 ** 40], "F64") }),
      "tensor a: data_offsets [0, 8] hold 8 bytes, its shape [1099511627776, 1099511627776] of F64 needs 9671406556917033397649408",
      "a",
      "data_offsets",
    ],
    [
      "offsets past the file: truncated, by how much",
      checkpoint({ a: tensor([0, 128], [128]) }),
      /^the file is truncated: tensor a ends at byte \d+, the file has \d+ \(64 bytes missing\)$/,
      "a",
      "data_offsets",
    ],
    [
      "fractional offsets",
      checkpoint({ a: tensor([0.5, 4.5]) }),
      "tensor a: data_offsets [0.5,4.5] are not two whole byte offsets, begin ≤ end",
      "a",
      "data_offsets",
    ],
    [
      "an offset past 2**53, said to be inexact",
      checkpoint('{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,18446744073709551615]}}'),
      "tensor a: data_offsets [0,18446744073709552000] are not two whole byte offsets, begin ≤ end (a number past 2⁵³ is read as the nearest double: the file's digits may differ)",
      "a",
      "data_offsets",
    ],
    [
      "offsets in reverse",
      checkpoint({ a: tensor([4, 0], [0]) }),
      "tensor a: data_offsets [4,0] are not two whole byte offsets, begin ≤ end",
      "a",
      "data_offsets",
    ],
    [
      "overlapping tensors",
      checkpoint({ a: tensor([0, 4]), b: tensor([2, 6]) }),
      "tensor b: its bytes overlap tensor a's (data_offsets from 0 to 4)",
      "b",
      "data_offsets",
    ],
    [
      "a non-object __metadata__",
      checkpoint({ __metadata__: 5, a: tensor([0, 4]) }),
      "__metadata__ is 5, not an object of strings",
      undefined,
      "__metadata__",
    ],
    [
      "a non-string metadata value",
      checkpoint({ __metadata__: { n: 1 } }),
      '__metadata__: its value for "n" is not a string',
      undefined,
      "__metadata__",
    ],
    [
      "a name a terminal would act on: escaped in the message, as given in tensor",
      checkpoint({ "a\u001b[2J\u202e": tensor([0, 4], [4], "Q4") }),
      /^tensor a\\x1b\[2J\\u\{202e\}: unknown dtype "Q4"/,
      "a\u001b[2J\u202e",
      "dtype",
    ],
  ])("refuses %s with a FormatError naming where", (_name, bytes, message, tensorName, field) => {
    const error = thrown(() => readSafetensorsHeader(arrayBufferOf(bytes)));
    expect(error).toBeInstanceOf(FormatError);
    expect(error).toMatchObject({
      code: "ERR_NUVEC_SAFETENSORS",
      message: typeof message === "string" ? message : expect.stringMatching(message),
      field,
    });
    expect((error as FormatError).tensor).toBe(tensorName);
  });

  it("refuses what is not an ArrayBuffer", () => {
    expect(() => readSafetensorsHeader(new Uint8Array(16) as never)).toThrow(ArgumentError);
  });
});

/** A Device on the mock with virtual files only. */
function device() {
  const backend = new MockBackend({ realFiles: false });
  return { backend, device: Device.open({ backend }) };
}

describe("mapSafetensors", () => {
  it("maps the checkpoint without a copy and gives each tensor's bytes as a view of the mapping", () => {
    const { backend, device: opened } = device();
    const data = Uint8Array.from({ length: 12 }, (_, index) => index + 1);
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, data));
    const model = mapSafetensors(opened, "/m.safetensors");
    expect(model.header.tensors.map((entry) => entry.name)).toEqual(["a", "b"]);
    const b = model.tensorBytes("b");
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(b.buffer).toBe(model.file.contents());
    expect(opened.memoryStats().mapped).toBe(model.file.allocatedLength);
    expect(() => model.tensorBytes("c")).toThrow(ArgumentError);
    model.file.free();
    expect(b.byteLength).toBe(0); // detached with the mapping
    opened.close();
  });

  it("unmaps a malformed checkpoint before throwing: nothing stays charged", () => {
    const { backend, device: opened } = device();
    backend.addFile("/bad.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([2, 6]) }));
    const before = opened.memoryStats();
    expect(() => mapSafetensors(opened, "/bad.safetensors")).toThrow(
      expect.objectContaining({ name: "FormatError", code: "ERR_NUVEC_SAFETENSORS" }),
    );
    // The mapping existed for the header's read: only the peak remembers it.
    expect(opened.memoryStats()).toEqual({ ...before, peakActiveWithMapped: 16384 });
    expect(opened.counters().mappings).toBe(0);
    opened.close();
  });

  it("readTensor copies a tensor's bytes (no view of the mapping); unknown names and freed files refused", () => {
    const { backend, device: opened } = device();
    const data = Uint8Array.from({ length: 12 }, (_, index) => index + 1);
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, data));
    const model = mapSafetensors(opened, "/m.safetensors");
    const b = model.readTensor("b");
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]);
    expect(b.buffer).not.toBe(model.file.contents());
    expect(thrown(() => model.readTensor("c"))).toMatchObject({
      name: "ArgumentError",
      argument: "name",
      message: 'readTensor(name): no tensor "c" in /m.safetensors',
    });
    model.file.free();
    expect([...b]).toEqual([5, 6, 7, 8, 9, 10, 11, 12]); // a copy: not detached
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_MAPPING_FREED",
      message: "readTensor(): the mapped file was already freed",
    });
    opened.close();
  });

  it("a closed device: a StateError naming mapSafetensors, nothing opened", () => {
    const { backend, device: opened } = device();
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]) }));
    opened.close();
    expect(thrown(() => mapSafetensors(opened, "/m.safetensors"))).toMatchObject({
      name: "StateError",
      code: "ERR_NUVEC_DEVICE_CLOSED",
      message: "mapSafetensors(): the device is closed",
    });
  });

  it("is Disposable: `using` frees the file at the end of the scope, once, and not after close", () => {
    const { backend, device: opened } = device();
    backend.addFile("/m.safetensors", checkpoint({ a: tensor([0, 4]) }));
    let view: Uint8Array;
    {
      using model = mapSafetensors(opened, "/m.safetensors");
      view = model.tensorBytes("a");
      expect(opened.counters().mappings).toBe(1);
    }
    expect(view.byteLength).toBe(0);
    expect(opened.memoryStats().mapped).toBe(0);
    expect(opened.counters().mappings).toBe(0);
    // Freed by hand first, or the device closed: disposing does nothing and throws nothing.
    const freed = mapSafetensors(opened, "/m.safetensors");
    freed.file.free();
    freed[Symbol.dispose]();
    const closed = mapSafetensors(opened, "/m.safetensors");
    opened.close();
    expect(() => closed[Symbol.dispose]()).not.toThrow();
  });
});

// The header of a real mapping is read from the file (pread), never through the mapping. A stand-in backend
// says it is the host's while the mock maps the real file (read whole), so each change of the file can be
// made at a chosen moment: before the mapping, between the mapping and the reader's checks.
describe("mapSafetensors reads the header of a real mapping from the file", () => {
  const { folder } = scratchFolder("nuvec-map-safetensors-");
  let files = 0;
  function mapped(content: Uint8Array, around?: (path: string) => void, after?: (path: string) => void) {
    files += 1;
    const path = join(folder, `m${files}.safetensors`);
    writeFileSync(path, content);
    const mock = new MockBackend({ realFiles: true });
    const backend = wrapBackend(mock, {
      platform: "host",
      mapFile(given) {
        around?.(given);
        const file = mock.mapFile(given);
        after?.(given);
        return file;
      },
    });
    const opened = Device.open({ backend });
    return { path, opened, outcome: () => thrown(() => mapSafetensors(opened, path)) };
  }
  const good = checkpoint({ a: tensor([0, 4]), b: tensor([4, 12], [8]) }, 4096);
  const nothingHeld = (opened: Device) => {
    expect(opened.memoryStats().mapped).toBe(0);
    expect(opened.counters().mappings).toBe(0);
    opened.close();
  };

  it("reads the same header as the bytes hold", () => {
    const { path, opened } = mapped(good);
    const model = mapSafetensors(opened, path);
    expect(model.header).toEqual(readSafetensorsHeader(arrayBufferOf(good)));
    expect(model.file.length).toBe(good.byteLength);
    model[Symbol.dispose]();
    nothingHeld(opened);
  });

  it("readTensor reads the file with pread; once the file is truncated or replaced: FormatError, field file", () => {
    const { path, opened } = mapped(good);
    using model = mapSafetensors(opened, path);
    const b = model.header.tensors[1] as { offset: number; byteLength: number };
    expect(
      Buffer.from(model.readTensor("b")).equals(Buffer.from(good.subarray(b.offset, b.offset + 8))),
    ).toBe(true);
    writeFileSync(`${path}.new`, good);
    renameSync(`${path}.new`, path);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("changed since it was mapped (it is not the file mapped, as it was)"),
    });
    truncateSync(path, 100);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({ name: "FormatError", field: "file" });
    rmSync(path);
    expect(thrown(() => model.readTensor("b"))).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("(it cannot be opened any more)"),
      cause: { name: "SystemCallError", errno: "ENOENT" },
    });
  });

  it("a file truncated after its mapping: FormatError, field file, with both lengths; unmapped", () => {
    const { opened, outcome } = mapped(good, undefined, (path) => truncateSync(path, 100));
    expect(outcome()).toMatchObject({
      name: "FormatError",
      code: "ERR_NUVEC_SAFETENSORS",
      field: "file",
      message: expect.stringContaining(`(${good.byteLength} bytes were mapped, the file has 100)`),
    });
    nothingHeld(opened);
  });

  it("another file renamed over it after its mapping: FormatError, field file", () => {
    const { opened, outcome } = mapped(good, undefined, (path) => {
      writeFileSync(`${path}.new`, good);
      renameSync(`${path}.new`, path);
    });
    expect(outcome()).toMatchObject({
      name: "FormatError",
      field: "file",
      message: expect.stringContaining("(another file was renamed over it)"),
    });
    nothingHeld(opened);
  });

  it("truncated to nothing between the reader's open and the mapping: FormatError, the backend's error as cause", () => {
    const { opened, outcome } = mapped(good, (path) => truncateSync(path, 0));
    const error = outcome() as FormatError;
    expect(error).toMatchObject({ name: "FormatError", field: "file" });
    expect(error.message).toContain("(it was truncated or rewritten)");
    expect(error.cause).toMatchObject({ name: "SystemCallError", syscall: "mmap", errno: "EINVAL" });
    nothingHeld(opened);
  });

  it("truncated before the mapping to less than its header: the truncation, by how much", () => {
    const { opened, outcome } = mapped(good, (path) => truncateSync(path, 20));
    expect(outcome()).toMatchObject({
      name: "FormatError",
      field: "header_length",
      message: `the file is truncated: its header length ${good.byteLength - 8 - 4096} needs ${good.byteLength - 4096} bytes, the file has 20 (${good.byteLength - 4096 - 20} bytes missing)`,
    });
    nothingHeld(opened);
  });

  it("an empty file: truncated to nothing, a FormatError (mapFile's refusal as cause), as on the mock", () => {
    const { opened, outcome } = mapped(new Uint8Array(0));
    const { backend, device: onMock } = device();
    backend.addFile("/empty.safetensors", 0);
    for (const error of [outcome(), thrown(() => mapSafetensors(onMock, "/empty.safetensors"))]) {
      expect(error).toMatchObject({
        name: "FormatError",
        field: "header_length",
        message: "the file is truncated: 0 bytes, 8 bytes missing from its 8-byte header length",
        cause: { name: "SystemCallError", syscall: "mmap", errno: "EINVAL" },
      });
    }
    nothingHeld(onMock);
    nothingHeld(opened);
  });

  it("a missing path or a folder: the backend's own error, as mapFile gives it", () => {
    const { opened } = mapped(good);
    const missing = join(folder, "missing.safetensors");
    expect(thrown(() => mapSafetensors(opened, missing))).toEqual(thrown(() => opened.mapFile(missing)));
    expect(thrown(() => mapSafetensors(opened, folder))).toEqual(thrown(() => opened.mapFile(folder)));
    nothingHeld(opened);
  });
});
