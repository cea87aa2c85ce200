// The host layer (Linux and other POSIX systems): real memory with Metal's semantics, so that everything
// above the native interface runs for real where there is no Apple GPU.
//
//  - Buffers of a page or more come from anonymous private mmap (zeroed, whole pages, given back at once by
//    munmap). Smaller ones come from aligned_alloc: the real traces make hundreds of thousands of small
//    buffers, and one mapping each would exhaust vm.max_map_count and waste most of a page on each.
//  - Mapped files: core/posix.cc (private, copy-on-write).
//  - Residency sets wire with mlock/munlock. mlock does not nest, and small buffers share pages, so pages
//    under small buffers are locked through a process-wide reference count (workers share the malloc heap).
#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/platform.h"
#include "core/streams.h"
#include "core/wiring_residency_set.h"
#include "host_system.h"

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

// Pages under small buffers, locked once however many wired buffers share them.
class SmallPageLocks {
 public:
  static SmallPageLocks& instance() {
    // Never destroyed: a worker may still unlock while the process exits.
    static SmallPageLocks* locks = new SmallPageLocks();
    return *locks;
  }

  // 0 on success, else the errno of the failed mlock (nothing stays locked or counted by this call). Every
  // page's entry is made before anything is locked: the inserts are what can throw (std::bad_alloc), and
  // then nothing is locked yet; from the first mlock on, nothing allocates.
  int lock(const void* address, size_t length, size_t pageSize) {
    std::lock_guard<std::mutex> guard(mutex_);
    uintptr_t first = reinterpret_cast<uintptr_t>(address) / pageSize * pageSize;
    uintptr_t end = reinterpret_cast<uintptr_t>(address) + length;
    try {
      for (uintptr_t page = first; page < end; page += pageSize) counts_.try_emplace(page, 0);
    } catch (...) {
      EraseUnused(first, end, pageSize);
      throw;
    }
    for (uintptr_t page = first; page < end; page += pageSize) {
      uint32_t& count = counts_.find(page)->second;
      if (count == 0 && mlock(reinterpret_cast<void*>(page), pageSize) != 0) {
        int errnum = errno;
        for (uintptr_t again = first; again < page; again += pageSize) Drop(counts_.find(again), pageSize);
        EraseUnused(first, end, pageSize);
        return errnum;
      }
      count += 1;
    }
    return 0;
  }

  void unlock(const void* address, size_t length, size_t pageSize) {
    std::lock_guard<std::mutex> guard(mutex_);
    uintptr_t first = reinterpret_cast<uintptr_t>(address) / pageSize * pageSize;
    uintptr_t end = reinterpret_cast<uintptr_t>(address) + length;
    for (uintptr_t page = first; page < end; page += pageSize) {
      auto found = counts_.find(page);
      if (found != counts_.end()) Drop(found, pageSize);
    }
  }

 private:
  using Counts = std::unordered_map<uintptr_t, uint32_t>;

  // One lock of the page at `found` given back: unlocked and forgotten at the last.
  void Drop(Counts::iterator found, size_t pageSize) {
    if (found == counts_.end() || found->second == 0) return;
    if (--found->second > 0) return;
    munlock(reinterpret_cast<void*>(found->first), pageSize);
    counts_.erase(found);
  }

  // Forgets the pages of [first, end) that no lock counts (entries made by a lock that did not finish).
  void EraseUnused(uintptr_t first, uintptr_t end, size_t pageSize) {
    for (uintptr_t page = first; page < end; page += pageSize) {
      auto found = counts_.find(page);
      if (found != counts_.end() && found->second == 0) counts_.erase(found);
    }
  }

  std::mutex mutex_;
  Counts counts_;
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

  // Wires a mapped file without copying it. A plain mlock of a writable private mapping populates it for
  // writing, which breaks copy-on-write: the kernel would copy every page of the file into anonymous memory.
  // Locking on fault (MLOCK_ONFAULT) and then faulting each page in for reading keeps the pages shared with
  // the page cache, and locks them as they come. 0 on success, else the errno.
  //
  // The file may have been truncated by someone else since it was mapped: a page past the new end raises
  // SIGBUS when touched. The pages are therefore never touched directly: MADV_POPULATE_READ (Linux 5.14)
  // faults them in and answers EFAULT for such a page; older kernels read one byte per page through
  // process_vm_readv on this process, which answers with a short count instead of a signal. A file that
  // shrank is not wired at all (EFAULT, counted and reported like any wiring failure), so the counters only
  // ever count what is really locked.
  int WireFile(void* data, size_t length) {
    // Ask for the file's pages to be read ahead before locking them in (a hint: its failure is harmless).
    madvise(data, length, MADV_WILLNEED);
#if defined(__linux__) && defined(MLOCK_ONFAULT)
    if (mlock2(data, length, MLOCK_ONFAULT) == 0) {
      int errnum = PopulateForReading(data, length);
      if (errnum != 0) munlock(data, length);
      return errnum;
    }
    if (errno != EINVAL && errno != ENOSYS) return errno;  // a real refusal (e.g. RLIMIT_MEMLOCK)
#endif
    // No lock-on-fault: this mlock populates the mapping itself and, unlike a touch, never raises SIGBUS
    // (a page past the file's end makes it fail instead: nothing stays locked then).
    if (mlock(data, length) == 0) return 0;
    int errnum = errno;
    munlock(data, length);
    return errnum;
  }

  // Faults in every page of [data, data + length) for reading without ever raising SIGBUS. 0 on success,
  // EFAULT when a page is past the end of its file (or cannot be read), another errno when neither way works.
  int PopulateForReading(void* data, size_t length) {
#if defined(__linux__)
#if defined(MADV_POPULATE_READ)
    if (madvise(data, length, MADV_POPULATE_READ) == 0) return 0;
    if (errno != EINVAL) return errno;  // EFAULT: a page past the file's end; ENOMEM, EHWPOISON, ...
#endif
    // Kernels before 5.14: one byte of each page, read by the kernel on our behalf, IOV_MAX pages a call.
    constexpr size_t kPagesPerCall = 1024;
    unsigned char sink[kPagesPerCall];
    struct iovec local[kPagesPerCall];
    struct iovec remote[kPagesPerCall];
    size_t pages = (length + pageSize_ - 1) / pageSize_;
    for (size_t first = 0; first < pages; first += kPagesPerCall) {
      size_t count = std::min(kPagesPerCall, pages - first);
      for (size_t index = 0; index < count; index += 1) {
        local[index] = {&sink[index], 1};
        remote[index] = {static_cast<unsigned char*>(data) + (first + index) * pageSize_, 1};
      }
      ssize_t read = process_vm_readv(getpid(), local, count, remote, count, 0);
      if (read < 0) return errno;
      if (static_cast<size_t>(read) < count) return EFAULT;
    }
    return 0;
#else
    (void)data;
    (void)length;
    return ENOSYS;
#endif
  }

  // 0 on success, else the errno of the failed mlock.
  int wire(HostAllocation* allocation) {
    if (allocation->wireCount > 0) {
      allocation->wireCount += 1;
      return 0;
    }
    int errnum = 0;
    if (allocation->kind() == Kind::kSmall) {
      errnum = SmallPageLocks::instance().lock(allocation->data(), allocation->allocatedSize(), pageSize_);
    } else {
      if (allocation->kind() == Kind::kFile) {
        errnum = WireFile(allocation->data(), allocation->allocatedSize());
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
      SmallPageLocks::instance().unlock(allocation->data(), allocation->allocatedSize(), pageSize_);
    } else {
      munlock(allocation->data(), allocation->allocatedSize());
    }
    counters_.wiredBytes -= allocation->allocatedSize();
  }

  // Advice in the spirit of llama.cpp's "failed to mlock" warning: what failed, the limit, and how to lift it.
  std::string wiringAdvice(size_t bytes, int errnum) {
    std::ostringstream advice;
    if (errnum == EFAULT) {
      // WireFile: a mapped file shrank under the mapping (truncated by someone else).
      advice << "wiring " << bytes << " bytes of a mapped file failed (EFAULT): the file is shorter than when it "
             << "was mapped (truncated since?), and its pages past the new end cannot be read. It stays mapped "
             << "but unwired; reading past the new end through a view raises SIGBUS, as with any mmap.";
      lastWiringError_ = advice.str();
      return lastWiringError_;
    }
    advice << "mlock of " << bytes << " bytes failed (" << ErrnoName(errnum) << ": " << ErrorText(errnum) << ")";
    struct rlimit limit;
    if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      advice << "; this process may lock " << static_cast<unsigned long long>(limit.rlim_cur)
             << " bytes (RLIMIT_MEMLOCK)";
    }
    advice << ". The memory stays usable but may be paged out. To wire it, raise the limit (`ulimit -l unlimited`, "
              "LimitMEMLOCK=infinity in a systemd unit, --ulimit memlock=-1 for docker) or run with CAP_IPC_LOCK.";
    lastWiringError_ = advice.str();
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
