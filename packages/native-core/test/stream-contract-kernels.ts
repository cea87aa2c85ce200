// The standard kernels the stream contract suite launches, and the mock's TypeScript versions of them. Each
// backend passes a module source with its own versions (host C in a test library, CUDA C through NVRTC):
//   fill(buffer x, f32 value, u32 n)        x[i] = value                 for i < n
//   scale(buffer x, f32 factor, u32 n)      x[i] = x[i] * factor         for i < n
//   add(buffer out, buffer a, buffer b, u32 n)  out[i] = a[i] + b[i]     for i < n
// over 32-bit floats, one element per thread (a launch covers at least n threads). One rounding to single
// precision per element, so every backend's bytes are the same exactly.
import type { KernelParameterKind, MockKernel, NativeLaunchShape } from "../src/index.js";

/** The parameters of each standard kernel, as the suite declares them. */
export const STANDARD_KERNEL_PARAMETERS: Readonly<
  Record<"fill" | "scale" | "add", readonly KernelParameterKind[]>
> = Object.freeze({
  fill: Object.freeze(["buffer", "f32", "u32"] as const),
  scale: Object.freeze(["buffer", "f32", "u32"] as const),
  add: Object.freeze(["buffer", "buffer", "buffer", "u32"] as const),
});

/** A `Float32Array` over `bytes` (which must start at a multiple of 4 in its buffer). */
function floats(bytes: Uint8Array, count: number): Float32Array {
  if (bytes.byteOffset % 4 !== 0) {
    // A kernel's buffer argument at an unaligned offset: go through a copy.
    throw new RangeError("the standard kernels take buffers at offsets that are multiples of 4");
  }
  return new Float32Array(bytes.buffer, bytes.byteOffset, Math.min(count, Math.floor(bytes.byteLength / 4)));
}

/** Threads a launch has: grid × block, in every dimension. */
function threads(shape: NativeLaunchShape): number {
  return shape.grid.reduce((a, b) => a * b, 1) * shape.block.reduce((a, b) => a * b, 1);
}

/** The mock's versions of the standard kernels: what `{ mock: MOCK_STANDARD_KERNELS }` loads. */
export const MOCK_STANDARD_KERNELS: Readonly<Record<"fill" | "scale" | "add", MockKernel>> = Object.freeze({
  fill: {
    parameters: STANDARD_KERNEL_PARAMETERS.fill,
    run([x, value, n], shape) {
      floats(x as Uint8Array, Math.min(n as number, threads(shape))).fill(value as number);
    },
  },
  scale: {
    parameters: STANDARD_KERNEL_PARAMETERS.scale,
    run([x, factor, n], shape) {
      const values = floats(x as Uint8Array, Math.min(n as number, threads(shape)));
      for (let index = 0; index < values.length; index += 1)
        values[index] = (values[index] as number) * (factor as number);
    },
  },
  add: {
    parameters: STANDARD_KERNEL_PARAMETERS.add,
    run([out, a, b, n], shape) {
      const count = Math.min(n as number, threads(shape));
      const [into, left, right] = [
        floats(out as Uint8Array, count),
        floats(a as Uint8Array, count),
        floats(b as Uint8Array, count),
      ];
      for (let index = 0; index < into.length; index += 1) {
        into[index] = (left[index] as number) + (right[index] as number);
      }
    },
  },
});

/** CUDA C of the standard kernels (NVRTC), for `{ cuda: CUDA_STANDARD_KERNELS }`: one element per thread. */
export const CUDA_STANDARD_KERNELS = `
extern "C" __global__ void fill(float* x, float value, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}
extern "C" __global__ void scale(float* x, float factor, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __fmul_rn(x[i], factor);
}
extern "C" __global__ void add(float* out, const float* a, const float* b, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fadd_rn(a[i], b[i]);
}
`;

/** CUDA C that does not compile: the suite's `brokenModule` for CUDA (`{ cuda: CUDA_BROKEN_MODULE }`). */
export const CUDA_BROKEN_MODULE = `extern "C" __global__ void broken(float* x) { x[0] = undeclared_name; }`;
