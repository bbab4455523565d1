// The bundled M5.6 handoff fixtures reproduce the seed's worked numbers by computation.
#include <gtest/gtest.h>

#include "reference/handoff/handoff_manifest.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_trace.h"
#include "reference/testutil/testutil.h"

namespace kvc::handoff {
namespace {

TEST(HandoffManifestFixture, EightBlockPromptGivesFiveComputeSevenTransfer7168Bytes) {
  Json m = test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json");
  ASSERT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
  // The validator recomputes the sets and bytes; these assertions pin what it accepted.
  EXPECT_EQ(m["blocks"]["compute_set"].size(), 5u);
  EXPECT_EQ(m["blocks"]["transfer_set"].size(), 7u);
  EXPECT_EQ(m["logical_ledger"]["transfer_logical_bytes"], 7168);
  // Declaring the compute-set figure (5 * 1024) is rejected with the ledger code.
  m["logical_ledger"]["transfer_logical_bytes"] = 5120;
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"HANDOFF_LOGICAL_BYTES_MISMATCH"});
}

// Probe 36: a set mismatch over a large universe quoted both sets whole (50 MB for 2 * 10^6
// blocks); a long set is now quoted by its ends and its length.
TEST(HandoffManifestFixture, SetMismatchMessagesStayShortForLargeUniverses) {
  Json m = test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json");
  for (int i = 8; i < 100000; ++i) m["blocks"]["universe"].push_back("b" + std::to_string(i));
  const Violations v = ValidateHandoffManifest(m);
  ASSERT_FALSE(v.empty());
  for (const Violation& x : v) EXPECT_LT(x.message.size(), 1000u) << x.message.substr(0, 200);
  EXPECT_NE(test::Describe(v).find(",...,b99996,b99997,b99998,b99999] (99997 blocks)"),
            std::string::npos)
      << test::Describe(v).substr(0, 2000);
}

TEST(TransferTraceFixture, Reproduces220Wall74Overlap60Exposed) {
  Json t = test::LoadJson("fixtures/m5_6/runtime/transfer_trace.json");
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->wall, 220u);
  EXPECT_EQ(s->overlapped, 74u);
  EXPECT_EQ(s->exposed, 60u);
  EXPECT_EQ(s->retries, 1u);
  EXPECT_EQ(s->transferred_bytes, 8u * 1024 * 1024);
}

TEST(TransferProtocolFixture, ReplayAcceptsSeedTimeline) {
  Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  EXPECT_TRUE(ValidateTransferProtocol(p).empty()) << test::Describe(ValidateTransferProtocol(p));
  // Declaring an earlier all-visible time than the replay computes is caught.
  p["declared"]["all_device_visible_ms"] = 110;
  EXPECT_EQ(test::CodeNames(ValidateTransferProtocol(p)),
            std::vector<std::string>{"HANDOFF_DECLARED_RESULT_MISMATCH"});
}

}  // namespace
}  // namespace kvc::handoff
