// The host layer (Linux and other POSIX systems): real memory with Metal's semantics, so that everything
// above the native interface runs for real where there is no Apple GPU.
//
//  - Buffers of a page or more come from anonymous private mmap (zeroed, whole pages, given back at once by
//    munmap). Smaller ones come from aligned_alloc: the real traces make hundreds of thousands of small
//    buffers, and one mapping each would exhaust vm.max_map_count and waste most of a page on each.
//  - Mapped files: core/posix.cc (private, copy-on-write).
//  - Residency sets wire with mlock/munlock (host_wiring.cc). mlock does not nest, and small buffers share
//    pages, so pages under small buffers are locked through a process-wide reference count (workers share
//    the malloc heap).
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/platform.h"
#include "core/streams.h"
#include "core/wiring_residency_set.h"
#include "host_system.h"
#include "host_wiring.h"

namespace nuvec {
namespace {

// Small buffers are aligned like a cache line (and like what Metal guarantees for buffer contents), and
// their size is rounded to it: that is what the process really holds for them, give or take malloc's header.
constexpr size_t kSmallAlignment = 64;

// Maps kept free for the runtime when deriving the resource limit from vm.max_map_count: V8's heap spaces,
// shared libraries, thread stacks and malloc arenas take several hundred to a few thousand mappings in a
// busy Node process, and a partly locked mapping can split in two. 8192 leaves room for all of that and
// still gives 57 338 buffers at the default limit of 65 530.
constexpr uint64_t kMapCountHeadroom = 8192;

enum class Kind { kSmall, kAnonymous, kFile };

// Limits the OS applies per process, accounted across every Device, backend and worker thread of the
// process (each environment has its own HostPlatform, but one address space): the mappings this addon holds
// (vm.max_map_count counts every mapping of the process, V8's heap included: a Device per thread, each
// within its own resource limit, could together leave V8 no mapping for its heap, a fatal OOM), and the
// bytes of its buffers (together never more than the memory the process may use). A request past either is
// refused with a typed allocation failure before the system is asked.
std::atomic<uint64_t> processMappings{0};
std::atomic<uint64_t> processBufferBytes{0};

// Takes `count` of `limit` for this process; false (and nothing taken) when it would go past it.
bool Reserve(std::atomic<uint64_t>& counter, uint64_t count, uint64_t limit) {
  uint64_t current = counter.load(std::memory_order_relaxed);
  do {
    if (current + count > limit) return false;
  } while (!counter.compare_exchange_weak(current, current + count, std::memory_order_relaxed));
  return true;
}

// Every acquisition below is owned by an object from the moment it exists, so that nothing leaks when a
// later step fails or throws (std::bad_alloc from make_unique, a string of a failure message): a share of a
// process-wide account (Share), a block of aligned_alloc or a mapping (Memory). HostAllocation takes them
// over by move, which cannot throw.

// A share of a process-wide account (see processMappings), given back when dropped.
class Share {
 public:
  Share() = default;
  Share(const Share&) = delete;
  Share& operator=(const Share&) = delete;
  Share(Share&& other) noexcept : counter_(other.counter_), amount_(other.amount_) { other.counter_ = nullptr; }
  Share& operator=(Share&& other) noexcept {
    if (this != &other) {
      giveBack();
      counter_ = other.counter_;
      amount_ = other.amount_;
      other.counter_ = nullptr;
    }
    return *this;
  }
  ~Share() { giveBack(); }

  // `amount` of `counter` for this process, or an empty share (nothing taken) when it would pass `limit`.
  static Share Take(std::atomic<uint64_t>& counter, uint64_t amount, uint64_t limit) {
    Share share;
    if (Reserve(counter, amount, limit)) {
      share.counter_ = &counter;
      share.amount_ = amount;
    }
    return share;
  }
  explicit operator bool() const { return counter_ != nullptr; }

 private:
  void giveBack() {
    if (counter_ != nullptr) *counter_ -= amount_;
    counter_ = nullptr;
  }
  std::atomic<uint64_t>* counter_ = nullptr;
  uint64_t amount_ = 0;
};

// A block of aligned_alloc (kSmall) or a mapping (kAnonymous, kFile), freed or unmapped when dropped.
class Memory {
 public:
  Memory() = default;
  Memory(Kind kind, void* data, size_t size) : kind_(kind), data_(data), size_(size) {}
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  Memory(Memory&& other) noexcept : kind_(other.kind_), data_(other.data_), size_(other.size_) {
    other.data_ = nullptr;
  }
  ~Memory() { release(); }

  void* data() const { return data_; }
  Kind kind() const { return kind_; }
  // Frees or unmaps it now; true when the system took it back (munmap can refuse).
  bool release() {
    void* data = data_;
    data_ = nullptr;
    if (data == nullptr) return false;
    if (kind_ == Kind::kSmall) {
      std::free(data);
      return true;
    }
    return munmap(data, size_) == 0;
  }

 private:
  Kind kind_ = Kind::kSmall;
  void* data_ = nullptr;
  size_t size_ = 0;
};

class HostAllocation final : public Allocation {
 public:
  HostAllocation(Memory memory, Share bytes, Share mapping, size_t length, size_t allocatedSize,
                 std::shared_ptr<FreedCounters> freed) noexcept
      : memory_(std::move(memory)),
        bytes_(std::move(bytes)),
        mapping_(std::move(mapping)),
        data_(memory_.data()),
        length_(length),
        allocatedSize_(allocatedSize),
        freed_(std::move(freed)) {}
  ~HostAllocation() override {
    // Sets let go of an allocation (unwiring it) before it is destroyed, and munmap drops locks anyway. The
    // shares of the process's accounts go back with the members, after this.
    Kind kind = memory_.kind();
    if (!memory_.release()) return;
    if (kind == Kind::kFile) {
      freed_->mappings += 1;
    } else {
      freed_->buffers += 1;
    }
  }
  void* data() const override { return data_; }
  size_t length() const override { return length_; }
  size_t allocatedSize() const override { return allocatedSize_; }
  Kind kind() const { return memory_.kind(); }

  // How many sets have it wired (mlock does not nest: lock at 0 → 1, unlock at 1 → 0).
  uint32_t wireCount = 0;

 private:
  Memory memory_;
  Share bytes_;
  Share mapping_;
  void* data_;
  size_t length_;
  size_t allocatedSize_;
  std::shared_ptr<FreedCounters> freed_;
};

class HostPlatform final : public Platform, public Wiring {
 public:
  HostPlatform() {
    long pageSize = sysconf(_SC_PAGESIZE);
    pageSize_ = pageSize > 0 ? static_cast<size_t>(pageSize) : 4096;
    long pages = sysconf(_SC_PHYS_PAGES);
    uint64_t physical = pages > 0 ? static_cast<uint64_t>(pages) * pageSize_ : 0;
    uint64_t cgroup = CgroupMemoryLimit();
    uint64_t memory = physical;
    if (cgroup > 0 && (memory == 0 || cgroup < memory)) memory = cgroup;
    facts_.name = MachineName();
    facts_.platform = "host";
    facts_.pageSize = pageSize_;
    facts_.memorySize = memory;
    facts_.recommendedMaxWorkingSetSize = memory / 4 * 3;
    // Half the memory, in whole pages: Metal's maxBufferLength is about that on Apple silicon, and a larger
    // buffer could only be paged.
    facts_.maxBufferLength = memory / 2 / pageSize_ * pageSize_;
    bool found = false;
    uint64_t maps = ReadNumber("/proc/sys/vm/max_map_count", &found);
    if (!found) maps = 65530;  // Linux's default; other POSIX systems have no such limit
    facts_.resourceLimit = maps > 2 * kMapCountHeadroom ? maps - kMapCountHeadroom : maps / 2;
    facts_.supportsResidencySets = true;
  }

  const DeviceFacts& facts() const override { return facts_; }
  StreamPlatform* streams(std::string*) override { return streams_.get(); }

  std::unique_ptr<Allocation> newBuffer(size_t bytes, Failure* failure) override {
    if (bytes < pageSize_) {
      size_t rounded = (bytes + kSmallAlignment - 1) / kSmallAlignment * kSmallAlignment;
      Share share = ReserveBytes(rounded, failure);
      if (!share) return nullptr;
      Memory memory(Kind::kSmall, std::aligned_alloc(kSmallAlignment, rounded), rounded);
      if (memory.data() == nullptr) {
        *failure = Failure::Allocation("aligned_alloc of " + std::to_string(rounded) + " bytes failed");
        return nullptr;
      }
      // Zeroed like mmap'd and Metal memory: a reused heap block must not show a previous owner's bytes.
      std::memset(memory.data(), 0, rounded);
      return std::make_unique<HostAllocation>(std::move(memory), std::move(share), Share(), bytes, rounded, freed);
    }
    size_t rounded = (bytes + pageSize_ - 1) / pageSize_ * pageSize_;
    Share mapping = ReserveMapping(failure);
    if (!mapping) return nullptr;
    Share share = ReserveBytes(rounded, failure);
    if (!share) return nullptr;
    void* data = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) {
      int errnum = errno;
      *failure = Failure::Allocation("mmap of " + std::to_string(rounded) + " bytes failed: " + ErrorText(errnum) +
                                     " (" + ErrnoName(errnum) + ")");
      return nullptr;
    }
    Memory memory(Kind::kAnonymous, data, rounded);
    return std::make_unique<HostAllocation>(std::move(memory), std::move(share), std::move(mapping), bytes, rounded,
                                            freed);
  }

  std::unique_ptr<Allocation> mapFile(const std::string& path, Failure* failure) override {
    Share share = ReserveMapping(failure);
    if (!share) return nullptr;
    FileMapping mapping = MapWholeFile(path, pageSize_, failure);
    if (failure->failed()) return nullptr;
    Memory memory(Kind::kFile, mapping.address, mapping.mappedLength);
    return std::make_unique<HostAllocation>(std::move(memory), Share(), std::move(share), mapping.length,
                                            mapping.mappedLength, freed);
  }

  std::unique_ptr<ResidencySet> newResidencySet(Failure*) override {
    return std::make_unique<WiringResidencySet>(this, freed);
  }

  // attachResidencySet and checkMetalDevice: Platform's defaults (no queue of its own to attach to; a
  // runtime's Metal queue or device is refused).

  WiringCounters wiringCounters() const override { return counters_; }

  // The process-wide accounts (see processMappings): a share of one, or an empty share with the failure
  // said past a limit.
  Share ReserveMapping(Failure* failure) {
    Share share = Share::Take(processMappings, 1, facts_.resourceLimit);
    if (share) return share;
    *failure = Failure::Allocation(
        "this process already holds " + std::to_string(processMappings.load()) +
        " mappings made by nuvec (all Devices and worker threads together), its limit: vm.max_map_count less " +
        std::to_string(kMapCountHeadroom) + " kept for the runtime (" + std::to_string(facts_.resourceLimit) +
        "). Free buffers, release mapped files or clear caches; or raise vm.max_map_count");
    return share;
  }
  Share ReserveBytes(size_t bytes, Failure* failure) {
    Share share = Share::Take(processBufferBytes, bytes, facts_.memorySize);
    if (share) return share;
    *failure = Failure::Allocation("the buffers of this process (all Devices and worker threads together) would "
                                   "take " + std::to_string(processBufferBytes.load() + bytes) +
                                   " bytes, more than the memory it may use (" + std::to_string(facts_.memorySize) +
                                   ")");
    return share;
  }
  std::string lastWiringError() const override { return lastWiringError_; }

  // 0 on success, else the errno of the failed mlock.
  int wire(HostAllocation* allocation) {
    if (allocation->wireCount > 0) {
      allocation->wireCount += 1;
      return 0;
    }
    int errnum = 0;
    if (allocation->kind() == Kind::kSmall) {
      errnum = LockSmallPages(allocation->data(), allocation->allocatedSize(), pageSize_);
    } else {
      if (allocation->kind() == Kind::kFile) {
        errnum = WireFile(allocation->data(), allocation->allocatedSize(), pageSize_);
      } else if (mlock(allocation->data(), allocation->allocatedSize()) != 0) {
        errnum = errno;
      }
    }
    if (errnum != 0) {
      counters_.wiringFailures += 1;
      return errnum;
    }
    allocation->wireCount = 1;
    counters_.wiredBytes += allocation->allocatedSize();
    return 0;
  }

  void unwire(HostAllocation* allocation) {
    if (allocation->wireCount == 0) return;
    if (--allocation->wireCount > 0) return;
    if (allocation->kind() == Kind::kSmall) {
      UnlockSmallPages(allocation->data(), allocation->allocatedSize(), pageSize_);
    } else {
      munlock(allocation->data(), allocation->allocatedSize());
    }
    counters_.wiredBytes -= allocation->allocatedSize();
  }

  // The advice of a wiring failure (host_wiring.cc), kept as the last wiring error.
  std::string wiringAdvice(size_t bytes, int errnum) {
    lastWiringError_ = WiringAdvice(bytes, errnum);
    return lastWiringError_;
  }

  // Wiring, for its residency sets (core/wiring_residency_set.h).
  int wireOne(Allocation* allocation) override { return wire(static_cast<HostAllocation*>(allocation)); }
  void unwireOne(Allocation* allocation) override { unwire(static_cast<HostAllocation*>(allocation)); }
  std::string wiringAdvice(Allocation* allocation, int errnum) override {
    return wiringAdvice(allocation->allocatedSize(), errnum);
  }

 private:
  size_t pageSize_;
  DeviceFacts facts_;
  std::unique_ptr<StreamPlatform> streams_ = CreateHostStreamPlatform();
  WiringCounters counters_;
  std::string lastWiringError_;
};

}  // namespace

std::unique_ptr<Platform> CreatePlatform(Failure*) { return std::make_unique<HostPlatform>(); }

}  // namespace nuvec
