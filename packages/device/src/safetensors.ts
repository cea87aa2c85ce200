// Safetensors checkpoints mapped without a copy: the format is 8 bytes of little-endian header length, a JSON
// header mapping tensor names to { dtype, shape, data_offsets: [begin, end] } (offsets relative to the end of
// the header), then the data. The reader trusts nothing in the file: a checkpoint is input from anywhere.
//
// What the reader parses it reads with `pread` from a descriptor of its own, never through the mapping: a
// page of a mapping whose file was truncated is gone, and touching it kills the process with SIGBUS. The
// mapping's length and the file's identity are checked against that descriptor around the read, so the
// header parsed is the header the mapping holds (a file that changed in between is a `FormatError`).

import {
  ArgumentError,
  checkArgument,
  type FormatError,
  printable,
  rules,
  SystemCallError,
} from "@nuvec/stats";
import { type Device, isDevice } from "./device.js";
import { deviceClosed, mappingFreed, safetensorsFormat } from "./errors.js";
import { fileSystemError, nodeFileSystem } from "./file-system.js";
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
function quoted(value: unknown): string {
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
function checkedHeaderLength(prefix: Uint8Array, fileLength: number): number {
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
function parseHeader(json: Uint8Array, headerLength: number, fileLength: number): SafetensorsHeader {
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
 * process (SIGBUS). {@link mapSafetensors} reads the header from the file instead.
 */
export function readSafetensorsHeader(bytes: ArrayBuffer): SafetensorsHeader {
  checkArgument(SAFETENSORS_BYTES, bytes, "bytes", "readSafetensorsHeader()");
  const all = new Uint8Array(bytes);
  const headerLength = checkedHeaderLength(all.subarray(0, 8), all.byteLength);
  return parseHeader(all.subarray(8, 8 + headerLength), headerLength, all.byteLength);
}

/** A checkpoint mapped by {@link mapSafetensors}: the file, its checked header, and views of its tensors. */
export interface MappedSafetensors extends Disposable {
  /** The mapped file (free it, or use `using` on the checkpoint, when done: every view is detached then). */
  readonly file: MappedFile<Device>;
  /** The checked header. */
  readonly header: SafetensorsHeader;
  /** The bytes of the tensor called `name`, without a copy; throws an `ArgumentError` for a name not in the header. */
  tensorBytes(name: string): Uint8Array;
  /**
   * A copy of the bytes of the tensor called `name`, read from the file with `pread`, not through the mapping:
   * a file truncated, rewritten or replaced since it was mapped is a `FormatError` (`field` `"file"`) instead
   * of a fault. What to copy weights with (into device memory, say) when the file may change. An
   * `ArgumentError` for a name not in the header, a `StateError` once the file is freed.
   */
  readTensor(name: string): Uint8Array;
  /** `using checkpoint = mapSafetensors(device, path)` frees the file at the end of the scope (no error if freed). */
  [Symbol.dispose](): void;
}

/**
 * Maps the safetensors checkpoint at `path` on `device` without a copy (charged in `mapped`, as any
 * `mapFile`) and reads its header. A malformed file is a `FormatError` (`ERR_NUVEC_SAFETENSORS`), and so is
 * a file that changed while it was being mapped (`field` `"file"`: truncated, rewritten or replaced); the
 * file is unmapped again before either is thrown: nothing stays charged.
 *
 * The header is read from the file with `pread`, never through the mapping, so a file truncated meanwhile
 * cannot fault the process. `tensorBytes` gives views of the mapping: a file truncated in place while they
 * are read faults the process as any mapping does; `readTensor` copies with `pread` instead. Replace a
 * checkpoint by renaming a new file over it (as `writeSafetensors` does), never by rewriting it in place.
 */
export function mapSafetensors(device: Device, path: string): MappedSafetensors {
  checkArgument(A_DEVICE, device, "device", "mapSafetensors()");
  path = checkArgument(PATH, path, "path", "mapSafetensors()");
  if (device.closed) throw deviceClosed("mapSafetensors()");
  const { file, header, mapped } =
    device.native.backend.platform === "mock" ? mapCopied(device, path) : mapWithRead(device, path);
  const byName = new Map(header.tensors.map((tensor) => [tensor.name, tensor]));
  const named = (name: string, operation: string): SafetensorsTensor => {
    const tensor = byName.get(name);
    if (tensor === undefined) {
      throw new ArgumentError(
        "name",
        `${operation}(name): no tensor ${quoted(name)} in ${printable(file.path, 200, true)}`,
      );
    }
    return tensor;
  };
  return {
    file,
    header,
    tensorBytes(name: string): Uint8Array {
      const tensor = named(name, "tensorBytes");
      return new Uint8Array(file.contents(), tensor.offset, tensor.byteLength);
    },
    readTensor(name: string): Uint8Array {
      const tensor = named(name, "readTensor");
      if (file.freed || device.closed) throw mappingFreed("readTensor()");
      // The mock's mapping is a copy held by JavaScript: copied from it.
      if (mapped === undefined)
        return new Uint8Array(file.contents(), tensor.offset, tensor.byteLength).slice();
      return readFromFile(path, mapped, tensor);
    },
    [Symbol.dispose](): void {
      file[Symbol.dispose]();
    },
  };
}

/** A checkpoint mapped, its header read, and (a real mapping) what `fstat` said of the file it mapped. */
interface Mapped {
  file: MappedFile<Device>;
  header: SafetensorsHeader;
  mapped?: FileState;
}

/** The mock's mappings are copies held by JavaScript (a virtual file or one read whole): read in place. */
function mapCopied(device: Device, path: string): Mapped {
  let file: MappedFile<Device>;
  try {
    file = device.mapFile(path);
  } catch (error) {
    throw emptyFileError(error) ?? error;
  }
  try {
    return { file, header: readSafetensorsHeader(file.contents()) };
  } catch (error) {
    file.free();
    throw error;
  }
}

/**
 * An empty file is a checkpoint truncated to nothing: the `FormatError` for `mapFile`'s refusal of it (every
 * backend refuses to map an empty file with `mmap`'s `EINVAL`), or `undefined` for any other error.
 */
function emptyFileError(error: unknown): FormatError | undefined {
  if (!(error instanceof SystemCallError) || error.syscall !== "mmap" || error.errno !== "EINVAL")
    return undefined;
  return safetensorsFormat("the file is truncated: 0 bytes, 8 bytes missing from its 8-byte header length", {
    field: "header_length",
    cause: error,
  });
}

/** What `fstat` says of a file: its identity, length and last change. */
interface FileState {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

function sameFile(a: FileState, b: FileState): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function unchanged(a: FileState, b: FileState): boolean {
  return sameFile(a, b) && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

function changed(path: string, what: string, cause?: unknown, when: "while" | "since" = "while") {
  return safetensorsFormat(
    `${printable(path, 200, true)} changed ${when === "while" ? "while it was being" : "since it was"} mapped (${what}): map it again once it is written (replace a checkpoint by renaming a new file over it)`,
    cause === undefined ? { field: "file" } : { field: "file", cause },
  );
}

/**
 * A real mapping: the file opened by the reader too, mapped, then its length, identity and last change checked
 * around a `pread` of the length prefix and the header.
 */
function mapWithRead(device: Device, path: string): Mapped {
  const fs = nodeFileSystem("mapSafetensors()");
  let descriptor: number;
  try {
    descriptor = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    // The backend's own error says what is wrong with the path (missing, not readable), as for mapFile.
    const file = device.mapFile(path);
    file.free();
    throw changed(path, "it appeared after it was opened", fileSystemError(error, "mapSafetensors()", path));
  }
  try {
    const state = (): FileState => fs.fstatSync(descriptor, { bigint: true });
    const opened = state();
    let file: MappedFile<Device>;
    try {
      file = device.mapFile(path);
    } catch (error) {
      // A file truncated to nothing or replaced just now is refused by the backend for what it became.
      if (!unchanged(opened, state())) throw changed(path, "it was truncated or rewritten", error);
      throw emptyFileError(error) ?? error;
    }
    try {
      const before = state();
      const named = fs.statSync(path, { bigint: true });
      if (!sameFile(before, named)) throw changed(path, "another file was renamed over it");
      if (before.size !== BigInt(file.length)) {
        throw changed(path, `${file.length} bytes were mapped, the file has ${before.size}`);
      }
      const prefix = readAt(fs, descriptor, 0, 8, path);
      let json: Uint8Array | undefined;
      let failure: unknown;
      let headerLength = 0;
      try {
        headerLength = checkedHeaderLength(prefix, file.length);
        json = readAt(fs, descriptor, 8, headerLength, path);
      } catch (error) {
        failure = error;
      }
      // What was read is what the mapping holds only if the file did not change meanwhile.
      if (!unchanged(before, state())) throw changed(path, "it was truncated or rewritten", failure);
      if (failure !== undefined) throw failure;
      if (json === undefined || json.byteLength !== headerLength) {
        throw changed(path, "its header was shorter than its length when read");
      }
      return { file, header: parseHeader(json, headerLength, file.length), mapped: before };
    } catch (error) {
      file.free();
      throw error;
    }
  } finally {
    fs.closeSync(descriptor);
  }
}

/**
 * `tensor`'s bytes read from the file at `path` with `pread`: the file must still be the one mapped, as it was
 * (`mapped`), before and after the read.
 */
function readFromFile(path: string, mapped: FileState, tensor: SafetensorsTensor): Uint8Array {
  const fs = nodeFileSystem("readTensor()");
  let descriptor: number;
  try {
    descriptor = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (error) {
    throw changed(
      path,
      "it cannot be opened any more",
      fileSystemError(error, "readTensor()", path),
      "since",
    );
  }
  try {
    const state = (): FileState => fs.fstatSync(descriptor, { bigint: true });
    if (!unchanged(mapped, state()))
      throw changed(path, "it is not the file mapped, as it was", undefined, "since");
    const bytes = readAt(fs, descriptor, tensor.offset, tensor.byteLength, path, "readTensor()");
    if (!unchanged(mapped, state()) || bytes.byteLength !== tensor.byteLength) {
      throw changed(path, "it was truncated or rewritten while it was read", undefined, "since");
    }
    return bytes;
  } finally {
    fs.closeSync(descriptor);
  }
}

/** Up to `length` bytes at `position` of `descriptor` (fewer at the end of the file), read with `pread`. */
function readAt(
  fs: typeof import("node:fs"),
  descriptor: number,
  position: number,
  length: number,
  path: string,
  operation = "mapSafetensors()",
): Uint8Array {
  const bytes = new Uint8Array(length);
  let done = 0;
  try {
    while (done < length) {
      const read = fs.readSync(descriptor, bytes, done, length - done, position + done);
      if (read === 0) break;
      done += read;
    }
  } catch (error) {
    throw fileSystemError(error, operation, path);
  }
  return done === length ? bytes : bytes.subarray(0, done);
}
