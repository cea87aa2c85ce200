// Allocation-failure injection for the C++ unit tests of native/core (*_test.cc): the global operator new is
// replaced, in the test binaries only, by one that throws std::bad_alloc at the n-th allocation from now
// (FailAllocationAfter(n)), so that a test can run an operation with a failure at each of its allocations
// in turn and check that nothing it acquired leaks. Included by exactly one file per test binary.
#ifndef NUVEC_CORE_ALLOCATION_FAILURE_TEST_H_
#define NUVEC_CORE_ALLOCATION_FAILURE_TEST_H_

#include <cstdlib>
#include <new>

namespace nuvec_test {
// Allocations left before the injected failure; -1: none injected.
inline long allocationsBeforeFailure = -1;
// Whether the injected failure happened.
inline bool allocationFailed = false;

inline void FailAllocationAfter(long allocations) {
  allocationsBeforeFailure = allocations;
  allocationFailed = false;
}
inline void StopFailingAllocations() { allocationsBeforeFailure = -1; }
}  // namespace nuvec_test

void* operator new(std::size_t size) {
  if (nuvec_test::allocationsBeforeFailure == 0) {
    nuvec_test::allocationsBeforeFailure = -1;
    nuvec_test::allocationFailed = true;
    throw std::bad_alloc();
  }
  if (nuvec_test::allocationsBeforeFailure > 0) nuvec_test::allocationsBeforeFailure -= 1;
  void* memory = std::malloc(size == 0 ? 1 : size);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
}
void operator delete(void* memory) noexcept { std::free(memory); }
void operator delete(void* memory, std::size_t) noexcept { std::free(memory); }

#endif  // NUVEC_CORE_ALLOCATION_FAILURE_TEST_H_
