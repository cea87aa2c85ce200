// Streams and events on CUDA (cuda_streams.h). Every call makes the device's primary context current first
// (as the platform's memory calls do), enqueues, and returns; refusals enqueue nothing.
//
//  - write: the bytes go into pinned staging blocks (cuda_staging.h), a chunk at a time, and from there with
//    cuMemcpyHtoDAsync; an event after each chunk's copy frees its block for reuse.
//  - read: cuMemcpyDtoHAsync into staging blocks, a chunk at a time, each followed by a host function
//    (cuLaunchHostFunc) that copies the chunk into the caller's target, in stream order, so an event or
//    notify after the read sees the bytes there.
//  - notify: a stream callback calling `done` (cuStreamAddCallback, which is told a device error that came
//    before it, so `done` gets that failure; cuLaunchHostFunc where the driver lacks it).
#include "cuda_streams.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cuda_modules.h"
#include "cuda_platform.h"
#include "cuda_staging.h"

namespace nuvec {

using namespace cuda;

CUresult CudaDeviceContext::bind() const {
  CUcontext current = nullptr;
  if (api->cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context) return CUDA_SUCCESS;
  return api->cuCtxSetCurrent(context);
}

bool CudaDeviceContext::bound(Failure* failure) const {
  CUresult result = bind();
  return result == CUDA_SUCCESS || refused("cuCtxSetCurrent", result, failure);
}

bool CudaDeviceContext::refused(const char* call, CUresult result, Failure* failure) const {
  *failure = Failure::Driver(call, result, ResultName(*api, result), std::string(call) + " failed: " + ResultText(*api, result));
  return false;
}

namespace {

class CudaEvent final : public Event {
 public:
  CudaEvent(const CudaDeviceContext& context, CUevent event) : context_(context), event_(event) {}
  ~CudaEvent() override {
    // The driver frees a pending event's resources once it completes.
    context_.bind();
    context_.api->cuEventDestroy(event_);
  }
  bool query(Failure* failure) override {
    if (!context_.bound(failure)) return false;
    CUresult result = context_.api->cuEventQuery(event_);
    if (result == CUDA_SUCCESS) return true;
    if (result != CUDA_ERROR_NOT_READY) context_.refused("cuEventQuery", result, failure);
    return false;
  }
  bool synchronize(Failure* failure) override {
    if (!context_.bound(failure)) return false;
    CUresult result = context_.api->cuEventSynchronize(event_);
    return result == CUDA_SUCCESS || context_.refused("cuEventSynchronize", result, failure);
  }
  CUevent event() const { return event_; }

 private:
  CudaDeviceContext context_;
  CUevent event_;
};

// A read's copy-out, run by a host function on the driver's callback thread (no driver calls there).
struct CopyOut {
  const void* from;
  void* to;
  size_t bytes;
};

void RunCopyOut(void* data) {
  auto* copy = static_cast<CopyOut*>(data);
  std::memcpy(copy->to, copy->from, copy->bytes);
  delete copy;
}

// What notify's callback needs: `done`, and the driver for the name of a failure it is told.
struct Notification {
  std::function<void(const Failure&)> done;
  const DriverApi* api;
};

void RunDone(void* data) {
  auto* notification = static_cast<Notification*>(data);
  notification->done(Failure());
  delete notification;
}

// cuStreamAddCallback's form: a device error before it (a kernel's illegal access, say) arrives as `status`.
void RunDoneWithStatus(CUstream, CUresult status, void* data) {
  auto* notification = static_cast<Notification*>(data);
  if (status == CUDA_SUCCESS) {
    notification->done(Failure());
  } else {
    // cuGetErrorName and cuGetErrorString only read the driver's tables: no context, safe here.
    notification->done(Failure::Driver("cuStreamAddCallback", status, ResultName(*notification->api, status),
                                       "the stream's work failed: " + ResultText(*notification->api, status)));
  }
  delete notification;
}

class CudaStream final : public Stream {
 public:
  CudaStream(const CudaDeviceContext& context, CUstream stream)
      : context_(context), stream_(stream), staging_(std::make_unique<StagingPool>(context)) {}

  ~CudaStream() override {
    const DriverApi& api = *context_.api;
    context_.bind();
    // Its work runs to the end first: staging blocks and host functions' targets are in use until then.
    api.cuStreamSynchronize(stream_);
    staging_.reset();
    api.cuStreamDestroy(stream_);
  }

  bool launch(Kernel* kernel, const LaunchShape& shape, const std::vector<KernelArgument>& args,
              Failure* failure) override {
    auto* cudaKernel = static_cast<CudaKernel*>(kernel);
    const std::vector<ParameterKind>& parameters = cudaKernel->parameters();
    if (args.size() != parameters.size()) {
      *failure = Failure::Argument("kernel \"" + cudaKernel->name() + "\" takes " + std::to_string(parameters.size()) +
                                   " arguments, got " + std::to_string(args.size()));
      return false;
    }
    std::vector<uint64_t> values(args.size());
    std::vector<void*> pointers(args.size());
    for (size_t index = 0; index < args.size(); index += 1) {
      const KernelArgument& argument = args[index];
      if (argument.kind != parameters[index]) {
        *failure = Failure::Argument("argument " + std::to_string(index) + " of kernel \"" + cudaKernel->name() +
                                     "\" is not of its declared kind");
        return false;
      }
      if (argument.kind == ParameterKind::kBuffer) {
        uint64_t device = argument.allocation != nullptr ? argument.allocation->devicePointer() : 0;
        if (device == 0) {
          *failure = Failure::Argument("argument " + std::to_string(index) +
                                       " has no device address (a mapped file is one only while it is wired)");
          return false;
        }
        if (!CudaSpanBacked(argument.allocation, argument.offset, 0)) {
          *failure = Failure::Argument("argument " + std::to_string(index) + " at offset " +
                                       std::to_string(argument.offset) +
                                       " of an address space is not in mapped memory (mapMemory)");
          return false;
        }
        values[index] = device + argument.offset;
      } else {
        values[index] = argument.bits;  // a 4-byte kind in the low half: the driver reads 4 bytes (little-endian)
      }
      pointers[index] = &values[index];
    }
    if (!context_.bound(failure)) return false;
    CUresult result = context_.api->cuLaunchKernel(
        cudaKernel->function(), shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
        shape.block[2], shape.sharedBytes, stream_, pointers.empty() ? nullptr : pointers.data(), nullptr);
    if (result == CUDA_ERROR_INVALID_VALUE) {
      *failure = Failure::Argument("cuLaunchKernel refused the launch of \"" + cudaKernel->name() +
                                   "\" (" + ResultText(*context_.api, result) +
                                   "): a block of more threads, or more shared memory, than the kernel can have");
      return false;
    }
    return result == CUDA_SUCCESS || context_.refused("cuLaunchKernel", result, failure);
  }

  bool write(Allocation* target, size_t offset, std::vector<uint8_t> bytes, Failure* failure) override {
    if (bytes.empty()) return true;
    uint64_t device = 0;
    if (!deviceOf(target, "the target", offset, bytes.size(), &device, failure) || !context_.bound(failure)) return false;
    return stageIn(device + offset, bytes.data(), bytes.size(), failure);
  }

  bool read(Allocation* source, size_t offset, size_t length, uint8_t* target, Failure* failure) override {
    if (length == 0) return true;
    const DriverApi& api = *context_.api;
    uint64_t device = source->devicePointer();
    if (device == 0 && source->data() != nullptr) {
      // A mapped file the device cannot address: its bytes are the CPU's, copied once the stream got here.
      if (!context_.bound(failure)) return false;
      auto* copy = new CopyOut{static_cast<const uint8_t*>(source->data()) + offset, target, length};
      CUresult result = api.cuLaunchHostFunc(stream_, RunCopyOut, copy);
      if (result != CUDA_SUCCESS) {
        delete copy;
        return context_.refused("cuLaunchHostFunc", result, failure);
      }
      return true;
    }
    if (!deviceOf(source, "the source", offset, length, &device, failure) || !context_.bound(failure)) return false;
    for (size_t done = 0; done < length; done += kStagingChunk) {
      size_t chunk = std::min(kStagingChunk, length - done);
      StagingBlock* block = staging_->acquire(chunk, failure);
      if (block == nullptr) return false;
      CUresult result = api.cuMemcpyDtoHAsync(block->host, device + offset + done, chunk, stream_);
      if (result != CUDA_SUCCESS) return context_.refused("cuMemcpyDtoHAsync", result, failure);
      auto* copy = new CopyOut{block->host, target + done, chunk};
      result = api.cuLaunchHostFunc(stream_, RunCopyOut, copy);
      if (result != CUDA_SUCCESS) {
        delete copy;
        // The DtoH is queued and the block is its target: it stays in use until the stream passes it.
        staging_->settle(block, stream_, failure);
        return context_.refused("cuLaunchHostFunc", result, failure);
      }
      if (!staging_->settle(block, stream_, failure)) return false;
    }
    return true;
  }

  bool copy(Allocation* target, size_t targetOffset, Allocation* source, size_t sourceOffset, size_t length,
            Failure* failure) override {
    if (length == 0) return true;
    uint64_t to = 0;
    if (!deviceOf(target, "the target", targetOffset, length, &to, failure) || !context_.bound(failure)) return false;
    const DriverApi& api = *context_.api;
    uint64_t from = source->devicePointer();
    if (from == 0 && source->data() != nullptr) {
      // A mapped file that is not registered: its pages, read now, through pinned staging.
      return stageIn(to + targetOffset, static_cast<const uint8_t*>(source->data()) + sourceOffset, length, failure);
    }
    if (!deviceOf(source, "the source", sourceOffset, length, &from, failure)) return false;
    CUresult result = api.cuMemcpyDtoDAsync(to + targetOffset, from + sourceOffset, length, stream_);
    return result == CUDA_SUCCESS || context_.refused("cuMemcpyDtoDAsync", result, failure);
  }

  std::unique_ptr<Event> record(Failure* failure) override {
    if (!context_.bound(failure)) return nullptr;
    const DriverApi& api = *context_.api;
    CUevent event = nullptr;
    CUresult result = api.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
    if (result != CUDA_SUCCESS) {
      context_.refused("cuEventCreate", result, failure);
      return nullptr;
    }
    result = api.cuEventRecord(event, stream_);
    if (result != CUDA_SUCCESS) {
      api.cuEventDestroy(event);
      context_.refused("cuEventRecord", result, failure);
      return nullptr;
    }
    return std::make_unique<CudaEvent>(context_, event);
  }

  bool wait(Event* event, Failure* failure) override {
    if (!context_.bound(failure)) return false;
    CUresult result = context_.api->cuStreamWaitEvent(stream_, static_cast<CudaEvent*>(event)->event(), 0);
    return result == CUDA_SUCCESS || context_.refused("cuStreamWaitEvent", result, failure);
  }

  bool notify(std::function<void(const Failure&)> done, Failure* failure) override {
    if (!context_.bound(failure)) return false;
    auto* notification = new Notification{std::move(done), context_.api};
    const DriverApi& api = *context_.api;
    bool withStatus = api.cuStreamAddCallback != nullptr;
    CUresult result = withStatus ? api.cuStreamAddCallback(stream_, RunDoneWithStatus, notification, 0)
                                 : api.cuLaunchHostFunc(stream_, RunDone, notification);
    if (result != CUDA_SUCCESS) {
      delete notification;
      return context_.refused(withStatus ? "cuStreamAddCallback" : "cuLaunchHostFunc", result, failure);
    }
    return true;
  }

  bool synchronize(Failure* failure) override {
    if (!context_.bound(failure)) return false;
    CUresult result = context_.api->cuStreamSynchronize(stream_);
    return result == CUDA_SUCCESS || context_.refused("cuStreamSynchronize", result, failure);
  }

 private:
  // Copies `length` bytes from `source` (read now) to `device` through staging blocks, a chunk at a time.
  bool stageIn(uint64_t device, const uint8_t* source, size_t length, Failure* failure) {
    const DriverApi& api = *context_.api;
    for (size_t done = 0; done < length; done += kStagingChunk) {
      size_t chunk = std::min(kStagingChunk, length - done);
      StagingBlock* block = staging_->acquire(chunk, failure);
      if (block == nullptr) return false;
      std::memcpy(block->host, source + done, chunk);
      CUresult result = api.cuMemcpyHtoDAsync(device + done, block->host, chunk, stream_);
      if (result != CUDA_SUCCESS) return context_.refused("cuMemcpyHtoDAsync", result, failure);
      if (!staging_->settle(block, stream_, failure)) return false;
    }
    return true;
  }

  // The device address of device memory or a wired mapped file; an argument failure for memory without one,
  // or for a span of an address space that is not mapped memory.
  bool deviceOf(Allocation* allocation, const char* what, size_t offset, size_t length, uint64_t* device,
                Failure* failure) const {
    *device = allocation->devicePointer();
    if (*device == 0) {
      *failure = Failure::Argument(std::string(what) + " has no device address (a mapped file is one only while it is wired)");
      return false;
    }
    if (!CudaSpanBacked(allocation, offset, length)) {
      *failure = Failure::Argument(std::string(what) + "'s [" + std::to_string(offset) + ", +" +
                                   std::to_string(length) + ") of an address space is not mapped memory (mapMemory)");
      return false;
    }
    return true;
  }

  CudaDeviceContext context_;
  CUstream stream_;
  std::unique_ptr<StagingPool> staging_;
};

class CudaStreamPlatform final : public StreamPlatform {
 public:
  explicit CudaStreamPlatform(const CudaDeviceContext& context) : context_(context) {}

  std::unique_ptr<Stream> newStream(Failure* failure) override {
    if (!context_.bound(failure)) return nullptr;
    CUstream stream = nullptr;
    CUresult result = context_.api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (result != CUDA_SUCCESS) {
      context_.refused("cuStreamCreate", result, failure);
      return nullptr;
    }
    return std::make_unique<CudaStream>(context_, stream);
  }

  std::unique_ptr<Module> loadModule(const ModuleSource& source, Failure* failure) override {
    return LoadCudaModule(context_, source, failure);
  }

 private:
  CudaDeviceContext context_;
};

}  // namespace

std::unique_ptr<StreamPlatform> CreateCudaStreamPlatform(const DriverApi* api, CUdevice device, CUcontext context,
                                                         Failure* failure) {
  if (!HasStreams(*api)) {
    *failure = Failure::Driver("dlsym", 0, "CUDA_ERROR_NOT_SUPPORTED",
                               "this CUDA driver lacks streams' entry points (cuLaunchHostFunc: CUDA 10 or later)");
    return nullptr;
  }
  CudaDeviceContext deviceContext;
  deviceContext.api = api;
  deviceContext.device = device;
  deviceContext.context = context;
  CUresult result = api->cuDeviceGetAttribute(&deviceContext.major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (result == CUDA_SUCCESS) {
    result = api->cuDeviceGetAttribute(&deviceContext.minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  }
  if (result != CUDA_SUCCESS) {
    deviceContext.refused("cuDeviceGetAttribute", result, failure);
    return nullptr;
  }
  return std::make_unique<CudaStreamPlatform>(deviceContext);
}

}  // namespace nuvec
