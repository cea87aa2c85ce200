// The CUDA layer: device memory from the driver API, loaded at run time (cuda_driver.h).
//
//  - Buffers are device memory (cuMemAlloc). They have no CPU address: the binding refuses contents() and
//    moves bytes with cuMemcpyHtoD / cuMemcpyDtoH. Their memory is not zeroed (as cudaMalloc, MLX, PyTorch).
//  - Mapped files are mapped as on the host (core/posix.cc: private, copy-on-write); the CPU reads them.
//  - Residency sets keep MLX's semantics. Device memory is resident by nature: wiring a buffer only counts it.
//    Wiring a mapped file page-locks it and registers it with the driver (cuMemHostRegister, read-only and
//    device-mapped), so the GPU can read the weights through a device pointer and copies from it run at
//    pinned speed; unwiring unregisters it. Read-only matters: registering a private writable mapping for
//    writing would make the kernel copy every page of the file into anonymous memory.
//  - Address spaces (expandable segments) reserve device addresses and map physical allocations into them:
//    cuda_spaces.cc.
//  - Calls run in the device's primary context (the one the CUDA runtime, PyTorch included, uses), made
//    current on whichever thread calls.
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/wiring_residency_set.h"
#include "cuda_driver.h"
#include "cuda_platform.h"
#include "cuda_spaces.h"
#include "cuda_streams.h"

namespace nuvec {
namespace {

using namespace cuda;

// MLX's CUDA allocator works in 16 KiB pages; the allocator's size classes (256-byte steps below a page,
// whole pages beyond) are the same as on Metal, so the device asks for exactly those sizes.
constexpr size_t kPageSize = 16 * 1024;
constexpr size_t kSmallGranule = 256;
// CUDA sets no limit on the number of allocations; MLX's resource limit is a Metal fact.
constexpr uint64_t kResourceLimit = 2147483647;

size_t RoundUp(size_t value, size_t granule) { return (value + granule - 1) / granule * granule; }

class CudaPlatform;

class CudaAllocation final : public Allocation {
 public:
  // Device memory.
  CudaAllocation(CudaPlatform* platform, CUdeviceptr device, size_t length, size_t allocatedSize)
      : platform_(platform), device_(device), length_(length), allocatedSize_(allocatedSize) {}
  // A mapped file.
  CudaAllocation(CudaPlatform* platform, const FileMapping& mapping, size_t registerLength)
      : platform_(platform),
        mapping_(mapping),
        length_(mapping.length),
        allocatedSize_(mapping.mappedLength),
        registerLength_(registerLength) {}
  ~CudaAllocation() override;

  bool isFile() const { return mapping_.address != nullptr; }
  void* data() const override { return mapping_.address; }
  size_t length() const override { return length_; }
  size_t allocatedSize() const override { return allocatedSize_; }
  uint64_t devicePointer() const override { return isFile() ? registeredDevice_ : device_; }
  bool copyIn(size_t offset, const void* source, size_t bytes, Failure* failure) override;
  bool copyOut(size_t offset, void* target, size_t bytes, Failure* failure) const override;
  // nativeHandle(): the device address, for a runtime's kernels (a mapped file's only while it is wired).
  std::vector<NativeField> nativeFields() const override {
    if (devicePointer() == 0) return {};
    return {{"devicePointer", devicePointer()}};
  }

  // An address space (cuMemAddressReserve): device_ is its base, length_ its size; its memory is the
  // mappings below, by offset: each one physical allocation mapped at [offset, offset + size).
  bool space = false;
  CudaSpaceMappings mapped;

  // Sets that have it wired (registration does not nest: register at 0 → 1, unregister at 1 → 0).
  uint32_t wireCount = 0;
  // The registered mapping's device address while it is registered.
  CUdeviceptr registeredDevice_ = 0;
  CudaPlatform* platform_;
  CUdeviceptr device_ = 0;
  FileMapping mapping_;
  size_t length_;
  size_t allocatedSize_;
  // Bytes registered for a file: its length in system pages (pages past the end of the file cannot be
  // page-locked; the mapping itself is whole 16 KiB pages).
  size_t registerLength_ = 0;
};

class CudaPlatform final : public CudaPlatformApi, public Wiring {
 public:
  CudaPlatform(const DriverApi* api, CUdevice device, CUcontext context, const DeviceFacts& facts)
      : api_(api), device_(device), context_(context), facts_(facts) {
    long systemPage = sysconf(_SC_PAGESIZE);
    systemPageSize_ = systemPage > 0 ? static_cast<size_t>(systemPage) : 4096;
    granularity_ = DeviceGranularity(*api_, device_);
  }

  ~CudaPlatform() override {
    // Every allocation and set is gone by now (the binding's teardown frees them first).
    api_->cuDevicePrimaryCtxRelease(device_);
  }

  const DriverApi& api() const { return *api_; }

  // The driver, the device and its primary context, for the address-space calls (cuda_spaces.h).
  CudaDriverContext driver() const { return {api_, device_, context_}; }

  // Makes the primary context current on the calling thread when it is not (CudaDriverContext::bind).
  CUresult bind() const { return driver().bind(); }

  // bind(), with the driver's refusal as a failure.
  bool bound(Failure* failure) const {
    CUresult result = bind();
    return result == CUDA_SUCCESS || Refused("cuCtxSetCurrent", result, failure);
  }

  const DeviceFacts& facts() const override { return facts_; }

  std::unique_ptr<Allocation> newBuffer(size_t bytes, Failure* failure) override {
    if (reserveNext_) return reserveAddressSpace(bytes, failure);
    size_t allocatedSize = bytes > kPageSize ? RoundUp(bytes, kPageSize) : RoundUp(bytes, kSmallGranule);
    if (!bound(failure)) return nullptr;
    CUdeviceptr pointer = 0;
    CUresult result = api_->cuMemAlloc(&pointer, allocatedSize);
    if (result != CUDA_SUCCESS) {
      *failure = Failure::Allocation("cuMemAlloc of " + std::to_string(allocatedSize) +
                                     " bytes failed: " + ResultText(*api_, result));
      return nullptr;
    }
    return std::make_unique<CudaAllocation>(this, pointer, bytes, allocatedSize);
  }

  std::unique_ptr<Allocation> mapFile(const std::string& path, Failure* failure) override {
    FileMapping mapping = MapWholeFile(path, kPageSize, failure);
    if (failure->failed()) return nullptr;
    return std::make_unique<CudaAllocation>(this, mapping, RoundUp(mapping.length, systemPageSize_));
  }

  std::unique_ptr<ResidencySet> newResidencySet(Failure*) override {
    return std::make_unique<WiringResidencySet>(this, freed);
  }

  // attachResidencySet: Platform's default (no command queue to attach to; a Metal queue is refused).

  WiringCounters wiringCounters() const override { return counters_; }
  std::string lastWiringError() const override { return lastWiringError_; }

  bool memoryInfo(uint64_t* free, uint64_t* total, Failure* failure) override {
    if (!bound(failure)) return false;
    size_t freeBytes = 0;
    size_t totalBytes = 0;
    CUresult result = api_->cuMemGetInfo(&freeBytes, &totalBytes);
    if (result != CUDA_SUCCESS) return Refused("cuMemGetInfo", result, failure);
    *free = freeBytes;
    *total = totalBytes;
    return true;
  }

  bool copyDevice(uint64_t target, uint64_t source, size_t bytes, Failure* failure) override {
    if (!bound(failure)) return false;
    CUresult result = api_->cuMemcpyDtoD(target, source, bytes);
    if (result != CUDA_SUCCESS) return Refused("cuMemcpyDtoD", result, failure);
    return true;
  }

  double timeDriverAllocFree(size_t bytes, uint32_t count, Failure* failure) override {
    if (!bound(failure)) return -1;
    auto start = std::chrono::steady_clock::now();
    for (uint32_t index = 0; index < count; index += 1) {
      CUdeviceptr pointer = 0;
      CUresult result = api_->cuMemAlloc(&pointer, bytes);
      if (result != CUDA_SUCCESS) {
        Refused("cuMemAlloc", result, failure);
        return -1;
      }
      api_->cuMemFree(pointer);
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    return std::chrono::duration<double, std::nano>(elapsed).count() / (count > 0 ? count : 1);
  }

  size_t mapGranularity() const override { return granularity_; }
  void clearCurrentContext() override { api_->cuCtxSetCurrent(nullptr); }
  void reserveNextBuffer(bool reserve) override { reserveNext_ = reserve; }
  StreamPlatform* streams(std::string* why) override {
    if (streams_ == nullptr) {
      Failure failure;
      streams_ = CreateCudaStreamPlatform(api_, device_, context_, &failure);
      if (streams_ == nullptr) *why = failure.message;
    }
    return streams_.get();
  }

  // An address space of `bytes` (whole granules), nothing mapped: allocatedSize 0 (it holds no memory).
  std::unique_ptr<Allocation> reserveAddressSpace(size_t bytes, Failure* failure) {
    CUdeviceptr base = 0;
    if (!ReserveSpace(driver(), granularity_, bytes, &base, failure)) return nullptr;
    auto allocation = std::make_unique<CudaAllocation>(this, base, bytes, 0);
    allocation->space = true;
    return allocation;
  }

  bool mapMemory(Allocation* target, size_t offset, size_t length, Failure* failure) override {
    auto* space = static_cast<CudaAllocation*>(target);
    if (!CheckMapRange(space->space, space->length_, granularity_, offset, length, failure)) return false;
    return MapSpaceRange(driver(), space->device_, &space->mapped, offset, length, failure);
  }

  bool unmapMemory(Allocation* target, size_t offset, size_t length, Failure* failure) override {
    auto* space = static_cast<CudaAllocation*>(target);
    if (!CheckMapRange(space->space, space->length_, granularity_, offset, length, failure)) return false;
    return UnmapSpaceRange(driver(), space->device_, &space->mapped, offset, length, failure);
  }

  // Unmaps and frees every mapping of a space, then the address range (its destructor).
  void releaseSpace(CudaAllocation* space) {
    if (FreeSpace(driver(), space->device_, space->length_, &space->mapped)) freed->buffers += 1;
  }

  bool Refused(const char* call, CUresult result, Failure* failure) const {
    return DriverRefused(*api_, call, result, failure);
  }

  // CUDA_SUCCESS, or the driver's refusal of the registration.
  CUresult wire(CudaAllocation* allocation) {
    if (allocation->wireCount > 0) {
      allocation->wireCount += 1;
      return CUDA_SUCCESS;
    }
    if (allocation->isFile()) {
      CUresult bindResult = bind();
      if (bindResult != CUDA_SUCCESS) {
        counters_.wiringFailures += 1;
        return bindResult;
      }
      CUresult result = api_->cuMemHostRegister(allocation->data(), allocation->registerLength_,
                                                CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY);
      if (result != CUDA_SUCCESS) {
        counters_.wiringFailures += 1;
        return result;
      }
      CUdeviceptr device = 0;
      result = api_->cuMemHostGetDevicePointer(&device, allocation->data(), 0);
      if (result != CUDA_SUCCESS) {
        api_->cuMemHostUnregister(allocation->data());
        counters_.wiringFailures += 1;
        return result;
      }
      allocation->registeredDevice_ = device;
    }
    // Device memory is resident by nature: wiring it only counts it.
    allocation->wireCount = 1;
    counters_.wiredBytes += allocation->allocatedSize();
    return CUDA_SUCCESS;
  }

  void unwire(CudaAllocation* allocation) {
    if (allocation->wireCount == 0) return;
    if (--allocation->wireCount > 0) return;
    if (allocation->isFile()) {
      bind();
      api_->cuMemHostUnregister(allocation->data());
      allocation->registeredDevice_ = 0;
    }
    counters_.wiredBytes -= allocation->allocatedSize();
  }

  // Wiring, for its residency sets (core/wiring_residency_set.h).
  int wireOne(Allocation* allocation) override { return wire(static_cast<CudaAllocation*>(allocation)); }
  void unwireOne(Allocation* allocation) override { unwire(static_cast<CudaAllocation*>(allocation)); }
  std::string wiringAdvice(Allocation* allocation, int result) override {
    return wiringAdvice(static_cast<CudaAllocation*>(allocation)->registerLength_, result);
  }

  std::string wiringAdvice(size_t bytes, CUresult result) {
    std::ostringstream advice;
    advice << "cuMemHostRegister of " << bytes << " bytes (read-only, device-mapped) failed ("
           << ResultText(*api_, result)
           << "). The mapping stays usable from the CPU, and copies from it run at pageable speed.";
    lastWiringError_ = advice.str();
    return lastWiringError_;
  }

 private:
  const DriverApi* api_;
  CUdevice device_;
  CUcontext context_;
  DeviceFacts facts_;
  size_t systemPageSize_ = 4096;
  size_t granularity_ = 0;
  bool reserveNext_ = false;
  WiringCounters counters_;
  std::string lastWiringError_;
  std::unique_ptr<StreamPlatform> streams_;
};

CudaAllocation::~CudaAllocation() {
  // Sets let go of an allocation (unwiring it) before it is destroyed; unregister anyway if one did not.
  if (isFile()) {
    if (registeredDevice_ != 0) {
      platform_->bind();
      platform_->api().cuMemHostUnregister(mapping_.address);
    }
    UnmapFile(mapping_);
    platform_->freed->mappings += 1;
  } else if (space) {
    platform_->releaseSpace(this);
  } else if (device_ != 0) {
    platform_->bind();
    // Counted only when the driver took it back (the contract's leak check compares with release()).
    if (platform_->api().cuMemFree(device_) == CUDA_SUCCESS) platform_->freed->buffers += 1;
  }
}

bool CudaAllocation::copyIn(size_t offset, const void* source, size_t bytes, Failure* failure) {
  if (isFile()) return Allocation::copyIn(offset, source, bytes, failure);
  if (bytes == 0) return true;
  if (space && !SpaceSpanBacked(mapped, offset, bytes)) return SpanRefused(offset, bytes, failure);
  if (!platform_->bound(failure)) return false;
  CUresult result = platform_->api().cuMemcpyHtoD(device_ + offset, source, bytes);
  return result == CUDA_SUCCESS || platform_->Refused("cuMemcpyHtoD", result, failure);
}

bool CudaAllocation::copyOut(size_t offset, void* target, size_t bytes, Failure* failure) const {
  if (isFile()) return Allocation::copyOut(offset, target, bytes, failure);
  if (bytes == 0) return true;
  if (space && !SpaceSpanBacked(mapped, offset, bytes)) return SpanRefused(offset, bytes, failure);
  if (!platform_->bound(failure)) return false;
  CUresult result = platform_->api().cuMemcpyDtoH(target, device_ + offset, bytes);
  return result == CUDA_SUCCESS || platform_->Refused("cuMemcpyDtoH", result, failure);
}

}  // namespace

bool CudaSpanBacked(const Allocation* allocation, size_t offset, size_t length) {
  const auto* cuda = static_cast<const CudaAllocation*>(allocation);
  return !cuda->space || SpaceSpanBacked(cuda->mapped, offset, length);
}

std::unique_ptr<CudaPlatformApi> CreateCudaPlatform(int ordinal, Failure* failure) {
  std::string why;
  const DriverApi* api = LoadDriver(&why);
  if (api == nullptr) {
    failure->message = why;
    return nullptr;
  }
  auto refuse = [&](const std::string& what, CUresult result) -> std::unique_ptr<CudaPlatformApi> {
    failure->message = what + " (" + ResultText(*api, result) + ")";
    return nullptr;
  };
  CUresult result = api->cuInit(0);
  if (result != CUDA_SUCCESS) return refuse("the CUDA driver did not initialise: no usable NVIDIA GPU", result);
  int count = 0;
  result = api->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS) return refuse("cuDeviceGetCount failed", result);
  if (ordinal >= count) {
    failure->message = "there is no CUDA device " + std::to_string(ordinal) + ": this machine has " +
                       std::to_string(count);
    return nullptr;
  }
  CUdevice device = 0;
  result = api->cuDeviceGet(&device, ordinal);
  if (result != CUDA_SUCCESS) return refuse("cuDeviceGet(" + std::to_string(ordinal) + ") failed", result);
  char name[256] = {0};
  result = api->cuDeviceGetName(name, sizeof(name) - 1, device);
  if (result != CUDA_SUCCESS) return refuse("cuDeviceGetName failed", result);
  size_t total = 0;
  result = api->cuDeviceTotalMem(&total, device);
  if (result != CUDA_SUCCESS) return refuse("cuDeviceTotalMem failed", result);
  CUcontext context = nullptr;
  result = api->cuDevicePrimaryCtxRetain(&context, device);
  if (result != CUDA_SUCCESS) return refuse("cuDevicePrimaryCtxRetain failed", result);
  result = api->cuCtxSetCurrent(context);
  if (result != CUDA_SUCCESS) {
    api->cuDevicePrimaryCtxRelease(device);
    return refuse("cuCtxSetCurrent failed", result);
  }
  DeviceFacts facts;
  facts.name = name;
  facts.platform = "cuda";
  facts.memorySize = total;
  // MLX's CUDA backend takes the device's whole memory as the working set (and 0.95 of it as the memory
  // limit, which is what the allocator's default min(1.5·W, 0.95·M) gives when W = M).
  facts.recommendedMaxWorkingSetSize = total;
  facts.maxBufferLength = total / kPageSize * kPageSize;
  facts.resourceLimit = kResourceLimit;
  facts.pageSize = kPageSize;
  facts.supportsResidencySets = true;
  facts.hostVisible = false;
  facts.ordinal = ordinal;
  return std::make_unique<CudaPlatform>(api, device, context, facts);
}

int DriverVersion() {
  std::string why;
  const DriverApi* api = LoadDriver(&why);
  int version = 0;
  if (api == nullptr || api->cuDriverGetVersion(&version) != CUDA_SUCCESS) return 0;
  return version;
}

}  // namespace nuvec
