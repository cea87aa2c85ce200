// `node:fs` for the safetensors reader and writer, loaded on first use through `process.getBuiltinModule`, so
// that loading @nuvec/device imports no `node:` module (a Device on the mock backend runs without one), and
// Node's errors turned into the family's `SystemCallError`.
import { NativeUnavailableError, NuvecError, SystemCallError } from "@nuvec/stats";

type FileSystem = typeof import("node:fs");
type GetBuiltinModule = (id: string) => unknown;

let fileSystem: FileSystem | undefined;

/** `node:fs`; a `NativeUnavailableError` outside Node.js (no `process.getBuiltinModule`). */
export function nodeFileSystem(operation: string): FileSystem {
  if (fileSystem === undefined) {
    const processObject = (globalThis as { process?: { getBuiltinModule?: GetBuiltinModule } }).process;
    const get = processObject?.getBuiltinModule;
    const loaded = typeof get === "function" ? (get.call(processObject, "node:fs") as FileSystem) : undefined;
    if (loaded === undefined) {
      throw new NativeUnavailableError(
        `${operation}: reading and writing files needs Node.js's node:fs (process.getBuiltinModule), which this environment lacks`,
        { reason: "unsupported-platform" },
      );
    }
    fileSystem = loaded;
  }
  return fileSystem;
}

/** An error thrown by `node:fs` as a `SystemCallError` (`write`, `ENOSPC`, the path); other errors unchanged. */
export function fileSystemError(error: unknown, operation: string, path: string): unknown {
  if (error instanceof NuvecError) return error;
  const { code, syscall, errno, message } = (error ?? {}) as {
    code?: unknown;
    syscall?: unknown;
    errno?: unknown;
    message?: unknown;
  };
  if (typeof code !== "string" || !code.startsWith("E")) return error;
  const call = typeof syscall === "string" ? syscall : "open";
  return new SystemCallError(
    `${operation}: ${call} ${JSON.stringify(path)} failed: ${typeof message === "string" ? message : code}`,
    {
      syscall: call,
      errno: code,
      errnoNumber: typeof errno === "number" ? Math.abs(errno) : -1,
      path,
      cause: error,
    },
  );
}
