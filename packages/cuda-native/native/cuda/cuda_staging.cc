// See cuda_staging.h.
#include "cuda_staging.h"

#include <string>

namespace nuvec {

using namespace cuda;

namespace {
constexpr size_t kStagingMinimum = 64u << 10;
}  // namespace

StagingPool::~StagingPool() {
  context_.bind();
  for (auto& block : blocks_) {
    context_.api->cuEventDestroy(block->done);
    context_.api->cuMemFreeHost(block->host);
  }
}

bool StagingPool::completed(StagingBlock& block) {
  if (block.used && context_.api->cuEventQuery(block.done) == CUDA_SUCCESS) block.used = false;
  return !block.used;
}

void StagingPool::drop(size_t index) {
  StagingBlock& block = *blocks_[index];
  context_.api->cuEventDestroy(block.done);
  context_.api->cuMemFreeHost(block.host);
  total_ -= block.size;
  blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index));
}

StagingBlock* StagingPool::acquire(size_t bytes, Failure* failure) {
  size_t size = kStagingMinimum;
  while (size < bytes) size *= 2;
  // The smallest free block that fits.
  StagingBlock* fit = nullptr;
  for (auto& block : blocks_) {
    if (block->size >= size && completed(*block) && (fit == nullptr || block->size < fit->size)) fit = block.get();
  }
  if (fit != nullptr) return fit;
  // Over the budget: free blocks too small go first, then the oldest block in use that fits is waited for.
  for (size_t index = blocks_.size(); index > 0 && total_ + size > kStagingBudget; index -= 1) {
    if (!blocks_[index - 1]->used) drop(index - 1);
  }
  if (total_ + size > kStagingBudget) {
    StagingBlock* oldest = nullptr;
    for (auto& block : blocks_) {
      if (block->size >= size && (oldest == nullptr || block->order < oldest->order)) oldest = block.get();
    }
    if (oldest != nullptr) {
      CUresult result = context_.api->cuEventSynchronize(oldest->done);
      if (result != CUDA_SUCCESS) {
        context_.refused("cuEventSynchronize", result, failure);
        return nullptr;
      }
      oldest->used = false;
      return oldest;
    }
  }
  auto block = std::make_unique<StagingBlock>();
  block->size = size;
  CUresult result = context_.api->cuMemAllocHost(&block->host, size);
  if (result != CUDA_SUCCESS) {
    *failure = Failure::Allocation("cuMemAllocHost of " + std::to_string(size) +
                                   " bytes of pinned staging failed: " + ResultText(*context_.api, result));
    return nullptr;
  }
  result = context_.api->cuEventCreate(&block->done, CU_EVENT_DISABLE_TIMING);
  if (result != CUDA_SUCCESS) {
    context_.api->cuMemFreeHost(block->host);
    context_.refused("cuEventCreate", result, failure);
    return nullptr;
  }
  total_ += size;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

bool StagingPool::settle(StagingBlock* block, CUstream stream, Failure* failure) {
  CUresult result = context_.api->cuEventRecord(block->done, stream);
  if (result == CUDA_SUCCESS) {
    block->used = true;
    block->order = ++settled_;
    return true;
  }
  context_.api->cuStreamSynchronize(stream);
  block->used = false;
  return context_.refused("cuEventRecord", result, failure);
}

}  // namespace nuvec
