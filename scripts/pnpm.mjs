// How every script and test of the workspace runs pnpm (and through it turbo, changeset and the other dev
// tools), on a machine with only Node.js and npm: the pinned pnpm (root package.json's packageManager) that
// started us, else a `pnpm` on PATH when it is that version, else `npx --yes pnpm@<pinned>`. Nothing is
// installed globally. Spawning a bare `pnpm` fails on such a machine (ENOENT), or runs another version;
// scripts/scripts.test.mjs checks that no script or test does.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { basename, delimiter, dirname, isAbsolute, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The pnpm version the workspace pins (`packageManager` of the root package.json). */
export const pnpmVersion = JSON.parse(
  readFileSync(join(root, "package.json"), "utf8"),
).packageManager.replace(/^pnpm@/, "");

/**
 * The environment for a package manager run by the workspace: `environment` plus the settings that keep the
 * log to what matters (no update notices from npm or pnpm, no funding or audit lines, no turbo telemetry
 * notice).
 */
export function quietEnvironment(environment = process.env) {
  return {
    ...environment,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    TURBO_TELEMETRY_DISABLED: "1",
    DO_NOT_TRACK: "1",
  };
}

let found;

/**
 * The program and leading arguments that run the pinned pnpm here, found once per process:
 * `[process.execPath, [pnpm.cjs]]` when the pinned pnpm started this process (npm_execpath), `["pnpm", []]` when
 * the `pnpm` on PATH is the pinned version, else `["npx", ["--yes", "pnpm@<pinned>"]]`.
 */
export function pnpmProgram() {
  if (found) return found;
  const agent = process.env.npm_config_user_agent ?? "";
  const execpath = process.env.npm_execpath;
  // `pnpm run` sets both; `pnpm exec` leaves npm_execpath as it found it (npx's npm, say): check the name.
  if (execpath && basename(execpath).startsWith("pnpm") && agent.startsWith(`pnpm/${pnpmVersion} `)) {
    // pnpm may be a Node.js script or a single executable.
    found = /\.[cm]?js$/.test(execpath) ? [process.execPath, [execpath]] : [execpath, []];
    return found;
  }
  const onPath = spawnSync("pnpm", ["--version"], { encoding: "utf8", env: quietEnvironment() });
  if (!onPath.error && onPath.status === 0 && onPath.stdout.trim() === pnpmVersion) found = ["pnpm", []];
  else found = [process.platform === "win32" ? "npx.cmd" : "npx", ["--yes", `pnpm@${pnpmVersion}`]];
  return found;
}

/** `[program, args]` that run `pnpm <args>` with the pinned pnpm (see pnpmProgram). */
export function pnpmArgs(args) {
  const [program, lead] = pnpmProgram();
  return [program, [...lead, ...args]];
}

/**
 * Runs `pnpm <args>` with the pinned pnpm, synchronously (spawnSync's options; the environment is made quiet,
 * see quietEnvironment). Returns spawnSync's result.
 */
export function runPnpm(args, options = {}) {
  const [program, fullArgs] = pnpmArgs(args);
  return spawnSync(program, fullArgs, {
    cwd: root,
    stdio: "inherit",
    ...options,
    env: quietEnvironment(options.env ?? process.env),
  });
}

/**
 * The pinned pnpm as `[program, leading arguments]` with an absolute program, for a child whose PATH holds no
 * pnpm (an install test with only `node` on PATH): through npx's cache when nothing else has it.
 */
export function pnpmExecutable() {
  const [program, lead] = pnpmProgram();
  if (isAbsolute(program)) return [program, lead];
  if (program === "pnpm") {
    for (const directory of (process.env.PATH ?? "").split(delimiter))
      if (directory && existsSync(join(directory, "pnpm"))) return [join(directory, "pnpm"), []];
  }
  const found = spawnSync(program, ["--yes", "-p", `pnpm@${pnpmVersion}`, "-c", "command -v pnpm"], {
    encoding: "utf8",
    env: quietEnvironment(),
  });
  const path = found.stdout?.trim().split("\n").at(-1);
  if (found.status !== 0 || !path || !isAbsolute(path))
    throw new Error(`could not find pnpm ${pnpmVersion} through npx: ${found.stderr ?? found.error}`);
  return [path, []];
}
