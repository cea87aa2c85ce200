// The platform interface of the CUDA addon: @nuvec/metal-native's native/platform.h (the same shapes, so the
// binding stays the same code), extended for memory JavaScript cannot see: an allocation may have no host
// address (device memory), is then read and written by copies, and may have a device address.
#ifndef NUVEC_CUDA_PLATFORM_H_
#define NUVEC_CUDA_PLATFORM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nuvec {

// Why a platform call failed. The binding turns it into a JS error whose `code` the TypeScript layer maps to
// a class of errors.ts.
struct Failure {
  enum class Kind { kNone, kArgument, kSystem, kAllocation };
  Kind kind = Kind::kNone;
  std::string message;
  std::string syscall;  // kSystem: the call that failed ("open", "mmap", ...)
  int errnum = 0;       // kSystem: errno, or the driver's CUresult when errname is set
  std::string path;     // kSystem: the file concerned, if any
  std::string errname;  // kSystem from the driver: the CUresult's name ("CUDA_ERROR_INVALID_VALUE")

  bool failed() const { return kind != Kind::kNone; }
  static Failure System(std::string syscall, int errnum, std::string path, std::string message);
  static Failure Allocation(std::string message);
  static Failure Argument(std::string message);
  static Failure Driver(std::string call, int result, std::string name, std::string message);
};

// errno's symbolic name ("ENOENT"); "E<number>" for one the table does not know.
std::string ErrnoName(int errnum);

// Counters the platform keeps; the binding adds the buffer and mapping counts.
struct WiringCounters {
  uint64_t wiredBytes = 0;
  uint64_t wiringFailures = 0;
};

class ResidencySet;

// A buffer or a mapped file: memory the platform holds until the object is destroyed.
class Allocation {
 public:
  virtual ~Allocation() = default;
  // The first byte in the process's address space, or nullptr for memory the CPU cannot address (device
  // memory): contents() is then refused and copyIn/copyOut move the bytes.
  virtual void* data() const = 0;
  // The address the device uses, or 0 when it has none (a mapped file not registered with the driver).
  virtual uint64_t devicePointer() const { return 0; }
  // Copies bytes in or out at offset (already checked against length()). false and a failure when the
  // driver refuses. The default copies through data().
  virtual bool copyIn(size_t offset, const void* source, size_t bytes, Failure* failure);
  virtual bool copyOut(size_t offset, void* target, size_t bytes, Failure* failure) const;
  // Bytes usable by JS (the request for buffers, the file's length for mappings).
  virtual size_t length() const = 0;
  // Bytes the system really holds (page-rounded for mmap'd memory; Metal's allocatedSize).
  virtual size_t allocatedSize() const = 0;

  // Sets that hold this allocation (a pending add or committed). Maintained by binding.cc: as with Metal,
  // where a residency set retains what it holds, memory released while a set holds it is freed only once
  // the set lets go of it (remove + commit, or the set's release) — never left dangling in a set.
  std::unordered_set<ResidencySet*> sets;
};

// A residency set with Metal's semantics: add/remove are staged until commit; requestResidency stands, so
// each later commit wires what it adds and unwires what it removes. The staging and the committed
// membership are kept here, the same for both layers; a layer implements the on* hooks (Metal forwards each
// call to its MTLResidencySet, the host wires with mlock).
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
  std::string platform;  // "cuda"
  uint64_t memorySize = 0;
  uint64_t recommendedMaxWorkingSetSize = 0;
  uint64_t maxBufferLength = 0;
  uint64_t resourceLimit = 0;
  uint64_t pageSize = 0;
  bool supportsResidencySets = false;
  // False for device memory: buffers have no CPU address.
  bool hostVisible = true;
  // The device's ordinal.
  int ordinal = 0;
};

// One per JS environment (main thread, each worker): made by CreatePlatform, destroyed at the environment's
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
  virtual void attachResidencySet(ResidencySet* set) = 0;
  virtual WiringCounters wiringCounters() const = 0;
  // Advice for the last wiring failure of any set, or "".
  virtual std::string lastWiringError() const = 0;
  // The device's free and total memory (cuMemGetInfo). false and a failure when the driver refuses.
  virtual bool memoryInfo(uint64_t* free, uint64_t* total, Failure* failure) = 0;
  // Copies bytes between device addresses on the copy engine (cuMemcpyDtoD), e.g. from a wired mapping.
  virtual bool copyDevice(uint64_t target, uint64_t source, size_t bytes, Failure* failure) = 0;
  // Nanoseconds per cuMemAlloc + cuMemFree pair of `bytes`, timed in C++ over `count` pairs (the benchmark's
  // baseline without N-API). Negative when the driver refuses.
  virtual double timeDriverAllocFree(size_t bytes, uint32_t count, Failure* failure) = 0;
};

// Opens the device `ordinal`: loads the driver (dlopen), initialises it, retains the primary context. nullptr
// and a failure (kind kNone, message saying why) where there is no driver or no such device.
std::unique_ptr<Platform> CreatePlatform(int ordinal, Failure* failure);

// The driver's version (cuDriverGetVersion, e.g. 13000 for CUDA 13.0), or 0 where there is no driver.
int DriverVersion();

// Shared POSIX helper for both layers: open + fstat + mmap(PROT_READ|PROT_WRITE, MAP_PRIVATE) of a whole
// file, rounded up to pages. Typed failures for missing, directory, empty, unreadable files.
struct FileMapping {
  void* address = nullptr;
  size_t length = 0;        // the file's length
  size_t mappedLength = 0;  // whole pages
};
FileMapping MapWholeFile(const std::string& path, size_t pageSize, Failure* failure);
void UnmapFile(const FileMapping& mapping);

}  // namespace nuvec

#endif  // NUVEC_CUDA_PLATFORM_H_
