// A long decode-style trace, generated (deterministic): what an LLM server's token loop asks an allocator
// for. The shared traces are too short to show the policy's worst case (many distinct lengths in the cache);
// this one has hundreds of thousands of events and a few hundred distinct size classes.
//
// The pretend model: 24 layers, hidden 1024, 16 heads, fp16, vocabulary 50257. Requests of 1–8 sequences
// are batched; every token, each layer allocates its activations, grows its K and V caches by concatenation
// (a new buffer one token longer, the old one freed: PyTorch's `torch.cat`), and frees its temporaries; the
// batch changes every few tokens (requests join and leave) and the sequence restarts from a new prompt when
// a request ends. Events are `["a", id, bytes]` and `["f", id]`, ids dense in allocation order.

/** mulberry32: a small deterministic PRNG, so every run and every machine replays the same trace. */
export function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The events of the decode trace (about 530 per token; 1000 tokens by default give about 530k events).
 * @param {{ seed?: number, tokens?: number }} [options]
 */
export function decodeTrace({ seed = 15, tokens = 1000 } = {}) {
  const next = random(seed);
  const integer = (low, high) => low + Math.floor(next() * (high - low + 1));
  const layers = 24;
  const hidden = 1024;
  const heads = 16;
  const vocabulary = 50257;
  const half = 2; // bytes per fp16 element
  const events = [];
  let nextId = 0;
  const allocate = (bytes) => {
    const id = nextId++;
    events.push(["a", id, bytes]);
    return id;
  };
  const free = (id) => events.push(["f", id]);

  // Weights: live for the whole trace.
  allocate(vocabulary * hidden * half);
  for (let layer = 0; layer < layers; layer++) {
    for (const elements of [hidden * 3 * hidden, hidden * hidden, hidden * 4 * hidden, 4 * hidden * hidden]) {
      allocate(elements * half);
    }
  }

  let batch = integer(1, 8);
  let sequence = integer(16, 256);
  let untilBatchChange = integer(4, 32);
  let untilRequestEnds = integer(64, 512);
  const keys = new Array(layers).fill(-1);
  const values = new Array(layers).fill(-1);
  let hiddenState = allocate(batch * hidden * half);
  for (let token = 0; token < tokens; token++) {
    for (let layer = 0; layer < layers; layer++) {
      const normed = allocate(batch * hidden * half);
      const qkv = allocate(batch * 3 * hidden * half);
      // The K and V caches grow by one token: a new buffer, the old one freed.
      const cacheBytes = batch * sequence * hidden * half;
      const key = allocate(cacheBytes);
      if (keys[layer] >= 0) free(keys[layer]);
      keys[layer] = key;
      const value = allocate(cacheBytes);
      if (values[layer] >= 0) free(values[layer]);
      values[layer] = value;
      const scores = allocate(batch * heads * sequence * half);
      const probabilities = allocate(batch * heads * sequence * half);
      free(scores);
      const attention = allocate(batch * hidden * half);
      free(probabilities);
      free(qkv);
      const projected = allocate(batch * hidden * half);
      free(attention);
      free(normed);
      const normed2 = allocate(batch * hidden * half);
      const up = allocate(batch * 4 * hidden * half);
      free(normed2);
      const activated = allocate(batch * 4 * hidden * half);
      free(up);
      const down = allocate(batch * hidden * half);
      free(activated);
      const output = allocate(batch * hidden * half);
      free(down);
      free(projected);
      free(hiddenState);
      hiddenState = output;
    }
    const logits = allocate(batch * vocabulary * half);
    const probabilities = allocate(batch * vocabulary * 4);
    free(logits);
    free(probabilities);
    sequence++;
    if (--untilRequestEnds === 0) {
      sequence = integer(16, 256);
      untilRequestEnds = integer(64, 512);
    }
    if (--untilBatchChange === 0) {
      batch = integer(1, 8);
      untilBatchChange = integer(4, 32);
      free(hiddenState);
      hiddenState = allocate(batch * hidden * half);
    }
  }
  return events;
}
