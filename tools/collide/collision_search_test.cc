// Tests of the distinguished-point collision search on truncated widths (milliseconds each).
#include "tools/collide/collision_search.h"

#include <gtest/gtest.h>

#include <atomic>

namespace kvc::collide {
namespace {

// A pseudo-random function of the input (the search masks the result to its width).
void Mix(const uint64_t* in, uint64_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = SplitMix64(in[i] * 0x2545f4914f6cdd1dull + 17);
}

uint64_t Masked(uint64_t x, unsigned bits) {
  uint64_t y;
  Mix(&x, &y, 1);
  return bits >= 64 ? y : y & ((1ull << bits) - 1);
}

TEST(CollisionSearchTest, FindsACollisionOfATruncatedFunction) {
  for (unsigned bits : {16u, 24u, 32u}) {
    SCOPED_TRACE("bits " + std::to_string(bits));
    SearchOptions o;
    o.bits = bits;
    o.dp_bits = bits / 4;
    o.threads = 2;
    SearchStats stats;
    auto c = FindCollision(
        Mix, [](uint64_t, uint64_t) { return true; }, o, &stats);
    ASSERT_TRUE(c.has_value());
    EXPECT_NE(c->a, c->b);
    EXPECT_EQ(Masked(c->a, bits), Masked(c->b, bits));
    EXPECT_EQ(Masked(c->a, bits), c->value);
    EXPECT_GT(stats.evaluations, 0u);
    EXPECT_GT(stats.distinguished, 0u);
  }
}

// A claw: the accepted pair selects two different functions by its low bit. Rejected
// collisions are counted and the search goes on.
TEST(CollisionSearchTest, OnlyAnAcceptedCollisionEndsTheSearch) {
  SearchOptions o;
  o.bits = 24;
  o.dp_bits = 6;
  std::atomic<int> asked{0};
  auto c = FindCollision(
      Mix,
      [&](uint64_t a, uint64_t b) {
        ++asked;
        return ((a ^ b) & 1) != 0 && ((a ^ b) & 2) != 0;
      },
      o);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ((c->a ^ c->b) & 3, 3u);
  EXPECT_EQ(Masked(c->a, 24), Masked(c->b, 24));
  EXPECT_GE(asked.load(), 1);
}

TEST(CollisionSearchTest, OneThreadIsAFunctionOfTheSeed) {
  SearchOptions o;
  o.bits = 28;
  o.dp_bits = 7;
  o.seed = 42;
  auto accept = [](uint64_t, uint64_t) { return true; };
  auto a = FindCollision(Mix, accept, o);
  auto b = FindCollision(Mix, accept, o);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->a, b->a);
  EXPECT_EQ(a->b, b->b);
  o.seed = 43;
  auto c = FindCollision(Mix, accept, o);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(Masked(c->a, 28), Masked(c->b, 28));
}

TEST(CollisionSearchTest, GivesUpAfterItsEvaluationBudget) {
  SearchOptions o;
  o.bits = 20;
  o.dp_bits = 4;
  o.threads = 2;
  o.max_evaluations = 200000;
  SearchStats stats;
  auto c = FindCollision(
      Mix, [](uint64_t, uint64_t) { return false; }, o, &stats);
  EXPECT_FALSE(c.has_value());
  EXPECT_GE(stats.evaluations, o.max_evaluations);
  EXPECT_GT(stats.rejected, 0u) << "a 20-bit function collides often within the budget";
}

// A function with a short cycle and no distinguished point on it: walks that enter it are
// restarted instead of running forever.
TEST(CollisionSearchTest, AWalkCaughtInACycleIsRestarted) {
  SearchOptions o;
  o.bits = 16;
  o.dp_bits = 4;
  o.max_evaluations = 100000;
  // Every input goes to 1 or 2, which swap: no point is distinguished (low 4 bits zero).
  auto cyc = [](const uint64_t* in, uint64_t* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = in[i] == 1 ? 2 : 1;
  };
  SearchStats stats;
  auto c = FindCollision(
      cyc, [](uint64_t, uint64_t) { return true; }, o, &stats);
  EXPECT_FALSE(c.has_value());
  EXPECT_GT(stats.abandoned, 0u);
}

}  // namespace
}  // namespace kvc::collide
