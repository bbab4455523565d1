// Saved-work ledgers against the seed's P=2048, G=128 numbers and brute-force sums.
#include "reference/saved_work/saved_work.h"

#include <gtest/gtest.h>

namespace kvc {
namespace {

TEST(SavedWork, SeedNumbersForP2048G128) {
  auto w = ComputeSavedWork(2048, 128);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->rows_no_cache, 270272u);
  EXPECT_EQ(w->rows_cache, 2175u);
  EXPECT_EQ(w->rows_saved, 268097u);
  EXPECT_NEAR(w->row_reduction, 124.26, 0.005);
  EXPECT_EQ(w->pairs_no_cache, 285562176u);
  EXPECT_EQ(w->pairs_cache, 2366400u);
  EXPECT_EQ(w->pairs_saved, 283195776u);
  EXPECT_NEAR(w->pair_reduction, 120.67, 0.005);
}

TEST(SavedWork, MatchesBruteForceSums) {
  for (uint64_t p : {1, 2, 4, 7, 33}) {
    for (uint64_t g : {1, 2, 3, 10}) {
      uint64_t rows_nc = 0, pairs_nc = 0, pairs_c = p * (p + 1) / 2;
      for (uint64_t i = 0; i < g; ++i) {
        rows_nc += p + i;
        pairs_nc += (p + i) * (p + i + 1) / 2;
      }
      for (uint64_t j = 1; j < g; ++j) pairs_c += p + j;
      auto w = ComputeSavedWork(p, g);
      ASSERT_TRUE(w.ok());
      EXPECT_EQ(w->rows_no_cache, rows_nc) << p << "," << g;
      EXPECT_EQ(w->rows_cache, p + g - 1);
      EXPECT_EQ(w->pairs_no_cache, pairs_nc) << p << "," << g;
      EXPECT_EQ(w->pairs_cache, pairs_c) << p << "," << g;
    }
  }
}

TEST(SavedWork, FourPromptThreeOutputStopTrace) {
  // P=4, G=3: uncached calls of width 4, 5, 6 (15 rows); cached 4 + 1 + 1 = 6 rows.
  auto w = ComputeSavedWork(4, 3);
  EXPECT_EQ(w->rows_no_cache, 15u);
  EXPECT_EQ(w->rows_cache, 6u);
}

TEST(SavedWork, LargestSupportedInputsAreExactAndOverflowIsRefused) {
  auto w = ComputeSavedWork(1u << 20, 1u << 20);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  // sum_{s=2^20}^{2^21-1} s(s+1)/2 computed independently in 128 bits.
  unsigned __int128 sum = 0;
  for (unsigned __int128 s = 1u << 20; s < (1u << 21); ++s) sum += s * (s + 1) / 2;
  EXPECT_EQ(w->pairs_no_cache, static_cast<uint64_t>(sum));
  EXPECT_EQ(ComputeSavedWork(1ull << 33, 1).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ComputeSavedWork(1ull << 50, 1ull << 50).status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ComputeSavedWork(0, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeSavedWork(3, 0).status().code(), StatusCode::kInvalidArgument);
}

// Regression (probe 17, finding 06): the refusal printed P + G wrapped to 64 bits ("P + G = 0 is
// too large" for P = 2^64 - 1, G = 1). It prints the true sum.
TEST(SavedWork, RegressionOverflowMessagePrintsTheUnwrappedSum) {
  const uint64_t max = ~uint64_t{0};
  struct Case {
    uint64_t p, g;
    const char* sum;
  };
  for (const Case& c :
       {Case{max, 1, "18446744073709551616"}, Case{max, 2, "18446744073709551617"},
        Case{max - 1, 5, "18446744073709551619"}, Case{max, max, "36893488147419103230"},
        Case{(1ull << 42) - 1, 2, "4398046511105"}}) {
    auto w = ComputeSavedWork(c.p, c.g);
    ASSERT_EQ(w.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(
        std::string(w.status().message()).find(std::string("P + G = ") + c.sum + " is too large"),
        std::string::npos)
        << w.status().message();
  }
}

}  // namespace
}  // namespace kvc
