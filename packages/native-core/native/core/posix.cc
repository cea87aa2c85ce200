// POSIX code shared by every layer (the Metal layer wraps the same mapping in a no-copy MTLBuffer, CUDA
// registers it with the driver): typed failures, errno names and texts, and mapping a whole file private and
// copy-on-write.
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "platform.h"

namespace nuvec {

Failure Failure::System(std::string syscall, int errnum, std::string path, std::string message) {
  Failure failure;
  failure.kind = Kind::kSystem;
  failure.syscall = std::move(syscall);
  failure.errnum = errnum;
  failure.path = std::move(path);
  failure.message = std::move(message);
  return failure;
}

Failure Failure::Allocation(std::string message) {
  Failure failure;
  failure.kind = Kind::kAllocation;
  failure.message = std::move(message);
  return failure;
}

Failure Failure::Argument(std::string message) {
  Failure failure;
  failure.kind = Kind::kArgument;
  failure.message = std::move(message);
  return failure;
}

Failure Failure::Format(std::string message, std::string log) {
  Failure failure;
  failure.kind = Kind::kFormat;
  failure.message = std::move(message);
  failure.log = std::move(log);
  return failure;
}

Failure Failure::Driver(std::string call, int result, std::string name, std::string message) {
  Failure failure = System(std::move(call), result, "", std::move(message));
  failure.errname = std::move(name);
  return failure;
}

namespace {
// strerror_r comes in two forms: XSI returns an int and fills the buffer, GNU (glibc with _GNU_SOURCE, which
// g++ defines) returns the text, which may or may not be the buffer. Overloads pick whichever this libc has.
[[maybe_unused]] const char* StrerrorResult(int result, const char* buffer) { return result == 0 ? buffer : nullptr; }
[[maybe_unused]] const char* StrerrorResult(const char* result, const char*) { return result; }
}  // namespace

std::string ErrorText(int errnum) {
  char buffer[256] = {0};
  const char* text = StrerrorResult(strerror_r(errnum, buffer, sizeof buffer), buffer);
  if (text == nullptr || text[0] == '\0') return "error " + std::to_string(errnum);
  return text;
}

std::string ErrnoName(int errnum) {
  // A table rather than strerrorname_np: that is glibc ≥ 2.32 only, and macOS has no equivalent.
  switch (errnum) {
#define NUVEC_ERRNO(name) \
  case name:              \
    return #name;
    NUVEC_ERRNO(EPERM)
    NUVEC_ERRNO(ENOENT)
    NUVEC_ERRNO(EIO)
    NUVEC_ERRNO(ENXIO)
    NUVEC_ERRNO(EBADF)
    NUVEC_ERRNO(EAGAIN)
    NUVEC_ERRNO(ENOMEM)
    NUVEC_ERRNO(EACCES)
    NUVEC_ERRNO(EFAULT)
    NUVEC_ERRNO(EBUSY)
    NUVEC_ERRNO(EEXIST)
    NUVEC_ERRNO(ENODEV)
    NUVEC_ERRNO(ENOTDIR)
    NUVEC_ERRNO(EISDIR)
    NUVEC_ERRNO(EINVAL)
    NUVEC_ERRNO(ENFILE)
    NUVEC_ERRNO(EMFILE)
    NUVEC_ERRNO(ETXTBSY)
    NUVEC_ERRNO(EFBIG)
    NUVEC_ERRNO(ENOSPC)
    NUVEC_ERRNO(EROFS)
    NUVEC_ERRNO(ENAMETOOLONG)
    NUVEC_ERRNO(ELOOP)
    NUVEC_ERRNO(EOVERFLOW)
    NUVEC_ERRNO(ENOTSUP)
    NUVEC_ERRNO(ECANCELED)
#if defined(EOPNOTSUPP) && EOPNOTSUPP != ENOTSUP
    NUVEC_ERRNO(EOPNOTSUPP)
#endif
#undef NUVEC_ERRNO
    default:
      return "E" + std::to_string(errnum);
  }
}

static Failure FileFailure(const char* syscall, int errnum, const std::string& path, const std::string& what) {
  return Failure::System(syscall, errnum, path,
                         "cannot map " + path + ": " + what + " (" + syscall + ": " + ErrnoName(errnum) + ")");
}

namespace {
// An open file descriptor, closed when dropped: every way out of MapWholeFile closes it, a throwing one
// (a failure's message is a std::string) included.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};
}  // namespace

FileMapping MapWholeFile(const std::string& path, size_t pageSize, Failure* failure) {
  FileMapping mapping;
  // O_NONBLOCK so that opening a FIFO by mistake cannot hang the process; it is refused below anyway.
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    int errnum = errno;
    *failure = FileFailure("open", errnum, path, ErrorText(errnum));
    return mapping;
  }
  struct stat info;
  if (fstat(fd.get(), &info) != 0) {
    int errnum = errno;
    *failure = FileFailure("fstat", errnum, path, ErrorText(errnum));
    return mapping;
  }
  // open(O_RDONLY) succeeds on a directory; report what open(2) says of a directory opened for writing
  // (the mapping is writable, copy-on-write), which is also what Node's fs says.
  if (S_ISDIR(info.st_mode)) {
    *failure = FileFailure("open", EISDIR, path, "is a directory");
    return mapping;
  }
  // What mmap(2) itself answers for a file that cannot be mapped (FIFO, socket, most devices).
  if (!S_ISREG(info.st_mode)) {
    *failure = FileFailure("mmap", ENODEV, path, "is not a regular file");
    return mapping;
  }
  // mmap(2) refuses a length of 0 with EINVAL: say so before calling it, with the same syscall and errno.
  if (info.st_size == 0) {
    *failure = FileFailure("mmap", EINVAL, path, "the file is empty");
    return mapping;
  }
  if (static_cast<uint64_t>(info.st_size) > SIZE_MAX - pageSize) {
    *failure = FileFailure("mmap", EOVERFLOW, path, "the file is too large to map");
    return mapping;
  }
  size_t length = static_cast<size_t>(info.st_size);
  size_t mappedLength = (length + pageSize - 1) / pageSize * pageSize;
  // Private and writable: a write through a view copies the page (never reaches the file, never faults).
  // The mapping keeps its own reference to the file: the descriptor closes on the way out.
  void* address = mmap(nullptr, mappedLength, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd.get(), 0);
  if (address == MAP_FAILED) {
    int errnum = errno;
    *failure = FileFailure("mmap", errnum, path, ErrorText(errnum));
    return mapping;
  }
  // From here nothing can throw: the caller takes the mapping over (the host layer at once into its owner).
  mapping.address = address;
  mapping.length = length;
  mapping.mappedLength = mappedLength;
  return mapping;
}

void UnmapFile(const FileMapping& mapping) {
  if (mapping.address != nullptr) munmap(mapping.address, mapping.mappedLength);
}

}  // namespace nuvec
