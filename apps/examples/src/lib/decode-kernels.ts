// The decode program's kernels, one module source with an entry per backend (each backend takes its own):
// the mock's are decode-model.ts's arithmetic over the buffers' bytes; CUDA's are CUDA C compiled with NVRTC,
// each step rounded as the TypeScript is (__fmul_rn, __fadd_rn: no fused multiply-add; exp in double
// precision); the host's are the same C in the example kernel addon's `nuvec_host_kernels` table.
import type { KernelParameterKind, MockKernel } from "@nuvec/device";
import { add, attention, matvec, relu } from "./decode-model.js";

/** The names of the decode kernels. */
export type DecodeKernelName = "matvec" | "add" | "relu" | "attention";

/** Every kernel the decode loop launches, with its parameters. */
export const DECODE_KERNELS: Readonly<Record<DecodeKernelName, readonly KernelParameterKind[]>> =
  Object.freeze({
    /** `(out, w, x, rows, columns)`: `out = w · x`, one row per thread. */
    matvec: Object.freeze(["buffer", "buffer", "buffer", "u32", "u32"] as const),
    /** `(out, a, b, n)`: `out = a + b`, one element per thread. */
    add: Object.freeze(["buffer", "buffer", "buffer", "u32"] as const),
    /** `(x, n)`: `x = max(x, 0)`, one element per thread. */
    relu: Object.freeze(["buffer", "u32"] as const),
    /** `(out, q, keys, values, scale, length, width)`: one head of attention, one output element per thread. */
    attention: Object.freeze(["buffer", "buffer", "buffer", "buffer", "f32", "u32", "u32"] as const),
  });

/** `bytes` as 32-bit floats, without a copy (the mock's buffers start at multiples of 4). */
function floats(bytes: unknown): Float32Array {
  const view = bytes as Uint8Array;
  return new Float32Array(view.buffer, view.byteOffset, Math.floor(view.byteLength / 4));
}

/** The mock's versions: decode-model.ts's functions over the bytes the launch names. */
export const MOCK_DECODE_KERNELS: Readonly<Record<DecodeKernelName, MockKernel>> = Object.freeze({
  matvec: {
    parameters: DECODE_KERNELS.matvec,
    run: ([out, w, x, rows, columns]) =>
      matvec(floats(out), floats(w), floats(x), rows as number, columns as number),
  },
  add: {
    parameters: DECODE_KERNELS.add,
    run: ([out, a, b, n]) => add(floats(out), floats(a), floats(b), n as number),
  },
  relu: {
    parameters: DECODE_KERNELS.relu,
    run: ([x, n]) => relu(floats(x), n as number),
  },
  attention: {
    parameters: DECODE_KERNELS.attention,
    run: ([out, q, keys, values, scale, length, width]) =>
      attention(
        floats(out),
        floats(q),
        floats(keys),
        floats(values),
        scale as number,
        length as number,
        width as number,
      ),
  },
});

/** The CUDA C of the decode kernels (NVRTC), rounded step by step as decode-model.ts is. */
export const CUDA_DECODE_KERNELS = String.raw`
extern "C" __global__ void matvec(float* out, const float* w, const float* x, unsigned rows, unsigned columns) {
  unsigned row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (unsigned column = 0; column < columns; ++column)
    sum = __fadd_rn(sum, __fmul_rn(w[row * columns + column], x[column]));
  out[row] = sum;
}

extern "C" __global__ void add(float* out, const float* a, const float* b, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fadd_rn(a[i], b[i]);
}

extern "C" __global__ void relu(float* x, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && !(x[i] > 0.0f)) x[i] = 0.0f;
}

// Each thread computes the softmax itself (a tiny model: no shared memory), then its element of the output.
extern "C" __global__ void attention(float* out, const float* q, const float* keys, const float* values,
                                     float scale, unsigned length, unsigned width) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= width) return;
  float largest = -__int_as_float(0x7f800000);
  for (unsigned row = 0; row < length; ++row) {
    float dot = 0.0f;
    for (unsigned k = 0; k < width; ++k) dot = __fadd_rn(dot, __fmul_rn(q[k], keys[row * width + k]));
    largest = fmaxf(largest, __fmul_rn(dot, scale));
  }
  float total = 0.0f, sum = 0.0f;
  for (unsigned row = 0; row < length; ++row) {
    float dot = 0.0f;
    for (unsigned k = 0; k < width; ++k) dot = __fadd_rn(dot, __fmul_rn(q[k], keys[row * width + k]));
    float p = (float)exp((double)__fadd_rn(__fmul_rn(dot, scale), -largest));
    total = __fadd_rn(total, p);
    sum = __fadd_rn(sum, __fmul_rn(p, values[row * width + i]));
  }
  out[i] = __fdiv_rn(sum, total);
}
`;

/** The launch shape of `n` independent elements: blocks of 64 threads. */
export function elementsShape(n: number): { grid: number[]; block: number[] } {
  return { grid: [Math.max(1, Math.ceil(n / 64))], block: [64] };
}
