// Pinned staging for a stream's writes and reads (cuda_streams.cc): page-locked host blocks
// (cuMemAllocHost) that the copy engine reads or fills at full speed, each with an event after the last copy
// that used it, so that a block is reused only once that copy has completed. The pool keeps up to
// kStagingBudget bytes of blocks; past it, acquiring waits for the oldest block in use instead of pinning
// more. Used from the JavaScript thread only.
#ifndef NUVEC_CUDA_STAGING_H_
#define NUVEC_CUDA_STAGING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/platform.h"
#include "cuda_streams.h"

namespace nuvec {

// Bytes of one chunk: writes and reads are cut into chunks of at most this, each through its own block, so
// that copying into one block overlaps the copy engine's work on the one before.
constexpr size_t kStagingChunk = 4u << 20;
// Bytes of blocks the pool keeps.
constexpr size_t kStagingBudget = 64u << 20;

struct StagingBlock {
  void* host = nullptr;
  size_t size = 0;
  cuda::CUevent done = nullptr;
  bool used = false;   // `done` was recorded after a copy: free once it completed
  uint64_t order = 0;  // when it was last settled (the oldest in use is waited for first)
};

class StagingPool {
 public:
  explicit StagingPool(const CudaDeviceContext& context) : context_(context) {}
  // Frees every block: the stream's work must have completed (the stream synchronizes first).
  ~StagingPool();
  // A block of at least `bytes` (at most kStagingChunk) that no pending copy uses. nullptr and a failure
  // when the driver refuses pinned memory or an event.
  StagingBlock* acquire(size_t bytes, Failure* failure);
  // Marks `block` in use until `stream` has passed what was just enqueued on it. When the event cannot be
  // recorded, the stream is waited for instead; false and the refusal then.
  bool settle(StagingBlock* block, cuda::CUstream stream, Failure* failure);
  // Bytes of pinned blocks held (tests and figures).
  size_t pinnedBytes() const { return total_; }

 private:
  bool completed(StagingBlock& block);
  void drop(size_t index);

  CudaDeviceContext context_;
  std::vector<std::unique_ptr<StagingBlock>> blocks_;
  size_t total_ = 0;
  uint64_t settled_ = 0;
};

}  // namespace nuvec

#endif  // NUVEC_CUDA_STAGING_H_
