// Document kind "kvconform.transfer_protocol/1": a handoff transaction plan plus its event
// timeline, checked by replaying every event through TransferTxn (M5.6 0x06A-0x06E).
//
// Gating (a one-field mutation raises its root-cause code only):
//   1 schema (INPUT_*); 2 digest/checksum formats; 3 the static plan (CheckPlan, credit
//   window >= largest chunk); 4 replay in timeline order, stopping at the first breached
//   rule (the transaction would abort there; later events are not judged against a dead
//   transaction); 5 the declared results (ready, visible, validated, published times, peak
//   in-flight bytes, logical bytes, final state) against the values the replay computed; a
//   timeline that ends before PUBLISHED or ABORTED is TRACE_OPERATION_UNTERMINATED instead.
// Events: reserve, credit_acquire, send, receive(checksum), device_visible, validate,
// publish, decode_admit(generation), source_release_ack(generation), abort(reason). An event
// with "disposition": "rejected" records that the runtime refused it (a late completion after
// abort): the protocol must refuse it too (else HANDOFF_DECLARED_RESULT_MISMATCH), and replay
// continues. Declared all_device_visible_ms / validated_ms / published_ms are omitted when the
// timeline never reaches them (an aborted transfer).
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSFER_PROTOCOL_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSFER_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/handoff/transfer_txn.h"
#include "reference/validate/violation.h"

namespace kvc::handoff {

inline constexpr const char* kTransferProtocolKind = "kvconform.transfer_protocol/1";

Violations ValidateTransferProtocol(const Json& doc);

// Reads an expected chunk manifest, the array `chunks` at JSON pointer `pointer`: each element
// {chunk_id, layer, token_start, token_count >= 1, bytes >= 1, checksum}, no other member.
// Records INPUT_* violations only (CheckPlan judges the chunks; the caller, their checksums'
// format). One reader for every document that declares chunks (transfer_protocol/1,
// handoff_manifest/1).
std::vector<ChunkSpec> ReadExpectedChunks(const Json& chunks, const std::string& pointer,
                                          Violations* v);

// What the replay computed (times in the fixture's ms), independent of the declared block.
struct ProtocolSummary {
  uint64_t last_layer_ready = 0;
  std::optional<uint64_t> all_device_visible, validated, published, logical_bytes;
  uint64_t max_inflight_bytes = 0;
  std::string final_state;
  uint64_t credits_in_flight_at_end = 0, unpublished_blocks_at_end = 0, retries = 0;
};
// nullopt when the document fails before or during replay, or its timeline ends with the
// transfer neither PUBLISHED nor ABORTED (see ValidateTransferProtocol).
std::optional<ProtocolSummary> ReplayTransferProtocol(const Json& doc);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSFER_PROTOCOL_H_
