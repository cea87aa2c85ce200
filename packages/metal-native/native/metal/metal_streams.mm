// The Metal layer's streams (core/streams.h): a worker-thread stream (core/worker_stream.h) per stream, each
// launch a command buffer of the platform's one MTLCommandQueue, committed and waited for by the stream's
// worker before its next operation, so a stream's work runs in order on untracked, shared-storage buffers;
// writes, reads and copies are the worker's memcpy on that shared memory between them. Modules are Metal
// Shading Language source compiled with newLibraryWithSource:options:error:; a kernel is a compute pipeline
// of one function. Metal cannot say a function's parameter kinds: module.kernel(name, parameters) must
// declare them, and argument i is bound at index i ([[buffer(i)]]: buffers with setBuffer:offset:atIndex:,
// scalars with setBytes:length:atIndex:); sharedBytes is threadgroup memory at index 0. The grid is in
// threadgroups (dispatchThreadgroups:threadsPerThreadgroup:), as CUDA's is in blocks.
//
// Verified here only by `clang -fsyntax-only` against the declaration stub in check/ (see README): never built
// nor run.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/worker_stream.h"

namespace nuvec {
namespace {

std::string Text(NSString* text) {
  const char* bytes = text != nil ? [text UTF8String] : nullptr;
  return bytes != nullptr ? std::string(bytes) : std::string();
}

// One bound argument of a launch: a buffer at its byte offset, or a scalar's bits.
struct BoundArgument {
  id<MTLBuffer> buffer = nil;
  NSUInteger offset = 0;
  uint64_t bits = 0;
  NSUInteger bytes = 0;  // a scalar's size; 0 for a buffer
};

class MetalKernel final : public WorkerKernel {
 public:
  MetalKernel(id<MTLCommandQueue> queue, id<MTLComputePipelineState> pipeline, std::string name,
              std::vector<ParameterKind> parameters)
      : queue_(queue), pipeline_(pipeline), name_(std::move(name)), parameters_(std::move(parameters)) {}
  const std::string& name() const override { return name_; }
  const std::vector<ParameterKind>& parameters() const override { return parameters_; }

  bool Prepare(const LaunchShape& shape, const std::vector<KernelArgument>& args, std::function<bool(Failure*)>* run,
               Failure* failure) const override {
    if (args.size() != parameters_.size()) {
      *failure = Failure::Argument("the kernel " + name_ + " takes " + std::to_string(parameters_.size()) +
                                   " arguments, got " + std::to_string(args.size()));
      return false;
    }
    uint64_t threads = static_cast<uint64_t>(shape.block[0]) * shape.block[1] * shape.block[2];
    if (threads > pipeline_.maxTotalThreadsPerThreadgroup) {
      *failure = Failure::Argument("the kernel " + name_ + " takes at most " +
                                   std::to_string(pipeline_.maxTotalThreadsPerThreadgroup) +
                                   " threads a threadgroup, the block has " + std::to_string(threads));
      return false;
    }
    std::vector<BoundArgument> bound(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArgument& arg = args[i];
      if (arg.kind != parameters_[i]) {
        *failure = Failure::Argument("argument " + std::to_string(i) + " of " + name_ + " is of another kind");
        return false;
      }
      if (arg.kind != ParameterKind::kBuffer) {
        bound[i].bits = arg.bits;
        bound[i].bytes = ParameterBytes(arg.kind);
        continue;
      }
      // The MTLBuffer behind the allocation (a range's is its segment's), and where the argument's byte is in it.
      uint64_t pointer = 0;
      for (const NativeField& field : arg.allocation->nativeFields()) {
        if (std::strcmp(field.name, "metalBuffer") == 0) pointer = field.value;
      }
      if (pointer == 0) {
        *failure = Failure::Argument("argument " + std::to_string(i) + " of " + name_ + " has no Metal buffer");
        return false;
      }
      id<MTLBuffer> buffer = (__bridge id<MTLBuffer>)reinterpret_cast<void*>(static_cast<uintptr_t>(pointer));
      bound[i].buffer = buffer;
      bound[i].offset = static_cast<NSUInteger>(static_cast<char*>(arg.allocation->data()) -
                                                static_cast<char*>([buffer contents])) +
                        arg.offset;
    }
    id<MTLCommandQueue> queue = queue_;
    id<MTLComputePipelineState> pipeline = pipeline_;
    std::string name = name_;
    LaunchShape launch = shape;
    *run = [queue, pipeline, name, launch, bound](Failure* failed) -> bool {
      @autoreleasepool {
        id<MTLCommandBuffer> commands = [queue commandBuffer];
        if (commands == nil) {
          *failed = Failure::Allocation("Metal gave no command buffer for " + name);
          return false;
        }
        id<MTLComputeCommandEncoder> encoder = [commands computeCommandEncoder];
        [encoder setComputePipelineState:pipeline];
        for (size_t i = 0; i < bound.size(); ++i) {
          const BoundArgument& arg = bound[i];
          if (arg.bytes == 0) {
            [encoder setBuffer:arg.buffer offset:arg.offset atIndex:i];
          } else {
            uint64_t bits = arg.bits;  // little-endian: a 4-byte scalar is the low half
            [encoder setBytes:&bits length:arg.bytes atIndex:i];
          }
        }
        if (launch.sharedBytes > 0) [encoder setThreadgroupMemoryLength:launch.sharedBytes atIndex:0];
        [encoder dispatchThreadgroups:MTLSizeMake(launch.grid[0], launch.grid[1], launch.grid[2])
                threadsPerThreadgroup:MTLSizeMake(launch.block[0], launch.block[1], launch.block[2])];
        [encoder endEncoding];
        [commands commit];
        [commands waitUntilCompleted];
        if (commands.status == MTLCommandBufferStatusError) {
          NSError* error = commands.error;
          *failed = Failure::Driver("kernel " + name, error != nil ? static_cast<int>(error.code) : 0,
                                    "MTLCommandBufferError",
                                    "the Metal kernel " + name + " failed: " +
                                        (error != nil ? Text(error.localizedDescription) : "no error"));
          return false;
        }
        return true;
      }
    };
    return true;
  }

 private:
  id<MTLCommandQueue> queue_;
  id<MTLComputePipelineState> pipeline_;
  std::string name_;
  std::vector<ParameterKind> parameters_;
};

class MetalModule final : public Module {
 public:
  MetalModule(id<MTLDevice> device, id<MTLCommandQueue> queue, id<MTLLibrary> library)
      : device_(device), queue_(queue), library_(library) {}

  Kernel* kernel(const std::string& name, const std::vector<ParameterKind>* declared, Failure* failure) override {
    @autoreleasepool {
      id<MTLFunction> function = [library_ newFunctionWithName:[NSString stringWithUTF8String:name.c_str()]];
      if (function == nil) {
        *failure = Failure::Format("the module has no kernel named \"" + name + "\"", "");
        return nullptr;
      }
      if (declared == nullptr) {
        *failure = Failure::Argument("Metal cannot say the parameters of " + name +
                                     ": declare them (module.kernel(name, parameters))");
        return nullptr;
      }
      for (const auto& kernel : kernels_) {
        if (kernel->name() == name && kernel->parameters() == *declared) return kernel.get();
      }
      NSError* error = nil;
      id<MTLComputePipelineState> pipeline = [device_ newComputePipelineStateWithFunction:function error:&error];
      if (pipeline == nil) {
        std::string log = error != nil ? Text(error.localizedDescription) : "no error";
        *failure = Failure::Format("the kernel " + name + " has no compute pipeline: " + log, log);
        return nullptr;
      }
      kernels_.push_back(std::make_unique<MetalKernel>(queue_, pipeline, name, *declared));
      return kernels_.back().get();
    }
  }

 private:
  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  id<MTLLibrary> library_;
  std::vector<std::unique_ptr<MetalKernel>> kernels_;
};

class MetalStreamPlatform final : public StreamPlatform {
 public:
  MetalStreamPlatform(id<MTLDevice> device, id<MTLCommandQueue> queue) : device_(device), queue_(queue) {}

  std::unique_ptr<Stream> newStream(Failure* failure) override {
    try {
      return std::make_unique<WorkerStream>(++lastStream_);
    } catch (const std::system_error& error) {
      *failure = Failure::System("pthread_create", error.code().value(), "",
                                 std::string("a stream's worker thread could not start: ") + error.what());
      return nullptr;
    }
  }

  std::unique_ptr<Module> loadModule(const ModuleSource& source, Failure* failure) override {
    @autoreleasepool {
      if (source.kind != ModuleSource::Kind::kMetalSource) {
        *failure = Failure::Format("the Metal backend compiles Metal Shading Language only (the source's metal entry)", "");
        return nullptr;
      }
      NSError* error = nil;
      MTLCompileOptions* options = [[MTLCompileOptions alloc] init];
      id<MTLLibrary> library = [device_ newLibraryWithSource:[NSString stringWithUTF8String:source.text.c_str()]
                                                     options:options
                                                       error:&error];
      if (library == nil) {
        std::string log = error != nil ? Text(error.localizedDescription) : "no error";
        *failure = Failure::Format("the Metal source does not compile: " + log, log);
        return nullptr;
      }
      return std::make_unique<MetalModule>(device_, queue_, library);
    }
  }

 private:
  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  std::atomic<uint64_t> lastStream_{0};
};

}  // namespace

std::unique_ptr<StreamPlatform> CreateMetalStreamPlatform(id<MTLDevice> device, id<MTLCommandQueue> queue) {
  return std::make_unique<MetalStreamPlatform>(device, queue);
}

}  // namespace nuvec
