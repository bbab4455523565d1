// Host bookkeeping of the device K/V storage of the CUDA engine: a block pool and one request's
// committed/staged block table (no device code, unit-tested in CI).
//
// Model (M5.1 0x01, the same as reference/model/kv_storage): a request holds committed rows
// [0, committed_len) and at most one staged interval [committed_len, committed_len + staged)
// written by the open append transaction. Paged (block_size > 0): positions map to blocks of a
// pool shared by every request of an engine; Stage() allocates the blocks the interval needs
// beyond the committed ones (the transaction's staged table = committed entries + new ones),
// Commit() keeps them, Abort() returns exactly the new ones to the pool. Contiguous
// (block_size == 0): the table is empty and only the capacity is checked.
// Ownership: KvBlockTable records block ids; the pool owns the free list. Thread safety: none.
#ifndef KVCONFORM_KERNELS_DEVICE_KV_TABLE_H_
#define KVCONFORM_KERNELS_DEVICE_KV_TABLE_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"

namespace kvc::kernels {

// A free list of block ids [0, num_blocks); the lowest free id is handed out first.
class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);
  int32_t num_blocks() const { return num_blocks_; }
  int32_t free_count() const { return static_cast<int32_t>(free_.size()); }
  // kOutOfRange when the pool is empty.
  StatusOr<int32_t> Allocate();
  // Returns `id` (must be allocated; Internal otherwise, the pool is unchanged).
  Status Free(int32_t id);

 private:
  int32_t num_blocks_;
  std::vector<int32_t> free_;  // kept sorted descending: back() is the lowest id
  std::vector<bool> allocated_;
};

class KvBlockTable {
 public:
  // block_size 0 = contiguous with `max_tokens` slots; else paged with
  // ceil(max_tokens / block_size) table entries.
  KvBlockTable(int32_t block_size, int32_t max_tokens);

  int32_t block_size() const { return block_size_; }
  int32_t max_tokens() const { return max_tokens_; }
  int32_t max_blocks() const { return max_blocks_; }
  int32_t committed_len() const { return committed_len_; }
  int32_t staged_count() const { return staged_; }
  bool released() const { return released_; }

  // Opens [committed_len, committed_len + count). FailedPrecondition when an interval is open
  // or the table was released; kOutOfRange past max_tokens or when the pool runs out (then no
  // block stays allocated and nothing is staged).
  Status Stage(int32_t count, BlockPool* pool);
  // The transaction's table: max_blocks entries, -1 where no block is held (paged only).
  const std::vector<int32_t>& staged_table() const { return staged_table_; }
  // The published table (entries for the committed blocks, -1 elsewhere).
  const std::vector<int32_t>& committed_table() const { return committed_table_; }
  void Commit();
  Status Abort(BlockPool* pool);    // frees the blocks this interval added
  Status Release(BlockPool* pool);  // frees every block; later Stage() fails

 private:
  int32_t block_size_, max_tokens_, max_blocks_;
  int32_t committed_len_ = 0, staged_ = 0;
  bool released_ = false;
  std::vector<int32_t> committed_table_, staged_table_;
};

}  // namespace kvc::kernels

#endif  // KVCONFORM_KERNELS_DEVICE_KV_TABLE_H_
