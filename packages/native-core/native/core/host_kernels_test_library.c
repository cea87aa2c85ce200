/* Kernels for core/stream_registry_test.cc: a host module as any library would write one (built by
 * test/native-core.test.ts as a shared library, three times: as it is, with NUVEC_TEST_VERSION set to a
 * version nuvec does not read, and with NUVEC_TEST_BAD_PARAMETERS). Not shipped. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nuvec_host_kernels.h"

#ifndef NUVEC_TEST_VERSION
#define NUVEC_TEST_VERSION NUVEC_HOST_KERNELS_VERSION
#endif

/* (float* x, float factor, uint32_t n): x[i] *= factor. */
static int Scale(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                 size_t error_length) {
  float* x = (float*)buffers[0];
  float factor = nuvec_host_scalar_f32(scalars[1]);
  uint32_t n = nuvec_host_scalar_u32(scalars[2]);
  for (uint32_t i = 0; i < n; ++i) x[i] *= factor;
  return 0;
}

/* (uint64_t milliseconds): sleeps, so that later work is still queued. */
static int Sleep(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                 size_t error_length) {
  struct timespec pause = {(time_t)(scalars[0] / 1000), (long)(scalars[0] % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  return 0;
}

/* (int32_t code): fails with `code` and a message. */
static int Fail(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                size_t error_length) {
  snprintf(error, error_length, "asked to fail with %d", nuvec_host_scalar_i32(scalars[0]));
  return nuvec_host_scalar_i32(scalars[0]);
}

/* (int64_t* out, double d, int64_t i, uint64_t u): out = {(int64_t)(d * 2), i, (int64_t)u, grid[0] * block[0]}. */
static int Kinds(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                 size_t error_length) {
  int64_t* out = (int64_t*)buffers[0];
  out[0] = (int64_t)(nuvec_host_scalar_f64(scalars[1]) * 2);
  out[1] = nuvec_host_scalar_i64(scalars[2]);
  out[2] = (int64_t)scalars[3];
  out[3] = (int64_t)launch->grid[0] * launch->block[0];
  return 0;
}

static const nuvec_host_kernel kKernels[] = {
    {"scale", "b f u", Scale},
    {"sleep", "U", Sleep},
    {"fail", "i", Fail},
#ifdef NUVEC_TEST_BAD_PARAMETERS
    {"kinds", "bdIx", Kinds},
#else
    {"kinds", "bdIU", Kinds},
#endif
};

NUVEC_HOST_KERNELS_EXPORT const nuvec_host_kernel_table nuvec_host_kernels = {
    NUVEC_TEST_VERSION, sizeof kKernels / sizeof kKernels[0], kKernels};
