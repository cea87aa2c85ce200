// Address spaces of device memory: what an expandable segment is made of on CUDA. A space is a range of
// device addresses (cuMemAddressReserve) that holds no memory until whole granules of it are backed by
// physical allocations (cuMemCreate + cuMemMap + cuMemSetAccess); each mapping is given back on its own
// (cuMemUnmap + cuMemRelease) or with the space. Apart from cuda_platform.cc because these are the driver's
// virtual memory management calls and their books, beside the plain buffers, files and wiring there; each
// function gets the space's base, length and mappings.
#include "cuda_spaces.h"

#include <iterator>
#include <string>

namespace nuvec {

using namespace cuda;

bool DriverRefused(const DriverApi& api, const char* call, CUresult result, Failure* failure) {
  *failure = Failure::Driver(call, result, ResultName(api, result),
                             std::string(call) + " failed: " + ResultText(api, result));
  return false;
}

CUmemAllocationProp DeviceMemoryProperties(CUdevice device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

size_t DeviceGranularity(const DriverApi& api, CUdevice device) {
  if (api.cuMemGetAllocationGranularity == nullptr) return 0;
  CUmemAllocationProp prop = DeviceMemoryProperties(device);
  size_t granularity = 0;
  if (api.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS) {
    return granularity;
  }
  return 0;
}

bool ReserveSpace(const CudaDriverContext& driver, size_t granularity, size_t bytes, CUdeviceptr* base,
                  Failure* failure) {
  if (granularity == 0) {
    *failure = Failure::Argument("this CUDA driver has no virtual memory management (cuMemAddressReserve)");
    return false;
  }
  if (bytes % granularity != 0) {
    *failure = Failure::Argument("an address space is whole granules of " + std::to_string(granularity) +
                                 " bytes; got " + std::to_string(bytes));
    return false;
  }
  CUresult bound = driver.bind();
  if (bound != CUDA_SUCCESS) return DriverRefused(*driver.api, "cuCtxSetCurrent", bound, failure);
  CUresult result = driver.api->cuMemAddressReserve(base, bytes, granularity, 0, 0);
  if (result != CUDA_SUCCESS) {
    *failure = Failure::Allocation("cuMemAddressReserve of " + std::to_string(bytes) +
                                   " bytes failed: " + ResultText(*driver.api, result));
    return false;
  }
  return true;
}

bool CheckMapRange(bool isSpace, size_t spaceLength, size_t granularity, size_t offset, size_t length,
                   Failure* failure) {
  if (!isSpace) {
    *failure = Failure::Argument("the buffer is not an address space (reserveAddressSpace)");
    return false;
  }
  if (length == 0 || offset % granularity != 0 || length % granularity != 0 || offset > spaceLength ||
      length > spaceLength - offset) {
    *failure = Failure::Argument("[" + std::to_string(offset) + ", +" + std::to_string(length) +
                                 ") is not whole granules of " + std::to_string(granularity) +
                                 " bytes inside the " + std::to_string(spaceLength) + "-byte space");
    return false;
  }
  return true;
}

bool MapSpaceRange(const CudaDriverContext& driver, CUdeviceptr base, CudaSpaceMappings* mapped, size_t offset,
                   size_t length, Failure* failure) {
  const DriverApi& api = *driver.api;
  auto next = mapped->lower_bound(offset);
  if ((next != mapped->end() && next->first < offset + length) ||
      (next != mapped->begin() && std::prev(next)->first + std::prev(next)->second.size > offset)) {
    *failure = Failure::Argument("mapMemory(): [" + std::to_string(offset) + ", " +
                                 std::to_string(offset + length) + ") overlaps memory already mapped");
    return false;
  }
  CUresult bound = driver.bind();
  if (bound != CUDA_SUCCESS) return DriverRefused(api, "cuCtxSetCurrent", bound, failure);
  CUmemAllocationProp prop = DeviceMemoryProperties(driver.device);
  CUmemGenericAllocationHandle handle = 0;
  CUresult result = api.cuMemCreate(&handle, length, &prop, 0);
  if (result != CUDA_SUCCESS) {
    *failure = Failure::Allocation("cuMemCreate of " + std::to_string(length) +
                                   " bytes failed: " + ResultText(api, result));
    return false;
  }
  CUdeviceptr at = base + offset;
  result = api.cuMemMap(at, length, 0, handle, 0);
  if (result != CUDA_SUCCESS) {
    api.cuMemRelease(handle);
    return DriverRefused(api, "cuMemMap", result, failure);
  }
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  result = api.cuMemSetAccess(at, length, &access, 1);
  if (result != CUDA_SUCCESS) {
    api.cuMemUnmap(at, length);
    api.cuMemRelease(handle);
    return DriverRefused(api, "cuMemSetAccess", result, failure);
  }
  mapped->emplace(offset, CudaMapped{handle, length});
  return true;
}

bool UnmapSpaceRange(const CudaDriverContext& driver, CUdeviceptr base, CudaSpaceMappings* mapped, size_t offset,
                     size_t length, Failure* failure) {
  const DriverApi& api = *driver.api;
  auto found = mapped->find(offset);
  if (found == mapped->end() || found->second.size != length) {
    *failure = Failure::Argument("unmapMemory(): [" + std::to_string(offset) + ", " +
                                 std::to_string(offset + length) + ") is not a range mapMemory mapped");
    return false;
  }
  CUmemGenericAllocationHandle handle = found->second.handle;
  mapped->erase(found);
  CUresult bound = driver.bind();
  if (bound != CUDA_SUCCESS) {
    DriverRefused(api, "cuCtxSetCurrent", bound, failure);
    // Still mapped: back on the books, for another try or the space's release.
    mapped->emplace(offset, CudaMapped{handle, length});
    return false;
  }
  // Kernels still reading the range must be done before its memory goes (cudaFree synchronizes too).
  api.cuCtxSynchronize();
  CUresult unmapped = api.cuMemUnmap(base + offset, length);
  CUresult released = api.cuMemRelease(handle);
  if (unmapped != CUDA_SUCCESS) return DriverRefused(api, "cuMemUnmap", unmapped, failure);
  if (released != CUDA_SUCCESS) return DriverRefused(api, "cuMemRelease", released, failure);
  return true;
}

bool FreeSpace(const CudaDriverContext& driver, CUdeviceptr base, size_t length, CudaSpaceMappings* mapped) {
  const DriverApi& api = *driver.api;
  // Teardown goes on whatever bind() says: a refused call below is then counted as not freed.
  driver.bind();
  if (!mapped->empty()) api.cuCtxSynchronize();
  for (auto& [offset, mapping] : *mapped) {
    api.cuMemUnmap(base + offset, mapping.size);
    api.cuMemRelease(mapping.handle);
  }
  mapped->clear();
  return api.cuMemAddressFree(base, length) == CUDA_SUCCESS;
}

bool SpaceSpanBacked(const CudaSpaceMappings& mapped, size_t offset, size_t length) {
  auto at = mapped.upper_bound(offset);
  if (at == mapped.begin()) return false;
  --at;  // the mapping that starts at or before offset
  size_t end = at->first + at->second.size;
  if (offset > end || (length > 0 && offset == end)) return false;
  size_t want = offset + length;
  while (end < want) {
    ++at;
    if (at == mapped.end() || at->first != end) return false;
    end += at->second.size;
  }
  return true;
}

bool SpanRefused(size_t offset, size_t bytes, Failure* failure) {
  *failure = Failure::Argument("[" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                               ") of the address space is not mapped memory (mapMemory)");
  return false;
}

}  // namespace nuvec
