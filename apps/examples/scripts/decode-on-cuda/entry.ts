// The decode loop (src/lib/decode-run.ts) on the CUDA backend, with the kernels compiled by NVRTC, against
// the TypeScript reference: one JSON line. Bundled by bundle.mjs for a GPU machine without node_modules.
// Usage: node decode-on-cuda.mjs [STEPS] [POLICY]
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadCudaBackend } from "@nuvec/cuda-native";
import { type AllocatorPolicy, Device, mapSafetensors, writeSafetensors } from "@nuvec/device";
import { CUDA_DECODE_KERNELS } from "../../src/lib/decode-kernels.js";
import { DEFAULT_SHAPE, modelWeights, referenceDecode } from "../../src/lib/decode-model.js";
import { decodeOnDevice } from "../../src/lib/decode-run.js";

const steps = Number(process.argv[2] ?? "16");
const policy = (process.argv[3] ?? "bounded") as AllocatorPolicy;
const shape = DEFAULT_SHAPE;
const weights = modelWeights(shape);
const path = join(tmpdir(), `nuvec-decode-${process.pid}.safetensors`);
writeSafetensors(
  path,
  weights.map(({ name, rows, columns, values }) => ({
    name,
    dtype: "F32",
    shape: [rows, columns],
    data: values,
  })),
);
const reference = referenceDecode(shape, weights, 1, steps);
using device = Device.open({ backend: loadCudaBackend(), policy });
const module = device.loadModule({ cuda: CUDA_DECODE_KERNELS });
const started = performance.now();
let outcome: Awaited<ReturnType<typeof decodeOnDevice>>;
{
  using checkpoint = mapSafetensors(device, path);
  outcome = await decodeOnDevice(device, module, checkpoint, { shape, steps, first: 1, initialCapacity: 4 });
}
const seconds = (performance.now() - started) / 1000;
let largest = 0;
let differing = 0;
for (const [step, values] of outcome.logits.entries()) {
  for (const [index, value] of values.entries()) {
    const difference = Math.abs(value - ((reference.logits[step] as Float32Array)[index] as number));
    if (difference !== 0) differing += 1;
    if (!(difference <= largest)) largest = difference;
  }
}
module.release();
console.log(
  JSON.stringify({
    device: device.native.backend.name,
    policy,
    steps,
    seconds,
    tokensMatch: outcome.tokens.every((token, index) => token === reference.tokens[index]),
    largestLogitDifference: largest,
    differingLogits: differing,
    logits: steps * shape.vocabulary,
    launches: outcome.launches,
    cacheGrowths: outcome.cacheGrowths,
    streamPending: device.counters().streamPending,
    active: device.memoryStats().active,
  }),
);
