// Document kind "kvconform.transfer_trace/1": the transfer-trace analyzer of M5.6 0x0F.
//
// A trace is one handoff transaction's timed events: registration, per-layer gather,
// network attempts (ok | failed), destination device copy, per-layer visibility (an
// instant) and publication (ok | failed); a gather, device copy or visibility may say
// "result": "failed" too (default ok): it moves, copies or shows nothing, only its time
// counts as work. The analyzer requires one transaction identity
// and generation on every event, a successful network attempt and device copy of each
// layer before that layer's visibility, visibility of every expected layer before the
// single successful publication, and successful per-layer network bytes equal to the
// layer payloads. It then recomputes, in trace time units (us):
//   wall       = max(end) - min(start)
//   work       = sum of interval durations (visibility instants excluded)
//   overlapped = work - |union of intervals|   (work done concurrently with other work)
//   exposed    = max(0, publication end - decode_ready)
//   retries    = failed gathers, network attempts and device copies
//   transferred_bytes = bytes moved by successful network attempts
// and compares the declared summary. Gating: schema -> identity/intervals -> ordering and
// bytes -> summary (only over a sound trace).
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TRACE_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TRACE_H_

#include <cstdint>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::handoff {

inline constexpr const char* kTransferTraceKind = "kvconform.transfer_trace/1";

struct TraceSummary {
  uint64_t wall = 0, work = 0, busy = 0, overlapped = 0, exposed = 0, retries = 0,
           transferred_bytes = 0;
};

Violations ValidateTransferTrace(const Json& doc);
// The recomputed summary of a trace that passed ValidateTransferTrace's checks up to the
// summary (nullopt otherwise); used by `kvconform` reports and tests.
std::optional<TraceSummary> AnalyzeTransferTrace(const Json& doc);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TRACE_H_
