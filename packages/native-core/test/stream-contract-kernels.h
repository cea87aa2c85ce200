/* The stream contract suite's standard kernels (stream-contract-kernels.ts) for a host kernel table
 * (native/core/nuvec_host_kernels.h), one rounding to single precision per element as the mock's and CUDA's:
 *
 *   static const nuvec_host_kernel kKernels[] = { NUVEC_STANDARD_KERNELS };
 *
 * then `{ host: pathOfTheLibrary }` is the suite's `kernels` option. */
#ifndef NUVEC_STREAM_CONTRACT_KERNELS_H_
#define NUVEC_STREAM_CONTRACT_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include "nuvec_host_kernels.h"

/* (float* x, float value, uint32_t n): x[i] = value. */
static int NuvecContractFill(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars,
                             char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* x = (float*)buffers[0];
  float value = nuvec_host_scalar_f32(scalars[1]);
  uint32_t n = nuvec_host_scalar_u32(scalars[2]);
  for (uint32_t i = 0; i < n; ++i) x[i] = value;
  return 0;
}

/* (float* x, float factor, uint32_t n): x[i] *= factor. */
static int NuvecContractScale(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars,
                              char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* x = (float*)buffers[0];
  float factor = nuvec_host_scalar_f32(scalars[1]);
  uint32_t n = nuvec_host_scalar_u32(scalars[2]);
  for (uint32_t i = 0; i < n; ++i) x[i] = x[i] * factor;
  return 0;
}

/* (float* out, const float* a, const float* b, uint32_t n): out[i] = a[i] + b[i]. */
static int NuvecContractAdd(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars,
                            char* error, size_t error_length) {
  (void)launch, (void)error, (void)error_length;
  float* out = (float*)buffers[0];
  const float* a = (const float*)buffers[1];
  const float* b = (const float*)buffers[2];
  uint32_t n = nuvec_host_scalar_u32(scalars[3]);
  for (uint32_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

/* The standard kernels' entries, with their parameters. */
#define NUVEC_STANDARD_KERNELS                 \
  {"fill", "bfu", NuvecContractFill},          \
      {"scale", "bfu", NuvecContractScale},    \
      {"add", "bbbu", NuvecContractAdd}

#endif /* NUVEC_STREAM_CONTRACT_KERNELS_H_ */
