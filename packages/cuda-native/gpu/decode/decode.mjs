#!/usr/bin/env node
// The decode workload from Node.js on nuvec: the loop of model.py (PyTorch eager) with kernels compiled by
// NVRTC (kernels.cu) on a Device over the CUDA backend, per allocator policy (segments, bounded, mlx).
//
// The checkpoint is mapped (mapSafetensors) and each tensor copied to its own device buffer on a second
// stream (`copies`); the compute stream waits for that stream's event. Per step, as PyTorch's eager loop
// does: every activation is a fresh device.malloc freed in stream order once its last kernel is enqueued,
// and each layer's KV cache grows by one token (a new buffer one row longer, the old rows copied on the
// stream, the old buffer freed). The token stays on the device (argmax, then the next step's embedding).
// Per step: wall time (the stream synchronized), allocator time (in malloc and free), reserved memory and
// its peak, and driver allocations (the backend's newBuffer and mapMemory calls: cuMemAlloc or cuMemCreate).
//
// Usage: node decode.mjs CHECKPOINT [--steps N] [--policies segments,bounded,mlx] [--json FILE]
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadCudaBackend } from "@nuvec/cuda-native";
import { Device, mapSafetensors } from "@nuvec/device";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const index = args.indexOf(name);
  return index >= 0 && index + 1 < args.length ? args[index + 1] : fallback;
};
const checkpointPath = args[0];
const steps = Number(option("--steps", "128"));
const policies = option("--policies", "bounded,mlx,segments").split(",");
const jsonPath = option("--json", undefined);
const here = dirname(fileURLToPath(import.meta.url));
const source = readFileSync(option("--kernels", join(here, "kernels.cu")), "utf8");

const backend = loadCudaBackend();

/** Counts and times the backend's allocating calls (what reaches the driver) until restore(). */
function countDriverCalls() {
  const counts = { allocations: 0, frees: 0 };
  const originals = [];
  const wrap = (name, key) => {
    const original = backend[name];
    if (typeof original !== "function") return;
    originals.push([name, Object.getOwnPropertyDescriptor(backend, name)]);
    backend[name] = (...callArgs) => {
      counts[key] += 1;
      return original.apply(backend, callArgs);
    };
  };
  wrap("newBuffer", "allocations");
  wrap("mapMemory", "allocations");
  wrap("unmapMemory", "frees");
  return {
    counts,
    restore() {
      for (const [name, descriptor] of originals) {
        if (descriptor === undefined) delete backend[name];
        else Object.defineProperty(backend, name, descriptor);
      }
    },
  };
}

// What a failed run leaves to close before the next policy runs.
let open;

async function run(policy) {
  const driver = countDriverCalls();
  const device = Device.open({ backend, policy });
  open = { driver, device };
  const checkpoint = mapSafetensors(device, checkpointPath);
  const config = JSON.parse(checkpoint.header.metadata?.config ?? "null");
  const { dim: d, layers, heads, ffn, vocab, eps } = config;
  const copies = device.newStream();
  const stream = device.newStream();
  const module = device.loadModule({ cuda: source });
  const K = (name, kinds) => module.kernel(name, kinds);
  const kernels = {
    embed: K("embed", ["buffer", "buffer", "buffer", "u32"]),
    rmsnorm: K("rmsnorm", ["buffer", "buffer", "buffer", "u32", "f32"]),
    gemv: K("gemv", ["buffer", "buffer", "buffer", "u32", "u32", "u32"]),
    scores: K("scores", ["buffer", "buffer", "buffer", "u32", "u32", "f32"]),
    softmax: K("softmax", ["buffer", "u32"]),
    attend: K("attend", ["buffer", "buffer", "buffer", "u32", "u32"]),
    swiglu: K("swiglu", ["buffer", "buffer", "u32"]),
    argmax: K("argmax", ["buffer", "buffer", "u32"]),
  };

  // Weights: one buffer per tensor, copied from the mapping on the copy stream.
  const loadStart = performance.now();
  const w = {};
  for (const tensor of checkpoint.header.tensors) {
    const buffer = device.malloc(tensor.byteLength);
    copies.copy(buffer, checkpoint.file, { sourceOffset: tensor.offset, length: tensor.byteLength });
    w[tensor.name] = buffer;
  }
  stream.wait(copies.record());
  await copies.done();
  const loadMs = performance.now() - loadStart;

  let allocatorNs = 0n;
  const malloc = (bytes) => {
    const start = process.hrtime.bigint();
    const buffer = device.malloc(bytes);
    allocatorNs += process.hrtime.bigint() - start;
    return buffer;
  };
  const free = (buffer) => {
    const start = process.hrtime.bigint();
    buffer.free();
    allocatorNs += process.hrtime.bigint() - start;
  };
  const launch = (kernel, grid, block, kernelArgs) =>
    stream.launch(kernel, { grid: [grid], block: [block] }, kernelArgs);
  const u32 = (value) => ({ u32: value });
  const f32 = (value) => ({ f32: value });
  const gemv = (y, W, x, rows, cols, accumulate) =>
    launch(kernels.gemv, Math.ceil(rows / 8), 256, [y, W, x, u32(rows), u32(cols), u32(accumulate ? 1 : 0)]);

  const token = malloc(4);
  stream.write(token, new Uint32Array([1]));
  const caches = Array.from({ length: layers }, () => ({ K: undefined, V: undefined }));
  device.resetPeak();
  const rows = [];
  const tokens = [];
  const scale = 1 / Math.sqrt(64);
  for (let step = 0; step < steps; step++) {
    const t = step + 1;
    const allocatorBefore = allocatorNs;
    const driverBefore = { ...driver.counts };
    const start = process.hrtime.bigint();
    const x = malloc(4 * d);
    launch(kernels.embed, Math.ceil(d / 256), 256, [x, w.emb, token, u32(d)]);
    for (let layer = 0; layer < layers; layer++) {
      const p = `layers.${layer}.`;
      const h = malloc(4 * d);
      launch(kernels.rmsnorm, 1, 1024, [h, x, w[`${p}ln1`], u32(d), f32(eps)]);
      const qkv = malloc(12 * d);
      gemv(qkv, w[`${p}wqkv`], h, 3 * d, d, false);
      free(h);
      // The cache grows by a row: a new buffer, the old rows and the new k (v) copied in, the old one freed.
      const cache = caches[layer];
      for (const [name, at] of [
        ["K", 1],
        ["V", 2],
      ]) {
        const grown = malloc(4 * d * t);
        if (cache[name] !== undefined) {
          stream.copy(grown, cache[name], { length: 4 * d * (t - 1) });
          free(cache[name]);
        }
        stream.copy(grown, qkv, { targetOffset: 4 * d * (t - 1), sourceOffset: 4 * d * at, length: 4 * d });
        cache[name] = grown;
      }
      const s = malloc(4 * heads * t);
      launch(kernels.scores, Math.ceil((t * heads) / 8), 256, [
        s,
        qkv,
        cache.K,
        u32(t),
        u32(heads),
        f32(scale),
      ]);
      launch(kernels.softmax, heads, 256, [s, u32(t)]);
      const o = malloc(4 * d);
      launch(kernels.attend, Math.ceil(d / 256), 256, [o, s, cache.V, u32(t), u32(heads)]);
      free(s);
      free(qkv);
      gemv(x, w[`${p}wo`], o, d, d, true);
      free(o);
      const h2 = malloc(4 * d);
      launch(kernels.rmsnorm, 1, 1024, [h2, x, w[`${p}ln2`], u32(d), f32(eps)]);
      const g = malloc(4 * ffn);
      const u = malloc(4 * ffn);
      gemv(g, w[`${p}w1`], h2, ffn, d, false);
      gemv(u, w[`${p}w3`], h2, ffn, d, false);
      free(h2);
      launch(kernels.swiglu, Math.ceil(ffn / 256), 256, [g, u, u32(ffn)]);
      free(u);
      gemv(x, w[`${p}w2`], g, d, ffn, true);
      free(g);
    }
    const hf = malloc(4 * d);
    launch(kernels.rmsnorm, 1, 1024, [hf, x, w.lnf, u32(d), f32(eps)]);
    free(x);
    const logits = malloc(4 * vocab);
    gemv(logits, w.head, hf, vocab, d, false);
    free(hf);
    launch(kernels.argmax, 1, 1024, [token, logits, u32(vocab)]);
    free(logits);
    stream.synchronize();
    const elapsed = process.hrtime.bigint() - start;
    const stats = device.memoryStats();
    rows.push({
      step,
      ms: Number(elapsed) / 1e6,
      allocatorUs: Number(allocatorNs - allocatorBefore) / 1e3,
      reserved: stats.reserved,
      peakReserved: stats.peakReserved,
      driverAllocs: driver.counts.allocations - driverBefore.allocations,
      driverFrees: driver.counts.frees - driverBefore.frees,
    });
    if (step < 32 || step === steps - 1)
      tokens.push(new Uint32Array((await stream.read(token)).slice().buffer)[0]);
  }
  const stats = device.memoryStats();
  const result = {
    policy,
    loadMs,
    steps: rows,
    tokens,
    peakReserved: stats.peakReserved,
    driverAllocs: driver.counts.allocations,
    driverFrees: driver.counts.frees,
    counters: device.counters(),
  };
  for (const cache of caches) {
    cache.K?.free();
    cache.V?.free();
  }
  token.free();
  for (const buffer of Object.values(w)) buffer.free();
  await stream.done();
  checkpoint[Symbol.dispose]();
  device.close();
  driver.restore();
  const times = rows
    .slice(1)
    .map((row) => row.ms)
    .sort((a, b) => a - b);
  const allocator = rows
    .slice(1)
    .map((row) => row.allocatorUs)
    .sort((a, b) => a - b);
  console.log(
    `nuvec ${policy}: ${steps} steps, median ${times[times.length >> 1].toFixed(3)} ms/step, allocator ` +
      `${allocator[allocator.length >> 1].toFixed(1)} us/step, peak reserved ${(result.peakReserved / 2 ** 20).toFixed(1)} MiB, ` +
      `driver allocations ${result.driverAllocs} (in the loop ${rows.reduce((sum, row) => sum + row.driverAllocs, 0)}), ` +
      `load ${loadMs.toFixed(0)} ms, first tokens ${tokens.slice(0, 8).join(",")}`,
  );
  return result;
}

const results = [];
for (const policy of policies) {
  try {
    results.push(await run(policy));
  } catch (error) {
    // One policy's failure is reported and the others still run.
    console.log(`nuvec ${policy}: failed: ${error?.code ?? ""} ${error?.message ?? error}`);
    results.push({ policy, error: String(error?.message ?? error) });
    open?.driver.restore();
    if (open?.device.closed === false) open.device.close();
  }
}
if (jsonPath !== undefined) writeFileSync(jsonPath, JSON.stringify(results));
