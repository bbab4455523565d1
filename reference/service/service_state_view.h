// ServiceStateView: the typed, policy-free projection of one request/cache object that
// M5.1 0x05 "Deriving The Service-Facing State View" exports to schedulers: the factual part
// projected by frontier::Project (reference/frontier/phase.h) plus the endpoint clocks.
//
// Exactly the seed's fields, no more: facts constrain a decision without becoming one, so
// the reader rejects the decision fields (admit, priority, batch_id, prefill_chunk_size,
// preempt, victim_request, run_next) with SERVICE_POLICY_FIELD_IN_STATE (as the service trace
// does on its request declarations and events, RejectPolicyFields) and any other extra member
// with INPUT_FIELD_UNKNOWN. Value type, no ownership, thread-compatible.
#ifndef KVCONFORM_REFERENCE_SERVICE_SERVICE_STATE_VIEW_H_
#define KVCONFORM_REFERENCE_SERVICE_SERVICE_STATE_VIEW_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/frontier/phase.h"
#include "reference/validate/violation.h"

namespace kvc {

// Phase and eligible work are the frontier's projection types (reference/frontier/phase.h).
using frontier::EligibleWork;
using frontier::ServicePhase;

struct ServiceStateView {
  // Versioned identity: stale work must not target a recycled handle.
  std::string request_id;
  uint64_t handle_generation = 0;
  uint64_t snapshot_version = 0;  // lifecycle snapshot version
  // Semantic availability, not a scheduling decision.
  ServicePhase phase = ServicePhase::kWaitingPrefill;
  EligibleWork eligible_work = EligibleWork::kNone;
  // Counters that must not alias.
  uint64_t prompt_rows_remaining = 0;
  uint64_t emitted_output_tokens = 0;
  uint64_t processed_generated_tokens = 0;
  uint64_t committed_tokens = 0;
  uint64_t output_frontier_count = 0;
  // Logical resource facts (bytes).
  uint64_t logical_payload_bytes = 0;
  uint64_t next_ordinary_append_bytes = 0;
  uint64_t terminal_retained_logical_payload_bytes = 0;
  // Endpoint clocks (trace time units).
  uint64_t arrival_time = 0;
  std::vector<uint64_t> output_times;
  std::optional<uint64_t> finish_time;
  std::optional<uint64_t> release_time;

  bool operator==(const ServiceStateView&) const = default;
};

// The decision fields a state view must never carry.
inline constexpr std::array<std::string_view, 7> kForbiddenPolicyFields = {
    "admit", "priority", "batch_id", "prefill_chunk_size", "preempt", "victim_request", "run_next"};

// Records SERVICE_POLICY_FIELD_IN_STATE for each of kForbiddenPolicyFields that the object read
// by `r` carries, and marks them known (so RejectUnknownFields does not report them again).
// `object` names the object in the message ("the state view", "a request declaration", ...).
// Used for views, and for a service trace's request declarations and events (M5.1 0x05: "adding
// them to the request object would hide policy inside state").
void RejectPolicyFields(FieldReader& r, std::string_view object, Violations* out);

// Reads a view object at `pointer`; records violations (policy fields, schema) in `out`
// and returns nullopt when any was recorded.
std::optional<ServiceStateView> ReadServiceStateView(const Json& obj, const std::string& pointer,
                                                     Violations* out);

// The seed's full view: the frontier projection's facts plus the endpoint clocks.
ServiceStateView WithClocks(const frontier::ServiceStateView& facts, uint64_t arrival_time,
                            std::vector<uint64_t> output_times, std::optional<uint64_t> finish_time,
                            std::optional<uint64_t> release_time);

// The JSON form (the same member names; null for an absent finish/release time).
Json ServiceStateViewToJson(const ServiceStateView& v);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SERVICE_SERVICE_STATE_VIEW_H_
