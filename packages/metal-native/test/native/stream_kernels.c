/* The stream contract's standard kernels as a host module (nuvec_host_kernels.h): fill, scale and add over
 * 32-bit floats (see @nuvec/native-core's test/stream-contract-kernels.ts), one element per "thread" of the
 * launch shape, and two for the host's own tests: sleep (holds the stream's worker) and fail. Built into a
 * shared library by test/stream-contract-host.test.ts. */
#include <stdio.h>
#include <time.h>

#include "../../../native-core/native/core/nuvec_host_kernels.h"

static uint64_t Threads(const nuvec_host_launch* launch) {
  uint64_t threads = 1;
  for (int axis = 0; axis < 3; ++axis) threads *= (uint64_t)launch->grid[axis] * launch->block[axis];
  return threads;
}

static uint64_t Count(const nuvec_host_launch* launch, uint64_t n) {
  uint64_t threads = Threads(launch);
  return n < threads ? n : threads;
}

static int Fill(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                size_t error_length) {
  float* x = (float*)buffers[0];
  float value = nuvec_host_scalar_f32(scalars[1]);
  uint64_t n = Count(launch, nuvec_host_scalar_u32(scalars[2]));
  for (uint64_t i = 0; i < n; ++i) x[i] = value;
  return 0;
}

static int Scale(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                 size_t error_length) {
  float* x = (float*)buffers[0];
  float factor = nuvec_host_scalar_f32(scalars[1]);
  uint64_t n = Count(launch, nuvec_host_scalar_u32(scalars[2]));
  for (uint64_t i = 0; i < n; ++i) x[i] = x[i] * factor;
  return 0;
}

static int Add(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
               size_t error_length) {
  float* out = (float*)buffers[0];
  const float* a = (const float*)buffers[1];
  const float* b = (const float*)buffers[2];
  uint64_t n = Count(launch, nuvec_host_scalar_u32(scalars[3]));
  for (uint64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
  return 0;
}

static int Sleep(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                 size_t error_length) {
  uint32_t milliseconds = nuvec_host_scalar_u32(scalars[0]);
  struct timespec pause = {(time_t)(milliseconds / 1000), (long)(milliseconds % 1000) * 1000000L};
  nanosleep(&pause, NULL);
  return 0;
}

static int Fail(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
                size_t error_length) {
  snprintf(error, error_length, "failed on purpose with %d", nuvec_host_scalar_i32(scalars[0]));
  return nuvec_host_scalar_i32(scalars[0]);
}

static const nuvec_host_kernel kKernels[] = {
    {"fill", "bfu", Fill}, {"scale", "bfu", Scale}, {"add", "bbbu", Add},
    {"sleep", "u", Sleep}, {"fail", "i", Fail},
};

NUVEC_HOST_KERNELS_EXPORT const nuvec_host_kernel_table nuvec_host_kernels = {
    NUVEC_HOST_KERNELS_VERSION, sizeof kKernels / sizeof kKernels[0], kKernels};
