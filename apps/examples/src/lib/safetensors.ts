// The demo's checkpoint of random weights, written by @nuvec/device's writeSafetensors (the reader beside it
// is mapSafetensors): the tensors of a small decoder-only model, each tensor's bytes made chunk by chunk as
// the writer asks for them, so a checkpoint of gigabytes is never held whole.

import { randomFillSync } from "node:crypto";
import { SAFETENSORS_DTYPE_BYTES, writeSafetensors } from "@nuvec/device";

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

/**
 * Writes a safetensors checkpoint of `tensors` with random contents (through a temporary file renamed into
 * place: a failed write leaves nothing at `path`); returns its length in bytes. `onProgress` is told the
 * fraction of the data written.
 */
export function writeRandomCheckpoint(
  path: string,
  tensors: TensorSpec[],
  onProgress?: (fraction: number) => void,
): number {
  const sizes = tensors.map(
    (tensor) =>
      tensor.shape.reduce((product, dimension) => product * dimension, 1) *
      (SAFETENSORS_DTYPE_BYTES[tensor.dtype] ?? 1),
  );
  const total = sizes.reduce((sum, size) => sum + size, 0);
  // One chunk for every tensor: each is written before the next is filled.
  const chunk = Buffer.allocUnsafe(Math.min(8 * 1024 * 1024, Math.max(1, ...sizes)));
  let written = 0;
  function* randomBytes(size: number): Generator<Uint8Array> {
    for (let left = size; left > 0; ) {
      const part = Math.min(left, chunk.length);
      randomFillSync(chunk, 0, part);
      yield chunk.subarray(0, part);
      left -= part;
      written += part;
      onProgress?.(written / total);
    }
  }
  return writeSafetensors(
    path,
    tensors.map((tensor, index) => ({ ...tensor, data: randomBytes(sizes[index] ?? 0) })),
    { metadata: { format: "pt", writer: "nuvec demo" } },
  );
}
