// Service phase as a projection over the lifecycle snapshot and the frontier (M5.1 0x05 "Phase
// Is A Projection, Not A Second Cache Truth", "Deriving The Service-Facing State View").
//
// The phase is computed, never stored: WAITING_PREFILL, PREFILL_IN_FLIGHT, OUTPUT_READY,
// DECODE_FRONTIER_READY, FINISHED_RETAINED, RELEASED. A partial prefill publication returns to
// WAITING_PREFILL. The view carries facts only (no admit/priority/batch decisions).
// Pure functions; thread-safe.
#ifndef KVCONFORM_REFERENCE_FRONTIER_PHASE_H_
#define KVCONFORM_REFERENCE_FRONTIER_PHASE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "reference/frontier/frontier.h"
#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc::frontier {

enum class ServicePhase : uint8_t {
  kWaitingPrefill, kPrefillInFlight, kOutputReady, kDecodeFrontierReady, kFinishedRetained,
  kReleased
};
std::string_view ServicePhaseName(ServicePhase p);

enum class EligibleWork : uint8_t { kPrefillRowsAvailable, kDecodeFrontierAvailable, kNone };
std::string_view EligibleWorkName(EligibleWork w);

// The factual part of ServiceStateView (endpoint clocks belong to reference/service).
struct ServiceStateView {
  std::string request_id;
  uint64_t handle_generation = 0;  // incarnation
  uint64_t snapshot_version = 0;
  ServicePhase phase = ServicePhase::kWaitingPrefill;
  EligibleWork eligible_work = EligibleWork::kNone;
  uint64_t prompt_rows_remaining = 0;
  uint64_t emitted_output_tokens = 0;
  uint64_t processed_generated_tokens = 0;
  uint64_t committed_tokens = 0;
  uint64_t output_frontier_count = 0;
  uint64_t logical_payload_bytes = 0;           // T_committed * B_token
  uint64_t next_ordinary_append_bytes = 0;      // B_token when decode-eligible
  uint64_t terminal_retained_logical_payload_bytes = 0;  // B_logical when FINISHED_RETAINED
  friend bool operator==(const ServiceStateView&, const ServiceStateView&) = default;
};

// `prefill_in_flight`: an append with purpose prefill is OPEN/PREPARED on the handle.
// A CANCELLED handle projects to FINISHED_RETAINED (stop is final, ownership not closed).
// Byte fields use saturating-free checked math: an overflow yields UINT64_MAX (documented).
ServiceStateView Project(const lifecycle::Snapshot& s, const FrontierState& f,
                         bool prefill_in_flight, uint64_t bytes_per_token);

}  // namespace kvc::frontier

#endif  // KVCONFORM_REFERENCE_FRONTIER_PHASE_H_
