// The mock's files: the virtual ones a test adds, and real ones read through node:fs, failing as the host
// layer fails (the same syscalls and errno names).

import { ArgumentError, describeValue } from "@nuvec/stats";
import { fromFileSystemError, nodeFileSystem, systemError } from "./support.js";

/** A file's content as the mock maps it. */
export interface MockFile {
  /** The bytes, or `undefined` for zeros. */
  readonly bytes: Uint8Array | undefined;
  readonly length: number;
}

/** A virtual file from `addFile`'s arguments: the bytes (copied) or a length of zeros; checked. */
export function virtualFile(path: string, content: Uint8Array | number): MockFile {
  if (typeof path !== "string") {
    throw new ArgumentError("path", `path must be a string, got ${describeValue(path)}`);
  }
  if (typeof content === "number") {
    if (!Number.isSafeInteger(content) || content < 0) {
      throw new ArgumentError(
        "content",
        `content must be bytes or a non-negative safe integer length, got ${describeValue(content)}`,
      );
    }
    return { bytes: undefined, length: content };
  }
  if (content instanceof Uint8Array) return { bytes: content.slice(), length: content.byteLength };
  throw new ArgumentError("content", "content must be a Uint8Array or a length");
}

/** `f_type` of sysfs (`SYSFS_MAGIC` of linux/magic.h). */
const SYSFS_MAGIC = 0x62656572;

/**
 * Whether `path` is on sysfs (`/sys`), whose files say they hold a page but have no `mmap`: the host's
 * `mmap(2)` answers ENODEV there. False where `statfs` is not available or fails.
 */
function onSysfs(fs: typeof import("node:fs"), path: string): boolean {
  if (typeof fs.statfsSync !== "function") return false;
  try {
    return fs.statfsSync(path).type === SYSFS_MAGIC;
  } catch {
    return false;
  }
}

/**
 * The real file at `path`: its bytes when it is at most `realMemoryUpTo` long, else only its length (read as
 * zeros). Throws the host layer's `SystemCallError`s (open, fstat, read; EISDIR; ENODEV for what is not a
 * regular file and for a file of sysfs).
 */
export function readRealFile(path: string, realMemoryUpTo: number): MockFile {
  const fs = nodeFileSystem(path);
  let descriptor: number;
  try {
    // O_NONBLOCK, as the host backend: opening a FIFO must not wait for a writer (it is refused below).
    descriptor = fs.openSync(path, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
  } catch (error) {
    throw fromFileSystemError(error, "open", path);
  }
  try {
    let stats: import("node:fs").Stats;
    try {
      stats = fs.fstatSync(descriptor);
    } catch (error) {
      throw fromFileSystemError(error, "fstat", path);
    }
    if (stats.isDirectory()) throw systemError("open", "EISDIR", path, "a directory cannot be mapped");
    // What mmap(2) answers for a FIFO, a socket or most devices, as the host backend reports it.
    if (!stats.isFile()) throw systemError("mmap", "ENODEV", path, "is not a regular file");
    const length = stats.size;
    // An empty file is refused by the caller (mmap EINVAL) before sysfs would be, as on the host.
    if (length > 0 && onSysfs(fs, path)) {
      throw systemError("mmap", "ENODEV", path, "a file of sysfs cannot be mapped");
    }
    if (length === 0 || length > realMemoryUpTo) return { bytes: undefined, length };
    const bytes = new Uint8Array(length);
    let offset = 0;
    try {
      while (offset < length) {
        const read = fs.readSync(descriptor, bytes, offset, length - offset, offset);
        if (read === 0) break;
        offset += read;
      }
    } catch (error) {
      throw fromFileSystemError(error, "read", path);
    }
    return { bytes, length };
  } finally {
    fs.closeSync(descriptor);
  }
}
