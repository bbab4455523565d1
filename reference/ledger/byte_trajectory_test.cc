// The byte-trajectory oracle: the seed's tau=5 reconstruction and the two peaks recomputed
// from the request declarations, plus gating and overflow behaviour.
#include "reference/ledger/byte_trajectory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/ledger/kv_bytes.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

const char* kFixture = "fixtures/m5_1/ledger/two_request_trajectory.json";
const std::vector<std::string> kTiers = {"gpu", "host"};

// B_token from the Loop 2 ABI (2 layers, 2 local K/V heads, d_h 4, 2+2 bytes).
uint64_t Loop2BytesPerToken() { return BytesPerToken({2, 2, 4, 2, 2}).value(); }

TEST(ByteTrajectory, SeedTau5CutReconstructsEveryLedger) {
  std::vector<OwnedCacheState> owned = {{5, 8, {"gpu"}}, {3, 4, {"gpu", "host"}}};
  auto l = SnapshotLedger(owned, Loop2BytesPerToken(), 16, kTiers, 32);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(l->logical, 512u);
  EXPECT_EQ(l->materialized, 704u);
  EXPECT_EQ(l->replication_overhead, 192u);
  EXPECT_EQ(l->reserved, 1024u);
  EXPECT_EQ(l->reservation_slack, 320u);
  EXPECT_EQ(l->allocator, 48u);
  EXPECT_EQ(l->physical, 1072u);
  EXPECT_EQ(l->resident_by_tier.at("gpu"), 800u);
  EXPECT_EQ(l->resident_by_tier.at("host"), 272u);
  EXPECT_EQ(l->instantaneous, 1104u);
}

TEST(ByteTrajectory, PeakInstantaneousIsDuringBPrefillNotAtPeakPhysical) {
  const uint64_t bpt = Loop2BytesPerToken();
  // tau=3: B's prefill publishes 2 rows with 96 B of workspace; A holds 4 rows.
  auto prefill = SnapshotLedger(std::vector<OwnedCacheState>{{4, 8, {"gpu"}}, {2, 4, {"gpu", "host"}}}, bpt, 16,
                                kTiers, 96);
  // tau=6: A finished but retains state; no workspace.
  auto finished = SnapshotLedger(std::vector<OwnedCacheState>{{5, 8, {"gpu"}}, {3, 4, {"gpu", "host"}}}, bpt, 16,
                                 kTiers, 0);
  ASSERT_TRUE(prefill.ok() && finished.ok());
  EXPECT_EQ(prefill->physical, 1072u);
  EXPECT_EQ(prefill->instantaneous, 1168u);
  EXPECT_EQ(finished->physical, prefill->physical);  // finish frees nothing
  EXPECT_EQ(finished->instantaneous, 1072u);
}

TEST(ByteTrajectory, ReplicationAndReservationMoveOnlyTheirLedgers) {
  const uint64_t bpt = Loop2BytesPerToken();
  auto one = SnapshotLedger(std::vector<OwnedCacheState>{{3, 4, {"gpu"}}}, bpt, 16, kTiers, 0).value();
  auto two = SnapshotLedger(std::vector<OwnedCacheState>{{3, 4, {"gpu", "host"}}}, bpt, 16, kTiers, 0).value();
  auto wide = SnapshotLedger(std::vector<OwnedCacheState>{{3, 9, {"gpu"}}}, bpt, 16, kTiers, 0).value();
  EXPECT_EQ(two.logical, one.logical);
  EXPECT_EQ(two.materialized, 2 * one.materialized);
  EXPECT_EQ(wide.logical, one.logical);
  EXPECT_EQ(wide.materialized, one.materialized);
  EXPECT_GT(wide.physical, one.physical);
}

TEST(ByteTrajectory, WorkedFixtureIsValid) {
  Json doc = test::LoadJson(kFixture);
  Violations v = ValidateByteTrajectory(doc);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

TEST(ByteTrajectory, CapacityBelowCommitAndUndeclaredTierAreRejected) {
  std::vector<OwnedCacheState> over = {{5, 4, {"gpu"}}};
  EXPECT_FALSE(SnapshotLedger(over, 64, 16, kTiers, 0).ok());
  std::vector<OwnedCacheState> disk = {{1, 4, {"disk"}}};
  EXPECT_FALSE(SnapshotLedger(disk, 64, 16, kTiers, 0).ok());
}

TEST(ByteTrajectory, OverflowIsAnErrorNotAWrap) {
  std::vector<OwnedCacheState> huge = {{1, uint64_t{1} << 62, {"gpu", "host"}}};
  auto l = SnapshotLedger(huge, 64, 16, kTiers, 0);
  EXPECT_FALSE(l.ok());
}

// Probe 78: byte quantities were capped at 2^53 (the I-JSON range of counts), so an ABI whose
// B_token is 2^60 (which `calc kv-bytes` computes) had no valid document: the true value was out
// of range and any other a coefficient drift. They reach 2^64 - 1 now, overflow-checked.
TEST(ByteTrajectory, RegressionAByteCoefficientBeyond2To53CanBeDeclared) {
  Json doc = test::LoadJson("reference/ledger/testdata/btoken_2_60.json");
  EXPECT_EQ(doc["bytes_per_token"].get<uint64_t>(), uint64_t{1} << 60);
  Violations v = ValidateByteTrajectory(doc);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  doc["bytes_per_token"] = uint64_t{1} << 53;
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(doc)),
            std::vector<std::string>{"LEDGER_TOKEN_COEFFICIENT_DRIFT"});
}

TEST(ByteTrajectory, SchemaErrorsStopBeforeLedgerChecks) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][4].erase("rows");
  doc["bytes_per_token"] = 128;  // would drift, but the schema gate stops first
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(doc)), std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

TEST(ByteTrajectory, ReplayStopsAtTheFirstIllegalEvent) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][4]["rows"] = 2;  // decode of two rows
  doc["events"][7]["op"] = "finish";  // would also be illegal later
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(doc)), std::vector<std::string>{"LEDGER_DECODE_NOT_ONE_ROW"});
}

TEST(ByteTrajectory, EventsAfterFinishOrReleaseAreRejected) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][7]["op"] = "decode_publish";  // A publishes after finishing at tau=6
  doc["events"][7]["rows"] = 1;
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(doc)), std::vector<std::string>{"LEDGER_EVENT_AFTER_FINISH"});
  Json late = test::LoadJson(kFixture);
  late["events"][8]["request"] = "A";  // A decodes at tau=8 after its release at tau=7
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(late)), std::vector<std::string>{"LIFECYCLE_HANDLE_RELEASED"});
}

// Probe 91: an arrival after the release was LEDGER_WORK_BEFORE_ARRIVAL "the request already
// arrived", where every other event after release is LIFECYCLE_HANDLE_RELEASED (as the registry
// says under LEDGER_EVENT_AFTER_FINISH).
TEST(ByteTrajectory, RegressionAnArrivalAfterReleaseIsAnEventAfterRelease) {
  Json doc = test::LoadJson(kFixture);
  Json arrive = doc["events"][0];  // A arrives
  ASSERT_EQ(arrive["op"], "arrive");
  arrive["tau"] = doc["events"].back()["tau"].get<uint64_t>() + 1;
  doc["events"].push_back(arrive);
  const Violations v = ValidateByteTrajectory(doc);
  EXPECT_TRUE(test::OnlyViolationAt(v, "LIFECYCLE_HANDLE_RELEASED",
                                    "/events/" + std::to_string(doc["events"].size() - 1) + "/op"))
      << test::Describe(v);
}

// Regression (probe 19): the format could not write the repair append after finish (0x03: an
// ordinary stop leaves the final token unprocessed; one call publishes its row and discards its
// logits), so a runtime that repairs for reuse had no valid trajectory (LEDGER_EVENT_AFTER_FINISH).
// A's repair is inserted between its finish and its release; its expected ledger follows from
// the finish's by the 0x02 identities (one more committed row of A's single copy, inside its
// reservation: logical and materialized grow by B_token, the slack shrinks by it).
TEST(ByteTrajectory, RegressionARepairAfterFinishPublishesOneRow) {
  Json doc = test::LoadJson(kFixture);
  Json& events = doc["events"];
  for (Json& e : events) e["tau"] = e["tau"].get<uint64_t>() * 10;
  ASSERT_EQ(events[6]["op"], "finish");
  ASSERT_EQ(events[6]["request"], "A");
  ASSERT_EQ(events[7]["op"], "release");
  const uint64_t b = doc["bytes_per_token"].get<uint64_t>();
  Json repair = events[6];
  repair["op"] = "repair_publish";
  repair["tau"] = 65;
  repair["rows"] = 1;
  Json& x = repair["expected"];
  x["committed"]["A"] = x["committed"]["A"].get<uint64_t>() + 1;
  x["logical"] = x["logical"].get<uint64_t>() + b;
  x["materialized"] = x["materialized"].get<uint64_t>() + b;
  x["reservation_slack"] = x["reservation_slack"].get<uint64_t>() - b;
  events.insert(events.begin() + 7, repair);
  EXPECT_TRUE(ValidateByteTrajectory(doc).empty())
      << ::testing::PrintToString(test::CodeNames(ValidateByteTrajectory(doc)));

  // A second repair has nothing left to process.
  Json twice = doc;
  Json again = repair;
  again["tau"] = 66;
  twice["events"].insert(twice["events"].begin() + 8, again);
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(twice)),
            std::vector<std::string>{"FRONTIER_NOTHING_TO_REPAIR"});
  // A repair publishes exactly one row.
  Json two_rows = doc;
  two_rows["events"][7]["rows"] = 2;
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(two_rows)),
            std::vector<std::string>{"FRONTIER_REPAIR_ROW_COUNT"});
  // Before finish a one-row publication is a decode: a repair there is out of phase.
  Json early = test::LoadJson(kFixture);
  early["events"][4]["op"] = "repair_publish";
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(early)),
            std::vector<std::string>{"SERVICE_PHASE_ILLEGAL"});
  // B finishes at its reserved capacity (4 rows per copy): its repair does not fit.
  Json full = test::LoadJson(kFixture);
  for (Json& e : full["events"]) e["tau"] = e["tau"].get<uint64_t>() * 10;
  ASSERT_EQ(full["events"][9]["op"], "finish");
  Json b_repair = full["events"][9];
  b_repair["op"] = "repair_publish";
  b_repair["tau"] = 95;
  b_repair["rows"] = 1;
  full["events"].insert(full["events"].begin() + 10, b_repair);
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(full)),
            std::vector<std::string>{"LEDGER_CAPACITY_EXCEEDED"});
}

// Regression (probe 17, finding 04): a wrong declared physical also raised
// LEDGER_TIER_PARTITION_OPEN, blaming the seed's correct tau=5 residency (GPU 800 + host 272 =
// 1,072 B), because the partition was judged against the declared physical only.
TEST(ByteTrajectory, RegressionAWrongPhysicalRaisesOneCode) {
  Json doc = test::LoadJson(kFixture);
  ASSERT_EQ(doc["events"][5]["expected"]["physical"], 1072);
  doc["events"][5]["expected"]["physical"] = 1073;
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_EXPECTED_DRIFT", "/events/5/expected/physical"));
  // A residency that partitions neither physical is still open.
  Json open = test::LoadJson(kFixture);
  open["events"][5]["expected"]["resident_by_tier"]["gpu"] = 801;
  EXPECT_EQ(test::CodeNames(ValidateByteTrajectory(open)),
            std::vector<std::string>{"LEDGER_TIER_PARTITION_OPEN"});
}

// Regression (probe 17, finding 02): a request could finish with 0 or 2 of its 4 prompt rows
// published. Finish is a stop condition, an output decision, and no output is ready before the
// whole prompt is published (M5.1 0x05); it is SERVICE_PHASE_EARLY_FINISH at the finish.
TEST(ByteTrajectory, RegressionFinishBeforeThePromptIsPublishedIsEarly) {
  Json base = test::LoadJson(kFixture);
  ASSERT_EQ(base["requests"][0]["prompt_tokens"], 4);
  for (uint64_t published : {0, 2}) {
    Json doc = base;
    Json events = Json::array();
    for (size_t i = 0; i < 2; ++i) events.push_back(base["events"][i]);  // A arrives, prefills 4
    if (published == 0) {
      events.erase(1);
    } else {
      events[1]["rows"] = published;
    }
    Json finish = base["events"][6];  // A finishes
    finish["tau"] = 2;
    events.push_back(finish);
    doc["events"] = events;
    const Violations v = ValidateByteTrajectory(doc);
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"SERVICE_PHASE_EARLY_FINISH"})
        << published << test::Describe(v);
    EXPECT_EQ(v[0].pointer, "/events/" + std::to_string(events.size() - 1) + "/op");
  }
}

// Regression (probe 33, finding 06): a request that only arrived owns no cache state (arrival is
// not prefill, M5.1 0x02), yet LEDGER_TERMINAL_ALLOCATION_NONZERO named it at the end with
// physical 0 B. A request that published rows and was never released still raises it.
TEST(ByteTrajectory, RegressionAnArriveOnlyRequestIsNoTerminalAllocation) {
  Json doc = test::LoadJson(kFixture);
  Json c = doc["requests"][1];
  c["request_id"] = "C";
  doc["requests"].push_back(c);
  Json arrive = doc["events"].back();  // tau 10, B released: nothing is owned
  arrive["tau"] = 11;
  arrive["request"] = "C";
  arrive["op"] = "arrive";
  arrive["expected"]["committed"] = {{"C", 0}};
  doc["events"].push_back(arrive);
  const Violations v = ValidateByteTrajectory(doc);
  EXPECT_TRUE(v.empty()) << test::Describe(v);

  // C prefills its 2 prompt rows and is never released.
  Json prefill = arrive;
  prefill["tau"] = 12;
  prefill["op"] = "prefill_publish";
  prefill["rows"] = 2;
  doc["events"].push_back(prefill);
  const Violations owned = ValidateByteTrajectory(doc);
  const std::vector<std::string> names = test::CodeNames(owned);
  EXPECT_NE(std::find(names.begin(), names.end(), "LEDGER_TERMINAL_ALLOCATION_NONZERO"),
            names.end())
      << test::Describe(owned);
}

// A mutation audit of the M5.1 0x02/0x03/0x05 calculators (2026-12-05, helper 97: 99 single-point
// mutants of reference/ledger/, reference/saved_work/, reference/service/ and
// reference/frontier/phase.cc; 40 survived every test and the suite, 35 of them real gaps). Each
// test below fails under the mutant its comment names (checked against the mutant's library).

// Mutation audit 2026-12-05 (M21): a tier declared twice is LEDGER_TIER_UNDECLARED (the mutant
// accepted the document).
TEST(ByteTrajectoryRules, TrajectoryTierDeclaredTwiceIsRejected) {
  Json doc = test::LoadJson(kFixture);
  doc["tiers"] = Json::array({"gpu", "host", "gpu"});
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_TIER_UNDECLARED", "/tiers/2"));
}

// Mutation audit 2026-12-05 (M22): a request id declared twice is LEDGER_REQUEST_INVALID alone (the
// mutant replayed it and raised ~50 LEDGER_EXPECTED_DRIFT instead).
TEST(ByteTrajectoryRules, TrajectoryDuplicateRequestIdIsRequestInvalid) {
  Json doc = test::LoadJson(kFixture);
  doc["requests"].push_back(doc["requests"][0]);
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_REQUEST_INVALID", "/requests/2/request_id"));
}

// A tier name of 100 KB declared twice is named by its first 80 bytes and its length, not quoted
// whole (2026-12-07).
TEST(ByteTrajectoryRules, RegressionALongDuplicateTierIsQuotedClipped) {
  Json doc = test::LoadJson(kFixture);
  const std::string tier(100000, 't');
  doc["tiers"] = Json::array({"gpu", "host", tier, tier});
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(test::CodeNames(v)[0], "LEDGER_TIER_UNDECLARED") << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/tiers/3");
  EXPECT_EQ(v[0].message,
            "tier \"" + std::string(80, 't') + "...\" (100000 bytes) is declared twice");
}

// Mutation audit 2026-12-05 (M23): reserved_token_capacity 0 is LEDGER_REQUEST_INVALID even for a
// request that only arrives (the mutant accepted it).
TEST(ByteTrajectoryRules, TrajectoryZeroCapacityIsRequestInvalid) {
  Json doc = test::LoadJson(kFixture);
  doc["requests"].push_back(Json::parse(R"({"request_id": "C", "prompt_tokens": 1,
      "replica_count": 1, "copy_tiers": ["gpu"], "reserved_token_capacity": 0})"));
  Json ev = doc["events"].back();
  ev["tau"] = 11;
  ev["request"] = "C";
  ev["op"] = "arrive";
  ev["expected"]["committed"] = Json::parse(R"({"C": 0})");
  doc["events"].push_back(ev);
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(
      test::OnlyViolationAt(v, "LEDGER_REQUEST_INVALID", "/requests/2/reserved_token_capacity"));
}

// Mutation audit 2026-12-05 (M25): trajectory events are strictly ordered; an equal tau is
// LEDGER_EVENT_ORDER.
TEST(ByteTrajectoryRules, TrajectoryEqualTauIsOutOfOrder) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][2]["tau"] = 1;  // events[1] is at tau 1
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_EVENT_ORDER", "/events/2/tau"));
}

// Mutation audit 2026-12-05 (M26): rows on a non-publication event (arrive with 4 rows) is
// LEDGER_NONPUBLISH_ROWS; no test or fixture raised the code at all.
TEST(ByteTrajectoryRules, TrajectoryArriveWithRowsIsNonpublishRows) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][0]["rows"] = 4;
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_NONPUBLISH_ROWS", "/events/0/rows"));
}

// Mutation audit 2026-12-05 (M27): a second arrive of a request is LEDGER_WORK_BEFORE_ARRIVAL (the
// mutant accepted it).
TEST(ByteTrajectoryRules, TrajectorySecondArriveIsRejected) {
  Json doc = test::LoadJson(kFixture);
  for (Json& e : doc["events"]) e["tau"] = e["tau"].get<uint64_t>() * 10;
  Json again = doc["events"][1];  // after A's prefill: the ledger a no-op arrive would keep
  again["tau"] = 15;
  again["op"] = "arrive";
  again["rows"] = 0;
  again["workspace_bytes"] = 0;
  again["expected"]["temporary_workspace"] = 0;
  again["expected"]["instantaneous"] = again["expected"]["physical"];
  doc["events"].insert(doc["events"].begin() + 2, again);
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_WORK_BEFORE_ARRIVAL", "/events/2/op"));
}

// Mutation audit 2026-12-05 (M33): a prefill one row past the prompt is LEDGER_PREFILL_OVERRUN
// (only 0 rows was tested).
TEST(ByteTrajectoryRules, TrajectoryPrefillOneRowPastThePromptIsOverrun) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][3]["rows"] = 3;  // B's prompt has 2 rows
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_PREFILL_OVERRUN", "/events/3/rows"));
}

// Mutation audit 2026-12-05 (M34): decode_publish before the whole prompt is published is
// rejected at /op (the mutant let it publish and failed later with SERVICE_PHASE_EARLY_FINISH);
// since probe 91 with the trace checker's code for it, SERVICE_PHASE_DECODE_BEFORE_PREFILL
// (LEDGER_DECODE_NOT_ONE_ROW before).
TEST(ByteTrajectoryRules, TrajectoryDecodeBeforeThePromptIsPublishedIsRejected) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][1]["rows"] = 3;  // A publishes 3 of 4 prompt rows, then decodes at tau 4
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "SERVICE_PHASE_DECODE_BEFORE_PREFILL", "/events/4/op"));
}

// Mutation audit 2026-12-05 (M39): the declared peak instantaneous bytes are compared (1169 for
// 1168); the mutant dropped the comparison and nothing noticed.
TEST(ByteTrajectoryRules, TrajectoryPeakInstantaneousIsCompared) {
  Json doc = test::LoadJson(kFixture);
  doc["expected_peaks"]["instantaneous"] = 1169;
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_EXPECTED_DRIFT", "/expected_peaks/instantaneous"));
}

// Mutation audit 2026-12-05 (M42): a residency that partitions physical over the right tiers but
// puts bytes on the wrong tier is LEDGER_EXPECTED_DRIFT (the mutant accepted gpu 799 / host 273 for
// 800 / 272).
TEST(ByteTrajectoryRules, TrajectoryResidencyOnTheWrongTierIsDrift) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][3]["expected"]["resident_by_tier"] = Json::parse(R"({"gpu": 799, "host": 273})");
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(
      test::OnlyViolationAt(v, "LEDGER_EXPECTED_DRIFT", "/events/3/expected/resident_by_tier"));
}

// Mutation audit 2026-12-05 (M43): the declared committed lengths of an event are compared (A: 5
// after a 4-row prefill).
TEST(ByteTrajectoryRules, TrajectoryCommittedLengthsAreCompared) {
  Json doc = test::LoadJson(kFixture);
  doc["events"][1]["expected"]["committed"] = Json::parse(R"({"A": 5})");
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_EXPECTED_DRIFT", "/events/1/expected/committed"));
}

// Mutation audit 2026-12-05 (M46): prompt_tokens 0 is LEDGER_REQUEST_INVALID (the mutant accepted a
// request C with no prompt and no events).
TEST(ByteTrajectoryRules, TrajectoryZeroPromptIsRequestInvalid) {
  Json doc = test::LoadJson(kFixture);
  doc["requests"].push_back(Json::parse(R"({"request_id": "C", "prompt_tokens": 0,
      "replica_count": 1, "copy_tiers": ["gpu"], "reserved_token_capacity": 1})"));
  const Violations v = ValidateByteTrajectory(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "LEDGER_REQUEST_INVALID", "/requests/2/prompt_tokens"));
}

}  // namespace
}  // namespace kvc
