// A Stream (streams.h) for memory the CPU addresses: one worker thread per stream runs its operations in the
// order enqueued. The host layer's streams are these; any platform whose allocations have a data() pointer
// can use them.
//
// Kernels are WorkerKernels: host kernels (host_module.h), or a layer's own (Metal's command buffers).
//
// Order and outcome live in a StreamProgress the stream shares with its events, so an event may outlive its
// stream: operations are numbered from 1 as enqueued, an event is a position (the number enqueued before
// it), and it has completed once that many operations have. A failed operation (a kernel returning non-zero)
// makes the stream fail from there: its later operations are skipped, and every event, notify and
// synchronize at or after it reports that failure, as a CUDA error does to its context.
//
// `wait` enqueues an operation that blocks the worker until the other stream's event has completed (an event
// only names work already enqueued, so waits never form a cycle); the other stream's failure becomes this
// one's there.
//
// Destruction stops the worker after the operation it is running: operations not yet started are dropped
// (their notify callbacks are called with a failure saying so, a kSystem one of errno ECANCELED, and events
// after them complete with it), then
// the thread is joined. A caller that wants the work done synchronizes first (the N-API layer's release()
// does); the environment's teardown does not, so that a worker or process exit never waits on queued work.
#ifndef NUVEC_WORKER_STREAM_H_
#define NUVEC_WORKER_STREAM_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "streams.h"

namespace nuvec {

// How far a worker stream has come, shared by the stream, its events and the streams waiting on them.
class StreamProgress {
 public:
  explicit StreamProgress(uint64_t id) : id_(id) {}
  // Whether the first `position` operations have completed (or were dropped); false and no failure when not
  // yet; true and the failure when one of them failed or was dropped.
  bool Reached(uint64_t position, Failure* failure);
  // Blocks until Reached(position), or until `*abandon` turns true (then false; checked every few ms).
  bool WaitFor(uint64_t position, Failure* failure, const std::atomic<bool>* abandon = nullptr);

  // The worker's side: operation `position` finished, with `failure` when it failed.
  void Completed(uint64_t position, const Failure* failure);
  // The stream stopped: every operation after `position` was dropped.
  void Stopped(uint64_t position);
  // The stream's failure so far (kNone when none).
  Failure FirstFailure();
  uint64_t id() const { return id_; }

 private:
  bool ReachedLocked(uint64_t position, Failure* failure);

  const uint64_t id_;
  std::mutex mutex_;
  std::condition_variable changed_;
  uint64_t completed_ = 0;
  uint64_t failedAt_ = 0;  // the first failed operation; 0: none
  Failure failure_;
  bool stopped_ = false;
};

// An event of a worker stream: a position in its order.
class WorkerEvent final : public Event {
 public:
  WorkerEvent(std::shared_ptr<StreamProgress> progress, uint64_t position)
      : progress_(std::move(progress)), position_(position) {}
  bool query(Failure* failure) override;
  bool synchronize(Failure* failure) override;
  const std::shared_ptr<StreamProgress>& progress() const { return progress_; }
  uint64_t position() const { return position_; }

 private:
  std::shared_ptr<StreamProgress> progress_;
  uint64_t position_;
};

// A kernel a worker stream can run: prepares a launch (on the JavaScript thread, arguments resolved) into a
// function the worker then calls. Host kernels (host_module.h) call a C function; the Metal layer's encode
// a command buffer and wait for it.
class WorkerKernel : public Kernel {
 public:
  virtual bool Prepare(const LaunchShape& shape, const std::vector<KernelArgument>& args,
                       std::function<bool(Failure*)>* run, Failure* failure) const = 0;
};

class WorkerStream final : public Stream {
 public:
  // `id` names the stream in failures ("stream 3: ...").
  explicit WorkerStream(uint64_t id);
  ~WorkerStream() override;
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  bool launch(Kernel* kernel, const LaunchShape& shape, const std::vector<KernelArgument>& args,
              Failure* failure) override;
  bool write(Allocation* target, size_t offset, std::vector<uint8_t> bytes, Failure* failure) override;
  bool read(Allocation* source, size_t offset, size_t length, uint8_t* target, Failure* failure) override;
  bool copy(Allocation* target, size_t targetOffset, Allocation* source, size_t sourceOffset, size_t length,
            Failure* failure) override;
  std::unique_ptr<Event> record(Failure* failure) override;
  bool wait(Event* event, Failure* failure) override;
  bool notify(std::function<void(const Failure&)> done, Failure* failure) override;
  bool synchronize(Failure* failure) override;

  // Operations enqueued so far (tests).
  uint64_t enqueued() const { return enqueued_; }
  const std::shared_ptr<StreamProgress>& progress() const { return progress_; }

 private:
  // One operation: `run` does the work (false and a failure when it fails); `skipped` is called instead when
  // the stream failed before it or stops before it ran (a notify's callback), with that failure.
  struct Operation {
    std::function<bool(Failure*)> run;
    std::function<void(const Failure&)> skipped;
  };
  bool Enqueue(Operation operation, Failure* failure);
  void Work();

  const uint64_t id_;
  std::shared_ptr<StreamProgress> progress_;
  uint64_t enqueued_ = 0;  // the JavaScript thread's count
  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<Operation> queue_;
  bool stopping_ = false;
  bool waiting_ = false;                   // the worker is (about to be) in queued_.wait, under mutex_
  std::atomic<uint64_t> pushed_{0};        // enqueued_, for the worker's spin
  static constexpr std::chrono::microseconds kSpin{50};
  std::atomic<bool> abandonWaits_{false};  // set at destruction: a wait on another stream gives up
  std::thread worker_;
};

}  // namespace nuvec

#endif  // NUVEC_WORKER_STREAM_H_
