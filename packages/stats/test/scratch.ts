// A scratch folder for the files a test file writes: made when the file loads, removed after its tests.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll } from "vitest";

/** A new folder under the system's temporary folder (removed after the tests), and `write` into it. */
export function scratchFolder(prefix: string): {
  folder: string;
  /** Writes `content` to `name` in the folder; returns its path. */
  write(name: string, content: string | Uint8Array): string;
} {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  return {
    folder,
    write(name, content) {
      const path = join(folder, name);
      writeFileSync(path, content);
      return path;
    },
  };
}
