// Deterministic Linear(): every output is bit-identical to Dot() on its row and weight row,
// for any row count, odd widths and reduction tails (register blocking changes no order).
#include "reference/model/kernels.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

namespace kvc::model {
namespace {

std::vector<float> Random(size_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = u(*rng);
  return v;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

TEST(DeterministicLinear, EveryElementIsDotBitForBit) {
  std::mt19937 rng(20261129);  // fixed seed: the case is reproducible as is
  for (size_t k : {1u, 7u, 8u, 9u, 16u, 19u, 64u, 67u, 200u}) {
    for (size_t m : {1u, 2u, 3u, 4u, 5u, 9u, 33u, 70u}) {
      for (size_t n : {1u, 2u, 3u, 5u, 8u, 11u}) {
        const std::vector<float> x = Random(m * k, &rng), w = Random(n * k, &rng);
        std::vector<float> y(m * n);
        Linear(x.data(), w.data(), y.data(), m, n, k, ComputeMode::kDeterministic);
        for (size_t r = 0; r < m; ++r) {
          for (size_t o = 0; o < n; ++o) {
            const float want = Dot(&x[r * k], &w[o * k], k);
            ASSERT_EQ(Bits(y[r * n + o]), Bits(want))
                << "m=" << m << " n=" << n << " k=" << k << " row " << r << " col " << o;
          }
        }
      }
    }
  }
}

TEST(DeterministicLinear, RowsDoNotDependOnHowManyRowsACallCarries) {
  std::mt19937 rng(7);
  const size_t m = 37, n = 13, k = 75;
  const std::vector<float> x = Random(m * k, &rng), w = Random(n * k, &rng);
  std::vector<float> all(m * n);
  Linear(x.data(), w.data(), all.data(), m, n, k, ComputeMode::kDeterministic);
  for (size_t chunk : {1u, 3u, 4u, 16u}) {
    for (size_t r0 = 0; r0 < m; r0 += chunk) {
      const size_t rows = r0 + chunk <= m ? chunk : m - r0;
      std::vector<float> part(rows * n);
      Linear(&x[r0 * k], w.data(), part.data(), rows, n, k, ComputeMode::kDeterministic);
      ASSERT_EQ(std::memcmp(part.data(), &all[r0 * n], part.size() * sizeof(float)), 0)
          << "chunk " << chunk << " rows from " << r0;
    }
  }
}

TEST(DeterministicLinear, OrderIsObservableSoTheChecksAboveCanFail) {
  // A plain left-to-right sum differs from Dot()'s lane order on some element, so a kernel
  // that changed the per-element order would be caught by the bitwise checks.
  std::mt19937 rng(11);
  const size_t k = 67;
  bool differs = false;
  for (int t = 0; t < 64 && !differs; ++t) {
    const std::vector<float> a = Random(k, &rng), b = Random(k, &rng);
    float seq = 0;
    for (size_t i = 0; i < k; ++i) seq += a[i] * b[i];
    differs = Bits(seq) != Bits(Dot(a.data(), b.data(), k));
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace kvc::model
