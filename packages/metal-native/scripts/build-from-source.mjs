#!/usr/bin/env node
// Builds the native addon from source with node-gyp, into native/build/Release/ of this copy of the package,
// where loadNativeBackend() looks first. Two uses:
//   - the workspace's `build` script (development: incremental, make decides what to recompile);
//   - `npx @nuvec/metal-native build` on a platform with no prebuilt package (or to replace it).
// node-gyp is not a dependency: it is found when this runs (see findNodeGyp). It would download Node's
// headers; we point it at the running Node's own headers instead (--nodedir from process.execPath) when
// they are there, as pnpm does not pass npm's nodedir setting to scripts.
//
// Usage: build-from-source.mjs [build] [--quiet] [--if-supported]
//   --if-supported  on Windows (no native backend) say so and exit 0 instead of failing.
// NUVEC_SKIP_NATIVE_BUILD=1 skips the build (the workspace then tests only what needs no addon).
import { spawnSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const native = join(root, "native");
const args = process.argv.slice(2);
const quiet = args.includes("--quiet");
const unknown = args.filter((arg) => !["build", "--quiet", "--if-supported", "--help", "-h"].includes(arg));
const log = (message) => {
  if (!quiet) console.log(`@nuvec/metal-native: ${message}`);
};

if (args.includes("--help") || args.includes("-h") || unknown.length > 0) {
  const usage =
    "usage: npx @nuvec/metal-native build [--quiet]\n" +
    "  Builds the native addon from source into native/build/Release/ of the installed package, where it is\n" +
    "  loaded before any prebuilt package. Needs Python 3, make and a C++17 compiler; node-gyp is found on\n" +
    "  PATH, beside npm, or fetched with npx.";
  if (unknown.length > 0) {
    console.error(`@nuvec/metal-native: unknown argument ${unknown[0]}\n${usage}`);
    process.exit(2);
  }
  console.log(usage);
  process.exit(0);
}
if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1") {
  log("NUVEC_SKIP_NATIVE_BUILD=1: not building the native addon");
  process.exit(0);
}
if (process.platform === "win32") {
  log("there is no native backend for Windows; use @nuvec/metal-native/mock");
  process.exit(args.includes("--if-supported") ? 0 : 1);
}

/** node-gyp's entry point as [command, ...leading arguments], found at this time, or undefined. */
function findNodeGyp() {
  // 1. Resolvable from here: the workspace's root devDependency, or one the user installed.
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

let nodeGyp = findNodeGyp();
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
function nodeGypRun(subcommand) {
  const [program, ...lead] = nodeGyp;
  const runArgs = [...lead, subcommand, ...nodedir, "--jobs=max"];
  if (quiet) runArgs.push("--silent");
  log(`building the native addon from source (node-gyp ${subcommand} ${nodedir.join(" ")})`);
  return spawnSync(program, runArgs, { cwd: native, stdio: "inherit" });
}
let result = nodeGypRun(command);
if (result.status !== 0 && command === "build") {
  log("incremental build failed: rebuilding from scratch");
  result = nodeGypRun("rebuild");
}
if (result.status !== 0) {
  console.error(
    "@nuvec/metal-native: building the native addon failed (see above). It needs Python 3, make and a C++17 " +
      "compiler (build-essential on Debian/Ubuntu, build-base and python3 on Alpine, the Xcode command line " +
      "tools on macOS). Without it, use @nuvec/metal-native/mock.",
  );
  process.exit(result.status ?? 1);
}
log(`native addon built: ${join(native, "build", "Release", "nuvec_metal_native.node")}`);
