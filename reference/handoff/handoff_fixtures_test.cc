// The bundled M5.6 handoff fixtures reproduce the seed's worked numbers by computation.
#include <gtest/gtest.h>

#include "reference/base/canonical_json.h"
#include "reference/handoff/handoff_manifest.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_trace.h"
#include "reference/testutil/testutil.h"

namespace kvc::handoff {
namespace {

// `t`'s findings are all of code `code`, the first at `pointer`.
testing::AssertionResult TraceFindingIs(const Json& t, const std::string& code,
                                        const std::string& pointer) {
  const Violations v = ValidateTransferTrace(t);
  if (test::CodeNames(v) == std::vector<std::string>{code} && v[0].pointer == pointer)
    return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "expected " << code << " at " << pointer << ", got " << test::Describe(v);
}

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

// Probe 49: one-field mutations that raised a code and its consequences. A universe listing b6
// twice (for b7): U's duplicate, then b7 "not in U" in each set naming it; a cold plan's
// token_start 8: the plan-level code, then one per chunk outside [8,24); an event of an unknown
// type: its type, then its chunk as an unknown member.
TEST(HandoffFixtures, RegressionOneFieldMutationsRaiseOneCode) {
  Json m = test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json");
  m["blocks"]["universe"][7] = "b6";
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"HANDOFF_BLOCK_UNKNOWN"});
  EXPECT_EQ(ValidateHandoffManifest(m).size(), 1u);
  Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  p["geometry"]["token_start"] = 8;
  Violations v = ValidateTransferProtocol(p);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/geometry/token_start");
  p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  p["events"][1]["event"] = "credit_grab";
  v = ValidateTransferProtocol(p);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/events/1/event");
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

// Probe 49: a gather or device copy moving 1 byte of a 4 MiB layer passed (only the network
// attempts' bytes were compared with the layer's).
TEST(TransferTraceFixture, RegressionGatherAndCopyBytesAreTheLayers) {
  for (const auto& [event, pointer] :
       {std::pair{1, "/events/1/bytes"}, std::pair{5, "/events/5/bytes"}}) {
    Json t = test::LoadJson("fixtures/m5_6/runtime/transfer_trace.json");
    t["events"][event]["bytes"] = 1;
    EXPECT_TRUE(TraceFindingIs(t, "HANDOFF_TRACE_BYTES_MISMATCH", pointer));
  }
}

// A device copy that failed and was redone: before 2026-12-06 no gather, copy or visibility could
// say it failed, so the re-copy read as layer 1 copied twice (HANDOFF_TRACE_BYTES_MISMATCH).
TEST(TransferTraceFixture, RegressionARecopyAfterAFailedCopyIsNotTheLayerCopiedTwice) {
  const Json t = test::LoadJson("fixtures/m5_6/runtime/transfer_trace_recopy.json");
  ASSERT_TRUE(ValidateTransferTrace(t).empty()) << test::Describe(ValidateTransferTrace(t));
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->retries, 2u);  // the failed network attempt and the failed copy
  EXPECT_EQ(s->work, 289u);   // the failed copy's 10 us are work
  EXPECT_EQ(s->busy, 215u);
  EXPECT_EQ(s->overlapped, 74u);
}

// A failed gather gathered nothing: a send waits for the successful one, and a layer whose only
// gather failed has none.
TEST(TransferTraceFixture, AFailedGatherNeitherCountsNorLetsTheSendStart) {
  Json t = test::LoadJson("fixtures/m5_6/runtime/transfer_trace.json");
  Json& ev = t["events"];
  ASSERT_EQ(ev[2]["phase"], "gather");
  ASSERT_EQ(ev[2]["layer"], 1);
  ev[2]["result"] = "failed";
  ev[2]["end_us"] = 100;
  Json redo = ev[2];
  redo["result"] = "ok";
  redo["start_us"] = 100;
  redo["end_us"] = 125;
  ev.insert(ev.begin() + 3, redo);
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value()) << test::Describe(ValidateTransferTrace(t));
  EXPECT_EQ(s->retries, 2u);
  ev[3]["end_us"] = 135;  // layer 1 is sent from 130 us
  Violations v = ValidateTransferTrace(t);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRACE_ORDER_INVALID"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("before its gather ends at 135"), std::string::npos) << v[0].message;
  ev.erase(ev.begin() + 3);
  v = ValidateTransferTrace(t);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRACE_PHASE_MISSING"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("layer 1 has no successful gather"), std::string::npos);
}

TEST(TransferProtocolFixture, ReplayAcceptsSeedTimeline) {
  Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  EXPECT_TRUE(ValidateTransferProtocol(p).empty()) << test::Describe(ValidateTransferProtocol(p));
  // Declaring an earlier all-visible time than the replay computes is caught.
  p["declared"]["all_device_visible_ms"] = 110;
  EXPECT_EQ(test::CodeNames(ValidateTransferProtocol(p)),
            std::vector<std::string>{"HANDOFF_DECLARED_RESULT_MISMATCH"});
}

// Probe 49: an empty transfer id was refused only at the reservation's append
// (HANDOFF_TXN_TRANSITION_INVALID at /events/0, "append: empty txn id"); the plan's CheckPlan
// refuses it at the member, as the trace checker does at a transfer_plan.
TEST(TransferProtocolFixture, RegressionAnEmptyTransferIdIsRefusedAtItsMember) {
  Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  p["transfer_id"] = "";
  const Violations v = ValidateTransferProtocol(p);
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_VALUE_INVALID", "/transfer_id"));
}

// Probe 49: a repeated device_visible completion (an idempotent retry) moved the all-visible
// time to the retry's, after validation too, so the seed's timeline with a retry failed on its
// declared 116 ms.
TEST(TransferProtocolFixture, RegressionARepeatedVisibleCompletionKeepsTheFirstTime) {
  for (const auto& [at, t] : {std::pair{34, 117}, std::pair{36, 120}}) {
    Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
    const std::string chunk = at == 34 ? "c6" : "c7";
    p["events"].insert(p["events"].begin() + at,
                       Json{{"t_ms", t}, {"event", "device_visible"}, {"chunk", chunk}});
    EXPECT_TRUE(ValidateTransferProtocol(p).empty())
        << at << test::Describe(ValidateTransferProtocol(p));
    auto r = ReplayTransferProtocol(p);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->all_device_visible, 116u);
    EXPECT_EQ(r->retries, 2u);  // the fixture's own retry and this one
  }
}

// Probe 73 (the seed's prose against the handoff code): a retried publication (M5.6 0x06D:
// "publication may be retried idempotently") moved the replayed publication time to the
// retry's, 123 ms, past the 121 ms decode admission; and an empty reservation was reported at
// /geometry/reserved_blocks, a member no document has.
TEST(TransferProtocolFixture, RegressionARetriedPublicationKeepsTheFirstTime) {
  Json p = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  p["events"].push_back(Json{{"t_ms", 123}, {"event", "publish"}});
  EXPECT_TRUE(ValidateTransferProtocol(p).empty()) << test::Describe(ValidateTransferProtocol(p));
  auto r = ReplayTransferProtocol(p);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->published, 120u);
  Json q = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  q["destination"]["reserved_blocks"] = 0;
  const Violations v = ValidateTransferProtocol(q);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].code, ErrorCode::HANDOFF_RESERVATION_TOO_SMALL);
  EXPECT_EQ(v[0].pointer, "/destination/reserved_blocks");
  // An abort names its reason (0x06E record_terminal_failure(..., reason)); an empty one passed.
  Json a = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol_aborted.json");
  for (auto& e : a["events"])
    if (e["event"] == "abort") e["reason"] = "";
  const Violations w = ValidateTransferProtocol(a);
  ASSERT_FALSE(w.empty());
  EXPECT_EQ(w[0].code, ErrorCode::INPUT_VALUE_INVALID) << test::Describe(w);
  // ... after the state's own refusal (probe 74: an empty-reason abort of a published transfer
  // was INPUT_VALUE_INVALID, not HANDOFF_ABORT_PUBLISHED).
  Json late = test::LoadJson("fixtures/m5_6/handoff/transfer_protocol.json");
  late["events"].push_back(Json{{"t_ms", 123}, {"event", "abort"}, {"reason", ""}});
  const Violations x = ValidateTransferProtocol(late);
  ASSERT_FALSE(x.empty());
  EXPECT_EQ(x[0].code, ErrorCode::HANDOFF_ABORT_PUBLISHED) << test::Describe(x);
}

// Mutation audit 2026-12-05 (helper 96, M104: the partition's `tp_rank >= tp_size` check as
// `>`): a rank equal to tp_size names no rank of the group, whatever the digest says (the test
// recomputes it, so the partition rule alone decides).
TEST(HandoffManifestFixture, ATensorParallelRankEqualToTheGroupSizeIsInvalid) {
  Json m = test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json");
  Json& part = m["tensor_abi"]["partition"];
  ASSERT_EQ(part["tp_size"], 1);
  part["tp_rank"] = 1;
  part["kv_head_offset"] = 1;
  auto digest = CanonicalSha256(m["tensor_abi"]);
  ASSERT_TRUE(digest.ok());
  m["tensor_abi_sha256"] = *digest;
  const Violations v = ValidateHandoffManifest(m);
  ASSERT_TRUE(test::OnlyViolationAt(v, "HANDOFF_ABI_INVALID", "/tensor_abi/partition"));
}

// Mutation audit 2026-12-05 (helper 96, M124: the plan's window check `window < largest chunk`
// as `<=`): a credit window exactly the size of the largest chunk is enough (0x06B: every chunk
// can be in flight alone); one byte less is HANDOFF_CREDIT_WINDOW_TOO_SMALL. The timeline sends
// one 1 KiB chunk at a time (reference/handoff/testdata/window_equals_largest_chunk.json).
TEST(TransferProtocolFixture, ACreditWindowEqualToTheLargestChunkIsEnough) {
  Json doc = test::LoadJson("reference/handoff/testdata/window_equals_largest_chunk.json");
  ASSERT_EQ(doc["credit_capacity_bytes"], 1024);
  EXPECT_TRUE(ValidateTransferProtocol(doc).empty())
      << test::Describe(ValidateTransferProtocol(doc));
  doc["credit_capacity_bytes"] = 1023;
  EXPECT_EQ(test::CodeNames(ValidateTransferProtocol(doc)),
            std::vector<std::string>{"HANDOFF_CREDIT_WINDOW_TOO_SMALL"});
}

// The seed trace's events: 0 registration, 1-2 gathers of layers 0-1, 3-4 layer 0's failed and
// successful network attempts, 5 its copy, 6 layer 1's network attempt, 7 layer 0's visibility,
// 8 layer 1's copy, 9 its visibility, 10 the publication.
Json SeedTrace() { return test::LoadJson("fixtures/m5_6/runtime/transfer_trace.json"); }

Json TraceEvent(const Json& like, Json changes) {
  Json e = like;
  e.update(changes);
  return e;
}

// Read rules: a layer of no bytes, a layer declared twice, a network attempt numbered 0 and a
// registration carrying a result are each refused at their member.
TEST(TransferTraceFixture, LayersAttemptsAndRegistrationsAreReadExactly) {
  Json t = SeedTrace();
  t["layers"][0]["bytes"] = 0;
  EXPECT_TRUE(TraceFindingIs(t, "INPUT_VALUE_OUT_OF_RANGE", "/layers/0/bytes"));
  t = SeedTrace();
  t["layers"][1]["layer"] = 0;
  EXPECT_TRUE(TraceFindingIs(t, "INPUT_VALUE_INVALID", "/layers/1"));
  t = SeedTrace();
  t["events"][3]["attempt"] = 0;
  EXPECT_TRUE(TraceFindingIs(t, "INPUT_VALUE_OUT_OF_RANGE", "/events/3/attempt"));
  t = SeedTrace();
  t["events"][0]["result"] = "ok";
  EXPECT_TRUE(TraceFindingIs(t, "INPUT_FIELD_UNKNOWN", "/events/0/result"));
}

// Boundaries of the chain that the seed trace does not touch (each trace below is analyzed, its
// declared figures left as they were): a network attempt may start once the layer's first gather
// piece ended; a gather piece may end exactly when the last network piece does; a device copy may
// end exactly when the last network piece does, and the layer be visible that instant; the
// earliest registration opens the chain; a layer visible exactly when the publication starts is
// visible before it; an event may start exactly when the publication does.
TEST(TransferTraceFixture, ChainBoundariesAtTheSameInstantPass) {
  {  // layer 0 gathered in two pieces, 20-40 and 40-70; its first attempt starts at 60
    Json t = SeedTrace();
    Json& ev = t["events"];
    ev[1]["bytes"] = 2097152;
    ev[1]["end_us"] = 40;
    ev.insert(ev.begin() + 2,
              TraceEvent(ev[1], {{"bytes", 2097152}, {"start_us", 40}, {"end_us", 70}}));
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
  {  // layer 1's second gather piece ends at 170, when its network attempt ends
    Json t = SeedTrace();
    Json& ev = t["events"];
    ev[2]["bytes"] = 2097152;
    ev.insert(ev.begin() + 3,
              TraceEvent(ev[2], {{"bytes", 2097152}, {"start_us", 114}, {"end_us", 170}}));
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
  {  // layer 0 delivered in two pieces, 90-110 and 110-130; copied 110-130, visible at 130
    Json t = SeedTrace();
    Json& ev = t["events"];
    ev[4]["bytes"] = 2097152;
    ev[4]["end_us"] = 110;
    ev.insert(ev.begin() + 5,
              TraceEvent(ev[4], {{"attempt", 3}, {"start_us", 110}, {"end_us", 130}}));
    ev[6]["start_us"] = 110;  // the copy
    ev[6]["end_us"] = 130;
    ev[8]["at_us"] = 130;  // layer 0's visibility
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
  {  // a second registration at 30-40: the chain starts with the first (gathers from 20)
    Json t = SeedTrace();
    Json& ev = t["events"];
    ev.insert(ev.begin() + 2, TraceEvent(ev[0], {{"start_us", 30}, {"end_us", 40}}));
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
  {  // the publication starts at 190, when layer 1 becomes visible
    Json t = SeedTrace();
    t["events"][10]["start_us"] = 190;
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
  {  // a second (zero-length) registration at 200, when the publication starts
    Json t = SeedTrace();
    Json& ev = t["events"];
    ev.push_back(TraceEvent(ev[0], {{"start_us", 200}, {"end_us", 200}}));
    EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  }
}

// Network attempts: two failures before the success are two retries, not a delivery (a failed
// attempt delivers nothing); a second successful delivery is the bytes' code, not the order's.
TEST(TransferTraceFixture, FailedAttemptsDeliverNothingAndASecondDeliveryIsTheBytesCode) {
  Json t = SeedTrace();
  Json& ev = t["events"];
  ev[3]["end_us"] = 75;
  ev.insert(ev.begin() + 4, TraceEvent(ev[3], {{"attempt", 2}, {"start_us", 75}, {"end_us", 90}}));
  ev[5]["attempt"] = 3;
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value()) << test::Describe(ValidateTransferTrace(t));
  EXPECT_EQ(s->retries, 2u);
  t = SeedTrace();
  t["events"].insert(
      t["events"].begin() + 5,
      TraceEvent(t["events"][4], {{"attempt", 3}, {"start_us", 130}, {"end_us", 140}}));
  const Violations v = ValidateTransferTrace(t);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRACE_BYTES_MISMATCH"})
      << test::Describe(v);
}

// Visibility: a layer made visible only after the publication is missing at it (not an ordering
// finding); one visible before it and shown again later is visible; a failed visibility before a
// successful one is neither a retry nor the layer's visibility.
TEST(TransferTraceFixture, VisibilityIsTheEarliestSuccessfulOneBeforeThePublication) {
  Json t = SeedTrace();
  t["events"][9]["at_us"] = 210;
  Violations v = ValidateTransferTrace(t);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRACE_VISIBILITY_MISSING"})
      << test::Describe(v);
  t = SeedTrace();
  t["events"].push_back(TraceEvent(t["events"][9], {{"at_us", 210}}));
  EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  t = SeedTrace();
  t["events"].insert(t["events"].begin() + 9, TraceEvent(t["events"][9], {{"result", "failed"}}));
  v = ValidateTransferTrace(t);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->retries, 1u);
}

// Mutation audit 4: a failed visibility after the publication is an ordering finding at its own
// time member, at_us (a visibility has no start_us).
TEST(TransferTraceFixture, RegressionAFailedVisibilityAfterThePublicationIsReportedAtItsTime) {
  Json t = SeedTrace();
  ASSERT_EQ(t["events"][9]["phase"], "visibility");
  t["events"].push_back(TraceEvent(t["events"][9], {{"result", "failed"}, {"at_us", 300}}));
  const Violations v = ValidateTransferTrace(t);
  EXPECT_TRUE(test::OnlyViolationAt(v, "HANDOFF_TRACE_ORDER_INVALID",
                                    "/events/" + std::to_string(t["events"].size() - 1) + "/at_us"))
      << test::Describe(v);
}

// A failed publication is allowed anywhere (it is retried): the chain may go on after it, and
// the exposed stall is measured to the successful one's end.
TEST(TransferTraceFixture, AFailedPublicationDoesNotCloseTheChain) {
  Json t = SeedTrace();
  t["events"].insert(
      t["events"].begin() + 6,
      TraceEvent(t["events"][10], {{"result", "failed"}, {"start_us", 150}, {"end_us", 155}}));
  auto s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value()) << test::Describe(ValidateTransferTrace(t));
  EXPECT_EQ(s->exposed, 60u);
  EXPECT_EQ(s->retries, 1u);
  t = SeedTrace();
  t["events"].push_back(
      TraceEvent(t["events"][10], {{"result", "failed"}, {"start_us", 225}, {"end_us", 240}}));
  s = AnalyzeTransferTrace(t);
  ASSERT_TRUE(s.has_value()) << test::Describe(ValidateTransferTrace(t));
  EXPECT_EQ(s->exposed, 60u);
}

// Attempt numbers: a layer's first attempt is 1; a piece after a successful piece may keep its
// number; no attempt, not even a failed one, starts once the layer's bytes were all delivered.
TEST(TransferTraceFixture, AttemptNumbersStartAtOneAndNoneFollowsTheDelivery) {
  Json t = SeedTrace();
  t["events"][6]["attempt"] = 2;  // layer 1's only attempt
  EXPECT_TRUE(TraceFindingIs(t, "HANDOFF_TRACE_ORDER_INVALID", "/events/6/attempt"));
  t = SeedTrace();
  Json& ev = t["events"];
  ev[4]["bytes"] = 2097152;
  ev[4]["end_us"] = 110;
  ev.insert(ev.begin() + 5, TraceEvent(ev[4], {{"start_us", 110}, {"end_us", 130}}));
  EXPECT_TRUE(AnalyzeTransferTrace(t).has_value()) << test::Describe(ValidateTransferTrace(t));
  t = SeedTrace();
  t["events"].insert(
      t["events"].begin() + 5,
      TraceEvent(t["events"][3], {{"attempt", 3}, {"start_us", 130}, {"end_us", 140}}));
  EXPECT_TRUE(TraceFindingIs(t, "HANDOFF_TRACE_ORDER_INVALID", "/events/5/attempt"));
}

// payload_bytes is the layers' sum.
TEST(TransferTraceFixture, ThePayloadIsTheLayersSum) {
  Json t = SeedTrace();
  t["payload_bytes"] = 4194304;
  EXPECT_TRUE(TraceFindingIs(t, "HANDOFF_TRACE_BYTES_MISMATCH", "/payload_bytes"));
}

}  // namespace
}  // namespace kvc::handoff
