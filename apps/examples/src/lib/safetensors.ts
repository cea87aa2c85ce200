// The safetensors format: 8 bytes of little-endian header length, a JSON header mapping tensor names to
// { dtype, shape, data_offsets: [begin, end] } (offsets relative to the end of the header), then the data.

import { randomFillSync } from "node:crypto";
import { closeSync, openSync, writeSync } from "node:fs";
import { NuvecError } from "@nuvec/stats";

/** Bytes per element of the dtypes safetensors knows. */
export const DTYPE_BYTES: Readonly<Record<string, number>> = {
  BOOL: 1,
  U8: 1,
  I8: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
  I16: 2,
  U16: 2,
  F16: 2,
  BF16: 2,
  I32: 4,
  U32: 4,
  F32: 4,
  I64: 8,
  U64: 8,
  F64: 8,
};

/** One tensor of a checkpoint: where its bytes are, without copying them. */
export interface TensorInfo {
  name: string;
  dtype: string;
  shape: number[];
  /** Offset of the tensor's first byte from the start of the file. */
  offset: number;
  byteLength: number;
}

/** A parsed safetensors header. */
export interface SafetensorsHeader {
  headerLength: number;
  metadata: Record<string, string>;
  tensors: TensorInfo[];
}

/**
 * Thrown for a file that is not a well-formed safetensors checkpoint; the message says what is wrong. A
 * {@link NuvecError} (code `ERR_NUVEC_SAFETENSORS`), as a runtime's own errors can be.
 */
export class SafetensorsFormatError extends NuvecError {
  constructor(message: string) {
    super("ERR_NUVEC_SAFETENSORS", message);
  }
}

/** Parses the header of a safetensors file held in `bytes` (e.g. a mapped file's contents), copying nothing. */
export function parseSafetensors(bytes: ArrayBuffer): SafetensorsHeader {
  if (bytes.byteLength < 8)
    throw new SafetensorsFormatError(`the file is ${bytes.byteLength} bytes: too short`);
  const headerLength = Number(new DataView(bytes).getBigUint64(0, true));
  if (headerLength > bytes.byteLength - 8 || headerLength > 100 * 1024 * 1024) {
    throw new SafetensorsFormatError(
      `header length ${headerLength} does not fit in a ${bytes.byteLength}-byte file`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(new Uint8Array(bytes, 8, headerLength)));
  } catch (error) {
    throw new SafetensorsFormatError(`the header is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new SafetensorsFormatError(
      `the header is ${parsed === null ? "null" : Array.isArray(parsed) ? "an array" : `a ${typeof parsed}`}, not an object of tensors`,
    );
  }
  const dataStart = 8 + headerLength;
  const tensors: TensorInfo[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = checkedMetadata(value);
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new SafetensorsFormatError(
        `tensor ${name}: its entry is ${value === null ? "null" : JSON.stringify(value)?.slice(0, 40)}, not an object`,
      );
    }
    const entry = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const elementBytes =
      typeof entry.dtype === "string" && Object.hasOwn(DTYPE_BYTES, entry.dtype)
        ? DTYPE_BYTES[entry.dtype]
        : undefined;
    const shape = entry.shape;
    const offsets = entry.data_offsets;
    if (
      elementBytes === undefined ||
      !Array.isArray(shape) ||
      !shape.every((dimension) => Number.isSafeInteger(dimension) && dimension >= 0) ||
      !Array.isArray(offsets) ||
      offsets.length !== 2
    ) {
      throw new SafetensorsFormatError(`tensor ${name}: bad dtype, shape or data_offsets`);
    }
    const [begin, end] = offsets as [unknown, unknown];
    // Offsets are byte positions: whole numbers, in order (a fractional one would make a view throw later).
    if (
      !Number.isSafeInteger(begin) ||
      !Number.isSafeInteger(end) ||
      (begin as number) < 0 ||
      (end as number) < (begin as number)
    ) {
      throw new SafetensorsFormatError(
        `tensor ${name}: data_offsets ${JSON.stringify(offsets)} are not two whole byte offsets, begin ≤ end`,
      );
    }
    const elements = (shape as number[]).reduce((product, dimension) => product * dimension, 1);
    const length = (end as number) - (begin as number);
    if (length !== elements * elementBytes || dataStart + (end as number) > bytes.byteLength) {
      throw new SafetensorsFormatError(
        `tensor ${name}: data_offsets [${begin}, ${end}] do not match its shape or the file`,
      );
    }
    tensors.push({
      name,
      dtype: entry.dtype as string,
      shape: shape as number[],
      offset: dataStart + (begin as number),
      byteLength: length,
    });
  }
  tensors.sort((a, b) => a.offset - b.offset);
  // Two tensors sharing bytes would alias each other's weights: refused, naming both (empty ones share none).
  let previous: TensorInfo | undefined;
  for (const tensor of tensors) {
    if (tensor.byteLength === 0) continue;
    if (previous !== undefined && tensor.offset < previous.offset + previous.byteLength) {
      throw new SafetensorsFormatError(
        `tensor ${tensor.name}: its bytes overlap tensor ${previous.name}'s (data_offsets from ${previous.offset - dataStart} to ${previous.offset - dataStart + previous.byteLength})`,
      );
    }
    previous = tensor;
  }
  return { headerLength, metadata, tensors };
}

/** `__metadata__` is an object of strings (the format's `Dict[str, str]`); anything else is refused. */
function checkedMetadata(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new SafetensorsFormatError(
      `tensor __metadata__: it is ${value === null ? "null" : JSON.stringify(value)?.slice(0, 40)}, not an object of strings`,
    );
  }
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") {
      throw new SafetensorsFormatError(`tensor __metadata__: its value for ${key} is not a string`);
    }
  }
  return value as Record<string, string>;
}

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
      tensor.shape.reduce((product, dimension) => product * dimension, 1) * (DTYPE_BYTES[tensor.dtype] ?? 1);
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
