// The phase/service-interface oracle of M5.1 0x05: replays a per-request event timeline,
// projects every ServiceStateView, and derives the service metrics from endpoint clocks.
//
// Document kind "kvconform.service_trace/1" (docs/service-format.md): a cache ABI binding
// (value + SHA256(JCS)), B_token, time unit, window, SLO limits, requests (prompt length,
// handle generation, the declared output tokens), events in time order (arrive,
// prefill_begin{rows}, prefill_publish{rows}, emit{output_index, token},
// decode_publish{token}, repair_publish{token}, finish, release), each with the expected view
// of its request after the event, and the expected per-request and aggregate metrics.
//
// One implementation of each rule: the output/cache frontier (output before logits, index
// gaps, frontier-token identity, prompt overrun, decode before prefill, early finish) is
// frontier::FrontierState, the phase/view projection is frontier::Project over a lifecycle
// snapshot (version +1 per publication and at release, incarnation +1 at release, committed
// length 0 after release; docs/lifecycle.md). This oracle adds the service trace's own rules:
// arrival before work, prefill begin/publish pairing, declared output tokens, release only
// after finish (a finished request admits only a repair of its final output and release),
// endpoint clocks and metrics.
//
// Gating: 1 schema, incl. policy fields in views - stop;  2 ABI binding - stop;
// 3 request declarations - stop;  4 replay, stopping at the first illegal event;
// 5 terminal closure and every view;  6 every metric, unless the trace is open (stage 5's
// SERVICE_TERMINAL_STATE_OPEN: an open request's metrics are undefined). A view drift does not
// stop stage 6: the metrics derive from the events, not from the declared views.
#ifndef KVCONFORM_REFERENCE_SERVICE_SERVICE_TRACE_H_
#define KVCONFORM_REFERENCE_SERVICE_SERVICE_TRACE_H_

#include <map>
#include <string>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/service/service_metrics.h"
#include "reference/service/service_state_view.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kServiceTraceKind = "kvconform.service_trace/1";

// The metrics a valid trace derives (used by `kvconform calc service-metrics`).
struct ServiceTraceMetrics {
  std::map<std::string, RequestMetrics> requests;  // by request id
  AggregateMetrics aggregate;
  std::string time_unit;
};

// Every violation of the service-trace contract, in check order (see the file comment).
Violations ValidateServiceTrace(const Json& doc);

// Replays a trace and derives its metrics without comparing any expected field; fails with
// the first violation (its registry code as Status::error(), its code, pointer and message in
// the message) when the trace is not replayable.
StatusOr<ServiceTraceMetrics> DeriveServiceMetrics(const Json& doc);

// JSON forms used by fixtures and the CLI. A rational is {"num", "den", "value"}.
Json RationalToJson(const Rational& r);
Json RequestMetricsToJson(const RequestMetrics& m);
Json AggregateMetricsToJson(const AggregateMetrics& a);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SERVICE_SERVICE_TRACE_H_
