// See addon_state.h: the ownership rules, without N-API.
#include "addon_state.h"

#include <atomic>
#include <utility>
#include <vector>

namespace nuvec {

namespace {
std::atomic<uint64_t> abandonedAllocations{0};
std::atomic<uint64_t> abandonedBytes{0};
}  // namespace

AbandonedTotals ProcessAbandoned() { return AbandonedTotals{abandonedAllocations.load(), abandonedBytes.load()}; }

void CountAbandoned(int64_t allocations, int64_t bytes) {
  abandonedAllocations += static_cast<uint64_t>(allocations);
  abandonedBytes += static_cast<uint64_t>(bytes);
}

ViewLedger::~ViewLedger() {
  // Only when no view is left to end: whatever is still held goes (ranges first, as in the group).
  for (OrphanSlot& slot : orphans_) {
    for (auto& allocation : slot.group.allocations) allocation.reset();
  }
}

void ViewLedger::ViewGone(uint64_t id, uint64_t viewId) {
  if (std::this_thread::get_id() == owner_ && !orphaned_) {  // orphaned_ is read on its own thread only
    local_.push_back(ViewEnd{id, viewId});
    return;
  }
  OrphanGroup freed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!orphaned_) {
      ends_.push_back(ViewEnd{id, viewId});
      queued_.store(ends_.size(), std::memory_order_release);
      return;
    }
    auto view = std::lower_bound(orphanViews_.begin(), orphanViews_.end(), std::make_pair(viewId, size_t{0}));
    if (view == orphanViews_.end() || view->first != viewId || view->second == kEnded) return;
    OrphanSlot& slot = orphans_[view->second];
    view->second = kEnded;
    if (--slot.viewsLeft > 0) return;
    freed = std::move(slot.group);
  }
  // Outside the lock: giving memory back to the system may take a while.
  CountAbandoned(-1, -static_cast<int64_t>(freed.bytes));
  for (auto& allocation : freed.allocations) allocation.reset();
}

void ViewLedger::TakeEnds(std::vector<ViewEnd>* ends) {
  ends->clear();
  ends->swap(local_);
}

void ViewLedger::TakeRemoteEnds(std::vector<ViewEnd>* ends) {
  ends->clear();
  if (queued_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ends->swap(ends_);
  queued_.store(0, std::memory_order_release);
}

void AddonState::ApplyEnds() {
  viewLedger->TakeEnds(&ends_);
  for (const ViewEnd& end : ends_) ViewCollected(end.id, end.viewId);
  viewLedger->TakeRemoteEnds(&ends_);
  for (const ViewEnd& end : ends_) ViewCollected(end.id, end.viewId);
  ends_.clear();
}

uint64_t AddonState::AddAllocation(std::unique_ptr<Allocation> allocation, bool mapped) {
  // The record first: its insert is what can throw, and then the allocation goes back with the argument,
  // nothing counted.
  uint64_t id = lastId_ + 1;
  OwnedAllocation& owned = allocations_[id];
  lastId_ = id;
  owned.allocation = std::move(allocation);
  owned.mapped = mapped;
  size_t bytes = owned.allocation->allocatedSize();
  if (mapped) {
    counters.mappingsMade += 1;
    counters.mappedBytes += bytes;
  } else {
    counters.buffersMade += 1;
    counters.bufferBytes += bytes;
    if (accountExternalMemory) accountExternalMemory(static_cast<int64_t>(bytes));
  }
  return id;
}

uint64_t AddonState::AddRange(uint64_t parentId, size_t offset, size_t length) {
  auto parent = allocations_.find(parentId);
  if (parent == allocations_.end()) return 0;
  // What can throw comes first (the range, its record), the parent's count last: a failure leaves the parent
  // as it was, free to go when released.
  auto range = std::make_unique<RangeAllocation>(parent->second.allocation.get(), offset, length);
  uint64_t id = lastId_ + 1;
  OwnedAllocation& owned = allocations_[id];
  lastId_ = id;
  owned.allocation = std::move(range);
  owned.parent = parentId;
  allocations_.find(parentId)->second.ranges += 1;
  return id;
}

Allocation* AddonState::FindAllocation(uint64_t id) {
  auto found = allocations_.find(id);
  return found == allocations_.end() ? nullptr : found->second.allocation.get();
}

void AddonState::HandleDone(uint64_t id, bool explicitly) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return;
  OwnedAllocation& owned = found->second;
  if (owned.released || owned.handleCollected) return;
  (explicitly ? owned.released : owned.handleCollected) = true;
  size_t bytes = owned.allocation->allocatedSize();
  Recount(owned);
  if (owned.pins > 0 && pinnedReleased) pinnedReleased();
  if (owned.parent != 0) {
    // A range: its parent is what the buffer counters count.
  } else if (owned.mapped) {
    counters.mappingsReleased += 1;
    counters.mappedBytes -= bytes;
  } else {
    counters.buffersReleased += 1;
    counters.bufferBytes -= bytes;
  }
  MaybeFree(id);
}

size_t AddonState::QuarantinedBytes(uint64_t id) const {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return 0;
  const OwnedAllocation& owned = found->second;
  return owned.quarantineCounted ? owned.allocation->allocatedSize() : 0;
}

void AddonState::Recount(OwnedAllocation& owned) {
  bool held = (owned.released || owned.handleCollected) && (owned.escapedViews > 0 || owned.pins > 0);
  if (held == owned.quarantineCounted) return;
  owned.quarantineCounted = held;
  size_t bytes = owned.allocation->allocatedSize();
  if (held) {
    counters.quarantinedAllocations += 1;
    counters.quarantinedBytes += bytes;
  } else {
    counters.quarantinedAllocations -= 1;
    counters.quarantinedBytes -= bytes;
  }
}

void AddonState::Pin(uint64_t id) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return;
  found->second.pins += 1;
  Recount(found->second);
}

void AddonState::Unpin(uint64_t id) {
  auto found = allocations_.find(id);
  if (found == allocations_.end() || found->second.pins == 0) return;
  found->second.pins -= 1;
  Recount(found->second);
  MaybeFree(id);
}

uint64_t AddonState::ViewCreated(uint64_t id) {
  uint64_t viewId = ++lastViewId_;
  auto found = allocations_.find(id);
  if (found != allocations_.end()) {
    found->second.views.emplace_back(viewId, ViewState::kHandedOut);
    found->second.handedOutViews += 1;
  }
  return viewId;
}

void AddonState::ViewDetachedByUs(uint64_t id, uint64_t viewId) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return;
  OwnedAllocation& owned = found->second;
  auto view = owned.FindView(viewId);
  if (view == owned.views.end() || view->second != ViewState::kHandedOut) return;
  owned.views.erase(view);
  owned.handedOutViews -= 1;
}

bool AddonState::SettleViews(uint64_t id) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return false;
  OwnedAllocation& owned = found->second;
  // The records left are views we could not detach (and earlier escapes, on an allocation never reused).
  if (owned.handedOutViews > 0) {
    for (auto& [viewId, view] : owned.views) {
      if (view != ViewState::kHandedOut) continue;
      view = ViewState::kEscaped;
      owned.escapedViews += 1;
    }
    owned.handedOutViews = 0;
  }
  return owned.escapedViews > 0;
}

void AddonState::ViewCollected(uint64_t id, uint64_t viewId) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return;
  OwnedAllocation& owned = found->second;
  auto view = owned.FindView(viewId);
  if (view == owned.views.end()) return;
  bool escaped = view->second == ViewState::kEscaped;
  owned.views.erase(view);
  if (!escaped) {
    owned.handedOutViews -= 1;
  } else {
    owned.escapedViews -= 1;
    Recount(owned);
  }
  MaybeFree(id);
}

uint64_t AddonState::AddSet(std::unique_ptr<ResidencySet> set) {
  uint64_t id = ++lastId_;
  sets_[id] = std::move(set);
  counters.residencySetsMade += 1;
  return id;
}

ResidencySet* AddonState::FindSet(uint64_t id) {
  auto found = sets_.find(id);
  return found == sets_.end() ? nullptr : found->second.get();
}

void AddonState::AddToSet(ResidencySet* set, uint64_t id) {
  Allocation* allocation = FindAllocation(id);
  if (allocation == nullptr) return;
  // The records before the set holds it: a set must never hold an allocation that could be freed under it
  // for want of a record. Each insert can throw; what this call added is taken out again.
  bool newMember = false;
  bool newLink = false;
  bool newId = false;
  try {
    newMember = set->members.insert(allocation).second;
    newLink = allocation->sets.insert(set).second;
    newId = setMemberIds_.emplace(allocation, id).second;
    set->add(allocation);
  } catch (...) {
    if (newId) setMemberIds_.erase(allocation);
    if (newLink) allocation->sets.erase(set);
    if (newMember) set->members.erase(allocation);
    throw;
  }
}

void AddonState::RemoveFromSet(ResidencySet* set, uint64_t id) {
  Allocation* allocation = FindAllocation(id);
  if (allocation != nullptr && set->members.count(allocation) > 0) set->remove(allocation);
}

void AddonState::Commit(ResidencySet* set) {
  for (Allocation* allocation : set->commit()) Unlink(set, allocation);
}

void AddonState::FreeSet(uint64_t id) {
  auto found = sets_.find(id);
  if (found == sets_.end()) return;
  ResidencySet* set = found->second.get();
  // What can throw (the list, the layer's staged removals and commit) runs while the set is still on record:
  // should it throw, the set stays, holding what it held, and a later FreeSet (or the teardown) finishes.
  std::vector<Allocation*> members(set->members.begin(), set->members.end());
  set->endResidency();
  // Empty the set before it goes (Metal: removeAllocation: and commit), so that it retains none of them:
  // the queue may hold on to a set a little longer than we do.
  for (Allocation* allocation : members) set->remove(allocation);
  set->commit();
  // From here nothing allocates.
  std::unique_ptr<ResidencySet> owned = std::move(found->second);
  sets_.erase(found);
  for (Allocation* allocation : members) allocation->sets.erase(set);
  owned.reset();  // before any of its allocations may go: a layer's set may still point at them
  for (Allocation* allocation : members) {
    if (allocation->sets.empty()) MaybeFreeAllocation(allocation);
  }
}

void AddonState::TearDown() {
  if (tornDown) return;
  tornDown = true;
  // Streams first: no worker may touch memory from here on (their pins go with them).
  if (stopWork) stopWork();
  while (!sets_.empty()) FreeSet(sets_.begin()->first);
  if (viewLedger) {
    // The ledger learns of every view's end, moved or not: what a view still reaches is held until then.
    try {
      viewLedger->Orphan(
          [this](const std::vector<ViewEnd>& own, const std::vector<ViewEnd>& others) {
            for (const ViewEnd& end : own) ViewCollected(end.id, end.viewId);
            for (const ViewEnd& end : others) ViewCollected(end.id, end.viewId);
            return OrphanReachable();
          },
          [this](OrphanGroup& group) { TakeOrphan(group); });
      allocations_.clear();
      platform.reset();
      return;
    } catch (const std::bad_alloc&) {
      // No room to hand it over: what a view may still reach is abandoned below, as with finalizers.
    }
  }
  // What a view may still reach is abandoned, and so is the parent of such a range (its memory).
  std::vector<uint64_t> abandon;
  for (auto& [id, owned] : allocations_) {
    // Every view on record may still reach the memory (the binding recorded those attached here as
    // detached by us just before).
    if (owned.views.empty()) continue;
    abandon.push_back(id);
    for (uint64_t parent = owned.parent; parent != 0;) {
      abandon.push_back(parent);
      auto found = allocations_.find(parent);
      parent = found == allocations_.end() ? 0 : found->second.parent;
    }
  }
  for (uint64_t id : abandon) {
    auto found = allocations_.find(id);
    if (found == allocations_.end() || !found->second.allocation) continue;
    // A range's bytes are its parent's: only memory of its own is counted.
    if (found->second.parent == 0) {
      abandonedBytes += found->second.allocation->allocatedSize();
      abandonedAllocations += 1;
    }
    // Abandoned on purpose: the platform's memory stays mapped for the rest of the process.
    static_cast<void>(found->second.allocation.release());
    abandoned_ += 1;
  }
  allocations_.clear();
  platform.reset();
}

std::vector<OrphanGroup> AddonState::OrphanReachable() {
  // Each allocation a view on record reaches, with every range of its root (they point into the root's
  // memory), grouped by root. Only ids and room here: the allocations stay the state's until TakeOrphan.
  auto rootOf = [this](uint64_t id) {
    for (auto found = allocations_.find(id); found != allocations_.end() && found->second.parent != 0;
         found = allocations_.find(id)) {
      id = found->second.parent;
    }
    return id;
  };
  std::unordered_map<uint64_t, std::vector<uint64_t>> viewsOfRoot;
  for (auto& [id, owned] : allocations_) {
    if (owned.views.empty()) continue;
    std::vector<uint64_t>& views = viewsOfRoot[rootOf(id)];
    for (const auto& view : owned.views) views.push_back(view.first);
  }
  std::vector<OrphanGroup> groups;
  groups.reserve(viewsOfRoot.size());
  for (auto& [root, views] : viewsOfRoot) {
    OrphanGroup group;
    group.viewIds = std::move(views);
    for (auto& [id, owned] : allocations_) {
      if (id != root && owned.allocation && rootOf(id) == root) group.allocationIds.push_back(id);
    }
    auto found = allocations_.find(root);
    if (found != allocations_.end() && found->second.allocation) {
      group.bytes = found->second.allocation->allocatedSize();
      group.allocationIds.push_back(root);  // last: its ranges point into it
    }
    group.allocations.reserve(group.allocationIds.size());
    groups.push_back(std::move(group));
  }
  return groups;
}

void AddonState::TakeOrphan(OrphanGroup& group) noexcept {
  for (uint64_t id : group.allocationIds) {
    auto found = allocations_.find(id);
    if (found == allocations_.end() || !found->second.allocation) continue;
    group.allocations.push_back(std::move(found->second.allocation));  // within the room reserved
  }
  abandoned_ += 1;
}

void AddonState::Unlink(ResidencySet* set, Allocation* allocation) {
  set->members.erase(allocation);
  allocation->sets.erase(set);
  if (allocation->sets.empty()) MaybeFreeAllocation(allocation);
}

void AddonState::MaybeFreeAllocation(Allocation* allocation) {
  auto id = setMemberIds_.find(allocation);
  if (id == setMemberIds_.end()) return;
  MaybeFree(id->second);
}

void AddonState::MaybeFree(uint64_t id) {
  auto found = allocations_.find(id);
  if (found == allocations_.end()) return;
  OwnedAllocation& owned = found->second;
  if (!owned.released && !owned.handleCollected) return;
  if (!owned.released && !owned.views.empty()) return;
  if (owned.escapedViews > 0) return;  // quarantined: a moved view still reaches the memory
  if (owned.pins > 0) return;          // queued stream work names it
  if (!owned.allocation->sets.empty()) return;
  if (owned.ranges > 0) return;  // a range of it still exists: its memory is theirs too
  // No V8 accounting during teardown: the environment is going away.
  if (!owned.mapped && owned.parent == 0 && !tornDown && accountExternalMemory) {
    accountExternalMemory(-static_cast<int64_t>(owned.allocation->allocatedSize()));
  }
  uint64_t parent = owned.parent;
  setMemberIds_.erase(owned.allocation.get());
  allocations_.erase(found);
  if (parent != 0) {
    auto holder = allocations_.find(parent);
    if (holder != allocations_.end()) {
      holder->second.ranges -= 1;
      MaybeFree(parent);
    }
  }
}

}  // namespace nuvec
