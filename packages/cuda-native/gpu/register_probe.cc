// How long cuMemHostRegister takes on this machine, for anonymous memory and for file mappings (what wiring
// a mapped checkpoint does), with and without CU_MEMHOSTREGISTER_READ_ONLY. gpu/run.sh builds it with g++
// (the driver is loaded with dlopen, as in the addon) and runs each case under a deadline, since a
// registration that never returns was seen there. Prints each step as it ends.
//
// Usage: register_probe anon|PATH BYTES ro|rw   (PATH: a file is written there, mapped private, faulted in)
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../native/cuda/cuda_driver.h"

using namespace nuvec::cuda;

static double Now() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <typename F>
static F Load(void* library, const char* name) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    std::printf("missing %s\n", name);
    std::exit(2);
  }
  return reinterpret_cast<F>(symbol);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::printf("usage: register_probe anon|PATH BYTES ro|rw\n");
    return 2;
  }
  std::string kind = argv[1];
  size_t bytes = std::strtoull(argv[2], nullptr, 10);
  bool readOnly = std::string(argv[3]) == "ro";
  void* library = dlopen("libcuda.so.1", RTLD_NOW);
  if (library == nullptr) return 3;
  auto cuInit = Load<CUresult (*)(unsigned)>(library, "cuInit");
  auto cuDeviceGet = Load<CUresult (*)(CUdevice*, int)>(library, "cuDeviceGet");
  auto cuDevicePrimaryCtxRetain = Load<CUresult (*)(CUcontext*, CUdevice)>(library, "cuDevicePrimaryCtxRetain");
  auto cuCtxSetCurrent = Load<CUresult (*)(CUcontext)>(library, "cuCtxSetCurrent");
  auto cuMemHostRegister = Load<CUresult (*)(void*, size_t, unsigned)>(library, "cuMemHostRegister_v2");
  auto cuMemHostUnregister = Load<CUresult (*)(void*)>(library, "cuMemHostUnregister");
  auto cuMemAlloc = Load<CUresult (*)(CUdeviceptr*, size_t)>(library, "cuMemAlloc_v2");
  auto cuMemcpyHtoD = Load<CUresult (*)(CUdeviceptr, const void*, size_t)>(library, "cuMemcpyHtoD_v2");
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (cuInit(0) != 0 || cuDeviceGet(&device, 0) != 0 || cuDevicePrimaryCtxRetain(&context, device) != 0 ||
      cuCtxSetCurrent(context) != 0) {
    std::printf("no device\n");
    return 3;
  }
  void* memory = nullptr;
  double start = Now();
  if (kind == "anon") {
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::memset(memory, 1, bytes);
  } else {
    int fd = open(kind.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    std::vector<char> chunk(1 << 20, 7);
    for (size_t written = 0; written < bytes; written += chunk.size()) {
      if (write(fd, chunk.data(), chunk.size()) < 0) return 4;
    }
    close(fd);
    fd = open(kind.c_str(), O_RDONLY);
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    close(fd);
    volatile unsigned sum = 0;
    for (size_t offset = 0; offset < bytes; offset += 4096) sum += static_cast<unsigned char*>(memory)[offset];
  }
  std::printf("%s %zu B %s: prepared in %.1f ms\n", kind.c_str(), bytes, readOnly ? "read-only" : "read-write",
              Now() - start);
  std::fflush(stdout);
  CUdeviceptr target = 0;
  cuMemAlloc(&target, bytes);
  start = Now();
  cuMemcpyHtoD(target, memory, bytes);
  double pageable = Now() - start;
  std::printf("  copy from pageable: %.1f ms (%.2f GB/s)\n", pageable, bytes / pageable / 1e6);
  std::fflush(stdout);
  start = Now();
  CUresult result =
      cuMemHostRegister(memory, bytes, CU_MEMHOSTREGISTER_DEVICEMAP | (readOnly ? CU_MEMHOSTREGISTER_READ_ONLY : 0));
  std::printf("  cuMemHostRegister: result %d in %.1f ms\n", result, Now() - start);
  std::fflush(stdout);
  if (result == 0) {
    start = Now();
    cuMemcpyHtoD(target, memory, bytes);
    double pinned = Now() - start;
    std::printf("  copy from registered: %.1f ms (%.2f GB/s)\n", pinned, bytes / pinned / 1e6);
    start = Now();
    result = cuMemHostUnregister(memory);
    std::printf("  cuMemHostUnregister: result %d in %.1f ms\n", result, Now() - start);
    std::fflush(stdout);
  }
  if (kind != "anon") unlink(kind.c_str());
  return 0;
}
