// checked_math.h: ExactRatio against quotients rounded by an independent oracle.
#include "reference/base/checked_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kvc {
namespace {

// The expected doubles are Python's float(fractions.Fraction(num, den)) (correctly rounded),
// computed outside this code base (random cases: random.seed(7), 64-bit numerators, 40-bit
// denominators).
struct RatioCase {
  uint64_t num, den;
  double want;
};
constexpr RatioCase kRatios[] = {
    // probe 38: double(num) / double(den) gives 51593.78389926384 (one ulp low)
    {16554018676113625u, 320852967645u, 51593.78389926385},
    {1u, 3u, 0.3333333333333333},
    {18446744073709551615u, 1u, 1.8446744073709552e+19},
    {18446744073709551615u, 3u, 6.148914691236517e+18},
    {1u, 18446744073709551615u, 5.421010862427522e-20},
    {10u, 4u, 2.5},
    {7u, 7u, 1.0},
    {9007199254740993u, 1u, 9007199254740992.0},  // a tie: to even
    {18446744073709551615u, 18446744073709551614u, 1.0},
    {17485029721327973432u, 434439589176u, 40247321.277721874},
    {890727360438182992u, 902254243636u, 987224.3513631315},
    {1736392818365009963u, 641520749049u, 2706682.2405028436},
    {16781078052021535861u, 234107653878u, 71681031.24371415},
    {1585446675937841368u, 461423994715u, 3435986.628560783},
    {4439448776366754703u, 605979998170u, 7326064.869753876},
};

TEST(ExactRatio, MatchesCorrectlyRoundedQuotients) {
  for (const RatioCase& c : kRatios)
    EXPECT_EQ(ExactRatio(c.num, c.den), c.want) << c.num << " / " << c.den;
}

// Operands that doubles hold exactly (below 2^53): IEEE division is correctly rounded, so the two
// agree on every one.
TEST(ExactRatio, AgreesWithIeeeDivisionOnExactOperands) {
  std::mt19937_64 rng(20261205);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t num = rng() >> (11 + rng() % 50), den = (rng() >> (11 + rng() % 52)) + 1;
    ASSERT_EQ(ExactRatio(num, den), static_cast<double>(num) / static_cast<double>(den))
        << num << " / " << den << " (seed 20261205, case " << i << ")";
  }
}

}  // namespace
}  // namespace kvc
