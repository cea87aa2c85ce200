// The safetensors format, read and checked: 8 bytes of little-endian header length, a JSON header mapping
// tensor names to { dtype, shape, data_offsets: [begin, end] } (offsets relative to the end of the header),
// then the data. The reader trusts nothing in the file: a checkpoint is input from anywhere. Apart from the
// mapping (`safetensors.ts`), which decides where the bytes this reads come from and keeps them unchanged.

import { checkArgument, printable } from "@nuvec/stats";
import { safetensorsFormat } from "./errors.js";
import { SAFETENSORS_BYTES } from "./schemas.js";

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

/** The largest JSON header read: 100 MiB (the reference implementation's limit). */
export const SAFETENSORS_MAX_HEADER_LENGTH = 100 * 1024 * 1024;

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

/** A name or value from the file as a message quotes it: JSON-quoted, escaped for a terminal, cut. */
export function quoted(value: unknown): string {
  return printable(JSON.stringify(value) ?? String(value), 120);
}

/**
 * What a message adds when `values` holds an integer past 2⁵³: JSON numbers are read as doubles, so the value
 * printed is the nearest one, not the file's digits.
 */
function pastExact(values: unknown): string {
  return Array.isArray(values) &&
    values.some((value) => Number.isInteger(value) && !Number.isSafeInteger(value))
    ? " (a number past 2⁵³ is read as the nearest double: the file's digits may differ)"
    : "";
}

/** `tensor <name>: ` for a message (the name escaped and cut: it comes from the file). */
function tensorLabel(name: string): string {
  return `tensor ${printable(name, 120)}: `;
}

/**
 * The header length of the 8-byte `prefix`, checked against the limit and a file of `fileLength` bytes
 * (exact: the length is a 64-bit number, printed as one).
 */
export function checkedHeaderLength(prefix: Uint8Array, fileLength: number): number {
  if (prefix.byteLength < 8) {
    throw safetensorsFormat(
      `the file is truncated: ${fileLength} bytes, ${8 - fileLength} bytes missing from its 8-byte header length`,
      { field: "header_length" },
    );
  }
  const length = new DataView(prefix.buffer, prefix.byteOffset, 8).getBigUint64(0, true);
  if (length > BigInt(SAFETENSORS_MAX_HEADER_LENGTH)) {
    throw safetensorsFormat(
      `header length ${length} is over the limit of ${SAFETENSORS_MAX_HEADER_LENGTH} bytes (100 MiB)`,
      { field: "header_length" },
    );
  }
  if (8n + length > BigInt(fileLength)) {
    throw safetensorsFormat(
      `the file is truncated: its header length ${length} needs ${8n + length} bytes, the file has ${fileLength} (${8n + length - BigInt(fileLength)} bytes missing)`,
      { field: "header_length" },
    );
  }
  return Number(length);
}

/**
 * The header whose JSON is `json` (`headerLength` bytes after the 8-byte prefix) of a file of `fileLength`
 * bytes, every tensor checked against the file.
 */
export function parseHeader(json: Uint8Array, headerLength: number, fileLength: number): SafetensorsHeader {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(json));
  } catch (error) {
    throw safetensorsFormat(`the header is not JSON: ${(error as Error).message}`, {
      field: "header",
      cause: error,
    });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw safetensorsFormat(
      `the header is ${parsed === null ? "null" : Array.isArray(parsed) ? "an array" : `a ${typeof parsed}`}, not an object of tensors`,
      { field: "header" },
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
    tensors.push(checkedTensor(name, value, dataStart, fileLength));
  }
  tensors.sort((a, b) => a.offset - b.offset);
  // Two tensors sharing bytes would alias each other's weights: refused, naming both (empty ones share none).
  let previous: SafetensorsTensor | undefined;
  for (const tensor of tensors) {
    if (tensor.byteLength === 0) continue;
    if (previous !== undefined && tensor.offset < previous.offset + previous.byteLength) {
      throw safetensorsFormat(
        `${tensorLabel(tensor.name)}its bytes overlap tensor ${printable(previous.name, 120)}'s (data_offsets from ${previous.offset - dataStart} to ${previous.offset - dataStart + previous.byteLength})`,
        { tensor: tensor.name, field: "data_offsets" },
      );
    }
    previous = tensor;
  }
  return { headerLength, metadata, tensors };
}

/** The tensor `name` of the header: a known dtype, a shape of whole numbers, data offsets within the file. */
function checkedTensor(
  name: string,
  value: unknown,
  dataStart: number,
  fileLength: number,
): SafetensorsTensor {
  const label = tensorLabel(name);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw safetensorsFormat(
      `${label}its entry is ${value === null ? "null" : printable(JSON.stringify(value) ?? "", 40)}, not an object of dtype, shape and data_offsets`,
      { tensor: name, field: "entry" },
    );
  }
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (typeof dtype !== "string" || !Object.hasOwn(SAFETENSORS_DTYPE_BYTES, dtype)) {
    throw safetensorsFormat(
      `${label}${dtype === undefined ? "no dtype" : `unknown dtype ${quoted(dtype)}`} (one of ${Object.keys(SAFETENSORS_DTYPE_BYTES).join(", ")})`,
      { tensor: name, field: "dtype" },
    );
  }
  if (
    !Array.isArray(shape) ||
    !shape.every((dimension) => Number.isSafeInteger(dimension) && dimension >= 0)
  ) {
    throw safetensorsFormat(
      `${label}shape ${quoted(shape)} is not an array of whole numbers ≥ 0${pastExact(shape)}`,
      {
        tensor: name,
        field: "shape",
      },
    );
  }
  // Offsets are byte positions: whole numbers, in order (a fractional one would make a view throw later).
  const [begin, end] = Array.isArray(offsets) ? (offsets as unknown[]) : [];
  if (
    !Array.isArray(offsets) ||
    offsets.length !== 2 ||
    !Number.isSafeInteger(begin) ||
    !Number.isSafeInteger(end) ||
    (begin as number) < 0 ||
    (end as number) < (begin as number)
  ) {
    throw safetensorsFormat(
      `${label}data_offsets ${quoted(offsets)} are not two whole byte offsets, begin ≤ end${pastExact(offsets)}`,
      { tensor: name, field: "data_offsets" },
    );
  }
  // Counted exactly: a shape's product can pass 2⁵³.
  const elementBytes = SAFETENSORS_DTYPE_BYTES[dtype] as number;
  const needed =
    (shape as number[]).reduce((product, dimension) => product * BigInt(dimension), 1n) *
    BigInt(elementBytes);
  const length = (end as number) - (begin as number);
  if (BigInt(length) !== needed) {
    throw safetensorsFormat(
      `${label}data_offsets [${begin}, ${end}] hold ${length} bytes, its shape [${(shape as number[]).join(", ")}] of ${dtype} needs ${needed}`,
      { tensor: name, field: "data_offsets" },
    );
  }
  if (dataStart + (end as number) > fileLength) {
    throw safetensorsFormat(
      `the file is truncated: ${label.slice(0, -2)} ends at byte ${dataStart + (end as number)}, the file has ${fileLength} (${dataStart + (end as number) - fileLength} bytes missing)`,
      { tensor: name, field: "data_offsets" },
    );
  }
  return { name, dtype, shape: shape as number[], offset: dataStart + (begin as number), byteLength: length };
}

/** `__metadata__` is an object of strings (the format's `Dict[str, str]`); anything else is refused. */
function checkedMetadata(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw safetensorsFormat(
      `__metadata__ is ${value === null ? "null" : printable(JSON.stringify(value) ?? "", 40)}, not an object of strings`,
      { field: "__metadata__" },
    );
  }
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== "string") {
      throw safetensorsFormat(`__metadata__: its value for ${quoted(key)} is not a string`, {
        field: "__metadata__",
      });
    }
  }
  return value as Record<string, string>;
}

/**
 * Reads the header of a safetensors checkpoint held in `bytes`, copying no tensor data. Every tensor is
 * checked against the file: a known dtype, a shape of whole numbers, data offsets that are whole bytes in
 * order, match the shape, lie within the file and overlap no other tensor's; `__metadata__` an object of
 * strings; the header at most 100 MiB of JSON object. Anything else is a `FormatError`
 * (`ERR_NUVEC_SAFETENSORS`) whose `tensor` and `field` name what is wrong.
 *
 * It reads `bytes` directly: given a mapped file's `contents()`, a file truncated meanwhile faults the
 * process (SIGBUS). `mapSafetensors` reads the header from the file instead.
 */
export function readSafetensorsHeader(bytes: ArrayBuffer): SafetensorsHeader {
  checkArgument(SAFETENSORS_BYTES, bytes, "bytes", "readSafetensorsHeader()");
  const all = new Uint8Array(bytes);
  const headerLength = checkedHeaderLength(all.subarray(0, 8), all.byteLength);
  return parseHeader(all.subarray(8, 8 + headerLength), headerLength, all.byteLength);
}
