// Output paths of the example programs: the repository's one check (scripts/output-path.mjs), made before
// any work starts, and the one way the programs write an output file. Bundled into dist/ by tsup.
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { OutputPathError } from "../../../../scripts/output-path.mjs";

export { OutputPathError, prepareOutputPath } from "../../../../scripts/output-path.mjs";

/**
 * Writes `data` to `path` whole or not at all: into a temporary file beside it (same folder, so the rename
 * cannot cross file systems), flushed, then renamed over `path` (over the file a symbolic link names). A file already at `path` keeps its content
 * until the rename and its permissions after it. On any failure (a full file system, a file size limit, a
 * rename refused) the temporary file is removed and `path` is as it was.
 *
 * @throws OutputPathError naming `flag` and `path`, with the system's code (`ENOSPC`, `EFBIG`, …).
 */
export function writeOutputFile(path: string, data: string | Uint8Array, flag: string): void {
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  // A symbolic link is written through, as a plain write would: the file it names is replaced, the link kept.
  let target = path;
  let mode: number | undefined;
  try {
    target = realpathSync(path);
    mode = statSync(target).mode & 0o7777;
  } catch {
    // Nothing there yet: the new file gets the default permissions.
  }
  const temporary = join(
    dirname(target),
    `.${basename(target)}.${process.pid}-${Math.random().toString(36).slice(2, 10)}.partial`,
  );
  let descriptor: number | undefined;
  try {
    descriptor = openSync(temporary, "wx");
    if (mode !== undefined) fchmodSync(descriptor, mode);
    let written = 0;
    while (written < bytes.byteLength) {
      written += writeSync(descriptor, bytes, written, bytes.byteLength - written);
    }
    fsyncSync(descriptor);
    closeSync(descriptor);
    descriptor = undefined;
    renameSync(temporary, target);
  } catch (error) {
    try {
      if (descriptor !== undefined) closeSync(descriptor);
    } finally {
      rmSync(temporary, { force: true });
    }
    const code = (error as { code?: unknown }).code;
    throw new OutputPathError(
      `${flag} ${path}: cannot write it (${(error as Error).message})`,
      typeof code === "string" ? code : "EIO",
    );
  }
}
