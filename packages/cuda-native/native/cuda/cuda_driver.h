// The few entry points of the CUDA driver API this addon uses, declared here and loaded at run time with
// dlopen("libcuda.so.1"), so the addon builds on any Linux without the CUDA toolkit and says why it cannot
// run where there is no driver. The types and values are the driver API's (cuda.h, stable since CUDA 4;
// the _v2 symbols are what cuda.h's macros name since CUDA 3.2 / 4.0).
#ifndef NUVEC_CUDA_DRIVER_H_
#define NUVEC_CUDA_DRIVER_H_

#include <cstddef>
#include <string>

namespace nuvec {
namespace cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
using CUcontext = CUctx_st*;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;

// cuMemHostRegister flags.
constexpr unsigned int CU_MEMHOSTREGISTER_PORTABLE = 0x01;
constexpr unsigned int CU_MEMHOSTREGISTER_DEVICEMAP = 0x02;
constexpr unsigned int CU_MEMHOSTREGISTER_READ_ONLY = 0x08;

// Virtual memory management (cuMemAddressReserve / cuMemCreate / cuMemMap, CUDA 10.2+): the types and values
// of cuda.h that this addon passes.
using CUmemGenericAllocationHandle = unsigned long long;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 0x1;
constexpr int CU_MEM_HANDLE_TYPE_NONE = 0x0;
constexpr int CU_MEM_LOCATION_TYPE_DEVICE = 0x1;
constexpr int CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3;
constexpr int CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0;
struct CUmemLocation {
  int type;
  int id;
};
struct CUmemAllocationProp {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;
};

// Streams, events, modules and launches (cuda.h's types and values this addon passes).
struct CUstream_st;
using CUstream = CUstream_st*;
struct CUevent_st;
using CUevent = CUevent_st*;
struct CUmod_st;
using CUmodule = CUmod_st*;
struct CUfunc_st;
using CUfunction = CUfunc_st*;
using CUhostFn = void (*)(void* userData);
using CUstreamCallback = void (*)(CUstream stream, CUresult status, void* userData);
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr unsigned int CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned int CU_EVENT_DISABLE_TIMING = 0x2;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

struct DriverApi {
  CUresult (*cuInit)(unsigned int flags);
  CUresult (*cuDriverGetVersion)(int* version);
  CUresult (*cuDeviceGetCount)(int* count);
  CUresult (*cuDeviceGet)(CUdevice* device, int ordinal);
  CUresult (*cuDeviceGetName)(char* name, int length, CUdevice device);
  CUresult (*cuDeviceTotalMem)(size_t* bytes, CUdevice device);  // cuDeviceTotalMem_v2
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext* context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);  // cuDevicePrimaryCtxRelease_v2
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxGetCurrent)(CUcontext* context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc)(CUdeviceptr* pointer, size_t bytes);                              // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                                              // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr target, const void* source, size_t bytes);          // _v2
  CUresult (*cuMemcpyDtoH)(void* target, CUdeviceptr source, size_t bytes);                // _v2
  CUresult (*cuMemcpyDtoD)(CUdeviceptr target, CUdeviceptr source, size_t bytes);          // _v2
  CUresult (*cuMemHostRegister)(void* pointer, size_t bytes, unsigned int flags);          // _v2
  CUresult (*cuMemHostUnregister)(void* pointer);
  CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr* device, void* host, unsigned int flags);  // _v2
  CUresult (*cuMemGetInfo)(size_t* free, size_t* total);                                   // _v2
  // Virtual memory management: nullptr where the driver lacks it (the backend then has no address spaces).
  CUresult (*cuMemAddressReserve)(CUdeviceptr* pointer, size_t bytes, size_t alignment, CUdeviceptr address,
                                  unsigned long long flags);
  CUresult (*cuMemAddressFree)(CUdeviceptr pointer, size_t bytes);
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle* handle, size_t bytes, const CUmemAllocationProp* prop,
                          unsigned long long flags);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle handle);
  CUresult (*cuMemMap)(CUdeviceptr pointer, size_t bytes, size_t offset, CUmemGenericAllocationHandle handle,
                       unsigned long long flags);
  CUresult (*cuMemUnmap)(CUdeviceptr pointer, size_t bytes);
  CUresult (*cuMemSetAccess)(CUdeviceptr pointer, size_t bytes, const CUmemAccessDesc* descriptors, size_t count);
  CUresult (*cuMemGetAllocationGranularity)(size_t* granularity, const CUmemAllocationProp* prop, int option);
  // Streams, events, modules, launches and pinned staging (CUDA 10+): nullptr where the driver lacks any of
  // them (the backend then has no streams; hasStreams() says).
  CUresult (*cuDeviceGetAttribute)(int* value, int attribute, CUdevice device);
  CUresult (*cuStreamCreate)(CUstream* stream, unsigned int flags);
  CUresult (*cuStreamDestroy)(CUstream stream);  // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamQuery)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned int flags);
  CUresult (*cuEventCreate)(CUevent* event, unsigned int flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventDestroy)(CUevent event);  // _v2
  CUresult (*cuModuleLoadData)(CUmodule* module, const void* image);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction* function, CUmodule module, const char* name);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned int gridX, unsigned int gridY, unsigned int gridZ,
                             unsigned int blockX, unsigned int blockY, unsigned int blockZ, unsigned int sharedBytes,
                             CUstream stream, void** parameters, void** extra);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr target, const void* source, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuMemcpyDtoHAsync)(void* target, CUdeviceptr source, size_t bytes, CUstream stream);        // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr target, CUdeviceptr source, size_t bytes, CUstream stream);  // _v2
  CUresult (*cuLaunchHostFunc)(CUstream stream, CUhostFn function, void* userData);
  CUresult (*cuMemAllocHost)(void** pointer, size_t bytes);  // _v2
  CUresult (*cuMemFreeHost)(void* pointer);
  // A host callback told the stream's status (a device error reaches it): notify's way where present.
  CUresult (*cuStreamAddCallback)(CUstream stream, CUstreamCallback callback, void* userData, unsigned int flags);
  // CUDA 12.4+: a kernel parameter's offset and size (nullptr on older drivers: declarations are trusted).
  CUresult (*cuFuncGetParamInfo)(CUfunction function, size_t index, size_t* offset, size_t* size);
  // CUDA 12.4+: a module's kernels and their names (nullptr on older drivers: a module cannot list them).
  CUresult (*cuModuleGetFunctionCount)(unsigned int* count, CUmodule module);
  CUresult (*cuModuleEnumerateFunctions)(CUfunction* functions, unsigned int count, CUmodule module);
  CUresult (*cuFuncGetName)(const char** name, CUfunction function);
  CUresult (*cuGetErrorName)(CUresult error, const char** name);
  CUresult (*cuGetErrorString)(CUresult error, const char** text);
};

// Whether the driver has every entry point streams need (cuStreamCreate ... cuMemFreeHost above).
inline bool HasStreams(const DriverApi& api) { return api.cuStreamCreate != nullptr; }

// The driver's entry points, loaded once per process (dlopen) and never unloaded (unloading a driver under
// live contexts is not safe); nullptr and *why where there is no usable driver.
const DriverApi* LoadDriver(std::string* why);
// A result's name ("CUDA_ERROR_OUT_OF_MEMORY"), and its name with the driver's text.
std::string ResultName(const DriverApi& api, CUresult result);
std::string ResultText(const DriverApi& api, CUresult result);

}  // namespace cuda
}  // namespace nuvec

#endif  // NUVEC_CUDA_DRIVER_H_
