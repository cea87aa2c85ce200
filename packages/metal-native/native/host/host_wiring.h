// How the host layer wires memory (host_wiring.cc): the locks of small buffers' shared pages, a mapped file
// wired without copying it, and the advice given when wiring fails. Used by host_platform.cc's wiring.
#ifndef NUVEC_HOST_WIRING_H_
#define NUVEC_HOST_WIRING_H_

#include <cstddef>
#include <string>

namespace nuvec {

// Locks the pages under the small buffer [address, address + length), each page once however many wired
// buffers share it (a process-wide count). 0 on success, else the errno of the failed mlock (nothing stays
// locked or counted by the call); std::bad_alloc before anything is locked.
int LockSmallPages(const void* address, size_t length, size_t pageSize);
// Gives back the locks LockSmallPages took for the same buffer: a page is unlocked at its last.
void UnlockSmallPages(const void* address, size_t length, size_t pageSize);

// Wires the mapped file [data, data + length) without copying it (lock on fault, then faulted in for
// reading). 0 on success, else the errno: EFAULT when the file shrank under the mapping (nothing stays
// locked then).
int WireFile(void* data, size_t length, size_t pageSize);
// Faults in every page of [data, data + length) for reading without ever raising SIGBUS. 0 on success,
// EFAULT when a page is past the end of its file (or cannot be read), another errno when neither way works.
int PopulateForReading(void* data, size_t length, size_t pageSize);

// What failed when wiring `bytes` failed with `errnum`, the limit that refused it and how to lift it.
std::string WiringAdvice(size_t bytes, int errnum);

}  // namespace nuvec

#endif  // NUVEC_HOST_WIRING_H_
