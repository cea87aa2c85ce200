// The platform interface: what the shared N-API binding (binding.cc) needs from a system. Two layers
// implement it — host (Linux/POSIX: mmap, mlock) and Metal (macOS) — and only the calls into the OS or Metal
// differ between them. Everything that touches JavaScript (object wrapping, external ArrayBuffers, detaching,
// typed errors, instance data) lives in binding.cc and is the same code on both, so it is tested on Linux.
#ifndef NUVEC_PLATFORM_H_
#define NUVEC_PLATFORM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>

namespace nuvec {

// Why a platform call failed. The binding turns it into a JS error whose `code` the TypeScript layer maps to
// a class of errors.ts.
struct Failure {
  enum class Kind { kNone, kArgument, kSystem, kAllocation };
  Kind kind = Kind::kNone;
  std::string message;
  std::string syscall;  // kSystem: the call that failed ("open", "mmap", ...)
  int errnum = 0;       // kSystem: errno
  std::string path;     // kSystem: the file concerned, if any

  bool failed() const { return kind != Kind::kNone; }
  static Failure System(std::string syscall, int errnum, std::string path, std::string message);
  static Failure Allocation(std::string message);
  static Failure Argument(std::string message);
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
  // The first byte; valid until destruction.
  virtual void* data() const = 0;
  // Bytes usable by JS (the request for buffers, the file's length for mappings).
  virtual size_t length() const = 0;
  // Bytes the system really holds (page-rounded for mmap'd memory; Metal's allocatedSize).
  virtual size_t allocatedSize() const = 0;

  // Sets that may reference this allocation (pending or committed). Maintained by binding.cc so that an
  // allocation released while still in a set is dropped from it first, never left dangling.
  std::unordered_set<ResidencySet*> sets;
};

// A residency set with Metal's semantics: add/remove are pending until commit; requestResidency stands.
class ResidencySet {
 public:
  virtual ~ResidencySet() = default;
  virtual void add(Allocation* allocation) = 0;
  virtual void remove(Allocation* allocation) = 0;
  virtual void commit() = 0;
  virtual void requestResidency() = 0;
  virtual void endResidency() = 0;
  // The allocation is about to be destroyed: drop it now (pending and committed), unwiring it if wired.
  virtual void forget(Allocation* allocation) = 0;
  virtual size_t allocatedSize() const = 0;
  virtual size_t allocationCount() const = 0;
  virtual uint64_t wiringFailures() const = 0;
  // Advice for the last wiring failure, or "" when none.
  virtual std::string lastWiringError() const = 0;

  // Allocations that may be referenced by this set (the other side of Allocation::sets).
  std::unordered_set<Allocation*> members;
};

struct DeviceFacts {
  std::string name;
  std::string platform;  // "host" or "metal"
  uint64_t memorySize = 0;
  uint64_t recommendedMaxWorkingSetSize = 0;
  uint64_t maxBufferLength = 0;
  uint64_t resourceLimit = 0;
  uint64_t pageSize = 0;
  bool supportsResidencySets = false;
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
};

std::unique_ptr<Platform> CreatePlatform(Failure* failure);

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

#endif  // NUVEC_PLATFORM_H_
