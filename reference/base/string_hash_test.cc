// Tests of StringHash and SameBytes: the bytes of the view and only those, every length class
// (0-3, 4-7, 8-16, longer), and no collisions among runtime-style ids and one-byte variants.
#include "reference/base/string_hash.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kvc::base {
namespace {

// The same bytes at different addresses, with different bytes around them, hash equal:
// the hash reads the view and nothing beyond it.
TEST(StringHash, ReadsOnlyTheViewsBytes) {
  const StringHash h;
  for (size_t n = 0; n <= 100; ++n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += static_cast<char>('a' + (i * 7) % 26);
    const size_t want = h(s);
    for (size_t pad = 0; pad < 16; ++pad) {
      std::string a(pad, 'x'), b(pad, 'y');
      a += s + std::string(16, 'x');
      b += s + std::string(16, 'y');
      EXPECT_EQ(h(std::string_view(a).substr(pad, n)), want) << "n=" << n << " pad=" << pad;
      EXPECT_EQ(h(std::string_view(b).substr(pad, n)), want) << "n=" << n << " pad=" << pad;
      EXPECT_TRUE(
          SameBytes(std::string_view(a).substr(pad, n), std::string_view(b).substr(pad, n)));
    }
  }
}

// Every byte takes part: changing any one byte of a string of any length up to 100 changes its
// hash (and SameBytes sees it), and no two of these 20,300 strings collide in 64 bits.
TEST(StringHash, EveryByteChangesTheHash) {
  const StringHash h;
  std::unordered_set<size_t> seen;
  size_t strings = 0;
  for (size_t n = 1; n <= 100; ++n) {
    const std::string base(n, 'q');
    for (size_t i = 0; i < n; ++i)
      for (char c : {'a', 'r', '\0', '\xff'}) {
        std::string v = base;
        v[i] = c;
        EXPECT_FALSE(SameBytes(v, base)) << "n=" << n << " i=" << i;
        EXPECT_NE(h(v), h(base)) << "n=" << n << " i=" << i;
        seen.insert(h(v));
        ++strings;
      }
    seen.insert(h(base));
    ++strings;
  }
  EXPECT_EQ(seen.size(), strings);
}

// Runtime-style ids (vLLM's "cmpl-<32 hex>-0", operation ids "<id>.t<k>") spread over the
// upper 32 bits, which StableStringMap uses as the slot tag and home: 2^16 ids over 256
// buckets of the top 8 bits pass a chi-square test of uniformity (255 degrees of freedom; the
// bound is the mean plus 5 standard deviations: 255 + 5 * sqrt(510)) and no bucket is empty.
// The set and the keys are fixed (the keys of KVCONFORM_HASH_SEED=1), so the statistic is too
// (std::hash gives 279.4).
TEST(StringHash, RuntimeIdsSpreadOverTheUpperHalf) {
  const HashKeys keys = HashKeysFromSeed(1);
  auto h = [&](std::string_view s) { return KeyedStringHash(s, keys); };
  std::vector<int> buckets(256, 0);
  std::unordered_set<size_t> seen;
  const int kIds = 1 << 16;
  for (int i = 0; i < kIds; ++i) {
    char id[64];
    std::snprintf(id, sizeof id, "cmpl-%016llx%016llx-0.t%d",
                  static_cast<unsigned long long>(0x5bd1e995ull * i),
                  static_cast<unsigned long long>(i), i % 40);
    const size_t x = h(id);
    ++buckets[x >> 56];
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kIds));
  const double mean = kIds / 256.0;
  double chi2 = 0;
  for (int b = 0; b < 256; ++b) {
    EXPECT_GT(buckets[b], 0) << "bucket " << b;
    chi2 += (buckets[b] - mean) * (buckets[b] - mean) / mean;
  }
  std::printf("chi-square %.1f (bound %.1f)\n", chi2, 255 + 5 * std::sqrt(510.0));
  EXPECT_LT(chi2, 255 + 5 * std::sqrt(510.0));
}

// Probe 63: under the fixed public constants the hash had, an id of n = 816 bytes whose bytes
// [8, 16) are n * k1, with zero words at offsets 24, 40, ... and at its end, hashed to 0 whatever
// its other words (each multiply-fold had a zero operand), so a trace of such request ids made
// every id-map lookup walk one probe run (8,000 ids: 72,000 events took 4.5 s). Under this
// process's keys (and any seed's) the same ids spread: no two of 1,000 share a hash.
TEST(StringHash, RegressionIdsCraftedForPublicKeysDoNotCollide) {
  const HashKeys public_keys{0xa0761d6478bd642full, 0xe7037ed1a0b428dbull};
  constexpr size_t n = 816;
  auto crafted = [&](uint64_t tag) {
    std::string id(n, '\0');
    const uint64_t h0 = n * public_keys.k1;
    std::memcpy(&id[8], &h0, 8);
    for (size_t o = 0; o < n; o += 16) {
      // Printable bytes: the tag's three base-26 digits and the word's index.
      const uint64_t w = 0x4141414141414141ull + tag % 26 + (tag / 26 % 26 << 8) +
                         (tag / 676 % 26 << 16) + (o / 16 % 26 << 24);
      std::memcpy(&id[o], &w, 8);
    }
    return id;
  };
  std::unordered_set<uint64_t> under_public, under_process, under_seed;
  for (uint64_t t = 0; t < 1000; ++t) {
    const std::string id = crafted(t);
    under_public.insert(KeyedStringHash(id, public_keys));
    under_process.insert(StringHash{}(id));
    under_seed.insert(KeyedStringHash(id, HashKeysFromSeed(7)));
  }
  EXPECT_EQ(under_public.size(), 1u) << "the attack on the public constants (all hash to 0)";
  EXPECT_EQ(under_process.size(), 1000u);
  EXPECT_EQ(under_seed.size(), 1000u);
}

// KVCONFORM_HASH_SEED repeats a run's keys: the same seed gives the same keys, another seed
// others, and every key is odd.
TEST(StringHash, SeedsGiveRepeatableOddKeys) {
  const HashKeys a = HashKeysFromSeed(42), b = HashKeysFromSeed(42), c = HashKeysFromSeed(43);
  EXPECT_EQ(a.k0, b.k0);
  EXPECT_EQ(a.k1, b.k1);
  EXPECT_NE(a.k0, c.k0);
  EXPECT_EQ(a.k0 & 1, 1u);
  EXPECT_EQ(a.k1 & 1, 1u);
}

// MakeHashKeys with KVCONFORM_HASH_SEED set to `value` (the variable restored afterwards).
HashKeys MakeHashKeysWithSeedVariable(const char* value) {
  const char* old = std::getenv("KVCONFORM_HASH_SEED");
  const std::string saved = old ? old : "";
  setenv("KVCONFORM_HASH_SEED", value, 1);
  const HashKeys keys = MakeHashKeys();
  if (old)
    setenv("KVCONFORM_HASH_SEED", saved.c_str(), 1);
  else
    unsetenv("KVCONFORM_HASH_SEED");
  return keys;
}

// KVCONFORM_HASH_SEED=<decimal> gives exactly HashKeysFromSeed(<decimal>).
TEST(StringHash, HashSeedVariableGivesThatSeedsKeys) {
  const HashKeys k = MakeHashKeysWithSeedVariable("12345");
  EXPECT_EQ(k.k0, HashKeysFromSeed(12345).k0);
  EXPECT_EQ(k.k1, HashKeysFromSeed(12345).k1);
}

// A negative KVCONFORM_HASH_SEED is not a seed (strtoull would wrap it): the keys are drawn at
// random instead (equal to the wrapped seed's only with probability 2^-64).
TEST(StringHash, NegativeHashSeedVariableIsIgnored) {
  const HashKeys k = MakeHashKeysWithSeedVariable("-5");
  EXPECT_NE(k.k0, HashKeysFromSeed(static_cast<uint64_t>(-5)).k0);
}

// KVCONFORM_HASH_SEED is digits only: a sign or leading blanks make it no seed (the base audit's
// finding: " -5" passed the minus check, and strtoull, skipping the blank, wrapped it to
// 2^64 - 5). The keys are drawn at random then.
TEST(StringHash, RegressionASeedVariableWithABlankOrSignIsIgnored) {
  for (auto [value, as] : {std::pair{" -5", static_cast<uint64_t>(-5)},
                           std::pair{"+5", uint64_t{5}}, std::pair{" 5", uint64_t{5}}}) {
    const HashKeys k = MakeHashKeysWithSeedVariable(value);
    EXPECT_NE(k.k0, HashKeysFromSeed(as).k0) << "\"" << value << "\"";
  }
}

// HashKeysFromSeed: every key is odd for every seed, not just one (an odd multiplier keeps every
// bit of the other operand).
TEST(StringHash, KeysFromEverySeedAreOdd) {
  for (uint64_t seed = 0; seed < 64; ++seed) {
    const HashKeys k = HashKeysFromSeed(seed);
    EXPECT_EQ(k.k0 & 1, 1u) << "seed " << seed;
    EXPECT_EQ(k.k1 & 1, 1u) << "seed " << seed;
  }
}

}  // namespace
}  // namespace kvc::base
