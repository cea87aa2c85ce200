// The decode loop on a Device: weights copied from the mapped checkpoint on a second stream, then per token
// a few kernels on the compute stream, activations freed in stream order as soon as their last launch is
// enqueued, a KV cache per layer that grows by doubling (the old rows copied on the copy stream, the old
// cache freed while both streams still name it: held in streamPending until both ran that far).
import type {
  Device,
  DeviceBuffer,
  Kernel,
  KernelArgument,
  KernelModule,
  MappedSafetensors,
  Stream,
} from "@nuvec/device";
import { DECODE_KERNELS, type DecodeKernelName, elementsShape } from "./decode-kernels.js";
import { argmax, attentionScale, layerWeightNames, type ModelShape } from "./decode-model.js";

/** What the loop is asked to do. */
export interface DecodeRequest {
  readonly shape: ModelShape;
  /** Tokens to decode. */
  readonly steps: number;
  /** The token decoding starts from. */
  readonly first: number;
  /** Rows each layer's KV cache holds at first (it doubles when full). */
  readonly initialCapacity: number;
}

/** What the loop did and saw. */
export interface DecodeOutcome {
  readonly tokens: number[];
  readonly logits: Float32Array[];
  /** Kernels launched, over all steps. */
  readonly launches: number;
  /** Times a layer's KV cache grew. */
  readonly cacheGrowths: number;
  /** The KV caches' capacity at the end, in rows. */
  readonly finalCapacity: number;
  /** The most buffers (and their bytes) held in `streamPending` right after a cache grew. */
  readonly peakStreamPending: { buffers: number; bytes: number };
  /** What `streamPending` held once the weights and caches were freed, before the device synchronized. */
  readonly pendingAtEnd: { buffers: number; bytes: number };
  /** Weight tensors copied out of the mapped checkpoint on the copy stream. */
  readonly weightTensors: number;
}

const FLOAT = 4;

/** One layer's KV cache: keys and values, `capacity` rows of `width` floats each. */
interface LayerCache {
  keys: DeviceBuffer;
  values: DeviceBuffer;
  capacity: number;
}

/**
 * Runs the decode loop on `device` with `module`'s kernels and the weights of `checkpoint`; every buffer it
 * makes is freed before it returns, and both streams have run everything.
 */
export async function decodeOnDevice(
  device: Device,
  module: KernelModule,
  checkpoint: MappedSafetensors,
  request: DecodeRequest,
): Promise<DecodeOutcome> {
  const { shape, steps, first, initialCapacity } = request;
  const { vocabulary, width, hidden, layers } = shape;
  const kernel = {} as Record<DecodeKernelName, Kernel>;
  for (const name of Object.keys(DECODE_KERNELS) as DecodeKernelName[]) {
    kernel[name] = module.kernel(name, DECODE_KERNELS[name]);
  }
  using compute = device.newStream();
  using copies = device.newStream();
  let launches = 0;
  const peak = { buffers: 0, bytes: 0 };
  const notePending = () => {
    const { buffers, bytes } = device.counters().streamPending;
    if (bytes > peak.bytes) Object.assign(peak, { buffers, bytes });
  };

  // The weights: copied out of the mapped file on the copy stream; the compute stream waits for them.
  const weights = new Map<string, DeviceBuffer>();
  for (const tensor of checkpoint.header.tensors) {
    const buffer = device.malloc(tensor.byteLength);
    copies.copy(buffer, checkpoint.file, { sourceOffset: tensor.offset, length: tensor.byteLength });
    weights.set(tensor.name, buffer);
  }
  const loaded = copies.record();
  compute.wait(loaded);
  loaded.release();
  const weight = (name: string) => weights.get(name) as DeviceBuffer;

  const launch = (name: DecodeKernelName, threads: number, args: Parameters<Stream["launch"]>[2]) => {
    compute.launch(kernel[name], elementsShape(threads), args);
    launches += 1;
  };
  const matvec = (out: KernelArgument, w: string, x: DeviceBuffer, rows: number, columns: number) =>
    launch("matvec", rows, [out, weight(w), x, { u32: rows }, { u32: columns }]);
  const vector = (length: number) => device.malloc(length * FLOAT);

  const caches: LayerCache[] = Array.from({ length: layers }, () => ({
    keys: vector(initialCapacity * width),
    values: vector(initialCapacity * width),
    capacity: initialCapacity,
  }));
  let cacheGrowths = 0;
  /** Doubles a full cache: the rows so far copied on the copy stream, the old cache freed in stream order. */
  const grow = (cache: LayerCache, rows: number) => {
    const capacity = cache.capacity * 2;
    const keys = vector(capacity * width);
    const values = vector(capacity * width);
    const written = compute.record();
    copies.wait(written);
    copies.copy(keys, cache.keys, { length: rows * width * FLOAT });
    copies.copy(values, cache.values, { length: rows * width * FLOAT });
    const copied = copies.record();
    compute.wait(copied);
    written.release();
    copied.release();
    cache.keys.free();
    cache.values.free();
    notePending();
    Object.assign(cache, { keys, values, capacity });
    cacheGrowths += 1;
  };

  const scale = attentionScale(width);
  const tokens: number[] = [];
  const logits: Float32Array[] = [];
  let token = first;
  for (let step = 0; step < steps; step += 1) {
    let x = vector(width);
    compute.copy(x, weight("embedding"), { sourceOffset: token * width * FLOAT, length: width * FLOAT });
    for (let layer = 0; layer < layers; layer += 1) {
      const names = layerWeightNames(layer);
      const cache = caches[layer] as LayerCache;
      if (step === cache.capacity) grow(cache, step);
      const row = step * width * FLOAT;
      const q = vector(width);
      matvec(q, names.q, x, width, width);
      matvec({ buffer: cache.keys, offset: row }, names.k, x, width, width);
      matvec({ buffer: cache.values, offset: row }, names.v, x, width, width);
      const attended = vector(width);
      launch("attention", width, [
        attended,
        q,
        cache.keys,
        cache.values,
        { f32: scale },
        { u32: step + 1 },
        { u32: width },
      ]);
      q.free(); // stream-ordered: later work on the compute stream may reuse it at once
      const projected = vector(width);
      matvec(projected, names.o, attended, width, width);
      attended.free();
      const mixed = vector(width);
      launch("add", width, [mixed, x, projected, { u32: width }]);
      projected.free();
      x.free();
      const up = vector(hidden);
      matvec(up, names.up, mixed, hidden, width);
      launch("relu", hidden, [up, { u32: hidden }]);
      const down = vector(width);
      matvec(down, names.down, up, width, hidden);
      up.free();
      x = vector(width);
      launch("add", width, [x, mixed, down, { u32: width }]);
      mixed.free();
      down.free();
    }
    const out = vector(vocabulary);
    matvec(out, "output", x, vocabulary, width);
    x.free();
    const read = compute.read(out);
    out.free();
    const values = new Float32Array((await read).slice().buffer);
    logits.push(values);
    token = argmax(values);
    tokens.push(token);
  }
  await compute.done();
  await copies.done();
  for (const cache of caches) {
    cache.keys.free();
    cache.values.free();
  }
  for (const buffer of weights.values()) buffer.free();
  // Weights and caches were named by both streams: held until each stream's event completes.
  const pendingAtEnd = { ...device.counters().streamPending };
  device.synchronize();
  return {
    tokens,
    logits,
    launches,
    cacheGrowths,
    finalCapacity: caches[0]?.capacity ?? initialCapacity,
    peakStreamPending: peak,
    pendingAtEnd,
    weightTensors: weights.size,
  };
}
