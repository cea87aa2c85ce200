// The CUDA layer's place in the shared platform interface (@nuvec/native-core's native/core/platform.h):
// a Platform with the few driver calls only this addon's entry file (binding.cc) uses.
#ifndef NUVEC_CUDA_PLATFORM_H_
#define NUVEC_CUDA_PLATFORM_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/platform.h"

namespace nuvec {

class CudaPlatformApi : public Platform {
 public:
  // The device's free and total memory (cuMemGetInfo). false and a failure when the driver refuses.
  virtual bool memoryInfo(uint64_t* free, uint64_t* total, Failure* failure) = 0;
  // Copies bytes between device addresses on the copy engine (cuMemcpyDtoD), e.g. from a wired mapping.
  virtual bool copyDevice(uint64_t target, uint64_t source, size_t bytes, Failure* failure) = 0;
  // Nanoseconds per cuMemAlloc + cuMemFree pair of `bytes`, timed in C++ over `count` pairs (the benchmark's
  // baseline without N-API). Negative when the driver refuses.
  virtual double timeDriverAllocFree(size_t bytes, uint32_t count, Failure* failure) = 0;

  // Address spaces (expandable segments): the unit of mapMemory offsets and lengths (the driver's minimum
  // granularity for device memory), or 0 where the driver has no virtual memory management.
  virtual size_t mapGranularity() const = 0;
  // While set, newBuffer reserves address space (cuMemAddressReserve) instead of allocating memory: the
  // binding's reserveAddressSpace makes its buffer handle through the shared constructor this way.
  virtual void reserveNextBuffer(bool reserve) = 0;
  // Backs [offset, offset + length) of an address space with new device memory (cuMemCreate + cuMemMap +
  // cuMemSetAccess: one physical allocation). false and a failure when the driver refuses or the range is
  // not whole granules of the space, or overlaps a mapped one.
  virtual bool mapMemory(Allocation* space, size_t offset, size_t length, Failure* failure) = 0;
  // Unmaps and frees exactly one earlier mapMemory range. false and a failure for any other range.
  virtual bool unmapMemory(Allocation* space, size_t offset, size_t length, Failure* failure) = 0;
  // Makes no context current on the calling thread (tests: what a library popping its own context does).
  virtual void clearCurrentContext() = 0;
  // streams(why) (platform.h): the device's streams and modules (cuda_streams.h), made at the first call
  // and kept with the platform; nullptr and why where the driver has no streams.
};

// Whether the device can address [offset, offset + length) of `allocation` (one this platform made): all of
// a buffer; of an address space (reserveAddressSpace) only memory mapMemory backed, adjacent mappings
// counted as one run. A length of 0 asks for `offset` inside a run or at its end (a launch's pointer). Stream
// operations and copies refuse spans it denies, so no work touches unmapped addresses (a fault there would
// end the context).
bool CudaSpanBacked(const Allocation* allocation, size_t offset, size_t length);

// Opens the device `ordinal`: loads the driver (dlopen), initialises it, retains the primary context. nullptr
// and a failure (kind kNone, message saying why) where there is no driver or no such device.
std::unique_ptr<CudaPlatformApi> CreateCudaPlatform(int ordinal, Failure* failure);

// The driver's version (cuDriverGetVersion, e.g. 13000 for CUDA 13.0), or 0 where there is no driver.
int DriverVersion();

}  // namespace nuvec

#endif  // NUVEC_CUDA_PLATFORM_H_
