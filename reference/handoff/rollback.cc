// Rollback ordering, the rollback gate, promotion gates and release transitions.
#include "reference/handoff/rollback.h"

#include "reference/base/text_forms.h"

namespace kvc::handoff {

Status RollbackMachine::Apply(std::string_view step, const RollbackGate& g) {
  if (next_ >= kRollbackSteps.size())
    return ViolationStatus(ErrorCode::HANDOFF_ROLLBACK_ORDER,
                           "rollback already complete; got " + base::Clipped(step));
  if (step != kRollbackSteps[next_])
    return ViolationStatus(ErrorCode::HANDOFF_ROLLBACK_ORDER,
                           "rollback step " + std::to_string(next_ + 1) + " must be " +
                               std::string(kRollbackSteps[next_]) + ", got " + base::Clipped(step));
  if (step == "ROLLBACK_COMPLETE") {
    const char* unmet =
        g.routes_selecting_connector ? "a route can still select the disabled connector"
        : g.inflight_publishable_under_retired_epoch
            ? "an in-flight transfer can publish under the retired epoch"
        : g.temporary_regions_unrevoked    ? "registered temporary regions are not revoked"
        : g.unpublished_allocations        ? "unpublished allocations are not reclaimed"
        : !g.fallback_health_visible       ? "fallback health is not visible"
        : !g.slo_clocks_visible            ? "TTFT and TPOT clocks are not visible"
        : !g.incident_trace_preserves_pins ? "the incident trace lost source pins or the manifest"
                                           : nullptr;
    if (unmet)
      return ViolationStatus(ErrorCode::HANDOFF_ROLLBACK_GATE_UNMET,
                             std::string("ROLLBACK_COMPLETE while ") + unmet);
  }
  ++next_;
  return Status();
}

Status CheckPromotionGates(const PromotionGates& g) {
  const char* failed =
      !g.deployment_manifest_verified            ? "deployment manifest not verified"
      : !g.failure_injection_passed              ? "failure-injection suite not passed"
      : !g.colocated_fallback_healthy            ? "colocated fallback not healthy"
      : !g.rollback_drill_completed              ? "rollback drill not completed"
      : g.exactness_mismatches                   ? "exactness mismatches are not zero"
      : g.stale_publications                     ? "stale publications are not zero"
      : g.unauthorized_accepted_transfers        ? "unauthorized accepted transfers are not zero"
      : g.canary_samples < g.min_canary_samples  ? "not enough canary samples"
      : g.ttft_attainment_ppm < g.slo_target_ppm ? "TTFT attainment below target"
      : g.tpot_attainment_ppm < g.slo_target_ppm ? "TPOT attainment below target"
      : g.transfer_failure_ppm > g.max_transfer_failure_ppm ? "transfer failure rate above bound"
      : g.net_margin_us <= g.safety_margin_us ? "net margin does not exceed the safety margin"
                                              : nullptr;
  if (failed)
    return ViolationStatus(ErrorCode::HANDOFF_RELEASE_GATE_FAILED,
                           std::string("promotion gate failed: ") + failed);
  return Status();
}

Status ReleaseMachine::Transition(std::string_view to, const PromotionGates& gates) {
  bool legal =
      (state_ == "PINNED" && to == "SHADOW") || (state_ == "SHADOW" && to == "CANARY") ||
      (state_ == "CANARY" && to == "ACTIVE") ||
      (to == "ROLLED_BACK" && (state_ == "SHADOW" || state_ == "CANARY" || state_ == "ACTIVE"));
  if (!legal)
    return ViolationStatus(
        ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID,
        "release transition " + state_ + " -> " + base::Clipped(to) + " is not allowed");
  if (to == "ACTIVE") KVC_RETURN_IF_ERROR(CheckPromotionGates(gates));
  state_ = std::string(to);
  return Status();
}

}  // namespace kvc::handoff
