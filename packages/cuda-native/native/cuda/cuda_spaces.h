// Address spaces of device memory (cuda_spaces.cc): the driver calls behind an expandable segment —
// reserving a range of device addresses, backing whole granules of it with physical allocations, giving them
// back — and the books of what is mapped where. Used by cuda_platform.cc, whose address-space buffers
// (CudaAllocation with `space`) hold a CudaSpaceMappings.
#ifndef NUVEC_CUDA_SPACES_H_
#define NUVEC_CUDA_SPACES_H_

#include <cstddef>
#include <map>

#include "core/platform.h"
#include "cuda_driver.h"

namespace nuvec {

// The driver, the device and its primary context, as the calls below need them.
struct CudaDriverContext {
  const cuda::DriverApi* api;
  cuda::CUdevice device;
  cuda::CUcontext context;

  // Makes the primary context current on the calling thread when it is not. Asked of the driver each time
  // (cuCtxGetCurrent reads a thread-local of its own, no round trip): another library on this thread, or
  // another device's backend, may have made its own context current since. CUDA_SUCCESS or the refusal.
  cuda::CUresult bind() const {
    cuda::CUcontext current = nullptr;
    if (api->cuCtxGetCurrent(&current) == cuda::CUDA_SUCCESS && current == context) {
      return cuda::CUDA_SUCCESS;
    }
    return api->cuCtxSetCurrent(context);
  }
};

// The driver's refusal of `call` as a failure; always false.
bool DriverRefused(const cuda::DriverApi& api, const char* call, cuda::CUresult result, Failure* failure);

// One physical allocation mapped into an address space.
struct CudaMapped {
  cuda::CUmemGenericAllocationHandle handle;
  size_t size;
};
// The mappings of one address space, by offset: each one physical allocation at [offset, offset + size).
using CudaSpaceMappings = std::map<size_t, CudaMapped>;

// The properties of device memory on `device` (pinned, no shareable handle).
cuda::CUmemAllocationProp DeviceMemoryProperties(cuda::CUdevice device);
// The driver's granularity for device memory (0: no virtual memory management).
size_t DeviceGranularity(const cuda::DriverApi& api, cuda::CUdevice device);

// Reserves `bytes` of address space (whole granules of `granularity`) at *base. false and a failure when
// the driver has no virtual memory management, the size is not whole granules or the driver refuses.
bool ReserveSpace(const CudaDriverContext& driver, size_t granularity, size_t bytes, cuda::CUdeviceptr* base,
                  Failure* failure);
// Whether [offset, offset + length) is whole granules inside a space of `spaceLength` bytes (`isSpace`: the
// buffer is an address space at all); false and a failure when not.
bool CheckMapRange(bool isSpace, size_t spaceLength, size_t granularity, size_t offset, size_t length,
                   Failure* failure);
// Backs [offset, offset + length) of the space at `base` with one new physical allocation (cuMemCreate +
// cuMemMap + cuMemSetAccess), recorded in `mapped`. false and a failure when it overlaps a mapped range or
// the driver refuses (nothing recorded, nothing left allocated).
bool MapSpaceRange(const CudaDriverContext& driver, cuda::CUdeviceptr base, CudaSpaceMappings* mapped,
                   size_t offset, size_t length, Failure* failure);
// Unmaps and frees exactly one earlier MapSpaceRange range, after the kernels still reading it ran. false
// and a failure for any other range or a refusal.
bool UnmapSpaceRange(const CudaDriverContext& driver, cuda::CUdeviceptr base, CudaSpaceMappings* mapped,
                     size_t offset, size_t length, Failure* failure);
// Unmaps and frees every mapping of the space at `base`, then its address range; whether the driver took
// the range back.
bool FreeSpace(const CudaDriverContext& driver, cuda::CUdeviceptr base, size_t length, CudaSpaceMappings* mapped);

// Whether [offset, offset + length) of a space lies in adjacent mappings (length 0: offset in one or at a
// run's end).
bool SpaceSpanBacked(const CudaSpaceMappings& mapped, size_t offset, size_t length);
// The refusal of a copy over memory of a space that is not mapped; always false.
bool SpanRefused(size_t offset, size_t bytes, Failure* failure);

}  // namespace nuvec

#endif  // NUVEC_CUDA_SPACES_H_
