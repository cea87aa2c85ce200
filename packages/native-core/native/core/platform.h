// The platform interface: what the shared N-API layer (native/napi/) needs from a system. Three layers
// implement it, each in its backend package: host (Linux/POSIX: mmap, mlock) and Metal (macOS) in
// @nuvec/metal-native, CUDA (device memory) in @nuvec/cuda-native; only the calls into the OS, Metal or the
// driver differ between them. Everything that touches JavaScript (object wrapping, external ArrayBuffers,
// detaching, typed errors, instance data) lives in native/napi/ and is the same code on all three, so it is
// tested on Linux. A layer's own facts and calls are virtuals with defaults here: a layer overrides what it
// has (Metal its buffer objects and queues, CUDA its device pointers and copies).
#ifndef NUVEC_PLATFORM_H_
#define NUVEC_PLATFORM_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nuvec {

// Why a platform call failed. The binding turns it into a JS error whose `code` the TypeScript layer maps to
// a class of errors.ts.
struct Failure {
  enum class Kind { kNone, kArgument, kSystem, kAllocation, kFormat };
  Kind kind = Kind::kNone;
  std::string message;
  std::string syscall;  // kSystem: the call that failed ("open", "mmap", ...)
  int errnum = 0;       // kSystem: errno, or the driver's result code when errname is set
  std::string path;     // kSystem: the file concerned, if any
  std::string errname;  // kSystem from a driver: its code's name ("CUDA_ERROR_INVALID_VALUE"); "" for errno
  std::string log;      // kFormat: a compiler's log (a module that does not compile), "" otherwise

  bool failed() const { return kind != Kind::kNone; }
  static Failure System(std::string syscall, int errnum, std::string path, std::string message);
  static Failure Allocation(std::string message);
  static Failure Argument(std::string message);
  // Input that cannot be used as it is (a module that does not compile, a kernel name it lacks): a FormatError
  // in JS, with `log` as its `log` property when there is one.
  static Failure Format(std::string message, std::string log);
  // A driver's refusal (CUDA): reported as a system error whose errno is the driver's code and its name.
  static Failure Driver(std::string call, int result, std::string name, std::string message);
};

// errno's symbolic name ("ENOENT"); "E<number>" for one the table does not know.
std::string ErrnoName(int errnum);
// The system's text for errnum, safe from any thread (strerror's buffer is shared; strerror_r is not).
std::string ErrorText(int errnum);

// Counters the platform keeps; the binding adds the buffer and mapping counts.
struct WiringCounters {
  uint64_t wiredBytes = 0;
  uint64_t wiringFailures = 0;
};

class ResidencySet;
class StreamPlatform;  // streams.h

// What the platform really gave back to the system, counted in its own free and unmap paths (the host's
// free/munmap, Metal's last release of a buffer and a mapped file's deallocator block), not where the
// binding counts a release(): the contract suite's leak check compares the two. Shared by the platform and
// its allocations (a Metal deallocator may run on another thread, later: atomics).
struct FreedCounters {
  std::atomic<uint64_t> buffers{0};
  std::atomic<uint64_t> mappings{0};
  std::atomic<uint64_t> residencySets{0};
};

// One field of nativeHandle() beyond platform and address: a name and a pointer-sized value (a BigInt in JS).
struct NativeField {
  const char* name;
  uint64_t value;
};

// A buffer or a mapped file: memory the platform holds until the object is destroyed.
class Allocation {
 public:
  virtual ~Allocation() = default;
  // The first byte in the process's address space, valid until destruction; nullptr for memory the CPU
  // cannot address (CUDA device memory): contents() is then refused and copyIn/copyOut move the bytes.
  virtual void* data() const = 0;
  // Bytes usable by JS (the request for buffers, the file's length for mappings).
  virtual size_t length() const = 0;
  // Bytes the system really holds (page-rounded for mmap'd memory; Metal's allocatedSize).
  virtual size_t allocatedSize() const = 0;
  // The address the device uses, or 0 when it has none (host and Metal memory; a CUDA mapped file that is
  // not registered with the driver).
  virtual uint64_t devicePointer() const { return 0; }
  // Copies bytes in or out at offset (already checked against length()). false and a failure when the
  // layer refuses. The default copies through data(), for memory the CPU can address, with memmove: the
  // source of a write (or the target of a read) may be a view of this very memory, overlapping.
  virtual bool copyIn(size_t offset, const void* source, size_t bytes, Failure*) {
    std::memmove(static_cast<char*>(data()) + offset, source, bytes);
    return true;
  }
  virtual bool copyOut(size_t offset, void* target, size_t bytes, Failure*) const {
    std::memmove(target, static_cast<const char*>(data()) + offset, bytes);
    return true;
  }
  // For runtimes' native code (nativeHandle()), beside platform and address: what this layer's own APIs
  // take (Metal: metalBuffer, the id<MTLBuffer> as a pointer, not retained, and its gpuAddress; CUDA: the
  // devicePointer). None by default.
  virtual std::vector<NativeField> nativeFields() const { return {}; }

  // Sets that hold this allocation (a pending add or committed). Maintained by AddonState (addon_state.h): as with Metal,
  // where a residency set retains what it holds, memory released while a set holds it is freed only once
  // the set lets go of it (remove + commit, or the set's release) — never left dangling in a set.
  std::unordered_set<ResidencySet*> sets;
};

// A residency set with Metal's semantics: add/remove are staged until commit; requestResidency stands, so
// each later commit wires what it adds and unwires what it removes. The staging and the committed
// membership are kept here, the same for every layer; a layer implements the on* hooks (Metal forwards each
// call to its MTLResidencySet; the host and CUDA derive from WiringResidencySet, wiring_residency_set.h).
class ResidencySet {
 public:
  virtual ~ResidencySet() = default;

  void add(Allocation* allocation) {
    pending_[allocation] = true;
    onAdd(allocation);
  }
  void remove(Allocation* allocation) {
    pending_[allocation] = false;
    onRemove(allocation);
  }
  // Applies the staged changes (the last one for an allocation wins). Returns the allocations the set no
  // longer holds: removed from the committed ones, or added and removed again before the commit.
  std::vector<Allocation*> commit() {
    std::vector<Allocation*> added;
    std::vector<Allocation*> removed;
    std::vector<Allocation*> dropped;
    for (const auto& [allocation, wanted] : pending_) {
      bool present = committed_.count(allocation) > 0;
      if (wanted && !present) {
        committed_.insert(allocation);
        committedBytes_ += allocation->allocatedSize();
        added.push_back(allocation);
      } else if (!wanted && present) {
        committed_.erase(allocation);
        committedBytes_ -= allocation->allocatedSize();
        removed.push_back(allocation);
        dropped.push_back(allocation);
      } else if (!wanted) {
        dropped.push_back(allocation);
      }
    }
    pending_.clear();
    onCommit(added, removed);
    return dropped;
  }
  // Bytes and number of the committed allocations (Metal's allocatedSize and allocationCount).
  size_t allocatedSize() const { return committedBytes_; }
  size_t allocationCount() const { return committed_.size(); }

  virtual void requestResidency() = 0;
  virtual void endResidency() = 0;
  virtual uint64_t wiringFailures() const = 0;
  // Advice for the last wiring failure, or "" when none.
  virtual std::string lastWiringError() const = 0;

  // Allocations this set holds: committed or staged (the other side of Allocation::sets).
  std::unordered_set<Allocation*> members;

 protected:
  virtual void onAdd(Allocation*) {}
  virtual void onRemove(Allocation*) {}
  virtual void onCommit(const std::vector<Allocation*>& added, const std::vector<Allocation*>& removed) = 0;

  std::unordered_set<Allocation*> committed_;

 private:
  std::unordered_map<Allocation*, bool> pending_;
  size_t committedBytes_ = 0;
};

struct DeviceFacts {
  std::string name;
  std::string platform;  // "host", "metal" or "cuda"
  uint64_t memorySize = 0;
  uint64_t recommendedMaxWorkingSetSize = 0;
  uint64_t maxBufferLength = 0;
  uint64_t resourceLimit = 0;
  uint64_t pageSize = 0;
  bool supportsResidencySets = false;
  // False for device memory: buffers have no CPU address (CUDA). Reported by cuda-native's facts() only.
  bool hostVisible = true;
  // The device's ordinal (CUDA; 0 elsewhere). Reported by cuda-native's facts() only.
  int ordinal = 0;
};

// One per JS environment (main thread, each worker): made by a layer's factory (CreatePlatform of the host
// and Metal layers, CreateCudaPlatform in cuda-native), destroyed at the environment's
// cleanup after every allocation and set it made.
class Platform {
 public:
  virtual ~Platform() = default;
  virtual const DeviceFacts& facts() const = 0;
  // bytes is already checked: 0 < bytes <= maxBufferLength.
  virtual std::unique_ptr<Allocation> newBuffer(size_t bytes, Failure* failure) = 0;
  virtual std::unique_ptr<Allocation> mapFile(const std::string& path, Failure* failure) = 0;
  // nullptr (and no failure) when the device has no residency sets.
  virtual std::unique_ptr<ResidencySet> newResidencySet(Failure* failure) = 0;
  // commandQueue: 0 for the platform's own queue, else a runtime's id<MTLCommandQueue> as a pointer (Metal;
  // the set is removed from it before it is released). A layer without queues fails for a non-zero one.
  // The default (no queues): its own "queue" needs nothing, a runtime's Metal queue is refused.
  virtual void attachResidencySet(ResidencySet*, uint64_t commandQueue, Failure* failure) {
    if (commandQueue != 0) *failure = Failure::Argument("the " + facts().platform + " backend has no Metal command queue");
  }
  // Whether `device` (an id<MTLDevice> as a pointer) is the GPU the buffers come from; `failure` says why
  // not. Layers without Metal always fail.
  virtual bool checkMetalDevice(uint64_t device, Failure* failure) {
    *failure = Failure::Argument("the " + facts().platform + " backend has no Metal device");
    return false;
  }
  // The id<MTLResidencySet> behind a set as a pointer (not retained); 0 on layers without them.
  virtual uint64_t metalResidencySet(ResidencySet*) const { return 0; }
  virtual WiringCounters wiringCounters() const = 0;
  // What this platform gave back to the system so far (see FreedCounters).
  std::shared_ptr<FreedCounters> freed = std::make_shared<FreedCounters>();
  // Advice for the last wiring failure of any set, or "".
  virtual std::string lastWiringError() const = 0;
  // Streams, events and modules of kernels (streams.h): the layer's StreamPlatform, owned by the platform
  // and living as long as it, or nullptr where it has none (the default); `why` then says why not (the
  // binding's ERR_NUVEC_NATIVE_UNAVAILABLE message).
  virtual StreamPlatform* streams(std::string* why) {
    *why = "the " + facts().platform + " backend has no streams in this build";
    return nullptr;
  }
};

// Shared POSIX helper for every layer: open + fstat + mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE) of a whole
// file, rounded up to pages. Typed failures for missing, directory, empty, unreadable files.
struct FileMapping {
  void* address = nullptr;
  size_t length = 0;        // the file's length
  size_t mappedLength = 0;  // whole pages
};
FileMapping MapWholeFile(const std::string& path, size_t pageSize, Failure* failure);
void UnmapFile(const FileMapping& mapping);

}  // namespace nuvec

#endif  // NUVEC_PLATFORM_H_
