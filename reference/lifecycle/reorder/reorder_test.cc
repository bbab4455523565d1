// Tests of the coupled reorder: one permutation over token, cache, position and sampler state.
#include "reference/lifecycle/reorder/reorder.h"

#include <gtest/gtest.h>

#include "reference/lifecycle/kv_object/kv_object.h"

namespace kvc::lifecycle {
namespace {

std::vector<LiveSequenceRow> ThreeBeams() {
  return {{"tok-a", "A", 5, "rng-a"}, {"tok-b", "B", 6, "rng-b"}, {"tok-c", "C", 7, "rng-c"}};
}

TEST(ReorderTest, OnePermutationMovesAllFourFieldsTogether) {
  auto before = ThreeBeams();
  auto after = Reorder(before, {2, 0, 1});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  ASSERT_EQ(after->size(), 3u);
  EXPECT_EQ((*after)[0], before[2]);
  EXPECT_EQ((*after)[1], before[0]);
  EXPECT_EQ((*after)[2], before[1]);
  EXPECT_TRUE(CheckCoupledReorder(before, {2, 0, 1}, *after).ok());
  EXPECT_TRUE(CheckCoupledReorder(before, {0, 1, 2}, before).ok());
}

// Each of the four coupled fields, moved by a different permutation than the other three, is a
// split state naming that field.
TEST(ReorderTest, EachFieldMovedAloneIsSplitState) {
  const auto before = ThreeBeams();
  const std::vector<uint64_t> perm = {1, 0, 2};
  struct Case {
    const char* field;
    void (*mutate)(LiveSequenceRow&, const LiveSequenceRow&);
  };
  const Case cases[] = {
      {"token_state",
       [](LiveSequenceRow& r, const LiveSequenceRow& o) { r.token_state = o.token_state; }},
      {"cache_handle",
       [](LiveSequenceRow& r, const LiveSequenceRow& o) { r.cache_handle = o.cache_handle; }},
      {"next_position",
       [](LiveSequenceRow& r, const LiveSequenceRow& o) { r.next_position = o.next_position; }},
      {"sampler_state",
       [](LiveSequenceRow& r, const LiveSequenceRow& o) { r.sampler_state = o.sampler_state; }},
  };
  for (const Case& c : cases) {
    auto after = *Reorder(before, perm);
    c.mutate(after[0], before[0]);  // row 0 keeps the un-permuted value of this one field
    Status s = CheckCoupledReorder(before, perm, after);
    EXPECT_EQ(s.error(), ErrorCode::LIFECYCLE_REORDER_SPLIT_STATE) << c.field;
    EXPECT_NE(s.message().find(c.field), std::string::npos) << s.message();
  }
  // A trace writes the cache handle as the row's request_id, which the message names (probe 75).
  auto after = *Reorder(before, perm);
  after[0].cache_handle = before[0].cache_handle;
  EXPECT_NE(CheckCoupledReorder(before, perm, after).message().find("request_id"),
            std::string::npos);
}

// Regression (an adversarial probe, 2026-12-04): rows that moved whole, by another permutation
// than parent_index, were reported as a split of their token_state, a split that did not happen.
TEST(ReorderTest, RegressionRowsMovedWholeByAnotherPermutationAreNotCalledSplit) {
  const auto before = ThreeBeams();
  const auto after = *Reorder(before, {1, 0, 2});                  // rows_after of the swap
  const Status s = CheckCoupledReorder(before, {0, 1, 2}, after);  // parent_index: identity
  EXPECT_EQ(s.error(), ErrorCode::LIFECYCLE_REORDER_SPLIT_STATE);
  EXPECT_NE(s.message().find("reorder row 0 holds parent 1's whole row, but parent_index names 0"),
            std::string::npos)
      << s.message();
}

TEST(ReorderTest, RepeatedParentIsSelectionPlusForkNotReorder) {
  const auto before = ThreeBeams();
  auto r = Reorder(before, {0, 0, 2});
  EXPECT_EQ(r.status().error(), ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
  EXPECT_NE(r.status().message().find("fork"), std::string::npos) << r.status().message();
  // Even when `after` is exactly the selected rows, the check refuses it.
  std::vector<LiveSequenceRow> selected = {before[0], before[0], before[2]};
  EXPECT_EQ(CheckCoupledReorder(before, {0, 0, 2}, selected).error(),
            ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
  // Wrong length, out-of-range index and a changed row count are refused as well.
  EXPECT_EQ(CheckPermutation({0, 1}, 3).error(), ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
  EXPECT_EQ(CheckPermutation({0, 1, 3}, 3).error(), ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
  EXPECT_EQ(CheckCoupledReorder(before, {0, 1, 2}, {before[0], before[1]}).error(),
            ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
}

// The legal way to keep beam A twice: fork A into a child with its own identity, then reorder
// the distinct rows. The child owns an independent snapshot of A's exact prefix.
// Regression (an adversarial probe, 2026-12-03): a batch listing one request in two rows passed
// a reorder (each row moved as a permutation of itself); each row is a live sequence with its own
// handle.
TEST(ReorderTest, RegressionTwoRowsOnOneHandleAreNotABatch) {
  std::vector<LiveSequenceRow> before = ThreeBeams();
  before[2] = before[0];
  const Status s = CheckCoupledReorder(before, {1, 0, 2}, {before[1], before[0], before[2]});
  EXPECT_EQ(s.error(), ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE) << s.ToString();
  EXPECT_NE(s.message().find("rows 0 and 2 hold the same cache handle \"A\""), std::string::npos)
      << s.message();
}

TEST(ReorderTest, DuplicatingABeamGoesThroughFork) {
  KvObject o(CacheAbi{"abi", 1, "post_rope"});
  ASSERT_TRUE(o.Allocate("A", "A").ok());
  ASSERT_TRUE(o.Allocate("C", "C").ok());
  auto kids = o.Fork("A", 0, {"A2"});
  ASSERT_TRUE(kids.ok()) << kids.status().ToString();
  ASSERT_EQ(kids->size(), 1u);
  EXPECT_EQ((*kids)[0].handle_id, "A2");
  EXPECT_EQ((*kids)[0].generation, 0u);
  std::vector<LiveSequenceRow> before = {
      {"tok-a", "A", 0, "rng-a"}, {"tok-a", "A2", 0, "rng-a2"}, {"tok-c", "C", 0, "rng-c"}};
  auto after = Reorder(before, {1, 0, 2});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(CheckCoupledReorder(before, {1, 0, 2}, *after).ok());
}

}  // namespace
}  // namespace kvc::lifecycle
