// Unit test of the host layer's ownership (native/host/host_platform.cc): every acquisition is owned from the
// moment it exists. Each operation runs with std::bad_alloc injected at each of its allocations in turn
// (native-core's allocation_failure_test.h), and afterwards nothing it acquired is left: the process's
// accounts of buffer bytes and mappings, the C heap (aligned_alloc's blocks), the mappings of /proc/self/maps
// and the locked memory of VmLck are back where they were. The layer's source is included, so that the test
// reads its process-wide accounts. Compiled and run by test/host-native.test.ts.
#include <malloc.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "core/allocation_failure_test.h"
#include "core/check_test.h"
#include "host_platform.cc"

namespace nuvec_test {
// The first pass: the heap is not compared (see main).
bool warmingUp = false;
}  // namespace nuvec_test

namespace {

using nuvec::Allocation;
using nuvec::Failure;
using nuvec::Platform;

// Lines of /proc/self/maps: one per mapping (read with the C library, not operator new).
int Mappings() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return -1;
  int lines = 0;
  for (int c = std::fgetc(maps); c != EOF; c = std::fgetc(maps)) lines += c == '\n';
  std::fclose(maps);
  return lines;
}

// VmLck of /proc/self/status, in kB.
long LockedKilobytes() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return -1;
  char line[256];
  long locked = -1;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::strncmp(line, "VmLck:", 6) == 0) locked = std::strtol(line + 6, nullptr, 10);
  }
  std::fclose(status);
  return locked;
}

// What the process holds that an operation could leak.
struct Held {
  uint64_t bytes = nuvec::processBufferBytes.load();
  uint64_t mappings = nuvec::processMappings.load();
  size_t heap = mallinfo2().uordblks;
  int maps = Mappings();
  long locked = LockedKilobytes();
  bool operator==(const Held& other) const {
    return bytes == other.bytes && mappings == other.mappings && (nuvec_test::warmingUp || heap == other.heap) &&
           maps == other.maps && locked == other.locked;
  }
};

// Runs `operation` with a failure injected at its `at`-th allocation; true when the failure happened.
template <typename Operation>
bool WithFailureAt(long at, Operation operation) {
  nuvec_test::FailAllocationAfter(at);
  try {
    operation();
  } catch (const std::bad_alloc&) {
  }
  nuvec_test::StopFailingAllocations();
  return nuvec_test::allocationFailed;
}

// Makes an allocation with a failure injected at each of its first 16 allocations in turn: each time it is
// made or the failure happened, and after it is gone nothing is held. True when a failure happened at all.
template <typename Make>
bool NothingLeftAtAnyFailure(const char* what, Make make) {
  bool failedOnce = false;
  for (long at = 0; at < 16; at += 1) {
    Held before;
    std::unique_ptr<Allocation> made;
    bool failed = WithFailureAt(at, [&] {
      Failure failure;
      made = make(&failure);
    });
    failedOnce = failedOnce || failed;
    CHECK(failed || made != nullptr);
    made.reset();
    Held after;
    if (!(after == before))
      std::fprintf(stderr, "warm %d %s at %ld: bytes %llu-%llu mappings %llu-%llu heap %zu-%zu maps %d-%d locked %ld-%ld\n",
                   nuvec_test::warmingUp, what, at, (unsigned long long)before.bytes, (unsigned long long)after.bytes,
                   (unsigned long long)before.mappings, (unsigned long long)after.mappings, before.heap, after.heap,
                   before.maps, after.maps, before.locked, after.locked);
    CHECK(after == before);
  }
  return failedOnce;
}

void Buffers(Platform* platform) {
  for (size_t bytes : {size_t{100}, size_t{1} << 20}) {
    CHECK(NothingLeftAtAnyFailure("a buffer", [&](Failure* failure) { return platform->newBuffer(bytes, failure); }));
  }
  if (!nuvec_test::warmingUp) std::puts("ok buffers");
}

void MappedFiles(Platform* platform) {
  char path[] = "/tmp/nuvec-host-test-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  std::string bytes(100000, 'x');
  CHECK(write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  close(fd);
  NothingLeftAtAnyFailure("a mapped file", [&](Failure* failure) { return platform->mapFile(path, failure); });
  unlink(path);
  if (!nuvec_test::warmingUp) std::puts("ok mapped files");
}

void Wiring(Platform* platform) {
  for (size_t bytes : {size_t{100}, size_t{1} << 16}) {
    for (long at = 0; at < 24; at += 1) {
      Failure failure;
      std::unique_ptr<Allocation> buffer = platform->newBuffer(bytes, &failure);
      std::unique_ptr<Allocation> neighbour = platform->newBuffer(bytes, &failure);
      CHECK(buffer != nullptr && neighbour != nullptr);
      Held before;
      {
        std::unique_ptr<nuvec::ResidencySet> set = platform->newResidencySet(&failure);
        set->add(buffer.get());
        set->add(neighbour.get());
        set->commit();
        WithFailureAt(at, [&] { set->requestResidency(); });
        set->endResidency();
      }
      CHECK(Held().locked == before.locked);
    }
  }
  if (!nuvec_test::warmingUp) std::puts("ok wiring");
}

}  // namespace

int main() {
  Failure failure;
  std::unique_ptr<Platform> platform = nuvec::CreatePlatform(&failure);
  CHECK(platform != nullptr);
  // The first throws through each path make the C++ runtime's own one-time allocations (the unwinder's
  // caches): a first pass of every test, its checks not counted against the heap, runs them.
  nuvec_test::warmingUp = true;
  Buffers(platform.get());
  MappedFiles(platform.get());
  Wiring(platform.get());
  nuvec_test::warmingUp = false;
  Buffers(platform.get());
  MappedFiles(platform.get());
  Wiring(platform.get());
  std::printf("all %d checks passed\n", nuvec_test::checks);
  return 0;
}
