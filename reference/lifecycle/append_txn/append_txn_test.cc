// Tests of LayerStages (inline bits up to 64 layers, heap words beyond) against a plain model.
#include "reference/lifecycle/append_txn/append_txn.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "reference/testutil/testutil.h"

namespace kvc::lifecycle {
namespace {

// Property: for 1..200 layers and random K/V contributions, every layer reads back what a
// vector<LayerStage> model holds, and all_complete() is "every layer has K and V".
TEST(LayerStagesTest, MatchesAVectorModelAcrossTheInlineBoundary) {
  const uint64_t seed = test::AnnounceSeed(20261129);
  std::mt19937_64 rng(seed);
  for (uint32_t n : {1u, 2u, 63u, 64u, 65u, 127u, 128u, 129u, 200u, 575u, 576u, 577u, 1300u}) {
    LayerStages stages(n);
    std::vector<LayerStage> model(n);
    ASSERT_EQ(stages.size(), n);
    EXPECT_FALSE(stages.all_complete());
    for (int step = 0; step < 4 * static_cast<int>(n); ++step) {
      const size_t l = rng() % n;
      const bool k = rng() % 2, v = rng() % 2;
      stages.Add(l, k, v);
      model[l].k = model[l].k || k;
      model[l].v = model[l].v || v;
      bool all = true;
      for (const LayerStage& m : model) all = all && m.complete();
      ASSERT_EQ(stages.all_complete(), all) << "n=" << n << " step " << step;
    }
    size_t i = 0;
    for (LayerStage got : stages) {
      EXPECT_EQ(got, model[i]) << "n=" << n << " layer " << i;
      ++i;
    }
    EXPECT_EQ(i, n);
    for (size_t l = 0; l < n; ++l) stages.Add(l, true, true);
    EXPECT_TRUE(stages.all_complete()) << "n=" << n;
    // Equality is by content: the same bits reached in another order compare equal.
    LayerStages other(n);
    for (size_t l = n; l-- > 0;) other.Add(l, true, true);
    EXPECT_TRUE(stages == other) << "n=" << n;
  }
  EXPECT_FALSE(LayerStages().all_complete());  // no layers: never prepared
}

// A header may declare up to 2^20 layers; the stages held follow the layers staged: every
// transaction used to allocate 256 KiB of bits at its start (probe 8: N started-and-failed
// appends grew 256 KiB each).
TEST(LayerStagesTest, RegressionHighLayerBitsAreAllocatedWhenStaged) {
  const uint32_t n = 1u << 20;
  LayerStages stages(n);
  EXPECT_EQ(stages.allocated_chunks(), 0u);
  stages.Add(0, true, true);
  stages.Add(63, true, false);
  EXPECT_EQ(stages.allocated_chunks(), 0u);
  stages.Add(n - 1, true, true);
  stages.Add(n - 2, false, true);
  stages.Add(64, true, true);
  EXPECT_EQ(stages.allocated_chunks(), 2u);
  EXPECT_EQ(stages[n - 1], (LayerStage{true, true}));
  EXPECT_EQ(stages[n - 2], (LayerStage{false, true}));
  EXPECT_EQ(stages[n - 3], (LayerStage{}));
  EXPECT_EQ(stages[64], (LayerStage{true, true}));
  EXPECT_EQ(stages[65], (LayerStage{}));
  EXPECT_EQ(stages[63], (LayerStage{true, false}));
  EXPECT_FALSE(stages.all_complete());
  LayerStages other(n);
  for (size_t l : {size_t{64}, size_t{n - 2}, size_t{n - 1}, size_t{63}, size_t{0}})
    other.Add(l, true, true);
  EXPECT_FALSE(stages == other);  // layer 63's V and n-2's K differ
  stages.Add(63, false, true);
  stages.Add(n - 2, true, false);
  EXPECT_TRUE(stages == other);
}

}  // namespace
}  // namespace kvc::lifecycle
