// Phase projection; see phase.h.
#include "reference/frontier/phase.h"

#include "reference/base/checked_math.h"

namespace kvc::frontier {

std::string_view ServicePhaseName(ServicePhase p) {
  switch (p) {
    case ServicePhase::kWaitingPrefill: return "WAITING_PREFILL";
    case ServicePhase::kPrefillInFlight: return "PREFILL_IN_FLIGHT";
    case ServicePhase::kOutputReady: return "OUTPUT_READY";
    case ServicePhase::kDecodeFrontierReady: return "DECODE_FRONTIER_READY";
    case ServicePhase::kFinishedRetained: return "FINISHED_RETAINED";
    case ServicePhase::kReleased: return "RELEASED";
  }
  return "?";
}

std::string_view EligibleWorkName(EligibleWork w) {
  switch (w) {
    case EligibleWork::kPrefillRowsAvailable: return "PREFILL_ROWS_AVAILABLE";
    case EligibleWork::kDecodeFrontierAvailable: return "DECODE_FRONTIER_AVAILABLE";
    case EligibleWork::kNone: return "NONE";
  }
  return "?";
}

ServiceStateView Project(const lifecycle::Snapshot& s, const FrontierState& f,
                         bool prefill_in_flight, uint64_t bytes_per_token) {
  using lifecycle::Phase;
  ServiceStateView v;
  v.request_id = s.handle_id;
  v.handle_generation = s.incarnation;
  v.snapshot_version = s.version;
  v.prompt_rows_remaining = f.prompt_length() - f.prompt_rows();
  v.emitted_output_tokens = f.emitted();
  v.processed_generated_tokens = f.processed();
  v.committed_tokens = s.committed_length;
  v.output_frontier_count = f.frontier_count();
  v.logical_payload_bytes = CheckedMul(s.committed_length, bytes_per_token).value_or(UINT64_MAX);
  if (s.phase == Phase::kReleased) {
    v.phase = ServicePhase::kReleased;
  } else if (s.phase == Phase::kFinished || s.phase == Phase::kCancelled) {
    v.phase = ServicePhase::kFinishedRetained;
    v.terminal_retained_logical_payload_bytes = v.logical_payload_bytes;
  } else if (prefill_in_flight) {
    v.phase = ServicePhase::kPrefillInFlight;
  } else if (!f.prompt_complete()) {
    v.phase = ServicePhase::kWaitingPrefill;
    v.eligible_work = EligibleWork::kPrefillRowsAvailable;
  } else if (f.ready_outputs() > 0) {
    v.phase = ServicePhase::kOutputReady;
  } else if (f.frontier_count() > 0) {
    v.phase = ServicePhase::kDecodeFrontierReady;
    v.eligible_work = EligibleWork::kDecodeFrontierAvailable;
    v.next_ordinary_append_bytes = bytes_per_token;
  } else {
    // Prompt complete, no logits and no frontier (after a repair, or a rollback the frontier
    // does not follow): the committed prefix is decode-ready but no work is eligible.
    v.phase = ServicePhase::kDecodeFrontierReady;
  }
  return v;
}

}  // namespace kvc::frontier
