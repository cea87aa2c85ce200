// Writes the generated decode workload (deterministic): an LLM's token loop with a growing KV cache, as a
// runtime new to nuvec writes it. The repository's copy is fixtures/traces/decode-growing.ndjson.gz:
//   node bench/generate-decode-trace.mjs OUT.ndjson.gz [STEPS=5000] [SEED=7]
//
// The pretend model: 6 layers, hidden 512, 8 heads, fp16, vocabulary 32000, weights live throughout (about
// 56 MiB). Each step (one token) runs every layer: its activations and temporaries (allocated and freed
// inside the layer), its K and V caches grown by concatenation (a new buffer one token longer, then the old
// one freed: PyTorch's `torch.cat`), and attention scores as long as the sequence; then the logits and the
// sampling buffers. A request starts from a prompt of 32–256 tokens with a batch of 1–4 sequences and
// generates until its sequence fills the 512-token context; then the caches are freed and the next request
// starts. About 105 allocations per step: 5,000 steps are a 3 MB gzipped file. Events are `["a", id, bytes]` and `["f", id]`, ids dense in allocation order.
import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { createGzip } from "node:zlib";
import { random } from "./decode-trace.mjs";

/** The trace's header for `steps` and `seed`. */
export const decodeHeader = (steps, seed) => ({
  name: "decode-growing",
  workload: `generated decode loop with a growing KV cache: ${steps} steps, seed ${seed}`,
  source: "packages/allocator/bench/generate-decode-trace.mjs",
  steps,
  seed,
});

/**
 * The events of the decode workload, step by step: `onStep(events)` gets each step's events (an array it may
 * keep), the weights and the first request's prompt before step 0 (`step` -1).
 * @param {{ steps?: number, seed?: number, onStep: (events: unknown[], step: number) => void }} options
 */
export function decodeSteps({ steps = 5000, seed = 7, onStep }) {
  const next = random(seed);
  const integer = (low, high) => low + Math.floor(next() * (high - low + 1));
  const layers = 6;
  const hidden = 512;
  const heads = 8;
  const vocabulary = 32000;
  const context = 512; // a request generates until its sequence fills the context
  const half = 2; // bytes per fp16 element
  let events = [];
  let nextId = 0;
  const allocate = (bytes) => {
    const id = nextId++;
    events.push(["a", id, bytes]);
    return id;
  };
  const free = (id) => events.push(["f", id]);

  allocate(vocabulary * hidden * half); // the embedding, tied to the output
  for (let layer = 0; layer < layers; layer++) {
    for (const elements of [hidden * 3 * hidden, hidden * hidden, hidden * 4 * hidden, 4 * hidden * hidden]) {
      allocate(elements * half);
    }
    allocate(4 * hidden * half); // the two norms' weights and biases
  }

  let batch = 0;
  let sequence = 0;
  let remaining = 0;
  const keys = new Array(layers).fill(-1);
  const values = new Array(layers).fill(-1);
  const startRequest = () => {
    for (let layer = 0; layer < layers; layer++) {
      if (keys[layer] >= 0) free(keys[layer]);
      if (values[layer] >= 0) free(values[layer]);
    }
    batch = integer(1, 4);
    sequence = integer(32, 256);
    remaining = context - sequence;
    // The prefill: the prompt's caches, in one piece per layer.
    for (let layer = 0; layer < layers; layer++) {
      keys[layer] = allocate(batch * sequence * hidden * half);
      values[layer] = allocate(batch * sequence * hidden * half);
    }
  };
  startRequest();
  onStep(events, -1);

  const token = () => batch * hidden * half;
  for (let step = 0; step < steps; step++) {
    events = [];
    if (remaining === 0) startRequest();
    const ids = allocate(batch * 8); // the token ids
    let hiddenState = allocate(token()); // the embedding's lookup
    free(ids);
    for (let layer = 0; layer < layers; layer++) {
      const normed = allocate(token());
      const qkv = allocate(3 * token());
      const cacheBytes = batch * (sequence + 1) * hidden * half;
      const key = allocate(cacheBytes);
      free(keys[layer]);
      keys[layer] = key;
      const value = allocate(cacheBytes);
      free(values[layer]);
      values[layer] = value;
      const scores = allocate(batch * heads * (sequence + 1) * 4); // fp32 scores
      const maxima = allocate(batch * heads * 4);
      const probabilities = allocate(batch * heads * (sequence + 1) * half);
      free(scores);
      free(maxima);
      const attention = allocate(token());
      free(probabilities);
      free(qkv);
      const projected = allocate(token());
      free(attention);
      free(normed);
      const residual = allocate(token());
      free(projected);
      free(hiddenState);
      const normed2 = allocate(token());
      const up = allocate(4 * token());
      free(normed2);
      const activated = allocate(4 * token());
      free(up);
      const down = allocate(token());
      free(activated);
      hiddenState = allocate(token());
      free(down);
      free(residual);
      const statistics = allocate(batch * 2 * 4); // the norm's mean and variance
      free(statistics);
    }
    const normed = allocate(token());
    free(hiddenState);
    const logits = allocate(batch * vocabulary * half);
    free(normed);
    const probabilities = allocate(batch * vocabulary * 4);
    free(logits);
    const sorted = allocate(batch * vocabulary * 4); // top-p: the sorted probabilities and their indices
    const indices = allocate(batch * vocabulary * 8);
    free(probabilities);
    const cumulative = allocate(batch * vocabulary * 4);
    free(sorted);
    const sampled = allocate(batch * 8);
    free(cumulative);
    free(indices);
    free(sampled);
    sequence++;
    remaining--;
    onStep(events, step);
  }
}

/** Every event of the workload in one array, and where each step starts (`stepStarts[s]`: its first event). */
export function decodeTrace({ steps = 5000, seed = 7 } = {}) {
  const all = [];
  const stepStarts = [];
  decodeSteps({
    steps,
    seed,
    onStep: (events, step) => {
      if (step >= 0) stepStarts.push(all.length);
      for (const event of events) all.push(event);
    },
  });
  return { header: decodeHeader(steps, seed), events: all, stepStarts };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [out, stepsText = "5000", seedText = "7"] = process.argv.slice(2);
  const steps = Number(stepsText);
  const seed = Number(seedText);
  if (out === undefined || !Number.isSafeInteger(steps) || steps < 1 || !Number.isSafeInteger(seed)) {
    console.error("usage: node bench/generate-decode-trace.mjs OUT.ndjson[.gz] [STEPS] [SEED]");
    process.exit(2);
  }
  const file = createWriteStream(out);
  let sink = file;
  if (out.endsWith(".gz")) {
    sink = createGzip({ level: 9 });
    sink.pipe(file);
  }
  const write = async (text) => {
    if (!sink.write(text)) await once(sink, "drain");
  };
  let count = 0;
  const chunks = [];
  decodeSteps({
    steps,
    seed,
    onStep: (events) => {
      count += events.length;
      chunks.push(events.map((event) => `${JSON.stringify(event)}\n`).join(""));
    },
  });
  await write(`${JSON.stringify({ ...decodeHeader(steps, seed), events: count })}\n`);
  for (const chunk of chunks) await write(chunk);
  sink.end();
  await once(file, "close");
  console.log(`${out}: ${steps} steps, ${count} events`);
}
