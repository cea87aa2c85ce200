import { systemCallError } from "@nuvec/native-core";
import {
  ArgumentError,
  describeValue,
  NativeUnavailableError,
  NuvecError,
  type SystemCallError,
} from "@nuvec/stats";

/**
 * Whether `buffer` is detached already: moved away by its holder (`postMessage`/`structuredClone` transfer,
 * `ArrayBuffer.prototype.transfer`). Reads `detached` where the engine has it; elsewhere a detached buffer
 * is one of `byteLength` 0 while `expectedLength` bytes stood behind it.
 */
export function isDetached(buffer: ArrayBuffer, expectedLength: number): boolean {
  const detached = (buffer as { detached?: unknown }).detached;
  if (typeof detached === "boolean") return detached;
  return expectedLength > 0 && buffer.byteLength === 0;
}

/**
 * Detaches `buffer` (every view over it then reads `byteLength` 0) and returns a new `ArrayBuffer` holding
 * its bytes, without a copy. Uses `ArrayBuffer.prototype.transfer` where the engine has it (Node.js ≥ 21)
 * and a transferring `structuredClone` otherwise (Node.js 20). A buffer that was moved away already (its
 * holder transferred it) has nothing left to detach: the bytes went with the transfer, and `undefined` is
 * returned (never the TypeError the engine throws for a second transfer).
 */
export function detachArrayBuffer(buffer: ArrayBuffer, expectedLength: number): ArrayBuffer | undefined {
  if (isDetached(buffer, expectedLength)) return undefined;
  const transfer = (buffer as { transfer?: () => ArrayBuffer }).transfer;
  if (typeof transfer === "function") return transfer.call(buffer);
  return structuredClone(buffer, { transfer: [buffer] });
}

/**
 * The mock's view of `length` bytes: `memory` itself when it has that length, else a new `ArrayBuffer` of
 * `length` bytes with `memory`'s first bytes moved into it (`memory` detached, zeros past its end). The mock
 * keeps one view length at a time: its memory is JavaScript's, which cannot alias a part of an ArrayBuffer.
 */
export function viewOfLength(memory: ArrayBuffer | undefined, length: number): ArrayBuffer {
  if (memory !== undefined && memory.byteLength === length) return memory;
  const view = new ArrayBuffer(length);
  const moved = memory === undefined ? undefined : detachArrayBuffer(memory, memory.byteLength);
  if (moved !== undefined) {
    new Uint8Array(view).set(new Uint8Array(moved, 0, Math.min(length, moved.byteLength)));
  }
  return view;
}

/** Checks a positive safe integer option or argument; throws a `ArgumentError` naming it. */
export function assertPositiveInteger(value: unknown, name: string): asserts value is number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new ArgumentError(name, `${name} must be a positive safe integer, got ${describeValue(value)}`);
  }
}

/** Whether `value` is a power of two. */
export function isPowerOfTwo(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0 && (value & (value - 1)) === 0 && value <= 2 ** 30;
}

/** Errno numbers that Linux and macOS share, for when `node:os` is not there to ask. */
const PORTABLE_ERRNO: Readonly<Record<string, number>> = {
  EPERM: 1,
  ENOENT: 2,
  EIO: 5,
  ENOMEM: 12,
  EACCES: 13,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  ENODEV: 19,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  ENFILE: 23,
  EMFILE: 24,
  EFBIG: 27,
};

interface BuiltinModules {
  fs: typeof import("node:fs") | undefined;
  os: typeof import("node:os") | undefined;
}

type GetBuiltinModule = (id: string) => unknown;

/** `process.getBuiltinModule` when running in Node.js (≥ 20.16), else undefined: no static `node:` import. */
function getBuiltinModule(): GetBuiltinModule | undefined {
  const processObject = (globalThis as { process?: { getBuiltinModule?: GetBuiltinModule } }).process;
  return typeof processObject?.getBuiltinModule === "function"
    ? processObject.getBuiltinModule.bind(processObject)
    : undefined;
}

let builtins: BuiltinModules | undefined;

function loadBuiltins(): BuiltinModules {
  if (builtins === undefined) {
    const get = getBuiltinModule();
    builtins = {
      fs: get?.("node:fs") as typeof import("node:fs") | undefined,
      os: get?.("node:os") as typeof import("node:os") | undefined,
    };
  }
  return builtins;
}

/** `node:fs`, loaded on first use; throws a {@link NativeUnavailableError} outside Node.js. */
export function nodeFileSystem(path: string): typeof import("node:fs") {
  const fs = loadBuiltins().fs;
  if (fs === undefined) {
    throw new NativeUnavailableError(
      `the mock cannot map the real file ${JSON.stringify(path)}: node:fs is not available here; ` +
        "add a virtual file with mock.addFile(path, bytes) instead",
    );
  }
  return fs;
}

/** The number of the errno named `errno` on this system (`-1` when unknown). */
export function errnoNumber(errno: string): number {
  const constants = loadBuiltins().os?.constants.errno as Record<string, number> | undefined;
  return constants?.[errno] ?? PORTABLE_ERRNO[errno] ?? -1;
}

/** A `SystemCallError` as the host layer would throw it: `<syscall> <path>: <errno>`. */
export function systemError(syscall: string, errno: string, path: string, detail?: string): SystemCallError {
  const because = detail === undefined ? "" : ` (${detail})`;
  return systemCallError(
    syscall,
    errno,
    errnoNumber(errno),
    `${syscall} ${JSON.stringify(path)} failed: ${errno}${because}`,
    path,
  );
}

/** Turns an error thrown by `node:fs` into a `SystemCallError`; other errors pass through. */
export function fromFileSystemError(error: unknown, syscall: string, path: string): unknown {
  if (error instanceof NuvecError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string" || !code.startsWith("E")) return error;
  const message = (error as { message?: unknown }).message;
  return systemError(syscall, code, path, typeof message === "string" ? message : undefined);
}
