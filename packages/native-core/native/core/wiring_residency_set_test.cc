// Unit test of WiringResidencySet (wiring_residency_set.h), the residency set of the host and CUDA layers:
// wiring follows the standing request and the commits, a failure is counted, advised and retried at the
// next request, removal and the set's end unwire, and its destruction is counted. Compiled and run by
// test/native-core.test.ts, like addon_state_test.cc, against a fake Wiring that records its calls.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "allocation_failure_test.h"
#include "check_test.h"
#include "wiring_residency_set.h"

namespace {

using nuvec::Allocation;
using nuvec::FreedCounters;
using nuvec::WiringResidencySet;

class FakeAllocation final : public Allocation {
 public:
  void* data() const override { return nullptr; }
  size_t length() const override { return 64; }
  size_t allocatedSize() const override { return 64; }
};

// Wires whatever is asked, except the allocations in `refuse` (error 12, as ENOMEM).
class FakeWiring final : public nuvec::Wiring {
 public:
  std::set<Allocation*> wired;
  std::set<Allocation*> refuse;
  int wireCalls = 0;
  int wireOne(Allocation* allocation) override {
    wireCalls += 1;
    if (refuse.count(allocation) > 0) return 12;
    wired.insert(allocation);
    return 0;
  }
  void unwireOne(Allocation* allocation) override { wired.erase(allocation); }
  std::string wiringAdvice(Allocation*, int error) override { return "refused: " + std::to_string(error); }
};

void WiringFollowsRequestAndCommits() {
  FakeWiring wiring;
  auto freed = std::make_shared<FreedCounters>();
  FakeAllocation a;
  FakeAllocation b;
  {
    WiringResidencySet set(&wiring, freed);
    set.add(&a);
    set.commit();
    CHECK(wiring.wired.empty());  // committed, but residency not requested: nothing wired
    set.requestResidency();
    CHECK(wiring.wired.count(&a) == 1);
    set.add(&b);
    CHECK(wiring.wired.count(&b) == 0);  // staged only
    set.commit();
    CHECK(wiring.wired.count(&b) == 1);  // the request stands: a commit wires what it adds
    set.remove(&a);
    set.commit();
    CHECK(wiring.wired.count(&a) == 0 && wiring.wired.count(&b) == 1);
    set.endResidency();
    CHECK(wiring.wired.empty());
    set.requestResidency();
    CHECK(wiring.wired.count(&b) == 1);
    CHECK(freed->residencySets == 0);
  }
  CHECK(wiring.wired.empty());  // destroyed: unwired what it had wired
  CHECK(freed->residencySets == 1);
  std::puts("ok wiring follows the request and the commits; the set's end unwires and is counted");
}

void FailuresAreCountedAndRetried() {
  FakeWiring wiring;
  FakeAllocation a;
  WiringResidencySet set(&wiring, std::make_shared<FreedCounters>());
  wiring.refuse.insert(&a);
  set.add(&a);
  set.commit();
  set.requestResidency();
  CHECK(set.wiringFailures() == 1 && set.lastWiringError() == "refused: 12");
  CHECK(wiring.wired.empty());
  set.requestResidency();  // retried (a limit may have been raised): refused again
  CHECK(set.wiringFailures() == 2);
  wiring.refuse.clear();
  set.requestResidency();
  CHECK(wiring.wired.count(&a) == 1 && set.wiringFailures() == 2);
  int calls = wiring.wireCalls;
  set.requestResidency();  // already wired: not asked again
  CHECK(wiring.wireCalls == calls);
  std::puts("ok failures: counted, advised, retried at the next request");
}

}  // namespace

namespace {

// Counts what is wired without allocating (an allocation here would be one the test fails on purpose).
class CountingWiring final : public nuvec::Wiring {
 public:
  int wired = 0;
  int wireOne(Allocation*) override {
    wired += 1;
    return 0;
  }
  void unwireOne(Allocation*) override { wired -= 1; }
  std::string wiringAdvice(Allocation*, int) override { return "refused"; }
};

// A lock is never held unrecorded: with the set's bookkeeping failing at each allocation in turn, ending
// residency (and the set's end) unwires all that was wired.
void AllocationFailures() {
  for (long at = 0; at < 24; at += 1) {
    CountingWiring wiring;
    auto freed = std::make_shared<FreedCounters>();
    FakeAllocation a;
    FakeAllocation b;
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
