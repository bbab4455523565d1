// Tests of the runtime-binding header rules: source pin, metric families, trace identity and
// expected final states, alone and through the trace checker.
#include "reference/trace/runtime_binding.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"

namespace kvc::trace {
namespace {

using Codes = std::vector<std::string>;

Json Pin() {
  return Json::parse(R"({"name":"vllm","release":"v0.23.0",
    "commit":"0fc695fc6d1d82e9a5ac6835ac8e4e1c83703665","checked_on":"2026-07-27",
    "files":[{"path":"vllm/v1/request.py",
              "sha256":"4b97f41fc0ea474149f78d52a44ce89c16a9921c0641c48ad2573bdb8b7f71a4"}]})");
}

Json Metrics() {
  return Json::parse(R"([
    {"name":"cache_append_outcomes_total","type":"counter",
     "labels":["model_name","engine","event_type","outcome"]},
    {"name":"cache_append_attempts_total","type":"counter","labels":["model_name","engine"]},
    {"name":"cache_append_failures_total","type":"counter","labels":["model_name","engine"],
     "counts":"failures","denominator":"cache_append_attempts_total"},
    {"name":"kv_cache_usage_ratio","type":"gauge","labels":["model_name","engine"]}])");
}

TEST(RuntimeBindingTest, ThePinnedRuntimeAndBoundedMetricsPass) {
  EXPECT_TRUE(CheckRuntimePin(Pin(), "/0/runtime_pin").empty());
  EXPECT_TRUE(CheckMetricFamilies(Metrics(), "/0/metrics").empty());
}

TEST(RuntimeBindingTest, ADriftedPinIsRejected) {
  for (const char* commit : {"0fc695f", "0FC695FC6D1D82E9A5AC6835AC8E4E1C83703665", "main"}) {
    Json pin = Pin();
    pin["commit"] = commit;
    Violations v = CheckRuntimePin(pin, "/0/runtime_pin");
    ASSERT_EQ(test::CodeNames(v), Codes{"TRACE_RUNTIME_PIN_INVALID"}) << commit;
    EXPECT_EQ(v[0].pointer, "/0/runtime_pin/commit");
  }
  Json pin = Pin();
  pin["files"][0]["sha256"] = "4b97f41f";  // not 64 hex digits
  EXPECT_EQ(test::CodeNames(CheckRuntimePin(pin, "/p")), Codes{"TRACE_RUNTIME_PIN_INVALID"});
  pin = Pin();
  pin["files"].push_back(pin["files"][0]);  // one file pinned twice
  EXPECT_EQ(test::CodeNames(CheckRuntimePin(pin, "/p")), Codes{"TRACE_RUNTIME_PIN_INVALID"});
  pin = Pin();
  pin["files"] = Json::array();
  EXPECT_EQ(test::CodeNames(CheckRuntimePin(pin, "/p")), Codes{"TRACE_RUNTIME_PIN_INVALID"});
  pin = Pin();
  pin["release"] = "";
  EXPECT_EQ(test::CodeNames(CheckRuntimePin(pin, "/p")), Codes{"TRACE_RUNTIME_PIN_INVALID"});
  pin = Pin();
  pin.erase("commit");
  EXPECT_EQ(test::CodeNames(CheckRuntimePin(pin, "/p")), Codes{"INPUT_FIELD_MISSING"});
}

TEST(RuntimeBindingTest, IdentityLabelsAreUnboundedMetricLabels) {
  for (const char* label : {"request_id", "trace_id", "operation_id", "event_id"}) {
    Json m = Metrics();
    m[0]["labels"].push_back(label);
    Violations v = CheckMetricFamilies(m, "/0/metrics");
    ASSERT_EQ(test::CodeNames(v), Codes{"TRACE_METRIC_LABEL_UNBOUNDED"}) << label;
    EXPECT_EQ(v[0].pointer, "/0/metrics/0/labels");
  }
  EXPECT_FALSE(IsUnboundedIdentityLabel("model_name"));
  EXPECT_FALSE(IsUnboundedIdentityLabel("outcome"));
}

TEST(RuntimeBindingTest, AFailureCounterNeedsItsAttemptsCounterBesideIt) {
  Json m = Metrics();
  m[2].erase("denominator");
  Violations v = CheckMetricFamilies(m, "/0/metrics");
  ASSERT_EQ(test::CodeNames(v), Codes{"TRACE_METRIC_DENOMINATOR_MISSING"});
  EXPECT_EQ(v[0].pointer, "/0/metrics/2/denominator");
  m = Metrics();
  m.erase(1);  // the attempts counter is gone; the failure counter names nothing declared
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"TRACE_METRIC_DENOMINATOR_MISSING"});
  m = Metrics();
  m[2]["denominator"] = "kv_cache_usage_ratio";  // a gauge is no attempts count
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"TRACE_METRIC_DENOMINATOR_MISSING"});
  // Regression (header sweep, 2026-12-03): the attempts counter's type misspelled raised
  // INPUT_VALUE_INVALID there and TRACE_METRIC_DENOMINATOR_MISSING on the failure counter.
  m = Metrics();
  m[1]["type"] = "counterx";
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_VALUE_INVALID"});
  m = Metrics();
  m[2]["denominator"] = "cache_append_failures_total";  // itself
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"TRACE_METRIC_DENOMINATOR_MISSING"});
  // Naming itself is its own fault whatever its type, so an unreadable type beside it (reported
  // there) does not hide it: the skip for a denominator whose type is unreadable is for another
  // family's (mutation audit 4 left this unpinned: a mutant that looked the counter up as its
  // own denominator raised the type's code alone).
  m[2]["type"] = 7;
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")),
            (Codes{"INPUT_FIELD_TYPE", "TRACE_METRIC_DENOMINATOR_MISSING"}));
  m = Metrics();
  m[3]["counts"] = "failures";  // a gauge does not count failures
  EXPECT_EQ(test::AllCodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_VALUE_INVALID"})
      << "without a denominator too (it was also TRACE_METRIC_DENOMINATOR_MISSING)";
  m[3]["denominator"] = "cache_append_attempts_total";
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_VALUE_INVALID"});
  m = Metrics();
  m[1]["denominator"] = "cache_append_outcomes_total";  // only failure counters name one
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_VALUE_INVALID"});
  m = Metrics();
  m.push_back(m[0]);  // one family declared twice
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_VALUE_INVALID"});
  // Regression (header deletion/retype sweep, 2026-12-03): an unreadable attempts counter (not
  // an object, its name missing or not a string), an unreadable denominator member, or an
  // unreadable counts beside a denominator raised a second code on the failure counter.
  m = Metrics();
  m[1] = 7;
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_FIELD_TYPE"});
  m = Metrics();
  m[1].erase("name");
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_FIELD_MISSING"});
  m = Metrics();
  m[1]["name"] = 7;
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_FIELD_TYPE"});
  m = Metrics();
  m[2]["denominator"] = 7;
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_FIELD_TYPE"});
  m = Metrics();
  m[2]["counts"] = 7;
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")), Codes{"INPUT_FIELD_TYPE"});
  // Beside an unreadable family, a failure counter that names no denominator at all is still
  // reported.
  m = Metrics();
  m[1] = 7;
  m[2].erase("denominator");
  EXPECT_EQ(test::CodeNames(CheckMetricFamilies(m, "/m")),
            (Codes{"INPUT_FIELD_TYPE", "TRACE_METRIC_DENOMINATOR_MISSING"}));
}

// The pin's checked_on is a date YYYY-MM-DD (INPUT_VALUE_INVALID at that member otherwise).
TEST(RuntimeBindingTest, ACheckedOnThatIsNotADateIsInvalid) {
  for (const char* date : {"27-07-2026", "2026/07/27", "2026-07/27", "2026-7-27"}) {
    Json pin = Pin();
    pin["checked_on"] = date;
    EXPECT_TRUE(test::OnlyViolationAt(CheckRuntimePin(pin, "/0/runtime_pin"), "INPUT_VALUE_INVALID",
                                      "/0/runtime_pin/checked_on"))
        << date;
  }
}

// Every place of checked_on but the dashes is a digit, its month 01-12 and its day 01-31, as the
// schema's pattern says (the transport audit's finding: "YYYY-MM-DD" itself, and any other ten
// characters with dashes at 4 and 7, passed the checker while trace_schema_check.py refused
// them).
TEST(RuntimeBindingTest, RegressionACheckedOnNeedsDigitsAndCalendarRanges) {
  for (const char* date : {"YYYY-MM-DD", "2026-0x-27", "2026-13-27", "2026-07-00", "2026-07-32"}) {
    Json pin = Pin();
    pin["checked_on"] = date;
    EXPECT_TRUE(test::OnlyViolationAt(CheckRuntimePin(pin, "/0/runtime_pin"), "INPUT_VALUE_INVALID",
                                      "/0/runtime_pin/checked_on"))
        << date;
  }
  Json pin = Pin();
  pin["checked_on"] = "2026-12-31";
  EXPECT_TRUE(CheckRuntimePin(pin, "/0/runtime_pin").empty());
}

// A pinned source file names its path: an empty one is TRACE_RUNTIME_PIN_INVALID.
TEST(RuntimeBindingTest, AnEmptyPinnedPathIsRejected) {
  Json pin = Pin();
  pin["files"][0]["path"] = "";
  EXPECT_TRUE(test::OnlyViolationAt(CheckRuntimePin(pin, "/0/runtime_pin"),
                                    "TRACE_RUNTIME_PIN_INVALID", "/0/runtime_pin/files/0/path"));
}

// A metric's labels are distinct non-empty strings.
TEST(RuntimeBindingTest, ALabelListedTwiceIsInvalid) {
  Json m = Metrics();
  m[0]["labels"].push_back("engine");
  EXPECT_TRUE(test::OnlyViolationAt(CheckMetricFamilies(m, "/0/metrics"), "INPUT_VALUE_INVALID",
                                    "/0/metrics/0/labels/4"));
}

TEST(RuntimeBindingTest, AnEmptyLabelIsAFieldTypeError) {
  Json m = Metrics();
  m[0]["labels"].push_back("");
  EXPECT_TRUE(test::OnlyViolationAt(CheckMetricFamilies(m, "/0/metrics"), "INPUT_FIELD_TYPE",
                                    "/0/metrics/0/labels/4"));
}

// Every identity field of kUnboundedIdentityLabels is an unbounded metric label.
TEST(RuntimeBindingTest, EveryIdentityFieldIsAnUnboundedLabel) {
  for (std::string_view label : kUnboundedIdentityLabels) {
    EXPECT_TRUE(IsUnboundedIdentityLabel(label)) << label;
    Json m = Metrics();
    m[0]["labels"].push_back(std::string(label));
    EXPECT_TRUE(test::OnlyViolationAt(CheckMetricFamilies(m, "/0/metrics"),
                                      "TRACE_METRIC_LABEL_UNBOUNDED", "/0/metrics/0/labels"))
        << label;
  }
}

// A failure counter's denominator is an attempts counter ("counts": "events"), not another
// failure counter.
TEST(RuntimeBindingTest, AFailureCounterIsNoDenominator) {
  Json m = Metrics();
  m.push_back(Json::parse(R"({"name":"cache_append_retries_failed_total","type":"counter",
    "labels":["engine"],"counts":"failures","denominator":"cache_append_attempts_total"})"));
  m[2]["denominator"] = "cache_append_retries_failed_total";
  EXPECT_TRUE(test::OnlyViolationAt(CheckMetricFamilies(m, "/0/metrics"),
                                    "TRACE_METRIC_DENOMINATOR_MISSING",
                                    "/0/metrics/2/denominator"));
}

// A denominator declared twice is reported once, as the repeated declaration: the failure
// counter is not judged against either (which one the runtime keeps is unknown; probe 47).
TEST(RuntimeBindingTest, ADenominatorDeclaredTwiceIsNotJudged) {
  Json m = Metrics();
  m[1]["type"] = "gauge";  // the first declaration is no attempts counter, the second is
  m.push_back(Json::parse(
      R"({"name":"cache_append_attempts_total","type":"counter","labels":["engine"]})"));
  EXPECT_TRUE(test::OnlyViolationAt(CheckMetricFamilies(m, "/0/metrics"), "INPUT_VALUE_INVALID",
                                    "/0/metrics/4/name"));
}

// Every violation of the runtime-binding members is reported on line 1, the header.
TEST(RuntimeBindingTest, ReadRuntimeBindingReportsOnLineOne) {
  RuntimeBinding b;
  Violations v =
      ReadRuntimeBinding(Json::parse(R"({"expected_final_states":[{"request_id":"R","snapshot":0,)"
                                     R"("committed_length":0,"phase":"DECODE_READY"}]})"),
                         &b);
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_FIELD_MISSING",
                                    "/0/expected_final_states/0/handle_generation"));
  EXPECT_EQ(v[0].line, 1u);
  EXPECT_TRUE(b.expected_final_states.empty());
}

// ---- Through the checker: line 1 binds, events and the end of the trace are judged.

std::string Header(const std::string& extra) {
  return R"({"kind":"kvconform.trace/1","schema_version":1,"producer":{"name":"t","revision":"1"},)"
         R"("cache_abi":{"id":"abi","num_layers":1,"position_stage":"post_rope","bytes_per_token":8},)"
         R"("sources":[{"source_instance":"e","source_component":"semantic"}],"audit":"complete")" +
         extra + "}\n";
}

std::string Alloc(bool trace_id) {
  return std::string(R"({"event_id":"e0",)") + (trace_id ? R"("trace_id":"t-1",)" : "") +
         R"("source_instance":"e","source_component":"semantic","local_sequence":0,)"
         R"("monotonic_ns":100,"event_type":"request_allocate","request_id":"R",)"
         R"("handle_generation":3,"result_snapshot":0,"payload":{"prompt_length":2}})"
         "\n";
}

Codes Check(const std::string& text) { return test::CodeNames(ValidateTraceJsonl(text, "t.jsonl")); }

TEST(RuntimeBindingTest, RequiredTraceIdentityIsCheckedOnEveryEvent) {
  const std::string req = R"(,"trace_identity":"required")";
  EXPECT_EQ(Check(Header(req) + Alloc(true)), Codes{});
  EXPECT_EQ(Check(Header(req) + Alloc(false)), Codes{"TRACE_IDENTITY_MISSING"});
  EXPECT_EQ(Check(Header(R"(,"trace_identity":"optional")") + Alloc(false)), Codes{});
  EXPECT_EQ(Check(Header("") + Alloc(false)), Codes{});  // absent: version-1 traces unchanged
  EXPECT_EQ(Check(Header(R"(,"trace_identity":"sometimes")") + Alloc(true)),
            Codes{"INPUT_VALUE_INVALID"});
  // Regression (2026-12-07): the refused value was named by its whole JSON text.
  const Violations v = ValidateTraceJsonl(
      Header(R"(,"trace_identity":")" + std::string(10000, 'q') + "\"") + Alloc(true), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), Codes{"INPUT_VALUE_INVALID"}) << test::Describe(v);
  EXPECT_NE(v[0].message.find("got \"" + std::string(80, 'q') + "...\" (10000 bytes)"),
            std::string::npos)
      << v[0].message.substr(0, 300);
}

TEST(RuntimeBindingTest, ExpectedFinalStatesAreComparedWithTheReplay) {
  const std::string good =
      R"(,"expected_final_states":[{"request_id":"R","handle_generation":3,"snapshot":0,)"
      R"("committed_length":0,"phase":"DECODE_READY"}])";
  EXPECT_EQ(Check(Header(good) + Alloc(true)), Codes{});
  std::string drift = good;
  drift.replace(drift.find("\"snapshot\":0"), 12, "\"snapshot\":1");
  Violations v = ValidateTraceJsonl(Header(drift) + Alloc(true), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), Codes{"TRACE_EXPECTED_RESULT_MISMATCH"});
  EXPECT_EQ(v[0].line, 1u);
  EXPECT_EQ(v[0].pointer, "/0/expected_final_states/0/snapshot");
  std::string phase = good;
  phase.replace(phase.find("DECODE_READY"), 12, "FINISHED");
  EXPECT_EQ(Check(Header(phase) + Alloc(true)), Codes{"TRACE_EXPECTED_RESULT_MISMATCH"});
  std::string unknown = good;
  unknown.replace(unknown.find("\"R\""), 3, "\"Q\"");
  EXPECT_EQ(Check(Header(unknown) + Alloc(true)), Codes{"TRACE_EXPECTED_RESULT_MISMATCH"});
  // After a replay violation the replayed state is not the runtime's: only the root cause.
  std::string second = Alloc(true);
  second.replace(second.find("\"e0\""), 4, "\"e2\"");
  second.replace(second.find("\"local_sequence\":0"), 18, "\"local_sequence\":2");
  second.replace(second.find("\"R\""), 3, "\"S\"");
  EXPECT_EQ(Check(Header(drift) + Alloc(true) + second), Codes{"TRACE_SEQUENCE_GAP"});
}

// Each expected field is compared with the replay: a differing handle_generation or
// committed_length is TRACE_EXPECTED_RESULT_MISMATCH at that field.
TEST(RuntimeBindingTest, ExpectedGenerationAndCommittedLengthAreCompared) {
  const std::string good =
      R"(,"expected_final_states":[{"request_id":"R","handle_generation":3,"snapshot":0,)"
      R"("committed_length":0,"phase":"DECODE_READY"}])";
  std::string gen = good;
  gen.replace(gen.find("\"handle_generation\":3"), 21, "\"handle_generation\":4");
  EXPECT_TRUE(test::OnlyViolationAt(ValidateTraceJsonl(Header(gen) + Alloc(true), "t.jsonl"),
                                    "TRACE_EXPECTED_RESULT_MISMATCH",
                                    "/0/expected_final_states/0/handle_generation"));
  std::string len = good;
  len.replace(len.find("\"committed_length\":0"), 20, "\"committed_length\":2");
  EXPECT_TRUE(test::OnlyViolationAt(ValidateTraceJsonl(Header(len) + Alloc(true), "t.jsonl"),
                                    "TRACE_EXPECTED_RESULT_MISMATCH",
                                    "/0/expected_final_states/0/committed_length"));
}

TEST(RuntimeBindingTest, RegressionARequestListedTwiceInExpectedFinalStates) {
  // The second entry was accepted and compared too: a request has one end, so two entries
  // state two ends, and the header is wrong whichever of them the replay matches.
  const std::string entry =
      R"({"request_id":"R","handle_generation":3,"snapshot":0,"committed_length":0,)"
      R"("phase":"DECODE_READY"})";
  Violations v = ValidateTraceJsonl(
      Header(",\"expected_final_states\":[" + entry + "," + entry + "]") + Alloc(true), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), Codes{"INPUT_VALUE_INVALID"});
  EXPECT_EQ(v[0].line, 1u);
  EXPECT_EQ(v[0].pointer, "/0/expected_final_states/1/request_id");
}

TEST(RuntimeBindingTest, HeaderRulesReportOnLineOneAndTheReplayContinues) {
  Json m = Metrics();
  m[0]["labels"].push_back("request_id");
  Violations v = ValidateTraceJsonl(Header(",\"metrics\":" + m.dump()) + Alloc(false), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), Codes{"TRACE_METRIC_LABEL_UNBOUNDED"});
  EXPECT_EQ(v[0].line, 1u);
  Json pin = Pin();
  pin["commit"] = "0fc695f";
  EXPECT_EQ(Check(Header(",\"runtime_pin\":" + pin.dump()) + Alloc(false)),
            Codes{"TRACE_RUNTIME_PIN_INVALID"});
  EXPECT_EQ(Check(Header(",\"runtime_pin\":" + Pin().dump() + ",\"metrics\":" + Metrics().dump()) +
                  Alloc(false)),
            Codes{});
}

}  // namespace
}  // namespace kvc::trace
