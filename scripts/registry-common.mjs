// What the parts of the registry test (registry-test.mjs) share: the repository's root, the verdaccio they
// run, and how a line is printed and a command run. Apart so that the registry's side and the installs'
// side can each use them without importing the program.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { quietEnvironment } from "./pnpm.mjs";

/** The repository's root folder. */
export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** The verdaccio release the registry runs. */
export const VERDACCIO = "6.8.0";
/** node-fetch for verdaccio: 2.7.0 works on Node.js 20. */
export const NODE_FETCH = "2.7.0";
/** Where verdaccio is installed once, outside the workspace's dependencies. */
export const tools = join(root, "node_modules", ".cache", "nuvec-registry-tools");
/** The longest any one command of the test may run. */
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** Prints a line of the registry test's progress. */
export function log(message) {
  console.log(`registry test: ${message}`);
}

/** Prints why the registry test cannot go on and exits 1. */
export function fail(message) {
  console.error(`registry test: ${message}`);
  process.exit(1);
}

/** Runs `command` to its end (quiet environment, the install timeout): its status and its output. */
export function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    cwd: root,
    encoding: "utf8",
    timeout: INSTALL_TIMEOUT_MS,
    ...options,
    env: quietEnvironment(options.env ?? process.env),
  });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  return {
    status: result.error ? 1 : (result.status ?? 1),
    output: result.error ? String(result.error) : output,
  };
}
