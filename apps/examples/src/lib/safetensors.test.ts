import { readFileSync } from "node:fs";
import { join } from "node:path";
import { readSafetensorsHeader } from "@nuvec/device";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../test/support.js";
import { decoderModel, writeRandomCheckpoint } from "./safetensors.js";

const folder = scratchFolder("nuvec-safetensors-");

describe("safetensors", () => {
  it("writes a random checkpoint whose header parses back to the same tensors, and reports its progress", () => {
    const path = join(folder, "small.safetensors");
    const tensors = [
      { name: "a", dtype: "F16", shape: [3, 5] },
      { name: "b", dtype: "F32", shape: [7] },
      { name: "c", dtype: "U8", shape: [0] },
    ];
    const fractions: number[] = [];
    const length = writeRandomCheckpoint(path, tensors, (fraction) => fractions.push(fraction));
    const bytes = readFileSync(path);
    expect(bytes.length).toBe(length);
    const header = readSafetensorsHeader(new Uint8Array(bytes).buffer);
    expect(header.metadata).toEqual({ format: "pt", writer: "nuvec demo" });
    // The writer puts larger elements first: b (F32), then a (F16).
    expect(
      header.tensors.map((tensor) => [tensor.name, tensor.dtype, tensor.shape, tensor.byteLength]),
    ).toEqual([
      ["b", "F32", [7], 28],
      ["a", "F16", [3, 5], 30],
      ["c", "U8", [0], 0],
    ]);
    expect(header.tensors[0]?.offset).toBe(8 + header.headerLength);
    expect(fractions).toEqual([28 / 58, 1]);
  });

  it.each([24, 64, 256, 1024])("sizes a decoder model near a target of %i MiB", (mebibytes) => {
    const target = mebibytes * 1024 * 1024;
    const tensors = decoderModel(target);
    const bytes = tensors.reduce((sum, tensor) => sum + tensor.shape.reduce((p, d) => p * d, 1) * 2, 0);
    expect(bytes).toBeGreaterThan(0.6 * target);
    expect(bytes).toBeLessThan(1.4 * target);
  });
});
