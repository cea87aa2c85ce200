// Where a program writes its output, checked before any work starts: a path that cannot be written fails at
// once with one line naming it, not after minutes of work, and never hangs (Node's recursive mkdir retries
// forever under /proc, where a missing folder cannot be made). Every program of the repository with an output
// path uses it: the example programs, the scripts. Types in output-path.d.mts.
import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** An output path that cannot be written: `code` is the system's (`ENOENT`, `ENOTDIR`, `EISDIR`, `EACCES`…). */
export class OutputPathError extends Error {
  constructor(message, code) {
    super(message);
    this.name = "OutputPathError";
    this.code = code;
  }
}

function errnoCode(error) {
  return error?.code ?? "EIO";
}

/** The existing path's `stat`, or `undefined` when nothing is there. */
function existing(path) {
  try {
    return statSync(path);
  } catch (error) {
    // ENOTDIR: a file stands where a folder should; the walk up finds it and says so.
    if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") return undefined;
    throw error;
  }
}

/**
 * Checks that the file `given` (for `flag`, named in the message) can be written and makes its missing
 * folders, one at a time (each failure is one clear error). Returns the absolute path.
 *
 * @throws OutputPathError when the path names a directory, a FIFO or a device, when a folder above it is a
 *   file, or when a folder cannot be made or written to.
 */
export function prepareOutputPath(given, flag) {
  const path = resolve(given);
  const fail = (what, code) => {
    throw new OutputPathError(`${flag} ${given}: ${what}`, code);
  };
  try {
    const target = existing(path);
    if (target !== undefined && !target.isFile())
      fail(
        `it is ${target.isDirectory() ? "a directory" : "not a regular file"}, not a file to write`,
        target.isDirectory() ? "EISDIR" : "EINVAL",
      );
    // The nearest folder that exists, and the ones to make below it.
    const missing = [];
    let folder = dirname(path);
    let found = existing(folder);
    while (found === undefined) {
      missing.unshift(folder);
      const parent = dirname(folder);
      if (parent === folder) break;
      folder = parent;
      found = existing(folder);
    }
    if (found !== undefined && !found.isDirectory()) fail(`${folder} is not a directory`, "ENOTDIR");
    for (const part of missing) {
      try {
        mkdirSync(part);
      } catch (error) {
        if (errnoCode(error) !== "EEXIST")
          fail(`cannot make the folder ${part} (${error.message})`, errnoCode(error));
      }
    }
    try {
      accessSync(dirname(path), constants.W_OK);
    } catch (error) {
      fail(`the folder ${dirname(path)} cannot be written to (${errnoCode(error)})`, errnoCode(error));
    }
  } catch (error) {
    if (error instanceof OutputPathError) throw error;
    fail(`cannot be checked (${error.message})`, errnoCode(error));
  }
  return path;
}
