/* The decode program's kernels on the host (src/decode.ts): the same operations in the same order as the
 * TypeScript reference (src/lib/decode-model.ts), each step rounded to single precision, so the logits are
 * expected to be the reference's bit for bit. Entries for a `nuvec_host_kernels` table (nuvec_host_kernels.h):
 *
 *   static const nuvec_host_kernel kKernels[] = { ..., NUVEC_DECODE_KERNELS };
 *
 * Multiplications and additions are separate statements and the functions are compiled without contraction,
 * so no compiler fuses them into a multiply-add (GCC contracts across statements unless told not to). */
#ifndef NUVEC_EXAMPLE_DECODE_KERNELS_H_
#define NUVEC_EXAMPLE_DECODE_KERNELS_H_

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "nuvec_host_kernels.h"

#if defined(__GNUC__) && !defined(__clang__)
#define NUVEC_DECODE_EXACT __attribute__((optimize("fp-contract=off")))
#else
#define NUVEC_DECODE_EXACT
#endif

/* (float* out, const float* w, const float* x, uint32_t rows, uint32_t columns): out = w · x. */
static NUVEC_DECODE_EXACT int NuvecDecodeMatvec(const nuvec_host_launch* launch, void* const* buffers,
                                                const uint64_t* scalars, char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* out = (float*)buffers[0];
  const float* w = (const float*)buffers[1];
  const float* x = (const float*)buffers[2];
  uint32_t rows = nuvec_host_scalar_u32(scalars[3]);
  uint32_t columns = nuvec_host_scalar_u32(scalars[4]);
  for (uint32_t row = 0; row < rows; ++row) {
    float sum = 0.0f;
    for (uint32_t column = 0; column < columns; ++column) {
      float product = w[(size_t)row * columns + column] * x[column];
      sum = sum + product;
    }
    out[row] = sum;
  }
  return 0;
}

/* (float* out, const float* a, const float* b, uint32_t n): out = a + b. */
static int NuvecDecodeAdd(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars,
                          char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* out = (float*)buffers[0];
  const float* a = (const float*)buffers[1];
  const float* b = (const float*)buffers[2];
  uint32_t n = nuvec_host_scalar_u32(scalars[3]);
  for (uint32_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

/* (float* x, uint32_t n): x = max(x, 0) (NaN and -0 become 0). */
static int NuvecDecodeRelu(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars,
                           char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* x = (float*)buffers[0];
  uint32_t n = nuvec_host_scalar_u32(scalars[1]);
  for (uint32_t i = 0; i < n; ++i)
    if (!(x[i] > 0.0f)) x[i] = 0.0f;
  return 0;
}

/* (float* out, const float* q, const float* keys, const float* values, float scale, uint32_t length,
 *  uint32_t width): one head of attention over the first `length` rows (at most 4096: the scores are on the
 *  stack); exp in double precision, rounded. */
static NUVEC_DECODE_EXACT int NuvecDecodeAttention(const nuvec_host_launch* launch, void* const* buffers,
                                                   const uint64_t* scalars, char* error, size_t error_length) {
  (void)launch;
  float* out = (float*)buffers[0];
  const float* q = (const float*)buffers[1];
  const float* keys = (const float*)buffers[2];
  const float* values = (const float*)buffers[3];
  float scale = nuvec_host_scalar_f32(scalars[4]);
  uint32_t length = nuvec_host_scalar_u32(scalars[5]);
  uint32_t width = nuvec_host_scalar_u32(scalars[6]);
  if (length == 0 || length > 4096) {
    snprintf(error, error_length, "attention: length %u is not from 1 to 4096", (unsigned)length);
    return 1;
  }
  float scores[4096];
  float largest = -INFINITY;
  for (uint32_t row = 0; row < length; ++row) {
    float dot = 0.0f;
    for (uint32_t i = 0; i < width; ++i) {
      float product = q[i] * keys[(size_t)row * width + i];
      dot = dot + product;
    }
    float score = dot * scale;
    scores[row] = score;
    if (score > largest) largest = score;
  }
  float total = 0.0f;
  for (uint32_t row = 0; row < length; ++row) {
    float shifted = scores[row] - largest;
    scores[row] = (float)exp((double)shifted);
    total = total + scores[row];
  }
  for (uint32_t i = 0; i < width; ++i) {
    float sum = 0.0f;
    for (uint32_t row = 0; row < length; ++row) {
      float product = scores[row] * values[(size_t)row * width + i];
      sum = sum + product;
    }
    out[i] = sum / total;
  }
  return 0;
}

/* The decode kernels' entries, with their parameters (one letter each: see nuvec_host_kernels.h). */
#define NUVEC_DECODE_KERNELS                        \
  {"matvec", "bbbuu", NuvecDecodeMatvec},           \
      {"add", "bbbu", NuvecDecodeAdd},              \
      {"relu", "bu", NuvecDecodeRelu},              \
      {"attention", "bbbbfuu", NuvecDecodeAttention}

#endif /* NUVEC_EXAMPLE_DECODE_KERNELS_H_ */
