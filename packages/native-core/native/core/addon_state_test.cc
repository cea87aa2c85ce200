// Unit test of AddonState (addon_state.h): the ownership rules, with plain C++ and no N-API. Compiled and
// run by test/native-core.test.ts (the C++ compiler node-gyp uses), or by hand:
//   c++ -std=c++17 -Wall -Wextra -o /tmp/addon_state_test core/addon_state_test.cc core/addon_state.cc && /tmp/addon_state_test
// A fake platform layer (addon_state_fake_test.h) counts what was really freed, so each rule is checked
// against the memory itself, not only against the state's counters. Prints one line per check group; exits
// non-zero at the first failure.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "addon_state.h"
#include "addon_state_fake_test.h"
#include "allocation_failure_test.h"
#include "check_test.h"

namespace {

using nuvec::Allocation;
using nuvec::ResidencySet;

using nuvec_test::CompletesFailingAt;
using nuvec_test::FakeAllocation;
using nuvec_test::FakeSet;
using nuvec_test::Fixture;
using nuvec_test::Freed;

void AddAndRelease() {
  Fixture f;
  uint64_t buffer = f.buffer(4096);
  uint64_t other = f.buffer(300);
  uint64_t mapping = f.mapping(16384);
  f.set();
  const nuvec::Counters& counters = f.state.counters;
  CHECK(counters.buffersMade == 2 && counters.bufferBytes == 4396 && counters.residencySetsMade == 1);
  CHECK(counters.mappingsMade == 1 && counters.mappedBytes == 16384 && counters.quarantinedAllocations == 0);
  CHECK(f.externalBytes == 4396);  // mapped files are not V8's business
  CHECK(f.state.FindAllocation(buffer) != nullptr);
  f.state.HandleDone(buffer, true);
  CHECK(f.freed.allocations == 1 && f.state.FindAllocation(buffer) == nullptr);
  CHECK(counters.buffersReleased == 1 && counters.bufferBytes == 300 && f.externalBytes == 300);
  CHECK(counters.mappingsReleased == 0 && counters.mappedBytes == 16384);
  // A second release, or the handle's collection after release(), finds nothing to do.
  f.state.HandleDone(buffer, true);
  f.state.HandleDone(buffer, false);
  CHECK(counters.buffersReleased == 1 && f.freed.allocations == 1);
  f.state.HandleDone(mapping, false);
  CHECK(f.freed.allocations == 2 && counters.mappingsReleased == 1 && counters.mappedBytes == 0);
  f.state.HandleDone(other, false);
  CHECK(f.state.OwnedAllocations() == 0 && counters.bufferBytes == 0 && f.externalBytes == 0);
  std::puts("ok add/release: counted once, freed once, V8 told of buffers only");
}

void ViewsDetachedByUs() {
  Fixture f;
  uint64_t buffer = f.buffer(256);
  uint64_t view = f.state.ViewCreated(buffer);
  // release(): we detach the view, nothing escaped, so the memory goes at once (its finalizer comes later).
  f.state.ViewDetachedByUs(buffer, view);
  CHECK(!f.state.SettleViews(buffer));
  f.state.HandleDone(buffer, true);
  CHECK(f.freed.allocations == 1 && f.state.counters.quarantinedAllocations == 0);
  f.state.ViewCollected(buffer, view);  // the late finalizer finds nothing
  CHECK(f.freed.allocations == 1);
  // A cached buffer's views, each detached on free before the next is made, their finalizers all pending
  // (a loop that never yields): no record is kept of them, so settling costs the same on every call.
  uint64_t cached = f.buffer(4096);
  std::vector<uint64_t> pending;
  bool escaped = false;
  for (int cycle = 0; cycle < 100000; cycle += 1) {
    uint64_t next = f.state.ViewCreated(cached);
    f.state.ViewDetachedByUs(cached, next);
    escaped = escaped || f.state.SettleViews(cached);
    if (cycle % 1000 == 0) pending.push_back(next);
  }
  CHECK(!escaped && f.state.ViewRecords(cached) == 0);
  for (uint64_t late : pending) f.state.ViewCollected(cached, late);  // the finalizers, a turn later
  CHECK(f.state.FindAllocation(cached) != nullptr && f.freed.allocations == 1);
  f.state.HandleDone(cached, true);
  CHECK(f.freed.allocations == 2 && f.state.counters.quarantinedAllocations == 0);
  std::puts("ok views detached by us: freed at release, no record kept of them");
}

void EscapedViewsQuarantine() {
  Fixture f;
  uint64_t buffer = f.buffer(1024);
  uint64_t ours = f.state.ViewCreated(buffer);
  uint64_t movedA = f.state.ViewCreated(buffer);
  uint64_t movedB = f.state.ViewCreated(buffer);
  // release(): ours is detached by us; the two others were transferred away by someone else.
  f.state.ViewDetachedByUs(buffer, ours);
  CHECK(f.state.SettleViews(buffer));
  f.state.HandleDone(buffer, true);
  const nuvec::Counters& counters = f.state.counters;
  CHECK(f.freed.allocations == 0 && counters.quarantinedAllocations == 1 && counters.quarantinedBytes == 1024);
  CHECK(f.state.ViewRecords(buffer) == 2);  // the two moved views; ours went when we detached it
  CHECK(f.state.QuarantinedBytes(buffer) == 1024);
  CHECK(counters.buffersReleased == 1 && counters.bufferBytes == 0);  // released for JS
  CHECK(f.externalBytes == 1024);                                     // still held
  f.state.ViewCollected(buffer, ours);
  f.state.ViewCollected(buffer, movedA);
  // One escaped view still reaches the memory.
  CHECK(f.freed.allocations == 0 && counters.quarantinedAllocations == 1);
  f.state.ViewCollected(buffer, movedB);
  CHECK(f.freed.allocations == 1 && f.state.QuarantinedBytes(buffer) == 0 && f.externalBytes == 0);
  CHECK(counters.quarantinedAllocations == 0 && counters.quarantinedBytes == 0);
  std::puts("ok escaped views: quarantined until the last one is collected");
}

void HandleCollected() {
  Fixture f;
  // Collected with a live view (never released): the view keeps the memory until its finalizer.
  uint64_t buffer = f.buffer(512);
  uint64_t view = f.state.ViewCreated(buffer);
  f.state.HandleDone(buffer, false);
  const nuvec::Counters& counters = f.state.counters;
  // Not escaped: merely still reachable, so not quarantined.
  CHECK(f.freed.allocations == 0 && counters.buffersReleased == 1 && counters.quarantinedAllocations == 0);
  f.state.ViewCollected(buffer, view);
  CHECK(f.freed.allocations == 1);
  // (Collected after release(), nothing is left to do: AddAndRelease.)
  // Collected with an escaped view (detachContents() found it transferred away, then the handle went).
  uint64_t third = f.buffer(512);
  uint64_t moved = f.state.ViewCreated(third);
  CHECK(f.state.SettleViews(third));
  CHECK(counters.quarantinedAllocations == 0);  // not released yet: not counted
  f.state.HandleDone(third, false);
  CHECK(counters.quarantinedAllocations == 1 && counters.quarantinedBytes == 512 && f.freed.allocations == 1);
  f.state.ViewCollected(third, moved);
  CHECK(counters.quarantinedAllocations == 0 && counters.quarantinedBytes == 0 && f.freed.allocations == 2);
  CHECK(f.externalBytes == 0);
  std::puts("ok handle collected with a view live or escaped");
}

void ResidencySetsHoldMemory() {
  Fixture f;
  uint64_t setId = f.set();
  ResidencySet* set = f.state.FindSet(setId);
  CHECK(set != nullptr && f.state.counters.residencySetsMade == 1);
  uint64_t buffer = f.buffer(4096);
  Allocation* allocation = f.state.FindAllocation(buffer);
  f.state.AddToSet(set, buffer);
  f.state.Commit(set);
  CHECK(set->members.count(allocation) == 1 && allocation->sets.count(set) == 1);
  CHECK(set->allocationCount() == 1 && set->allocatedSize() == 4096);
  // Released while the set holds it: counted as released, memory kept until the set lets go.
  f.state.HandleDone(buffer, true);
  CHECK(f.freed.allocations == 0 && f.state.counters.buffersReleased == 1);
  // remove + commit lets go: freed, and the membership is gone on both sides.
  f.state.RemoveFromSet(set, buffer);
  CHECK(f.freed.allocations == 0);  // staged only
  f.state.Commit(set);
  CHECK(f.freed.allocations == 1 && set->members.empty() && set->allocationCount() == 0);
  // Added and removed again before any commit: dropped at the commit.
  uint64_t staged = f.buffer(128);
  f.state.AddToSet(set, staged);
  f.state.HandleDone(staged, false);
  f.state.RemoveFromSet(set, staged);
  f.state.Commit(set);
  CHECK(f.freed.allocations == 2 && set->members.empty());
  // Two sets: the memory goes when the last one lets go; freeing a set frees what it alone held.
  uint64_t otherId = f.set();
  ResidencySet* other = f.state.FindSet(otherId);
  uint64_t shared = f.buffer(8192);
  Allocation* sharedAllocation = f.state.FindAllocation(shared);
  f.state.AddToSet(set, shared);
  f.state.AddToSet(other, shared);
  f.state.Commit(set);
  f.state.Commit(other);
  f.state.HandleDone(shared, true);
  f.state.FreeSet(setId);
  CHECK(f.freed.sets == 1 && f.state.FindSet(setId) == nullptr);
  CHECK(f.freed.allocations == 2 && sharedAllocation->sets.size() == 1);
  f.state.FreeSet(otherId);
  CHECK(f.freed.sets == 2 && f.freed.allocations == 3);
  f.state.FreeSet(otherId);  // twice (release() then the handle's collection): nothing
  CHECK(f.freed.sets == 2);
  // A live allocation outlives the set that held it, and leaves it cleanly.
  uint64_t thirdId = f.set();
  uint64_t live = f.buffer(64);
  f.state.AddToSet(f.state.FindSet(thirdId), live);
  f.state.FreeSet(thirdId);
  CHECK(f.state.FindAllocation(live) != nullptr && f.state.FindAllocation(live)->sets.empty());
  f.state.HandleDone(live, true);
  CHECK(f.freed.allocations == 4 && f.externalBytes == 0 && f.state.OwnedAllocations() == 0);
  std::puts("ok residency sets: hold released memory, membership cleaned up on both sides");
}

void TearDown() {
  Fixture f;
  uint64_t setId = f.set();
  uint64_t held = f.buffer(4096);
  f.state.AddToSet(f.state.FindSet(setId), held);
  f.state.Commit(f.state.FindSet(setId));
  f.state.HandleDone(held, true);
  // Released with a view moved away (quarantined), and live with a view the binding could not detach at
  // teardown (moved away, perhaps to another thread): both may be reached from outside, so both stay.
  uint64_t quarantined = f.buffer(4096);
  f.state.ViewCreated(quarantined);
  f.state.SettleViews(quarantined);
  f.state.HandleDone(quarantined, true);
  uint64_t moved = f.buffer(2048);
  f.state.ViewCreated(moved);
  // A range with a view moved away keeps its segment (no memory of its own): both abandoned.
  f.state.ViewCreated(f.state.AddRange(f.buffer(8192), 0, 512));
  // Live with a view the binding detached at teardown: nothing reaches it any more.
  uint64_t detached = f.buffer(1024);
  f.state.ViewDetachedByUs(detached, f.state.ViewCreated(detached));
  f.mapping(100);
  int64_t before = f.externalBytes;
  nuvec::AbandonedTotals abandonedBefore = nuvec::ProcessAbandoned();
  f.state.TearDown();
  // The process counts memory: the range and its segment are one allocation of 8192 bytes there.
  CHECK(nuvec::ProcessAbandoned().allocations == abandonedBefore.allocations + 3);
  CHECK(nuvec::ProcessAbandoned().bytes == abandonedBefore.bytes + 4096 + 2048 + 8192);
  CHECK(f.state.tornDown && f.state.AbandonedAllocations() == 4);
  CHECK(f.freed.allocations == 3 && f.freed.sets == 1);  // held, detached and the mapping
  CHECK(f.state.OwnedAllocations() == 0 && f.state.OwnedSets() == 0);
  CHECK(f.externalBytes == before);  // no V8 accounting while the environment goes away
  // Node calls the views' finalizers during the teardown, moved ones too: they find nothing to free.
  f.state.ViewCollected(moved, 0);
  f.state.TearDown();  // twice: nothing
  CHECK(f.freed.allocations == 3);
  std::puts("ok teardown: everything given back, sets first, except what a moved view may still reach");
}

void Ranges() {
  Fixture f;
  uint64_t segment = f.buffer(8192);
  uint64_t range = f.state.AddRange(segment, 4096, 1024);
  CHECK(range != 0 && f.state.AddRange(999, 0, 1) == 0);
  Allocation* memory = f.state.FindAllocation(range);
  CHECK(memory != nullptr && memory->length() == 1024 && memory->allocatedSize() == 1024);
  // Ranges are not buffers of their own in the counters, nor in V8's accounting.
  CHECK(f.state.counters.buffersMade == 1 && f.state.counters.bufferBytes == 8192 && f.externalBytes == 8192);
  // The segment released first: counted released, its memory kept for the range.
  f.state.HandleDone(segment, true);
  CHECK(f.state.counters.buffersReleased == 1 && f.freed.allocations == 0);
  CHECK(f.state.FindAllocation(segment) != nullptr);
  f.state.HandleDone(range, true);
  CHECK(f.freed.allocations == 1 && f.state.OwnedAllocations() == 0 && f.externalBytes == 0);
  std::puts("ok ranges: a segment's memory stays while a range of it exists (through teardown: TearDown)");
}

// A view's end reported to `ledger` from a thread of its own, as a backing store's deleter may run.
void EndOnAnotherThread(nuvec::ViewLedger* ledger, uint64_t id, uint64_t viewId) {
  std::thread([ledger, id, viewId] { ledger->ViewGone(id, viewId); }).join();
}

// Views whose backing stores report their end to a ViewLedger, from any thread (the addon's V8 views).
void ViewLedger() {
  Fixture f;
  f.state.viewLedger = std::make_shared<nuvec::ViewLedger>();
  std::shared_ptr<nuvec::ViewLedger> ledger = f.state.viewLedger;
  // Detached by us: the store's deleter ran at once, so the view never escapes.
  uint64_t cached = f.buffer(4096);
  uint64_t first = f.state.ViewCreated(cached);
  ledger->ViewGone(cached, first);
  CHECK(ledger->MayHaveEnds() && f.state.ViewRecords(cached) == 1);  // queued, not applied yet
  f.state.SettleEndedViews();
  CHECK(!ledger->MayHaveEnds() && f.state.ViewRecords(cached) == 0 && !f.state.SettleViews(cached));
  // Moved away (its store lives on elsewhere): escaped, quarantined once released, freed when it ends on
  // another thread and the end is applied.
  uint64_t moved = f.state.ViewCreated(cached);
  CHECK(f.state.SettleViews(cached));
  f.state.HandleDone(cached, true);
  CHECK(f.freed.allocations == 0 && f.state.counters.quarantinedBytes == 4096);
  EndOnAnotherThread(ledger.get(), cached, moved);
  CHECK(f.freed.allocations == 0);  // not before the environment's thread applies it
  f.state.SettleEndedViews();
  CHECK(f.freed.allocations == 1 && f.state.counters.quarantinedBytes == 0 && f.state.counters.quarantinedAllocations == 0);

  // Teardown: what views still reach goes to the ledger, freed when the last view of a group ends.
  uint64_t live = f.buffer(2048);
  uint64_t liveView = f.state.ViewCreated(live);
  uint64_t segment = f.buffer(8192);
  uint64_t range = f.state.AddRange(segment, 0, 512);
  uint64_t rangeView = f.state.ViewCreated(range);
  uint64_t segmentView = f.state.ViewCreated(segment);
  uint64_t ended = f.buffer(1024);
  uint64_t endedView = f.state.ViewCreated(ended);
  ledger->ViewGone(ended, endedView);  // queued just before the teardown: applied by it
  f.buffer(256);                       // no view: freed at once
  nuvec::AbandonedTotals before = nuvec::ProcessAbandoned();
  f.state.TearDown();
  CHECK(f.freed.allocations == 3);  // the one cached before, and the two without a view now
  CHECK(ledger->OrphanGroups() == 2);
  CHECK(nuvec::ProcessAbandoned().allocations == before.allocations + 2);
  CHECK(nuvec::ProcessAbandoned().bytes == before.bytes + 2048 + 8192);
  EndOnAnotherThread(ledger.get(), live, liveView);
  CHECK(f.freed.allocations == 4 && ledger->OrphanGroups() == 1);
  EndOnAnotherThread(ledger.get(), range, rangeView);
  CHECK(f.freed.allocations == 4);  // the segment's own view still reaches it
  EndOnAnotherThread(ledger.get(), segment, segmentView);
  // The range (no memory of its own), then its segment.
  CHECK(f.freed.allocations == 5 && ledger->OrphanGroups() == 0);
  CHECK(nuvec::ProcessAbandoned().allocations == before.allocations);
  CHECK(nuvec::ProcessAbandoned().bytes == before.bytes);
  EndOnAnotherThread(ledger.get(), live, liveView);  // twice: nothing
  CHECK(f.freed.allocations == 5);
  std::puts("ok view ledger: ends from any thread, applied on the environment's; after teardown, the last end frees");
}

// The teardown's handover to the ledger with a failure at each allocation in turn: either it is handed over
// (the last end frees it) or, with no room for that, abandoned and counted; never freed under a view, never a
// crash, and no end lost on the way.
void ViewLedgerAllocationFailures() {
  bool handedOver = false;
  bool abandoned = false;
  for (long at = 0; at < 40 && !(handedOver && abandoned && at > 30); at += 1) {
    Fixture f;
    f.state.viewLedger = std::make_shared<nuvec::ViewLedger>();
    std::shared_ptr<nuvec::ViewLedger> ledger = f.state.viewLedger;
    uint64_t live = f.buffer(2048);
    uint64_t liveView = f.state.ViewCreated(live);
    uint64_t ended = f.buffer(1024);
    uint64_t endedView = f.state.ViewCreated(ended);
    ledger->ViewGone(ended, endedView);  // queued: the teardown applies it
    EndOnAnotherThread(ledger.get(), ended, 999999);  // an end of no view
    nuvec::AbandonedTotals before = nuvec::ProcessAbandoned();
    CHECK(CompletesFailingAt(at, [&] { f.state.TearDown(); }));  // never throws
    CHECK(f.state.tornDown && f.state.OwnedAllocations() == 0);
    CHECK(f.freed.allocations == 1);  // the ended one, either way
    CHECK(nuvec::ProcessAbandoned().bytes == before.bytes + 2048);
    EndOnAnotherThread(ledger.get(), live, liveView);
    if (ledger->OrphanGroups() == 0 && f.freed.allocations == 2) {
      handedOver = true;
      CHECK(nuvec::ProcessAbandoned().bytes == before.bytes);
    } else {
      abandoned = true;  // kept for the rest of the process, counted
      CHECK(f.freed.allocations == 1 && nuvec::ProcessAbandoned().bytes == before.bytes + 2048);
    }
  }
  CHECK(handedOver && abandoned);
  std::puts("ok view ledger allocation failures: handed over or abandoned, never freed under a view");
}

// Every step that can throw std::bad_alloc, failed in turn: the state is left as before the call (no
// counter moved, nothing recorded half way), and what the call was given is freed or still freeable.
void AllocationFailures() {
  // AddAllocation: a failed record frees the allocation with the argument and counts nothing.
  for (long at = 0; at < 8; at += 1) {
    Fixture f;
    auto allocation = std::make_unique<FakeAllocation>(4096, &f.freed);
    uint64_t id = 0;
    if (!CompletesFailingAt(at, [&] { id = f.state.AddAllocation(std::move(allocation), false); })) {
      CHECK(id == 0 && f.freed.allocations == 1 && f.externalBytes == 0);
      CHECK(f.state.counters.buffersMade == 0 && f.state.counters.bufferBytes == 0);
    } else {
      f.state.HandleDone(id, true);
      CHECK(f.freed.allocations == 1 && f.externalBytes == 0);
    }
  }
  // AddRange: a failed range leaves its parent free to go when released.
  for (long at = 0; at < 8; at += 1) {
    Fixture f;
    uint64_t parent = f.buffer(65536);
    uint64_t range = 0;
    CompletesFailingAt(at, [&] { range = f.state.AddRange(parent, 0, 4096); });
    if (range != 0) f.state.HandleDone(range, true);
    f.state.HandleDone(parent, true);
    CHECK(f.freed.allocations == 1);  // a range is no memory of its own: only the parent is freed
    CHECK(f.state.FindAllocation(parent) == nullptr);
  }
  // AddToSet: all or nothing; then the set's end and the release free the allocation.
  for (long at = 0; at < 12; at += 1) {
    Fixture f;
    uint64_t buffer = f.buffer(4096);
    uint64_t set = f.set();
    ResidencySet* handle = f.state.FindSet(set);
    Allocation* allocation = f.state.FindAllocation(buffer);
    bool added = CompletesFailingAt(at, [&] { f.state.AddToSet(handle, buffer); });
    CHECK(handle->members.count(allocation) == (added ? 1u : 0u));
    CHECK(allocation->sets.count(handle) == (added ? 1u : 0u));
    f.state.HandleDone(buffer, true);
    CHECK(f.freed.allocations == (added ? 0 : 1));
    f.state.FreeSet(set);
    CHECK(f.freed.allocations == 1 && f.freed.sets == 1);
  }
  // FreeSet: a failure leaves the set as it was, to be freed again.
  for (long at = 0; at < 4; at += 1) {
    Fixture f;
    uint64_t buffer = f.buffer(4096);
    uint64_t set = f.set();
    f.state.AddToSet(f.state.FindSet(set), buffer);
    f.state.Commit(f.state.FindSet(set));
    if (!CompletesFailingAt(at, [&] { f.state.FreeSet(set); })) {
      CHECK(f.state.FindSet(set) != nullptr);
      CHECK(f.state.FindAllocation(buffer)->sets.size() == 1);
      f.state.FreeSet(set);
    }
    CHECK(f.freed.sets == 1);
    f.state.HandleDone(buffer, true);
    CHECK(f.freed.allocations == 1);
  }
  std::puts("ok allocation failures");
}

}  // namespace

int main() {
  AllocationFailures();
  AddAndRelease();
  ViewsDetachedByUs();
  EscapedViewsQuarantine();
  HandleCollected();
  ResidencySetsHoldMemory();
  TearDown();
  Ranges();
  ViewLedger();
  ViewLedgerAllocationFailures();
  std::printf("all %d checks passed\n", nuvec_test::checks);
  return 0;
}
