// How the host layer wires memory (mlock and its kin), apart from how it takes memory (host_platform.cc):
// small buffers share pages, so their pages are locked through a process-wide reference count; a mapped
// file is locked on fault and faulted in for reading, never touched, so that copy-on-write holds and a file
// truncated under the mapping fails with EFAULT instead of raising SIGBUS; and a failure is explained with
// the limit that refused it and how to lift it. Apart because none of it depends on how the memory was
// taken: each function gets an address, a length and the page size.
#include "host_wiring.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/platform.h"

namespace nuvec {
namespace {

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

}  // namespace

int LockSmallPages(const void* address, size_t length, size_t pageSize) {
  return SmallPageLocks::instance().lock(address, length, pageSize);
}

void UnlockSmallPages(const void* address, size_t length, size_t pageSize) {
  SmallPageLocks::instance().unlock(address, length, pageSize);
}

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
int WireFile(void* data, size_t length, size_t pageSize) {
  // Ask for the file's pages to be read ahead before locking them in (a hint: its failure is harmless).
  madvise(data, length, MADV_WILLNEED);
#if defined(__linux__) && defined(MLOCK_ONFAULT)
  if (mlock2(data, length, MLOCK_ONFAULT) == 0) {
    int errnum = PopulateForReading(data, length, pageSize);
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
int PopulateForReading(void* data, size_t length, size_t pageSize) {
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
  size_t pages = (length + pageSize - 1) / pageSize;
  for (size_t first = 0; first < pages; first += kPagesPerCall) {
    size_t count = std::min(kPagesPerCall, pages - first);
    for (size_t index = 0; index < count; index += 1) {
      local[index] = {&sink[index], 1};
      remote[index] = {static_cast<unsigned char*>(data) + (first + index) * pageSize, 1};
    }
    ssize_t read = process_vm_readv(getpid(), local, count, remote, count, 0);
    if (read < 0) return errno;
    if (static_cast<size_t>(read) < count) return EFAULT;
  }
  return 0;
#else
  (void)data;
  (void)length;
  (void)pageSize;
  return ENOSYS;
#endif
}

// Advice in the spirit of llama.cpp's "failed to mlock" warning: what failed, the limit, and how to lift it.
std::string WiringAdvice(size_t bytes, int errnum) {
  std::ostringstream advice;
  if (errnum == EFAULT) {
    // WireFile: a mapped file shrank under the mapping (truncated by someone else).
    advice << "wiring " << bytes << " bytes of a mapped file failed (EFAULT): the file is shorter than when it "
           << "was mapped (truncated since?), and its pages past the new end cannot be read. It stays mapped "
           << "but unwired; reading past the new end through a view raises SIGBUS, as with any mmap.";
    return advice.str();
  }
  advice << "mlock of " << bytes << " bytes failed (" << ErrnoName(errnum) << ": " << ErrorText(errnum) << ")";
  struct rlimit limit;
  if (getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    advice << "; this process may lock " << static_cast<unsigned long long>(limit.rlim_cur)
           << " bytes (RLIMIT_MEMLOCK)";
  }
  advice << ". The memory stays usable but may be paged out. To wire it, raise the limit (`ulimit -l unlimited`, "
            "LimitMEMLOCK=infinity in a systemd unit, --ulimit memlock=-1 for docker) or run with CAP_IPC_LOCK.";
  return advice.str();
}

}  // namespace nuvec
