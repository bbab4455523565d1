// User-facing service metrics of M5.1 0x05 "Deriving User Metrics From Endpoint Clocks" and
// "Throughput, SLO Attainment, And Goodput Are Different Ledgers", over integer clocks.
//
// Per request i (arrival a, outputs y_0..y_{G-1}, finish f, release r):
//   TTFT = y_0 - a;  TBT_j = y_j - y_{j-1};  TPOT = (y_{G-1} - y_0) / (G - 1), undefined
//   (nullopt, never 0) for G = 1;  E2E = f - a;  release lag = r - f;
//   q_i = completed && TTFT <= tau_TTFT && every TBT <= tau_TBT (vacuous for G = 1);
//   logical KV byte-time = integral of committed_tokens(t) * B_token dt.
// Over a window of width W: throughput = completed / W, request goodput = sum q_i / W,
// goodput fraction = sum q_i / completed, token goodput = sum G_i q_i / W.
// Values are exact rationals (reduced); clocks are in one integer unit (the fixture uses
// ms) and rates are per second (scaled by units_per_second). Pure functions, thread-safe.
#ifndef KVCONFORM_REFERENCE_SERVICE_SERVICE_METRICS_H_
#define KVCONFORM_REFERENCE_SERVICE_SERVICE_METRICS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/status.h"

namespace kvc {

// An exact non-negative rational num/den, den > 0, reduced by Make().
struct Rational {
  uint64_t num = 0;
  uint64_t den = 1;
  // Reduced num/den; InvalidArgument when den == 0.
  static StatusOr<Rational> Make(uint64_t num, uint64_t den);
  double Value() const { return static_cast<double>(num) / static_cast<double>(den); }
  bool operator==(const Rational&) const = default;
  std::string ToString() const;  // "28/3" or "20"
};

struct SloLimits {
  uint64_t ttft = 0;  // tau_TTFT, clock units
  uint64_t tbt = 0;   // tau_TBT, clock units
};

// The endpoint clocks and committed-length history of one request. `committed_steps` are
// (time, committed tokens from that time on), non-decreasing in time, starting at or after
// arrival; the integral ends at the last step, which for a released request is (release, 0)
// (else InvalidArgument), and `completed` needs a finish (else InvalidArgument).
struct RequestEndpoints {
  uint64_t arrival = 0;
  std::vector<uint64_t> output_times;  // y_0..y_{G-1}, non-decreasing
  std::optional<uint64_t> finish;
  std::optional<uint64_t> release;
  bool completed = false;  // finished successfully
  std::vector<std::pair<uint64_t, uint64_t>> committed_steps;
};

struct RequestMetrics {
  uint64_t outputs = 0;                // G_i
  bool completed = false;              // finished successfully (counted by throughput)
  std::optional<uint64_t> ttft;        // nullopt without an output
  std::vector<uint64_t> tbt;           // G_i - 1 gaps
  std::optional<Rational> tpot;        // nullopt for G_i <= 1: undefined, not zero
  std::optional<uint64_t> e2e;         // nullopt without finish
  std::optional<uint64_t> release_lag; // nullopt without finish and release
  bool slo_valid = false;              // q_i
  uint64_t kv_byte_time = 0;           // byte * clock unit
};

// InvalidArgument when clocks go backwards (output before arrival, finish before the last
// output, release before finish, unordered steps); OutOfRange on overflow.
StatusOr<RequestMetrics> ComputeRequestMetrics(const RequestEndpoints& r, const SloLimits& slo,
                                               uint64_t bytes_per_token);

struct AggregateMetrics {
  uint64_t completed = 0;
  uint64_t slo_valid = 0;
  Rational throughput;        // requests / s
  Rational request_goodput;   // SLO-valid requests / s
  std::optional<Rational> goodput_fraction;  // nullopt when nothing completed
  Rational token_goodput;     // SLO-valid tokens / s
  uint64_t kv_byte_time = 0;  // byte * clock unit, summed
};

// `window` is W in clock units (> 0); `units_per_second` converts (1000 for ms).
StatusOr<AggregateMetrics> ComputeAggregateMetrics(std::span<const RequestMetrics> requests, uint64_t window,
                                                   uint64_t units_per_second);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SERVICE_SERVICE_METRICS_H_
