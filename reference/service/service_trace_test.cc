// The service-trace oracle: the worked A/B trace derived from its events alone, the policy-
// free state view, and the partial-prefill projection.
#include "reference/service/service_trace.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "reference/base/canonical_json.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

const char* kAb = "fixtures/m5_1/service/ab_worked_trace.json";
const char* kPartial = "fixtures/m5_1/service/partial_prefill_trace.json";
const char* kRepair = "fixtures/m5_1/service/repair_after_finish_trace.json";

// The trace with every expected field removed: metrics can only come from the events.
Json InputsOnly(const char* path) {
  Json doc = test::LoadJson(path);
  doc.erase("expected_metrics");
  for (auto& e : doc["events"]) e.erase("view");
  return doc;
}

TEST(ServiceTrace, WorkedTraceMetricsDeriveFromTheEvents) {
  auto m = DeriveServiceMetrics(InputsOnly(kAb));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const RequestMetrics& a = m->requests.at("A");
  const RequestMetrics& b = m->requests.at("B");
  EXPECT_EQ(a.ttft, 14u);
  EXPECT_EQ(b.ttft, 13u);
  EXPECT_EQ(a.tpot, (Rational{28, 3}));
  EXPECT_FALSE(b.tpot.has_value());
  EXPECT_EQ(a.tbt, (std::vector<uint64_t>{7, 9, 12}));
  EXPECT_EQ(a.release_lag, 8u);
  EXPECT_EQ(b.release_lag, 1u);
  EXPECT_EQ(m->aggregate.request_goodput, (Rational{10, 1}));
  EXPECT_EQ(m->aggregate.throughput, (Rational{20, 1}));
  EXPECT_EQ(m->aggregate.kv_byte_time, 14080u);
  EXPECT_EQ(m->time_unit, "ms");
}

TEST(ServiceTrace, WorkedAndPartialPrefillFixturesAreValid) {
  for (const char* f : {kAb, kPartial}) {
    Violations v = ValidateServiceTrace(test::LoadJson(f));
    EXPECT_TRUE(v.empty()) << f << "\n" << test::Describe(v);
  }
}

// Probe 55: a byte-time beyond 2^53 (byte count x clock span) was out of range in a document,
// though the calculator computes it exactly; and an op typo also made its operands unknown.
TEST(ServiceTrace, RegressionByteTimeBeyond2To53AndAnOpTypo) {
  Violations v =
      ValidateServiceTrace(test::LoadJson("reference/service/testdata/byte_time_beyond_2_53.json"));
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  Json doc = test::LoadJson(kAb);
  doc["events"][5]["op"] = "emitt";
  v = ValidateServiceTrace(doc);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/events/5/op");
}

TEST(ServiceTrace, PartialPrefillChunkReturnsToWaitingPrefill) {
  Json doc = test::LoadJson(kPartial);
  // After the first 3-row chunk of the 4-row prompt the projection must say WAITING_PREFILL
  // with one prompt row remaining: validate a view that claims so.
  ASSERT_EQ(doc["events"][2]["op"], "prefill_publish");
  ASSERT_EQ(doc["events"][2]["rows"], 3);
  Json view = doc["events"][2]["view"];
  view["phase"] = "WAITING_PREFILL";
  view["eligible_work"] = "PREFILL_ROWS_AVAILABLE";
  view["prompt_rows_remaining"] = 1;
  view["committed_tokens"] = 3;
  view["logical_payload_bytes"] = 3 * 64;
  doc["events"][2]["view"] = view;
  EXPECT_TRUE(ValidateServiceTrace(doc).empty()) << test::Describe(ValidateServiceTrace(doc));
  doc["events"][2]["view"]["phase"] = "OUTPUT_READY";
  EXPECT_EQ(test::CodeNames(ValidateServiceTrace(doc)), std::vector<std::string>{"SERVICE_VIEW_DRIFT"});
}

TEST(ServiceStateView, EveryForbiddenPolicyFieldIsRejected) {
  Json doc = test::LoadJson(kAb);
  for (std::string_view f : kForbiddenPolicyFields) {
    Json view = doc["events"][5]["view"];
    view[std::string(f)] = 1;
    Violations v;
    EXPECT_FALSE(ReadServiceStateView(view, "/v", &v).has_value());
    EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"SERVICE_POLICY_FIELD_IN_STATE"}) << f;
  }
}

TEST(ServiceStateView, RoundTripsThroughJson) {
  Json view = test::LoadJson(kAb)["events"][5]["view"];
  Violations v;
  auto parsed = ReadServiceStateView(view, "/v", &v);
  ASSERT_TRUE(parsed.has_value()) << test::Describe(v);
  EXPECT_EQ(parsed->phase, ServicePhase::kDecodeFrontierReady);
  EXPECT_EQ(ServiceStateViewToJson(*parsed), view);
}

TEST(ServiceTrace, UnreplayableTraceNamesTheFirstViolation) {
  Json doc = InputsOnly(kAb);
  doc["events"][10]["token"] = "a1";
  auto m = DeriveServiceMetrics(doc);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("FRONTIER_TOKEN_MISMATCH"), std::string::npos);
  EXPECT_EQ(m.status().error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);  // for the JSON report
}

// Regressions from an adversarial probe (2026-12-04): the declared metrics had no form. A string
// TPOT was SERVICE_TPOT_UNDEFINED_AS_ZERO, an unknown member of a rational and a zero
// denominator were SERVICE_METRIC_DRIFT, and a byte-time beyond 2^53 passed (every field of a
// fixture is I-JSON). Each is now the input code at its member, before any value is compared.
TEST(ServiceTrace, RegressionDeclaredMetricsAreReadWithTheirForm) {
  struct Case {
    std::string path;  // under expected_metrics
    Json value;
    std::string code;
    std::string pointer;
  };
  const std::vector<Case> cases = {
      {"/requests/B/tpot", "undefined", "INPUT_FIELD_TYPE", "/expected_metrics/requests/B/tpot"},
      {"/aggregate/goodput_fraction/x", 1, "INPUT_FIELD_UNKNOWN",
       "/expected_metrics/aggregate/goodput_fraction/x"},
      {"/requests/A/tpot/den", 0, "INPUT_VALUE_OUT_OF_RANGE",
       "/expected_metrics/requests/A/tpot/den"},
      // (A kv_byte_time is read to 2^64 - 1 since probe 55: a byte count times a clock span.)
      {"/requests/A/e2e", (uint64_t{1} << 53) + 1, "INPUT_VALUE_OUT_OF_RANGE",
       "/expected_metrics/requests/A/e2e"},
      {"/requests/A/tbt/1", "9", "INPUT_FIELD_TYPE", "/expected_metrics/requests/A/tbt/1"},
      {"/requests/A/slo_valid", 0, "INPUT_FIELD_TYPE", "/expected_metrics/requests/A/slo_valid"},
      // A defined TPOT (A's is 28/3 ms) as a plain number is the wrong form, the right mean
      // included, not a drifted value (probe 33 finding 04: SERVICE_METRIC_DRIFT).
      {"/requests/A/tpot", 28.0 / 3.0, "INPUT_FIELD_TYPE", "/expected_metrics/requests/A/tpot"},
      {"/requests/A/tpot", 9, "INPUT_FIELD_TYPE", "/expected_metrics/requests/A/tpot"},
  };
  for (const Case& c : cases) {
    Json doc = test::LoadJson(kAb);
    doc["expected_metrics"][Json::json_pointer(c.path)] = c.value;
    const Violations v = ValidateServiceTrace(doc);
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{c.code}) << c.path << test::Describe(v);
    EXPECT_EQ(v[0].pointer, c.pointer);
  }
  // The undefined-as-zero mistake keeps its own code.
  Json doc = test::LoadJson(kAb);
  doc["expected_metrics"]["requests"]["B"]["tpot"] = 0;
  EXPECT_EQ(test::CodeNames(ValidateServiceTrace(doc)),
            std::vector<std::string>{"SERVICE_TPOT_UNDEFINED_AS_ZERO"});
}

// Regression (an adversarial probe, 2026-12-04): W = 1 ms over a trace of 50 ms gave 2,000
// requests/s with exit 0. The window holds the events it counts (the worked trace: t = 0..50,
// W = 100).
TEST(ServiceTrace, RegressionTheWindowHoldsTheEventsItCounts) {
  Json doc = InputsOnly(kAb);
  doc["window"] = 49;  // the events span t = 0..50
  auto m = DeriveServiceMetrics(doc);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("INPUT_VALUE_OUT_OF_RANGE at '/window'"),
            std::string::npos)
      << m.status().message();
  doc["window"] = 50;
  EXPECT_TRUE(DeriveServiceMetrics(doc).ok());
}

// Probe 78: a decode processing the wrong token was reported in the frontier's token ids ("token
// 0, the unprocessed frontier token is 1"); the message also names the document's tokens.
TEST(ServiceTrace, RegressionATokenMismatchNamesTheDocumentsTokens) {
  Json doc = test::LoadJson(kAb);
  ASSERT_EQ(doc["events"][12]["op"], "decode_publish");
  ASSERT_EQ(doc["events"][12]["token"], "a1");
  doc["events"][12]["token"] = "a0";
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(test::CodeNames(v)[0], "FRONTIER_TOKEN_MISMATCH");
  EXPECT_NE(
      v[0].message.find("the event processes \"a0\", the unprocessed frontier token is \"a1\""),
      std::string::npos)
      << v[0].message;
}

// Probe 78: an event whose t is out of range (reported) counted as t = 0 in the window check,
// which then reported a second, invented span ("t = 0..2^53-50") for a window holding every time
// that was read. (Views are left out here: the check of the window does not read them.)
TEST(ServiceTrace, RegressionAnUnreadableTimeIsNotPartOfTheWindowsSpan) {
  Json doc = InputsOnly(kAb);
  const uint64_t base = (uint64_t{1} << 53) - 100;  // every time near the bound, spanning 50
  for (auto& e : doc["events"]) e["t"] = base + e["t"].get<uint64_t>();
  auto at = [](const Violations& v, const std::string& pointer) {
    return std::count_if(v.begin(), v.end(), [&](const auto& x) { return x.pointer == pointer; });
  };
  EXPECT_EQ(at(ValidateServiceTrace(doc), "/window"), 0);
  doc["events"][0]["t"] = (uint64_t{1} << 53) + 1;  // past the bound: one code, at the time
  const Violations v = ValidateServiceTrace(doc);
  EXPECT_EQ(at(v, "/events/0/t"), 1) << test::Describe(v);
  EXPECT_EQ(at(v, "/window"), 0) << test::Describe(v);
}

// Regression (probe 17, finding 03): a finished request admitted only release, so the seed's
// "repair for reuse" of FINISHED_RETAINED could not be written. repair_publish processes the
// final output after finish; the phase stays FINISHED_RETAINED with one more retained row.
TEST(ServiceTrace, RegressionAFinishedRequestMayRepairItsFinalOutputForReuse) {
  Json doc = test::LoadJson(kRepair);
  ASSERT_EQ(doc["events"][5]["op"], "repair_publish");
  ASSERT_EQ(doc["events"][4]["op"], "finish");
  EXPECT_TRUE(ValidateServiceTrace(doc).empty()) << test::Describe(ValidateServiceTrace(doc));
  auto m = DeriveServiceMetrics(InputsOnly(kRepair));
  ASSERT_TRUE(m.ok()) << m.status().message();
  const RequestMetrics& a = m->requests.at("A");
  EXPECT_EQ(a.e2e, 6u);
  EXPECT_EQ(a.release_lag, 6u);
  EXPECT_FALSE(a.tpot.has_value());
  EXPECT_EQ(a.kv_byte_time, 2u * 64 * 4 + 3u * 64 * 5);  // 2 rows for t 3..7, 3 rows for t 7..12
  // A decode after finish stays illegal; a second repair has no frontier token left.
  Json decode = doc;
  decode["events"][5]["op"] = "decode_publish";
  EXPECT_EQ(test::CodeNames(ValidateServiceTrace(decode)),
            std::vector<std::string>{"SERVICE_PHASE_ILLEGAL"});
  Json twice = doc;
  Json again = twice["events"][5];
  again["t"] = 8;
  twice["events"].insert(twice["events"].begin() + 6, again);
  EXPECT_EQ(test::CodeNames(ValidateServiceTrace(twice)),
            std::vector<std::string>{"FRONTIER_NOTHING_TO_REPAIR"});
}

// Regression (probe 17, finding 05): any view drift stopped the check before the metrics, so
// B's TPOT declared as 0 (the seed's headline mistake) went unreported beside a drifted view.
// The metrics derive from the events, not the views: both are reported.
TEST(ServiceTrace, RegressionAViewDriftDoesNotHideAMetricViolation) {
  Json doc = test::LoadJson(kAb);
  doc["events"][0]["view"]["arrival_time"] = 1;
  doc["expected_metrics"]["requests"]["B"]["tpot"] = {{"num", 0}, {"den", 1}, {"value", 0}};
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_EQ(test::CodeNames(v),
            (std::vector<std::string>{"SERVICE_VIEW_DRIFT", "SERVICE_TPOT_UNDEFINED_AS_ZERO"}))
      << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/events/0/view/arrival_time");
  EXPECT_EQ(v[1].pointer, "/expected_metrics/requests/B/tpot");
  // An open trace has no metrics to compare: only its closure is reported.
  Json open = test::LoadJson(kAb);
  open["events"].erase(open["events"].size() - 1);  // A never releases
  open["expected_metrics"]["requests"]["B"]["tpot"] = 0;
  const Violations o = ValidateServiceTrace(open);
  EXPECT_EQ(test::CodeNames(o), std::vector<std::string>{"SERVICE_TERMINAL_STATE_OPEN"})
      << test::Describe(o);
}

// A mutation audit of the M5.1 0x02/0x03/0x05 calculators (2026-12-05, helper 97: 99 single-point
// mutants of reference/ledger/, reference/saved_work/, reference/service/ and
// reference/frontier/phase.cc; 40 survived every test and the suite, 35 of them real gaps). Each
// test below fails under the mutant its comment names (checked against the mutant's library).

// Mutation audit 2026-12-05 (M71): a service request declaring no outputs is
// SERVICE_REQUEST_INVALID (the mutant reported SERVICE_TERMINAL_STATE_OPEN instead).
TEST(ServiceTraceRules, ServiceRequestWithoutOutputsIsRequestInvalid) {
  Json doc = test::LoadJson(kAb);
  doc["requests"].push_back(Json::parse(
      R"({"request_id": "C", "handle_generation": 1, "prompt_tokens": 1, "outputs": []})"));
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_REQUEST_INVALID", "/requests/2/outputs"));
}

// Mutation audit 2026-12-05 (M72): a service request id declared twice is SERVICE_REQUEST_INVALID
// (the mutant replayed it, counted B twice in the aggregates and reported SERVICE_METRIC_DRIFT;
// calc printed them).
TEST(ServiceTraceRules, ServiceDuplicateRequestIdIsRequestInvalid) {
  Json doc = test::LoadJson(kAb);
  doc["requests"].push_back(doc["requests"][1]);
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_REQUEST_INVALID", "/requests/2/request_id"));
  EXPECT_EQ(DeriveServiceMetrics(doc).status().error(), ErrorCode::SERVICE_REQUEST_INVALID);
}

// A request id of 100 KB declared twice is named by its first 80 bytes and its length, not
// quoted whole (the service reader quoted request ids and tokens at any length; 2026-12-07).
TEST(ServiceTraceRules, RegressionALongDuplicateRequestIdIsQuotedClipped) {
  Json doc = test::LoadJson(kAb);
  const std::string id(100000, 'r');
  doc["requests"][0]["request_id"] = id;
  doc["requests"][1]["request_id"] = id;
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_REQUEST_INVALID", "/requests/1/request_id"))
      << test::Describe(v);
  EXPECT_EQ(v[0].message,
            "request id \"" + std::string(80, 'r') + "...\" (100000 bytes) is declared twice");
}

// An unreadable trace's status names its first violation within the report limits: the pointer
// of a 10 KB unknown member was quoted whole in DeriveServiceMetrics' message (2026-12-07).
TEST(ServiceTraceRules, RegressionTheFirstViolationsStatusKeepsTheReportLimits) {
  Json doc = test::LoadJson(kAb);
  doc["requests"][0][std::string(10000, 'x')] = 1;
  const auto m = DeriveServiceMetrics(doc);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().error(), ErrorCode::INPUT_FIELD_UNKNOWN)
      << m.status().message().substr(0, 200);
  EXPECT_LE(m.status().message().size(), kMaxReportedMessageBytes + 600);
  EXPECT_NE(m.status().message().find("... (10012 bytes)"), std::string::npos)
      << m.status().message().substr(0, 700);
}

// Mutation audit 2026-12-05 (M74): a second arrive of a service request is
// SERVICE_WORK_BEFORE_ARRIVAL (the mutant reset the request and accepted the trace).
TEST(ServiceTraceRules, ServiceSecondArriveIsRejected) {
  Json doc = test::LoadJson(kAb);
  doc["events"].insert(doc["events"].begin() + 1, doc["events"][0]);  // A arrives at t 0 again
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_WORK_BEFORE_ARRIVAL", "/events/1/op"));
}

// Mutation audit 2026-12-05 (M76): prefill_begin while an interval is in flight is
// SERVICE_PHASE_ILLEGAL (the mutant overwrote the interval and accepted the trace).
TEST(ServiceTraceRules, ServicePrefillBeginWhileInFlightIsIllegal) {
  Json doc = test::LoadJson(kAb);
  Json again = doc["events"][1];  // A prefill_begin 4 rows at t 2
  again["t"] = 3;
  doc["events"].insert(doc["events"].begin() + 2, again);
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_PHASE_ILLEGAL", "/events/2/op"));
}

// Mutation audit 2026-12-05 (M77): a prefill_begin of 0 rows is LIFECYCLE_APPEND_EMPTY (the mutant
// let the frontier report FRONTIER_CACHE_COUNT_MISMATCH).
TEST(ServiceTraceRules, ServicePrefillBeginOfZeroRowsIsAppendEmpty) {
  Json doc = test::LoadJson(kAb);
  doc["events"][1]["rows"] = 0;
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_APPEND_EMPTY"})
      << test::Describe(v);
}

// Mutation audit 2026-12-05 (M78): a prefill_publish of fewer rows than the in-flight interval is
// SERVICE_PUBLISH_BEFORE_PREFILL_BEGIN (the mutant published 3 of 4 rows and failed later with
// FRONTIER_OUTPUT_BEFORE_LOGITS).
TEST(ServiceTraceRules, ServicePublishOfPartOfTheInFlightIntervalIsRejected) {
  Json doc = test::LoadJson(kAb);
  doc["events"][4]["rows"] = 3;  // A's interval at t 2 selected 4 rows
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_PUBLISH_BEFORE_PREFILL_BEGIN", "/events/4/rows"));
}

// Mutation audit 2026-12-05 (M79): an emitted token other than the declared output is
// SERVICE_OUTPUT_TOKEN_MISMATCH; no test or fixture raised the code (the mutant accepted B emitting
// "bX").
TEST(ServiceTraceRules, ServiceEmitOfAnUndeclaredTokenIsMismatch) {
  Json doc = test::LoadJson(kAb);
  doc["events"][7]["token"] = "bX";  // B's one output is declared "b0"
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_OUTPUT_TOKEN_MISMATCH", "/events/7/token"));
}

// Mutation audit 2026-12-05 (M85): metrics declared for a request id the trace does not declare are
// SERVICE_METRIC_DRIFT.
TEST(ServiceTraceRules, ServiceMetricsForAnUndeclaredRequestAreDrift) {
  Json doc = test::LoadJson(kAb);
  doc["expected_metrics"]["requests"]["Z"] = doc["expected_metrics"]["requests"]["B"];
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_METRIC_DRIFT", "/expected_metrics/requests/Z"));
}

// Regression (2026-12-07): a declared metric that reaches the comparison (its form is right) was
// named by its whole JSON text, so 5,000 inter-token intervals declared for a request's TBT made
// a 10 KB SERVICE_METRIC_DRIFT message; it is clipped and counted. A value of the wrong form is
// refused by its type, unquoted.
TEST(ServiceTraceRules, RegressionADeclaredMetricIsNamedClipped) {
  for (const char* key : {"ttft", "tbt", "tpot", "e2e", "kv_byte_time"}) {
    for (const Json& value : {Json(std::string(10000, 'm')), Json(std::vector<int>(5000, 7))}) {
      Json doc = test::LoadJson(kAb);
      doc["expected_metrics"]["requests"]["A"][key] = value;
      const Violations v = ValidateServiceTrace(doc);
      ASSERT_FALSE(v.empty()) << key;
      for (const Violation& x : v) EXPECT_LT(x.message.size(), 1000u) << key << ": " << x.message;
    }
  }
  Json doc = test::LoadJson(kAb);
  doc["expected_metrics"]["requests"]["A"]["tbt"] = std::vector<int>(5000, 7);
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_METRIC_DRIFT", "/expected_metrics/requests/A/tbt"))
      << test::Describe(v);
  EXPECT_NE(v[0].message.find(", declared [7,7,"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("... (10001 bytes)"), std::string::npos) << v[0].message;
}

// Mutation audit 2026-12-05 (M86): committed * B_token beyond 64 bits is INPUT_ARITHMETIC_OVERFLOW
// at the publication (B_token 2^53, 4096 prompt rows). The mutant projected a saturated 2^64 - 1
// payload, raised view drift, and calc service-metrics exited 2 with an unregistered error.
TEST(ServiceTraceRules, ServicePayloadOverflowIsReportedAtThePublication) {
  Json doc = test::LoadJson(kAb);
  doc["cache_abi"]["num_cache_layers"] = uint64_t{1} << 48;  // 2^48 * 2 * 4 * (2 + 2) = 2^53
  doc["cache_abi_sha256"] = CanonicalSha256(doc["cache_abi"]).value();
  doc["bytes_per_token"] = uint64_t{1} << 53;
  doc["requests"] = Json::parse(
      R"([{"request_id": "A", "handle_generation": 1, "prompt_tokens": 4096, "outputs": ["a0"]}])");
  const Json view = doc["events"][0]["view"];  // never reached: replay stops at the overflow
  doc["events"] = Json::parse(R"([{"t": 0, "request": "A", "op": "arrive"},
      {"t": 1, "request": "A", "op": "prefill_begin", "rows": 4096},
      {"t": 2, "request": "A", "op": "prefill_publish", "rows": 4096},
      {"t": 3, "request": "A", "op": "emit", "output_index": 0, "token": "a0"},
      {"t": 4, "request": "A", "op": "finish"}, {"t": 5, "request": "A", "op": "release"}])");
  for (Json& e : doc["events"]) e["view"] = view;
  Json metrics = doc["expected_metrics"];
  metrics["requests"] = Json{{"A", metrics["requests"]["B"]}};
  doc["expected_metrics"] = metrics;
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_ARITHMETIC_OVERFLOW", "/events/2"));
  EXPECT_EQ(DeriveServiceMetrics(doc).status().error(), ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
}

// Mutation audit 2026-12-05 (M87): an emit while a prefill interval is in flight is
// FRONTIER_OUTPUT_BEFORE_LOGITS whatever its output_index (the mutant reported
// FRONTIER_OUTPUT_INDEX_GAP for index 1).
TEST(ServiceTraceRules, ServiceEmitWhilePrefillInFlightIsBeforeLogits) {
  Json doc = test::LoadJson(kAb);
  Json emit = Json::parse(R"({"t": 3, "request": "A", "op": "emit", "output_index": 1,
      "token": "a1"})");
  emit["view"] = doc["events"][1]["view"];
  doc["events"].insert(doc["events"].begin() + 2, emit);  // A's 4-row interval is in flight
  const Violations v = ValidateServiceTrace(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "FRONTIER_OUTPUT_BEFORE_LOGITS", "/events/2/op"));
}

// Regressions from a cold-read audit of 0x03 and 0x05 (2026-12-07, probe 92).

// F4: "Adding them to the request object would hide policy inside state" (M5.1 0x05): a
// decision field on a request declaration was INPUT_FIELD_UNKNOWN, as on an event; both are
// SERVICE_POLICY_FIELD_IN_STATE, as on a view.
TEST(ServiceTraceRules, RegressionAPolicyFieldOnARequestIsPolicyInState) {
  for (std::string_view f : kForbiddenPolicyFields) {
    Json doc = test::LoadJson(kAb);
    doc["requests"][0][std::string(f)] = 1;
    EXPECT_TRUE(test::OnlyViolationAt(ValidateServiceTrace(doc), "SERVICE_POLICY_FIELD_IN_STATE",
                                      "/requests/0/" + std::string(f)));
    doc = test::LoadJson(kAb);
    doc["events"][3][std::string(f)] = 1;
    EXPECT_TRUE(test::OnlyViolationAt(ValidateServiceTrace(doc), "SERVICE_POLICY_FIELD_IN_STATE",
                                      "/events/3/" + std::string(f)));
  }
  // The message names the object that holds the decision (mutation audit 4).
  Json named = test::LoadJson(kAb);
  named["requests"][0]["priority"] = 1;
  named["events"][3]["priority"] = 1;
  const Violations v = ValidateServiceTrace(named);
  ASSERT_EQ(v.size(), 2u) << test::Describe(v);
  EXPECT_NE(v[0].message.find("in a request declaration"), std::string::npos) << v[0].message;
  EXPECT_NE(v[1].message.find("in an event"), std::string::npos) << v[1].message;
  // Any other extra member stays INPUT_FIELD_UNKNOWN.
  Json doc = test::LoadJson(kAb);
  doc["requests"][0]["tenant"] = "t";
  EXPECT_TRUE(test::OnlyViolationAt(ValidateServiceTrace(doc), "INPUT_FIELD_UNKNOWN",
                                    "/requests/0/tenant"));
}

// F5: release increments the handle generation, and a view's integers end at 2^53. A request
// declaring generation 2^53 was accepted though its release view could not be declared (2^53
// + 1 is out of the reader's range): the declaration is refused, up to 2^53 - 1.
TEST(ServiceTraceRules, RegressionAHandleGenerationWhoseReleaseCannotBeDeclaredIsRefused) {
  auto with_generation = [](uint64_t g) {
    Json doc = test::LoadJson(kAb);
    doc["requests"][1]["handle_generation"] = g;
    for (Json& e : doc["events"])
      if (e["request"] == "B")
        e["view"]["handle_generation"] =
            std::min(e["op"] == "release" ? g + 1 : g, uint64_t{1} << 53);
    return doc;
  };
  const uint64_t kMax = (uint64_t{1} << 53) - 1;
  EXPECT_TRUE(ValidateServiceTrace(with_generation(kMax)).empty())
      << test::Describe(ValidateServiceTrace(with_generation(kMax)));
  EXPECT_TRUE(test::OnlyViolationAt(ValidateServiceTrace(with_generation(kMax + 1)),
                                    "INPUT_VALUE_OUT_OF_RANGE", "/requests/1/handle_generation"));
}

// Probe 95: an arrival after the release was SERVICE_WORK_BEFORE_ARRIVAL "already arrived"
// where every other event after release, and the byte trajectory's arrival after release, is
// LIFECYCLE_HANDLE_RELEASED.
TEST(ServiceTraceRules, RegressionAnArrivalAfterReleaseIsAnEventAfterRelease) {
  Json doc = test::LoadJson(kAb);
  Json arrive = doc["events"][0];
  ASSERT_EQ(arrive["op"], "arrive");
  arrive["t"] = doc["events"].back()["t"].get<uint64_t>() + 1;
  doc["events"].push_back(arrive);
  const Violations v = ValidateServiceTrace(doc);
  EXPECT_TRUE(test::OnlyViolationAt(v, "LIFECYCLE_HANDLE_RELEASED",
                                    "/events/" + std::to_string(doc["events"].size() - 1) + "/op"))
      << test::Describe(v);
}

}  // namespace
}  // namespace kvc
