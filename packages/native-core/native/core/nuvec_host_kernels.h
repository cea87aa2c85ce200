/* The kernel table a host module exports: the C ABI between nuvec's host backend and a shared library of
 * kernels (any native addon or plain .so/.dylib). The backend loads the library with
 * dlopen(path, RTLD_NOW | RTLD_LOCAL), looks up the symbol `nuvec_host_kernels` (a `nuvec_host_kernel_table`),
 * checks its version and runs each kernel on a stream's worker thread, in stream order.
 *
 *   static const nuvec_host_kernel kKernels[] = {
 *     {"scale", "bfu", RunScale},   // (float* x, float factor, uint32_t n)
 *   };
 *   extern "C" NUVEC_HOST_KERNELS_EXPORT const nuvec_host_kernel_table nuvec_host_kernels = {
 *     NUVEC_HOST_KERNELS_VERSION, 1, kKernels};
 *
 * A kernel's `parameters` is one letter per parameter, in order (spaces are ignored):
 *   b  buffer: a pointer to the byte the argument names (the buffer's memory from its offset)
 *   i  i32     u  u32     f  f32     I  i64     U  u64     d  f64
 * A launch passes every argument in its slot of `buffers` (pointers; NULL for a scalar's slot) and of
 * `scalars` (the scalar's bits: an i32/u32 zero-extended, an f32 as its 4 bytes in the low half, an f64 as its
 * 8; 0 for a buffer's slot), so `nuvec_host_scalar_f32(scalars[1])` reads parameter 1 as a float.
 *
 * `run` returns 0 on success. Any other value fails the launch: the stream's later work is skipped and
 * every event after it, its done() and its reads reject with an error naming the kernel, the value and the
 * text the kernel wrote into `error` (at most `error_length` bytes, NUL-terminated; the backend zeroes it
 * first). A kernel must not keep the pointers past its return, and must not throw (C++ exceptions crossing
 * the C ABI end the process). The launch shape is the caller's: a host kernel may loop over it or ignore it.
 *
 * The library stays loaded while its module is held or any launch of its kernels may still run; nuvec never
 * calls dlclose before then. The table and the strings it points at must stay valid as long as the library
 * is loaded. */
#ifndef NUVEC_HOST_KERNELS_H_
#define NUVEC_HOST_KERNELS_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this declaration; a table of another version is refused (FormatError). */
#define NUVEC_HOST_KERNELS_VERSION 1u

/* What a library's table is declared with so that dlsym finds it under -fvisibility=hidden. */
#define NUVEC_HOST_KERNELS_EXPORT __attribute__((visibility("default")))

/* The shape of a launch, as given to stream.launch: blocks in the grid, threads in a block (1 where a
 * dimension was not given), and the dynamic shared memory asked for. */
typedef struct nuvec_host_launch {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_bytes;
  uint32_t argument_count;
} nuvec_host_launch;

/* One kernel: its name (unique in the table), its parameters (see above) and its entry point. */
typedef struct nuvec_host_kernel {
  const char* name;
  const char* parameters;
  int (*run)(const nuvec_host_launch* launch, void* const* buffers, const uint64_t* scalars, char* error,
             size_t error_length);
} nuvec_host_kernel;

/* The exported symbol's type: `count` kernels from `kernels`. */
typedef struct nuvec_host_kernel_table {
  uint32_t version;
  uint32_t count;
  const nuvec_host_kernel* kernels;
} nuvec_host_kernel_table;

/* A scalar slot read as its kind. */
static inline int32_t nuvec_host_scalar_i32(uint64_t bits) { return (int32_t)(uint32_t)bits; }
static inline uint32_t nuvec_host_scalar_u32(uint64_t bits) { return (uint32_t)bits; }
static inline int64_t nuvec_host_scalar_i64(uint64_t bits) { return (int64_t)bits; }
static inline float nuvec_host_scalar_f32(uint64_t bits) {
  uint32_t low = (uint32_t)bits;
  float value;
  memcpy(&value, &low, sizeof value);
  return value;
}
static inline double nuvec_host_scalar_f64(uint64_t bits) {
  double value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

#ifdef __cplusplus
}
#endif

#endif /* NUVEC_HOST_KERNELS_H_ */
