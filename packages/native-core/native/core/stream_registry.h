// StreamRegistry: the streams, events and modules of one environment, and the pins that keep every allocation
// an enqueued operation names alive until the operation has completed. Without N-API, like AddonState, so
// core/stream_registry_test.cc checks the rules with plain C++ and the host's worker streams.
//
// Pins are kept in batches per stream: each operation's allocations (and its kernel's module) go into the
// stream's open batch; a batch is closed by recording an event on the stream after it (every kBatchOperations
// operations, at every record, notify and synchronize, and when a pinned allocation is released), and
// Settle() lets go of the pins of every closed batch whose event has completed, in order, on the JavaScript
// thread. Until then a released allocation's bytes are in the quarantined figures (AddonState::Pin).
//
// A module released while a launch of its kernels is queued is destroyed once that launch's batch settles;
// a stream's release (FreeStream) destroys the stream, which runs or drops what is queued and joins its
// worker, before its pins go. Stop() does that for everything at the environment's teardown (AddonState's
// stopWork), streams first, then events, then modules.
#ifndef NUVEC_STREAM_REGISTRY_H_
#define NUVEC_STREAM_REGISTRY_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "addon_state.h"
#include "streams.h"

namespace nuvec {

class StreamRegistry {
 public:
  // Operations per batch before it is closed by an event.
  static constexpr size_t kBatchOperations = 32;

  // Registers itself with `state` (stopWork, pinnedReleased), which it keeps alive.
  explicit StreamRegistry(std::shared_ptr<AddonState> state);
  ~StreamRegistry();
  StreamRegistry(const StreamRegistry&) = delete;
  StreamRegistry& operator=(const StreamRegistry&) = delete;

  uint64_t AddStream(std::unique_ptr<Stream> stream);
  Stream* FindStream(uint64_t id);
  // Destroys the stream (see worker_stream.h for the host's: queued work not started is dropped), then lets
  // go of its pins. A caller that wants its work done synchronizes first.
  void FreeStream(uint64_t id);

  uint64_t AddModule(std::unique_ptr<Module> module);
  // The module while it is not released.
  Module* FindModule(uint64_t id);
  // release(): the module is destroyed once no queued launch of its kernels pins it.
  void ReleaseModule(uint64_t id);

  uint64_t AddEvent(std::unique_ptr<Event> event);
  Event* FindEvent(uint64_t id);
  void FreeEvent(uint64_t id);

  // Before enqueueing an operation on stream `stream` that names `allocations` (live) and a kernel of
  // `module` (0: none): pins them in the stream's open batch. Call Unpinned() with the same arguments when
  // the operation was then not enqueued.
  void Pin(uint64_t stream, const std::vector<uint64_t>& allocations, uint64_t module);
  void Unpinned(uint64_t stream, const std::vector<uint64_t>& allocations, uint64_t module);
  // After the operation was enqueued: closes the batch when it is full.
  void Enqueued(uint64_t stream);
  // Closes the open batch of every stream (or of one) with an event after it.
  void CloseBatches();
  void CloseBatch(uint64_t stream);
  // Lets go of the pins of every closed batch whose work has completed. Cheap when there is none.
  void Settle();
  // Teardown: destroys every stream, then lets go of every pin, event and module.
  void Stop();

  // Closed batches not yet settled, over all streams (tests).
  size_t PendingBatches() const;
  size_t Streams() const { return streams_.size(); }
  size_t Modules() const { return modules_.size(); }

 private:
  struct Batch {
    std::vector<uint64_t> allocations;
    std::vector<uint64_t> modules;
    size_t operations = 0;
    std::unique_ptr<Event> done;  // recorded after the batch's last operation (closed batches only)
  };
  struct StreamEntry {
    std::unique_ptr<Stream> stream;
    Batch open;
    std::deque<Batch> closed;
  };
  struct ModuleEntry {
    std::unique_ptr<Module> module;
    bool released = false;
    uint32_t pins = 0;
  };
  void LetGo(Batch& batch);
  void UnpinModule(uint64_t id);

  std::shared_ptr<AddonState> state_;
  uint64_t lastId_ = 0;
  size_t closedBatches_ = 0;
  std::unordered_map<uint64_t, StreamEntry> streams_;
  std::unordered_map<uint64_t, ModuleEntry> modules_;
  std::unordered_map<uint64_t, std::unique_ptr<Event>> events_;
};

}  // namespace nuvec

#endif  // NUVEC_STREAM_REGISTRY_H_
