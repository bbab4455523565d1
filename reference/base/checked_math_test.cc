// checked_math.h: the overflow checks at the edge of uint64_t, and ExactRatio against quotients
// rounded by an independent oracle.
#include "reference/base/checked_math.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <random>

namespace kvc {
namespace {

constexpr uint64_t kMax = UINT64_MAX;

TEST(CheckedMath, AddRefusesOnlyASumPastUint64Max) {
  EXPECT_EQ(CheckedAdd(2, 3), std::optional<uint64_t>(5));
  EXPECT_EQ(CheckedAdd(kMax - 1, 1), std::optional<uint64_t>(kMax));
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedAdd(1, kMax), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMax, kMax), std::nullopt);
}

TEST(CheckedMath, SubRefusesOnlyANegativeDifference) {
  EXPECT_EQ(CheckedSub(5, 3), std::optional<uint64_t>(2));
  EXPECT_EQ(CheckedSub(7, 7), std::optional<uint64_t>(0));
  EXPECT_EQ(CheckedSub(kMax, 0), std::optional<uint64_t>(kMax));
  EXPECT_EQ(CheckedSub(3, 5), std::nullopt);
  EXPECT_EQ(CheckedSub(0, 1), std::nullopt);
  EXPECT_EQ(CheckedSub(kMax - 1, kMax), std::nullopt);
}

TEST(CheckedMath, MulRefusesOnlyAProductPastUint64Max) {
  EXPECT_EQ(CheckedMul(6, 7), std::optional<uint64_t>(42));
  EXPECT_EQ(CheckedMul(0, kMax), std::optional<uint64_t>(0));
  EXPECT_EQ(CheckedMul(uint64_t{1} << 32, (uint64_t{1} << 32) - 1),
            std::optional<uint64_t>(kMax - ((uint64_t{1} << 32) - 1)));
  EXPECT_EQ(CheckedMul(uint64_t{1} << 32, uint64_t{1} << 32), std::nullopt);
  EXPECT_EQ(CheckedMul(kMax, 2), std::nullopt);
}

// Every intermediate product is checked, even one that a later zero factor would cancel.
TEST(CheckedMath, ProductRefusesAnyOverflowingPrefix) {
  EXPECT_EQ(CheckedProduct({}), std::optional<uint64_t>(1));
  EXPECT_EQ(CheckedProduct({2, 3, 7}), std::optional<uint64_t>(42));
  EXPECT_EQ(CheckedProduct({kMax, 1}), std::optional<uint64_t>(kMax));
  EXPECT_EQ(CheckedProduct({uint64_t{1} << 63, 2}), std::nullopt);
  EXPECT_EQ(CheckedProduct({uint64_t{1} << 32, uint64_t{1} << 32, 0}), std::nullopt);
}

TEST(CheckedMath, NarrowKeepsExactlyTheValuesOfUint64) {
  EXPECT_EQ(Narrow(0), std::optional<uint64_t>(0));
  EXPECT_EQ(Narrow(kMax), std::optional<uint64_t>(kMax));
  EXPECT_EQ(Narrow(static_cast<unsigned __int128>(kMax) + 1), std::nullopt);
  EXPECT_EQ(Narrow(static_cast<unsigned __int128>(kMax) * kMax), std::nullopt);
}

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
    // a quotient of exactly 54 bits, its last bit 1 and a remainder: rounds up, not to even
    {27021597764222980u, 3u, 9007199254740994.0},
    // quotients above 2^54: a remainder, or a dropped quotient bit below the guard, breaks the tie
    {36028797018963973u, 2u, 18014398509481988.0},
    {18014398509481987u, 1u, 18014398509481988.0},
    // an exact tie in the first fractional bit (2r == den): to even
    {9007199254740995u, 2u, 4503599627370498.0},
    // denominators above 2^63: the doubled remainder needs a 65th bit (the last two random:
    // random.seed(11), 64-bit numerators, 64-bit denominators with the top bit set)
    {12345678901234567890u, 18000000000000000001u, 0.6858710500685871},
    {18446744073709551614u, 18446744073709551615u, 1.0},
    {15970126346341786989u, 15806332507635138087u, 1.0103625454309233},
    {14410929494797389965u, 17558207245877303233u, 0.8207517597322529},
};

TEST(ExactRatio, MatchesCorrectlyRoundedQuotients) {
  for (const RatioCase& c : kRatios)
    EXPECT_EQ(ExactRatio(c.num, c.den), c.want) << c.num << " / " << c.den;
}

// A zero numerator is 0; a zero denominator (the caller's to refuse) gives 0 rather than trapping.
TEST(ExactRatio, ZeroOperandsGiveZero) {
  EXPECT_EQ(ExactRatio(0, 7), 0.0);
  EXPECT_EQ(ExactRatio(5, 0), 0.0);
  EXPECT_EQ(ExactRatio(0, 0), 0.0);
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

// A deadline `budget` after `start` that cannot overflow the clock: "infinite" budgets saturate
// at the clock's last instant (start + budget would convert milliseconds::max() to nanoseconds,
// a signed overflow: UBSan's report on `fuzz check --budget inf`, 2026-12-06).
TEST(CheckedMath, SaturatingDeadlineAddsOrSaturates) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  const Clock::time_point start(nanoseconds(123'456'789));
  EXPECT_EQ(SaturatingDeadline(start, milliseconds(1500)), start + milliseconds(1500));
  EXPECT_EQ(SaturatingDeadline(start, milliseconds(0)), start);
  EXPECT_EQ(SaturatingDeadline(start, milliseconds(-5)), start);  // run out at the start
  EXPECT_EQ(SaturatingDeadline(start, milliseconds::max()), Clock::time_point::max());
  EXPECT_EQ(SaturatingDeadline(start, milliseconds(1'000'000'000'000'000)),  // 10^15 ms
            Clock::time_point::max());
  // At the clock's end: the last budget that fits is added exactly, the next one saturates.
  const Clock::time_point late = Clock::time_point::max() - milliseconds(10) - nanoseconds(7);
  EXPECT_EQ(SaturatingDeadline(late, milliseconds(9)), late + milliseconds(9));
  EXPECT_EQ(SaturatingDeadline(late, milliseconds(10)), Clock::time_point::max());
  // An instant before the clock's epoch has the whole range as room.
  const Clock::time_point early(nanoseconds(-1'000'000'000));
  EXPECT_EQ(SaturatingDeadline(early, milliseconds(2000)), early + milliseconds(2000));
  EXPECT_EQ(SaturatingDeadline(early, milliseconds::max()), Clock::time_point::max());
}

}  // namespace
}  // namespace kvc
