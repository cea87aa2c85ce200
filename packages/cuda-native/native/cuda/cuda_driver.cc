// Loading the CUDA driver API at run time (cuda_driver.h): dlopen("libcuda.so.1") and dlsym of each entry
// point this addon uses, so that the addon builds without the CUDA toolkit and says why it cannot run where
// there is no driver; and the driver's names and texts for its results.
#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "cuda_driver.h"

namespace nuvec {
namespace cuda {

// See cuda_driver.h.
const DriverApi* LoadDriver(std::string* why) {
  static DriverApi api;
  static bool loaded = false;
  static std::string failure;
  static bool tried = false;
  if (tried) {
    if (!loaded) *why = failure;
    return loaded ? &api : nullptr;
  }
  tried = true;
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    failure = std::string("the CUDA driver library libcuda.so.1 cannot be loaded (") +
              (error != nullptr ? error : "dlopen failed") + "): no NVIDIA driver on this machine";
    *why = failure;
    return nullptr;
  }
  bool complete = true;
  std::string missing;
  auto bind = [&](auto& slot, const char* name) {
    void* symbol = dlsym(library, name);
    if (symbol == nullptr) {
      complete = false;
      missing += missing.empty() ? name : std::string(", ") + name;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  bind(api.cuInit, "cuInit");
  bind(api.cuDriverGetVersion, "cuDriverGetVersion");
  bind(api.cuDeviceGetCount, "cuDeviceGetCount");
  bind(api.cuDeviceGet, "cuDeviceGet");
  bind(api.cuDeviceGetName, "cuDeviceGetName");
  bind(api.cuDeviceTotalMem, "cuDeviceTotalMem_v2");
  bind(api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(api.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  bind(api.cuCtxSetCurrent, "cuCtxSetCurrent");
  bind(api.cuCtxGetCurrent, "cuCtxGetCurrent");
  bind(api.cuCtxSynchronize, "cuCtxSynchronize");
  bind(api.cuMemAlloc, "cuMemAlloc_v2");
  bind(api.cuMemFree, "cuMemFree_v2");
  bind(api.cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  bind(api.cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  bind(api.cuMemcpyDtoD, "cuMemcpyDtoD_v2");
  bind(api.cuMemHostRegister, "cuMemHostRegister_v2");
  bind(api.cuMemHostUnregister, "cuMemHostUnregister");
  bind(api.cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
  bind(api.cuMemGetInfo, "cuMemGetInfo_v2");
  bind(api.cuGetErrorName, "cuGetErrorName");
  bind(api.cuGetErrorString, "cuGetErrorString");
  // Optional: virtual memory management (expandable segments). Missing entries leave every one of them null.
  {
    bool before = complete;
    std::string missingBefore = missing;
    bind(api.cuMemAddressReserve, "cuMemAddressReserve");
    bind(api.cuMemAddressFree, "cuMemAddressFree");
    bind(api.cuMemCreate, "cuMemCreate");
    bind(api.cuMemRelease, "cuMemRelease");
    bind(api.cuMemMap, "cuMemMap");
    bind(api.cuMemUnmap, "cuMemUnmap");
    bind(api.cuMemSetAccess, "cuMemSetAccess");
    bind(api.cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity");
    if (complete != before) {
      api.cuMemAddressReserve = nullptr;
      api.cuMemAddressFree = nullptr;
      api.cuMemCreate = nullptr;
      api.cuMemRelease = nullptr;
      api.cuMemMap = nullptr;
      api.cuMemUnmap = nullptr;
      api.cuMemSetAccess = nullptr;
      api.cuMemGetAllocationGranularity = nullptr;
    }
    complete = before;
    missing = missingBefore;
  }
  // Optional: streams, events, modules, launches and pinned staging. Missing entries leave every one null.
  {
    bool before = complete;
    std::string missingBefore = missing;
    bind(api.cuDeviceGetAttribute, "cuDeviceGetAttribute");
    bind(api.cuStreamCreate, "cuStreamCreate");
    bind(api.cuStreamDestroy, "cuStreamDestroy_v2");
    bind(api.cuStreamSynchronize, "cuStreamSynchronize");
    bind(api.cuStreamQuery, "cuStreamQuery");
    bind(api.cuStreamWaitEvent, "cuStreamWaitEvent");
    bind(api.cuEventCreate, "cuEventCreate");
    bind(api.cuEventRecord, "cuEventRecord");
    bind(api.cuEventQuery, "cuEventQuery");
    bind(api.cuEventSynchronize, "cuEventSynchronize");
    bind(api.cuEventDestroy, "cuEventDestroy_v2");
    bind(api.cuModuleLoadData, "cuModuleLoadData");
    bind(api.cuModuleUnload, "cuModuleUnload");
    bind(api.cuModuleGetFunction, "cuModuleGetFunction");
    bind(api.cuLaunchKernel, "cuLaunchKernel");
    bind(api.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    bind(api.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    bind(api.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    bind(api.cuLaunchHostFunc, "cuLaunchHostFunc");
    bind(api.cuMemAllocHost, "cuMemAllocHost_v2");
    bind(api.cuMemFreeHost, "cuMemFreeHost");
    if (complete != before) {
      api.cuDeviceGetAttribute = nullptr;
      api.cuStreamCreate = nullptr;
      api.cuStreamDestroy = nullptr;
      api.cuStreamSynchronize = nullptr;
      api.cuStreamQuery = nullptr;
      api.cuStreamWaitEvent = nullptr;
      api.cuEventCreate = nullptr;
      api.cuEventRecord = nullptr;
      api.cuEventQuery = nullptr;
      api.cuEventSynchronize = nullptr;
      api.cuEventDestroy = nullptr;
      api.cuModuleLoadData = nullptr;
      api.cuModuleUnload = nullptr;
      api.cuModuleGetFunction = nullptr;
      api.cuLaunchKernel = nullptr;
      api.cuMemcpyHtoDAsync = nullptr;
      api.cuMemcpyDtoHAsync = nullptr;
      api.cuMemcpyDtoDAsync = nullptr;
      api.cuLaunchHostFunc = nullptr;
      api.cuMemAllocHost = nullptr;
      api.cuMemFreeHost = nullptr;
    }
    complete = before;
    missing = missingBefore;
  }
  // Optional on their own (cuStreamAddCallback: CUDA 5 to 13 at least, deprecated in favour of cuLaunchHostFunc,
  // which tells no status; cuFuncGetParamInfo: CUDA 12.4+).
  api.cuStreamAddCallback =
      reinterpret_cast<decltype(api.cuStreamAddCallback)>(dlsym(library, "cuStreamAddCallback"));
  api.cuFuncGetParamInfo =
      reinterpret_cast<decltype(api.cuFuncGetParamInfo)>(dlsym(library, "cuFuncGetParamInfo"));
  api.cuModuleGetFunctionCount =
      reinterpret_cast<decltype(api.cuModuleGetFunctionCount)>(dlsym(library, "cuModuleGetFunctionCount"));
  api.cuModuleEnumerateFunctions =
      reinterpret_cast<decltype(api.cuModuleEnumerateFunctions)>(dlsym(library, "cuModuleEnumerateFunctions"));
  api.cuFuncGetName = reinterpret_cast<decltype(api.cuFuncGetName)>(dlsym(library, "cuFuncGetName"));
  if (!complete) {
    failure = "the CUDA driver libcuda.so.1 lacks " + missing + " (a driver older than CUDA 6?)";
    *why = failure;
    return nullptr;
  }
  loaded = true;
  return &api;
}

std::string ResultName(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) return "CUresult " + std::to_string(result);
  return name;
}

std::string ResultText(const DriverApi& api, CUresult result) {
  const char* text = nullptr;
  if (api.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) return ResultName(api, result);
  return std::string(ResultName(api, result)) + ": " + text;
}

}  // namespace cuda
}  // namespace nuvec
