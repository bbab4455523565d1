// Tests of the transfer-plane event types: registration, the seed's timeline replayed from a
// trace, gating and end-of-trace completeness.
#include "reference/trace/transfer_events.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"

namespace kvc::trace {
namespace {

constexpr const char* kFixture = "fixtures/m5_6/trace/transfer_protocol.jsonl";
// Attempt 6 of req-42 superseded by attempt 7, whose abort follows its reservation.
constexpr const char* kSuperseded = "fixtures/m5_6/trace/superseded_attempt_late_publish.jsonl";

// The text that starts the envelope of req-42's `type` event of transfer `transfer` (a marker
// for CodesAfter).
std::string Marker(const std::string& type, const std::string& transfer) {
  return R"("event_type":")" + type + R"(","request_id":"req-42","operation_id":")" + transfer +
         '"';
}

// Feeds `lines` (1-based line numbers) and finishes the trace.
const Violations& Replay(TraceChecker& c, const std::vector<std::string>& lines) {
  for (size_t i = 0; i < lines.size(); ++i) c.Feed(lines[i], static_cast<uint32_t>(i + 1));
  return c.Finish(false);
}

TEST(TransferEventsTest, RowsAreRegisteredOnTheTransferPlane) {
  ASSERT_TRUE(RegisterTransferEventTypes().ok());
  ASSERT_TRUE(RegisterTransferEventTypes().ok());  // idempotent
  for (const char* name :
       {"transfer_destination", "destination_prefix", "kv_ready", "transfer_plan",
        "transfer_reserve", "chunk_credit_acquire", "chunk_send", "chunk_receive",
        "chunk_device_visible", "transfer_validate", "transfer_publish", "decode_admit",
        "source_release_ack", "decode_release", "transfer_abort"}) {
    const EventTypeSpec* spec = FindEventType(name);
    ASSERT_NE(spec, nullptr) << name;
    EXPECT_EQ(spec->plane, Plane::kTransfer) << name;
  }
}

// The seed's 0x06C numbers come out of the replay, not out of the fixture's text.
TEST(TransferEventsTest, SeedTimelineReplaysFromTheTrace) {
  TraceChecker c(kFixture);
  const Violations& v = Replay(c, test::SourceLines(kFixture));
  ASSERT_TRUE(v.empty()) << test::Describe(v);
  auto s = SummarizeTransfer(c, "xfer-req-42-g7");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "PUBLISHED");
  EXPECT_EQ(s->logical_bytes, 8u * 1024u);
  EXPECT_EQ(s->peak_in_flight_bytes, 2048u);  // the 2 KiB window is full, never exceeded
  EXPECT_EQ(s->last_layer_ready_ns, 86'000'000u);
  EXPECT_EQ(s->all_device_visible_ns, 116'000'000u);
  EXPECT_EQ(s->validated_ns, 118'000'000u);
  EXPECT_EQ(s->published_ns, 120'000'000u);
  EXPECT_EQ(s->published_committed_length, 16u);
  EXPECT_EQ(s->credits_in_flight_at_end, 0u);
  EXPECT_EQ(s->unpublished_blocks_at_end, 0u);  // the superseded attempt returned its blocks
  EXPECT_EQ(s->retries, 1u);                    // the duplicate delivery of c1
  auto old = SummarizeTransfer(c, "xfer-req-42-g6");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->state, "ABORTED");
}

// A transfer that neither publishes nor aborts is reported at its transfer_plan line.
TEST(TransferEventsTest, UnterminatedTransferIsReportedAtItsPlan) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  size_t publish = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("\"transfer_validate\"") != std::string::npos) publish = i;
  ASSERT_GT(publish, 0u);
  lines.resize(publish + 1);  // the trace ends VALIDATED
  TraceChecker c(kFixture);
  const Violations& v = Replay(c, lines);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OPERATION_UNTERMINATED"})
      << test::Describe(v);
  uint32_t plan_line = 0;
  for (size_t i = 0; i < lines.size() && !plan_line; ++i)
    if (lines[i].find("\"transfer_plan\"") != std::string::npos &&
        lines[i].find("xfer-req-42-g7") != std::string::npos)
      plan_line = static_cast<uint32_t>(i + 1);
  EXPECT_EQ(v[0].line, plan_line);
}

// After a breach the transfer's later events are not replayed: one root cause, one code.
TEST(TransferEventsTest, BreachGatesTheTransfersLaterEvents) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  for (auto& l : lines)
    if (l.find("\"transfer_reserve\"") != std::string::npos &&
        l.find("xfer-req-42-g7") != std::string::npos) {
      // Reserve outcome "rejected" while the protocol admits it: reported once, then gated.
      l.insert(l.size() - 1, R"(,"outcome":"rejected")");
    }
  TraceChecker c(kFixture);
  const Violations& v = Replay(c, lines);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OUTCOME_INVALID"})
      << test::Describe(v);
  EXPECT_EQ(v.size(), 1u) << test::Describe(v);
}

// The codes a copy of `relative` raises after `edit` replaces the first `from` on the first line
// that contains `marker`.
std::vector<std::string> CodesAfter(const std::string& relative, const std::string& marker,
                                    const std::string& from, const std::string& to) {
  std::vector<std::string> lines = test::SourceLines(relative);
  bool edited = false;
  for (auto& l : lines) {
    if (edited || l.find(marker) == std::string::npos) continue;
    auto at = l.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at == std::string::npos) break;
    l.replace(at, from.size(), to);
    edited = true;
  }
  EXPECT_TRUE(edited) << marker;
  TraceChecker c(relative);
  return test::CodeNames(Replay(c, lines));
}

// Regression (event-order sweep, 2026-12-03): a transfer_reserve delivered before its
// transfer_plan raised HANDOFF_TRANSFER_UNKNOWN and was skipped without gating; the plan then
// created the transfer, and its first chunk raised HANDOFF_TXN_TRANSITION_INVALID (a transfer
// never reserved). The transfer is now gated, its plan included.
TEST(TransferEventsTest, RegressionReserveBeforeItsPlanRaisesOneCode) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  size_t plan = 0;
  for (size_t i = 0; i < lines.size() && !plan; ++i)
    if (lines[i].find("\"transfer_plan\"") != std::string::npos &&
        lines[i].find("xfer-req-42-g7") != std::string::npos)
      plan = i;
  ASSERT_GT(plan, 0u);
  ASSERT_NE(lines[plan + 1].find("\"transfer_reserve\""), std::string::npos);
  ASSERT_NE(lines[plan + 1].find("xfer-req-42-g7"), std::string::npos);
  std::swap(lines[plan], lines[plan + 1]);  // two sources: their sequences are unchanged
  {
    TraceChecker c(kFixture);
    const Violations& v = Replay(c, lines);
    EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRANSFER_UNKNOWN"})
        << test::Describe(v);
  }
  // Reported rejected, an event naming a transfer that does not exist is still reported (a
  // refused late completion names the abandoned transfer it belongs to), and gates nothing:
  // here the superseded transfer's rejected chunk_receive, renamed.
  EXPECT_EQ(CodesAfter(kFixture,
                       R"("chunk_receive","request_id":"req-42","operation_id":"xfer-req-42-g6")",
                       "xfer-req-42-g6", "xfer-never-planned"),
            std::vector<std::string>{"HANDOFF_TRANSFER_UNKNOWN"});
}

// Regression (gating sweep, 2026-12-03, the former pool-accounting exception): an attempt the
// replay did not follow left the request's generation fence behind the runtime's. When the newer
// attempt's plan was dropped, its reservation refused, or the plan left out, the superseded
// attempt's late publication, reported rejected, was admitted by the replay and raised
// TRACE_OUTCOME_INVALID too; when the older plan's identity named a wrong generation, the newer
// attempt's reservation raised HANDOFF_STALE_GENERATION too. Such an attempt now gates its
// request.
TEST(TransferEventsTest, RegressionAnAttemptNotFollowedGatesItsRequest) {
  const std::string g7_plan = Marker("transfer_plan", "xfer-req-42-g7");
  const std::string g6_plan = Marker("transfer_plan", "xfer-req-42-g6");
  const std::string sum =
      R"("checksum":"c5f43e189a06a2ab11e0b3383d60f2dc23a576ec5bc80c9300ad05a14e4fe595")";
  // The newer attempt's plan dropped (a malformed chunk checksum).
  EXPECT_EQ(
      CodesAfter(
          kSuperseded, g7_plan, sum,
          R"("checksum":"c5f43e189a06a2ab11e0b3383d60f2dc23a576ec5bc80c9300ad05a14e4fe595x")"),
      std::vector<std::string>{"HANDOFF_DIGEST_MALFORMED"});
  // The plan's identity names another request than its event.
  EXPECT_EQ(CodesAfter(kSuperseded, g7_plan, R"("request_id":"req-42","generation")",
                       R"("request_id":"req-43","generation")"),
            std::vector<std::string>{"HANDOFF_TRACE_IDENTITY_MISMATCH"});
  // Its reservation refused by the replay (more blocks than the pool has free).
  EXPECT_EQ(CodesAfter(kSuperseded, g7_plan, R"("reserved_blocks":4)", R"("reserved_blocks":5)"),
            std::vector<std::string>{"HANDOFF_RESERVATION_TOO_SMALL"});
  // Regression: the refused reservation gated the request its event names, so a reservation
  // that leaves out its (optional) request_id gated nothing. It gates its transfer's request.
  {
    std::vector<std::string> lines = test::SourceLines(kSuperseded);
    for (auto& l : lines) {
      if (l.find(g7_plan) != std::string::npos)
        l.replace(l.find(R"("reserved_blocks":4)"), 19, R"("reserved_blocks":5)");
      const std::string reserve = Marker("transfer_reserve", "xfer-req-42-g7");
      if (l.find(reserve) != std::string::npos)
        l.replace(l.find(R"("request_id":"req-42",)"), 22, "");
    }
    TraceChecker c(kSuperseded);
    const Violations& v = Replay(c, lines);
    EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_RESERVATION_TOO_SMALL"})
        << test::Describe(v);
  }
  // The older plan's identity names generation 7: the validation finds it, and the reservation
  // of the attempt that really is generation 7 is not judged on the fence the wrong one set.
  EXPECT_EQ(CodesAfter(kSuperseded, g6_plan, R"("generation":6)", R"("generation":7)"),
            std::vector<std::string>{"HANDOFF_IDENTITY_MISMATCH"});
  // The newer attempt's plan left out (its source renumbered): its reservation names an unknown
  // transfer.
  std::vector<std::string> lines = test::SourceLines(kSuperseded);
  size_t plan = 0;
  for (size_t i = 0; i < lines.size() && !plan; ++i)
    if (lines[i].find(g7_plan) != std::string::npos) plan = i;
  ASSERT_GT(plan, 0u);
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(plan));
  for (size_t i = plan; i < lines.size(); ++i) {
    const std::string from =
        R"("source_instance":"router-0","source_component":"transfer","local_sequence":2)";
    if (auto at = lines[i].find(from); at != std::string::npos)
      lines[i].replace(
          at, from.size(),
          R"("source_instance":"router-0","source_component":"transfer","local_sequence":1)");
  }
  TraceChecker c(kSuperseded);
  const Violations& v = Replay(c, lines);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_TRANSFER_UNKNOWN"})
      << test::Describe(v);
}

// A hand-built trace of two transfer sources, P (prefill) and D (decode), with a one-layer ABI
// (id: 64 'a's): the header, then events numbered per source in the order they are added.
struct TwoSourceTrace {
  const std::string abi = std::string(64, 'a');
  std::map<std::string, int> seq;
  std::vector<std::string> out = {
      R"({"kind":"kvconform.trace/1","schema_version":1,"producer":{"name":"t","revision":"1"},)"
      R"("cache_abi":{"id":")" +
      abi +
      R"(","num_layers":1,"position_stage":"post_rope",)"
      R"("bytes_per_token":64},"sources":[{"source_instance":"P","source_component":"transfer"},)"
      R"({"source_instance":"D","source_component":"transfer"}],"audit":"complete"})"};
  // Appends a `type` event of source `src` and transfer `op` ("" for none); `rest` is the
  // remaining members (payload, request_id, ...).
  void ev(const std::string& src, const std::string& op, const std::string& type,
          const std::string& rest) {
    const int n = ++seq[src];
    out.push_back(R"({"event_id":")" + src + std::to_string(n) + R"(","source_instance":")" + src +
                  R"(","source_component":"transfer","local_sequence":)" + std::to_string(n) +
                  R"(,"monotonic_ns":)" + std::to_string(1000 * out.size()) +
                  R"(,"operation_id":)" + (op.empty() ? "null" : "\"" + op + "\"") +
                  R"(,"event_type":")" + type + "\"," + rest + "}");
  }
};

// A trace whose first event declares destination d0 with that credit window and block pool.
TwoSourceTrace WithDestination(int credit_capacity_bytes, int pool_blocks) {
  TwoSourceTrace trace;
  trace.ev("D", "", "transfer_destination",
           R"("payload":{"destination":"d0","credit_capacity_bytes":)" +
               std::to_string(credit_capacity_bytes) + R"(,"pool_blocks":)" +
               std::to_string(pool_blocks) + "}");
  return trace;
}

// Two transfers, A and B, of one 256-byte chunk each, sharing destination d0's 512-byte credit
// window (both chunks in flight at once); `capacity`, `b_bytes` (B's chunk as B's plan declares
// it) and `b_receive_in_flight` (what B's receive reports in flight) are the fields a test
// changes.
std::vector<std::string> SharedWindow(int capacity, int b_bytes, int b_receive_in_flight) {
  TwoSourceTrace trace;
  const std::string& abi = trace.abi;
  auto sum = [](const std::string& r) { return std::string(64, r == "A" ? 'b' : 'c'); };
  auto identity = [](const std::string& r) {
    return R"({"tenant":"t","request_id":")" + r +
           R"(","generation":1,"attempt":1,"source_worker_epoch":1,)"
           R"("destination_worker_epoch":1,"reservation_id":"res-)" +
           r + R"("})";
  };
  trace.ev("D", "", "transfer_destination",
           R"("payload":{"destination":"d0","credit_capacity_bytes":)" + std::to_string(capacity) +
               R"(,"pool_blocks":8})");
  for (const std::string r : {"A", "B"}) {
    trace.ev("P", "", "kv_ready",
             R"("request_id":")" + r + R"(","payload":{"layer":0,"interval":[0,4]})");
    trace.ev(
        "P", "x" + r, "transfer_plan",
        R"("request_id":")" + r + R"(","payload":{"destination":"d0","identity":)" + identity(r) +
            R"(,"tensor_abi_sha256":")" + abi +
            R"(","token_start":0,"token_count":4,"bytes_per_token_layer":64,"reserved_blocks":1,)"
            R"("chunks":[{"chunk_id":"c0","layer":0,"token_start":0,"token_count":4,"bytes":)" +
            std::to_string(r == "B" ? b_bytes : 256) + R"(,"checksum":")" + sum(r) + R"("}]})");
    trace.ev("D", "x" + r, "transfer_reserve", R"("payload":{})");
  }
  trace.ev("P", "xA", "chunk_credit_acquire",
           R"("payload":{"chunk_id":"c0","in_flight_bytes":256})");
  trace.ev("P", "xB", "chunk_credit_acquire",
           R"("payload":{"chunk_id":"c0","in_flight_bytes":512})");
  for (const std::string r : {"A", "B"})
    trace.ev("P", "x" + r, "chunk_send", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", "xB", "chunk_receive",
           R"("payload":{"chunk_id":"c0","checksum":")" + sum("B") + R"(","in_flight_bytes":)" +
               std::to_string(b_receive_in_flight) + "}");
  trace.ev("D", "xA", "chunk_receive",
           R"("payload":{"chunk_id":"c0","checksum":")" + sum("A") + R"(","in_flight_bytes":512})");
  trace.ev("D", "xA", "chunk_device_visible",
           R"("payload":{"chunk_id":"c0","in_flight_bytes":256})");
  trace.ev("D", "xB", "chunk_device_visible", R"("payload":{"chunk_id":"c0","in_flight_bytes":0})");
  for (const std::string r : {"A", "B"}) {
    trace.ev("D", "x" + r, "transfer_validate",
             R"("payload":{"expected_identity":)" + identity(r) + "}");
    trace.ev("D", "x" + r, "transfer_publish",
             R"("payload":{"cache_handle_id":")" + r + R"(@g1","committed_length":4})");
  }
  return trace.out;
}

// Regression: a transfer the replay stopped following (a refused credit, a plan not replayed,
// credit returned early) left the shared credit window wrong for the other transfer, whose
// in_flight_bytes claims then raised TRACE_OBSERVATION_INCONSISTENT too (found by a vendor's
// cold read of the docs). A gated transfer's holdings are returned and the destination's window
// is no longer compared with the runtime's (GateTransfer).
TEST(TransferEventsTest, RegressionAGatedTransferLeavesTheSharedWindowUnjudged) {
  auto codes = [](const std::vector<std::string>& lines) {
    TraceChecker c("t.jsonl");
    return test::CodeNames(Replay(c, lines));
  };
  using V = std::vector<std::string>;
  ASSERT_EQ(codes(SharedWindow(512, 256, 512)), V{});
  EXPECT_EQ(codes(SharedWindow(511, 256, 512)), V{"HANDOFF_CREDIT_WINDOW_EXCEEDED"});
  EXPECT_EQ(codes(SharedWindow(512, 512, 512)), V{"HANDOFF_CHUNK_BYTES_MISMATCH"});
  EXPECT_EQ(codes(SharedWindow(512, 256, 256)), V{"HANDOFF_CREDIT_RETURNED_EARLY"});
}

// Two transfers, A and B, of one block each, sharing destination d0's pool of `pool_blocks`;
// A reserves first, B's reservation reports `b_reserve_outcome` ("" for none), then both are
// aborted. `a_reserve_request` is the request A's reservation names, `a_checksum` its plan's
// chunk checksum: the fields a test changes.
std::vector<std::string> SharedPool(int pool_blocks, const std::string& b_reserve_outcome,
                                    const std::string& a_reserve_request = "A",
                                    const std::string& a_checksum = std::string(64, 'b')) {
  TwoSourceTrace trace;
  const std::string& abi = trace.abi;
  trace.ev("D", "", "transfer_destination",
           R"("payload":{"destination":"d0","credit_capacity_bytes":4096,"pool_blocks":)" +
               std::to_string(pool_blocks) + "}");
  for (const std::string r : {"A", "B"}) {
    trace.ev(
        "P", "x" + r, "transfer_plan",
        R"("request_id":")" + r + R"(","payload":{"destination":"d0","identity":)" +
            R"({"tenant":"t","request_id":")" + r +
            R"(","generation":1,"attempt":1,"source_worker_epoch":1,)"
            R"("destination_worker_epoch":1,"reservation_id":"res-)" +
            r + R"("},"tensor_abi_sha256":")" + abi +
            R"(","token_start":0,"token_count":4,"bytes_per_token_layer":64,"reserved_blocks":1,)"
            R"("chunks":[{"chunk_id":"c0","layer":0,"token_start":0,"token_count":4,"bytes":256,)"
            R"("checksum":")" +
            (r == "A" ? a_checksum : std::string(64, 'c')) + R"("}]})");
  }
  trace.ev("D", "xA", "transfer_reserve",
           R"("request_id":")" + a_reserve_request + R"(","payload":{})");
  if (!b_reserve_outcome.empty())
    trace.ev("D", "xB", "transfer_reserve",
             R"("request_id":"B","outcome":")" + b_reserve_outcome + R"(","payload":{})");
  for (const std::string r : {"A", "B"})
    trace.ev("D", "x" + r, "transfer_abort",
             R"("request_id":")" + r + R"(","payload":{"reason":"client cancelled"})");
  return trace.out;
}

// Regression (a vendor's cold read, noticed 2026-12-03, fixed the next session): after a
// transfer was gated, the block pool was still judged on the replay's state, so the runtime's
// refusal of another transfer's reservation, for want of the blocks the gated transfer held (or
// went on to take), raised TRACE_OUTCOME_INVALID besides the gated transfer's own code. A gated
// transfer, planned or further, leaves its destination's pool unjudged (LoseHoldings).
TEST(TransferEventsTest, RegressionAGatedTransferLeavesTheSharedPoolUnjudged) {
  auto codes = [](const std::vector<std::string>& lines) {
    TraceChecker c("t.jsonl");
    return test::CodeNames(Replay(c, lines));
  };
  using V = std::vector<std::string>;
  // The pool is judged while the replay follows every transfer on it.
  ASSERT_EQ(codes(SharedPool(1, "rejected")), V{});
  ASSERT_EQ(codes(SharedPool(2, "")), V{});
  EXPECT_EQ(codes(SharedPool(2, "rejected")), V{"TRACE_OUTCOME_INVALID"});
  EXPECT_EQ(codes(SharedPool(1, "success")), V{"HANDOFF_RESERVATION_TOO_SMALL"});
  // A's reservation misnames its request: A is gated while PLANNED, and its runtime holds the
  // block the replay never reserved.
  EXPECT_EQ(codes(SharedPool(1, "rejected", "Z")), V{"HANDOFF_TRACE_IDENTITY_MISMATCH"});
  // A's plan is not replayed (a malformed checksum): its reservation is never replayed.
  EXPECT_EQ(codes(SharedPool(1, "rejected", "A", "not-a-digest")), V{"HANDOFF_DIGEST_MALFORMED"});
}

// Regression (envelope sweep, 2026-12-03): a transfer event misnaming its request, or naming
// none readably, was not replayed and gated nothing, so the superseded attempt's refused late
// publication was then admitted (TRACE_OUTCOME_INVALID too). Such an event now gates its
// transfer's request.
TEST(TransferEventsTest, RegressionAnAttemptsEventWithoutItsRequestGatesTheRequest) {
  const std::string g7_reserve = Marker("transfer_reserve", "xfer-req-42-g7");
  const std::string g7_plan = Marker("transfer_plan", "xfer-req-42-g7");
  EXPECT_EQ(
      CodesAfter(kSuperseded, g7_reserve, R"("request_id":"req-42")", R"("request_id":"req-43")"),
      std::vector<std::string>{"HANDOFF_TRACE_IDENTITY_MISMATCH"});
  EXPECT_EQ(CodesAfter(kSuperseded, g7_reserve, R"("request_id":"req-42")", R"("request_id":7)"),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(CodesAfter(kSuperseded, g7_plan, R"("request_id":"req-42",)", ""),
            std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

// Regression (gating sweep, 2026-12-03): a dropped transfer_destination left the plans naming it
// to raise HANDOFF_TRANSFER_UNKNOWN.
TEST(TransferEventsTest, RegressionDroppedDestinationGatesThePlansNamingIt) {
  EXPECT_EQ(CodesAfter(kFixture, "\"transfer_destination\"", R"("pool_blocks":8)",
                       R"("pool_blocks":"8")"),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  // Its name unreadable: every plan naming an undeclared destination is gated.
  EXPECT_EQ(CodesAfter(kFixture, "\"transfer_destination\"", R"("destination":"decode-0")",
                       R"("destination":7)"),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  // Dropped for its envelope.
  EXPECT_EQ(CodesAfter(kFixture, "\"transfer_destination\"", R"("operation_id")",
                       R"("bogus":1,"operation_id")"),
            std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
}

// Regression (gating sweep, 2026-12-03): a dropped destination_prefix left the plan that extends
// it to raise LIFECYCLE_UNKNOWN_HANDLE at its reservation.
TEST(TransferEventsTest, RegressionDroppedPrefixGatesThePlanExtendingIt) {
  const std::string warm = "fixtures/m5_6/trace/suffix_onto_warm_destination.jsonl";
  EXPECT_EQ(CodesAfter(warm, "\"destination_prefix\"", R"("committed_length":4)",
                       R"("committed_length":"4")"),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(CodesAfter(warm, "\"destination_prefix\"", "destination_prefix", "destination_prefx"),
            std::vector<std::string>{"TRACE_EVENT_TYPE_UNKNOWN"});
}

// Regression (probe 11, 2026-12-04): a destination_prefix named like an attempt handle
// ("<request_id>@g<generation>") became that attempt's destination handle. The name form is
// reserved: the declaration is INPUT_VALUE_INVALID at its prefix_handle, and the plan extending
// the prefix is gated with it (one code).
TEST(TransferEventsTest, RegressionAPrefixNamedLikeAnAttemptHandleIsRefused) {
  const std::string warm = "fixtures/m5_6/trace/suffix_onto_warm_destination.jsonl";
  std::vector<std::string> lines = test::SourceLines(warm);
  const std::string name = "prefix:881ecf9f785fa13a:b0";
  size_t renamed = 0;
  for (auto& l : lines)
    for (size_t at; (at = l.find('"' + name + '"')) != std::string::npos; ++renamed)
      l.replace(at + 1, name.size(), "req-7@g3");
  ASSERT_EQ(renamed, 2u);  // the declaration and the plan's visible_prefix_handle
  TraceChecker c(warm);
  const Violations& v = Replay(c, lines);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_VALUE_INVALID"})
      << test::Describe(v);
  EXPECT_NE(v[0].pointer.find("/payload/prefix_handle"), std::string::npos) << v[0].pointer;
}

// Regression (gating sweep, 2026-12-03): a refused kv_ready (a layer the ABI does not have) left
// the chunk of that layer to raise HANDOFF_PRODUCER_GATE.
TEST(TransferEventsTest, RegressionRefusedKvReadyGatesItsRequest) {
  EXPECT_EQ(CodesAfter(kFixture, R"("layer":3,"interval")", R"("layer":3)", R"("layer":4)"),
            std::vector<std::string>{"HANDOFF_TRACE_INTERVAL_INVALID"});
}

// Regression (an adversarial probe, 2026-12-04): a chunked prefill announces readiness slice by
// slice; two kv_ready events [0,8) and [8,16) together cover a chunk of [0,16), but the gate
// asked for one event covering it and refused the send (HANDOFF_PRODUCER_GATE).
TEST(TransferEventsTest, RegressionReadinessInSlicesCoversAChunkTogether) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  size_t ready = 0;  // layer 0's kv_ready
  for (size_t i = 1; i < lines.size() && !ready; ++i)
    if (lines[i].find(R"("event_type":"kv_ready")") != std::string::npos &&
        lines[i].find(R"("layer":0,"interval":[0,16])") != std::string::npos)
      ready = i;
  ASSERT_NE(ready, 0u);
  const std::string whole = lines[ready];
  std::string first = whole, second = whole;
  first.replace(first.find(R"("interval":[0,16])"), 17, R"("interval":[0,8])");
  second.replace(second.find(R"("interval":[0,16])"), 17, R"("interval":[8,16])");
  // The second slice is its source's next event: renumber the source's later events.
  const std::string src = R"("source_instance":"prefill-0")";
  auto number = [](const std::string& l) {
    const size_t at = l.find(R"("local_sequence":)") + 17;
    return std::stoull(l.substr(at));
  };
  auto renumber = [&](std::string& l, uint64_t n) {
    const size_t at = l.find(R"("local_sequence":)") + 17;
    l.replace(at, l.find(',', at) - at, std::to_string(n));
    const size_t id = l.find(R"("event_id":"prefill-0:)") + 22;
    l.replace(id, l.find('"', id) - id, std::to_string(n));
  };
  const uint64_t n = number(whole);
  renumber(second, n + 1);
  for (size_t i = ready + 1; i < lines.size(); ++i)
    if (lines[i].find(src) != std::string::npos) renumber(lines[i], number(lines[i]) + 1);
  lines[ready] = first;
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(ready) + 1, second);
  {
    TraceChecker c("t.jsonl");
    const Violations& v = Replay(c, lines);
    EXPECT_TRUE(v.empty()) << test::Describe(v);
  }
  // One slice alone does not cover the chunk.
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(ready) + 1);
  for (size_t i = ready + 1; i < lines.size(); ++i)
    if (lines[i].find(src) != std::string::npos) renumber(lines[i], number(lines[i]) - 1);
  TraceChecker c("t.jsonl");
  EXPECT_EQ(test::CodeNames(Replay(c, lines)), std::vector<std::string>{"HANDOFF_PRODUCER_GATE"});
}

// A one-layer transfer "x" + `request` of one chunk [0, `tokens`) (64 B per token) to
// destination d0 of `trace`: its plan, reservation and credit; the send and the rest are the
// caller's (SendAndPublish).
// The transfer_plan of `transfer` moving `request` (generation 1): one chunk c0 of layer 0
// tokens [0, tokens).
void PlanTransfer(TwoSourceTrace& trace, const std::string& request, int tokens,
                  const std::string& transfer, int attempt = 1) {
  const std::string identity = R"({"tenant":"t","request_id":")" + request +
                               R"(","generation":1,"attempt":)" + std::to_string(attempt) +
                               R"(,"source_worker_epoch":1,)"
                               R"("destination_worker_epoch":1,"reservation_id":"res"})";
  const std::string n = std::to_string(tokens);
  trace.ev("P", transfer, "transfer_plan",
           R"("request_id":")" + request + R"(","payload":{"destination":"d0","identity":)" +
               identity + R"(,"tensor_abi_sha256":")" + trace.abi + R"(","token_start":0,)" +
               R"("token_count":)" + n + R"(,"bytes_per_token_layer":64,"reserved_blocks":1,)" +
               R"("chunks":[{"chunk_id":"c0","layer":0,"token_start":0,"token_count":)" + n +
               R"(,"bytes":)" + std::to_string(64 * tokens) + R"(,"checksum":")" +
               std::string(64, 'b') + R"("}]})");
}
// Transfer "x" + `request`: its plan (PlanTransfer), reservation and chunk credit.
void PlanOneChunk(TwoSourceTrace& trace, const std::string& request, int tokens) {
  PlanTransfer(trace, request, tokens, "x" + request);
  trace.ev("D", "x" + request, "transfer_reserve", R"("payload":{})");
  trace.ev("P", "x" + request, "chunk_credit_acquire", R"("payload":{"chunk_id":"c0"})");
}
// kv_ready of layer 0 tokens [start, end) of `request`.
void KvReady(TwoSourceTrace& trace, const std::string& request, int start, int end) {
  trace.ev("P", "", "kv_ready",
           R"("request_id":")" + request + R"(","payload":{"layer":0,"interval":[)" +
               std::to_string(start) + "," + std::to_string(end) + "]}");
}
// The rest of transfer "x" + `request` after its credit: send, receive, device-visible,
// validate, publish.
void SendAndPublish(TwoSourceTrace& trace, const std::string& request, int tokens) {
  const std::string x = "x" + request;
  trace.ev("P", x, "chunk_send", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", x, "chunk_receive",
           R"("payload":{"chunk_id":"c0","checksum":")" + std::string(64, 'b') + R"("})");
  trace.ev("D", x, "chunk_device_visible", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", x, "transfer_validate",
           R"("payload":{"expected_identity":{"tenant":"t","request_id":")" + request +
               R"(","generation":1,"attempt":1,"source_worker_epoch":1,)"
               R"("destination_worker_epoch":1,"reservation_id":"res"}})");
  trace.ev("D", x, "transfer_publish",
           R"("payload":{"cache_handle_id":")" + request + R"(@g1","committed_length":)" +
               std::to_string(tokens) + "}");
}

// Regression (adversarial probe 8, 2026-12-04): the producer gate rescanned every kv_ready
// interval of the chunk's layer until no interval extended the covered prefix, so S slices
// announced in descending order cost S^2 steps per chunk_send, re-sends included (10.5k lines:
// 36.7 s). Readiness is kept as disjoint intervals, overlapping and adjacent ones merged: the
// S slices are one interval, and a send is one lookup. Same verdicts: a hole is still the
// first token not ready.
TEST(TransferEventsTest, RegressionReadinessSlicesMergeIntoOneInterval) {
  constexpr int kSlices = 512;
  TwoSourceTrace trace;
  trace.ev("D", "", "transfer_destination",
           R"("payload":{"destination":"d0","credit_capacity_bytes":)" +
               std::to_string(64 * kSlices) + R"(,"pool_blocks":8})");
  PlanOneChunk(trace, "A", kSlices);
  for (int i = kSlices - 1; i >= 0; --i) KvReady(trace, "A", i, i + 1);
  for (int i = 0; i < 8; ++i)  // re-sends are idempotent retries
    trace.ev("P", "xA", "chunk_send", R"("payload":{"chunk_id":"c0"})");
  SendAndPublish(trace, "A", kSlices);
  {
    TraceChecker c("t.jsonl");
    const Violations& v = Replay(c, trace.out);
    EXPECT_TRUE(v.empty()) << test::Describe(v);
    EXPECT_EQ(TransferFootprint(c).ready_intervals, 1u);
  }
  // Overlapping, adjacent and nested slices merge; a hole stays one: [0,3) [5,7) [2,4) [6,9)
  // [5,6) cover [0,4) and [5,9), and the send of [0,9) names token 4.
  TwoSourceTrace holed;
  holed.ev("D", "", "transfer_destination",
           R"("payload":{"destination":"d0","credit_capacity_bytes":4096,"pool_blocks":8})");
  PlanOneChunk(holed, "A", 9);
  const std::pair<int, int> slices[] = {{0, 3}, {5, 7}, {2, 4}, {6, 9}, {5, 6}, {3, 3}};
  for (auto [start, end] : slices) KvReady(holed, "A", start, end);
  holed.ev("P", "xA", "chunk_send", R"("payload":{"chunk_id":"c0"})");
  holed.ev("P", "xA", "transfer_abort", R"("payload":{"reason":"r"})");
  TraceChecker c("t.jsonl");
  const Violations& v = Replay(c, holed.out);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_PRODUCER_GATE"});
  EXPECT_NE(v[0].message.find("(token 4 is not yet ready"), std::string::npos) << v[0].message;
  EXPECT_EQ(TransferFootprint(c).ready_intervals, 2u);
}

// Regression (adversarial probe 8, 2026-12-04): the readiness of every request that ever had a
// kv_ready was kept to the end of the trace (~126 B per request: memory grew with the trace).
// A request with an open transfer keeps its readiness; of the requests without one (never
// planned, or every transfer PUBLISHED or ABORTED) only the last released_window keep theirs.
// A transfer planned after its request's readiness was forgotten fails the producer gate, and
// the message says why.
TEST(TransferEventsTest, RegressionReadinessOfIdleRequestsIsBounded) {
  CheckerOptions opt;
  opt.released_window = 8;
  TwoSourceTrace trace = WithDestination(4096, 64);
  // "open": planned before 100 idle requests announce readiness, sent after them.
  KvReady(trace, "open", 0, 4);
  PlanOneChunk(trace, "open", 4);
  // "early": announced, then 100 idle requests, then planned.
  KvReady(trace, "early", 0, 4);
  for (int i = 0; i < 100; ++i) KvReady(trace, "r" + std::to_string(i), 0, 16);
  SendAndPublish(trace, "open", 4);
  const size_t early_send = trace.out.size() + 3;  // after its plan, reservation and credit
  PlanOneChunk(trace, "early", 4);
  trace.ev("P", "xearly", "chunk_send", R"("payload":{"chunk_id":"c0"})");
  trace.ev("P", "xearly", "transfer_abort", R"("payload":{"reason":"r"})");
  TraceChecker c("t.jsonl", opt);
  const Violations& v = Replay(c, trace.out);
  // "open" (published) and the last idle ones: at most the window (102 before the fix).
  EXPECT_LE(TransferFootprint(c).ready_requests, 8u);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_PRODUCER_GATE"})
      << test::Describe(v);
  EXPECT_EQ(v[0].line, early_send + 1);
  EXPECT_NE(v[0].message.find("no kv_ready of the request is known"), std::string::npos)
      << v[0].message;
  auto s = SummarizeTransfer(c, "xopen");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, "PUBLISHED");
  EXPECT_TRUE(s->last_layer_ready_ns.has_value());  // its readiness is among the last 8
}

// `n` transfers "x<prefix><i>" of requests "<prefix><i>", each announced, planned and published.
void PublishMany(TwoSourceTrace& trace, const std::string& prefix, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string r = prefix + std::to_string(i);
    KvReady(trace, r, 0, 4);
    PlanOneChunk(trace, r, 4);
    SendAndPublish(trace, r, 4);
  }
}

// Regression (probe 11, 2026-12-04): decode-owned blocks never went back to the destination's
// pool, so transfers in turn through a one-block pool failed HANDOFF_RESERVATION_TOO_SMALL from
// the second on. decode_release (M5.6 0x06B: decode-owned "until the ordinary M5.1/M5.3 lifecycle
// releases them") returns them; it is valid once, PUBLISHED only, under the plan's generation.
// `releases`: decode_release events per transfer (a second one is a second event, not a
// redelivery of the first).
std::vector<std::string> InTurnThroughOneBlock(int n, int releases) {
  TwoSourceTrace trace = WithDestination(4096, 1);
  for (int i = 0; i < n; ++i) {
    const std::string r = "q" + std::to_string(i);
    KvReady(trace, r, 0, 4);
    PlanOneChunk(trace, r, 4);
    SendAndPublish(trace, r, 4);
    trace.ev("D", "x" + r, "decode_admit", R"("payload":{"generation":1})");
    for (int k = 0; k < releases; ++k)
      trace.ev("D", "x" + r, "decode_release", R"("payload":{"generation":1})");
  }
  return trace.out;
}

TEST(TransferEventsTest, RegressionDecodeReleaseReturnsTheBlocksToThePool) {
  {
    TraceChecker c("t.jsonl");
    const Violations& v = Replay(c, InTurnThroughOneBlock(5, 1));
    EXPECT_TRUE(v.empty()) << test::Describe(v);
  }
  {
    TraceChecker c("t.jsonl");  // without the release, the second reservation finds no block
    const std::vector<std::string> codes = test::CodeNames(Replay(c, InTurnThroughOneBlock(2, 0)));
    ASSERT_FALSE(codes.empty());
    EXPECT_EQ(codes.front(), "HANDOFF_RESERVATION_TOO_SMALL");
  }
  auto codes_with = [](const std::string& from, const std::string& to) {
    std::vector<std::string> lines = InTurnThroughOneBlock(1, 1);
    std::string& last = lines.back();
    last.replace(last.find(from), from.size(), to);
    TraceChecker c("t.jsonl");
    return test::CodeNames(Replay(c, lines));
  };
  EXPECT_EQ(codes_with(R"("generation":1)", R"("generation":2)"),
            std::vector<std::string>{"HANDOFF_DECODE_RELEASE_INVALID"});
  EXPECT_EQ(codes_with(R"("event_type":"decode_release",)",
                       R"("event_type":"decode_release","outcome":"rejected",)"),
            std::vector<std::string>{"TRACE_OUTCOME_INVALID"});
  {
    TraceChecker c("t.jsonl");
    EXPECT_EQ(test::CodeNames(Replay(c, InTurnThroughOneBlock(1, 2))),
              std::vector<std::string>{"HANDOFF_DECODE_RELEASE_INVALID"})
        << "released twice";
  }
  // A publication gated before its release frees its blocks in the replay (its decode_release is
  // not replayed): the next transfer's reservation raises no second code.
  std::vector<std::string> lines = InTurnThroughOneBlock(2, 1);
  for (std::string& l : lines)
    if (l.find(R"("event_type":"decode_admit","payload":{"generation":1})") != std::string::npos) {
      l.replace(l.find(R"("generation":1)"), 14, R"("generation":2)");
      break;
    }
  TraceChecker c("t.jsonl");
  EXPECT_EQ(test::CodeNames(Replay(c, lines)),
            std::vector<std::string>{"HANDOFF_DECODE_ADMIT_UNPUBLISHED"});
}

// Probe 12 (2026-12-04): a transfer event the core drops (a payload member of the wrong type) or
// skips (its request is gated) gated its transfer by key alone, so the transfer kept its
// reservation, credits or decode-owned blocks in the replay, and the next transfer at the same
// destination raised a second code. Through GateTransfer the transfer's holdings are returned.
TEST(TransferEventsTest, RegressionADroppedTransferEventReturnsWhatItsTransferHolds) {
  auto trace_with = [](const std::string& x1_tail) {
    TwoSourceTrace trace = WithDestination(256, 1);
    KvReady(trace, "r1", 0, 4);
    PlanOneChunk(trace, "r1", 4);  // holds the pool's one block and 256 B of credit
    if (x1_tail == "published") {
      SendAndPublish(trace, "r1", 4);
      trace.ev("D", "xr1", "decode_release", R"("payload":{"generation":"1"})");  // dropped
    } else {
      trace.ev("P", "xr1", "chunk_send", R"("payload":{"chunk_id":7})");  // dropped
    }
    KvReady(trace, "r2", 0, 4);
    PlanOneChunk(trace, "r2", 4);  // needs the block and the credit
    SendAndPublish(trace, "r2", 4);
    return trace.out;
  };
  for (const char* tail : {"published", "reserved"}) {
    TraceChecker c("t.jsonl");
    EXPECT_EQ(test::CodeNames(Replay(c, trace_with(tail))),
              std::vector<std::string>{"INPUT_FIELD_TYPE"})
        << tail;
  }
}

// Probe 12: a gated publication holds blocks but no credits, so the destination's window stays
// judged (only the pool's refusals are not); before, one bad decode_admit hid a later wrong
// in_flight_bytes claim of another request at that destination.
TEST(TransferEventsTest, RegressionAGatedPublicationLeavesTheWindowJudged) {
  TwoSourceTrace trace = WithDestination(4096, 8);
  KvReady(trace, "r1", 0, 4);
  PlanOneChunk(trace, "r1", 4);
  SendAndPublish(trace, "r1", 4);
  trace.ev("D", "xr1", "decode_admit", R"("payload":{"generation":2})");  // gates xr1
  KvReady(trace, "r2", 0, 4);
  PlanOneChunk(trace, "r2", 4);
  trace.ev("P", "xr2", "chunk_send", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", "xr2", "chunk_receive",
           R"("payload":{"chunk_id":"c0","checksum":")" + std::string(64, 'b') +
               R"(","in_flight_bytes":999})");  // 256 are in flight
  TraceChecker c("t.jsonl");
  const Violations& v = Replay(c, trace.out);
  EXPECT_EQ(test::CodeNames(v), (std::vector<std::string>{"HANDOFF_DECODE_ADMIT_UNPUBLISHED",
                                                          "TRACE_OBSERVATION_INCONSISTENT"}))
      << test::Describe(v);  // (xr2 is gated by its own breach: not reported unterminated)
}

// Probe 12: the wildcard gate of requests not yet created (a dropped event that names no request)
// skipped a planned transfer's later events that left their request out, and judged those that
// named it. A planned transfer's request exists: only its own gate applies.
TEST(TransferEventsTest, RegressionTheWildcardGateSkipsNoPlannedTransfer) {
  TwoSourceTrace trace = WithDestination(4096, 8);
  KvReady(trace, "r1", 0, 4);
  PlanOneChunk(trace, "r1", 4);
  trace.ev("D", "", "transfer_destinaton", R"("payload":{"destination":"d1"})");  // misspelled
  trace.ev("P", "xr1", "chunk_send", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", "xr1", "chunk_receive",
           R"("payload":{"chunk_id":"c0","checksum":")" + std::string(64, 'b') + R"("})");
  trace.ev("D", "xr1", "chunk_device_visible", R"("payload":{"chunk_id":"c0"})");
  trace.ev("D", "xr1", "transfer_validate",
           R"("payload":{"expected_identity":{"tenant":"t","request_id":"r1","generation":1,)"
           R"("attempt":1,"source_worker_epoch":1,"destination_worker_epoch":1,)"
           R"("reservation_id":"res"}})");
  trace.ev("D", "xr1", "transfer_publish", R"("payload":{})");
  trace.ev("D", "xr1", "decode_release", R"("payload":{"generation":2})");
  TraceChecker c("t.jsonl");
  const Violations& v = Replay(c, trace.out);
  EXPECT_EQ(test::CodeNames(v), (std::vector<std::string>{"TRACE_EVENT_TYPE_UNKNOWN",
                                                          "HANDOFF_DECODE_RELEASE_INVALID"}))
      << test::Describe(v);
}

// Probe 12: a publication forgotten before its decode_release (the window of finished transfers)
// kept its blocks for the rest of the trace, so the late release raised HANDOFF_TRANSFER_UNKNOWN
// and the next reservation needing those blocks a second code. Forgetting it returns them.
TEST(TransferEventsTest, RegressionAForgottenPublicationReturnsItsBlocks) {
  CheckerOptions opt;
  opt.released_window = 8;
  TwoSourceTrace trace = WithDestination(4096, 2);
  KvReady(trace, "long", 0, 4);
  PlanOneChunk(trace, "long", 4);
  SendAndPublish(trace, "long", 4);  // a long decode: released only at the end
  for (int i = 0; i < 9; ++i) {      // nine short handoffs in turn through the other block
    const std::string r = "s" + std::to_string(i);
    KvReady(trace, r, 0, 4);
    PlanOneChunk(trace, r, 4);
    SendAndPublish(trace, r, 4);
    trace.ev("D", "x" + r, "decode_release", R"("payload":{"generation":1})");
  }
  trace.ev("D", "xlong", "decode_release", R"("payload":{"generation":1})");
  for (const char* r : {"t0", "t1"}) {  // two at once: both blocks
    KvReady(trace, r, 0, 4);
    PlanOneChunk(trace, r, 4);
  }
  for (const char* r : {"t0", "t1"}) SendAndPublish(trace, r, 4);
  TraceChecker c("t.jsonl", opt);
  EXPECT_EQ(test::CodeNames(Replay(c, trace.out)),
            std::vector<std::string>{"HANDOFF_TRANSFER_UNKNOWN"});
}

// Adversarial probes 12 to 15 (2026-12-04): one reproducer per gating or protocol defect of the
// transfer plane, each named after the defect it pinned, in
// reference/trace/testdata/transfer_gating/. Each raised one more code than its root cause (a
// transfer's holdings kept after its events or its plan were dropped or skipped, by payload,
// envelope, component, request (named "", "*" or otherwise) or a nested identity) or hid one (a
// gate that stopped the window's checks, the wildcard gate of a planned transfer, a header's
// nested member that stopped the replay); probe 15 adds a refused reservation that superseded
// the request's publication (it must pass) and an attempt handle forked as a visible prefix.
TEST(TransferEventsTest, GatingRegressionsRaiseTheirRootCauseOnly) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"probe12_decode_release_replayed_leaks_pool", {"TRACE_OUTCOME_INVALID"}},
      {"probe12_dropped_chunk_event_leaks_credit", {"INPUT_FIELD_TYPE"}},
      {"probe12_dropped_chunk_event_leaks_reservation", {"INPUT_FIELD_TYPE"}},
      {"probe12_dropped_decode_admit_leaks_pool", {"INPUT_FIELD_TYPE"}},
      {"probe12_dropped_decode_release_leaks_pool", {"INPUT_FIELD_TYPE"}},
      {"probe12_dropped_replan_skips_decode_release", {"INPUT_FIELD_MISSING"}},
      {"probe12_gated_publication_blinds_inflight",
       {"HANDOFF_DECODE_ADMIT_UNPUBLISHED", "TRACE_OBSERVATION_INCONSISTENT"}},
      {"probe12_gated_publication_unjudges_rejected_credit",
       {"HANDOFF_DECODE_ADMIT_UNPUBLISHED", "TRACE_OUTCOME_INVALID"}},
      {"probe12_semantic_gate_skips_decode_release", {"INPUT_FIELD_TYPE"}},
      {"probe12_wildcard_gate_control_with_request_id",
       {"TRACE_EVENT_TYPE_UNKNOWN", "HANDOFF_DECODE_RELEASE_INVALID"}},
      {"probe12_wildcard_gate_skips_requestless_transfer_events",
       {"TRACE_EVENT_TYPE_UNKNOWN", "HANDOFF_DECODE_RELEASE_INVALID"}},
      {"probe13_component_mismatch_abort_keeps_holdings", {"TRACE_SOURCE_UNDECLARED"}},
      {"probe13_envelope_dropped_chunk_send_keeps_reservation", {"INPUT_VALUE_OUT_OF_RANGE"}},
      {"probe13_envelope_dropped_decode_release_keeps_pool", {"INPUT_FIELD_TYPE"}},
      {"probe13_gated_validated_transfer_blinds_window",
       {"INPUT_FIELD_TYPE", "TRACE_OBSERVATION_INCONSISTENT"}},
      {"probe13_misnamed_operation_leaves_named_request_ungated",
       {"HANDOFF_TRACE_IDENTITY_MISMATCH"}},
      {"probe13_plan_identity_member_mistyped_two_codes", {"INPUT_FIELD_TYPE"}},
      {"probe13_request_gate_abort_without_operation_id_keeps_holdings", {"INPUT_FIELD_MISSING"}},
      {"probe13_request_gate_decode_release_without_operation_id_keeps_pool",
       {"INPUT_FIELD_MISSING"}},
      {"probe13_request_gate_dropped_kv_ready_keeps_holdings", {"INPUT_FIELD_TYPE"}},
      {"probe13_validate_identity_member_mistyped_two_codes", {"INPUT_FIELD_TYPE"}},
      {"probe14_component_mismatch_plan_keeps_pool_judged", {"TRACE_SOURCE_UNDECLARED"}},
      {"probe14_envelope_dropped_plan_keeps_pool_judged", {"INPUT_VALUE_OUT_OF_RANGE"}},
      {"probe14_gated_all_visible_transfer_blinds_window",
       {"INPUT_FIELD_TYPE", "TRACE_OBSERVATION_INCONSISTENT"}},
      {"probe14_gated_zero_chunk_transfer_blinds_window",
       {"INPUT_FIELD_TYPE", "TRACE_OBSERVATION_INCONSISTENT"}},
      {"probe14_header_producer_unknown_member_stops_replay",
       {"INPUT_FIELD_UNKNOWN", "TRACE_OUTCOME_INVALID"}},
      {"probe14_plan_of_gated_request_skipped_keeps_pool_judged", {"INPUT_FIELD_TYPE"}},
      // Since probe 88 an empty request_id names no request: each of the five events naming
      // "" is INPUT_VALUE_INVALID and dropped (the kv_ready of a mistyped layer among them), and
      // r2's transfer after them is judged as before.
      {"probe14_request_named_empty_gate_keeps_holdings",
       {"INPUT_VALUE_INVALID", "INPUT_VALUE_INVALID", "INPUT_VALUE_INVALID", "INPUT_VALUE_INVALID",
        "INPUT_VALUE_INVALID"}},
      {"probe14_request_named_star_gate_keeps_holdings", {"INPUT_FIELD_TYPE"}},
      {"probe15_corrupt_replan_does_not_gate_transfer", {"HANDOFF_DUPLICATE_CORRUPTION"}},
      {"probe15_dropped_replan_of_live_transfer_keeps_credits",
       {"HANDOFF_TRACE_IDENTITY_MISMATCH"}},
      {"probe15_refused_reservation_supersedes_publication", {}},
      {"probe15_superseded_attempt_handle_accepted_as_visible_prefix",
       {"LIFECYCLE_UNKNOWN_HANDLE"}},
      // Probe 31: a retried publication of generation 6 after generation 7 published returned
      // the old handle, so its refusal was TRACE_OUTCOME_INVALID and its success passed; a
      // validation after abort was a transition error, not a late completion.
      {"probe31_a_refused_republication_of_a_superseded_generation_was_outcome_invalid", {}},
      {"probe31_a_republication_of_a_superseded_generation_passed", {"HANDOFF_STALE_GENERATION"}},
      {"probe31_a_validation_after_abort_was_a_transition_error_not_a_late_completion",
       {"HANDOFF_LATE_COMPLETION"}},
      // The identity fence across a request's attempts (M5.6 0x01A): a changed tenant, an
      // attempt numbered below the last, two live attempts under one reservation (probe 31),
      // and a destination worker whose epoch went from 19 back to 18 between validations
      // (probe 24 S2) all passed.
      {"probe31_a_tenant_changed_between_attempts_passed", {"HANDOFF_IDENTITY_MISMATCH"}},
      {"probe31_an_attempt_numbered_below_the_last_passed", {"HANDOFF_IDENTITY_MISMATCH"}},
      {"probe31_two_live_attempts_under_one_reservation_passed", {"HANDOFF_IDENTITY_MISMATCH"}},
      // A reroute after an attempt that validated [0, 16) and did not publish planned,
      // published and admitted only [0, 8) of the prompt (probe 31 finding 4d).
      {"probe31_a_reroute_handing_off_half_the_prompt_passed", {"HANDOFF_IDENTITY_MISMATCH"}},
      // A warm plan to decode-1 extended the prefix decode-0 declared (probe 31 finding 5;
      // destination_prefix names its destination since).
      {"probe31_a_warm_plan_extending_another_destinations_prefix_passed",
       {"HANDOFF_COVERAGE_MISMATCH"}},
      {"probe24_a_destination_worker_epoch_going_backwards_passed", {"HANDOFF_IDENTITY_MISMATCH"}},
      // A stale publication reported done (its blocks decode-owned in the runtime's pool, freed
      // by the replay's abort), and a wrong in_flight_bytes claim at a transfer's last visible
      // chunk, each raised a second code at another transfer of the destination (probe 31).
      {"probe31_a_stale_publication_reported_done_left_the_pool_judged",
       {"HANDOFF_STALE_GENERATION"}},
      {"probe31_an_in_flight_claim_at_the_last_visible_chunk_left_the_window_judged",
       {"TRACE_OBSERVATION_INCONSISTENT"}},
      // Mutation audit (2026-12-05, survivor 202): transfer_protocol.jsonl with a transfer_reserve
      // naming handle_generation 99 of a transfer of generation 6 passed under a mutant that
      // dropped the check.
      {"mut202_a_transfer_event_naming_another_handle_generation",
       {"HANDOFF_TRACE_IDENTITY_MISMATCH"}},
      // A second mutation audit (2026-12-06, survivors named by number, mut3_<N>): under each
      // mutant the trace raised no code, another code or a second one: a dropped event claiming
      // the transfer component that names an unplanned transfer (83, 113), kv_ready slices
      // announced adjacent (119), a gated reserved transfer (125), a receive returning the whole
      // window early (130), a wrong in-flight claim (131) and a refused credit after it (144), a
      // destination declared twice (133), a reroute longer than an unpublished attempt (139), a
      // plan envelope of another generation (141), a refused reservation the replay admits
      // (143), a malformed received checksum (146), a refused validation of a superseded
      // attempt (149), a stale re-publication of a released transfer (151), a publication naming
      // another handle or snapshot (152, 154), and a refused decode_release the replay performed
      // (156).
      {"mut3_83_an_envelope_dropped_claiming_the_transfer_component_gates_its_transfer",
       {"INPUT_FIELD_TYPE"}},
      {"mut3_113_an_unknown_type_claiming_the_transfer_component_gates_its_transfer",
       {"TRACE_EVENT_TYPE_UNKNOWN"}},
      {"mut3_119_adjacent_kv_ready_slices_cover_a_chunk", {}},
      {"mut3_125_a_gated_reserved_transfer_leaves_its_request_judged",
       {"TRACE_OBSERVATION_INCONSISTENT", "HANDOFF_TRACE_IDENTITY_MISMATCH"}},
      {"mut3_130_a_receive_returning_the_whole_window_early", {"HANDOFF_CREDIT_RETURNED_EARLY"}},
      {"mut3_131_a_wrong_in_flight_claim_stops_the_window_checks",
       {"TRACE_OBSERVATION_INCONSISTENT"}},
      {"mut3_133_a_destination_declared_twice", {"INPUT_VALUE_INVALID"}},
      {"mut3_139_a_reroute_extending_an_unpublished_attempt", {"HANDOFF_IDENTITY_MISMATCH"}},
      {"mut3_141_a_plan_envelope_naming_another_generation_than_its_identity",
       {"HANDOFF_TRACE_IDENTITY_MISMATCH"}},
      {"mut3_143_a_refused_reservation_the_replay_admits_gates_its_request",
       {"TRACE_OUTCOME_INVALID"}},
      {"mut3_144_a_refused_credit_on_an_unknown_window_is_not_judged",
       {"TRACE_OBSERVATION_INCONSISTENT"}},
      {"mut3_146_a_receive_with_a_malformed_checksum", {"HANDOFF_DIGEST_MALFORMED"}},
      {"mut3_149_a_refused_superseded_validation_does_not_advance_the_epoch", {}},
      {"mut3_151_a_stale_republication_of_a_released_transfer_stops_the_pool_checks",
       {"HANDOFF_IDENTITY_MISMATCH"}},
      {"mut3_152_a_transfer_publish_naming_another_handle", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"mut3_154_a_transfer_publish_naming_another_result_snapshot", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"mut3_156_a_refused_decode_release_the_replay_performed_stops_the_pool_checks",
       {"TRACE_OUTCOME_INVALID"}},
      // Only transfer_publish names a snapshot (probe 85: a validation claiming one passed).
      {"probe85_a_transfer_validate_claiming_a_result_snapshot_passed",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      // An observation naming a transfer event names an event of another type: while the event
      // is among its source's last 32 a wrong cause, the request not gated; beyond them an
      // unknown one (the doc audit of 2026-12-07: trace-format.md said unknown for both).
      {"audit7_an_observation_naming_a_recent_transfer_event", {"TRACE_CAUSE_WRONG_EVENT"}},
      {"audit7_an_observation_naming_a_transfer_event_past_the_window", {"TRACE_CAUSE_UNKNOWN"}},
  };
  for (const auto& [name, want] : cases) {
    const Violations v =
        test::CheckSourceTrace("reference/trace/testdata/transfer_gating/" + name + ".jsonl");
    EXPECT_EQ(test::AllCodeNames(v), want) << name << "\n" << test::Describe(v);
  }
}

// Second mutation audit, survivors 131 and 156: the second violation they let through has the
// code of the first (the table above compares every code, repeats included): each trace raises
// exactly one violation, at the member named here.
TEST(TransferEventsTest, MutantAWindowOrPoolNoLongerKnownIsJudgedOnce) {
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> cases = {
      {"mut3_131_a_wrong_in_flight_claim_stops_the_window_checks",
       {"TRACE_OBSERVATION_INCONSISTENT", "/9/payload/in_flight_bytes"}},
      {"mut3_156_a_refused_decode_release_the_replay_performed_stops_the_pool_checks",
       {"TRACE_OUTCOME_INVALID", "/13/outcome"}},
  };
  for (const auto& [name, at] : cases) {
    const Violations v =
        test::CheckSourceTrace("reference/trace/testdata/transfer_gating/" + name + ".jsonl");
    EXPECT_TRUE(test::OnlyViolationAt(v, at.first, at.second)) << name;
  }
}

// Mutation audit 4: no transfer event but transfer_publish produces a snapshot, so a
// result_snapshot on any of them is TRACE_SNAPSHOT_MISMATCH at that member (probe 85 pinned
// transfer_validate only; a type left unwrapped passed). Each type's first event in two
// conforming traces, given a result_snapshot, is that one violation.
TEST(TransferEventsTest, RegressionNoTransferEventButThePublicationClaimsAResultSnapshot) {
  const std::string dir = "reference/trace/testdata/transfer_gating/";
  // The transfer plane's types (transfer_events.cc kRows) but transfer_publish, and but
  // destination_prefix, which no conforming trace here declares.
  const std::set<std::string> kTypes = {
      "transfer_destination", "kv_ready",     "transfer_plan",      "transfer_reserve",
      "chunk_credit_acquire", "chunk_send",   "chunk_receive",      "chunk_device_visible",
      "transfer_validate",    "decode_admit", "source_release_ack", "decode_release",
      "transfer_abort"};
  std::set<std::string> judged;
  for (const char* name : {"mut3_119_adjacent_kv_ready_slices_cover_a_chunk",
                           "probe85_a_transfer_validate_claiming_a_result_snapshot_passed"}) {
    std::vector<std::string> lines = test::SourceLines(dir + name + ".jsonl");
    for (std::string& line : lines)  // probe 85's own claim removed: the trace conforms
      if (const size_t at = line.find(R"("result_snapshot":1,)"); at != std::string::npos)
        line.erase(at, std::string(R"("result_snapshot":1,)").size());
    auto check = [](const std::vector<std::string>& ls) {
      std::string t;
      for (const std::string& l : ls) t += l + "\n";
      return ValidateTraceJsonl(t, "t.jsonl");
    };
    ASSERT_TRUE(check(lines).empty()) << name << "\n" << test::Describe(check(lines));
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t type_at = lines[i].find(R"("event_type":")");
      if (type_at == std::string::npos) continue;
      const size_t from = type_at + std::string(R"("event_type":")").size();
      const std::string type = lines[i].substr(from, lines[i].find('"', from) - from);
      if (!kTypes.count(type) || !judged.insert(type).second) continue;
      std::vector<std::string> claimed = lines;
      claimed[i].insert(1, R"("result_snapshot":7,)");
      const Violations v = check(claimed);
      EXPECT_TRUE(test::OnlyViolationAt(v, "TRACE_SNAPSHOT_MISMATCH",
                                        "/" + std::to_string(i) + "/result_snapshot"))
          << type << " (" << name << " line " << i + 1 << ")\n"
          << test::Describe(v);
    }
  }
  EXPECT_EQ(judged, kTypes);
}

// Probes 13 and 14: a transfer gated outside its own handler (its event dropped by the core, or
// its request gated), or gated while PLANNED, was aborted (or left PLANNED) but stayed counted
// open, so its record, destination handle and
// lifecycle transaction were kept to the end of the trace (200,000 such transfers: 829 MB).
// Aborted, it joins the window of finished transfers.
TEST(TransferEventsTest, RegressionTransfersGatedByTheCoreAreForgottenLikeOthers) {
  CheckerOptions opt;
  opt.released_window = 8;
  TwoSourceTrace trace = WithDestination(4096, 1000);
  for (int i = 0; i < 50; ++i) {
    const std::string r = "q" + std::to_string(i);
    KvReady(trace, r, 0, 4);
    if (i % 2 == 0)
      PlanOneChunk(trace, r, 4);  // gated while TRANSFERRING
    else
      PlanTransfer(trace, r, 4, "x" + r);  // gated while PLANNED (probe 14)
    trace.ev("P", "x" + r, "chunk_send", R"("payload":{"chunk_id":7})");  // dropped
  }
  TraceChecker c("t.jsonl", opt);
  for (size_t i = 0; i < trace.out.size(); ++i) c.Feed(trace.out[i], static_cast<uint32_t>(i + 1));
  const TransferRecords kept = TransferFootprint(c);
  EXPECT_LE(kept.transfers, 8u);
  EXPECT_EQ(kept.forgotten, 42u);
  EXPECT_EQ(c.Finish(false).size(), 50u);  // one INPUT_FIELD_TYPE per transfer
}

// Regression (adversarial probe, 2026-12-04): every finished transfer's record (its plan, chunk
// states, plan facts, received checksums, three copies of the published handle) and its
// destination handle with its lifecycle transaction were kept to the end of the trace (~6.7 KB
// per one-chunk transfer: 10k / 20k / 40k published transfers peaked at 82 / 148 / 279 MB).
// Only the last released_window finished transfers are kept now, with their destination
// handles and their requests' generation fences.
TEST(TransferEventsTest, RegressionFinishedTransfersAreKeptForAWindowOnly) {
  CheckerOptions opt;
  opt.released_window = 8;
  TwoSourceTrace trace = WithDestination(4096, 1000);
  // 50 published transfers, 50 aborted ones (reserved and sent first), then one more aborted.
  PublishMany(trace, "p", 50);
  for (int i = 0; i < 50; ++i) {
    const std::string r = "a" + std::to_string(i);
    KvReady(trace, r, 0, 4);
    PlanOneChunk(trace, r, 4);
    trace.ev("P", "x" + r, "chunk_send", R"("payload":{"chunk_id":"c0"})");
    trace.ev("P", "x" + r, "transfer_abort", R"("payload":{"reason":"r"})");
  }
  KvReady(trace, "last", 0, 4);
  PlanOneChunk(trace, "last", 4);
  trace.ev("P", "xlast", "transfer_abort", R"("payload":{"reason":"r"})");
  TraceChecker c("t.jsonl", opt);
  const Violations& v = Replay(c, trace.out);
  ASSERT_TRUE(v.empty()) << test::Describe(v);
  const TransferRecords kept = TransferFootprint(c);
  EXPECT_EQ(kept.transfers, 8u);  // 101 before the fix
  EXPECT_EQ(kept.finished, 8u);
  EXPECT_EQ(kept.forgotten, 93u);
  EXPECT_LE(kept.directory_requests, 8u);                 // 101 before
  EXPECT_LE(kept.destination_handles, 8u);                // 101 before
  EXPECT_LE(kept.destination_txns, 8u);                   // 101 before
  EXPECT_FALSE(SummarizeTransfer(c, "xp0").has_value());  // forgotten
  auto last = SummarizeTransfer(c, "xlast");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->state, "ABORTED");
  EXPECT_EQ(last->credits_in_flight_at_end, 0u);
}

// The late events of a finished transfer are judged as before while it is among the last
// released_window finished transfers: a refused late completion after an abort, an idempotent
// re-send and re-publication, another delivery with other bytes, a reservation below the
// request's generation fence. After the window its record is forgotten: an event naming it is
// HANDOFF_TRANSFER_UNKNOWN (whose message says the record may be forgotten), and its request's
// generation fence is gone with it. Fails on the code before the window (no event is unknown).
TEST(TransferEventsTest, RegressionLateEventsOfAForgottenTransferNameAnUnknownTransfer) {
  auto run = [](int others, size_t window) {
    CheckerOptions opt;
    opt.released_window = window;
    TwoSourceTrace trace = WithDestination(4096, 1000);
    KvReady(trace, "A", 0, 4);
    PlanOneChunk(trace, "A", 4);
    trace.ev("P", "xA", "chunk_send", R"("payload":{"chunk_id":"c0"})");
    trace.ev("P", "xA", "transfer_abort", R"("payload":{"reason":"r"})");  // finishes first
    KvReady(trace, "B", 0, 4);
    PlanOneChunk(trace, "B", 4);
    SendAndPublish(trace, "B", 4);  // finishes second
    PublishMany(trace, "f", others);
    // A late completion after xA's abort, refused by the runtime too.
    trace.ev("D", "xA", "chunk_receive",
             R"("outcome":"rejected","payload":{"chunk_id":"c0","checksum":")" +
                 std::string(64, 'b') + R"("})");
    // xB's retries: a re-send, a re-publication, then another delivery with other bytes.
    trace.ev("P", "xB", "chunk_send", R"("payload":{"chunk_id":"c0"})");
    trace.ev("D", "xB", "transfer_publish",
             R"("payload":{"cache_handle_id":"B@g1","committed_length":4})");
    trace.ev("D", "xB", "chunk_receive",
             R"("payload":{"chunk_id":"c0","checksum":")" + std::string(64, 'c') + R"("})");
    // Another attempt of B under B's generation 1: the runtime refuses its reservation.
    PlanTransfer(trace, "B", 4, "xB2", /*attempt=*/2);
    trace.ev("D", "xB2", "transfer_reserve", R"("outcome":"rejected","payload":{})");
    trace.ev("P", "xB2", "transfer_abort", R"("payload":{"reason":"stale"})");
    TraceChecker c("t.jsonl", opt);
    return Replay(c, trace.out);
  };
  using V = std::vector<std::string>;
  auto codes = [](const Violations& v) {  // every violation's code, in order
    V out;
    for (const auto& x : v) out.emplace_back(ErrorCodeName(x.code));
    return out;
  };
  // Nothing forgotten (the default window): the verdicts of the code before the window.
  const Violations before = run(6, CheckerOptions{}.released_window);
  ASSERT_EQ(codes(before), V{"HANDOFF_DUPLICATE_CORRUPTION"}) << test::Describe(before);
  // Inside the window (xA and xB among the last 8 finished transfers): the same violations.
  const Violations inside = run(6, 8);
  ASSERT_EQ(test::Describe(inside), test::Describe(before));
  // xA is the 9th-last finished transfer: forgotten; xB is kept.
  const Violations edge = run(7, 8);
  ASSERT_EQ(codes(edge), (V{"HANDOFF_TRANSFER_UNKNOWN", "HANDOFF_DUPLICATE_CORRUPTION"}))
      << test::Describe(edge);
  EXPECT_EQ(edge[1].line, before[0].line + 9);  // (the 9 lines of the 7th other transfer)
  // Both forgotten: each late event names an unknown transfer; a rejected one gates nothing, the
  // re-send gates xB (its later events are not judged). B's generation fence went with xB, and
  // xB's publication, forgotten before any decode_release, returned its blocks and left the pool
  // unjudged, so the runtime's refusal of xB2's reservation is not judged (until probe 12 it was
  // TRACE_OUTCOME_INVALID: the fence was gone, and nothing else refused it).
  const Violations after = run(8, 8);
  ASSERT_EQ(codes(after), (V{"HANDOFF_TRANSFER_UNKNOWN", "HANDOFF_TRANSFER_UNKNOWN"}))
      << test::Describe(after);
  for (size_t i : {size_t{0}, size_t{1}})
    EXPECT_NE(after[i].message.find("before the last 8 finished transfers, and its record is no "
                                    "longer kept"),
              std::string::npos)
        << after[i].message;
  EXPECT_EQ(after[0].message.find("not replayed"), std::string::npos) << after[0].message;
  EXPECT_NE(after[1].message.find("not replayed"), std::string::npos) << after[1].message;
}

// Regression (an adversarial probe, 2026-12-04): the registry's HANDOFF_TRACE_INTERVAL_INVALID
// ("a trace event ends before it starts, or names an undeclared layer") covered only the layer;
// a reversed readiness interval was the generic INPUT_VALUE_OUT_OF_RANGE.
TEST(TransferEventsTest, RegressionAReversedReadinessIntervalIsATraceIntervalFault) {
  EXPECT_EQ(CodesAfter(kFixture, R"("layer":3,"interval")", R"("interval":[0,16])",
                       R"("interval":[16,0])"),
            std::vector<std::string>{"HANDOFF_TRACE_INTERVAL_INVALID"});
}

// The messages of the refusals whose facts sit on other lines name those lines (a vendor's
// cold read, 2026-12-03: "sent at 38 before its K/V was ready at 39" read as times, a checksum
// mismatch at validation did not say which receive brought the bytes, an ABI mismatch did not
// say where either ABI came from).
TEST(TransferEventsTest, TransferRefusalsNameTheLinesTheyCompare) {
  auto only = [](std::vector<std::string> lines, size_t line, const std::string& from,
                 const std::string& to) {
    const size_t at = lines[line - 1].find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) lines[line - 1].replace(at, from.size(), to);
    TraceChecker c(kFixture);
    const Violations v = Replay(c, lines);
    EXPECT_EQ(v.size(), 1u) << test::Describe(v);
    return v.empty() ? Violation{} : v[0];
  };
  const std::vector<std::string> lines = test::SourceLines(kFixture);
  ASSERT_NE(lines[28].find(R"("chunk_id":"c3","checksum":"262e06)"), std::string::npos);
  Violation v = only(lines, 29, "262e06", "aaaaaa");
  EXPECT_EQ(v.code, ErrorCode::HANDOFF_CHECKSUM_MISMATCH);
  EXPECT_NE(v.message.find(R"(chunk "c3" was received at line 29; the manifest is the )"
                           R"(transfer_plan at line 5)"),
            std::string::npos)
      << v.message;
  ASSERT_NE(lines[25].find(R"("event_type":"kv_ready")"), std::string::npos);
  v = only(lines, 26, R"("interval":[0,16])", R"("interval":[0,8])");
  EXPECT_EQ(v.code, ErrorCode::HANDOFF_PRODUCER_GATE);
  EXPECT_NE(v.message.find("do not cover layer 2 tokens [8,16) (token 8 is not yet ready"),
            std::string::npos)
      << v.message;
  EXPECT_EQ(v.message.find("ready at"), std::string::npos) << v.message;
  v = only(lines, 5, R"("tensor_abi_sha256":"b5e9)", R"("tensor_abi_sha256":"05e9)");
  EXPECT_EQ(v.code, ErrorCode::HANDOFF_ABI_MISMATCH);
  EXPECT_NE(v.message.find("transfer_plan at line 5"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("cache_abi.id"), std::string::npos) << v.message;
}

// Regression (an adversarial probe, 2026-12-03): a second transfer_plan of a transfer was an
// "idempotent retry" when only its geometry (token range, bytes per token-layer, reserved blocks,
// the chunks' layers, tokens and bytes) or its request differed, so a re-plan could change them
// unchecked. A re-plan must now repeat every field of its plan.
TEST(TransferEventsTest, RegressionARePlanMustRepeatItsPlanExactly) {
  // The fixture with a copy of the g7 plan (line 5) sent again right after it, `from` replaced
  // by `to` in the copy (twice where it occurs twice: the envelope's request_id and the
  // identity's); router-0's later event is renumbered.
  auto replan = [](const std::string& from, const std::string& to) {
    std::vector<std::string> lines = test::SourceLines(kFixture);
    std::string copy = lines[4];
    auto swap = [](std::string& l, const std::string& a, const std::string& b) {
      const size_t at = l.find(a);
      EXPECT_NE(at, std::string::npos) << a;
      if (at != std::string::npos) l.replace(at, a.size(), b);
    };
    swap(copy, R"("event_id":"router-0:1")", R"("event_id":"router-0:1r")");
    swap(copy, R"("local_sequence":1,)", R"("local_sequence":2,)");
    if (!from.empty()) swap(copy, from, to);
    if (!from.empty() && copy.find(from) != std::string::npos) swap(copy, from, to);  // identity
    swap(lines[6], R"("local_sequence":2,)", R"("local_sequence":3,)");
    lines.insert(lines.begin() + 5, copy);
    TraceChecker c(kFixture);
    return test::CodeNames(Replay(c, lines));
  };
  using V = std::vector<std::string>;
  ASSERT_EQ(replan("", ""), V{});  // identical: a retry
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {R"("token_count":16)", R"("token_count":15)"},
           {R"("reserved_blocks":)", R"("reserved_blocks":1)"},
           {R"("bytes":1024)", R"("bytes":1023)"},
           {R"("layer":3)", R"("layer":2)"},
           {R"("request_id":"req-42")", R"("request_id":"req-43")"},
           {R"("generation":7)", R"("generation":8)"}})
    EXPECT_EQ(replan(from, to), V{"HANDOFF_DUPLICATE_CORRUPTION"}) << from << " -> " << to;
}

TEST(TransferEventsTest, TransferEventFromASemanticSourceIsRejected) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  // Declare decode-0 as a semantic source: its transfer events name the wrong plane.
  const std::string from = R"({"source_instance":"decode-0","source_component":"transfer")";
  auto at = lines[0].find(from);
  ASSERT_NE(at, std::string::npos);
  lines[0].replace(at, from.size(),
                   R"({"source_instance":"decode-0","source_component":"semantic")");
  TraceChecker c(kFixture);
  const Violations& v = Replay(c, lines);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(test::CodeNames(v)[0], "TRACE_SOURCE_UNDECLARED") << test::Describe(v);
}

// Regression (a vendor's cold read, 2026-12-03): a transfer's events after its plan may leave
// out the request. When the request was gated (here by a kv_ready that cannot be read), the
// transfer's later events were still replayed: a chunk_send broke the producer gate, or, with
// the kv_ready before the plan, every event of the transfers was HANDOFF_TRANSFER_UNKNOWN.
TEST(TransferEventsTest, RegressionAGatedRequestsTransfersAreGatedWithoutItsRequestId) {
  std::vector<std::string> lines = test::SourceLines(kFixture);
  size_t kv_ready = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string& l = lines[i];
    if (l.find(R"("event_type":"kv_ready")") != std::string::npos) {
      if (kv_ready == 0) kv_ready = i;
      continue;
    }
    if (l.find(R"("event_type":"transfer_plan")") != std::string::npos) continue;
    if (size_t at = l.find(R"("request_id":"req-42",)"); at != std::string::npos)
      l.erase(at, std::string(R"("request_id":"req-42",)").size());
  }
  ASSERT_NE(kv_ready, 0u);
  {
    TraceChecker c("t.jsonl");
    EXPECT_EQ(test::CodeNames(Replay(c, lines)), std::vector<std::string>{});
  }
  lines[kv_ready].replace(lines[kv_ready].find(R"("interval":[0,16])"), 17, R"("interval":null)");
  {
    TraceChecker c("t.jsonl");
    EXPECT_EQ(test::CodeNames(Replay(c, lines)), std::vector<std::string>{"INPUT_FIELD_TYPE"});
  }
  const std::string early = lines[kv_ready];
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(kv_ready));
  lines.insert(lines.begin() + 1, early);  // before the plans
  TraceChecker c("t.jsonl");
  EXPECT_EQ(test::CodeNames(Replay(c, lines)), std::vector<std::string>{"INPUT_FIELD_TYPE"});
}

// An empty transfer id was accepted by transfer_plan and refused only at transfer_reserve, by the
// destination's append ("append: empty txn id", at the reservation's line): the root cause is
// the plan, which is refused, and the transfer's later events are gated.
TEST(TransferEventsTest, RegressionAnEmptyTransferIdIsRefusedAtItsPlan) {
  TwoSourceTrace trace = WithDestination(4096, 4);
  KvReady(trace, "r1", 0, 4);
  PlanOneChunk(trace, "r1", 4);
  SendAndPublish(trace, "r1", 4);
  for (std::string& l : trace.out)
    if (size_t at = l.find(R"("operation_id":"xr1")"); at != std::string::npos)
      l.replace(at, 20, R"("operation_id":"")");
  TraceChecker c("t.jsonl");
  const Violations& v = Replay(c, trace.out);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_VALUE_INVALID"})
      << test::Describe(v);
  EXPECT_EQ(v[0].line, 4u);  // header, destination, kv_ready, the plan
  EXPECT_EQ(v[0].pointer, "/3/operation_id");
}

// Regression (probe 60, 2026-12-05): each transfer_plan compared its identity with every kept
// attempt of its request, so 20,000 open attempts of one request took 30 s and a request
// retried past the finished-transfer window 450 us per plan. The rules are judged through an
// index of the kept attempts (MayBreakIdentityRules) and the scan runs only when a rule may be
// broken. Differential: random attempt histories (tenant, attempt number, reservation, prompt
// end; left open, aborted or published; windows of 2 to 64 finished transfers) raise the same
// violations, byte for byte, with the index as with a scan at every plan, and the histories
// break every rule the scan names somewhere.
TEST(TransferEventsTest, RegressionPlanIdentityIndexJudgesAsTheScan) {
  constexpr uint32_t kSeed = 20261205;
  constexpr int kTraces = 300;
  std::mt19937 rng(kSeed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  std::map<std::string, int> fields;  // the identity rules' pointers the histories broke
  for (int t = 0; t < kTraces; ++t) {
    TwoSourceTrace trace = WithDestination(1 << 20, 1 << 12);
    const int plans = 2 + pick(40);
    std::map<std::string, int> attempts;
    for (int i = 0; i < plans; ++i) {
      const std::string request = "r" + std::to_string(pick(3));
      const std::string x = "x" + std::to_string(i);
      const std::string tenant = pick(20) == 0 ? "u" : "t";
      const int attempt = (attempts[request] += pick(8) == 0 ? 0 : 1 + pick(2));
      const std::string identity = R"({"tenant":")" + tenant + R"(","request_id":")" + request +
                                   R"(","generation":1,"attempt":)" + std::to_string(attempt) +
                                   R"(,"source_worker_epoch":1,"destination_worker_epoch":1,)"
                                   R"("reservation_id":"res)" +
                                   std::to_string(pick(4)) + R"("})";
      const int tokens = pick(6) == 0 ? 8 + 8 * pick(3) : 16;
      const std::string n = std::to_string(tokens);
      KvReady(trace, request, 0, tokens);
      trace.ev("P", x, "transfer_plan",
               R"("request_id":")" + request + R"(","payload":{"destination":"d0","identity":)" +
                   identity + R"(,"tensor_abi_sha256":")" + trace.abi +
                   R"(","token_start":0,"token_count":)" + n +
                   R"(,"bytes_per_token_layer":64,"reserved_blocks":1,)" +
                   R"("chunks":[{"chunk_id":"c0","layer":0,"token_start":0,"token_count":)" + n +
                   R"(,"bytes":)" + std::to_string(64 * tokens) + R"(,"checksum":")" +
                   std::string(64, 'b') + R"("}]})");
      switch (pick(3)) {
        case 0:  // left open
          break;
        case 1:
          trace.ev("P", x, "transfer_abort", R"("payload":{"reason":"r"})");
          break;
        default:
          trace.ev("D", x, "transfer_reserve", R"("payload":{})");
          trace.ev("P", x, "chunk_credit_acquire", R"("payload":{"chunk_id":"c0"})");
          trace.ev("P", x, "chunk_send", R"("payload":{"chunk_id":"c0"})");
          trace.ev("D", x, "chunk_receive",
                   R"("payload":{"chunk_id":"c0","checksum":")" + std::string(64, 'b') + R"("})");
          trace.ev("D", x, "chunk_device_visible", R"("payload":{"chunk_id":"c0"})");
          trace.ev("D", x, "transfer_validate",
                   R"("payload":{"expected_identity":)" + identity + "}");
          trace.ev("D", x, "transfer_publish",
                   R"("payload":{"cache_handle_id":")" + request + R"(@g1","committed_length":)" +
                       n + "}");
          trace.ev("D", x, "decode_release", R"("payload":{})");
      }
    }
    CheckerOptions indexed, scanned;
    indexed.released_window = scanned.released_window = size_t{2} << pick(6);
    scanned.transfer_identity_index = false;
    TraceChecker a("t.jsonl", indexed);
    TraceChecker b("t.jsonl", scanned);
    const std::string va = test::Describe(Replay(a, trace.out));
    const std::string vb = test::Describe(Replay(b, trace.out));
    ASSERT_EQ(va, vb) << "seed " << kSeed << ", trace " << t;
    for (const auto& v : a.violations())
      if (v.code == ErrorCode::HANDOFF_IDENTITY_MISMATCH)
        ++fields[v.pointer.substr(v.pointer.rfind("/payload/"))];
  }
  // Every rule the scan names was broken by some history (else the comparison proves little).
  for (const char* f : {"/payload/identity/tenant", "/payload/identity/attempt",
                        "/payload/identity/reservation_id", "/payload/token_count"})
    EXPECT_GT(fields[f], 0) << f;
}

}  // namespace
}  // namespace kvc::trace
