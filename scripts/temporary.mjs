// A temporary folder removed on every way out: a normal end, an error, and a death by signal (SIGINT,
// SIGTERM, SIGHUP, even SIGKILL). Every program of the repository that writes temporary files uses it (the
// scripts here, the example programs, the packages' build scripts); types in temporary.d.mts. A signal
// handler cannot do it: the programs write and replay synchronously, so a handler would run only once the
// work is done (Ctrl-C ignored for seconds), and SIGKILL runs none. Instead a small guardian process,
// detached with setsid (the terminal's Ctrl-C and hang-up do not reach it), holds the read end of a pipe
// whose write end only this process has: when this process ends in any way, the kernel closes the pipe and
// the guardian removes the folder.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The guardian: waits for its standard input to close, then removes the folder named in its argument. */
const GUARDIAN = `
const { rmSync } = require("node:fs");
const folder = process.argv[1];
for (const signal of ["SIGINT", "SIGHUP"]) process.on(signal, () => {});
const remove = () => {
  try { rmSync(folder, { recursive: true, force: true }); } catch {}
  process.exit(0);
};
process.stdin.on("data", () => {});
process.stdin.on("end", remove);
process.stdin.on("error", remove);
process.stdin.on("close", remove);
process.stdin.resume();
`;

/**
 * Makes a temporary folder named `prefix…` that is removed when the program ends, however it ends. Call
 * `remove()` when done with it; whatever is left (a signal, a crash) the guardian removes.
 */
export function temporaryFolder(prefix) {
  const path = mkdtempSync(join(tmpdir(), prefix));
  const guardian = spawn(process.execPath, ["-e", GUARDIAN, path], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  // Neither the guardian nor its pipe keeps this program running.
  guardian.unref();
  const pipe = guardian.stdin;
  pipe?.unref?.();
  // A guardian that could not start must not crash the program: the normal ways out still remove the folder.
  guardian.on("error", () => {});
  pipe?.on("error", () => {});
  let removed = false;
  return {
    path,
    remove() {
      if (removed) return;
      removed = true;
      rmSync(path, { recursive: true, force: true });
      pipe?.destroy();
    },
  };
}

/**
 * A script's scratch folder: a {@link temporaryFolder}, or with `keep` (the script's --keep) a bare folder
 * that stays for a look afterwards, whose `remove()` leaves it and prints where it is after `label`.
 */
export function scratchFolder(prefix, keep, label) {
  if (!keep) return temporaryFolder(prefix);
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => console.log(`${label}: kept ${path}`) };
}
