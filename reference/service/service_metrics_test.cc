// Service metrics from the seed's endpoint clocks (M5.1 0x05 worked A/B trace), computed
// from the clocks, never read from a fixture's expected fields.
#include "reference/service/service_metrics.h"

#include <gtest/gtest.h>

namespace kvc {
namespace {

const SloLimits kSlo{15, 10};

// Request A: arrives 0, outputs 14/21/30/42, finish 42, release 50; committed 4 at 12,
// 5 at 20, 6 at 29, 7 at 41, 0 at 50.
RequestEndpoints A() { return {0, {14, 21, 30, 42}, 42, 50, true, {{0, 0}, {12, 4}, {20, 5}, {29, 6}, {41, 7}, {50, 0}}}; }
// Request B: arrives 5, one output at 18, finish 18, release 19; committed 2 at 15.
RequestEndpoints B() { return {5, {18}, 18, 19, true, {{5, 0}, {15, 2}, {19, 0}}}; }

TEST(ServiceMetrics, RequestAMatchesTheSeed) {
  auto m = ComputeRequestMetrics(A(), kSlo, 64);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->ttft, 14u);
  EXPECT_EQ(m->tbt, (std::vector<uint64_t>{7, 9, 12}));
  ASSERT_TRUE(m->tpot.has_value());
  EXPECT_EQ(*m->tpot, (Rational{28, 3}));
  EXPECT_DOUBLE_EQ(m->tpot->Value(), 28.0 / 3.0);
  EXPECT_EQ(m->e2e, 42u);
  EXPECT_EQ(m->release_lag, 8u);
  EXPECT_FALSE(m->slo_valid);  // TTFT passes, the 12 ms gap fails
  EXPECT_EQ(m->kv_byte_time, 13568u);
}

TEST(ServiceMetrics, OneOutputRequestHasUndefinedTpotAndVacuousTbtGate) {
  auto m = ComputeRequestMetrics(B(), kSlo, 64);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->ttft, 13u);
  EXPECT_TRUE(m->tbt.empty());
  EXPECT_FALSE(m->tpot.has_value());  // undefined, not zero
  EXPECT_EQ(m->e2e, 13u);
  EXPECT_EQ(m->release_lag, 1u);
  EXPECT_TRUE(m->slo_valid);
  EXPECT_EQ(m->kv_byte_time, 512u);
}

TEST(ServiceMetrics, AggregateOverTheHundredMsWindow) {
  std::vector<RequestMetrics> all = {ComputeRequestMetrics(A(), kSlo, 64).value(),
                                     ComputeRequestMetrics(B(), kSlo, 64).value()};
  auto a = ComputeAggregateMetrics(all, 100, 1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->throughput, (Rational{20, 1}));
  EXPECT_EQ(a->request_goodput, (Rational{10, 1}));
  ASSERT_TRUE(a->goodput_fraction.has_value());
  EXPECT_EQ(*a->goodput_fraction, (Rational{1, 2}));
  EXPECT_EQ(a->token_goodput, (Rational{10, 1}));
  EXPECT_EQ(a->kv_byte_time, 14080u);
}

TEST(ServiceMetrics, UnfinishedRequestIsNotCompletedAndNotGood) {
  RequestEndpoints r = B();
  r.finish.reset();
  r.release.reset();
  r.completed = false;
  auto m = ComputeRequestMetrics(r, kSlo, 64);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->e2e.has_value());
  EXPECT_FALSE(m->slo_valid);
  auto a = ComputeAggregateMetrics(std::vector<RequestMetrics>{*m}, 100, 1000);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->completed, 0u);
  EXPECT_FALSE(a->goodput_fraction.has_value());
}

TEST(ServiceMetrics, BackwardsClocksAndOverflowAreErrors) {
  RequestEndpoints r = A();
  r.output_times = {14, 13};
  EXPECT_FALSE(ComputeRequestMetrics(r, kSlo, 64).ok());
  RequestEndpoints big = B();
  big.committed_steps = {{5, uint64_t{1} << 40}, {uint64_t{1} << 40, 0}};
  EXPECT_FALSE(ComputeRequestMetrics(big, kSlo, 1 << 20).ok());
  EXPECT_FALSE(ComputeAggregateMetrics({}, 0, 1000).ok());
}

// Probe 55: contradictory endpoints were accepted: a byte-time integral stopping before the
// release (0 instead of 1,536 byte-units) or running past it, and a completed request without
// a finish counted as SLO-valid.
TEST(ServiceMetrics, RegressionContradictoryEndpointsAreErrors) {
  RequestEndpoints r{0, {5}, 6, 10, true, {{0, 0}, {2, 3}}};
  EXPECT_FALSE(ComputeRequestMetrics(r, kSlo, 64).ok());
  r.committed_steps = {{0, 0}, {2, 3}, {50, 0}};
  EXPECT_FALSE(ComputeRequestMetrics(r, kSlo, 64).ok());
  r.committed_steps = {{0, 0}, {2, 3}, {10, 0}};
  auto m = ComputeRequestMetrics(r, kSlo, 64);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->kv_byte_time, 3u * 64 * 8);
  RequestEndpoints open = B();
  open.finish.reset();
  open.release.reset();
  EXPECT_FALSE(ComputeRequestMetrics(open, kSlo, 64).ok());  // completed, never finished
}

// Probe 70 (mutation adequacy): three rules no test enforced. The SLO's limits are inclusive
// (TTFT == tau and a TBT gap == tau are valid), a release may share its finish's clock, and a
// committed-length step before arrival is refused.
TEST(ServiceMetrics, RegressionBoundariesAndAStepBeforeArrival) {
  RequestEndpoints r;
  r.arrival = 10;
  r.output_times = {20, 25};
  r.finish = 25;
  r.release = 25;
  r.completed = true;
  r.committed_steps = {{10, 4}, {25, 0}};
  auto m = ComputeRequestMetrics(r, SloLimits{10, 5}, 64);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->slo_valid);  // TTFT 10 <= 10, TBT 5 <= 5
  EXPECT_EQ(m->kv_byte_time, 4u * 64 * 15);
  EXPECT_FALSE(ComputeRequestMetrics(r, SloLimits{9, 5}, 64)->slo_valid);
  EXPECT_FALSE(ComputeRequestMetrics(r, SloLimits{10, 4}, 64)->slo_valid);
  r.committed_steps = {{5, 4}, {25, 0}};  // a step at t = 5, before arrival at 10
  EXPECT_FALSE(ComputeRequestMetrics(r, SloLimits{10, 5}, 64).ok());
}

TEST(ServiceMetrics, RationalsAreReduced) {
  EXPECT_EQ(Rational::Make(2000, 100).value(), (Rational{20, 1}));
  EXPECT_EQ(Rational::Make(28, 3).value().ToString(), "28/3");
  EXPECT_FALSE(Rational::Make(1, 0).ok());
}

// A mutation audit of the M5.1 0x02/0x03/0x05 calculators (2026-12-05, helper 97: 99 single-point
// mutants of reference/ledger/, reference/saved_work/, reference/service/ and
// reference/frontier/phase.cc; 40 survived every test and the suite, 35 of them real gaps). Each
// test below fails under the mutant its comment names (checked against the mutant's library).

// Mutation audit 2026-12-05 (M92): ComputeRequestMetrics refuses a finish before the last output (y
// = 5, 10; finish 7). Unreachable through a service trace (its events are time-ordered), but the
// public calculator computed E2E 7 without it.
TEST(ServiceMetricsRules, MetricsFinishBeforeTheLastOutputIsAnError) {
  RequestEndpoints r{0, {5, 10}, 7, 12, true, {{0, 0}, {3, 2}, {12, 0}}};
  auto m = ComputeRequestMetrics(r, SloLimits{15, 10}, 64);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
}

// Mutation audit 2026-12-05 (M93): ComputeRequestMetrics refuses a release before finish (finish
// 10, release 8); the mutant returned a release lag wrapped to 2^64 - 2.
TEST(ServiceMetricsRules, MetricsReleaseBeforeFinishIsAnError) {
  RequestEndpoints r{0, {5}, 10, 8, true, {{0, 0}, {3, 2}, {8, 0}}};
  auto m = ComputeRequestMetrics(r, SloLimits{15, 10}, 64);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
}

// Mutation audit 2026-12-05 (M96): goodput_fraction is SLO-valid over COMPLETED requests (1/1
// here), not over all requests (the mutant's 1/2). Unreachable through a closed service trace,
// where every request completes.
TEST(ServiceMetricsRules, AggregateGoodputFractionDividesByCompleted) {
  RequestMetrics good, open;
  good.outputs = 1;
  good.completed = true;
  good.slo_valid = true;
  open.outputs = 0;
  auto a = ComputeAggregateMetrics(std::vector<RequestMetrics>{good, open}, 100, 1000);
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(a->goodput_fraction.has_value());
  EXPECT_EQ(*a->goodput_fraction, (Rational{1, 1}));
}

}  // namespace
}  // namespace kvc
