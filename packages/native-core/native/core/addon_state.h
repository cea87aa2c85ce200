// AddonState: who owns what, for one JS environment (main thread or worker), without N-API. It owns the
// platform, every live allocation and residency set by id, and decides when memory may go back to the
// system. The N-API layer (native/napi/) turns JavaScript events into calls here — a handle released or
// collected, a view made, detached or finalized, a set changed — and core/addon_state_test.cc checks the
// rules with plain C++.
//
// Handles (JS objects) hold ids, never owning pointers, so that whichever comes first — release(), the
// handle being collected, the environment's cleanup — frees once and the others find nothing to do.
//
// An allocation's memory is freed when all of these hold: its handle is done with (release(), or collected
// without it), no view can still reach it (release() detaches them; a collected handle waits for its views'
// finalizers), and no residency set holds it (Metal's sets retain their allocations; the others follow).
//
// A view detached by someone else (moved away by ArrayBuffer.prototype.transfer() or a postMessage
// transfer) has "escaped": its backing store, our memory, lives on in an ArrayBuffer we cannot detach. Such
// an allocation is quarantined: released or not, its memory is freed only when the last escaped view's
// finalizer runs (no JavaScript object can reach it any more), and the TypeScript layer never caches it.
//
// Escape is decided by elimination, not by finding the moved ArrayBuffer (the detached original may have
// been collected already): when the views are detached, every view whose backing store still exists
// (its finalizer has not run) and that we did not detach ourselves is counted as escaped. A view that was
// merely collected, its finalizer still pending, is counted too: its buffer then goes to the system instead
// of the cache, which is always safe.
//
// A view we detached ourselves can reach nothing, so its record goes at once, not at its finalizer (which
// runs only after a turn of the event loop, and then finds nothing): the records of an allocation are the
// views that may still reach it, never the thousands detached in a loop that does not yield, and settling
// them costs the same on every call.
#ifndef NUVEC_ADDON_STATE_H_
#define NUVEC_ADDON_STATE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "platform.h"

namespace nuvec {

// What counters() reports beside the platform's own figures.
struct Counters {
  uint64_t buffersMade = 0;
  uint64_t buffersReleased = 0;
  uint64_t bufferBytes = 0;
  uint64_t mappingsMade = 0;
  uint64_t mappingsReleased = 0;
  uint64_t mappedBytes = 0;
  uint64_t residencySetsMade = 0;
  uint64_t commits = 0;
  uint64_t residencyRequests = 0;
  // Released, held for a view moved out of our reach or for queued stream work that names them (pinned).
  uint64_t quarantinedAllocations = 0;
  uint64_t quarantinedBytes = 0;  // their allocated sizes
};

// What a view on record is: handed out (attached as far as we know), or escaped (SettleViews found it
// neither detached by us nor finalized). A view we detached is no longer on record.
// What every environment's teardown abandoned, process-wide (see AddonState::TearDown): memory a view moved
// out of a dying environment may still reach, never freed. Any environment reads it (counters()), so that a
// thread outliving the one that made the memory can see what it costs.
struct AbandonedTotals {
  uint64_t allocations = 0;
  uint64_t bytes = 0;
};
AbandonedTotals ProcessAbandoned();
// Adds to (or, negative, takes from) the process's abandoned totals.
void CountAbandoned(int64_t allocations, int64_t bytes);

// A view whose memory no ArrayBuffer reaches any more: allocation `id`, view `viewId`.
struct ViewEnd {
  uint64_t id;
  uint64_t viewId;
};

// Memory a dying environment hands to its views' ledger (AddonState::TearDown with a ledger): a root
// allocation and its ranges (ranges first: they point into the root), kept until the last of `viewIds` ends.
struct OrphanGroup {
  std::vector<std::unique_ptr<Allocation>> allocations;
  std::vector<uint64_t> allocationIds;  // what `allocations` takes, in order, once nothing can fail
  std::vector<uint64_t> viewIds;
  uint64_t bytes = 0;  // the root's allocated size, counted in the process's abandoned totals meanwhile
};

// Where views whose ArrayBuffers own a backing store (V8's BackingStore API: no Node finalizer, no
// SetImmediate) report their end. A backing store's deleter runs on whatever thread drops the last
// reference: ours while we detach it or V8 sweeps it, a worker's after a postMessage transfer, a V8 helper
// thread. So the deleter only queues the end here (ViewGone); the environment's thread applies the queue
// at its next call into the addon (AddonState::SettleEndedViews). Once the environment is torn down nobody
// drains the queue: its memory that views still reach is handed over (Orphan), and the deleter of the
// group's last view frees it, on whatever thread that is. Shared (shared_ptr) by the state and every view.
class ViewLedger {
 public:
  // Made on the environment's thread: its ends need no lock.
  ViewLedger() : owner_(std::this_thread::get_id()) {}
  ViewLedger(const ViewLedger&) = delete;
  ViewLedger& operator=(const ViewLedger&) = delete;
  ~ViewLedger();

  // Any thread: the view's backing store is gone. Allocates only to queue an end from another thread (and
  // the first ends on the environment's own); a failure there is the caller's to absorb (views.cc).
  void ViewGone(uint64_t id, uint64_t viewId);
  // The environment's thread: whether an end may be queued (a relaxed read: a miss is seen next call).
  bool MayHaveEnds() const { return !local_.empty() || queued_.load(std::memory_order_acquire) != 0; }
  // The environment's thread: the ends queued on it, then those from other threads, each swapped into
  // `ends` (cleared first): no allocation, so no end is lost on the way.
  void TakeEnds(std::vector<ViewEnd>* ends);
  void TakeRemoteEnds(std::vector<ViewEnd>* ends);
  // The environment's thread, at its teardown: `settle` is given the ends still queued (this thread's,
  // then the others') and returns what views may still reach; from then on ViewGone frees each group when
  // its last view ends. Under the ledger's lock. What can throw (`settle`, the room for the groups) comes
  // before anything changes: a failure leaves the ledger as it was.
  template <typename Settle, typename Take>
  void Orphan(Settle settle, Take take) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<OrphanGroup> groups = settle(local_, ends_);
    size_t views = 0;
    for (const OrphanGroup& group : groups) views += group.viewIds.size();
    orphans_.reserve(orphans_.size() + groups.size());
    orphanViews_.reserve(orphanViews_.size() + views);
    // From here nothing allocates: `take` moves each group's allocations into its reserved room.
    for (OrphanGroup& group : groups) {
      if (group.viewIds.empty()) continue;  // nothing reaches it: the state frees it
      take(group);
      size_t slot = orphans_.size();
      for (uint64_t viewId : group.viewIds) orphanViews_.emplace_back(viewId, slot);
      CountAbandoned(1, static_cast<int64_t>(group.bytes));
      size_t count = group.viewIds.size();
      orphans_.push_back(OrphanSlot{std::move(group), count});
    }
    std::sort(orphanViews_.begin(), orphanViews_.end());
    local_.clear();
    ends_.clear();
    queued_.store(0, std::memory_order_release);
    orphaned_ = true;
  }
  // Groups still held (tests).
  size_t OrphanGroups() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t held = 0;
    for (const OrphanSlot& slot : orphans_) held += slot.viewsLeft > 0 ? 1 : 0;
    return held;
  }

 private:
  // A group handed over at teardown and how many of its views have not ended.
  struct OrphanSlot {
    OrphanGroup group;
    size_t viewsLeft;
  };
  static constexpr size_t kEnded = static_cast<size_t>(-1);

  const std::thread::id owner_;
  // Ends on the environment's own thread (a detach, a sweep there): only that thread touches them. A deleter
  // runs inside V8 (a detach, a collection), never while the state applies or takes ends.
  std::vector<ViewEnd> local_;
  mutable std::mutex mutex_;
  std::atomic<size_t> queued_{0};
  std::vector<ViewEnd> ends_;  // from other threads, under the lock
  bool orphaned_ = false;      // written by the environment's thread only, under the lock
  // After teardown: the groups, and (view id, group) sorted by view id; a view that ended reads kEnded.
  std::vector<OrphanSlot> orphans_;
  std::vector<std::pair<uint64_t, size_t>> orphanViews_;
};

enum class ViewState { kHandedOut, kEscaped };

// A range of another allocation (a block a sub-allocating policy hands out): `length` bytes of the parent's
// memory from `offset`. It owns nothing; the state keeps the parent's memory while the range exists, and the
// range has views of its own (detached, escaped and quarantined like any buffer's).
class RangeAllocation final : public Allocation {
 public:
  RangeAllocation(Allocation* parent, size_t offset, size_t length)
      : parent_(parent), offset_(offset), length_(length) {}
  void* data() const override {
    char* base = static_cast<char*>(parent_->data());
    return base == nullptr ? nullptr : base + offset_;
  }
  size_t length() const override { return length_; }
  size_t allocatedSize() const override { return length_; }
  uint64_t devicePointer() const override {
    uint64_t base = parent_->devicePointer();
    return base == 0 ? 0 : base + offset_;
  }
  bool copyIn(size_t offset, const void* source, size_t bytes, Failure* failure) override {
    return parent_->copyIn(offset_ + offset, source, bytes, failure);
  }
  bool copyOut(size_t offset, void* target, size_t bytes, Failure* failure) const override {
    return parent_->copyOut(offset_ + offset, target, bytes, failure);
  }
  // The parent's fields, its addresses moved by the offset (Metal's metalBuffer stays the parent's).
  std::vector<NativeField> nativeFields() const override {
    std::vector<NativeField> fields = parent_->nativeFields();
    for (NativeField& field : fields) {
      if (std::string(field.name) != "metalBuffer" && field.value != 0) field.value += offset_;
    }
    return fields;
  }

 private:
  Allocation* parent_;
  size_t offset_;
  size_t length_;
};

// One allocation the state owns, by id, from the platform's making of it to its freeing (released or not:
// a view or a set may still hold its memory).
struct OwnedAllocation {
  std::unique_ptr<Allocation> allocation;
  bool mapped = false;
  // A range (RangeAllocation) of allocation `parent`; not counted among the buffers (the parent is).
  uint64_t parent = 0;
  // Ranges of this allocation that still exist: its memory stays until they are gone.
  uint32_t ranges = 0;
  bool released = false;
  bool handleCollected = false;
  // Stream operations not yet completed that name it (Pin/Unpin): its memory stays until the last completes.
  uint32_t pins = 0;
  // Whether it is counted in the quarantined figures (released or collected, and escaped or pinned).
  bool quarantineCounted = false;
  uint32_t handedOutViews = 0;  // the views in kHandedOut
  uint32_t escapedViews = 0;    // the views in kEscaped
  // The views that may still reach the memory (handed out or escaped, not ended), by view id: a few at most
  // (a view we detach leaves at once), so a vector searched from the newest end, not a hash map that
  // allocates a node per view.
  std::vector<std::pair<uint64_t, ViewState>> views;
  std::vector<std::pair<uint64_t, ViewState>>::iterator FindView(uint64_t viewId) {
    for (auto view = views.end(); view != views.begin();) {
      if ((--view)->first == viewId) return view;
    }
    return views.end();
  }
};

class AddonState {
 public:
  std::unique_ptr<Platform> platform;
  // Why there is no platform (the binding's "unavailable" error says it).
  Failure platformFailure;
  Counters counters;
  bool tornDown = false;
  // Told the bytes of every buffer made (positive) and freed (negative), so that the binding can tell V8
  // of memory it cannot see (napi_adjust_external_memory) and dropped handles are collected in time. Not
  // called for mapped files, nor during teardown. Optional.
  std::function<void(int64_t bytes)> accountExternalMemory;
  // Called first by TearDown: stops every stream (joining its worker after the operation it runs) and lets go
  // of their pins, events and modules, before any memory goes (stream_registry.h sets it).
  std::function<void()> stopWork;
  // Called when an allocation is released or collected while pinned, so that the pins' open batches are
  // closed and the memory goes as soon as the work naming it completes (stream_registry.h sets it).
  std::function<void()> pinnedReleased;
  // Set when views report their end through a ledger (V8 backing stores) rather than through finalizers
  // the binding forwards (ViewCollected): then TearDown hands what views still reach to the ledger, which
  // frees it when they end, instead of abandoning it.
  std::shared_ptr<ViewLedger> viewLedger;

  // Applies the ends the ledger queued (ViewCollected for each); nothing without a ledger. Cheap when none.
  void SettleEndedViews() {
    if (viewLedger && viewLedger->MayHaveEnds()) ApplyEnds();
  }

  // Takes an allocation the platform made; returns its id.
  uint64_t AddAllocation(std::unique_ptr<Allocation> allocation, bool mapped);
  // A range of `length` bytes from `offset` of live allocation `parentId` (checked by the caller); returns
  // its id, or 0 when the parent is not there.
  uint64_t AddRange(uint64_t parentId, size_t offset, size_t length);
  // The allocation, released or not, while its memory exists.
  Allocation* FindAllocation(uint64_t id);
  // release() (after detaching the views: explicitly) or the handle's collection: counted as released at
  // once; the memory goes when nothing reaches it any more.
  void HandleDone(uint64_t id, bool explicitly);

  // An operation enqueued on a stream names live allocation `id`: its memory stays until Unpin (released
  // meanwhile, it is counted as quarantined).
  void Pin(uint64_t id);
  // That operation completed (or was dropped): on the JavaScript thread; frees the memory when nothing else
  // holds it.
  void Unpin(uint64_t id);
  // How many operations pin allocation `id` (tests).
  uint32_t Pins(uint64_t id) const {
    auto found = allocations_.find(id);
    return found == allocations_.end() ? 0 : found->second.pins;
  }

  // The bytes allocation `id` holds in quarantine (released or collected, a view moved out of our reach
  // still alive, or pinned by queued stream work), else 0: what its owner still has to count after release.
  size_t QuarantinedBytes(uint64_t id) const;

  // A new view of allocation `id`; returns the view's id.
  uint64_t ViewCreated(uint64_t id);
  // We detached this view ourselves: nothing can reach the memory through it, and its record goes.
  void ViewDetachedByUs(uint64_t id, uint64_t viewId);
  // After detaching every view we could: the others escaped. Returns whether any escaped view still exists.
  // Constant time when every view was detached (the records hold only views that may reach the memory).
  bool SettleViews(uint64_t id);
  // The view's backing store is gone (its finalizer ran): nothing reaches the memory through it any more.
  void ViewCollected(uint64_t id, uint64_t viewId);

  // Takes a set the platform made; returns its id.
  uint64_t AddSet(std::unique_ptr<ResidencySet> set);
  ResidencySet* FindSet(uint64_t id);
  // Stages allocation `id` (live) into the set; the set holds its memory from now on.
  void AddToSet(ResidencySet* set, uint64_t id);
  // Stages the removal of allocation `id` if the set holds it (released or not: the set holds it until the
  // commit).
  void RemoveFromSet(ResidencySet* set, uint64_t id);
  // Applies the staged changes; what the set no longer holds may go.
  void Commit(ResidencySet* set);
  // Empties and destroys the set (release() or its handle's collection); what it alone held may go.
  void FreeSet(uint64_t id);

  // The environment is going away (process or worker exit): give everything back to the system, except the
  // memory a view may still reach from outside this environment. The binding detaches every view still
  // attached here first; a view it could not detach was moved away (transfer(), then perhaps posted to
  // another thread, where it outlives this environment), so its allocation is abandoned: never freed, as a
  // view must never reach reused memory. Node calls every view's finalizer during the teardown whether or
  // not the moved ArrayBuffer lives on, so the finalizers cannot decide this.
  void TearDown();
  // How many views are on record over all allocations (tests).
  size_t ViewRecordCount() const {
    size_t count = 0;
    for (const auto& entry : allocations_) count += entry.second.views.size();
    return count;
  }

  // How many allocations (released or not) and sets still hold memory: for tests and teardown checks.
  size_t OwnedAllocations() const { return allocations_.size(); }
  // How many views of allocation `id` are on record (handed out or escaped): for tests.
  size_t ViewRecords(uint64_t id) const {
    auto found = allocations_.find(id);
    return found == allocations_.end() ? 0 : found->second.views.size();
  }
  // The id of the newest view made (0: none yet).
  uint64_t LastViewId() const { return lastViewId_; }
  // How many allocations TearDown abandoned because a view may still reach them from outside.
  size_t AbandonedAllocations() const { return abandoned_; }
  size_t OwnedSets() const { return sets_.size(); }

 private:
  void ApplyEnds();
  // What TearDown hands to the ledger: every allocation a view on record may reach, grouped by root, by id
  // and with room for them (may throw; nothing moves yet); then TakeOrphan moves them in (never throws).
  std::vector<OrphanGroup> OrphanReachable();
  void TakeOrphan(OrphanGroup& group) noexcept;
  void Unlink(ResidencySet* set, Allocation* allocation);
  void MaybeFreeAllocation(Allocation* allocation);
  // Counts the allocation in the quarantined figures, or stops counting it, as its state now says.
  void Recount(OwnedAllocation& owned);
  void MaybeFree(uint64_t id);

  size_t abandoned_ = 0;
  uint64_t lastId_ = 0;
  uint64_t lastViewId_ = 0;
  std::vector<ViewEnd> ends_;  // reused by ApplyEnds
  std::unordered_map<uint64_t, OwnedAllocation> allocations_;
  std::unordered_map<uint64_t, std::unique_ptr<ResidencySet>> sets_;
  // Allocations that are or were in a set, back to their ids (sets deal in pointers).
  std::unordered_map<Allocation*, uint64_t> setMemberIds_;
};

}  // namespace nuvec

#endif  // NUVEC_ADDON_STATE_H_
