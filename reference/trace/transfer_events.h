// The M5.6 transfer plane of kvconform.trace/1: event types replayed through reference/handoff.
//
// The rows (transfer_destination, destination_prefix, kv_ready, transfer_plan, transfer_reserve,
// chunk_credit_acquire, chunk_send, chunk_receive, chunk_device_visible, transfer_validate,
// transfer_publish, decode_admit, source_release_ack, decode_release, transfer_abort) are added to
// the checker's dispatch table with RegisterEventType; docs/trace-format.md defines their payloads.
// Each transfer (operation_id = transfer_id) is one handoff::TransferTxn borrowing its
// destination's ByteCreditWindow and DestinationBlockPool and the trace's DecodeDirectory, whose
// lifecycle::KvObject carries the header's cache ABI: no rule is restated here. Trace order is
// the time of the producer and consumer gates (a chunk_send must follow the kv_ready event of
// its layer/token interval).
// Thread safety: registration is thread-safe; replay state lives in one checker (sequential).
#ifndef KVCONFORM_REFERENCE_TRACE_TRANSFER_EVENTS_H_
#define KVCONFORM_REFERENCE_TRACE_TRANSFER_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reference/base/status.h"

namespace kvc::trace {

class TraceChecker;

// Adds the transfer-plane rows to the event-type table once (later calls return the first
// call's status). Called by the checker before any trace is checked.
Status RegisterTransferEventTypes();

// What the replay of one transfer established (for tests and reports). Times are the
// monotonic_ns of the events that caused them (comparable when the sources share a clock).
struct TransferReplaySummary {
  std::string state;                              // TxnStateName of the replayed transaction
  uint64_t peak_in_flight_bytes = 0;              // the destination credit window's high-water mark
  uint64_t logical_bytes = 0;                     // sum of the plan's chunk bytes
  std::optional<uint64_t> last_layer_ready_ns;    // latest kv_ready of a planned layer
  std::optional<uint64_t> all_device_visible_ns;  // last chunk_device_visible, once all are
  std::optional<uint64_t> validated_ns;
  std::optional<uint64_t> published_ns;
  std::optional<uint64_t> published_committed_length;  // the destination handle after publish
  uint64_t credits_in_flight_at_end = 0;
  uint64_t unpublished_blocks_at_end = 0;
  uint64_t retries = 0;
};
// Gates transfer `transfer_id` (the core calls it for a transfer event it drops, or skips as an
// event of a gated request): its later events are not replayed, and what it holds at its
// destination is returned in the replay, whose window and pool there stop being judged on the
// runtime's refusals (docs/trace-format.md "Gating"). A transfer the trace has not planned is
// only gated.
void GateTransfer(TraceChecker& c, std::string_view transfer_id);
// Gates every kept transfer of `request` (open, or finished within the window): the core calls
// it when it gates the request (TraceChecker::Poison of "request:<id>").
void GateTransfersOfRequest(TraceChecker& c, std::string_view request);

// Whether the transfer plane keeps a transfer of `request` (open, or finished within the
// window): its generation fence and holdings there belong to the incarnation that planned it.
bool RequestHasTransfers(const TraceChecker& c, std::string_view request);

// The request a planned transfer moves, or nullopt when the trace planned no such transfer.
std::optional<std::string> TransferRequest(const TraceChecker& c, std::string_view transfer_id);

// The summary of `transfer_id` in a checker that replayed it; nullopt when unknown.
std::optional<TransferReplaySummary> SummarizeTransfer(const TraceChecker& c,
                                                       std::string_view transfer_id);

// What the transfer plane keeps of its transfers, for tests of its memory bound: the transfer
// records (every open transfer, and the last released_window finished ones), the finished ones
// among them, how many were forgotten, and the decode directory's requests (generation fences)
// and destination handles and lifecycle transactions; and the K/V readiness kept (requests with
// an open transfer, and the last released_window without one) with its merged ready intervals,
// all layers together.
struct TransferRecords {
  size_t transfers = 0;
  size_t finished = 0;
  uint64_t forgotten = 0;
  size_t directory_requests = 0;
  size_t destination_handles = 0;
  size_t destination_txns = 0;
  size_t ready_requests = 0;
  size_t ready_intervals = 0;
};
TransferRecords TransferFootprint(const TraceChecker& c);

}  // namespace kvc::trace

#endif  // KVCONFORM_REFERENCE_TRACE_TRANSFER_EVENTS_H_
