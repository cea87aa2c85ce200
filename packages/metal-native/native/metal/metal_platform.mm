// The Metal layer (macOS, Apple silicon): only the calls into Metal. Everything JavaScript sees — handles,
// external ArrayBuffers, detaching, errors — is native/napi/ over core/, shared with the host and CUDA
// layers and tested on Linux; mapping a file is core/posix.cc, also shared. Built with ARC (binding.gyp); every body in @autoreleasepool.
// Residency sets are macOS 15 API, gated with @available so the addon still loads on macOS 14 (without them).
//
// Verified here only by `clang -fsyntax-only` against the declaration stub in check/ (see README).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include <errno.h>
#include <sys/mman.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/platform.h"
#include "core/streams.h"

namespace nuvec {

// The streams and modules of the Metal layer (metal_streams.mm).
std::unique_ptr<StreamPlatform> CreateMetalStreamPlatform(id<MTLDevice> device, id<MTLCommandQueue> queue);

namespace {

// Shared storage (CPU and GPU see the same memory on Apple silicon) and no hazard tracking (MLX's choice:
// the allocator hands buffers out, the runtime orders its own work).
constexpr MTLResourceOptions kBufferOptions = MTLResourceStorageModeShared | MTLResourceHazardTrackingModeUntracked;

// What Metal on Apple silicon allows when iogpu.rsrc_limit cannot be read (MLX's fallback).
constexpr uint64_t kDefaultResourceLimit = 499000;

std::string Utf8(NSString* text) {
  const char* bytes = text != nil ? [text UTF8String] : nullptr;
  return bytes != nullptr ? std::string(bytes) : std::string();
}

// An NSError as one of the typed failures: POSIX errors keep their errno, the rest are allocation failures
// (Metal reports running out of resources that way).
Failure FailureFrom(const char* call, NSError* error) {
  std::string message = std::string(call) + " failed: " + (error != nil ? Utf8(error.localizedDescription) : "no error");
  if (error != nil && [error.domain isEqualToString:NSPOSIXErrorDomain]) {
    return Failure::System(call, static_cast<int>(error.code), "", message);
  }
  if (error != nil) message += " (" + Utf8(error.domain) + " " + std::to_string(static_cast<long>(error.code)) + ")";
  return Failure::Allocation(message);
}

uint64_t SysctlNumber(const char* name, uint64_t fallback) {
  uint64_t value64 = 0;
  size_t size = sizeof(value64);
  if (sysctlbyname(name, &value64, &size, nullptr, 0) != 0) return fallback;
  if (size == sizeof(uint32_t)) {
    uint32_t value32 = 0;
    std::memcpy(&value32, &value64, sizeof(value32));
    value64 = value32;
  }
  return value64 > 0 ? value64 : fallback;
}

class MetalAllocation final : public Allocation {
 public:
  // freed: counted here for a buffer (our last strong reference: AddonState has removed it from every set
  // and the sets from the queue by then); null for a mapped file, whose deallocator block counts the munmap.
  MetalAllocation(id<MTLBuffer> buffer, size_t length, std::shared_ptr<FreedCounters> freed)
      : buffer_(buffer),
        data_([buffer contents]),
        length_(length),
        allocatedSize_([buffer allocatedSize]),
        freed_(std::move(freed)) {}
  ~MetalAllocation() override {
    @autoreleasepool {
      buffer_ = nil;
    }
    if (freed_) freed_->buffers += 1;
  }
  void* data() const override { return data_; }
  size_t length() const override { return length_; }
  size_t allocatedSize() const override { return allocatedSize_; }
  id<MTLBuffer> buffer() const { return buffer_; }
  // For nativeHandle(): the buffer object itself (not retained for the caller) and its GPU address.
  std::vector<NativeField> nativeFields() const override {
    uint64_t metalBuffer = static_cast<uint64_t>(reinterpret_cast<uintptr_t>((__bridge void*)buffer_));
    return {{"metalBuffer", metalBuffer}, {"gpuAddress", static_cast<uint64_t>(buffer_.gpuAddress)}};
  }

 private:
  id<MTLBuffer> buffer_;
  void* data_;
  size_t length_;
  size_t allocatedSize_;
  std::shared_ptr<FreedCounters> freed_;
};

class API_AVAILABLE(macos(15.0)) MetalResidencySet final : public ResidencySet {
 public:
  // registry: the platform's list of live sets, for the wired-bytes counter.
  MetalResidencySet(id<MTLResidencySet> set, std::unordered_set<ResidencySet*>* registry,
                    std::shared_ptr<FreedCounters> freed)
      : set_(set), registry_(registry), freed_(std::move(freed)) {
    registry_->insert(this);
  }
  // AddonState has removed every member and committed (the set retains none of them); here the set leaves
  // the command queue it was attached to, which would otherwise keep it (and, had it members, their
  // buffers) alive after we let go of it.
  ~MetalResidencySet() override {
    registry_->erase(this);
    @autoreleasepool {
      // A runtime's queue (Device.open's metal.commandQueue) outlives the set: take the set off it first.
      for (id<MTLCommandQueue> queue : runtimeQueues_) [queue removeResidencySet:set_];
      runtimeQueues_.clear();
      [set_ endResidency];
      [set_ removeAllAllocations];
      [set_ commit];
      if (queue_ != nil) [queue_ removeResidencySet:set_];
      queue_ = nil;
      set_ = nil;
    }
    freed_->residencySets += 1;
  }
  // Attached to `queue` (addResidencySet:): removed from it when the set goes.
  void attachTo(id<MTLCommandQueue> queue) {
    if (queue_ == queue) return;
    if (queue_ != nil) [queue_ removeResidencySet:set_];
    [queue addResidencySet:set_];
    queue_ = queue;
  }

  void requestResidency() override {
    @autoreleasepool {
      [set_ requestResidency];
      requested_ = true;
    }
  }
  void endResidency() override {
    @autoreleasepool {
      [set_ endResidency];
      requested_ = false;
    }
  }
  // Metal does not report wiring failures: the system pages what does not fit.
  uint64_t wiringFailures() const override { return 0; }
  std::string lastWiringError() const override { return std::string(); }

  bool requested() const { return requested_; }
  id<MTLResidencySet> set() const { return set_; }
  // Remembers a runtime's queue it was attached to (retained until the set goes, to detach from it).
  void attachedToRuntimeQueue(id<MTLCommandQueue> queue) { runtimeQueues_.push_back(queue); }

 protected:
  void onAdd(Allocation* allocation) override {
    @autoreleasepool {
      [set_ addAllocation:static_cast<MetalAllocation*>(allocation)->buffer()];
    }
  }
  void onRemove(Allocation* allocation) override {
    @autoreleasepool {
      [set_ removeAllocation:static_cast<MetalAllocation*>(allocation)->buffer()];
    }
  }
  // Metal applies its own staged changes, and a standing request covers them.
  void onCommit(const std::vector<Allocation*>&, const std::vector<Allocation*>&) override {
    @autoreleasepool {
      [set_ commit];
    }
  }

 private:
  id<MTLResidencySet> set_;
  id<MTLCommandQueue> queue_ = nil;
  std::unordered_set<ResidencySet*>* registry_;
  std::shared_ptr<FreedCounters> freed_;
  bool requested_ = false;
  std::vector<id<MTLCommandQueue>> runtimeQueues_;
};

class MetalPlatform final : public Platform {
 public:
  MetalPlatform(id<MTLDevice> device, id<MTLCommandQueue> queue)
      : device_(device), queue_(queue), streams_(CreateMetalStreamPlatform(device, queue)) {
    @autoreleasepool {
      long pageSize = sysconf(_SC_PAGESIZE);
      pageSize_ = pageSize > 0 ? static_cast<size_t>(pageSize) : 16384;
      facts_.name = Utf8(device.name);
      facts_.platform = "metal";
      facts_.pageSize = pageSize_;
      facts_.memorySize = SysctlNumber("hw.memsize", 0);
      facts_.recommendedMaxWorkingSetSize = device.recommendedMaxWorkingSetSize;
      facts_.maxBufferLength = device.maxBufferLength;
      facts_.resourceLimit = SysctlNumber("iogpu.rsrc_limit", kDefaultResourceLimit);
      facts_.supportsResidencySets = false;
      if (@available(macOS 15, *)) facts_.supportsResidencySets = [device supportsFamily:MTLGPUFamilyMetal3];
    }
  }

  const DeviceFacts& facts() const override { return facts_; }
  StreamPlatform* streams(std::string*) override { return streams_.get(); }

  std::unique_ptr<Allocation> newBuffer(size_t bytes, Failure* failure) override {
    @autoreleasepool {
      id<MTLBuffer> buffer = [device_ newBufferWithLength:bytes options:kBufferOptions];
      if (buffer == nil) {
        *failure = Failure::Allocation("Metal could not allocate a buffer of " + std::to_string(bytes) + " bytes");
        return nullptr;
      }
      return std::make_unique<MetalAllocation>(buffer, bytes, freed);
    }
  }

  std::unique_ptr<Allocation> mapFile(const std::string& path, Failure* failure) override {
    @autoreleasepool {
      FileMapping mapping = MapWholeFile(path, pageSize_, failure);
      if (failure->failed()) return nullptr;
      // mmap gives a page-aligned address and MapWholeFile whole pages: what no-copy buffers require. The
      // buffer owns the mapping from here; Metal calls the block when the buffer goes.
      std::shared_ptr<FreedCounters> freedCounters = freed;
      id<MTLBuffer> buffer = [device_ newBufferWithBytesNoCopy:mapping.address
                                                        length:mapping.mappedLength
                                                       options:kBufferOptions
                                                   deallocator:^(void* pointer, NSUInteger length) {
                                                     if (munmap(pointer, length) == 0) freedCounters->mappings += 1;
                                                   }];
      if (buffer == nil) {
        UnmapFile(mapping);
        *failure = Failure::Allocation("Metal could not wrap the mapping of " + path + " (" +
                                       std::to_string(mapping.mappedLength) + " bytes) in a buffer");
        return nullptr;
      }
      return std::make_unique<MetalAllocation>(buffer, mapping.length, nullptr);
    }
  }

  std::unique_ptr<ResidencySet> newResidencySet(Failure* failure) override {
    @autoreleasepool {
      if (!facts_.supportsResidencySets) return nullptr;
      if (@available(macOS 15, *)) {
        MTLResidencySetDescriptor* descriptor = [[MTLResidencySetDescriptor alloc] init];
        descriptor.label = @"nuvec";
        NSError* error = nil;
        id<MTLResidencySet> set = [device_ newResidencySetWithDescriptor:descriptor error:&error];
        if (set == nil) {
          *failure = FailureFrom("newResidencySetWithDescriptor:error:", error);
          return nullptr;
        }
        return std::make_unique<MetalResidencySet>(set, &sets_, freed);
      }
      return nullptr;
    }
  }

  // commandQueue: 0 for nuvec's own queue, else the runtime's queue (Device.open's metal.commandQueue), so
  // that its command buffers see the set, as MLX attaches its set to the queue its kernels run on.
  void attachResidencySet(ResidencySet* set, uint64_t commandQueue, Failure*) override {
    @autoreleasepool {
      if (@available(macOS 15, *)) {
        auto* metalSet = static_cast<MetalResidencySet*>(set);
        if (commandQueue == 0) {
          metalSet->attachTo(queue_);  // the private queue: removed from it when the set goes
          return;
        }
        id<MTLCommandQueue> queue = (__bridge id<MTLCommandQueue>)reinterpret_cast<void*>(commandQueue);
        [queue addResidencySet:metalSet->set()];
        metalSet->attachedToRuntimeQueue(queue);
      }
    }
  }

  // The same GPU: the same object, or the same registry entry (another MTLDevice object of this GPU).
  bool checkMetalDevice(uint64_t pointer, Failure* failure) override {
    @autoreleasepool {
      id<MTLDevice> device = (__bridge id<MTLDevice>)reinterpret_cast<void*>(pointer);
      if (device == device_ || device.registryID == device_.registryID) return true;
      *failure = Failure::Argument("the runtime's MTLDevice (" + Utf8(device.name) +
                                   ") is not the GPU nuvec's buffers come from (" + Utf8(device_.name) + ")");
      return false;
    }
  }

  uint64_t metalResidencySet(ResidencySet* set) const override {
    if (@available(macOS 15, *)) {
      id<MTLResidencySet> metalSet = static_cast<MetalResidencySet*>(set)->set();
      return static_cast<uint64_t>(reinterpret_cast<uintptr_t>((__bridge void*)metalSet));
    }
    return 0;
  }

  // Bytes covered by standing residency requests (Metal does not say what it actually made resident).
  WiringCounters wiringCounters() const override {
    WiringCounters counters;
    if (@available(macOS 15, *)) {
      for (ResidencySet* set : sets_) {
        auto* metalSet = static_cast<MetalResidencySet*>(set);
        if (metalSet->requested()) counters.wiredBytes += metalSet->allocatedSize();
      }
    }
    return counters;
  }

  std::string lastWiringError() const override { return std::string(); }

 private:
  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  std::unique_ptr<StreamPlatform> streams_;
  size_t pageSize_ = 16384;
  DeviceFacts facts_;
  std::unordered_set<ResidencySet*> sets_;
};

}  // namespace

std::unique_ptr<Platform> CreatePlatform(Failure* failure) {
  @autoreleasepool {
    id<MTLDevice> device = MTLCreateSystemDefaultDevice();
    if (device == nil) {
      *failure = Failure::Allocation("no Metal device: MTLCreateSystemDefaultDevice returned nil");
      return nullptr;
    }
    id<MTLCommandQueue> queue = [device newCommandQueue];
    if (queue == nil) {
      *failure = Failure::Allocation("Metal could not make a command queue");
      return nullptr;
    }
    return std::make_unique<MetalPlatform>(device, queue);
  }
}

}  // namespace nuvec
