#!/usr/bin/env node
// Makes sure the native addon is there: at install (package.json "install"), and before each build (the
// "build" script), where it costs a few stat calls when nothing changed.
//
//  1. If node-gyp-build finds a loadable addon (build/ or prebuilds/) that is newer than every source, done.
//  2. Otherwise build it from source with node-gyp. node-gyp would download Node's headers from the
//     internet; we point it at the running Node's own headers instead (--nodedir from process.execPath), as
//     pnpm does not pass npm's nodedir setting to scripts. With no headers there, node-gyp falls back to its
//     cache or the download.
//
// NUVEC_SKIP_NATIVE_BUILD=1 skips it all. Only Linux has a CUDA backend.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync, utimesSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(join(root, "package.json"));
const quiet = process.argv.includes("--quiet");
const log = (message) => {
  if (!quiet) console.log(`@nuvec/cuda-native: ${message}`);
};

if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1") {
  log("NUVEC_SKIP_NATIVE_BUILD=1: not building the native addon");
  process.exit(0);
}
// CUDA's driver API is loaded at run time, so the addon builds on any Linux (no CUDA toolkit needed) and
// reports at load time where there is no driver. Elsewhere there is nothing to build: loading says so.
if (process.platform !== "linux") {
  log(`no CUDA backend for ${process.platform}; loadCudaBackend() will throw NativeUnavailableError`);
  process.exit(0);
}

function newestSource(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestSource(join(path, name)));
  return newest;
}

function loadable() {
  let found;
  try {
    found = require("node-gyp-build").path(root);
  } catch {
    return false;
  }
  // An addon older than its sources (a developer edited native/ after a build or a pack) is rebuilt. In an
  // installed tarball every file has the same time, so a shipped prebuild is taken as it is.
  const sources = Math.max(newestSource(join(root, "native")), newestSource(join(root, "binding.gyp")));
  if (statSync(found).mtimeMs < sources) return false;
  try {
    require(found);
    return true;
  } catch (error) {
    log(`the existing addon does not load (${String(error.message).split("\n")[0]}): rebuilding`);
    return false;
  }
}

if (loadable()) {
  log("native addon is built");
  process.exit(0);
}

// The running Node's prefix: <prefix>/bin/node → <prefix>/include/node/node_api.h.
const prefix = dirname(dirname(process.execPath));
const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
const nodeGyp = require.resolve("node-gyp/bin/node-gyp.js");
// Incremental when a configured build is there; from scratch otherwise.
const command =
  existsSync(join(root, "build", "Makefile")) || existsSync(join(root, "build", "config.gypi"))
    ? "build"
    : "rebuild";
log(`building the native addon from source (node-gyp ${command} ${nodedir.join(" ")})`);
const args = [nodeGyp, command, ...nodedir, "--jobs=max"];
if (quiet) args.push("--silent");
let result = spawnSync(process.execPath, args, { cwd: root, stdio: "inherit" });
if (result.status !== 0 && command === "build") {
  log("incremental build failed: rebuilding from scratch");
  result = spawnSync(process.execPath, [nodeGyp, "rebuild", ...nodedir, "--jobs=max"], {
    cwd: root,
    stdio: "inherit",
  });
}
if (result.status !== 0) {
  console.error(
    "@nuvec/cuda-native: building the native addon failed (see above). It needs Python 3 and a C++17 compiler " +
      "(build-essential on Debian/Ubuntu), not the CUDA toolkit. Set NUVEC_SKIP_NATIVE_BUILD=1 to install without it.",
  );
  process.exit(result.status ?? 1);
}
// make may have had nothing to do (say, only the Metal sources changed, which Linux does not compile): mark
// the addon as up to date so the next check is quick.
const built = join(root, "build", "Release", "nuvec_cuda_native.node");
if (existsSync(built)) utimesSync(built, new Date(), new Date());
log("native addon built");
