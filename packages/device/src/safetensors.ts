// Safetensors checkpoints mapped without a copy: the format is 8 bytes of little-endian header length, a JSON
// header mapping tensor names to { dtype, shape, data_offsets: [begin, end] } (offsets relative to the end of
// the header), then the data. The reader trusts nothing in the file: a checkpoint is input from anywhere.

import { ArgumentError, checkArgument, rules } from "@nuvec/stats";
import { type Device, isDevice } from "./device.js";
import { safetensorsFormat } from "./errors.js";
import type { MappedFile } from "./mapped-file.js";
import { PATH, SAFETENSORS_BYTES } from "./schemas.js";

/** `mapSafetensors`'s device: one made by `Device.open`. */
const A_DEVICE = rules.rule<Device>("a Device (from Device.open)", isDevice);

/** Bytes per element of the dtypes safetensors knows. */
export const SAFETENSORS_DTYPE_BYTES: Readonly<Record<string, number>> = {
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
export interface SafetensorsTensor {
  /** The tensor's name in the header. */
  name: string;
  /** The safetensors dtype (`"F16"`, `"BF16"`, …; see {@link SAFETENSORS_DTYPE_BYTES}). */
  dtype: string;
  /** The dimensions, outermost first. */
  shape: number[];
  /** Offset of the tensor's first byte from the start of the file. */
  offset: number;
  /** The tensor's bytes: the product of its shape times its dtype's size. */
  byteLength: number;
}

/** A safetensors header, read and checked. */
export interface SafetensorsHeader {
  /** Bytes of the JSON header (after the 8-byte length); tensor data starts at `8 + headerLength`. */
  headerLength: number;
  /** `__metadata__`: strings only. */
  metadata: Record<string, string>;
  /** Every tensor, in the order of their bytes in the file. */
  tensors: SafetensorsTensor[];
}

/**
 * Reads the header of a safetensors checkpoint held in `bytes` (a mapped file's `contents()`), copying no
 * tensor data. Every tensor is checked against the file: a known dtype, a shape of whole numbers, data offsets
 * that are whole bytes in order, match the shape, lie within the file and overlap no other tensor's;
 * `__metadata__` an object of strings; the header at most 100 MiB of JSON object. Anything else is a
 * `FormatError` (`ERR_NUVEC_SAFETENSORS`) naming the tensor and what is wrong.
 */
export function readSafetensorsHeader(bytes: ArrayBuffer): SafetensorsHeader {
  checkArgument(SAFETENSORS_BYTES, bytes, "bytes", "readSafetensorsHeader()");
  if (bytes.byteLength < 8) throw safetensorsFormat(`the file is ${bytes.byteLength} bytes: too short`);
  const headerLength = Number(new DataView(bytes).getBigUint64(0, true));
  if (headerLength > bytes.byteLength - 8 || headerLength > 100 * 1024 * 1024) {
    throw safetensorsFormat(`header length ${headerLength} does not fit in a ${bytes.byteLength}-byte file`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(new Uint8Array(bytes, 8, headerLength)));
  } catch (error) {
    throw safetensorsFormat(`the header is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw safetensorsFormat(
      `the header is ${parsed === null ? "null" : Array.isArray(parsed) ? "an array" : `a ${typeof parsed}`}, not an object of tensors`,
    );
  }
  const dataStart = 8 + headerLength;
  const tensors: SafetensorsTensor[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (name === "__metadata__") {
      metadata = checkedMetadata(value);
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw safetensorsFormat(
        `tensor ${name}: its entry is ${value === null ? "null" : JSON.stringify(value)?.slice(0, 40)}, not an object`,
      );
    }
    const entry = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const elementBytes =
      typeof entry.dtype === "string" && Object.hasOwn(SAFETENSORS_DTYPE_BYTES, entry.dtype)
        ? SAFETENSORS_DTYPE_BYTES[entry.dtype]
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
      throw safetensorsFormat(`tensor ${name}: bad dtype, shape or data_offsets`);
    }
    const [begin, end] = offsets as [unknown, unknown];
    // Offsets are byte positions: whole numbers, in order (a fractional one would make a view throw later).
    if (
      !Number.isSafeInteger(begin) ||
      !Number.isSafeInteger(end) ||
      (begin as number) < 0 ||
      (end as number) < (begin as number)
    ) {
      throw safetensorsFormat(
        `tensor ${name}: data_offsets ${JSON.stringify(offsets)} are not two whole byte offsets, begin ≤ end`,
      );
    }
    const elements = (shape as number[]).reduce((product, dimension) => product * dimension, 1);
    const length = (end as number) - (begin as number);
    if (length !== elements * elementBytes || dataStart + (end as number) > bytes.byteLength) {
      throw safetensorsFormat(
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
  let previous: SafetensorsTensor | undefined;
  for (const tensor of tensors) {
    if (tensor.byteLength === 0) continue;
    if (previous !== undefined && tensor.offset < previous.offset + previous.byteLength) {
      throw safetensorsFormat(
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
    throw safetensorsFormat(
      `tensor __metadata__: it is ${value === null ? "null" : JSON.stringify(value)?.slice(0, 40)}, not an object of strings`,
    );
  }
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") {
      throw safetensorsFormat(`tensor __metadata__: its value for ${key} is not a string`);
    }
  }
  return value as Record<string, string>;
}

/** A checkpoint mapped by {@link mapSafetensors}: the file, its checked header, and views of its tensors. */
export interface MappedSafetensors {
  /** The mapped file (free it, or use `using`, when done: every view is detached then). */
  readonly file: MappedFile<Device>;
  /** The checked header. */
  readonly header: SafetensorsHeader;
  /** The bytes of the tensor called `name`, without a copy; throws a `ArgumentError` for a name not in the header. */
  tensorBytes(name: string): Uint8Array;
}

/**
 * Maps the safetensors checkpoint at `path` on `device` without a copy (charged in `mapped`, as any
 * `mapFile`) and reads its header. A malformed file is a `FormatError` (`ERR_NUVEC_SAFETENSORS`), and is unmapped
 * again before it is thrown: nothing stays charged.
 */
export function mapSafetensors(device: Device, path: string): MappedSafetensors {
  checkArgument(A_DEVICE, device, "device", "mapSafetensors()");
  const file = device.mapFile(checkArgument(PATH, path, "path", "mapSafetensors()"));
  let header: SafetensorsHeader;
  try {
    header = readSafetensorsHeader(file.contents());
  } catch (error) {
    file.free();
    throw error;
  }
  const byName = new Map(header.tensors.map((tensor) => [tensor.name, tensor]));
  return {
    file,
    header,
    tensorBytes(name: string): Uint8Array {
      const tensor = byName.get(name);
      if (tensor === undefined) {
        throw new ArgumentError(
          "name",
          `tensorBytes(name): no tensor ${JSON.stringify(name)} in ${file.path}`,
        );
      }
      return new Uint8Array(file.contents(), tensor.offset, tensor.byteLength);
    },
  };
}
