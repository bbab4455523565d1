// Host block pool and per-request block table of the CUDA engine's device K/V storage.
#include "kernels/device_kv_table.h"

#include <string>

#include "kernels/kernel_types.h"

namespace kvc::kernels {

BlockPool::BlockPool(int32_t num_blocks)
    : num_blocks_(num_blocks < 0 ? 0 : num_blocks), allocated_(num_blocks_, false) {
  for (int32_t i = num_blocks_ - 1; i >= 0; --i) free_.push_back(i);
}

StatusOr<int32_t> BlockPool::Allocate() {
  if (free_.empty())
    return OutOfRange("device K/V block pool exhausted (" + std::to_string(num_blocks_) +
                      " blocks)");
  const int32_t id = free_.back();
  free_.pop_back();
  allocated_[id] = true;
  return id;
}

Status BlockPool::Free(int32_t id) {
  if (id < 0 || id >= num_blocks_ || !allocated_[id])
    return Internal("block pool: freeing block " + std::to_string(id) + " that is not allocated");
  allocated_[id] = false;
  // Keep the free list sorted descending so allocation order is deterministic.
  auto it = free_.begin();
  while (it != free_.end() && *it > id) ++it;
  free_.insert(it, id);
  return Status::Ok();
}

KvBlockTable::KvBlockTable(int32_t block_size, int32_t max_tokens)
    : block_size_(block_size < 0 ? 0 : block_size),
      max_tokens_(max_tokens < 0 ? 0 : max_tokens),
      max_blocks_(block_size_ > 0 ? CeilDiv(max_tokens_, block_size_) : 0),
      committed_table_(max_blocks_, -1),
      staged_table_(max_blocks_, -1) {}

Status KvBlockTable::Stage(int32_t count, BlockPool* pool) {
  if (released_) return FailedPrecondition("device K/V table: stage after release");
  if (staged_ != 0) return FailedPrecondition("device K/V table: an interval is already staged");
  if (count <= 0) return InvalidArgument("device K/V table: stage of " + std::to_string(count));
  if (static_cast<int64_t>(committed_len_) + count > max_tokens_)
    return OutOfRange("device K/V table: " + std::to_string(committed_len_) + " + " +
                      std::to_string(count) + " rows exceed the capacity of " +
                      std::to_string(max_tokens_));
  staged_table_ = committed_table_;
  if (block_size_ > 0) {
    if (pool == nullptr) return InvalidArgument("device K/V table: paged stage without a pool");
    const int32_t have = CeilDiv(committed_len_, block_size_);
    const int32_t need = CeilDiv(committed_len_ + count, block_size_);  // <= max_tokens_
    for (int32_t j = have; j < need; ++j) {
      auto id = pool->Allocate();
      if (!id.ok()) {
        for (int32_t u = have; u < j; ++u) (void)pool->Free(staged_table_[u]);
        staged_table_ = committed_table_;
        return id.status();
      }
      staged_table_[j] = *id;
    }
  }
  staged_ = count;
  return Status::Ok();
}

void KvBlockTable::Commit() {
  committed_len_ += staged_;
  staged_ = 0;
  committed_table_ = staged_table_;
}

Status KvBlockTable::Abort(BlockPool* pool) {
  Status first;
  for (int32_t j = 0; j < max_blocks_; ++j) {
    if (staged_table_[j] >= 0 && committed_table_[j] < 0) {
      Status s = pool ? pool->Free(staged_table_[j]) : Internal("abort without a pool");
      if (first.ok()) first = s;
    }
  }
  staged_table_ = committed_table_;
  staged_ = 0;
  return first;
}

Status KvBlockTable::Release(BlockPool* pool) {
  Status first = Abort(pool);
  for (int32_t j = 0; j < max_blocks_; ++j) {
    if (committed_table_[j] >= 0) {
      Status s = pool ? pool->Free(committed_table_[j]) : Internal("release without a pool");
      if (first.ok()) first = s;
      committed_table_[j] = -1;
    }
  }
  staged_table_ = committed_table_;
  committed_len_ = 0;
  released_ = true;
  return first;
}

}  // namespace kvc::kernels
