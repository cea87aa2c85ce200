// See worker_stream.h.
#include "worker_stream.h"

#include <errno.h>

#include <chrono>
#include <cstring>
#include <utility>

namespace nuvec {

namespace {
// The failure of work dropped when its stream stopped.
// ECANCELED: a SystemCallError in JS (syscall "stream"), not an argument the caller got wrong.
Failure DroppedFailure(uint64_t stream) {
  return Failure::System("stream", ECANCELED, "",
                         "stream " + std::to_string(stream) + " was released before this work ran");
}
}  // namespace

bool StreamProgress::ReachedLocked(uint64_t position, Failure* failure) {
  bool failedBefore = failedAt_ != 0 && failedAt_ <= position;
  if (completed_ >= position) {
    if (failedBefore) *failure = failure_;
    return true;
  }
  if (!stopped_) return false;
  *failure = failedBefore ? failure_ : DroppedFailure(id_);
  return true;
}

bool StreamProgress::Reached(uint64_t position, Failure* failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  return ReachedLocked(position, failure);
}

bool StreamProgress::WaitFor(uint64_t position, Failure* failure, const std::atomic<bool>* abandon) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (abandon == nullptr) {
    changed_.wait(lock, [&] { return ReachedLocked(position, failure); });
    return true;
  }
  while (!changed_.wait_for(lock, std::chrono::milliseconds(5), [&] { return ReachedLocked(position, failure); })) {
    if (abandon->load()) return false;
  }
  return true;
}

void StreamProgress::Completed(uint64_t position, const Failure* failure) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = position;
    if (failure != nullptr && failedAt_ == 0) {
      failedAt_ = position;
      failure_ = *failure;
    }
  }
  changed_.notify_all();
}

void StreamProgress::Stopped(uint64_t position) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = position;
    stopped_ = true;
  }
  changed_.notify_all();
}

Failure StreamProgress::FirstFailure() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failedAt_ != 0 ? failure_ : Failure();
}

bool WorkerEvent::query(Failure* failure) {
  Failure found;
  bool reached = progress_->Reached(position_, &found);
  if (found.failed()) *failure = found;
  return reached && !found.failed();
}

bool WorkerEvent::synchronize(Failure* failure) {
  Failure found;
  progress_->WaitFor(position_, &found);
  if (found.failed()) *failure = found;
  return !found.failed();
}

WorkerStream::WorkerStream(uint64_t id) : id_(id), progress_(std::make_shared<StreamProgress>(id)) {
  worker_ = std::thread([this] { Work(); });
}

WorkerStream::~WorkerStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  abandonWaits_.store(true);
  queued_.notify_all();
  worker_.join();
}

void WorkerStream::Work() {
  uint64_t position = 0;
  Failure failed;  // the stream's failure once an operation failed: later ones are skipped
  for (;;) {
    Operation operation;
    // A short spin for the next operation before sleeping: a JavaScript thread that enqueues one launch after
    // another then finds the worker awake, and pays no wake-up (a futex call and a context switch) per
    // operation.
    if (pushed_.load(std::memory_order_acquire) == position) {
      auto until = std::chrono::steady_clock::now() + kSpin;
      while (pushed_.load(std::memory_order_acquire) == position && !abandonWaits_.load() &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
      }
    }
    {
      std::unique_lock<std::mutex> lock(mutex_);
      waiting_ = true;
      queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      waiting_ = false;
      if (stopping_) {
        // Dropped, not run: their callbacks hear it, and their events complete with the same failure.
        std::deque<Operation> dropped;
        dropped.swap(queue_);
        lock.unlock();
        Failure failure = DroppedFailure(id_);
        for (Operation& left : dropped) {
          if (left.skipped) left.skipped(failed.failed() ? failed : failure);
        }
        progress_->Stopped(position);
        return;
      }
      operation = std::move(queue_.front());
      queue_.pop_front();
    }
    position += 1;
    if (failed.failed()) {
      if (operation.skipped) operation.skipped(failed);
      progress_->Completed(position, nullptr);
      continue;
    }
    Failure failure;
    bool ran = operation.run(&failure);
    if (!ran) {
      if (!failure.failed()) failure = Failure::Argument("stream " + std::to_string(id_) + ": an operation failed");
      failed = failure;
    }
    progress_->Completed(position, ran ? nullptr : &failure);
  }
}

bool WorkerStream::Enqueue(Operation operation, Failure* failure) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(operation));  // may throw: then nothing was enqueued
    wake = waiting_;
  }
  enqueued_ += 1;
  pushed_.store(enqueued_, std::memory_order_release);
  if (wake) queued_.notify_one();  // a worker that is not waiting sees the queue before it waits
  return true;
}

bool WorkerStream::launch(Kernel* kernel, const LaunchShape& shape, const std::vector<KernelArgument>& args,
                          Failure* failure) {
  // Addons build without RTTI: every kernel a worker stream is given is a WorkerKernel, as the N-API layer
  // hands a platform's streams only that platform's kernels and events.
  auto* worker = static_cast<WorkerKernel*>(kernel);
  if (worker == nullptr) {
    *failure = Failure::Argument("no kernel");
    return false;
  }
  std::function<bool(Failure*)> run;
  if (!worker->Prepare(shape, args, &run, failure)) return false;
  return Enqueue(Operation{std::move(run), nullptr}, failure);
}

bool WorkerStream::write(Allocation* target, size_t offset, std::vector<uint8_t> bytes, Failure* failure) {
  char* base = static_cast<char*>(target->data());
  if (base == nullptr) {
    *failure = Failure::Argument("the target's memory has no CPU address");
    return false;
  }
  return Enqueue(Operation{[base, offset, bytes = std::move(bytes)](Failure*) {
                             if (!bytes.empty()) std::memcpy(base + offset, bytes.data(), bytes.size());
                             return true;
                           },
                           nullptr},
                 failure);
}

bool WorkerStream::read(Allocation* source, size_t offset, size_t length, uint8_t* target, Failure* failure) {
  const char* base = static_cast<const char*>(source->data());
  if (base == nullptr) {
    *failure = Failure::Argument("the source's memory has no CPU address");
    return false;
  }
  return Enqueue(Operation{[base, offset, length, target](Failure*) {
                             if (length > 0) std::memcpy(target, base + offset, length);
                             return true;
                           },
                           nullptr},
                 failure);
}

bool WorkerStream::copy(Allocation* target, size_t targetOffset, Allocation* source, size_t sourceOffset,
                        size_t length, Failure* failure) {
  char* to = static_cast<char*>(target->data());
  const char* from = static_cast<const char*>(source->data());
  if (to == nullptr || from == nullptr) {
    *failure = Failure::Argument("the memory has no CPU address");
    return false;
  }
  // memmove: the two ranges may be of one buffer, overlapping.
  return Enqueue(Operation{[to, targetOffset, from, sourceOffset, length](Failure*) {
                             if (length > 0) std::memmove(to + targetOffset, from + sourceOffset, length);
                             return true;
                           },
                           nullptr},
                 failure);
}

std::unique_ptr<Event> WorkerStream::record(Failure*) {
  return std::make_unique<WorkerEvent>(progress_, enqueued_);
}

bool WorkerStream::wait(Event* event, Failure* failure) {
  auto* worker = static_cast<WorkerEvent*>(event);  // this platform's, as the kernels (launch)
  if (worker == nullptr) {
    *failure = Failure::Argument("no event");
    return false;
  }
  std::shared_ptr<StreamProgress> other = worker->progress();
  uint64_t position = worker->position();
  if (other == progress_) return true;  // this stream's own order already waits for it
  uint64_t self = id_;
  const std::atomic<bool>* abandon = &abandonWaits_;  // the worker that reads it is joined before it goes
  return Enqueue(Operation{[other, position, self, abandon](Failure* failed) {
                             Failure found;
                             if (!other->WaitFor(position, &found, abandon)) {
                               *failed = DroppedFailure(self);
                               return false;
                             }
                             if (!found.failed()) return true;
                             *failed = found;
                             failed->message = "stream " + std::to_string(self) + " waited on stream " +
                                               std::to_string(other->id()) + ", which failed: " + found.message;
                             return false;
                           },
                           nullptr},
                 failure);
}

bool WorkerStream::notify(std::function<void(const Failure&)> done, Failure* failure) {
  // Shared by both paths: whichever runs calls it once.
  auto callback = std::make_shared<std::function<void(const Failure&)>>(std::move(done));
  return Enqueue(Operation{[callback](Failure*) {
                             (*callback)(Failure());
                             return true;
                           },
                           [callback](const Failure& why) { (*callback)(why); }},
                 failure);
}

bool WorkerStream::synchronize(Failure* failure) {
  Failure found;
  progress_->WaitFor(enqueued_, &found);
  if (found.failed()) *failure = found;
  return !found.failed();
}

}  // namespace nuvec
