// Unit test of WiringResidencySet (wiring_residency_set.h), the residency set of the host and CUDA layers:
// wiring follows the standing request and the commits, a failure is counted, advised and retried at the
// next request, removal and the set's end unwire, and its destruction is counted. Compiled and run by
// test/native-core.test.ts, like addon_state_test.cc, against a fake Wiring that records its calls.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "allocation_failure_test.h"
#include "check_test.h"
#include "wiring_residency_set.h"

namespace {

using nuvec::Allocation;
using nuvec::FreedCounters;
using nuvec::WiringResidencySet;

// Knows whether it is wired, and may refuse to be (error 12, as ENOMEM). No allocation anywhere in the fakes:
// the allocation-failure test fails the set's own allocations, never the fakes'.
class FakeAllocation final : public Allocation {
 public:
  bool wired = false;
  bool refuse = false;
  void* data() const override { return nullptr; }
  size_t length() const override { return 64; }
  size_t allocatedSize() const override { return 64; }
};

class FakeWiring final : public nuvec::Wiring {
 public:
  int wired = 0;
  int wireCalls = 0;
  int wireOne(Allocation* allocation) override {
    wireCalls += 1;
    auto* fake = static_cast<FakeAllocation*>(allocation);
    if (fake->refuse) return 12;
    fake->wired = true;
    wired += 1;
    return 0;
  }
  void unwireOne(Allocation* allocation) override {
    static_cast<FakeAllocation*>(allocation)->wired = false;
    wired -= 1;
  }
  std::string wiringAdvice(Allocation*, int error) override { return "refused: " + std::to_string(error); }
};

// What each test starts from: the fake wiring, the counters a set's end is reported to, two allocations.
struct Fixture {
  FakeWiring wiring;
  std::shared_ptr<FreedCounters> freed = std::make_shared<FreedCounters>();
  FakeAllocation a;
  FakeAllocation b;
};

void WiringFollowsRequestAndCommits() {
  Fixture fixture;
  auto& [wiring, freed, a, b] = fixture;
  {
    WiringResidencySet set(&wiring, freed);
    set.add(&a);
    set.commit();
    CHECK(wiring.wired == 0);  // committed, but residency not requested: nothing wired
    set.requestResidency();
    CHECK(a.wired);
    set.add(&b);
    CHECK(!b.wired);  // staged only
    set.commit();
    CHECK(b.wired);  // the request stands: a commit wires what it adds
    set.remove(&a);
    set.commit();
    CHECK(!a.wired && b.wired && wiring.wired == 1);
    set.endResidency();
    CHECK(wiring.wired == 0 && !b.wired);
    set.requestResidency();
    CHECK(b.wired && wiring.wired == 1);
    CHECK(freed->residencySets == 0);
  }
  CHECK(wiring.wired == 0 && !b.wired);  // destroyed: unwired what it had wired
  CHECK(freed->residencySets == 1);
  std::puts("ok wiring follows the request and the commits; the set's end unwires and is counted");
}

void FailuresAreCountedAndRetried() {
  Fixture fixture;
  auto& [wiring, freed, a, b] = fixture;
  WiringResidencySet set(&wiring, freed);
  a.refuse = true;
  set.add(&a);
  set.commit();
  set.requestResidency();
  CHECK(set.wiringFailures() == 1 && set.lastWiringError() == "refused: 12");
  CHECK(wiring.wired == 0 && !a.wired);
  set.requestResidency();  // retried (a limit may have been raised): refused again
  CHECK(set.wiringFailures() == 2);
  a.refuse = false;
  set.requestResidency();
  CHECK(a.wired && set.wiringFailures() == 2);
  int calls = wiring.wireCalls;
  set.requestResidency();  // already wired: not asked again
  CHECK(wiring.wireCalls == calls);
  std::puts("ok failures: counted, advised, retried at the next request");
}

// A lock is never held unrecorded: with the set's bookkeeping failing at each allocation in turn, ending
// residency (and the set's end) unwires all that was wired.
void AllocationFailures() {
  for (long at = 0; at < 24; at += 1) {
    Fixture fixture;
    auto& [wiring, freed, a, b] = fixture;
    {
      WiringResidencySet set(&wiring, freed);
      set.add(&a);
      set.add(&b);
      set.commit();
      nuvec_test::FailAllocationAfter(at);
      try {
        set.requestResidency();
      } catch (const std::bad_alloc&) {
      }
      nuvec_test::StopFailingAllocations();
      CHECK(wiring.wired >= 0 && wiring.wired <= 2);
      set.endResidency();
      CHECK(wiring.wired == 0);
      set.requestResidency();
      CHECK(wiring.wired == 2);
    }
    CHECK(wiring.wired == 0);
  }
  std::puts("ok allocation failures");
}

}  // namespace

int main() {
  AllocationFailures();
  WiringFollowsRequestAndCommits();
  FailuresAreCountedAndRetried();
  std::printf("all %d checks passed\n", nuvec_test::checks);
  return 0;
}
