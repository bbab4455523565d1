// Tests of the parity verdict rules that need no model: fork_diverge_vs_fresh's two sides.
#include "reference/model/parity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvc::model {
namespace {

// One step of baseline logits `base` (token: its argmax) against candidate logits `cand`.
PairResult Side(std::vector<float> base, std::vector<float> cand, double tol) {
  GreedyRun run;
  run.logits = {base};
  run.tokens = {static_cast<int64_t>(std::max_element(base.begin(), base.end()) - base.begin())};
  const int64_t token = std::max_element(cand.begin(), cand.end()) - cand.begin();
  return CompareSteps("fork_diverge_vs_fresh", run, {cand}, {token}, tol);
}

TEST(CombineForkSidesTest, BothSidesIdenticalPass) {
  PairResult r = CombineForkSides(Side({1, 2, 3}, {1, 2, 3}, 0), Side({4, 1, 0}, {4, 1, 0}, 0));
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.bit_identical);
  EXPECT_TRUE(r.argmax_agree);
  EXPECT_EQ(r.steps, 2u);
  EXPECT_EQ(r.detail, "");
  EXPECT_EQ(r.name, "fork_diverge_vs_fresh");
}

// Regression (model mutant 112): a verdict that ignored the parent's step after the fork passed
// a copy-on-write that corrupted the parent's row while the child's was right.
TEST(CombineForkSidesTest, RegressionAParentThatDivergesFailsThePair) {
  PairResult child = Side({1, 2, 3}, {1, 2, 3}, 0);
  PairResult parent = Side({4, 1, 0}, {4, 1, 0.5f}, 0);
  ASSERT_TRUE(child.passed);
  ASSERT_FALSE(parent.passed);
  PairResult r = CombineForkSides(child, parent);
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.bit_identical);
  EXPECT_EQ(r.max_abs, parent.max_abs);
  EXPECT_EQ(r.detail, "parent after the fork: " + parent.detail);
  // The parent's greedy token differs too: argmax_agree is the conjunction.
  PairResult flipped = CombineForkSides(child, Side({4, 1, 0}, {0, 1, 4}, 0));
  EXPECT_FALSE(flipped.passed);
  EXPECT_FALSE(flipped.argmax_agree);
}

TEST(CombineForkSidesTest, AChildThatDivergesFailsThePairAndBothAreNamed) {
  PairResult bad_child = Side({1, 2, 3}, {1, 2, 3.25f}, 0);
  PairResult r = CombineForkSides(bad_child, Side({4, 1, 0}, {4, 1, 0}, 0));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.max_abs, bad_child.max_abs);
  EXPECT_EQ(r.detail, "child after the fork: " + bad_child.detail);
  PairResult bad_parent = Side({4, 1, 0}, {4, 1, 0.5f}, 0);
  PairResult both = CombineForkSides(bad_child, bad_parent);
  EXPECT_FALSE(both.passed);
  EXPECT_EQ(both.detail, "child after the fork: " + bad_child.detail +
                             "; parent after the fork: " + bad_parent.detail);
}

TEST(CombineForkSidesTest, NonFiniteOnEitherSideFails) {
  PairResult r =
      CombineForkSides(Side({1, 2, 3}, {1, 2, 3}, 0), Side({4, 1, 0}, {4, 1, std::nanf("")}, 0));
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.non_finite);
}

// With tolerances (fast mode) each side is judged against its own scale; the passing result
// reports the side nearer its tolerance, so it still reads max_abs <= tolerance.
TEST(CombineForkSidesTest, APassingToleranceResultReadsWithinItsTolerance) {
  // Child: scale 1000, diff 0.5 (tolerance 1.0: half of it). Parent: scale 1, diff 0.0009
  // (tolerance 0.001: 90% of it), a smaller diff nearer its tolerance.
  PairResult child = Side({1000, 2, 3}, {1000.5f, 2, 3}, 1e-3);
  PairResult parent = Side({1, 0, 0}, {1.0009f, 0, 0}, 1e-3);
  ASSERT_TRUE(child.passed && parent.passed);
  PairResult r = CombineForkSides(child, parent);
  EXPECT_TRUE(r.passed);
  EXPECT_FALSE(r.bit_identical);
  EXPECT_LE(r.max_abs, r.tolerance);
  EXPECT_EQ(r.tolerance, parent.tolerance);
  EXPECT_EQ(r.max_abs, parent.max_abs);
  PairResult swapped = CombineForkSides(parent, child);
  EXPECT_TRUE(swapped.passed);
  EXPECT_EQ(swapped.max_abs, parent.max_abs);
}

}  // namespace
}  // namespace kvc::model
