// Release promotion and rollback as checked state machines (M5.6 0x0FF, 0x0FG).
//
//   release:  PINNED -> SHADOW -> CANARY -> ACTIVE; SHADOW | CANARY | ACTIVE -> ROLLED_BACK.
//             Entering ACTIVE requires every minimum promotion gate.
//   rollback: STOP_NEW_ROUTES -> ADVANCE_ROUTE_EPOCH -> DRAIN_OR_ABORT_TRANSFERS ->
//             ENABLE_COLOCATED_FALLBACK -> DISABLE_CONNECTOR -> REVOKE_CAPABILITIES ->
//             RECLAIM_UNPUBLISHED -> ROLLBACK_COMPLETE, exactly once each, in this order;
//             ROLLBACK_COMPLETE only when every rollback-gate condition holds.
// Sequential value types; not thread-safe.
#ifndef KVCONFORM_REFERENCE_HANDOFF_ROLLBACK_H_
#define KVCONFORM_REFERENCE_HANDOFF_ROLLBACK_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace kvc::handoff {

inline constexpr std::array<std::string_view, 8> kRollbackSteps = {
    "STOP_NEW_ROUTES",           "ADVANCE_ROUTE_EPOCH", "DRAIN_OR_ABORT_TRANSFERS",
    "ENABLE_COLOCATED_FALLBACK", "DISABLE_CONNECTOR",   "REVOKE_CAPABILITIES",
    "RECLAIM_UNPUBLISHED",       "ROLLBACK_COMPLETE"};

// The rollback gate of 0x0FG, as observed counts/flags at ROLLBACK_COMPLETE.
struct RollbackGate {
  uint64_t routes_selecting_connector = 0;
  uint64_t inflight_publishable_under_retired_epoch = 0;
  uint64_t temporary_regions_unrevoked = 0;
  uint64_t unpublished_allocations = 0;
  bool fallback_health_visible = false;
  bool slo_clocks_visible = false;
  bool incident_trace_preserves_pins = false;
};

class RollbackMachine {
 public:
  // Applies the next step; HANDOFF_ROLLBACK_ORDER when `step` is not the next one
  // (the gate is checked by the ROLLBACK_COMPLETE step: HANDOFF_ROLLBACK_GATE_UNMET).
  Status Apply(std::string_view step, const RollbackGate& gate);
  bool complete() const { return next_ == kRollbackSteps.size(); }
  size_t steps_done() const { return next_; }

 private:
  size_t next_ = 0;
};

// The minimum promotion gates of 0x0FF.
struct PromotionGates {
  bool deployment_manifest_verified = false;
  bool failure_injection_passed = false;
  bool colocated_fallback_healthy = false;
  bool rollback_drill_completed = false;
  uint64_t exactness_mismatches = 0, stale_publications = 0, unauthorized_accepted_transfers = 0;
  uint64_t canary_samples = 0, min_canary_samples = 0;
  uint64_t ttft_attainment_ppm = 0, tpot_attainment_ppm = 0, slo_target_ppm = 0;
  uint64_t transfer_failure_ppm = 0, max_transfer_failure_ppm = 0;
  int64_t net_margin_us = 0, safety_margin_us = 0;
};
// OK, or HANDOFF_RELEASE_GATE_FAILED naming the first failing gate.
Status CheckPromotionGates(const PromotionGates& g);

class ReleaseMachine {
 public:
  std::string_view state() const { return state_; }
  // HANDOFF_RELEASE_TRANSITION_INVALID for an illegal edge; gates checked on entering ACTIVE.
  Status Transition(std::string_view to, const PromotionGates& gates);

 private:
  std::string state_ = "PINNED";
};

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_ROLLBACK_H_
