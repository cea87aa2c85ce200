// The program's output files: each checked before any work (a path that cannot be written fails at once),
// then written whole or not at all (a hidden file beside it, renamed into place), so a full file system
// leaves the previous file as it was and no partial one.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "./arguments.js";

function why(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? String(error);
}

/** Checks `path` for `flag` (its folder made when missing, and not a directory itself); its absolute path. */
export function prepareOutput(path: string, flag: string): string {
  const absolute = resolve(path);
  try {
    mkdirSync(dirname(absolute), { recursive: true });
  } catch (error) {
    throw new UsageError(`${flag}: cannot make the folder of ${path} (${why(error)})`);
  }
  let kind: "missing" | "file" | "other" = "missing";
  try {
    const stats = statSync(absolute);
    kind = stats.isFile() ? "file" : "other";
  } catch (error) {
    if (why(error) !== "ENOENT") throw new UsageError(`${flag}: cannot write ${path} (${why(error)})`);
  }
  if (kind === "other") throw new UsageError(`${flag}: ${path} is not a regular file`);
  return absolute;
}

/** Writes `data` (text, bytes, or text in pieces) to `path` whole or not at all. */
export function writeOutput(path: string, data: string | Uint8Array | readonly string[], flag: string): void {
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    const fd = openSync(temporary, "w", 0o644);
    try {
      const pieces = typeof data === "string" ? [data] : data instanceof Uint8Array ? [data] : data;
      for (const piece of pieces) {
        const bytes = typeof piece === "string" ? Buffer.from(piece, "utf8") : piece;
        let written = 0;
        while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw new UsageError(`${flag}: cannot write ${path} (${why(error)})`);
  }
}
