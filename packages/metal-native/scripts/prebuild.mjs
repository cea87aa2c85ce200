#!/usr/bin/env node
// Builds the N-API prebuild for this platform into prebuilds/<platform>-<arch>/ before the package is packed
// ("prepack"), so that users on this platform install without a compiler (node-gyp-build loads it first).
// node-gyp is pointed at the running Node's own headers (from process.execPath) instead of downloading them,
// as in scripts/install.mjs. Only on Linux and macOS; elsewhere the package builds from source at install.
// It builds in a copy of the sources: node-gyp rebuild starts by deleting build/, and tests running meanwhile
// (turbo runs the package checks beside them) load the addon from there.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1" || !["linux", "darwin"].includes(process.platform))
  process.exit(0);
const require = createRequire(join(root, "package.json"));
let prebuildify;
try {
  prebuildify = require.resolve("prebuildify/bin.js");
} catch {
  console.log("@nuvec/metal-native: prebuildify is not installed; packing without a prebuild");
  process.exit(0);
}
const prefix = dirname(dirname(process.execPath));
const environment = { ...process.env };
if (existsSync(join(prefix, "include", "node", "node_api.h"))) environment.npm_config_nodedir = prefix;
const scratch = mkdtempSync(join(tmpdir(), "nuvec-prebuild-"));
try {
  for (const entry of ["binding.gyp", "native", "package.json"])
    cpSync(join(root, entry), join(scratch, entry), { recursive: true });
  symlinkSync(join(root, "node_modules"), join(scratch, "node_modules"), "dir");
  const result = spawnSync(process.execPath, [prebuildify, "--napi", "--strip"], {
    cwd: scratch,
    env: environment,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
  rmSync(join(root, "prebuilds"), { recursive: true, force: true });
  cpSync(join(scratch, "prebuilds"), join(root, "prebuilds"), { recursive: true });
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
