// The decode workload's kernels (fp32, one token a step), compiled at run time with NVRTC by decode.mjs.
// A warp per output row for the matrix-vector products (float4 loads: the columns are a multiple of 4).

#define NEG_INF __int_as_float(0xff800000)

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float block_sum(float v, float* shared) {
  v = warp_sum(v);
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x >> 5) ? shared[threadIdx.x] : 0.0f;
  if (warp == 0) v = warp_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

extern "C" __global__ void embed(float* x, const float* table, const unsigned* token, unsigned d) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < d) x[i] = table[(size_t)token[0] * d + i];
}

// y = x * rsqrt(mean(x^2) + eps) * w; one block.
extern "C" __global__ void rmsnorm(float* y, const float* x, const float* w, unsigned d, float eps) {
  __shared__ float shared[32];
  float s = 0.0f;
  for (unsigned i = threadIdx.x; i < d; i += blockDim.x) s += x[i] * x[i];
  float scale = rsqrtf(block_sum(s, shared) / d + eps);
  for (unsigned i = threadIdx.x; i < d; i += blockDim.x) y[i] = x[i] * scale * w[i];
}

// y[r] = (accumulate ? y[r] : 0) + W[r, :] . x; 8 warps a block, a warp a row.
extern "C" __global__ void gemv(float* y, const float* W, const float* x, unsigned rows, unsigned cols,
                                unsigned accumulate) {
  unsigned row = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (row >= rows) return;
  const float4* w4 = reinterpret_cast<const float4*>(W + (size_t)row * cols);
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float s = 0.0f;
  for (unsigned i = lane; i < cols / 4; i += 32) {
    float4 a = w4[i], b = x4[i];
    s += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
  }
  s = warp_sum(s);
  if (lane == 0) y[row] = (accumulate ? y[row] : 0.0f) + s;
}

// s[h * t + j] = q[h] . K[j, h] * scale; a warp per (j, h), head size 64.
extern "C" __global__ void scores(float* s, const float* q, const float* K, unsigned t, unsigned heads,
                                  float scale) {
  unsigned pair = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (pair >= t * heads) return;
  unsigned j = pair / heads, h = pair % heads, d = heads * 64;
  const float* k = K + (size_t)j * d + h * 64;
  const float* qh = q + h * 64;
  float v = warp_sum(qh[lane] * k[lane] + qh[lane + 32] * k[lane + 32]);
  if (lane == 0) s[h * t + j] = v * scale;
}

// Softmax of each head's row of t scores, in place; a block per head.
extern "C" __global__ void softmax(float* s, unsigned t) {
  __shared__ float shared[32];
  __shared__ float maxima[32];
  float* row = s + (size_t)blockIdx.x * t;
  float local = NEG_INF;
  for (unsigned j = threadIdx.x; j < t; j += blockDim.x) local = fmaxf(local, row[j]);
  for (int o = 16; o > 0; o >>= 1) local = fmaxf(local, __shfl_xor_sync(0xffffffffu, local, o));
  if ((threadIdx.x & 31) == 0) maxima[threadIdx.x >> 5] = local;
  __syncthreads();
  float m = maxima[0];
  for (unsigned w = 1; w < (blockDim.x >> 5); w++) m = fmaxf(m, maxima[w]);
  float sum = 0.0f;
  for (unsigned j = threadIdx.x; j < t; j += blockDim.x) {
    float e = __expf(row[j] - m);
    row[j] = e;
    sum += e;
  }
  float total = block_sum(sum, shared);
  for (unsigned j = threadIdx.x; j < t; j += blockDim.x) row[j] /= total;
}

// o[h * 64 + e] = sum_j p[h * t + j] V[j, h * 64 + e]; a thread per output.
extern "C" __global__ void attend(float* o, const float* p, const float* V, unsigned t, unsigned heads) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x, d = heads * 64;
  if (i >= d) return;
  const float* ph = p + (size_t)(i / 64) * t;
  float s = 0.0f;
  for (unsigned j = 0; j < t; j++) s += ph[j] * V[(size_t)j * d + i];
  o[i] = s;
}

// g = silu(g) * u.
extern "C" __global__ void swiglu(float* g, const float* u, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = g[i];
    g[i] = v / (1.0f + __expf(-v)) * u[i];
  }
}

// token[0] = argmax of x (the first of equal maxima); one block of 1024.
extern "C" __global__ void argmax(unsigned* token, const float* x, unsigned n) {
  __shared__ float values[1024];
  __shared__ unsigned indices[1024];
  float best = NEG_INF;
  unsigned index = 0;
  for (unsigned i = threadIdx.x; i < n; i += blockDim.x) {
    if (x[i] > best) { best = x[i]; index = i; }
  }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = index;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      float other = values[threadIdx.x + stride];
      unsigned at = indices[threadIdx.x + stride];
      if (other > values[threadIdx.x] || (other == values[threadIdx.x] && at < indices[threadIdx.x])) {
        values[threadIdx.x] = other;
        indices[threadIdx.x] = at;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) token[0] = indices[0];
}
