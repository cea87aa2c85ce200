/**
 * readSafetensorsHeader over bytes in memory: every field of the format checked and each malformed file refused
 * with the tensor and field it names. Apart from the mapping tests (`safetensors.test.ts`), which are about
 * where the bytes come from and what happens when the file changes.
 */
import { ArgumentError, FormatError } from "@nuvec/stats";
import { describe, expect, it } from "vitest";
import { thrown } from "../../stats/test/thrown.js";
import { arrayBufferOf, checkpoint, tensor } from "../test/safetensors-bytes.js";
import { readSafetensorsHeader } from "./safetensors.js";

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
