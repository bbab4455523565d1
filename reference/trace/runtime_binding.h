// Header rules that bind a kvconform.trace/1 trace to one runtime (M5.1 0x07): source pin,
// exported metric families, required trace identity and the expected final states.
//
// These header members are optional (a trace without them is read as before). The checker
// calls ReadRuntimeBinding once on line 1 and keeps the result for the event and end-of-trace
// rules (TraceChecker::ReadHeader, ReadEvent, Finish). Everything here is a pure function of
// its arguments; no state is shared. Violations carry pointers into line 1 ("/0/...").
#ifndef KVCONFORM_REFERENCE_TRACE_RUNTIME_BINDING_H_
#define KVCONFORM_REFERENCE_TRACE_RUNTIME_BINDING_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/lifecycle/snapshot/snapshot.h"
#include "reference/validate/violation.h"

namespace simdjson::dom {
class object;
}  // namespace simdjson::dom

namespace kvc::trace {

// Header members owned by this file (the checker marks them known and leaves them to us).
inline constexpr std::string_view kRuntimeBindingKeys[] = {"runtime_pin", "metrics",
                                                           "trace_identity",
                                                           "expected_final_states"};

// Identity fields that are valid audit/trace correlation fields but invalid metric labels:
// each value names one request, span, operation or event, so the number of time series grows
// with traffic (M5.1 0x07 "Audit Stream, Traces, Metrics, And Logs").
inline constexpr std::string_view kUnboundedIdentityLabels[] = {
    "request_id", "trace_id", "span_id",  "operation_id",    "event_id",
    "handle_id",  "txn_id",   "lineage_id", "idempotency_key"};
bool IsUnboundedIdentityLabel(std::string_view label);

// The final state a request must have when the trace ends (the fixture's expected result).
struct ExpectedFinalState {
  std::string pointer;  // "/0/expected_final_states/<i>"
  std::string request_id;
  uint64_t handle_generation = 0;
  uint64_t snapshot = 0;
  uint64_t committed_length = 0;
  lifecycle::Phase phase = lifecycle::Phase::kDecodeReady;
};

struct RuntimeBinding {
  bool trace_identity_required = false;  // "trace_identity": "required"
  std::vector<ExpectedFinalState> expected_final_states;
};

// Reads the members of kRuntimeBindingKeys from the header `header` (a JSON object) into `out`
// and returns every violation found (INPUT_* for shape, TRACE_RUNTIME_PIN_INVALID,
// TRACE_METRIC_LABEL_UNBOUNDED, TRACE_METRIC_DENOMINATOR_MISSING for the rules).
Violations ReadRuntimeBinding(const Json& header, RuntimeBinding* out);
// The same on the checker's parsed line 1 (converts only the members present).
Violations ReadRuntimeBinding(const simdjson::dom::object& header, RuntimeBinding* out);

// The rules of one member, for tests and reuse; `pointer` locates the member.
Violations CheckRuntimePin(const Json& pin, const std::string& pointer);
Violations CheckMetricFamilies(const Json& metrics, const std::string& pointer);

// End of trace: each expected final state against the replayed object
// (TRACE_EXPECTED_RESULT_MISMATCH per differing field, pointer to that field). `forgotten`, when
// given, holds the final snapshots of listed requests whose tombstones the object forgot (the
// released window), so a request released long before the end is judged, not missing.
Violations CheckExpectedFinalStates(
    const RuntimeBinding& binding, const lifecycle::KvObject& kv,
    const std::unordered_map<std::string, lifecycle::Snapshot>* forgotten = nullptr);

}  // namespace kvc::trace

#endif  // KVCONFORM_REFERENCE_TRACE_RUNTIME_BINDING_H_
