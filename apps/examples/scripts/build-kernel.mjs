#!/usr/bin/env node
// Builds the example kernel addon (kernel/binding.gyp) with node-gyp, as part of the examples' build.
// node-gyp would download Node's headers from the internet; like @nuvec/metal-native's install script, we
// point it at the running Node's own headers (--nodedir from process.execPath), since pnpm does not pass
// npm's nodedir setting to scripts. Skipped when the addon is newer than its sources, on Windows (no
// example there), and with NUVEC_SKIP_NATIVE_BUILD=1.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync, utimesSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const kernel = join(dirname(fileURLToPath(import.meta.url)), "..", "kernel");
const built = join(kernel, "build", "Release", "nuvec_example_kernel.node");

if (process.env.NUVEC_SKIP_NATIVE_BUILD === "1" || process.platform === "win32") process.exit(0);

function newest(path) {
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let time = 0;
  for (const name of readdirSync(path)) if (name !== "build") time = Math.max(time, newest(join(path, name)));
  return time;
}

if (existsSync(built) && statSync(built).mtimeMs >= newest(kernel)) process.exit(0);

// node-gyp is the workspace's development dependency (the root's), found by walking up from here.
const nodeGyp = createRequire(import.meta.url).resolve("node-gyp/bin/node-gyp.js");
const prefix = dirname(dirname(process.execPath));
const nodedir = existsSync(join(prefix, "include", "node", "node_api.h")) ? [`--nodedir=${prefix}`] : [];
const result = spawnSync(process.execPath, [nodeGyp, "rebuild", ...nodedir, "--jobs=max", "--silent"], {
  cwd: kernel,
  stdio: "inherit",
});
if (result.status !== 0) {
  console.error("@nuvec/examples: building the example kernel addon (kernel/) failed, see above");
  process.exit(result.status ?? 1);
}
if (existsSync(built)) utimesSync(built, new Date(), new Date());
