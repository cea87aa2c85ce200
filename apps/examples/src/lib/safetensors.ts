// Writes safetensors checkpoints of random weights for the demo (the reader is @nuvec/device's
// readSafetensorsHeader / mapSafetensors): 8 bytes of little-endian header length, a JSON header mapping
// tensor names to { dtype, shape, data_offsets: [begin, end] }, then the data.

import { randomFillSync } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { SAFETENSORS_DTYPE_BYTES } from "@nuvec/device";

/** A tensor to write: name, dtype, shape; its bytes are random. */
export interface TensorSpec {
  name: string;
  dtype: string;
  shape: number[];
}

/** The tensors of a small decoder-only model of about `targetBytes` bytes of fp16 weights. */
export function decoderModel(targetBytes: number): TensorSpec[] {
  const hidden = 1024;
  // The embedding takes at most a quarter of the target, so small checkpoints stay near their size.
  const vocabulary = Math.max(256, Math.min(32000, Math.floor(targetBytes / 4 / (hidden * 2))));
  const tensors: TensorSpec[] = [
    { name: "model.embed_tokens.weight", dtype: "F16", shape: [vocabulary, hidden] },
  ];
  const perLayer = 12 * hidden * hidden * 2;
  const layers = Math.max(1, Math.round((targetBytes - vocabulary * hidden * 2) / perLayer));
  for (let layer = 0; layer < layers; layer += 1) {
    const prefix = `model.layers.${layer}`;
    tensors.push(
      { name: `${prefix}.input_layernorm.weight`, dtype: "F16", shape: [hidden] },
      { name: `${prefix}.self_attn.qkv_proj.weight`, dtype: "F16", shape: [3 * hidden, hidden] },
      { name: `${prefix}.self_attn.o_proj.weight`, dtype: "F16", shape: [hidden, hidden] },
      { name: `${prefix}.post_attention_layernorm.weight`, dtype: "F16", shape: [hidden] },
      { name: `${prefix}.mlp.gate_up_proj.weight`, dtype: "F16", shape: [8 * hidden, hidden] },
    );
  }
  tensors.push({ name: "model.norm.weight", dtype: "F16", shape: [hidden] });
  return tensors;
}

/** Writes a safetensors file of `tensors` with random contents; returns its length in bytes. */
export function writeSafetensors(
  path: string,
  tensors: TensorSpec[],
  onProgress?: (fraction: number) => void,
): number {
  const header: Record<string, unknown> = { __metadata__: { format: "pt", writer: "nuvec demo" } };
  let offset = 0;
  const sizes = tensors.map((tensor) => {
    const bytes =
      tensor.shape.reduce((product, dimension) => product * dimension, 1) *
      (SAFETENSORS_DTYPE_BYTES[tensor.dtype] ?? 1);
    header[tensor.name] = {
      dtype: tensor.dtype,
      shape: tensor.shape,
      data_offsets: [offset, offset + bytes],
    };
    offset += bytes;
    return bytes;
  });
  // The header is padded with spaces to 8 bytes so tensor data stays aligned, as the reference writer does.
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const headerBytes = Buffer.from(json, "utf8");
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(headerBytes.length));
  const descriptor = openSync(path, "w");
  try {
    writeSync(descriptor, prefix);
    writeSync(descriptor, headerBytes);
    const chunk = Buffer.allocUnsafe(8 * 1024 * 1024);
    let written = 0;
    for (const size of sizes) {
      let left = size;
      while (left > 0) {
        const part = Math.min(left, chunk.length);
        randomFillSync(chunk, 0, part);
        writeSync(descriptor, chunk, 0, part);
        left -= part;
        written += part;
        onProgress?.(written / offset);
      }
    }
  } finally {
    closeSync(descriptor);
  }
  return 8 + headerBytes.length + offset;
}
