// The fake platform layer of AddonState's unit test (addon_state_test.cc): allocations and residency sets
// that count, when destroyed, what was really given back to the "system", a state with V8's accounting
// recorded, and a step run with an allocation failure injected. Apart from the test so that the test file
// holds only the ownership rules it checks. Included by addon_state_test.cc alone (after
// allocation_failure_test.h); not compiled into any addon.
#ifndef NUVEC_CORE_ADDON_STATE_FAKE_TEST_H_
#define NUVEC_CORE_ADDON_STATE_FAKE_TEST_H_

#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "addon_state.h"
#include "allocation_failure_test.h"

namespace nuvec_test {

using nuvec::AddonState;
using nuvec::Allocation;
using nuvec::ResidencySet;

// What the fake layer gave back to the "system".
struct Freed {
  int allocations = 0;
  int sets = 0;
};

class FakeAllocation final : public Allocation {
 public:
  FakeAllocation(size_t bytes, Freed* freed) : bytes_(bytes), freed_(freed) {}
  ~FakeAllocation() override { freed_->allocations += 1; }
  void* data() const override { return nullptr; }
  size_t length() const override { return bytes_; }
  size_t allocatedSize() const override { return bytes_; }

 private:
  size_t bytes_;
  Freed* freed_;
};

class FakeSet final : public ResidencySet {
 public:
  explicit FakeSet(Freed* freed) : freed_(freed) {}
  ~FakeSet() override { freed_->sets += 1; }
  void requestResidency() override {}
  void endResidency() override {}
  uint64_t wiringFailures() const override { return 0; }
  std::string lastWiringError() const override { return ""; }

 protected:
  void onCommit(const std::vector<Allocation*>&, const std::vector<Allocation*>&) override {}

 private:
  Freed* freed_;
};

// A state with V8's accounting recorded: the sum must come back to 0 once every buffer is freed.
struct Fixture {
  Freed freed;
  AddonState state;
  int64_t externalBytes = 0;
  Fixture() {
    state.accountExternalMemory = [this](int64_t bytes) { externalBytes += bytes; };
  }
  uint64_t buffer(size_t bytes) { return state.AddAllocation(std::make_unique<FakeAllocation>(bytes, &freed), false); }
  uint64_t mapping(size_t bytes) { return state.AddAllocation(std::make_unique<FakeAllocation>(bytes, &freed), true); }
  uint64_t set() { return state.AddSet(std::make_unique<FakeSet>(&freed)); }
};

// Runs `step` with std::bad_alloc injected at its allocation number `at`; returns whether it completed.
template <typename Step>
bool CompletesFailingAt(long at, Step step) {
  nuvec_test::FailAllocationAfter(at);
  bool completed = true;
  try {
    step();
  } catch (const std::bad_alloc&) {
    completed = false;
  }
  nuvec_test::StopFailingAllocations();
  return completed;
}

}  // namespace nuvec_test

#endif  // NUVEC_CORE_ADDON_STATE_FAKE_TEST_H_
