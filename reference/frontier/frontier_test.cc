// Tests of the output/cache frontier and the phase projection against the seed's worked numbers.
#include "reference/frontier/frontier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "reference/frontier/phase.h"
#include "reference/testutil/testutil.h"

namespace kvc::frontier {
namespace {

AppendCall Mk(AppendPurpose p, uint64_t rows, std::optional<uint64_t> token = std::nullopt,
              std::vector<uint64_t> drafts = {}, uint64_t accepted = 0) {
  AppendCall c;
  c.purpose = p;
  c.rows = rows;
  c.input_token = token;
  c.draft_tokens = std::move(drafts);
  c.accepted = accepted;
  return c;
}
AppendCall Prefill(uint64_t rows) { return Mk(AppendPurpose::kPrefill, rows); }
AppendCall Decode(uint64_t token) { return Mk(AppendPurpose::kDecode, 1, token); }

// Runs a legal call: check, then publish.
void Publish(FrontierState& f, const AppendCall& c) {
  ASSERT_TRUE(f.CheckAppend(c).ok()) << f.CheckAppend(c).ToString();
  f.ApplyPublished(c);
}

TEST(FrontierTest, OrdinaryStopAndRepairReproduceTheSeedCounters) {
  // 0x03: P = 4, G = 3; 0x09: O = G_in + 1, K_c = S + G_in; repair K_c = S + G_in + 1.
  FrontierState f(4);
  Publish(f, Prefill(4));
  ASSERT_TRUE(f.Emit(0, 10).ok());
  EXPECT_EQ(f.committed(), 4u);
  Publish(f, Decode(10));
  ASSERT_TRUE(f.Emit(1, 11).ok());
  Publish(f, Decode(11));
  ASSERT_TRUE(f.Emit(2, 12).ok());
  const uint64_t g_in = f.processed();
  EXPECT_EQ(g_in, 2u);
  EXPECT_EQ(f.emitted(), g_in + 1);      // O = G_in + 1 = 3
  EXPECT_EQ(f.committed(), 4 + g_in);    // K_c = S + G_in = 6
  EXPECT_EQ(f.frontier_token(), 12u);
  ASSERT_TRUE(f.CheckFinish().ok());
  AppendCall repair = Mk(AppendPurpose::kRepair, 1, 12);
  Publish(f, repair);
  EXPECT_EQ(f.emitted(), 3u);            // no new output
  EXPECT_EQ(f.committed(), 7u);          // S + G_in + 1
  EXPECT_EQ(f.ready_outputs(), 0u);      // repair logits discarded
  EXPECT_EQ(f.Emit(3, 13, /*from_repair_logits=*/true).error(),
            ErrorCode::FRONTIER_REPAIR_EMITS_OUTPUT);
}

// Regressions (an adversarial probe, 2026-12-03): with no emitted token unprocessed, a
// verification processes only drafts, and its first accepted draft needs target logits that are
// still ready: a verification could claim an already processed token, and one after a repair
// accepted a draft on the repair's discarded logits.
TEST(FrontierTest, RegressionAVerificationWithoutAFrontierTokenNeedsReadyLogits) {
  FrontierState f(4);
  Publish(f, Prefill(4));
  ASSERT_TRUE(f.Emit(0, 10).ok());
  Publish(f, Decode(10));  // output 1 is ready; the frontier is empty
  const AppendCall verify = Mk(AppendPurpose::kVerify, 1, std::nullopt, {11, 12}, 1);
  EXPECT_TRUE(f.CheckAppend(verify).ok());  // the decode's logits judge draft 11
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kVerify, 1, 10, {11, 12}, 1)).error(),
            ErrorCode::FRONTIER_TOKEN_MISMATCH);  // token 10 was processed by the decode
  ASSERT_TRUE(f.Emit(1, 11).ok());
  Publish(f, Mk(AppendPurpose::kRepair, 1, 11));  // its logits are discarded
  EXPECT_EQ(f.CheckAppend(verify).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);
}

// Regression (an adversarial probe, 2026-12-03): a prefill naming an input token passed,
// although the format says input_token is absent on prefill.
TEST(FrontierTest, RegressionAPrefillNamesNoInputToken) {
  FrontierState f(4);
  AppendCall p = Prefill(4);
  ASSERT_TRUE(f.CheckAppend(p).ok());
  p.input_token = 7;
  EXPECT_EQ(f.CheckAppend(p).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
}

// Probe 70 (mutation adequacy): a prefill of 0 rows was admitted by the frontier (decode,
// repair and verify refuse 0 rows since probe 54), and published after output 0 it was only by
// accident that no second output became ready (a mutant of ApplyPublished let output 1 run
// before output 0's token was processed). Refused now, before and after the prompt completes.
TEST(FrontierTest, RegressionAPrefillOfNoRowsIsRefused) {
  FrontierState f(2);
  EXPECT_EQ(f.CheckAppend(Prefill(0)).error(), ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH);
  ASSERT_TRUE(f.CheckAppend(Prefill(2)).ok());
  f.ApplyPublished(Prefill(2));
  ASSERT_TRUE(f.Emit(0, 10).ok());
  EXPECT_EQ(f.CheckAppend(Prefill(0)).error(), ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH);
  EXPECT_EQ(f.ready_outputs(), 0u);
}

// A rollback keeps the outputs whose logits came from the rows kept (output j's row is S + j):
// truncating K_c = S + 3 to S + 1 leaves outputs 0 and 1, output 1 again the unprocessed
// frontier token, and the next output index 2. Tracking stops below the prompt and while
// accepted drafts await emission.
TEST(FrontierTest, TruncateRollsOutputsBackWithTheirRows) {
  FrontierState f(4);
  Publish(f, Prefill(4));
  ASSERT_TRUE(f.Emit(0, 10).ok());
  Publish(f, Decode(10));
  ASSERT_TRUE(f.Emit(1, 11).ok());
  Publish(f, Decode(11));
  ASSERT_TRUE(f.Emit(2, 12).ok());
  Publish(f, Decode(12));  // K_c = 7, O = 3, logits of row 6 ready for output 3
  FrontierState g = f;
  g.Truncate(7);  // not shorter: nothing changes
  EXPECT_TRUE(g == f);
  f.Truncate(5);
  ASSERT_TRUE(f.tracked());
  EXPECT_EQ(f.committed(), 5u);
  EXPECT_EQ(f.processed(), 1u);
  EXPECT_EQ(f.emitted(), 2u);  // O = G_in + 1
  EXPECT_EQ(f.rolled_back(), 1u);
  EXPECT_EQ(f.frontier_token(), 11u);
  EXPECT_EQ(f.ready_outputs(), 0u);
  EXPECT_EQ(f.Emit(2, 99).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);
  FrontierState h = g;
  h.Truncate(5);
  EXPECT_EQ(h.CheckAppend(Decode(12)).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  Publish(h, Decode(11));           // output 1 processed again
  ASSERT_TRUE(h.Emit(2, 20).ok());  // the next output is index 2 (a new token)
  EXPECT_EQ(h.emitted(), 3u);
  // At S exactly, output 0 (from the prompt's last row) stays.
  FrontierState at_s = g;
  at_s.Truncate(4);
  EXPECT_EQ(at_s.emitted(), 1u);
  EXPECT_EQ(at_s.frontier_token(), 10u);
  // Into the prompt: every output goes with the rows; the prompt must be completed again before
  // output 0 or a decode (before 2026-12-04 tracking stopped here and both passed: probe 9).
  FrontierState into_prompt = g;
  into_prompt.Truncate(3);
  ASSERT_TRUE(into_prompt.tracked());
  EXPECT_EQ(into_prompt.committed(), 3u);
  EXPECT_EQ(into_prompt.emitted(), 0u);
  EXPECT_EQ(into_prompt.rolled_back(), 3u);
  EXPECT_FALSE(into_prompt.frontier_token().has_value());
  EXPECT_TRUE(into_prompt.CheckFinish().ok());  // M5.1 Loop 8 finishes such a branch
  EXPECT_EQ(into_prompt.CheckAppend(Decode(12)).error(),
            ErrorCode::SERVICE_PHASE_DECODE_BEFORE_PREFILL);
  {
    FrontierState emit_now = into_prompt;
    Status s = emit_now.Emit(0, 99);
    EXPECT_EQ(s.error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);
    EXPECT_NE(s.message().find("(3 of 4 prompt rows committed: output 0 needs the whole prompt)"),
              std::string::npos)
        << s.message();
  }
  EXPECT_EQ(into_prompt.CheckAppend(Prefill(2)).error(), ErrorCode::SERVICE_PHASE_PROMPT_OVERRUN);
  Publish(into_prompt, Prefill(1));  // the prompt's last row again: output 0's logits
  ASSERT_TRUE(into_prompt.Emit(0, 30).ok());
  Publish(into_prompt, Decode(30));
  ASSERT_TRUE(into_prompt.Emit(1, 31).ok());
  EXPECT_EQ(into_prompt.committed(), 5u);
  // Accepted drafts committed but not yet emitted: their rows go with the rollback (before
  // 2026-12-04 the frontier stopped being followed here; see the probe 16 regression below).
  FrontierState v(2);
  Publish(v, Prefill(2));
  ASSERT_TRUE(v.Emit(0, 1).ok());
  Publish(v, Mk(AppendPurpose::kVerify, 3, 1, {5, 6, 7}, 2));  // rows 2 (1), 3 (5), 4 (6)
  v.Truncate(3);  // output 0's row stays; both drafts' rows go
  EXPECT_TRUE(v.tracked());
  EXPECT_EQ(v.committed(), 3u);
  EXPECT_EQ(v.ready_outputs(), 1u);  // output 1, from row 2's logits
  ASSERT_TRUE(v.Emit(1, 9).ok());
  EXPECT_EQ(v.frontier_token(), 9u);
}

// Regression (probe 9, 2026-12-04): a decode of an accepted draft, whose row the verification
// already committed, was FRONTIER_CACHE_OVERCOMMIT "a row for a token that was never emitted".
// The code stays (the row would be a second one, K > S + O); the message says what the token is.
TEST(FrontierTest, RegressionADecodeOfACommittedDraftSaysItsRowIsCommitted) {
  FrontierState f(4);
  Publish(f, Prefill(4));
  ASSERT_TRUE(f.Emit(0, 100).ok());
  FrontierState two = f;
  Publish(f, Mk(AppendPurpose::kVerify, 2, 100, {7, 8}, 1));  // draft 7 accepted
  ASSERT_TRUE(f.Emit(1, 7).ok());
  Status s = f.CheckAppend(Decode(7));
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_NE(s.message().find("decode append processes token 7 (output 1), whose row is already "
                             "committed: no emitted token is unprocessed"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("output 2 is selected from the last publication's logits first"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("never emitted"), std::string::npos) << s.message();
  // Two accepted, one emitted: the other is still to be emitted.
  Publish(two, Mk(AppendPurpose::kVerify, 3, 100, {7, 8}, 2));
  ASSERT_TRUE(two.Emit(1, 7).ok());
  s = two.CheckAppend(Decode(7));
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_NE(s.message().find("accepted drafts are still to be emitted (next: token 8 as output 2)"),
            std::string::npos)
      << s.message();
  // A token never emitted keeps its message.
  s = two.CheckAppend(Decode(4242));
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_NE(s.message().find("a token that was never emitted"), std::string::npos) << s.message();
}

// Regression (probe 83, 2026-12-06): after a truncate rolled outputs back, a decode of one of
// them was "a token that was never emitted", and an output numbered as before the truncate
// "expected the next index 0" with no word of the rollback. The codes stay; the messages say it.
TEST(FrontierTest, RegressionAfterATruncateTheMessagesNameTheRolledBackOutputs) {
  FrontierState f(4);
  Publish(f, Prefill(4));
  ASSERT_TRUE(f.Emit(0, 100).ok());
  Publish(f, Decode(100));
  ASSERT_TRUE(f.Emit(1, 101).ok());
  f.Truncate(0);  // preempted and recomputed: every output goes with the rows
  ASSERT_EQ(f.rolled_back(), 2u);
  Publish(f, Prefill(4));
  Status s = f.CheckAppend(Decode(101));
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_NE(s.message().find("none of the outputs the request's rows keep (2 rolled back by "
                             "truncation are emitted again before a decode processes them)"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("never emitted"), std::string::npos) << s.message();
  s = f.Emit(2, 102);
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_OUTPUT_INDEX_GAP);
  EXPECT_NE(s.message().find("expected the next index 0 (2 outputs were rolled back by "
                             "truncation"),
            std::string::npos)
      << s.message();
}

// Probe 96: a beam's fork child, written after its parent emitted output 1, re-emitted output 1
// and read only "expected the next index 2"; the message now says the index is already held,
// and how a fork's prefix carries outputs.
TEST(FrontierTest, RegressionAnIndexAlreadyHeldSaysSoAndNamesTheForkPrefix) {
  FrontierState parent(4);
  Publish(parent, Prefill(4));
  ASSERT_TRUE(parent.Emit(0, 100).ok());
  Publish(parent, Decode(100));
  ASSERT_TRUE(parent.Emit(1, 101).ok());
  parent.ShareOutputs();
  FrontierState child = parent;  // a fork at prefix_length 5 after output 1: it holds 0 and 1
  Status s = child.Emit(1, 201);
  EXPECT_EQ(s.error(), ErrorCode::FRONTIER_OUTPUT_INDEX_GAP);
  EXPECT_NE(s.message().find("expected the next index 2 (output 1 is already held by this "
                             "handle: emitted on it, or inherited with a fork's prefix"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(parent.Emit(3, 103).message().find("already held"), std::string::npos);
}

TEST(FrontierTest, SpeculativeVerificationCommitsOnlyAcceptedRows) {
  // 0x09: base 100, drafts [d0..d3], two accepted, correction -> 102, repair -> 103.
  FrontierState f(99);
  Publish(f, Prefill(99));
  ASSERT_TRUE(f.Emit(0, 1).ok());
  Publish(f, Decode(1));
  ASSERT_EQ(f.committed(), 100u);
  AppendCall verify = Mk(AppendPurpose::kVerify, 2, std::nullopt, {20, 21, 22, 23}, 2);
  const uint64_t emitted_before = f.emitted();
  Publish(f, verify);
  EXPECT_EQ(f.committed(), 102u);
  ASSERT_TRUE(f.Emit(1, 20).ok());
  ASSERT_TRUE(f.Emit(2, 21).ok());
  ASSERT_TRUE(f.Emit(3, 99).ok());  // correction c2
  EXPECT_EQ(f.emitted() - emitted_before, 3u);
  EXPECT_EQ(f.frontier_token(), 99u);
  AppendCall relabel = Mk(AppendPurpose::kRepair, 1, 99);
  relabel.reused_draft_index = 2;
  EXPECT_EQ(f.CheckAppend(relabel).error(), ErrorCode::FRONTIER_REJECTED_ROW_RELABELED);
  Publish(f, Mk(AppendPurpose::kRepair, 1, 99));
  EXPECT_EQ(f.committed(), 103u);
}

// Probe 16: a verification published before the previous one's accepted drafts were emitted
// replaced them, so output 1 was expected to be the second call's draft. Output j's row is
// S + j: the first call's draft (row 2) is output 1, the second's (row 3) output 2, then the
// bonus token from the second call's logits.
TEST(FrontierTest, RegressionASecondVerificationQueuesAfterUnemittedDrafts) {
  FrontierState f(1);
  Publish(f, Prefill(1));
  ASSERT_TRUE(f.Emit(0, 11).ok());
  Publish(f, Mk(AppendPurpose::kVerify, 2, 11, {21}, 1));  // rows 1 (token 11), 2 (draft 21)
  Publish(f, Mk(AppendPurpose::kVerify, 1, std::nullopt, {31}, 1));  // row 3 (draft 31)
  EXPECT_EQ(f.committed(), 4u);
  EXPECT_EQ(f.ready_outputs(), 3u);
  FrontierState wrong = f;
  EXPECT_EQ(wrong.Emit(1, 31).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  ASSERT_TRUE(f.Emit(1, 21).ok());
  ASSERT_TRUE(f.Emit(2, 31).ok());
  ASSERT_TRUE(f.Emit(3, 40).ok());  // the bonus token: the frontier
  EXPECT_EQ(f.frontier_token(), 40u);
  EXPECT_EQ(f.ready_outputs(), 0u);
}

// Probe 16: a truncate while accepted drafts were still to be emitted stopped following the
// frontier, so an output index gap, a decode of a token never emitted and a wrong finish claim
// all passed. Now the draft rows that go are dropped: the drafts kept are emitted, then one
// output from the last kept row's logits; a truncate below the emitted outputs also rolls them
// back.
TEST(FrontierTest, RegressionATruncateOfUnemittedDraftRowsKeepsFollowingTheFrontier) {
  FrontierState f(1);  // S = 1
  Publish(f, Prefill(1));
  ASSERT_TRUE(f.Emit(0, 11).ok());
  Publish(f, Mk(AppendPurpose::kVerify, 3, 11, {21, 22}, 2));  // rows 1 (11), 2 (21), 3 (22)
  ASSERT_EQ(f.committed(), 4u);
  FrontierState below = f;
  f.Truncate(3);  // draft 22's row goes; draft 21 (row 2) stays accepted
  ASSERT_TRUE(f.tracked());
  EXPECT_EQ(f.committed(), 3u);
  EXPECT_EQ(f.ready_outputs(), 2u);
  FrontierState gap = f;
  EXPECT_EQ(gap.Emit(2, 22).error(), ErrorCode::FRONTIER_OUTPUT_INDEX_GAP);
  FrontierState wrong = f;
  EXPECT_EQ(wrong.Emit(1, 22).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  ASSERT_TRUE(f.Emit(1, 21).ok());
  ASSERT_TRUE(f.Emit(2, 30).ok());  // from row 2's logits: the frontier token
  Publish(f, Decode(30));
  EXPECT_EQ(f.committed(), 4u);

  below.Truncate(1);  // into output 0's row: both drafts go and output 0 is the frontier again
  ASSERT_TRUE(below.tracked());
  EXPECT_EQ(below.frontier_token(), 11u);
  EXPECT_EQ(below.emitted(), 1u);
  EXPECT_EQ(below.CheckAppend(Decode(21)).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  Publish(below, Decode(11));
}

TEST(FrontierTest, VerificationRowCountsAndTokens) {
  FrontierState f(1);
  Publish(f, Prefill(1));
  AppendCall three = Mk(AppendPurpose::kVerify, 3, std::nullopt, {5, 6, 7, 8}, 2);
  EXPECT_EQ(f.CheckAppend(three).error(), ErrorCode::FRONTIER_REJECTED_ROW_COMMITTED);
  // The message counts the rows that may cross as they are here (probe 75: "frontier + accepted
  // drafts" where no emitted token was unprocessed).
  EXPECT_NE(f.CheckAppend(three).message().find(
                "only 2 (2 accepted drafts; no emitted token is unprocessed)"),
            std::string::npos)
      << f.CheckAppend(three).message();
  FrontierState g = f;
  ASSERT_TRUE(g.Emit(0, 4).ok());
  const Status four = g.CheckAppend(Mk(AppendPurpose::kVerify, 4, 4, {5, 6, 7, 8}, 2));
  EXPECT_EQ(four.error(), ErrorCode::FRONTIER_REJECTED_ROW_COMMITTED);
  EXPECT_NE(four.message().find("only 3 (the frontier token's row + 2 accepted drafts)"),
            std::string::npos)
      << four.message();
  AppendCall one = Mk(AppendPurpose::kVerify, 1, std::nullopt, {5, 6, 7, 8}, 2);
  EXPECT_EQ(f.CheckAppend(one).error(), ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH);
  AppendCall many = Mk(AppendPurpose::kVerify, 5, std::nullopt, {5, 6, 7, 8}, 5);
  EXPECT_EQ(f.CheckAppend(many).error(), ErrorCode::FRONTIER_ACCEPTED_EXCEEDS_DRAFT);
}

TEST(FrontierTest, DecodeNeedsTheFrontierToken) {
  FrontierState f(2);
  EXPECT_EQ(f.CheckAppend(Prefill(3)).error(), ErrorCode::SERVICE_PHASE_PROMPT_OVERRUN);
  EXPECT_EQ(f.CheckAppend(Decode(1)).error(), ErrorCode::SERVICE_PHASE_DECODE_BEFORE_PREFILL);
  EXPECT_EQ(f.CheckFinish().error(), ErrorCode::SERVICE_PHASE_EARLY_FINISH);
  Publish(f, Prefill(2));
  EXPECT_EQ(f.CheckAppend(Decode(1)).error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kRepair, 1, 1)).error(),
            ErrorCode::FRONTIER_NOTHING_TO_REPAIR);
  ASSERT_TRUE(f.Emit(0, 7).ok());
  EXPECT_EQ(f.CheckAppend(Decode(8)).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kDecode, 2, 7)).error(),
            ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
  EXPECT_EQ(f.Emit(1, 9).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);
  EXPECT_EQ(f.Emit(5, 9).error(), ErrorCode::FRONTIER_OUTPUT_INDEX_GAP);
}

// OutputTokens against a vector model under random push, shrink, freeze and copy: every copy
// reads back its own sequence whatever its siblings do afterwards (shared segments are never
// written), and a copy after Freeze holds no token of its own.
TEST(OutputTokensTest, CopiesShareFrozenTokensAndReadBackTheirOwnSequence) {
  const uint64_t seed = test::AnnounceSeed(20261204);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<OutputTokens, std::vector<uint64_t>>> logs(1);
  for (int step = 0; step < 4000; ++step) {
    auto& [log, model] = logs[rng() % logs.size()];
    switch (rng() % 6) {
      case 0:
      case 1:
        log.push_back(rng() % 1000);
        model.push_back(log.at(log.size() - 1));
        break;
      case 2: {
        const size_t n = model.empty() ? 0 : rng() % (model.size() + 1);
        log.Shrink(n);
        model.resize(n);
        break;
      }
      case 3:
        log.Freeze();
        EXPECT_EQ(log.unshared(), 0u);
        break;
      case 4:
        if (logs.size() < 16) {
          log.Freeze();
          auto copy = std::make_pair(log, model);  // a fork child
          EXPECT_EQ(copy.first.unshared(), 0u);
          logs.push_back(std::move(copy));
        }
        break;
      case 5:
        if (logs.size() > 1) logs.erase(logs.begin() + static_cast<long>(rng() % logs.size()));
        break;
    }
    for (const auto& [l, m] : logs) {
      ASSERT_EQ(l.size(), m.size()) << "step " << step;
      for (size_t i = 0; i < m.size(); ++i) ASSERT_EQ(l.at(i), m[i]) << "step " << step;
      OutputTokens flat;
      for (uint64_t t : m) flat.push_back(t);
      ASSERT_TRUE(l == flat) << "step " << step;
    }
  }
}

// A chain of a million frozen segments (one per fork generation) is freed without recursion:
// freed through shared_ptr's destructor chain it overflowed the stack (review of c5b9c87: a
// 700,000-deep fork chain crashed `kvconform check` with SIGSEGV).
TEST(OutputTokensTest, RegressionADeepChainIsFreedWithoutRecursion) {
  constexpr size_t kDepth = 1000000;
  {
    OutputTokens log;
    for (size_t i = 0; i < kDepth; ++i) {
      log.push_back(i);
      log.Freeze();
    }
    EXPECT_EQ(log.at(0), 0u);
    EXPECT_EQ(log.back(), kDepth - 1);
    OutputTokens child = log;  // a copy shares the chain; freeing the original frees nothing
    log = OutputTokens();
    EXPECT_EQ(child.at(kDepth / 2), kDepth / 2);
  }  // the child frees the whole chain
  SUCCEED();
}

// Finding the segment of a token follows jump pointers: O(log segments) hops from any copy, so
// rolling K fork children of a G-deep chain back costs K log G, not K x G (probe 10: 40,000
// children of a 40,000-deep chain took 23 s).
TEST(OutputTokensTest, RegressionFindingATokenIsLogarithmicInTheChain) {
  constexpr size_t kDepth = 1 << 17;
  OutputTokens log;
  for (size_t i = 0; i < kDepth; ++i) {
    log.push_back(i);
    log.Freeze();
  }
  size_t worst = 0;
  for (size_t i = 0; i < kDepth; i += 97) {
    worst = std::max(worst, log.hops_to(i));
    ASSERT_EQ(log.at(i), i);
  }
  EXPECT_LE(worst, 3 * 17 + 3) << "the chain is " << kDepth << " segments deep";
  OutputTokens child = log;  // a fork child rolled back to a short prefix
  child.Shrink(5);
  EXPECT_EQ(child.size(), 5u);
  EXPECT_EQ(child.back(), 4u);
  EXPECT_LE(child.hops_to(0), 3 * 3 + 3);
}

// A refused decode naming an old token searches only the last 64 outputs (a full scan per
// event made repeated refused decodes O(outputs) each: probe 10).
TEST(FrontierTest, RegressionADecodeWithoutFrontierSearchesOnlyRecentOutputs) {
  FrontierState f(1);
  f.ApplyPublished(Prefill(1));
  for (uint64_t j = 0; j < 100; ++j) {
    ASSERT_TRUE(f.Emit(j, 1000 + j).ok());
    f.ApplyPublished(Decode(1000 + j));
  }
  auto message = [&](uint64_t token) {
    Status s = f.CheckAppend(Decode(token));
    EXPECT_EQ(s.error(), ErrorCode::FRONTIER_CACHE_OVERCOMMIT);
    return s.ToString();
  };
  EXPECT_NE(message(1099).find("already committed"), std::string::npos) << message(1099);
  EXPECT_NE(message(1036).find("already committed"), std::string::npos) << message(1036);
  EXPECT_NE(message(1035).find("none of the last 64 outputs"), std::string::npos) << message(1035);
}

// DraftQueue pops from a moving front (a vector's erase(begin()) made one verification of D
// accepted drafts cost D^2: probe 10); equality compares the tokens still queued.
// Probe 18: copies (a fork's children) share the queued tokens; each copy still pops, cuts and
// appends on its own.
TEST(DraftQueueTest, CopiesShareTokensAndStayIndependent) {
  const std::vector<uint64_t> drafts = {5, 6, 7}, more = {8};
  DraftQueue a;
  a.assign(drafts.begin(), drafts.end());
  DraftQueue b = a, c = a;
  b.pop_front();
  c.keep_first(1);
  a.append(more.begin(), more.end());
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.front(), 6u);
  EXPECT_EQ(c.size(), 1u);
  c.append(more.begin(), more.end());  // after the cut: 5, 8
  c.pop_front();
  EXPECT_EQ(c.front(), 8u);
  DraftQueue d;
  const std::vector<uint64_t> rest = {6, 7, 8};
  d.assign(rest.begin(), rest.end());
  a.pop_front();
  EXPECT_TRUE(a == d) << "a holds 6, 7, 8 whatever b and c did";
}

// Probe 61: a queue fed while it was read (verifications accepting drafts before the earlier
// ones were all emitted) kept every token it had ever held. Its storage stays within twice what
// is queued, plus the last append, and the tokens come out in order.
TEST(DraftQueueTest, RegressionAQueueFedWhileReadHoldsWhatIsQueued) {
  DraftQueue q;
  uint64_t next_in = 1, next_out = 0;
  const std::vector<uint64_t> first = {0};
  q.append(first.begin(), first.end());
  for (int round = 0; round < 10000; ++round) {
    const std::vector<uint64_t> batch = {next_in, next_in + 1, next_in + 2};
    next_in += 3;
    q.append(batch.begin(), batch.end());
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(q.front(), next_out++);
      q.pop_front();
    }
    if (q.empty()) {  // never: one token stays queued across rounds
      ADD_FAILURE() << "round " << round;
      break;
    }
  }
  EXPECT_EQ(q.size(), 0u + (next_in - next_out));
  EXPECT_LE(q.held(), 2 * q.size() + 3);
}

// Probe 63: a parent with drafts pending, forked (its queue copied into the child) and then
// given one more accepted draft, N times: each append copied the parent's whole queue, so the
// children held N^2 / 2 tokens (20,000 forks of a 27.6 MB trace peaked at 1.67 GB). The copies
// share one storage, appended to in place; each still sees exactly its own queue.
TEST(DraftQueueTest, RegressionCopiesMadeBetweenAppendsShareOneStorage) {
  constexpr uint64_t kForks = 2000;
  DraftQueue parent;
  const std::vector<uint64_t> first = {0};
  parent.append(first.begin(), first.end());
  std::vector<DraftQueue> children;
  for (uint64_t i = 1; i <= kForks; ++i) {
    children.push_back(parent);
    const std::vector<uint64_t> one = {i};
    parent.append(one.begin(), one.end());
  }
  std::map<const void*, size_t> storages;
  for (const DraftQueue& c : children) storages[c.storage()] = c.held();
  storages[parent.storage()] = parent.held();
  size_t held = 0;
  for (const auto& [storage, n] : storages) held += n;
  EXPECT_LE(held, 2 * (kForks + 1));
  // Child k (forked before draft k was appended) queues 0..k-1; the parent 0..kForks.
  for (uint64_t k : {uint64_t{1}, uint64_t{2}, kForks / 2, kForks}) {
    DraftQueue c = children[k - 1];
    ASSERT_EQ(c.size(), k);
    for (uint64_t t = 0; t < k; ++t, c.pop_front()) ASSERT_EQ(c.front(), t);
  }
  EXPECT_EQ(parent.size(), kForks + 1);
  // A child appending after the parent did gets its own storage, and neither sees the other's.
  DraftQueue& c = children[0];
  const std::vector<uint64_t> mine = {77};
  c.append(mine.begin(), mine.end());
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c.front(), 0u);
  c.pop_front();
  EXPECT_EQ(c.front(), 77u);
  EXPECT_EQ(parent.size(), kForks + 1);
  DraftQueue p = parent;
  for (uint64_t t = 0; t <= kForks; ++t, p.pop_front()) ASSERT_EQ(p.front(), t);
}

TEST(DraftQueueTest, PopsInOrderAndComparesWhatRemains) {
  const std::vector<uint64_t> drafts = {5, 6, 7};
  DraftQueue a, b;
  EXPECT_TRUE(a.empty());
  a.assign(drafts.begin(), drafts.end());
  b.assign(drafts.begin() + 1, drafts.end());
  EXPECT_FALSE(a == b);
  EXPECT_EQ(a.front(), 5u);
  a.pop_front();
  EXPECT_TRUE(a == b) << "both hold 6, 7";
  a.pop_front();
  a.pop_front();
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a == DraftQueue());
}

// A truncate into the prompt of a request that never selected an output leaves its finish
// early (review of b770f91: the rollback admitted any later finish, as if outputs had been
// selected before it).
TEST(FrontierTest, RegressionARollbackWithoutOutputsKeepsTheEarlyFinishRule) {
  FrontierState f(4);
  f.ApplyPublished(Prefill(2));
  f.Truncate(1);
  EXPECT_EQ(f.CheckFinish().error(), ErrorCode::SERVICE_PHASE_EARLY_FINISH);
  FrontierState g(2);
  g.ApplyPublished(Prefill(2));
  ASSERT_TRUE(g.Emit(0, 7).ok());
  g.Truncate(1);
  EXPECT_TRUE(g.CheckFinish().ok()) << "outputs were selected before the rollback";
  g.ApplyPublished(Prefill(1));
  g.Truncate(0);  // a second rollback, with no output since the first
  EXPECT_TRUE(g.CheckFinish().ok());
}

TEST(PhaseTest, ProjectionFollowsChunkedPrefillDecodeFinishRelease) {
  using lifecycle::Phase;
  lifecycle::Snapshot s;
  s.handle_id = "A";
  FrontierState f(4);
  auto phase = [&](bool in_flight = false) { return Project(s, f, in_flight, 64).phase; };
  EXPECT_EQ(phase(), ServicePhase::kWaitingPrefill);
  EXPECT_EQ(Project(s, f, false, 64).eligible_work, EligibleWork::kPrefillRowsAvailable);
  EXPECT_EQ(phase(true), ServicePhase::kPrefillInFlight);
  // Partial prefill publication (2 of 4 rows) returns to WAITING_PREFILL.
  Publish(f, Prefill(2));
  s.committed_length = 2;
  EXPECT_EQ(phase(), ServicePhase::kWaitingPrefill);
  EXPECT_EQ(Project(s, f, false, 64).prompt_rows_remaining, 2u);
  Publish(f, Prefill(2));
  s.committed_length = 4;
  EXPECT_EQ(phase(), ServicePhase::kOutputReady);
  ASSERT_TRUE(f.Emit(0, 3).ok());
  ServiceStateView v = Project(s, f, false, 64);
  EXPECT_EQ(v.phase, ServicePhase::kDecodeFrontierReady);
  EXPECT_EQ(v.eligible_work, EligibleWork::kDecodeFrontierAvailable);
  EXPECT_EQ(v.logical_payload_bytes, 256u);
  EXPECT_EQ(v.next_ordinary_append_bytes, 64u);
  EXPECT_EQ(v.output_frontier_count, 1u);
  s.phase = Phase::kFinished;
  v = Project(s, f, false, 64);
  EXPECT_EQ(v.phase, ServicePhase::kFinishedRetained);
  EXPECT_EQ(v.terminal_retained_logical_payload_bytes, 256u);
  s.phase = Phase::kReleased;
  s.committed_length = 0;
  EXPECT_EQ(phase(), ServicePhase::kReleased);
}

// After a repair before the finish no output may be selected and no token is unprocessed: the
// seed's six phases name no such state. The projection keeps the decode-ready label with the
// facts that say no work is eligible (docs/service-format.md; probe 78 asked which it is).
TEST(PhaseTest, ARepairBeforeTheFinishProjectsDecodeReadyWithNoEligibleWork) {
  lifecycle::Snapshot s;
  s.handle_id = "A";
  FrontierState f(2);
  Publish(f, Prefill(2));
  ASSERT_TRUE(f.Emit(0, 7).ok());
  Publish(f, Mk(AppendPurpose::kRepair, 1, 7));
  s.committed_length = 3;
  const ServiceStateView v = Project(s, f, false, 64);
  EXPECT_EQ(v.phase, ServicePhase::kDecodeFrontierReady);
  EXPECT_EQ(v.eligible_work, EligibleWork::kNone);
  EXPECT_EQ(v.output_frontier_count, 0u);
  EXPECT_EQ(v.next_ordinary_append_bytes, 0u);
  EXPECT_EQ(v.emitted_output_tokens, 1u);
  EXPECT_EQ(v.processed_generated_tokens, 1u);
  EXPECT_EQ(f.ready_outputs(), 0u);
  EXPECT_TRUE(f.CheckFinish().ok());
}

// Probe 54. A finish with accepted drafts committed and never emitted (O < G_in) passed, and
// calls of no row (a repair, a decode, a verification) were admitted without a lifecycle beside
// the frontier (the saved-work oracle): a 0-row repair closed the frontier, a 0-row decode let
// an output run two ahead.
TEST(FrontierTest, RegressionRowsPastTheOutputAndCallsOfNoRow) {
  FrontierState f(4);
  Publish(f, Prefill(4));
  Publish(f, Mk(AppendPurpose::kVerify, 2, std::nullopt, {60, 61, 62}, 2));
  ASSERT_TRUE(f.Emit(0, 60).ok());
  EXPECT_EQ(f.CheckFinish().error(), ErrorCode::FRONTIER_ROWS_PAST_OUTPUT);
  ASSERT_TRUE(f.Emit(1, 61).ok());
  ASSERT_TRUE(f.Emit(2, 7).ok());  // the bonus token
  EXPECT_TRUE(f.CheckFinish().ok());
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kRepair, 0, 7)).error(),
            ErrorCode::FRONTIER_REPAIR_ROW_COUNT);
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kDecode, 0, 7)).error(),
            ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH);
  Publish(f, Mk(AppendPurpose::kRepair, 1, 7));
  EXPECT_EQ(f.CheckAppend(Mk(AppendPurpose::kVerify, 0)).error(),
            ErrorCode::FRONTIER_CACHE_COUNT_MISMATCH);
}

// A mutation audit of the frontier (2026-12-05, helper 94): each test below fails under the
// mutant its comment names (three survivors of every other test).
// Mutation audit 2026-12-05 (F11): the finish exemption of a request rolled back into its prompt
// lasts only until it emits again; once it has, accepted drafts past the stop are
// FRONTIER_ROWS_PAST_OUTPUT as for any request. Mutant: `if (rolled_into_prompt_ &&
// outputs_.empty())` -> `if (rolled_into_prompt_)`.
TEST(FrontierTest, ARolledBackRequestThatEmitsAgainKeepsTheRowsPastOutputRule) {
  FrontierState f(2);
  Publish(f, Prefill(2));
  ASSERT_TRUE(f.Emit(0, 7).ok());
  f.Truncate(1);  // into the prompt, with an output selected before
  Publish(f, Prefill(1));
  Publish(f, Mk(AppendPurpose::kVerify, 2, std::nullopt, {60, 61, 62}, 2));
  ASSERT_TRUE(f.Emit(0, 60).ok());  // stop after the first accepted draft
  EXPECT_EQ(f.CheckFinish().error(), ErrorCode::FRONTIER_ROWS_PAST_OUTPUT);
}

// Mutation audit 2026-12-05 (F18): a truncate into unemitted draft rows whose processed rows do not
// reconcile with the outputs (here after an output emitted before its logits, a violation the
// frontier applies and goes on from) stops following the frontier rather than guess. Mutant: `if
// (processed_ != emitted + expected_tokens_.size())` -> `if (false)` in Truncate.
TEST(FrontierTest, AnUnreconcilableDraftTruncateStopsFollowing) {
  FrontierState f(1);
  Publish(f, Prefill(1));
  ASSERT_TRUE(f.Emit(0, 5).ok());
  EXPECT_EQ(f.Emit(1, 6).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);  // applied anyway
  Publish(f, Mk(AppendPurpose::kVerify, 3, 6, {7, 8}, 2));  // processed 3, emitted 2, queued 2
  f.Truncate(3);
  EXPECT_FALSE(f.tracked());
}

// Mutation audit 2026-12-05 (F20): completing the prompt makes output 0 ready only if no output was
// emitted yet; after an output emitted before the prompt was complete (a violation the frontier
// applies and goes on from), the prefill's logits ready no second output. Mutant: `ready_outputs_ =
// (prompt_complete() && outputs_.empty()) ? 1 : 0` -> `prompt_complete() ? 1 : 0`.
TEST(FrontierTest, APrefillAfterAnEarlyOutputReadiesNoSecondOutput) {
  FrontierState f(2);
  Publish(f, Prefill(1));
  EXPECT_EQ(f.Emit(0, 7).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);  // applied anyway
  Publish(f, Prefill(1));  // the prompt is complete now
  EXPECT_EQ(f.Emit(1, 8).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);
}

}  // namespace
}  // namespace kvc::frontier
