// Builds a backend's addon from source with node-gyp, into native/build/Release/ of that copy of the
// package, where its loader looks first. Each backend's scripts/build-from-source.mjs (its package's bin, and
// its workspace `build`) calls buildFromSource() with its own names, from the copy of this file in its
// native/native-core/ (scripts/copy.mjs), so a published backend builds without @nuvec/native-core. Two uses:
//   - the workspace's `build` (development: incremental, make decides what to recompile);
//   - `npx @nuvec/<backend> build` where no prebuilt addon fits (or to replace it).
// node-gyp is not a dependency: it is found when this runs (see findNodeGyp). It would download Node's
// headers; it is pointed at the running Node's own headers instead (--nodedir from process.execPath) when
// they are there, as pnpm does not pass npm's nodedir setting to scripts.
// NUVEC_SKIP_NATIVE_BUILD=1 skips the build (the workspace then tests only what needs no addon).
// Imports nothing but Node's built-ins.
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

/** node-gyp's entry point as [command, ...leading arguments], found at this time, or undefined. */
function findNodeGyp(root) {
  // 1. Resolvable from the package: the workspace's root devDependency, or one the user installed.
  try {
    const script = createRequire(join(root, "package.json")).resolve("node-gyp/bin/node-gyp.js");
    return [process.execPath, script];
  } catch {}
  // 2. The one npm passes to scripts and npx, or bundles beside itself.
  const candidates = [process.env.npm_config_node_gyp];
  const npmCli = process.env.npm_execpath;
  if (npmCli && /npm-cli\.js$/.test(npmCli))
    candidates.push(
      join(dirname(realpathSync(npmCli)), "..", "node_modules", "node-gyp", "bin", "node-gyp.js"),
    );
  const prefix = dirname(dirname(process.execPath));
  candidates.push(
    join(prefix, "lib", "node_modules", "npm", "node_modules", "node-gyp", "bin", "node-gyp.js"),
  );
  for (const candidate of candidates)
    if (candidate && existsSync(candidate)) return [process.execPath, candidate];
  // 3. On PATH.
  for (const directory of (process.env.PATH ?? "").split(delimiter))
    if (directory && existsSync(join(directory, "node-gyp"))) return [join(directory, "node-gyp")];
  return undefined;
}

/**
 * Builds the addon of the package at `root` (its native/binding.gyp) into native/build/Release/ with
 * node-gyp, as the command line `args` ask; returns the exit status (0 built or skipped, 1 failed, 2 a bad
 * argument). Every message starts with `packageName`.
 * - `addonFile`: the built file's name (for the closing message);
 * - `unsupported(platform)`: why the package has no native backend on that platform, or undefined;
 * - `description`: the lines of `--help` after the usage line;
 * - `requirements`: what a failed build needs, appended to the failure's message.
 */
export function buildFromSource({
  packageName,
  root,
  addonFile,
  args,
  unsupported,
  description,
  requirements,
}) {
  const native = join(root, "native");
  const quiet = args.includes("--quiet");
  const unknown = args.filter((arg) => !["build", "--quiet", "--if-supported", "--help", "-h"].includes(arg));
  const log = (message) => {
    if (!quiet) console.log(`${packageName}: ${message}`);
  };

  if (args.includes("--help") || args.includes("-h") || unknown.length > 0) {
    const usage = `usage: npx ${packageName} build [--quiet]\n${description}`;
    if (unknown.length > 0) {
      console.error(`${packageName}: unknown argument ${unknown[0]}\n${usage}`);
      return 2;
    }
    console.log(usage);
    return 0;
  }
  if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1") {
    log("NUVEC_SKIP_NATIVE_BUILD=1: not building the native addon");
    return 0;
  }
  const unsupportedHere = unsupported(process.platform);
  if (unsupportedHere !== undefined) {
    log(unsupportedHere);
    return args.includes("--if-supported") ? 0 : 1;
  }

  let nodeGyp = findNodeGyp(root);
  if (nodeGyp === undefined) {
    // 4. Last: fetch it (the same major version the workspace pins).
    log("node-gyp not found: running it through npx (node-gyp@12)");
    nodeGyp = ["npx", "--yes", "node-gyp@12"];
  }

  // The running Node's prefix: <prefix>/bin/node → <prefix>/include/node/node_api.h.
  const prefix = dirname(dirname(process.execPath));
  const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
  // Incremental when a configured build is there; from scratch otherwise.
  const configured =
    existsSync(join(native, "build", "Makefile")) || existsSync(join(native, "build", "config.gypi"));
  const command = configured ? "build" : "rebuild";
  const nodeGypRun = (subcommand) => {
    const [program, ...lead] = nodeGyp;
    const runArgs = [...lead, subcommand, ...nodedir, "--jobs=max"];
    if (quiet) runArgs.push("--silent");
    log(`building the native addon from source (node-gyp ${subcommand} ${nodedir.join(" ")})`);
    return spawnSync(program, runArgs, { cwd: native, stdio: "inherit" });
  };
  let result = nodeGypRun(command);
  if (result.status !== 0 && command === "build") {
    log("incremental build failed: rebuilding from scratch");
    result = nodeGypRun("rebuild");
  }
  if (result.status !== 0) {
    console.error(`${packageName}: building the native addon failed (see above). ${requirements}`);
    return result.status ?? 1;
  }
  log(`native addon built: ${join(native, "build", "Release", addonFile)}`);
  return 0;
}
