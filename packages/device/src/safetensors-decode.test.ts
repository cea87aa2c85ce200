// The decode loop's user program: a runtime over the mock Device that writes its weights with
// writeSafetensors, maps them with `using checkpoint = mapSafetensors(...)`, decodes 2,000 steps (a KV cache
// that grows by a block of 16 tokens per layer, activations freed every step), checkpoints the KV cache with
// the writer, maps it back and checks every byte, and ends with nothing held.
import { join } from "node:path";
import { MockBackend } from "@nuvec/metal-native/mock";
import { describe, expect, it } from "vitest";
import { scratchFolder } from "../../stats/test/scratch.js";
import { Device } from "./device.js";
import type { DeviceBuffer } from "./device-buffer.js";
import { mapSafetensors } from "./safetensors.js";
import { writeSafetensors } from "./safetensors-writer.js";

const { folder } = scratchFolder("nuvec-decode-loop-");
const STEPS = 2000;
const LAYERS = 4;
const HIDDEN = 64;
const VOCABULARY = 256;
const BLOCK_TOKENS = 16;
/** One KV block: 16 tokens × (K, V) × hidden, F32. */
const BLOCK_BYTES = BLOCK_TOKENS * 2 * HIDDEN * 4;

/** A weight's values: a function of the tensor's index and the element's, exact in F32. */
const weight = (tensor: number, length: number) =>
  Float32Array.from({ length }, (_, index) => ((tensor * 131 + index * 7) % 251) / 8);
/** The K (kind 0) or V (kind 1) row the decode writes for `step` in `layer`. */
const kvRow = (step: number, layer: number, kind: number) =>
  Float32Array.from(
    { length: HIDDEN },
    (_, index) => ((step * 3 + layer * 17 + kind * 5 + index) % 1021) - 510,
  );

describe("the decode loop's user program", () => {
  it("writes and maps its weights, decodes 2,000 steps, checkpoints the KV cache, reads it back to the byte; nothing held", () => {
    const device = Device.open({ backend: new MockBackend({ realFiles: true }) });
    const weightsPath = join(folder, "weights.safetensors");
    const names = [
      "embed",
      ...Array.from({ length: LAYERS }, (_, layer) => [`layers.${layer}.qkv`, `layers.${layer}.mlp`]).flat(),
    ];
    const shapes = names.map((name) =>
      name === "embed"
        ? [VOCABULARY, HIDDEN]
        : name.endsWith("qkv")
          ? [3 * HIDDEN, HIDDEN]
          : [4 * HIDDEN, HIDDEN],
    );
    writeSafetensors(
      weightsPath,
      names.map((name, index) => ({
        name,
        dtype: "F32",
        shape: shapes[index] as number[],
        data: weight(
          index,
          (shapes[index] as number[]).reduce((a, b) => a * b, 1),
        ),
      })),
      { metadata: { format: "pt", model: "decode-loop" } },
    );

    const cache: DeviceBuffer[][] = Array.from({ length: LAYERS }, () => []);
    let kvPath = "";
    {
      using checkpoint = mapSafetensors(device, weightsPath);
      expect(checkpoint.header.metadata).toEqual({ format: "pt", model: "decode-loop" });
      // Copied out with readTensor (read from the file, never through the mapping a truncation could take).
      const embed = new Float32Array(checkpoint.readTensor("embed").buffer);
      for (let step = 0; step < STEPS; step += 1) {
        // The token's embedding, copied out of the mapped weights into an activation.
        const token = step % VOCABULARY;
        const x = device.malloc(HIDDEN * 4);
        x.write(embed.subarray(token * HIDDEN, (token + 1) * HIDDEN));
        const activations = [x];
        for (let layer = 0; layer < LAYERS; layer += 1) {
          const row = step % BLOCK_TOKENS;
          if (row === 0) cache[layer]?.push(device.malloc(BLOCK_BYTES));
          const block = cache[layer]?.at(-1) as DeviceBuffer;
          block.write(kvRow(step, layer, 0), (row * 2 + 0) * HIDDEN * 4);
          block.write(kvRow(step, layer, 1), (row * 2 + 1) * HIDDEN * 4);
          // Attention over every token so far and the MLP's intermediate: freed at the end of the step.
          activations.push(device.malloc((step + 1) * 4), device.malloc(4 * HIDDEN * 4));
        }
        for (const activation of activations) activation.free();
      }
      expect(device.memoryStats().mapped).toBe(checkpoint.file.allocatedLength);
    }
    const blocks = Math.ceil(STEPS / BLOCK_TOKENS);
    expect(device.memoryStats()).toMatchObject({ active: LAYERS * blocks * BLOCK_BYTES, mapped: 0 });

    // The KV cache's checkpoint, every block a tensor, copied out of device memory as it is written.
    kvPath = join(folder, "kv-cache.safetensors");
    writeSafetensors(
      kvPath,
      cache.flatMap((layerBlocks, layer) =>
        layerBlocks.map((block, index) => ({
          name: `kv.${layer}.${index}`,
          dtype: "F32",
          shape: [BLOCK_TOKENS, 2, HIDDEN],
          data: [block.read()],
        })),
      ),
      { metadata: { steps: String(STEPS) } },
    );
    for (const block of cache.flat()) block.free();
    {
      using kv = mapSafetensors(device, kvPath);
      expect(kv.header.metadata).toEqual({ steps: "2000" });
      expect(kv.header.tensors).toHaveLength(LAYERS * blocks);
      for (let layer = 0; layer < LAYERS; layer += 1) {
        for (let index = 0; index < blocks; index += 1) {
          const bytes = kv.tensorBytes(`kv.${layer}.${index}`);
          const expected = new Float32Array(BLOCK_TOKENS * 2 * HIDDEN);
          for (let row = 0; row < BLOCK_TOKENS && index * BLOCK_TOKENS + row < STEPS; row += 1) {
            const step = index * BLOCK_TOKENS + row;
            expected.set(kvRow(step, layer, 0), (row * 2 + 0) * HIDDEN);
            expected.set(kvRow(step, layer, 1), (row * 2 + 1) * HIDDEN);
          }
          // The last block's rows past step 2,000 are whatever the buffer held: compared up to there.
          const rows = Math.min(BLOCK_TOKENS, STEPS - index * BLOCK_TOKENS);
          const length = rows * 2 * HIDDEN * 4;
          expect(Buffer.from(bytes.subarray(0, length)).equals(Buffer.from(expected.buffer, 0, length))).toBe(
            true,
          );
        }
      }
      // The weights round-trip too (the mapping of the first checkpoint was released at its scope's end).
    }
    {
      using weights = mapSafetensors(device, weightsPath);
      for (const [index, name] of names.entries()) {
        const bytes = weights.tensorBytes(name);
        const values = weight(index, bytes.byteLength / 4);
        expect(Buffer.from(bytes).equals(Buffer.from(values.buffer))).toBe(true);
      }
    }

    // Everything released after dispose: nothing active, nothing mapped, no buffer or mapping live.
    const stats = device.memoryStats();
    expect(stats).toMatchObject({ active: 0, mapped: 0, quarantined: 0 });
    expect(stats.peakActive).toBeGreaterThanOrEqual(LAYERS * blocks * BLOCK_BYTES);
    expect(device.counters()).toMatchObject({ liveBuffers: 0, mappings: 0, pendingFrees: 0 });
    device.close();
    expect(device.memoryStats()).toMatchObject({ active: 0, cache: 0, mapped: 0 });
  });
});
