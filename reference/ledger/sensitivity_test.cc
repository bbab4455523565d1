// The one-control sensitivity suite: the seed's base ledger and the sweep derivatives
// recomputed from geometry, lengths and copies; the control diff.
#include "reference/ledger/sensitivity.h"

#include <gtest/gtest.h>

#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

SensitivityCase Base() { return {{2, 2, 4, 2, 2}, 4, {{"A", 5, 1}, {"B", 3, 2}}}; }

RaggedLedger Ledger(const SensitivityCase& c) {
  std::vector<uint64_t> t, k;
  for (const auto& r : c.requests) {
    t.push_back(r.committed);
    k.push_back(r.copies);
  }
  return ComputeRaggedLedger(c.geometry, t, k).value();
}

TEST(Sensitivity, BaseLedgerMatchesTheSeed) {
  RaggedLedger l = Ledger(Base());
  EXPECT_EQ(l.bytes_per_token, 64u);
  EXPECT_EQ(l.logical, 512u);
  EXPECT_EQ(l.materialized, 704u);
  EXPECT_EQ(l.rectangular, 640u);
  EXPECT_EQ(l.phantom, 128u);
}

TEST(Sensitivity, DoublingOneExtentDoublesBetaAndHalvingBytesHalvesIt) {
  for (uint64_t CacheGeometry::*field :
       {&CacheGeometry::layers, &CacheGeometry::kv_heads_local, &CacheGeometry::head_dim}) {
    SensitivityCase c = Base();
    c.geometry.*field *= 2;
    EXPECT_EQ(Ledger(c).bytes_per_token, 128u);
    EXPECT_EQ(Ledger(c).logical, 2 * Ledger(Base()).logical);
    EXPECT_EQ(ChangedControls(Base(), c).size(), 1u);
  }
  SensitivityCase half = Base();
  half.geometry.k_bytes = half.geometry.v_bytes = 1;
  EXPECT_EQ(Ledger(half).bytes_per_token, 32u);
  EXPECT_EQ(ChangedControls(Base(), half), std::vector<std::string>{"bytes_per_scalar"});
}

TEST(Sensitivity, QueryHeadsLeaveEveryByteLedgerInvariant) {
  SensitivityCase c = Base();
  c.query_heads = 8;
  RaggedLedger a = Ledger(Base()), b = Ledger(c);
  EXPECT_EQ(ChangedControls(Base(), c), std::vector<std::string>{"num_query_heads"});
  EXPECT_EQ(a.bytes_per_token, b.bytes_per_token);
  EXPECT_EQ(a.logical, b.logical);
  EXPECT_EQ(a.materialized, b.materialized);
  EXPECT_EQ(a.rectangular, b.rectangular);
}

TEST(Sensitivity, AddingARequestIsOneConcurrencyControlWithANonLocalRectangle) {
  SensitivityCase c = Base();
  c.requests.push_back({"C", 7, 1});
  EXPECT_EQ(ChangedControls(Base(), c), std::vector<std::string>{"concurrency"});
  // Delta rectangular = beta * [(N+1) max(Tmax, Tj) - N Tmax] = 64 * (3*7 - 2*5).
  EXPECT_EQ(Ledger(c).rectangular - Ledger(Base()).rectangular, 64u * (3 * 7 - 2 * 5));
  EXPECT_EQ(Ledger(c).logical - Ledger(Base()).logical, 64u * 7);
}

TEST(Sensitivity, TwoChangesAreTwoControls) {
  SensitivityCase c = Base();
  c.geometry.layers = 4;
  c.requests[1].copies = 3;
  EXPECT_EQ(ChangedControls(Base(), c), (std::vector<std::string>{"num_cache_layers", "requests/B/copies"}));
}

TEST(Sensitivity, SuiteFixtureIsValid) {
  Json doc = test::LoadJson("fixtures/m5_1/ledger/sensitivity_suite.json");
  Violations v = ValidateLedgerSensitivity(doc);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  EXPECT_EQ(doc["sweeps"].size(), 7u);
}

}  // namespace
}  // namespace kvc
