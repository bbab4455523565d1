// Rollback ordering and release promotion as state machines (M5.6 0x0FF, 0x0FG).
#include "reference/handoff/rollback.h"

#include <gtest/gtest.h>

namespace kvc::handoff {
namespace {

RollbackGate CleanGate() {
  RollbackGate g;
  g.fallback_health_visible = g.slo_clocks_visible = g.incident_trace_preserves_pins = true;
  return g;
}

TEST(Rollback, ExactOrderCompletes) {
  RollbackMachine m;
  for (auto step : kRollbackSteps) ASSERT_TRUE(m.Apply(step, CleanGate()).ok()) << step;
  EXPECT_TRUE(m.complete());
  EXPECT_EQ(m.Apply("STOP_NEW_ROUTES", CleanGate()).error(), ErrorCode::HANDOFF_ROLLBACK_ORDER);
}

TEST(Rollback, DisablingTheConnectorBeforeFallbackIsRefused) {
  RollbackMachine m;
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(m.Apply(kRollbackSteps[i], CleanGate()).ok());
  EXPECT_EQ(m.Apply("DISABLE_CONNECTOR", CleanGate()).error(), ErrorCode::HANDOFF_ROLLBACK_ORDER);
  EXPECT_EQ(m.steps_done(), 3u);
}

TEST(Rollback, CompleteRequiresTheGate) {
  RollbackMachine m;
  RollbackGate g = CleanGate();
  g.temporary_regions_unrevoked = 2;
  for (size_t i = 0; i + 1 < kRollbackSteps.size(); ++i)
    ASSERT_TRUE(m.Apply(kRollbackSteps[i], g).ok());
  EXPECT_EQ(m.Apply("ROLLBACK_COMPLETE", g).error(), ErrorCode::HANDOFF_ROLLBACK_GATE_UNMET);
  EXPECT_TRUE(m.Apply("ROLLBACK_COMPLETE", CleanGate()).ok());
}

// Every promotion gate met, each bound exactly at its limit.
PromotionGates PassingGates() {
  PromotionGates ok;
  ok.deployment_manifest_verified = ok.failure_injection_passed = ok.colocated_fallback_healthy =
      ok.rollback_drill_completed = true;
  ok.canary_samples = 10;
  ok.min_canary_samples = 10;
  ok.ttft_attainment_ppm = ok.tpot_attainment_ppm = ok.slo_target_ppm = 990000;
  ok.transfer_failure_ppm = 100;
  ok.max_transfer_failure_ppm = 100;
  ok.net_margin_us = 5;
  ok.safety_margin_us = 1;
  return ok;
}

TEST(Release, PromotionNeedsGatesAndLegalEdges) {
  const PromotionGates ok = PassingGates();
  ReleaseMachine r;
  EXPECT_EQ(r.Transition("ACTIVE", ok).error(), ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID);
  ASSERT_TRUE(r.Transition("SHADOW", ok).ok());
  ASSERT_TRUE(r.Transition("CANARY", ok).ok());
  PromotionGates bad = ok;
  bad.net_margin_us = 1;  // must exceed the safety margin
  EXPECT_EQ(r.Transition("ACTIVE", bad).error(), ErrorCode::HANDOFF_RELEASE_GATE_FAILED);
  ASSERT_TRUE(r.Transition("ACTIVE", ok).ok());
  ASSERT_TRUE(r.Transition("ROLLED_BACK", ok).ok());
  EXPECT_EQ(r.Transition("ACTIVE", ok).error(), ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID);
}

// A mutation audit of the handoff state machines (2026-12-05, helper 96: 110 single-point
// mutants of reference/handoff/; 30 survived reference_tests, conformance_tests and the suite,
// 23 of them real gaps). Each test below fails under the mutant its comment names.

// Mutation audit 2026-12-05 (M83, RollbackMachine: the incident-trace gate dropped):
// ROLLBACK_COMPLETE needs the incident trace to keep its source pins and manifest (0x0FG).
TEST(Rollback, RollbackCompleteNeedsTheIncidentTracePins) {
  RollbackMachine m;
  for (size_t i = 0; i + 1 < kRollbackSteps.size(); ++i)
    ASSERT_TRUE(m.Apply(kRollbackSteps[i], CleanGate()).ok());
  RollbackGate g = CleanGate();
  g.incident_trace_preserves_pins = false;
  EXPECT_EQ(m.Apply("ROLLBACK_COMPLETE", g).error(), ErrorCode::HANDOFF_ROLLBACK_GATE_UNMET);
  EXPECT_FALSE(m.complete());
}

// Mutation audit 2026-12-05 (M86 / M85 / M89, CheckPromotionGates): each bound is exact. At the
// bound the gate passes; one past it fails (transfer failures above the bound, one canary sample
// short, TPOT below target).
TEST(Release, PromotionGateBoundsAreExact) {
  EXPECT_TRUE(CheckPromotionGates(PassingGates()).ok());
  PromotionGates failures = PassingGates();
  failures.transfer_failure_ppm = 101;
  EXPECT_EQ(CheckPromotionGates(failures).error(), ErrorCode::HANDOFF_RELEASE_GATE_FAILED);
  PromotionGates samples = PassingGates();
  samples.canary_samples = 9;
  EXPECT_EQ(CheckPromotionGates(samples).error(), ErrorCode::HANDOFF_RELEASE_GATE_FAILED);
  PromotionGates tpot = PassingGates();
  tpot.tpot_attainment_ppm = 989999;
  EXPECT_EQ(CheckPromotionGates(tpot).error(), ErrorCode::HANDOFF_RELEASE_GATE_FAILED);
}

// Mutation audit 2026-12-05 (M87, ReleaseMachine: PINNED -> ROLLED_BACK allowed): a release that
// never left PINNED has nothing to roll back (0x0FF: ROLLED_BACK only from SHADOW, CANARY or
// ACTIVE).
TEST(Release, APinnedReleaseCannotRollBack) {
  ReleaseMachine r;
  EXPECT_EQ(r.Transition("ROLLED_BACK", PassingGates()).error(),
            ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID);
  EXPECT_EQ(r.state(), "PINNED");
}

}  // namespace
}  // namespace kvc::handoff
