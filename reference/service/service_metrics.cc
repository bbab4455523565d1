// Service metric arithmetic; see service_metrics.h for the conventions.
#include "reference/service/service_metrics.h"

#include <numeric>

#include "reference/base/checked_math.h"

namespace kvc {

StatusOr<Rational> Rational::Make(uint64_t num, uint64_t den) {
  if (den == 0) return InvalidArgument("rational with a zero denominator");
  uint64_t g = std::gcd(num, den);
  if (g == 0) g = 1;
  return Rational{num / g, den / g};
}

std::string Rational::ToString() const {
  return den == 1 ? std::to_string(num) : std::to_string(num) + "/" + std::to_string(den);
}

StatusOr<RequestMetrics> ComputeRequestMetrics(const RequestEndpoints& r, const SloLimits& slo,
                                               uint64_t bytes_per_token) {
  RequestMetrics m;
  m.outputs = r.output_times.size();
  m.completed = r.completed;
  uint64_t last = r.arrival;
  for (uint64_t y : r.output_times) {
    if (y < last) return InvalidArgument("output clocks precede arrival or the previous output");
    last = y;
  }
  if (!r.output_times.empty()) {
    m.ttft = r.output_times.front() - r.arrival;
    for (size_t j = 1; j < r.output_times.size(); ++j) m.tbt.push_back(r.output_times[j] - r.output_times[j - 1]);
  }
  if (m.outputs > 1) {
    auto tpot = Rational::Make(r.output_times.back() - r.output_times.front(), m.outputs - 1);
    if (!tpot.ok()) return tpot.status();
    m.tpot = *tpot;
  }
  if (r.finish) {
    if (*r.finish < last) return InvalidArgument("finish precedes arrival or the last output");
    m.e2e = *r.finish - r.arrival;
    if (r.release) {
      if (*r.release < *r.finish) return InvalidArgument("release precedes finish");
      m.release_lag = *r.release - *r.finish;
    }
  } else if (r.release) {
    return InvalidArgument("release without finish");
  }
  // The endpoints agree with each other (probe 55: a completed request without a finish, and a
  // byte-time integral that stopped before the release or ran past it, were accepted): a
  // completed request finished, and with a release the committed-length steps end there, at 0
  // tokens (ownership closes at r_i: finish is not release, M5.1 0x02).
  if (r.completed && !r.finish) return InvalidArgument("a completed request has a finish");
  if (r.release && !r.committed_steps.empty() &&
      (r.committed_steps.back().first != *r.release || r.committed_steps.back().second != 0))
    return InvalidArgument("the committed-length steps end at the release, at 0 tokens");
  m.slo_valid = r.completed && m.ttft && *m.ttft <= slo.ttft;
  for (uint64_t gap : m.tbt) m.slo_valid = m.slo_valid && gap <= slo.tbt;
  for (size_t k = 0; k + 1 < r.committed_steps.size(); ++k) {
    auto [t0, tokens] = r.committed_steps[k];
    uint64_t t1 = r.committed_steps[k + 1].first;
    if (t1 < t0 || t0 < r.arrival) return InvalidArgument("committed-length steps are not ordered in time");
    auto area = CheckedProduct({tokens, bytes_per_token, t1 - t0});
    auto sum = area ? CheckedAdd(m.kv_byte_time, *area) : std::nullopt;
    if (!sum) return OutOfRange("logical KV byte-time overflows 64 bits");
    m.kv_byte_time = *sum;
  }
  return m;
}

StatusOr<AggregateMetrics> ComputeAggregateMetrics(std::span<const RequestMetrics> requests, uint64_t window,
                                                   uint64_t units_per_second) {
  if (window == 0 || units_per_second == 0) return InvalidArgument("the observation window must be positive");
  AggregateMetrics a;
  uint64_t good_tokens = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestMetrics& m = requests[i];
    if (m.completed) ++a.completed;
    if (m.slo_valid) {
      ++a.slo_valid;
      auto t = CheckedAdd(good_tokens, m.outputs);
      if (!t) return OutOfRange("token goodput overflows 64 bits");
      good_tokens = *t;
    }
    auto bt = CheckedAdd(a.kv_byte_time, m.kv_byte_time);
    if (!bt) return OutOfRange("logical KV byte-time overflows 64 bits");
    a.kv_byte_time = *bt;
  }
  auto per_second = [&](uint64_t count) -> StatusOr<Rational> {
    auto n = CheckedMul(count, units_per_second);
    if (!n) return OutOfRange("rate numerator overflows 64 bits");
    return Rational::Make(*n, window);
  };
  auto tp = per_second(a.completed);
  auto rg = per_second(a.slo_valid);
  auto tg = per_second(good_tokens);
  if (!tp.ok()) return tp.status();
  if (!rg.ok()) return rg.status();
  if (!tg.ok()) return tg.status();
  a.throughput = *tp;
  a.request_goodput = *rg;
  a.token_goodput = *tg;
  if (a.completed > 0) a.goodput_fraction = Rational::Make(a.slo_valid, a.completed).value();
  return a;
}

}  // namespace kvc
