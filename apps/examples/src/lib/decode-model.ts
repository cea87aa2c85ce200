// The tiny transformer the decode program runs: its shape, its weights (deterministic, so every run and
// every backend decodes the same tokens), and its arithmetic in TypeScript. The arithmetic is written once,
// as functions over Float32Arrays with every step rounded to single precision in a fixed order: the mock's
// kernels are these functions over the buffers' bytes, and the reference decode calls them on plain arrays,
// so on the mock the device's logits are the reference's exactly. The host and CUDA kernels do the same
// operations in the same order (decode-kernels.ts).

/** The shape of the model. */
export interface ModelShape {
  /** Tokens in the vocabulary. */
  readonly vocabulary: number;
  /** The width of the residual stream (one attention head of this size). */
  readonly width: number;
  /** The hidden width of each layer's feed-forward block. */
  readonly hidden: number;
  /** Layers. */
  readonly layers: number;
}

/** The model the program decodes with unless told otherwise. */
export const DEFAULT_SHAPE: ModelShape = Object.freeze({ vocabulary: 64, width: 32, hidden: 64, layers: 2 });

/** One weight tensor: its name in the checkpoint, its shape (rows, columns) and its values. */
export interface WeightTensor {
  readonly name: string;
  readonly rows: number;
  readonly columns: number;
  readonly values: Float32Array;
}

/** The names of layer `layer`'s weights, each `[rows, columns]` applied as `out = W · x`. */
export function layerWeightNames(layer: number): {
  q: string;
  k: string;
  v: string;
  o: string;
  up: string;
  down: string;
} {
  const prefix = `layers.${layer}`;
  return {
    q: `${prefix}.attention.q`,
    k: `${prefix}.attention.k`,
    v: `${prefix}.attention.v`,
    o: `${prefix}.attention.o`,
    up: `${prefix}.feed_forward.up`,
    down: `${prefix}.feed_forward.down`,
  };
}

/** Deterministic values in [-scale, scale) (a linear congruential generator seeded by `seed`). */
function values(count: number, seed: number, scale: number): Float32Array {
  const out = new Float32Array(count);
  let state = (seed * 2_654_435_761) >>> 0 || 1;
  for (let index = 0; index < count; index += 1) {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    out[index] = ((state / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

/** Every weight of a model of `shape`: the embedding, each layer's six matrices, the output projection. */
export function modelWeights(shape: ModelShape): WeightTensor[] {
  const { vocabulary, width, hidden, layers } = shape;
  let seed = 1;
  const tensor = (
    name: string,
    rows: number,
    columns: number,
    scale = 1 / Math.sqrt(columns),
  ): WeightTensor => ({
    name,
    rows,
    columns,
    values: values(rows * columns, seed++, scale),
  });
  const tensors = [tensor("embedding", vocabulary, width, 1)];
  for (let layer = 0; layer < layers; layer += 1) {
    const names = layerWeightNames(layer);
    tensors.push(
      tensor(names.q, width, width),
      tensor(names.k, width, width),
      tensor(names.v, width, width),
      tensor(names.o, width, width),
      tensor(names.up, hidden, width),
      tensor(names.down, width, hidden),
    );
  }
  tensors.push(tensor("output", vocabulary, width));
  return tensors;
}

const f = Math.fround;

/** `out[r] = Σ_c w[r·columns + c] · x[c]` for `r < rows`, summed in order of `c`, each step in single precision. */
export function matvec(
  out: Float32Array,
  w: Float32Array,
  x: Float32Array,
  rows: number,
  columns: number,
): void {
  for (let row = 0; row < rows; row += 1) {
    let sum = 0;
    const base = row * columns;
    for (let column = 0; column < columns; column += 1)
      sum = f(sum + f((w[base + column] as number) * (x[column] as number)));
    out[row] = sum;
  }
}

/** `out[i] = a[i] + b[i]` for `i < n`. */
export function add(out: Float32Array, a: Float32Array, b: Float32Array, n: number): void {
  for (let index = 0; index < n; index += 1) out[index] = (a[index] as number) + (b[index] as number);
}

/** `x[i] = max(x[i], 0)` for `i < n`. */
export function relu(x: Float32Array, n: number): void {
  for (let index = 0; index < n; index += 1) if (!((x[index] as number) > 0)) x[index] = 0;
}

/**
 * One head of attention over the first `length` rows of the caches: `s_j = (q · k_j) · scale`, the softmax
 * of the `s_j` (exp in double precision, rounded), `out[i] = (Σ_j p_j · v_j[i]) / Σ_j p_j`.
 */
export function attention(
  out: Float32Array,
  q: Float32Array,
  keys: Float32Array,
  cachedValues: Float32Array,
  scale: number,
  length: number,
  width: number,
): void {
  const scores = new Float32Array(length);
  let largest = Number.NEGATIVE_INFINITY;
  for (let row = 0; row < length; row += 1) {
    let dot = 0;
    for (let index = 0; index < width; index += 1) {
      dot = f(dot + f((q[index] as number) * (keys[row * width + index] as number)));
    }
    scores[row] = f(dot * scale);
    largest = Math.max(largest, scores[row] as number);
  }
  let total = 0;
  for (let row = 0; row < length; row += 1) {
    scores[row] = f(Math.exp(f((scores[row] as number) - largest)));
    total = f(total + (scores[row] as number));
  }
  for (let index = 0; index < width; index += 1) {
    let sum = 0;
    for (let row = 0; row < length; row += 1) {
      sum = f(sum + f((scores[row] as number) * (cachedValues[row * width + index] as number)));
    }
    out[index] = f(sum / total);
  }
}

/** The index of the largest value (the first of equal ones): the greedy choice of the next token. */
export function argmax(values: ArrayLike<number>): number {
  let best = 0;
  for (let index = 1; index < values.length; index += 1)
    if ((values[index] as number) > (values[best] as number)) best = index;
  return best;
}

/** The softmax scale of a head of `width`: `1/√width` in single precision. */
export function attentionScale(width: number): number {
  return f(1 / Math.sqrt(width));
}

/** The reference decode: `steps` greedy tokens from `first`, and each step's logits. */
export function referenceDecode(
  shape: ModelShape,
  weights: readonly WeightTensor[],
  first: number,
  steps: number,
): { tokens: number[]; logits: Float32Array[] } {
  const { vocabulary, width, hidden, layers } = shape;
  const byName = new Map(weights.map((tensor) => [tensor.name, tensor.values]));
  const weight = (name: string) => byName.get(name) as Float32Array;
  const keys = Array.from({ length: layers }, () => new Float32Array(steps * width));
  const cached = Array.from({ length: layers }, () => new Float32Array(steps * width));
  const scale = attentionScale(width);
  const tokens: number[] = [];
  const logits: Float32Array[] = [];
  let token = first;
  for (let step = 0; step < steps; step += 1) {
    let x = weight("embedding").slice(token * width, (token + 1) * width);
    for (let layer = 0; layer < layers; layer += 1) {
      const names = layerWeightNames(layer);
      const q = new Float32Array(width);
      matvec(q, weight(names.q), x, width, width);
      matvec(keys[layer]!.subarray(step * width), weight(names.k), x, width, width);
      matvec(cached[layer]!.subarray(step * width), weight(names.v), x, width, width);
      const attended = new Float32Array(width);
      attention(attended, q, keys[layer]!, cached[layer]!, scale, step + 1, width);
      const projected = new Float32Array(width);
      matvec(projected, weight(names.o), attended, width, width);
      const mixed = new Float32Array(width);
      add(mixed, x, projected, width);
      const up = new Float32Array(hidden);
      matvec(up, weight(names.up), mixed, hidden, width);
      relu(up, hidden);
      const down = new Float32Array(width);
      matvec(down, weight(names.down), up, width, hidden);
      x = new Float32Array(width);
      add(x, mixed, down, width);
    }
    const out = new Float32Array(vocabulary);
    matvec(out, weight("output"), x, vocabulary, width);
    logits.push(out);
    token = argmax(out);
    tokens.push(token);
  }
  return { tokens, logits };
}
