// Tests of the race fuzzer: nothing on the correct store, every mutant found, shards partition.
#include "reference/race/fuzzer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "reference/race/driver.h"

namespace kvc::race {
namespace {

TargetFactory Store(Mutant m, uint32_t layers = 2) {
  return [m, layers]() -> StatusOr<std::unique_ptr<RaceTarget>> {
    return std::unique_ptr<RaceTarget>(new StoreTarget(RaceAbi(layers), m));
  };
}

CampaignOptions Small(uint64_t seed) {
  CampaignOptions o;
  o.shape = {3, 1, 60, 2};
  o.seed = seed;
  o.programs = 2000;  // a bound on work, not on time: detection must not depend on load
  o.shrink = false;
  return o;
}

TEST(RaceFuzzer, CorrectStoreHasNoFailures) {
  CampaignOptions o = Small(7);
  o.programs = 40;
  o.shape = {4, 2, 150, 2};
  CampaignReport r = RunCampaign(o, Store(Mutant::kNone));
  EXPECT_FALSE(r.failure.has_value()) << ProgramToText(r.failure->shrunk);
  EXPECT_TRUE(r.first_error.empty()) << r.first_error;
  EXPECT_EQ(r.programs_run, 40u);
  std::cout << "seed 7: " << r.histories << " histories, " << r.ops << " ops\n";
}

// Race mutant 110: a history whose check runs out of its budget counts as unknown, neither a
// pass nor a failure, and the campaign goes on. A budget of 0 stops a search at its first
// deadline check (after 1,024 steps); 16 threads on one handle give such searches (16-17 of
// 20 programs measured, 2026-12-06), so 40 programs without one would be a broken counter.
TEST(RaceFuzzer, HistoriesBeyondTheCheckBudgetAreCountedUnknown) {
  CampaignOptions o = Small(5);
  o.programs = 40;
  o.shape = {16, 1, 400, 2};
  o.check_budget = std::chrono::milliseconds(0);
  CampaignReport r = RunCampaign(o, Store(Mutant::kNone));
  EXPECT_FALSE(r.failure.has_value());
  EXPECT_TRUE(r.first_error.empty()) << r.first_error;
  EXPECT_EQ(r.programs_run, 40u);
  EXPECT_GT(r.unknown_verdicts, 0u);
  EXPECT_LE(r.unknown_verdicts, r.histories);
}

TEST(RaceFuzzer, FindsEveryMutant) {
  for (const MutantInfo& m : AllMutants()) {
    if (m.mutant == Mutant::kNone) continue;
    CampaignReport r = RunCampaign(Small(11), Store(m.mutant));
    EXPECT_TRUE(r.failure.has_value())
        << m.name << " not found (seed 11; reproduce: kvconform fuzz races --mutant " << m.name
        << " --seed 11 --threads 3 --handles 1 --ops 60)";
    if (!r.failure) continue;
    // The program seed the report prints regenerates the failing program (the campaign seed
    // and the program's index name it too): a reproducer's provenance (mutation audit: a
    // wrong program_seed passed every test).
    EXPECT_EQ(r.failure->program_seed, ProgramSeed(11, r.failure->program_index)) << m.name;
    EXPECT_EQ(ProgramToText(GenerateProgram(Small(11).shape, r.failure->program_seed)),
              ProgramToText(r.failure->program))
        << m.name;
  }
}

TEST(RaceFuzzer, ShrinkingKeepsAFailingProgram) {
  CampaignOptions o = Small(3);
  o.shrink = true;
  o.shrink_time = std::chrono::milliseconds(30'000);  // normally well under a second
  CampaignReport r = RunCampaign(o, Store(Mutant::kFinishAsRelease));
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_LE(r.failure->shrunk.script.size(), 3u) << ProgramToText(r.failure->shrunk);
  EXPECT_FALSE(r.failure->history.ops.empty());
}

// --repeat: each program runs that many times (one history each).
TEST(RaceFuzzer, RepeatRunsEachProgramThatManyTimes) {
  CampaignOptions o = Small(5);
  o.programs = 2;
  o.repeat = 3;
  o.shape.ops = 10;
  CampaignReport r = RunCampaign(o, Store(Mutant::kNone));
  EXPECT_EQ(r.programs_run, 2u);
  EXPECT_EQ(r.histories, 6u);
}

// --time: the campaign stops starting programs once its time is up.
TEST(RaceFuzzer, TimeLimitStopsTheCampaign) {
  CampaignOptions o = Small(5);
  o.programs = 5000;
  o.shape.ops = 10;
  o.time = std::chrono::milliseconds(1);
  CampaignReport r = RunCampaign(o, Store(Mutant::kNone));
  EXPECT_GE(r.programs_run, 1u);
  EXPECT_LT(r.programs_run, 5000u);
}

// Regression: unlimited times (milliseconds::max()) overflowed their conversion to the clock's
// nanoseconds and wrapped below zero, so the campaign stopped before its first program and the
// shrinker before its first candidate (undefined behaviour, as for the CLI's `inf`, 10^15 ms,
// whose product wrapped too: UBSan reported it in `fuzz check --budget inf`).
TEST(RaceFuzzer, RegressionUnlimitedTimesDoNotRunOutAtOnce) {
  CampaignOptions o = Small(5);
  o.programs = 3;
  o.shape.ops = 10;
  o.time = std::chrono::milliseconds::max();
  EXPECT_EQ(RunCampaign(o, Store(Mutant::kNone)).programs_run, 3u);
  CampaignOptions s = Small(3);
  s.shrink = true;
  s.shrink_time = std::chrono::milliseconds::max();
  CampaignReport r = RunCampaign(s, Store(Mutant::kFinishAsRelease));
  ASSERT_TRUE(r.failure.has_value());
  EXPECT_LE(r.failure->shrunk.script.size(), 3u) << ProgramToText(r.failure->shrunk);
}

TEST(RaceFuzzer, ShardsPartitionTheCampaign) {
  CampaignOptions o = Small(5);
  o.programs = 10;
  o.shape.ops = 10;
  uint64_t total = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    o.shard_index = i;
    o.shard_count = 3;
    total += RunCampaign(o, Store(Mutant::kNone)).programs_run;
  }
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(GenerateProgram(o.shape, 42).script.size(), 10u);
  EXPECT_EQ(ProgramToText(GenerateProgram(o.shape, 42)), ProgramToText(GenerateProgram(o.shape, 42)));
}

// The example Python driver round trip, and the kit's handling of broken drivers.
class PythonDriver : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("python3 -c 'import json' >/dev/null 2>&1") != 0) GTEST_SKIP() << "no python3";
  }
  static std::string Cmd(const std::string& flags = "") {
    // Appended in place: GCC 12 -O2 misreports `std::string("...") + LITERAL + ...` here as
    // -Warray-bounds (depending on the source directory's length, a compile-time literal).
    std::string cmd = "python3 ";
    cmd += KVCONFORM_SOURCE_DIR;
    cmd += "/adapters/drivers/python_store_driver.py ";
    cmd += flags;
    return cmd;
  }
  static CampaignReport Run(const std::string& flags, uint64_t programs,
                            ProgramShape shape = {3, 2, 80, 2}, int timeout_ms = 10'000) {
    CampaignOptions o = Small(2);
    o.programs = programs;
    // `programs` bounds the work; the time budget only backstops a hang. 40 s cut a sanitizer
    // build short on a loaded 2-core host (StalePublishBugIsFound: 23 s alone under ASan), so
    // the campaign stopped before the planted bug's program ran.
    o.time = std::chrono::milliseconds(300'000);
    o.shape = shape;
    TargetFactory f = [cmd = Cmd(flags), timeout_ms]() -> StatusOr<std::unique_ptr<RaceTarget>> {
      auto d = DriverTarget::Start(cmd, RaceAbi(2), std::chrono::milliseconds(timeout_ms));
      if (!d.ok()) return d.status();
      return std::unique_ptr<RaceTarget>(std::move(*d));
    };
    return RunCampaign(o, f);
  }
};

TEST_F(PythonDriver, CorrectDriverRoundTrip) {
  CampaignReport r = Run("", 3);
  EXPECT_TRUE(r.first_error.empty()) << r.first_error;  // includes a timeout under load
  EXPECT_FALSE(r.failure.has_value());
  EXPECT_EQ(r.histories, 3u);
  EXPECT_EQ(r.last_history.header["digests"], "opaque");
}

TEST_F(PythonDriver, StalePublishBugIsFound) {
  // One lineage, many appends: stale publications are frequent.
  CampaignReport r = Run("--bug stale-publish", 60, {4, 1, 150, 2});
  EXPECT_TRUE(r.failure.has_value()) << r.first_error;
}

TEST_F(PythonDriver, BrokenDriversAreReportedNotHung) {
  auto code = [](const std::string& flags) {
    CampaignReport r = Run(flags, 2, {3, 2, 80, 2}, flags.find("hang") != std::string::npos ? 1500 : 10'000);
    return r.first_error.substr(0, r.first_error.find(':'));
  };
  EXPECT_EQ(code("--crash-after 10"), "RACE_DRIVER_CRASHED");
  // Regression (probe 63): a driver that exited while a process it started held its output
  // open was a timeout after --driver-timeout-ms, without its exit status.
  {
    CampaignReport r = Run("--orphan-after 10", 1, {3, 2, 80, 2}, 20'000);
    EXPECT_EQ(r.first_error.substr(0, r.first_error.find(':')), "RACE_DRIVER_CRASHED")
        << r.first_error;
    EXPECT_NE(r.first_error.find("exited with status 3"), std::string::npos) << r.first_error;
  }
  EXPECT_EQ(code("--hang-after 10"), "RACE_DRIVER_TIMEOUT");
  EXPECT_EQ(code("--garbage-after 10"), "RACE_DRIVER_PROTOCOL");
  EXPECT_EQ(code("--out-of-order"), "RACE_DRIVER_PROTOCOL");
  // Regression (probe 34): a result with a member its op does not return was a linearizability
  // failure (RACE_NOT_LINEARIZABLE with a shrunk program), not the driver's protocol error.
  EXPECT_EQ(code("--wrong-shape-after 10"), "RACE_DRIVER_PROTOCOL");
  // Regression (probe 44): a member no message has, beside the result or in the hello, passed;
  // a hello whose protocol was a number threw out of the reader thread and aborted the kit.
  EXPECT_EQ(code("--extra-member-after 10"), "RACE_DRIVER_PROTOCOL");
  EXPECT_EQ(code("--bad-hello extra-member"), "RACE_DRIVER_PROTOCOL");
  EXPECT_EQ(code("--bad-hello protocol-number"), "RACE_DRIVER_PROTOCOL");
  // Regression (probe 34): a driver that stopped reading its input while answering ahead filled
  // the pipe, and the worker's blocking write hung the kit forever. Writes are bounded now: the
  // driver's answer for an op not yet sent is the protocol error (or, had it stayed silent, the
  // write's timeout).
  {
    CampaignReport r = Run("--stop-reading-after 10", 1, {1, 1, 2000, 2}, 1500);
    const std::string c = r.first_error.substr(0, r.first_error.find(':'));
    EXPECT_TRUE(c == "RACE_DRIVER_PROTOCOL" || c == "RACE_DRIVER_TIMEOUT") << r.first_error;
  }
  auto missing = DriverTarget::Start("exit 7", RaceAbi(2), std::chrono::milliseconds(1500));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().error(), ErrorCode::RACE_DRIVER_CRASHED);
}

}  // namespace
// Regression (probe 69): program seeds were SplitMix64(seed + index), so seed s + 1 ran seed
// s's programs shifted by one: "five seeds" were nearly one campaign. Campaigns of seeds 1..5
// now share none of their first 1,000 programs.
TEST(RaceFuzzer, RegressionConsecutiveSeedsRunDifferentPrograms) {
  std::set<uint64_t> seen;
  for (uint64_t seed = 1; seed <= 5; ++seed)
    for (uint64_t i = 0; i < 1000; ++i)
      EXPECT_TRUE(seen.insert(ProgramSeed(seed, i)).second) << "seed " << seed << " program " << i;
}

}  // namespace kvc::race
