// The kernels this addon exports to nuvec's host backend: the `nuvec_host_kernels` table
// (nuvec_host_kernels.h), so that `device.loadModule({ host: <this .node file> })` runs them on a stream's
// worker thread, in stream order. A runtime's own native code would export its table the same way.
//
//   fill(buffer x, f32 value, u32 n)                 x[i] = value                 i < n
//   scale(buffer x, f32 factor, u32 n)               x[i] *= factor               i < n
//   add(buffer out, buffer a, buffer b, u32 n)       out[i] = a[i] + b[i]         i < n
//   relu(buffer x, u32 n)                            x[i] = max(x[i], 0)          i < n
//   matvec(buffer out, buffer w, buffer x, u32 rows, u32 columns)
//                                                    out = w · x (w row-major, rows × columns)
//   attention(buffer out, buffer q, buffer keys, buffer values, f32 scale, u32 length, u32 width)
//                                                    one head over the first `length` rows of the caches
//   append(buffer cache, buffer row, u32 position, u32 width, u32 capacity)
//                                                    cache[position] = row (a KV-cache append); fails
//                                                    (non-zero, with a message) past `capacity` rows
//
// Float32 throughout, each step rounded as the TypeScript reference of the examples (src/lib/decode-model.ts)
// rounds it: products and sums in single precision with no fused multiply-add (binding.gyp builds this file
// with -ffp-contract=off), exp in double precision then rounded. fill, scale and add are the stream contract's
// standard kernels: they cover min(n, grid × block) elements, as a GPU launch of that shape would.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "../../../packages/native-core/native/core/nuvec_host_kernels.h"

namespace {

uint64_t Threads(const nuvec_host_launch* launch) {
  uint64_t threads = 1;
  for (int axis = 0; axis < 3; ++axis) threads *= static_cast<uint64_t>(launch->grid[axis]) * launch->block[axis];
  return threads;
}

uint64_t Covered(const nuvec_host_launch* launch, uint64_t n) { return n < Threads(launch) ? n : Threads(launch); }

float* Floats(void* const* buffers, int index) { return static_cast<float*>(buffers[index]); }

int Fill(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char*, size_t) {
  float* x = Floats(buffers, 0);
  float value = nuvec_host_scalar_f32(scalars[1]);
  uint64_t n = Covered(launch, nuvec_host_scalar_u32(scalars[2]));
  for (uint64_t i = 0; i < n; ++i) x[i] = value;
  return 0;
}

int Scale(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char*, size_t) {
  float* x = Floats(buffers, 0);
  float factor = nuvec_host_scalar_f32(scalars[1]);
  uint64_t n = Covered(launch, nuvec_host_scalar_u32(scalars[2]));
  for (uint64_t i = 0; i < n; ++i) x[i] = x[i] * factor;
  return 0;
}

int Add(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char*, size_t) {
  float* out = Floats(buffers, 0);
  const float* a = Floats(buffers, 1);
  const float* b = Floats(buffers, 2);
  uint64_t n = Covered(launch, nuvec_host_scalar_u32(scalars[3]));
  for (uint64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

int Relu(const nuvec_host_launch*, void* const* buffers, const uint64_t* scalars, char*, size_t) {
  float* x = Floats(buffers, 0);
  uint32_t n = nuvec_host_scalar_u32(scalars[1]);
  for (uint32_t i = 0; i < n; ++i) {
    if (!(x[i] > 0.0f)) x[i] = 0.0f;
  }
  return 0;
}

int Matvec(const nuvec_host_launch*, void* const* buffers, const uint64_t* scalars, char*, size_t) {
  float* out = Floats(buffers, 0);
  const float* w = Floats(buffers, 1);
  const float* x = Floats(buffers, 2);
  uint32_t rows = nuvec_host_scalar_u32(scalars[3]);
  uint32_t columns = nuvec_host_scalar_u32(scalars[4]);
  for (uint32_t row = 0; row < rows; ++row) {
    float sum = 0.0f;
    const float* line = w + static_cast<uint64_t>(row) * columns;
    for (uint32_t column = 0; column < columns; ++column) {
      float product = line[column] * x[column];
      sum = sum + product;
    }
    out[row] = sum;
  }
  return 0;
}

int Attention(const nuvec_host_launch*, void* const* buffers, const uint64_t* scalars, char* error,
              size_t errorLength) {
  float* out = Floats(buffers, 0);
  const float* q = Floats(buffers, 1);
  const float* keys = Floats(buffers, 2);
  const float* values = Floats(buffers, 3);
  float scale = nuvec_host_scalar_f32(scalars[4]);
  uint32_t length = nuvec_host_scalar_u32(scalars[5]);
  uint32_t width = nuvec_host_scalar_u32(scalars[6]);
  if (length == 0) {
    std::snprintf(error, errorLength, "attention over no rows");
    return 1;
  }
  std::vector<float> scores(length);
  float largest = -INFINITY;
  for (uint32_t row = 0; row < length; ++row) {
    float dot = 0.0f;
    for (uint32_t k = 0; k < width; ++k) {
      float product = q[k] * keys[static_cast<uint64_t>(row) * width + k];
      dot = dot + product;
    }
    scores[row] = dot * scale;
    largest = std::fmax(largest, scores[row]);
  }
  float total = 0.0f;
  for (uint32_t row = 0; row < length; ++row) {
    float shifted = scores[row] - largest;
    scores[row] = static_cast<float>(std::exp(static_cast<double>(shifted)));
    total = total + scores[row];
  }
  for (uint32_t i = 0; i < width; ++i) {
    float sum = 0.0f;
    for (uint32_t row = 0; row < length; ++row) {
      float product = scores[row] * values[static_cast<uint64_t>(row) * width + i];
      sum = sum + product;
    }
    out[i] = sum / total;
  }
  return 0;
}

int Append(const nuvec_host_launch*, void* const* buffers, const uint64_t* scalars, char* error, size_t errorLength) {
  float* cache = Floats(buffers, 0);
  const float* row = Floats(buffers, 1);
  uint32_t position = nuvec_host_scalar_u32(scalars[2]);
  uint32_t width = nuvec_host_scalar_u32(scalars[3]);
  uint32_t capacity = nuvec_host_scalar_u32(scalars[4]);
  if (position >= capacity) {
    std::snprintf(error, errorLength, "append at row %u of a cache of %u rows", position, capacity);
    return 2;
  }
  float* into = cache + static_cast<uint64_t>(position) * width;
  for (uint32_t i = 0; i < width; ++i) into[i] = row[i];
  return 0;
}

const nuvec_host_kernel kKernels[] = {
    {"fill", "bfu", Fill},
    {"scale", "bfu", Scale},
    {"add", "bbbu", Add},
    {"relu", "bu", Relu},
    {"matvec", "bbbuu", Matvec},
    {"attention", "bbbbfuu", Attention},
    {"append", "bbuuu", Append},
};

}  // namespace

extern "C" NUVEC_HOST_KERNELS_EXPORT const nuvec_host_kernel_table nuvec_host_kernels = {
    NUVEC_HOST_KERNELS_VERSION, sizeof kKernels / sizeof kKernels[0], kKernels};
