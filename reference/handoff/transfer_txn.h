// The M5.6 prefill-to-decode transfer transaction (0x06A-0x06E, 0x10): a request-level
// state machine over chunk-level state machines, gated by byte credits, a producer gate
// and a consumer gate, published through the generation-fenced decode directory.
//
//   request: PLANNED -> RESERVED -> TRANSFERRING -> VALIDATED -> PUBLISHED
//            (RESERVED | TRANSFERRING | VALIDATED) -> ABORTED
//            PUBLISHED: decode admitted, source release acknowledged, decode-owned blocks
//            released (flags, in that order of the protocol; the release needs no admission)
//   chunk:   DECLARED -> CREDIT_ACQUIRED -> SENT -> RECEIVED -> DEVICE_VISIBLE
//
// Each operation either performs its transition or returns a Status carrying the
// HANDOFF_* code of the breached rule and changes nothing (so a checker can stop at the
// first breach and a transport can abort). Retries are idempotent: re-sending a SENT chunk,
// re-receiving identical bytes, re-marking a visible chunk and re-publishing the same
// transfer_id are no-ops; a repeated delivery with other bytes is corruption. After abort
// every completion is a HANDOFF_LATE_COMPLETION with no effect.
//
// Ownership: TransferTxn borrows the credit window, block pool and directory; they must
// outlive it and may be shared by many transactions. Sequential and deterministic: not
// thread-safe; a multi-threaded transport serializes calls per transaction and shares the
// borrowed objects under one lock. Times are caller units (ms in fixtures), only compared.
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TXN_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TXN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/base/status.h"
#include "reference/handoff/byte_credit_window.h"
#include "reference/handoff/decode_directory.h"

namespace kvc::handoff {

enum class TxnState { kPlanned, kReserved, kTransferring, kValidated, kPublished, kAborted };
enum class ChunkState { kDeclared, kCreditAcquired, kSent, kReceived, kDeviceVisible };
std::string_view TxnStateName(TxnState s);
std::string_view ChunkStateName(ChunkState s);

// The identity fence of 0x01A: (tenant, request, generation, attempt, source epoch,
// destination epoch, reservation).
struct TransferIdentity {
  std::string tenant;
  std::string request_id;
  uint64_t generation = 0;
  uint64_t attempt = 0;
  uint64_t source_worker_epoch = 0;
  uint64_t destination_worker_epoch = 0;
  std::string reservation_id;
  bool operator==(const TransferIdentity&) const = default;
};

// One expected chunk: K and V rows of `layer` for tokens [token_start, token_start+token_count).
struct ChunkSpec {
  std::string chunk_id;
  uint64_t layer = 0;
  uint64_t token_start = 0;
  uint64_t token_count = 0;
  uint64_t bytes = 0;
  std::string checksum;  // expected payload checksum (lowercase hex SHA-256)
};

// Everything fixed before transfer starts. bytes_per_token_layer = 2 * H_kv * d_h * b.
struct TransferPlan {
  std::string transfer_id;
  TransferIdentity identity;
  std::string tensor_abi_sha256;
  uint64_t num_layers = 0;
  uint64_t token_start = 0;
  uint64_t token_count = 0;
  uint64_t bytes_per_token_layer = 0;
  uint64_t reserved_blocks = 0;  // destination blocks for the complete prompt K/V
  std::vector<ChunkSpec> chunks;
  // Warm destination: the directory handle of the exact visible prefix V_D = [0, token_start)
  // the transfer extends (DecodeDirectory::OpenDestinationOnto). Empty: a cold destination.
  std::string visible_prefix_handle;
};

// A static defect of a plan; chunk_index is the offending chunk (or -1 for the whole plan).
struct PlanIssue {
  ErrorCode code;
  int64_t chunk_index;  // the chunk at fault, or -1 for the plan
  std::string message;
  std::string field = {};  // the plan member at fault when it is not a chunk ("" otherwise)
};
// bytes_per_token_layer >= 1 and token_start + token_count within 64 bits (each alone, one
// issue, when it fails), unique chunk ids, chunk bytes = token_count * bytes_per_token_layer
// (overflow-checked),
// and coverage: every (layer, token) of [0,num_layers) x [token_start, token_start+count)
// covered by exactly one chunk, judged only when every chunk's bytes agree with its
// token_count. A plan of no tokens (everything already visible at the destination: M5.6 0x06,
// X = U \ V_D may be empty) needs no chunk; a plan without a visible prefix (a cold
// destination: V_D is empty) starts at token 0; a plan that moves tokens reserves at least one
// block (HANDOFF_RESERVATION_TOO_SMALL, judged when nothing else is wrong). Empty when the plan
// is sound.
std::vector<PlanIssue> CheckPlan(const TransferPlan& plan);
// Why `transfer_id` cannot name a transfer, or "" when it can: it is not empty (it keys the
// transfer's events and the destination's append transaction) and not in the prefix namespace
// DecodeDirectory reserves (IsReservedTransferId). CheckPlan's first rule, and the trace
// checker's at a transfer_plan (one rule for both documents; probe 49: an empty id in a
// transfer_protocol/1 document reached the reservation's append).
std::string TransferIdProblem(std::string_view transfer_id);
// Digest over the ordered expected (chunk_id, checksum) pairs: the publication content id.
std::string PlanContentDigest(const TransferPlan& plan);

class TransferTxn {
 public:
  // Fails with the first CheckPlan issue. The borrowed objects must outlive the txn.
  static StatusOr<TransferTxn> Create(TransferPlan plan, ByteCreditWindow* credits,
                                      DestinationBlockPool* pool, DecodeDirectory* directory);

  // PLANNED -> RESERVED: reserves the destination blocks, the request generation and opens
  // the destination's lifecycle append transaction (DecodeDirectory::OpenDestination, or
  // OpenDestinationOnto the visible prefix when plan.visible_prefix_handle is set).
  Status Reserve();
  // DECLARED -> CREDIT_ACQUIRED (first one moves RESERVED -> TRANSFERRING).
  Status AcquireCredit(std::string_view chunk_id);
  // CREDIT_ACQUIRED -> SENT, only when now >= kv_ready_time of the chunk's layer
  // (producer gate). Re-sending a SENT/RECEIVED/VISIBLE chunk is an idempotent retry.
  Status Send(std::string_view chunk_id, uint64_t now, uint64_t kv_ready_time);
  // SENT -> RECEIVED, recording the observed checksum. Identical repeats are no-ops.
  Status Receive(std::string_view chunk_id, std::string_view checksum);
  // RECEIVED -> DEVICE_VISIBLE; returns the chunk's credit (0x06B: at DEVICE_VISIBLE). The
  // last chunk of a layer stages that layer in the destination's append transaction.
  Status MarkDeviceVisible(std::string_view chunk_id);
  // TRANSFERRING -> VALIDATED: identity, ABI, every chunk DEVICE_VISIBLE (consumer gate),
  // every observed checksum equals the expected one.
  Status Validate(const TransferIdentity& expected, std::string_view expected_abi_sha256);
  // VALIDATED -> PUBLISHED through the directory: the generation fence, then the M5.1
  // all-layer compare-and-publish. A stale generation aborts the txn (blocks released,
  // staged rows dropped) and returns HANDOFF_STALE_GENERATION. A retry once PUBLISHED returns
  // the same handle (also after the decode side released it), or HANDOFF_STALE_GENERATION
  // once a newer generation superseded it (no state change).
  StatusOr<PublishedHandle> Publish();
  // Decode may start only from the published handle of this transaction.
  Status AdmitDecode(const PublishedHandle& handle);
  // Source release acknowledgement: after publication and admission, same generation.
  Status AcknowledgeSourceRelease(uint64_t generation);
  // The decode side's lifecycle released the published cache (M5.6 0x06B): PUBLISHED, under the
  // plan's generation, once. The directory releases the handle and withdraws the publication
  // (DecodeDirectory::ReleasePublished: no decode is admitted from it afterwards) and the
  // reserved blocks go back to the destination pool (DestinationBlockPool::ReleaseDecodeOwned).
  // Otherwise HANDOFF_DECODE_RELEASE_INVALID and nothing changes.
  Status ReleaseDecode(uint64_t generation);
  // Any state but PUBLISHED -> ABORTED: fences callbacks (later completions are rejected),
  // then returns held credits and unpublished blocks. Idempotent once ABORTED. `reason` is
  // recorded and must not be empty (INPUT_VALUE_INVALID, nothing changes).
  Status Abort(std::string_view reason);
  // Drops the per-chunk records of a finished (PUBLISHED or ABORTED) transaction; every later
  // operation is judged as before. PUBLISHED: every chunk is DEVICE_VISIBLE with the manifest's
  // checksum (Validate required it), so a retried send, receive or device-visible is judged
  // against the plan; ABORTED: every completion is fenced (HANDOFF_LATE_COMPLETION) before a
  // chunk is looked up, and chunk_state() is nullopt afterwards. No-op in any other state. For
  // a holder of many finished transactions (the trace checker): the plan is all that is kept.
  void Settle();

  TxnState state() const { return state_; }
  const TransferPlan& plan() const { return plan_; }
  std::optional<ChunkState> chunk_state(std::string_view chunk_id) const;
  // The plan's chunk of that id, or null: O(log chunks), settled or not.
  const ChunkSpec* FindSpec(std::string_view chunk_id) const;
  // Every chunk of the plan is DEVICE_VISIBLE (true for a plan of no chunks): O(1).
  bool all_device_visible() const { return visible_chunks_ == plan_.chunks.size(); }
  // Bytes of credit this transaction currently holds.
  uint64_t credit_held() const;
  // The handle the publication returned (PUBLISHED only).
  const std::optional<PublishedHandle>& published() const { return published_; }
  bool decode_admitted() const { return decode_admitted_; }
  bool source_released() const { return source_released_; }
  bool decode_released() const { return decode_released_; }
  const std::string& abort_reason() const { return abort_reason_; }
  // Number of idempotent retries absorbed (re-send, re-receive, re-visible).
  uint64_t retries() const { return retries_; }

 private:
  struct Chunk {
    size_t index = 0;  // into plan_.chunks (indices survive moves of the txn)
    ChunkState state = ChunkState::kDeclared;
    bool credit_held = false;
    std::string observed_checksum;
  };
  TransferTxn(TransferPlan plan, ByteCreditWindow* credits, DestinationBlockPool* pool,
              DecodeDirectory* directory);
  // The index into plan_.chunks of that chunk id, or nullopt: binary search of by_id_.
  std::optional<size_t> IndexOf(std::string_view chunk_id) const;
  StatusOr<Chunk*> Find(std::string_view chunk_id);
  Status RejectIfFenced(std::string_view what) const;
  Status ReleaseHeld();

  TransferPlan plan_;
  ByteCreditWindow* credits_;
  DestinationBlockPool* pool_;
  DecodeDirectory* directory_;
  TxnState state_ = TxnState::kPlanned;
  // Every operation on a chunk costs O(log chunks) and the layer/all-visible checks O(1), so
  // a plan of C chunks replays in O(C log C) (a linear scan per chunk event would be C^2).
  std::vector<size_t> by_id_;  // indices into plan_.chunks sorted by chunk_id (kept settled)
  std::vector<Chunk> chunks_;  // parallel to plan_.chunks; empty once settled_
  // Chunks of each layer not yet DEVICE_VISIBLE (the layer stages when its count reaches 0);
  // emptied by Settle().
  std::unordered_map<uint64_t, uint64_t> layer_pending_;
  uint64_t visible_chunks_ = 0;  // chunks DEVICE_VISIBLE (all of them once settled PUBLISHED)
  bool settled_ = false;         // Settle() dropped chunks_
  Chunk settled_chunk_;  // what Find() returns for a chunk of a settled PUBLISHED transaction
  bool blocks_reserved_ = false;
  bool destination_open_ = false;  // the lifecycle append transaction is OPEN/PREPARED
  std::optional<PublishedHandle> published_;
  bool blocks_decode_owned_ = false;  // this txn's publication moved its blocks to decode-owned
  bool decode_admitted_ = false;
  bool source_released_ = false;
  bool decode_released_ = false;
  uint64_t retries_ = 0;
  std::string abort_reason_;
};

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSFER_TXN_H_
