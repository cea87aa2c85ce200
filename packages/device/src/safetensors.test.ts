import { MockBackend } from "@nuvec/metal-native/mock";
import { ArgumentError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
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

  it.each([
    ["a file too short for the length", new Uint8Array(4), /too short/],
    ["a header longer than the file", new Uint8Array([255, 0, 0, 0, 0, 0, 0, 0, 123]), /does not fit/],
    ["a header that is not JSON", checkpoint("{not json"), /not JSON/],
    ["a null header", checkpoint("null"), /header is null/],
    ["an array header", checkpoint("[]"), /header is an array/],
    ["a null tensor", checkpoint({ a: null }), /tensor a: .*null/],
    ["a string tensor", checkpoint({ a: "x" }), /tensor a:/],
    ["an unknown dtype", checkpoint({ a: tensor([0, 4], [4], "Q4") }), /tensor a: bad dtype/],
    ["an inherited dtype name", checkpoint({ a: tensor([0, 1], [1], "constructor") }), /tensor a: bad dtype/],
    ["offsets that do not match the shape", checkpoint({ a: tensor([0, 4], [4], "F16") }), /do not match/],
    ["offsets past the file", checkpoint({ a: tensor([0, 128], [128]) }), /do not match/],
    ["fractional offsets", checkpoint({ a: tensor([0.5, 4.5]) }), /tensor a: .*whole/],
    ["offsets in reverse", checkpoint({ a: tensor([4, 0], [0]) }), /tensor a:/],
    [
      "overlapping tensors",
      checkpoint({ a: tensor([0, 4]), b: tensor([2, 6]) }),
      /tensor b: .*overlap tensor a/,
    ],
    ["a non-object __metadata__", checkpoint({ __metadata__: 5, a: tensor([0, 4]) }), /__metadata__/],
    ["a non-string metadata value", checkpoint({ __metadata__: { n: 1 } }), /__metadata__.*n/],
  ])("refuses %s with a FormatError naming it", (_name, bytes, message) => {
    expect(thrown(() => readSafetensorsHeader(arrayBufferOf(bytes)))).toMatchObject({
      name: "FormatError",
      code: "ERR_NUVEC_SAFETENSORS",
      message: expect.stringMatching(message),
    });
  });

  it("refuses what is not an ArrayBuffer", () => {
    expect(() => readSafetensorsHeader(new Uint8Array(16) as never)).toThrow(ArgumentError);
  });
});

describe("mapSafetensors", () => {
  function device() {
    const backend = new MockBackend({ realFiles: false });
    return { backend, device: Device.open({ backend }) };
  }

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
});
