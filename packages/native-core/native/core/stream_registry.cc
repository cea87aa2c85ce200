// See stream_registry.h.
#include "stream_registry.h"

#include <utility>

namespace nuvec {

StreamRegistry::StreamRegistry(std::shared_ptr<AddonState> state) : state_(std::move(state)) {
  state_->stopWork = [this] { Stop(); };
  state_->pinnedReleased = [this] { CloseBatches(); };
}

StreamRegistry::~StreamRegistry() {
  Stop();
  state_->stopWork = nullptr;
  state_->pinnedReleased = nullptr;
}

uint64_t StreamRegistry::AddStream(std::unique_ptr<Stream> stream) {
  uint64_t id = lastId_ + 1;
  streams_[id].stream = std::move(stream);
  lastId_ = id;
  return id;
}

Stream* StreamRegistry::FindStream(uint64_t id) {
  auto found = streams_.find(id);
  return found == streams_.end() ? nullptr : found->second.stream.get();
}

void StreamRegistry::FreeStream(uint64_t id) {
  auto found = streams_.find(id);
  if (found == streams_.end()) return;
  StreamEntry entry = std::move(found->second);
  streams_.erase(found);
  entry.stream.reset();  // joins: no operation of it runs from here on
  closedBatches_ -= entry.closed.size();
  for (Batch& batch : entry.closed) LetGo(batch);
  LetGo(entry.open);
}

uint64_t StreamRegistry::AddModule(std::unique_ptr<Module> module) {
  uint64_t id = lastId_ + 1;
  modules_[id].module = std::move(module);
  lastId_ = id;
  return id;
}

Module* StreamRegistry::FindModule(uint64_t id) {
  auto found = modules_.find(id);
  return found == modules_.end() || found->second.released ? nullptr : found->second.module.get();
}

void StreamRegistry::ReleaseModule(uint64_t id) {
  auto found = modules_.find(id);
  if (found == modules_.end() || found->second.released) return;
  found->second.released = true;
  if (found->second.pins == 0) {
    modules_.erase(found);
  } else {
    CloseBatches();
  }
}

void StreamRegistry::UnpinModule(uint64_t id) {
  auto found = modules_.find(id);
  if (found == modules_.end() || found->second.pins == 0) return;
  found->second.pins -= 1;
  if (found->second.pins == 0 && found->second.released) modules_.erase(found);
}

uint64_t StreamRegistry::AddEvent(std::unique_ptr<Event> event) {
  uint64_t id = lastId_ + 1;
  events_[id] = std::move(event);
  lastId_ = id;
  return id;
}

Event* StreamRegistry::FindEvent(uint64_t id) {
  auto found = events_.find(id);
  return found == events_.end() ? nullptr : found->second.get();
}

void StreamRegistry::FreeEvent(uint64_t id) { events_.erase(id); }

void StreamRegistry::Pin(uint64_t stream, const std::vector<uint64_t>& allocations, uint64_t module) {
  auto found = streams_.find(stream);
  if (found == streams_.end()) return;
  Batch& batch = found->second.open;
  // The room first (what can throw), the counts after: a failure pins nothing.
  batch.allocations.reserve(batch.allocations.size() + allocations.size());
  batch.modules.reserve(batch.modules.size() + 1);
  for (uint64_t id : allocations) {
    state_->Pin(id);
    batch.allocations.push_back(id);
  }
  if (module != 0) {
    auto entry = modules_.find(module);
    if (entry != modules_.end()) {
      entry->second.pins += 1;
      batch.modules.push_back(module);
    }
  }
}

void StreamRegistry::Unpinned(uint64_t stream, const std::vector<uint64_t>& allocations, uint64_t module) {
  auto found = streams_.find(stream);
  if (found == streams_.end()) return;
  Batch& batch = found->second.open;
  if (module != 0 && !batch.modules.empty() && batch.modules.back() == module) {
    batch.modules.pop_back();
    UnpinModule(module);
  }
  for (size_t i = allocations.size(); i > 0 && !batch.allocations.empty(); --i) {
    uint64_t id = batch.allocations.back();
    batch.allocations.pop_back();
    state_->Unpin(id);
  }
}

void StreamRegistry::Enqueued(uint64_t stream) {
  auto found = streams_.find(stream);
  if (found == streams_.end()) return;
  found->second.open.operations += 1;
  if (found->second.open.operations >= kBatchOperations) CloseBatch(stream);
}

void StreamRegistry::CloseBatch(uint64_t stream) {
  auto found = streams_.find(stream);
  if (found == streams_.end()) return;
  StreamEntry& entry = found->second;
  if (entry.open.allocations.empty() && entry.open.modules.empty()) {
    entry.open.operations = 0;
    return;
  }
  Failure failure;
  std::unique_ptr<Event> done = entry.stream->record(&failure);
  if (!done) return;  // stays open: settled by the next close, or when the stream goes
  entry.closed.emplace_back();
  Batch& closed = entry.closed.back();
  closed.allocations.swap(entry.open.allocations);
  closed.modules.swap(entry.open.modules);
  closed.done = std::move(done);
  entry.open.operations = 0;
  closedBatches_ += 1;
}

void StreamRegistry::CloseBatches() {
  for (auto& [id, entry] : streams_) CloseBatch(id);
}

void StreamRegistry::Settle() {
  if (closedBatches_ == 0) return;
  for (auto& [id, entry] : streams_) {
    while (!entry.closed.empty()) {
      Failure failure;
      Batch& front = entry.closed.front();
      // A failed batch has completed too: its operations were run or skipped.
      if (!front.done->query(&failure) && !failure.failed()) break;
      Batch batch = std::move(front);
      entry.closed.pop_front();
      closedBatches_ -= 1;
      LetGo(batch);
    }
  }
}

void StreamRegistry::LetGo(Batch& batch) {
  batch.done.reset();
  for (uint64_t id : batch.allocations) state_->Unpin(id);
  for (uint64_t id : batch.modules) UnpinModule(id);
  batch.allocations.clear();
  batch.modules.clear();
}

void StreamRegistry::Stop() {
  while (!streams_.empty()) FreeStream(streams_.begin()->first);
  events_.clear();
  modules_.clear();
}

size_t StreamRegistry::PendingBatches() const { return closedBatches_; }

}  // namespace nuvec
