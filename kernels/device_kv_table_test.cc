// Tests of the CUDA engine's host block bookkeeping (runs in CI without a device).
#include "kernels/device_kv_table.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/kernel_types.h"

namespace kvc::kernels {
namespace {

TEST(BlockPool, AllocatesLowestFirstAndRejectsDoubleFree) {
  BlockPool pool(3);
  EXPECT_EQ(*pool.Allocate(), 0);
  EXPECT_EQ(*pool.Allocate(), 1);
  ASSERT_TRUE(pool.Free(0).ok());
  EXPECT_FALSE(pool.Free(0).ok());  // not allocated any more
  EXPECT_FALSE(pool.Free(7).ok());  // outside the pool
  EXPECT_EQ(*pool.Allocate(), 0);   // lowest free id again
  EXPECT_EQ(*pool.Allocate(), 2);
  EXPECT_EQ(pool.Allocate().status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(pool.free_count(), 0);
}

TEST(KvBlockTable, StageCommitAbortKeepCommittedBlocks) {
  BlockPool pool(8);
  KvBlockTable t(4, 32);  // 8 table entries
  EXPECT_EQ(t.max_blocks(), 8);
  ASSERT_TRUE(t.Stage(5, &pool).ok());  // positions [0, 5): blocks 0, 1
  EXPECT_EQ(t.staged_table()[0], 0);
  EXPECT_EQ(t.staged_table()[1], 1);
  EXPECT_EQ(t.staged_table()[2], -1);
  EXPECT_EQ(t.committed_table()[0], -1);  // nothing visible before Commit
  EXPECT_FALSE(t.Stage(1, &pool).ok());   // one open interval at a time
  t.Commit();
  EXPECT_EQ(t.committed_len(), 5);
  EXPECT_EQ(t.committed_table()[1], 1);
  // [5, 13): block 1 is reused (slot 1..3), blocks 2, 3 are new; abort frees exactly those.
  ASSERT_TRUE(t.Stage(8, &pool).ok());
  EXPECT_EQ(t.staged_table()[2], 2);
  EXPECT_EQ(t.staged_table()[3], 3);
  EXPECT_EQ(pool.free_count(), 4);
  ASSERT_TRUE(t.Abort(&pool).ok());
  EXPECT_EQ(pool.free_count(), 6);
  EXPECT_EQ(t.committed_len(), 5);
  EXPECT_EQ(t.staged_count(), 0);
  EXPECT_EQ(t.staged_table(), t.committed_table());
  // The table addresses rows exactly like KvRowOffset with the staged table.
  ASSERT_TRUE(t.Stage(3, &pool).ok());  // [5, 8): still blocks 0, 1
  KvLayout l;
  l.batch = 1;
  l.num_kv_heads = 2;
  l.head_dim = 4;
  l.block_size = 4;
  l.num_blocks = 8;
  l.max_blocks_per_seq = t.max_blocks();
  EXPECT_EQ(KvRowOffset(l, t.staged_table().data(), 0, 1, 7), ((1 * 2 + 1) * 4 + 3) * 4);
  EXPECT_EQ(KvRowOffset(l, t.staged_table().data(), 0, 0, 8), -1);  // block 2 not held
  ASSERT_TRUE(t.Release(&pool).ok());
  EXPECT_EQ(pool.free_count(), 8);
  EXPECT_EQ(t.Stage(1, &pool).code(), StatusCode::kFailedPrecondition);
}

TEST(KvBlockTable, ExhaustionAndCapacityLeaveNothingAllocated) {
  BlockPool pool(2);
  KvBlockTable t(2, 100);
  EXPECT_EQ(t.Stage(5, &pool).code(), StatusCode::kOutOfRange);  // needs 3 blocks
  EXPECT_EQ(pool.free_count(), 2);
  EXPECT_EQ(t.staged_count(), 0);
  EXPECT_EQ(t.Stage(101, &pool).code(), StatusCode::kOutOfRange);  // past max_tokens
  EXPECT_EQ(t.Stage(0, &pool).code(), StatusCode::kInvalidArgument);
  KvBlockTable c(0, 10);  // contiguous: capacity only
  EXPECT_EQ(c.max_blocks(), 0);
  ASSERT_TRUE(c.Stage(10, nullptr).ok());
  c.Commit();
  EXPECT_EQ(c.Stage(1, nullptr).code(), StatusCode::kOutOfRange);
}

// The lowest free id is handed out first, whatever order blocks were freed in.
TEST(BlockPool, LowestFreeIdFirstAfterOutOfOrderFrees) {
  BlockPool pool(4);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(*pool.Allocate(), i);
  ASSERT_TRUE(pool.Free(0).ok());
  ASSERT_TRUE(pool.Free(2).ok());
  EXPECT_EQ(*pool.Allocate(), 0);
  EXPECT_EQ(*pool.Allocate(), 2);
  EXPECT_EQ(*pool.Allocate(), 3);
}

// A paged table has ceil(max_tokens / block_size) entries: 30 tokens in blocks of 4 need 8,
// and the whole capacity can be staged.
TEST(KvBlockTable, MaxBlocksIsCeilOfMaxTokens) {
  BlockPool pool(8);
  KvBlockTable t(4, 30);
  EXPECT_EQ(t.max_blocks(), 8);
  ASSERT_TRUE(t.Stage(30, &pool).ok());
  EXPECT_EQ(t.staged_table()[7], 7);
}

// Block counts are ceil(tokens / block_size) without an int32 intermediate past INT32_MAX (the
// mutation audit's D1: (max_tokens + block_size - 1) wrapped, and the table asked for a negative
// size: std::bad_alloc, where 2 entries are due).
TEST(KvBlockTable, RegressionBlockCountsNearInt32MaxDoNotWrap) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  KvBlockTable t(1 << 30, kMax);
  EXPECT_EQ(t.max_blocks(), 2);
  BlockPool pool(2);
  ASSERT_TRUE(t.Stage(kMax - 1, &pool).ok());
  t.Commit();
  EXPECT_EQ(pool.free_count(), 0);
  // The last row needs no new block: rows [2^31 - 2, 2^31 - 1) lie in the second block.
  ASSERT_TRUE(t.Stage(1, &pool).ok());
  t.Commit();
  EXPECT_EQ(t.committed_len(), kMax);
}

// A paged Stage without a pool is refused (kInvalidArgument) and stages nothing.
TEST(KvBlockTable, PagedStageWithoutPoolIsRefused) {
  KvBlockTable t(4, 16);
  EXPECT_EQ(t.Stage(1, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.staged_count(), 0);
  EXPECT_EQ(t.staged_table(), t.committed_table());
}

// A Stage that ran out of blocks holds none afterwards: its staged table is the committed one,
// so a later Abort frees nothing (not the ids another table has allocated since).
TEST(KvBlockTable, FailedStageKeepsNoBlockIds) {
  BlockPool pool(2);
  KvBlockTable t(2, 100);
  ASSERT_EQ(t.Stage(5, &pool).code(), StatusCode::kOutOfRange);  // needs 3 blocks
  EXPECT_EQ(t.staged_table(), t.committed_table());
  KvBlockTable other(2, 100);
  ASSERT_TRUE(other.Stage(4, &pool).ok());  // blocks 0, 1
  EXPECT_TRUE(t.Abort(&pool).ok());
  EXPECT_EQ(pool.free_count(), 0) << "the other table's blocks stay allocated";
}

// Release frees every block, those of an open (uncommitted) interval included.
TEST(KvBlockTable, ReleaseFreesTheOpenIntervalsBlocks) {
  BlockPool pool(8);
  KvBlockTable t(4, 32);
  ASSERT_TRUE(t.Stage(5, &pool).ok());
  t.Commit();
  ASSERT_TRUE(t.Stage(8, &pool).ok());  // adds blocks 2, 3
  ASSERT_EQ(pool.free_count(), 4);
  ASSERT_TRUE(t.Release(&pool).ok());
  EXPECT_EQ(pool.free_count(), 8);
}

// A released table holds nothing: no committed rows and no block id in either table.
TEST(KvBlockTable, ReleasedTableHoldsNoRowsOrBlocks) {
  BlockPool pool(8);
  KvBlockTable t(4, 32);
  ASSERT_TRUE(t.Stage(5, &pool).ok());
  t.Commit();
  ASSERT_TRUE(t.Release(&pool).ok());
  EXPECT_EQ(t.committed_len(), 0);
  EXPECT_EQ(t.committed_table(), std::vector<int32_t>(8, -1));
  EXPECT_EQ(t.staged_table(), std::vector<int32_t>(8, -1));
}

}  // namespace
}  // namespace kvc::kernels
