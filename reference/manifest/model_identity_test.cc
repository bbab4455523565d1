// The shared model-identity rules at their own interface: the I-JSON bound of a hashed member
// (ReportNonIJsonIntegers) and the K/V shard layout's expectation (KvShardLayoutExpectation).
// The manifests' own tests (manifest_test.cc, handoff_manifest_test.cc) judge them through
// whole documents.
#include "reference/manifest/model_identity.h"

#include <gtest/gtest.h>

#include "reference/base/canonical_json.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

// The canonical form holds integers of magnitude up to 2^53 inclusive (I-JSON: exact as an IEEE
// double, kMaxIJsonInteger); one past it either way is out of range, as an unsigned value and as
// a signed one (a document built in code, not parsed, holds a positive int64_t).
// (Mutation audit 4: 2^53 refused, a signed value past +2^53 or exactly -2^53 misjudged, or an
// array not descended, passed every document test.)
TEST(ModelIdentity, ANonIJsonIntegerIsOutOfRangeAtItsPointerAndTheBoundIsInclusive) {
  constexpr int64_t kMax = int64_t{1} << 53;
  ASSERT_EQ(kMax, kMaxIJsonInteger);
  const Json in_range[] = {Json(static_cast<uint64_t>(kMax)), Json(kMax), Json(-kMax), Json(0)};
  for (const Json& value : in_range) {
    Violations v;
    ReportNonIJsonIntegers(value, "/x", &v);
    EXPECT_TRUE(v.empty()) << value.dump() << test::Describe(v);
  }
  const Json beyond[] = {Json(static_cast<uint64_t>(kMax) + 1), Json(kMax + 1), Json(-kMax - 1)};
  for (const Json& value : beyond) {
    Violations v;
    ReportNonIJsonIntegers(value, "/x", &v);
    EXPECT_TRUE(test::OnlyViolationAt(v, "INPUT_VALUE_OUT_OF_RANGE", "/x")) << value.dump();
  }
  // Reported where it is, in objects and arrays at any depth (a key escaped as a JSON pointer).
  Json nested = {{"a/b", Json::array({1, Json::object({{"c", kMax + 1}})})}, {"d", 2.5}};
  Violations v;
  ReportNonIJsonIntegers(nested, "/rope", &v);
  EXPECT_TRUE(test::OnlyViolationAt(v, "INPUT_VALUE_OUT_OF_RANGE", "/rope/a~1b/1/c"))
      << test::Describe(v);
}

// The message of a shard mismatch states the rule of the layout declared: with a replication,
// the replicated one (one local head, tp_size == total * R, offset == rank / R).
TEST(ModelIdentity, AShardExpectationStatesTheRuleOfItsReplication) {
  const KvShardLayout replicated{1, 4, 8, 3, 2, 2};
  ASSERT_FALSE(KvShardLayoutHolds(replicated));  // head 3 / 2 = 1, not 2
  const std::string r = KvShardLayoutExpectation(replicated, "kv_heads", "kv_heads_total");
  EXPECT_NE(r.find("with kv_head_replication 2"), std::string::npos) << r;
  EXPECT_NE(r.find("kv_head_offset == tp_rank / kv_head_replication"), std::string::npos) << r;
  const KvShardLayout partitioned{2, 4, 2, 1, 1, 1};
  ASSERT_FALSE(KvShardLayoutHolds(partitioned));  // 1 * 2 = 2, not 1
  const std::string p = KvShardLayoutExpectation(partitioned, "kv_heads", "kv_heads_total");
  EXPECT_NE(p.find("kv_head_offset == tp_rank * kv_heads"), std::string::npos) << p;
  EXPECT_EQ(p.find("with kv_head_replication"), std::string::npos) << p;
}

}  // namespace
}  // namespace kvc
