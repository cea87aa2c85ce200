// Safetensors checkpoints mapped without a copy; the format itself is read and checked in
// `safetensors-header.ts`.
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
import {
  checkedHeaderLength,
  parseHeader,
  quoted,
  readSafetensorsHeader,
  type SafetensorsHeader,
  type SafetensorsTensor,
} from "./safetensors-header.js";
import { PATH } from "./schemas.js";

export {
  readSafetensorsHeader,
  SAFETENSORS_DTYPE_BYTES,
  SAFETENSORS_MAX_HEADER_LENGTH,
  type SafetensorsHeader,
  type SafetensorsTensor,
} from "./safetensors-header.js";

/** `mapSafetensors`'s device: one made by `Device.open`. */
const A_DEVICE = rules.rule<Device>("a Device (from Device.open)", isDevice);

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
