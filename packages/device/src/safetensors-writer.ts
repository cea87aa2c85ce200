// The writer beside the reader: a checkpoint mapSafetensors reads back to the byte. The file is written under
// a temporary name in the same folder and renamed over `path` once complete (and flushed), so a reader never
// sees a partial file and a failed write (a full disk, a file size limit) leaves nothing behind.

import { ArgumentError, checkArgument, describeValue, optionsSchema, printable, rules } from "@nuvec/stats";
import { fileSystemError, nodeFileSystem } from "./file-system.js";
import { SAFETENSORS_DTYPE_BYTES, SAFETENSORS_MAX_HEADER_LENGTH } from "./safetensors.js";
import { PATH } from "./schemas.js";

const WHERE = "writeSafetensors()";

/** One tensor to write: its name, dtype, shape and bytes. */
export interface SafetensorsTensorData {
  /** The tensor's name in the header: a non-empty string other than `__metadata__`, unique in the file. */
  name: string;
  /** The safetensors dtype (`"F16"`, `"BF16"`, …; see `SAFETENSORS_DTYPE_BYTES`). */
  dtype: string;
  /** The dimensions, outermost first: whole numbers ≥ 0. */
  shape: readonly number[];
  /**
   * The tensor's bytes, in the machine's byte order: a typed array, `DataView` or `Buffer` of exactly the
   * shape's product times the dtype's size, or an iterable of such views (chunks written as they come, so
   * a large tensor need not be held whole; each chunk is written before the next is asked for).
   */
  data: ArrayBufferView | Iterable<ArrayBufferView>;
}

/** `writeSafetensors(path, tensors, options)`. */
export const WRITE_SAFETENSORS_OPTIONS = optionsSchema(WHERE, {
  metadata: rules.optional(
    rules.rule<Record<string, string>>(
      "an object of strings",
      (value) => typeof value === "object" && value !== null && !Array.isArray(value),
    ),
  ),
});

/** `writeSafetensors`'s options: `metadata`, the header's `__metadata__` (strings only). */
export interface WriteSafetensorsOptions {
  /** The header's `__metadata__`: an object of strings (`{ format: "pt" }`). */
  metadata?: Record<string, string>;
}

/** A tensor checked and placed: where its bytes go. */
interface Placed {
  name: string;
  dtype: string;
  shape: number[];
  byteLength: number;
  data: ArrayBufferView | Iterable<ArrayBufferView>;
  argument: string;
  begin: number;
}

/** `tensors[index].field` and the tensor's name, for an error. */
function refuse(argument: string, name: string | undefined, message: string, cause?: unknown): never {
  const which = name === undefined ? "" : `tensor ${printable(JSON.stringify(name), 120)}: `;
  throw new ArgumentError(
    argument,
    `${WHERE}: ${which}${argument} ${message}`,
    cause === undefined ? undefined : { cause },
  );
}

/** The field `key` of `entry`, read once (a getter that throws is refused naming it). */
function read(entry: object, key: string, argument: string, name?: string): unknown {
  try {
    return (entry as Record<string, unknown>)[key];
  } catch (error) {
    refuse(argument, name, "could not be read", error);
  }
}

/** Every tensor checked (name, dtype, shape, data's length), in the order their bytes are written. */
function placed(tensors: unknown): Placed[] {
  if (!Array.isArray(tensors))
    refuse("tensors", undefined, `must be an array of tensors, got ${describeValue(tensors)}`);
  const names = new Set<string>();
  // Array.from: a hole in a sparse array is a missing tensor, refused, not skipped as `map` would.
  const checked = Array.from(tensors as unknown[], (entry: unknown, index): Omit<Placed, "begin"> => {
    const at = `tensors[${index}]`;
    if (typeof entry !== "object" || entry === null)
      refuse(at, undefined, `must be an object, got ${describeValue(entry)}`);
    const name = read(entry, "name", `${at}.name`);
    if (typeof name !== "string" || name === "" || name === "__metadata__") {
      refuse(
        `${at}.name`,
        undefined,
        `must be a non-empty string other than "__metadata__", got ${printable(describeValue(name), 120)}`,
      );
    }
    if (names.has(name)) refuse(`${at}.name`, name, "names a tensor given before it: names are unique");
    names.add(name);
    const dtype = read(entry, "dtype", `${at}.dtype`, name);
    if (typeof dtype !== "string" || !Object.hasOwn(SAFETENSORS_DTYPE_BYTES, dtype)) {
      refuse(
        `${at}.dtype`,
        name,
        `must be one of ${Object.keys(SAFETENSORS_DTYPE_BYTES).join(", ")}, got ${printable(describeValue(dtype), 60)}`,
      );
    }
    const givenShape = read(entry, "shape", `${at}.shape`, name);
    const shape = Array.isArray(givenShape) ? [...(givenShape as unknown[])] : undefined;
    if (
      shape === undefined ||
      !shape.every((dimension) => Number.isSafeInteger(dimension) && (dimension as number) >= 0)
    ) {
      refuse(
        `${at}.shape`,
        name,
        `must be an array of whole numbers ≥ 0, got ${printable(describeValue(givenShape), 60)}`,
      );
    }
    const bytes =
      (shape as number[]).reduce((product, dimension) => product * BigInt(dimension), 1n) *
      BigInt(SAFETENSORS_DTYPE_BYTES[dtype] as number);
    if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) {
      refuse(
        `${at}.shape`,
        name,
        `[${shape.join(", ")}] of ${dtype} is ${bytes} bytes, more than a file can hold here`,
      );
    }
    const byteLength = Number(bytes);
    const data = read(entry, "data", `${at}.data`, name);
    if (typeof data === "string") {
      refuse(`${at}.data`, name, "must be a typed array, a DataView or an iterable of them, got a string");
    } else if (ArrayBuffer.isView(data)) {
      if (data.byteLength !== byteLength) {
        refuse(
          `${at}.data`,
          name,
          `holds ${data.byteLength} bytes, its shape [${shape.join(", ")}] of ${dtype} needs ${byteLength}`,
        );
      }
    } else if (typeof (data as { [Symbol.iterator]?: unknown } | null)?.[Symbol.iterator] !== "function") {
      refuse(
        `${at}.data`,
        name,
        `must be a typed array, a DataView or an iterable of them, got ${describeValue(data)}`,
      );
    }
    return {
      name,
      dtype,
      shape: shape as number[],
      byteLength,
      data: data as Placed["data"],
      argument: `${at}.data`,
    };
  });
  // Larger elements first (in the given order among equals): every tensor then starts at a multiple of its
  // element's size, the header being padded to 8 bytes.
  const order = checked
    .map((tensor, index) => ({ tensor, index }))
    .sort(
      (a, b) =>
        (SAFETENSORS_DTYPE_BYTES[b.tensor.dtype] as number) -
          (SAFETENSORS_DTYPE_BYTES[a.tensor.dtype] as number) || a.index - b.index,
    );
  let offset = 0;
  return order.map(({ tensor }) => {
    const begin = offset;
    offset += tensor.byteLength;
    if (!Number.isSafeInteger(offset))
      refuse("tensors", undefined, `hold ${offset} bytes in all, more than a file can hold here`);
    return { ...tensor, begin };
  });
}

/** The header's bytes: the JSON (`__metadata__` first, then the tensors in file order), padded with spaces to 8. */
function headerBytes(tensors: readonly Placed[], metadata: Record<string, string> | undefined): Uint8Array {
  const entries: string[] = [];
  if (metadata !== undefined) {
    const fields: string[] = [];
    for (const key of Object.keys(metadata)) {
      const value = read(metadata, key, `metadata.${key}`);
      if (typeof value !== "string")
        refuse(`metadata.${key}`, undefined, `must be a string, got ${printable(describeValue(value), 60)}`);
      fields.push(`${JSON.stringify(key)}:${JSON.stringify(value)}`);
    }
    entries.push(`"__metadata__":{${fields.join(",")}}`);
  }
  for (const tensor of tensors) {
    entries.push(
      `${JSON.stringify(tensor.name)}:{"dtype":${JSON.stringify(tensor.dtype)},"shape":[${tensor.shape.join(",")}],"data_offsets":[${tensor.begin},${tensor.begin + tensor.byteLength}]}`,
    );
  }
  const json = new TextEncoder().encode(`{${entries.join(",")}}`);
  const length = Math.ceil(json.byteLength / 8) * 8;
  if (length > SAFETENSORS_MAX_HEADER_LENGTH) {
    refuse(
      "tensors",
      undefined,
      `make a header of ${length} bytes, over the limit of ${SAFETENSORS_MAX_HEADER_LENGTH} (100 MiB) a reader accepts`,
    );
  }
  const bytes = new Uint8Array(8 + length).fill(0x20, 8 + json.byteLength);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(length), true);
  bytes.set(json, 8);
  return bytes;
}

/** The bytes of a view (any typed array or `DataView`). */
function bytesOf(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * Writes `tensors` to a safetensors checkpoint at `path`, the header's `__metadata__` from
 * `options.metadata`; returns the file's length in bytes. What `mapSafetensors` reads back, to the
 * byte: the 8-byte little-endian header length, the JSON header padded with spaces to a multiple of 8 bytes,
 * then the tensors' bytes with no gap, larger elements first (in the given order among equals), so every
 * tensor starts at a multiple of its element's size.
 *
 * Bad input is an `ArgumentError` naming the tensor and the field (`tensors[2].dtype`), thrown before the
 * file system is touched (an iterable's chunks are counted as they come: too many or too few bytes is the same
 * error). The file is written under a temporary name beside `path`, flushed, then renamed over it: a failed
 * write (`SystemCallError`, e.g. `ENOSPC`, `EFBIG`) leaves `path` as it was and no temporary file behind. An
 * existing file keeps its permissions; a symbolic link stays one, to the new file.
 */
export function writeSafetensors(
  path: string,
  tensors: readonly SafetensorsTensorData[],
  options?: WriteSafetensorsOptions,
): number {
  path = checkArgument(PATH, path, "path", WHERE);
  const { metadata } = WRITE_SAFETENSORS_OPTIONS.parse(options);
  const layout = placed(tensors);
  const header = headerBytes(layout, metadata);
  const fs = nodeFileSystem(WHERE);
  // An existing checkpoint is replaced where it really is (a symbolic link stays a link to the new file) and
  // keeps its permissions.
  let target = path;
  let mode: number | undefined;
  try {
    target = fs.realpathSync(path);
    mode = fs.statSync(target).mode & 0o7777;
  } catch {
    // no file there yet: written as `path`, with the default permissions
  }
  const slash = Math.max(target.lastIndexOf("/"), target.lastIndexOf("\\"));
  const temporary = `${target.slice(0, slash + 1)}.${target.slice(slash + 1)}.${process.pid}-${Math.random().toString(36).slice(2, 10)}.partial`;
  let descriptor: number | undefined;
  try {
    try {
      descriptor = fs.openSync(temporary, "wx");
      if (mode !== undefined) fs.fchmodSync(descriptor, mode);
    } catch (error) {
      throw fileSystemError(error, WHERE, path);
    }
    const write = (bytes: Uint8Array): void => {
      let done = 0;
      try {
        while (done < bytes.byteLength)
          done += fs.writeSync(descriptor as number, bytes, done, bytes.byteLength - done);
      } catch (error) {
        throw fileSystemError(error, WHERE, path);
      }
    };
    write(header);
    for (const tensor of layout) {
      if (ArrayBuffer.isView(tensor.data)) {
        write(bytesOf(tensor.data));
        continue;
      }
      let written = 0;
      for (const chunk of tensor.data) {
        if (!ArrayBuffer.isView(chunk))
          refuse(
            tensor.argument,
            tensor.name,
            `gave a chunk that is not a typed array or DataView: ${describeValue(chunk)}`,
          );
        if (written + chunk.byteLength > tensor.byteLength) {
          refuse(
            tensor.argument,
            tensor.name,
            `gave more than the ${tensor.byteLength} bytes its shape [${tensor.shape.join(", ")}] of ${tensor.dtype} needs`,
          );
        }
        write(bytesOf(chunk));
        written += chunk.byteLength;
      }
      if (written !== tensor.byteLength) {
        refuse(
          tensor.argument,
          tensor.name,
          `gave ${written} bytes, its shape [${tensor.shape.join(", ")}] of ${tensor.dtype} needs ${tensor.byteLength}`,
        );
      }
    }
    try {
      fs.fsyncSync(descriptor);
      fs.closeSync(descriptor);
      descriptor = undefined;
      fs.renameSync(temporary, target);
    } catch (error) {
      throw fileSystemError(error, WHERE, path);
    }
  } catch (error) {
    try {
      if (descriptor !== undefined) fs.closeSync(descriptor);
    } finally {
      fs.rmSync(temporary, { force: true });
    }
    throw error;
  }
  const last = layout.at(-1);
  return header.byteLength + (last === undefined ? 0 : last.begin + last.byteLength);
}
