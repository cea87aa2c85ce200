// What the package's tests share: the repository's folders (the traces and snapshots they replay live in
// fixtures/traces and in the examples' traces/), a scratch folder removed after the file, the built program.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

/** The package's folder. */
export const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** The repository's root. */
export const root = resolve(here, "..", "..");
/** The examples' folder, whose traces/ holds the PyTorch snapshots and their figures. */
export const app = join(root, "apps", "examples");

/** A folder of its own for a test file, removed when the file's tests are done. */
export function scratchFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** Runs the built program (dist/cli.js) to its end; never waits forever. */
export function runCli(args: string[]) {
  const result = spawnSync(process.execPath, [join(here, "dist", "cli.js"), ...args], {
    encoding: "utf8",
    env: { ...process.env, FORCE_COLOR: "0" },
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
