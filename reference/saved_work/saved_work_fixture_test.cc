// The saved-work fixture oracle: the P=2048, G=128 ledger and the frontier traces replayed
// through frontier::FrontierState, with every seed number computed from the inputs.
#include "reference/saved_work/saved_work_fixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "reference/frontier/frontier.h"
#include "reference/saved_work/saved_work.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

using frontier::AppendCall;
using frontier::AppendPurpose;
using frontier::FrontierState;

// An AppendCall with every member named (the struct has members without initializers).
AppendCall MakeCall(AppendPurpose purpose, uint64_t rows, std::optional<uint64_t> input_token = std::nullopt) {
  AppendCall c;
  c.purpose = purpose;
  c.rows = rows;
  c.input_token = input_token;
  return c;
}

const char* kFixture = "fixtures/m5_1/saved_work/saved_work_fixture.json";

TEST(SavedWorkFixture, LongLedgerMatchesTheSeed) {
  SavedWork w = ComputeSavedWork(2048, 128).value();
  EXPECT_EQ(w.rows_no_cache, 270272u);
  EXPECT_EQ(w.rows_cache, 2175u);
  EXPECT_EQ(w.rows_saved, 268097u);
  EXPECT_EQ(std::llround(w.row_reduction * 100), 12426);
  EXPECT_EQ(w.pairs_no_cache, 285562176u);
  EXPECT_EQ(w.pairs_cache, 2366400u);
  EXPECT_EQ(w.pairs_saved, 283195776u);
  EXPECT_EQ(std::llround(w.pair_reduction * 100), 12067);
}

TEST(SavedWorkFixture, OrdinaryStopLeavesTheFinalTokenUncommittedUntilRepair) {
  FrontierState f(4);
  ASSERT_TRUE(f.CheckAppend(MakeCall(AppendPurpose::kPrefill, 4)).ok());
  f.ApplyPublished(MakeCall(AppendPurpose::kPrefill, 4));
  ASSERT_TRUE(f.Emit(0, 20).ok());
  for (uint64_t y : {20u, 21u}) {
    AppendCall decode = MakeCall(AppendPurpose::kDecode, 1, y);
    ASSERT_TRUE(f.CheckAppend(decode).ok());
    f.ApplyPublished(decode);
    ASSERT_TRUE(f.Emit(f.emitted(), y + 1).ok());
  }
  EXPECT_EQ(f.committed(), 6u);                    // length 6 committed
  EXPECT_EQ(f.prompt_length() + f.emitted(), 7u);  // 7 logical tokens
  EXPECT_EQ(f.frontier_token(), 22u);              // y2 unprocessed
  AppendCall repair = MakeCall(AppendPurpose::kRepair, 1, 22);
  ASSERT_TRUE(f.CheckAppend(repair).ok());
  f.ApplyPublished(repair);
  EXPECT_EQ(f.committed(), 7u);
  EXPECT_EQ(f.frontier_count(), 0u);
  EXPECT_FALSE(f.Emit(3, 23, /*from_repair_logits=*/true).ok());  // repair emits nothing
}

TEST(SavedWorkFixture, SpeculativeHandoffCommitsOnlyAcceptedRowsThenTheCorrection) {
  FrontierState f(100);
  f.ApplyPublished(MakeCall(AppendPurpose::kPrefill, 100));
  AppendCall verify = MakeCall(AppendPurpose::kVerify, 2);
  verify.draft_tokens = {60, 61, 62};
  verify.accepted = 2;
  ASSERT_TRUE(f.CheckAppend(verify).ok());
  f.ApplyPublished(verify);
  for (uint64_t t : {60u, 61u, 70u}) ASSERT_TRUE(f.Emit(f.emitted(), t).ok());
  EXPECT_EQ(f.emitted(), 3u);      // +3 output progress
  EXPECT_EQ(f.committed(), 102u);  // +2 rows
  EXPECT_EQ(f.frontier_token(), 70u);
  AppendCall correction = MakeCall(AppendPurpose::kRepair, 1, 70);
  ASSERT_TRUE(f.CheckAppend(correction).ok());
  f.ApplyPublished(correction);
  EXPECT_EQ(f.committed(), 103u);
}

TEST(SavedWorkFixture, FixtureIsValidAndSchemaErrorsStopEarly) {
  Json doc = test::LoadJson(kFixture);
  EXPECT_TRUE(ValidateSavedWorkFixture(doc).empty()) << test::Describe(ValidateSavedWorkFixture(doc));
  doc["work_ledger"].erase("output_tokens");
  EXPECT_EQ(test::CodeNames(ValidateSavedWorkFixture(doc)), std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

// Regression (2026-12-07): a token list was named whole, so a declared frontier of 5,000 tokens
// made a 20 KB SAVED_WORK_FRONTIER_DRIFT message (cut at the report limit); it is clipped after
// 16 tokens, with its length.
TEST(SavedWorkFixture, RegressionALongTokenListIsNamedClipped) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"][2]["expected"]["frontier"] = std::vector<int>(5000, 22);
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].code, ErrorCode::SAVED_WORK_FRONTIER_DRIFT) << test::Describe(v);
  std::string declared = "[22";
  for (int i = 1; i < 16; ++i) declared += ", 22";
  declared += ", ...] (5000 elements)";
  EXPECT_NE(v[0].message.find("replayed output frontier is [22], declared " + declared),
            std::string::npos)
      << v[0].message.substr(0, 300);
  for (const Violation& x : v) EXPECT_LT(x.message.size(), 1000u) << x.message.substr(0, 300);
}

TEST(SavedWorkFixture, ZeroOutputsIsAnInputError) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"]["output_tokens"] = 0;
  EXPECT_EQ(test::CodeNames(ValidateSavedWorkFixture(doc)), std::vector<std::string>{"SAVED_WORK_INPUT_INVALID"});
}

// Regressions from an adversarial probe (2026-12-04).

// P = 3, G = 6: no-cache / cache = 66 / 16 = 33/8 = 4.125, a tie at two decimals. The
// validator rounded half away from zero and refused 4.12 (Python's round(), which the fixture
// generator uses, writes 4.12), while its message printed the expected value as 4.12. Either
// neighbour of a tie is a rounding; a value that is not a multiple of 0.01 is not.
TEST(SavedWorkFixture, RegressionAReductionOnATieMayRoundEitherWay) {
  SavedWork w = ComputeSavedWork(3, 6).value();
  ASSERT_EQ(w.rows_no_cache, 33u);
  ASSERT_EQ(w.rows_cache, 8u);
  Json doc = test::LoadJson(kFixture);
  Json& rows = doc["work_ledger"]["rows_per_layer"];
  Json& pairs = doc["work_ledger"]["pairs_per_layer_query_head"];
  doc["work_ledger"]["prompt_tokens"] = 3;
  doc["work_ledger"]["output_tokens"] = 6;
  rows = {{"no_cache", w.rows_no_cache},
          {"cache", w.rows_cache},
          {"saved", w.rows_saved},
          {"reduction", 4.12}};
  pairs = {{"no_cache", w.pairs_no_cache},
           {"cache", w.pairs_cache},
           {"saved", w.pairs_saved},
           {"reduction", std::round(w.pair_reduction * 100) / 100}};
  EXPECT_TRUE(ValidateSavedWorkFixture(doc).empty())
      << test::Describe(ValidateSavedWorkFixture(doc));
  rows["reduction"] = 4.13;
  EXPECT_TRUE(ValidateSavedWorkFixture(doc).empty())
      << test::Describe(ValidateSavedWorkFixture(doc));
  for (double wrong : {4.11, 4.14, 4.125}) {
    rows["reduction"] = wrong;
    const Violations v = ValidateSavedWorkFixture(doc);
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SAVED_WORK_REDUCTION_DRIFT"}) << wrong;
    EXPECT_NE(v[0].message.find("33 / 8"), std::string::npos) << v[0].message;
  }
}

// A stop trace without a prompt passed: its empty prefill "selected" the first output.
TEST(SavedWorkFixture, RegressionAStopTraceWithoutAPromptIsAnInputError) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["prompt_tokens"] = Json::array();
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SAVED_WORK_INPUT_INVALID"});
  EXPECT_EQ(v[0].pointer, "/frontier/stop_trace/prompt_tokens");
  doc = test::LoadJson(kFixture);
  doc["work_ledger"]["prompt_tokens"] = 0;
  const Violations p0 = ValidateSavedWorkFixture(doc);
  ASSERT_EQ(test::CodeNames(p0), std::vector<std::string>{"SAVED_WORK_INPUT_INVALID"});
  EXPECT_EQ(p0[0].pointer, "/work_ledger/prompt_tokens");  // it named the calculator's --prompt
}

// Regressions from a cold-read audit of 0x03 and 0x05 (2026-12-07, probe 92).

// The ledger of P and G with the reductions written as the generator writes them.
Json LedgerOf(uint64_t p, uint64_t g) {
  SavedWork w = ComputeSavedWork(p, g).value();
  auto two = [](double x) { return std::round(x * 100) / 100; };
  return Json{{"prompt_tokens", p},
              {"output_tokens", g},
              {"rows_per_layer",
               {{"no_cache", w.rows_no_cache},
                {"cache", w.rows_cache},
                {"saved", w.rows_saved},
                {"reduction", two(w.row_reduction)}}},
              {"pairs_per_layer_query_head",
               {{"no_cache", w.pairs_no_cache},
                {"cache", w.pairs_cache},
                {"saved", w.pairs_saved},
                {"reduction", two(w.pair_reduction)}}}};
}

// F1: `calc saved-work --prompt 1048576 --outputs 32768` prints 18,583,212,524,912,640 uncached
// pairs, and the document declaring it was refused (INPUT_VALUE_OUT_OF_RANGE beyond 2^53). The
// declared counts are read exactly up to 2^64 - 1, as byte quantities are.
TEST(SavedWorkFixture, RegressionASavedWorkLedgerAbove2To53IsReadExactly) {
  Json doc = test::LoadJson(kFixture);
  for (auto [p, g] : {std::pair<uint64_t, uint64_t>{1048576, 32768}, {1048576, 1048576}}) {
    doc["work_ledger"] = LedgerOf(p, g);
    EXPECT_TRUE(ValidateSavedWorkFixture(doc).empty())
        << p << " " << g << "\n"
        << test::Describe(ValidateSavedWorkFixture(doc));
  }
  doc["work_ledger"] = LedgerOf(1048576, 32768);
  ASSERT_EQ(doc["work_ledger"]["pairs_per_layer_query_head"]["no_cache"].get<uint64_t>(),
            18583212524912640u);
  // One above the exact figure, beyond 2^53 where a double has no such neighbour: drift.
  doc["work_ledger"]["pairs_per_layer_query_head"]["saved"] =
      doc["work_ledger"]["pairs_per_layer_query_head"]["saved"].get<uint64_t>() - 1;
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SAVED_WORK_PAIR_DRIFT",
                                    "/work_ledger/pairs_per_layer_query_head/saved"));
  doc["work_ledger"] = LedgerOf(1048576, 32768);
  doc["work_ledger"]["rows_per_layer"]["no_cache"] = UINT64_MAX;
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SAVED_WORK_ROW_SUM_DRIFT",
                                    "/work_ledger/rows_per_layer/no_cache"));
  // 2^64 is past every count: the reader's range.
  doc["work_ledger"] = LedgerOf(1048576, 32768);
  doc["work_ledger"]["pairs_per_layer_query_head"]["no_cache"] = 18446744073709551616.0;
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "INPUT_VALUE_OUT_OF_RANGE",
                                    "/work_ledger/pairs_per_layer_query_head/no_cache"));
}

// F2: a stop follows an output selection (committed = P + E - 1 after it). A stop trace with no
// call, or whose only call prefilled 2 of the 4 prompt rows, passed; the service oracle refuses
// the same finish with SERVICE_PHASE_EARLY_FINISH, and so does the stop now, at the stop.
TEST(SavedWorkFixture, RegressionAStopTraceWithNoOutputIsRefused) {
  Json doc = test::LoadJson(kFixture);
  Json& trace = doc["frontier"]["stop_trace"];
  trace["calls"] = Json::array();
  trace["stop"] = {{"returned_tokens", {10, 11, 12, 13}},
                   {"logical_length", 4},
                   {"committed", 0},
                   {"emitted", 0},
                   {"frontier", Json::array()}};
  trace.erase("repair");
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SERVICE_PHASE_EARLY_FINISH",
                                    "/frontier/stop_trace/stop"));
  trace["calls"] = Json::array(
      {Json{{"purpose", "prefill"},
            {"inputs", {10, 11}},
            {"emits", Json::array()},
            {"expected", {{"committed", 2}, {"emitted", 0}, {"frontier", Json::array()}}}}});
  trace["stop"]["committed"] = 2;
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SERVICE_PHASE_EARLY_FINISH",
                                    "/frontier/stop_trace/stop"));
  // The one-field mutation of the fixture (its invalid fixture stop_before_any_output): the stop
  // is refused before its summary (committed 6, three outputs) is compared, and nothing is
  // repaired after it.
  doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"] = Json::array();
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SERVICE_PHASE_EARLY_FINISH",
                                    "/frontier/stop_trace/stop"));
}

// F3a: the verification leaves its correction token out of its emits ([60, 61]). Its declared
// state drifted twice (emitted, frontier) and the correction repair, replayed against the
// drifted state, had nothing to repair (FRONTIER_NOTHING_TO_REPAIR). One drift now, at the first
// member that differs, naming the other; the repair is not replayed.
TEST(SavedWorkFixture, RegressionAVerifyWithoutItsCorrectionReportsOneDrift) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["speculative"]["verify"]["emits"] = Json::array({60, 61});
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SAVED_WORK_FRONTIER_DRIFT",
                                    "/frontier/speculative/verify/expected/emitted"));
  EXPECT_NE(v[0].message.find("also frontier: replayed output frontier is [], declared [70]"),
            std::string::npos)
      << v[0].message;
}

// F3b: the first decode emits nothing. Its declared state drifted twice and the next decode,
// with no frontier token to process, was FRONTIER_CACHE_OVERCOMMIT. One drift now.
TEST(SavedWorkFixture, RegressionADecodeThatEmitsNothingReportsOneDrift) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"][1]["emits"] = Json::array();
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SAVED_WORK_FRONTIER_DRIFT",
                                    "/frontier/stop_trace/calls/1/expected/emitted"));
  // The last decode alike: the stop summary (three outputs, frontier [22]) is not compared
  // with the drifted replay.
  doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"][2]["emits"] = Json::array();
  EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SAVED_WORK_FRONTIER_DRIFT",
                                    "/frontier/stop_trace/calls/2/expected/emitted"));
}

// F3, the stop summary alike: with the last decode left out, the stop's committed length (6 of 5
// processed), its outputs, frontier, returned tokens and length all moved, and the repair of y2
// met the frontier y1 (FRONTIER_TOKEN_MISMATCH): 3 codes. One violation now, at the first
// member, and no repair.
TEST(SavedWorkFixture, RegressionAStopAfterACallLeftOutReportsOneViolation) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"].erase(2);
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(
      test::OnlyViolationAt(v, "FRONTIER_CACHE_OVERCOMMIT", "/frontier/stop_trace/stop/committed"));
  EXPECT_NE(v[0].message.find("also logical_length"), std::string::npos) << v[0].message;
}

// F3c: prompt_tokens 2049 beside the P = 2048 ledger raised 7 violations of 5 codes, among them
// FIRST_PREFILL_SAVING_INVENTED and HISTORICAL_READS_DROPPED, claims the document never made.
// The ledger is exactly the one of P = 2048: one violation at the declared input. G alike.
TEST(SavedWorkFixture, RegressionAMisdeclaredPromptLengthIsItsOwnRootCause) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"]["prompt_tokens"] = 2049;
  Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SAVED_WORK_ROW_SUM_DRIFT", "/work_ledger/prompt_tokens"));
  EXPECT_NE(v[0].message.find("ledger of P = 2048"), std::string::npos) << v[0].message;
  for (uint64_t p : {1u, 2047u}) {
    doc["work_ledger"]["prompt_tokens"] = p;
    EXPECT_TRUE(test::OnlyViolationAt(ValidateSavedWorkFixture(doc), "SAVED_WORK_ROW_SUM_DRIFT",
                                      "/work_ledger/prompt_tokens"))
        << p;
  }
  doc = test::LoadJson(kFixture);
  doc["work_ledger"]["output_tokens"] = 129;
  v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SAVED_WORK_ROW_SUM_DRIFT", "/work_ledger/output_tokens"));
  EXPECT_NE(v[0].message.find("ledger of G = 128"), std::string::npos) << v[0].message;
}

// Mutation audit 4: the root cause is the declared input only when every declared figure is the
// other input's ledger, saved rows and the pair reduction included: one of them off as well is
// not that ledger, and each figure is judged against the declared input's.
TEST(SavedWorkFixture, RegressionALedgerOfAnotherPromptButForOneFigureIsJudgedFigureByFigure) {
  const struct {
    const char* member;
    std::function<void(Json&)> edit;
  } kOff[] = {
      {"/rows_per_layer/saved",
       [](Json& l) {
         l["rows_per_layer"]["saved"] = l["rows_per_layer"]["saved"].get<uint64_t>() + 1;
       }},
      {"/pairs_per_layer_query_head/reduction",
       [](Json& l) {
         l["pairs_per_layer_query_head"]["reduction"] =
             l["pairs_per_layer_query_head"]["reduction"].get<double>() + 0.5;
       }},
  };
  for (const auto& off : kOff) {
    SCOPED_TRACE(off.member);
    Json doc = test::LoadJson(kFixture);
    doc["work_ledger"] = LedgerOf(2049, 128);
    doc["work_ledger"]["prompt_tokens"] = 2048;
    off.edit(doc["work_ledger"]);
    const Violations v = ValidateSavedWorkFixture(doc);
    std::vector<std::string> pointers;
    for (const auto& x : v) pointers.push_back(x.pointer);
    EXPECT_EQ(std::count(pointers.begin(), pointers.end(), "/work_ledger/prompt_tokens"), 0)
        << test::Describe(v);
    EXPECT_EQ(
        std::count(pointers.begin(), pointers.end(), std::string("/work_ledger") + off.member), 1)
        << test::Describe(v);
  }
}

// Mutation audit 4: the bound is inclusive. A declared count of 2^64 - 1 is read, then judged as
// the figure it is (one violation of the ledger's own codes where it is), not refused as a range.
TEST(SavedWorkFixture, RegressionADeclaredCountOf2To64Minus1IsReadAndJudged) {
  for (const char* section : {"rows_per_layer", "pairs_per_layer_query_head"}) {
    for (const char* count : {"no_cache", "cache", "saved"}) {
      const std::string at = std::string("/work_ledger/") + section + "/" + count;
      SCOPED_TRACE(at);
      Json doc = test::LoadJson(kFixture);
      doc["work_ledger"][section][count] = UINT64_MAX;
      const Violations v = ValidateSavedWorkFixture(doc);
      ASSERT_EQ(v.size(), 1u) << test::Describe(v);
      EXPECT_EQ(v[0].pointer, at);
      EXPECT_NE(v[0].code, ErrorCode::INPUT_VALUE_OUT_OF_RANGE) << test::Describe(v);
    }
  }
}

// F3c, judged beyond one field: the ledger of P - 1 and G - 1 under the declared P and G is the
// ledger of neither declared input alone. Every count drifts, and its cached figures below the
// closed forms are drift with the sums, not an invented saving or dropped reads; its reductions,
// consistent with its own figures, follow them.
TEST(SavedWorkFixture, RegressionALedgerOfOtherInputsIsSumDriftOnly) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"] = LedgerOf(2047, 127);
  doc["work_ledger"]["prompt_tokens"] = 2048;
  doc["work_ledger"]["output_tokens"] = 128;
  const Violations v = ValidateSavedWorkFixture(doc);
  EXPECT_EQ(test::AllCodeNames(v),
            (std::vector<std::string>{"SAVED_WORK_ROW_SUM_DRIFT", "SAVED_WORK_ROW_SUM_DRIFT",
                                      "SAVED_WORK_ROW_SUM_DRIFT", "SAVED_WORK_PAIR_DRIFT",
                                      "SAVED_WORK_PAIR_DRIFT", "SAVED_WORK_PAIR_DRIFT"}))
      << test::Describe(v);
}

// F6: token ids were capped at 2^32 - 1 (undocumented; a trace accepts 2^40, and the frontier
// holds 64-bit ids). They are opaque integers up to 2^53, as everywhere else.
TEST(SavedWorkFixture, RegressionASavedWorkTokenIdAbove2To32IsAccepted) {
  auto with_x0 = [](uint64_t id) {
    Json doc = test::LoadJson(kFixture);
    Json& trace = doc["frontier"]["stop_trace"];
    trace["prompt_tokens"][0] = id;
    trace["calls"][0]["inputs"][0] = id;
    trace["stop"]["returned_tokens"][0] = id;
    return doc;
  };
  for (uint64_t id : {uint64_t{1} << 32, uint64_t{1} << 40, uint64_t{1} << 53})
    EXPECT_TRUE(ValidateSavedWorkFixture(with_x0(id)).empty())
        << id << "\n"
        << test::Describe(ValidateSavedWorkFixture(with_x0(id)));
  const Violations v = ValidateSavedWorkFixture(with_x0((uint64_t{1} << 53) + 1));
  EXPECT_EQ(test::AllCodeNames(v), std::vector<std::string>(3, "INPUT_VALUE_OUT_OF_RANGE"))
      << test::Describe(v);
}

// A mutation audit of the M5.1 0x02/0x03/0x05 calculators (2026-12-05, helper 97: 99 single-point
// mutants of reference/ledger/, reference/saved_work/, reference/service/ and
// reference/frontier/phase.cc; 40 survived every test and the suite, 35 of them real gaps). Each
// test below fails under the mutant its comment names (checked against the mutant's library).

// Mutation audit 2026-12-05 (M53..M56): a ledger value declared ABOVE (cache) or BELOW (saved) the
// derivation is plain drift; only the opposite direction is an invented saving / dropped historical
// reads.
TEST(SavedWorkRules, SavedWorkDriftDirectionPicksTheCode) {
  struct Case {
    const char* sub;
    const char* key;
    int delta;
    const char* code;
  };
  for (const Case& c : {Case{"rows_per_layer", "cache", +1, "SAVED_WORK_ROW_SUM_DRIFT"},
                        Case{"rows_per_layer", "saved", -1, "SAVED_WORK_ROW_SUM_DRIFT"},
                        Case{"pairs_per_layer_query_head", "cache", +1, "SAVED_WORK_PAIR_DRIFT"},
                        Case{"pairs_per_layer_query_head", "saved", -1, "SAVED_WORK_PAIR_DRIFT"}}) {
    Json doc = test::LoadJson(kFixture);
    Json& x = doc["work_ledger"][c.sub][c.key];
    x = static_cast<int64_t>(x.get<int64_t>() + c.delta);
    EXPECT_EQ(test::CodeNames(ValidateSavedWorkFixture(doc)), std::vector<std::string>{c.code})
        << c.sub << "/" << c.key << " " << c.delta;
  }
}

// Mutation audit 2026-12-05 (M57): a reduction one hundredth off (124.27 for 270272/2175 =
// 124.2630) is outside half a hundredth of the ratio.
TEST(SavedWorkRules, SavedWorkReductionOneHundredthOffIsDrift) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"]["rows_per_layer"]["reduction"] = 124.27;
  EXPECT_EQ(test::CodeNames(ValidateSavedWorkFixture(doc)),
            std::vector<std::string>{"SAVED_WORK_REDUCTION_DRIFT"});
  doc = test::LoadJson(kFixture);
  doc["work_ledger"]["pairs_per_layer_query_head"]["reduction"] = 120.68;  // 120.6729...
  EXPECT_EQ(test::CodeNames(ValidateSavedWorkFixture(doc)),
            std::vector<std::string>{"SAVED_WORK_REDUCTION_DRIFT"});
}

// A negative reduction is drift that says so: before, its message called -124.26 "not a
// multiple of 0.01" (the check for two decimals also refuses a negative value), and a mutant
// that dropped the sign test changed only that suffix (mutation audit 4, left unpinned since).
TEST(SavedWorkRules, RegressionANegativeReductionIsNamedNegative) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"]["rows_per_layer"]["reduction"] = -124.26;
  Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SAVED_WORK_REDUCTION_DRIFT"});
  EXPECT_EQ(v[0].pointer, "/work_ledger/rows_per_layer/reduction");
  EXPECT_NE(v[0].message.find("declared -124.26x (a reduction is never negative)"),
            std::string::npos)
      << v[0].message;
  // A positive value off the hundredths keeps its own suffix.
  doc["work_ledger"]["rows_per_layer"]["reduction"] = 124.263;
  v = ValidateSavedWorkFixture(doc);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SAVED_WORK_REDUCTION_DRIFT"});
  EXPECT_NE(v[0].message.find("(not a multiple of 0.01)"), std::string::npos) << v[0].message;
}

// Mutation audit 2026-12-05 (M59): G = 0 is reported at /work_ledger/output_tokens, not at
// prompt_tokens.
TEST(SavedWorkRules, SavedWorkZeroOutputsNamesOutputTokens) {
  Json doc = test::LoadJson(kFixture);
  doc["work_ledger"]["output_tokens"] = 0;
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SAVED_WORK_INPUT_INVALID"});
  EXPECT_EQ(v[0].pointer, "/work_ledger/output_tokens");
}

// Mutation audit 2026-12-05 (M60): prefill inputs must be the prompt rows (the mutant accepted [10,
// 11, 12, 14]).
TEST(SavedWorkRules, SavedWorkPrefillInputsMustBeThePrompt) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"][0]["inputs"] = Json::array({10, 11, 12, 14});
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(
      test::OnlyViolationAt(v, "SAVED_WORK_FRONTIER_DRIFT", "/frontier/stop_trace/calls/0/inputs"));
}

// Mutation audit 2026-12-05 (M63): the stop's returned_tokens must be the prompt plus the emitted
// outputs.
TEST(SavedWorkRules, SavedWorkReturnedTokensAreCompared) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["stop"]["returned_tokens"] =
      Json::array({10, 11, 12, 13, 20, 21, 23});
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SAVED_WORK_FRONTIER_DRIFT",
                                    "/frontier/stop_trace/stop/returned_tokens"));
}

// Mutation audit 2026-12-05 (M66): a decode call with two inputs is FRONTIER_TOKEN_MISMATCH at its
// inputs (the mutant let the frontier judge a 2-row decode: FRONTIER_CACHE_OVERCOMMIT).
TEST(SavedWorkRules, SavedWorkDecodeWithTwoInputsIsTokenMismatch) {
  Json doc = test::LoadJson(kFixture);
  doc["frontier"]["stop_trace"]["calls"][1]["inputs"] = Json::array({20, 21});
  const Violations v = ValidateSavedWorkFixture(doc);
  ASSERT_TRUE(
      test::OnlyViolationAt(v, "FRONTIER_TOKEN_MISMATCH", "/frontier/stop_trace/calls/1/inputs"));
}

}  // namespace
}  // namespace kvc
