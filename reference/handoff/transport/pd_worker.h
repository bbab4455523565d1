// The prefill (P) and decode (D) workers of a real two-process K/V handoff over UCX.
//
// P offers source K/V bytes laid out as the plan's chunks (chunk i at source.offsets[i]); D
// drives the one TransferTxn per attempt (reference/handoff/transfer_txn.h) over its own
// ByteCreditWindow, DestinationBlockPool and DecodeDirectory, so the protocol rules live in
// one place. Messages (docs/pd-transfer.md): tag = type << 56 | attempt << 32 | chunk index.
//   P->D MANIFEST (JSON plan + decode payload), CHUNK (48-byte header + payload), ABORT, FIN
//   D->P REPLY (reservation result + granted credit), ACK (chunk DEVICE_VISIBLE: credit
//        returned), RESULT (published + source release acknowledged, or aborted + code)
// P enforces the granted byte-credit window on send (acquire before send, release on ACK) and
// retransmits an unacknowledged chunk after `rto` (same transfer_id: an idempotent retry);
// D re-checks the window on arrival (its TransferTxn acquires the chunk's credit when the bytes
// land in staging and returns it at DEVICE_VISIBLE, after the copy into the reserved buffer).
// A retryable abort (checksum or duplicate corruption) makes P start a new attempt under the
// next generation; the directory's generation fence rejects anything late from the old one.
// Faults are injected into attempt 1 only (see FaultSpec).
// Every wait is bounded by `peer_timeout`; a dead peer ends the worker with PD_PEER_LOST.
// Thread safety: each worker runs on the calling thread and owns everything it creates.
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_PD_WORKER_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_PD_WORKER_H_

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/handoff/transfer_txn.h"
#include "reference/handoff/transport/bootstrap.h"
#include "reference/handoff/transport/ucx_peer.h"

namespace kvc::handoff::transport {

struct FaultSpec {
  enum class Kind {
    kNone,
    kDrop,          // drop:K       chunk K's first transmission is lost
    kDuplicate,     // dup:K        chunk K is sent twice (identical bytes)
    kReorder,       // reorder      chunks are sent in reverse order
    kDelay,         // delay:K:MS   chunk K is held back MS ms and sent last
    kCorrupt,       // corrupt:K    one byte of chunk K's first transmission is flipped
    kStaleReroute,  // stale-reroute  attempt 1 is superseded by attempt 2 midway; its
                    //              remaining chunks complete late under the old generation
    kCreditWindow,  // credit-window:B  D grants a B-byte window (smaller than a chunk)
    kCreditStall,   // credit-stall D's device copy stalls until the window is exhausted
    kCreditStarve,  // credit-starve  D never makes a chunk DEVICE_VISIBLE (no credit back)
    kKillDecode,    // kill-decode:K  D is SIGKILLed after receiving K chunks
    kHangDecode,    // hang-decode:K  D stops answering (stays alive) after K chunks
    kKillPrefill,   // kill-prefill-after-publish  P is SIGKILLed when told of publication
    // Capabilities (need a capability key on both sides):
    kCapForged,   // cap-forged   attempt 1's capability signature is altered after signing
    kCapExpired,  // cap-expired  attempt 1's capability expired a second before it is sent
    kCapReplay,   // cap-replay   attempt 1 fails (chunk 0 corrupt); attempt 2 re-presents
                  //              attempt 1's nonce in a freshly signed capability
    kCapRegion,   // cap-region:K attempt 1's capability omits chunk K's region
    kCapBytes,    // cap-bytes    attempt 1's capability bounds the bytes one below the plan
  };
  Kind kind = Kind::kNone;
  uint64_t chunk = 0;
  uint64_t ms = 0;
  uint64_t bytes = 0;
  std::string text = "none";
};
StatusOr<FaultSpec> ParseFault(const std::string& s);
// The longest wait a flag or a fault may name (--peer-timeout-ms, --rto-ms, delay:K:MS): one
// hour. Longer values would overflow the deadline arithmetic (probe 37: 2^64-1 ms timed out at
// once).
inline constexpr uint64_t kMaxWaitMs = 3'600'000;
// InvalidArgument unless the fault's chunk exists in a plan of `chunks` chunks: a chunk index
// (drop, dup, corrupt, delay, cap-region) below `chunks`, a received-chunk count (kill-decode,
// hang-decode) at most `chunks` (probe 37: corrupt:6 of a 6-chunk plan injected nothing and the
// run passed).
Status CheckFaultTarget(const FaultSpec& f, uint64_t chunks);

// Capabilities on the wire (M5.6 0x0FE). With a key, P signs one HMAC-SHA256 capability per
// attempt (reference/handoff/capability.h) binding tenant, source, destination, transfer id,
// generation, route epoch, cache ABI, direction "push", the plan's chunk ids as allowed regions,
// the plan's payload bytes as the byte bound, an expiry and a random nonce, and sends it in the
// MANIFEST. D, holding the same key, requires it: AuthorizeTransfer over the declared transfer
// before the reservation (denial: the HANDOFF_CAPABILITY_* code in the REPLY, nothing reserved),
// its nonce consumed once per D, and before accepting any chunk's bytes that the chunk's region
// is allowed and the attempt's accepted bytes stay within the bound. Empty key: off.
struct CapabilityOptions {
  std::string key;  // HMAC key bytes; never logged or reported
  std::string key_id = "kvconform-pd-key";
  std::string issuer = "kvconform-pd-run";
  uint64_t ttl_s = 300;
  uint64_t route_epoch = 1;
};

struct WorkerOptions {
  UcxTransport transport = UcxTransport::kTcp;
  HostPort bootstrap{"127.0.0.1", 0};
  std::string port_file;  // D: writes the bound bootstrap port here (for port 0)
  FaultSpec fault;
  uint64_t credit_bytes = 4u << 20;  // D: the granted byte-credit window
  uint64_t pool_blocks = 1u << 20;   // D: destination block pool capacity
  std::chrono::milliseconds peer_timeout{5000};
  std::chrono::milliseconds rto{300};  // P: retransmission timeout
  uint64_t max_retransmits = 3;        // P: per chunk, before PD_CREDIT_STARVED
  uint64_t max_attempts = 2;           // P: attempts (generations) per request
  // P: the number (= generation) of its first attempt, in [1, 2^32]. A reroute onto a fresh
  // decode worker continues the request's numbering, so it never reuses a lost generation.
  uint64_t first_attempt = 1;
  bool checksum = true;  // SHA-256 per chunk (false only for benchmarks)
  std::string tenant = "tenant-0";
  std::string request_id = "req-0";
  uint64_t source_epoch = 1;
  uint64_t destination_epoch = 1;
  // D: a warm destination already holds the exact visible prefix V_D = [0, tokens) under this
  // lifecycle handle id (published into the decode directory before any reservation; the
  // caller computed those rows itself). Empty: a cold destination.
  std::string warm_prefix_handle;
  uint64_t warm_prefix_tokens = 0;
  CapabilityOptions capability;
};

// What P offers: the plan's shape (transfer_id/identity/checksums are filled per attempt),
// the source bytes, and an opaque payload for D (prompt, first token, logits...).
struct SourceKv {
  uint64_t num_layers = 0;
  // The transferred interval [token_start, token_start + token_count): the transfer set
  // X = U \ V_D. token_start > 0 names a warm destination whose visible prefix V_D = [0,
  // token_start) is the directory handle `visible_prefix_handle` (TransferPlan's fields).
  uint64_t token_start = 0;
  std::string visible_prefix_handle;
  uint64_t token_count = 0;
  uint64_t bytes_per_token_layer = 0;
  uint64_t reserved_blocks = 0;
  std::vector<ChunkSpec> chunks;  // chunk_id, layer, token_start, token_count, bytes
  std::vector<uint64_t> offsets;  // chunk i's bytes at bytes[offsets[i], +chunks[i].bytes)
  // Each chunk is preceded by a kChunkHeaderSlot-byte slot where P writes the chunk header, so
  // header + payload leave as one contiguous message (UCX's IOV path is slower on tcp).
  std::vector<uint8_t> bytes;
  std::vector<uint64_t> layer_ready_us;  // producer gate: K/V-ready time of each layer
  std::string tensor_abi_sha256;
  nlohmann::json payload;  // forwarded to D inside the manifest
};
inline constexpr uint64_t kChunkHeaderSlot = 64;
// Lays out `chunks` in order, each after a header slot (offsets, overflow-checked), and sizes
// `bytes` when it is empty; otherwise checks that it has exactly that size.
Status LayoutSource(SourceKv* src);
// Payload bytes of a source (sum of chunk bytes, without header slots).
uint64_t PayloadBytes(const SourceKv& src);

struct PrefillResult {
  Status status;          // OK when some attempt was published
  nlohmann::json report;  // attempts, retransmits, credit figures, timings
};
PrefillResult RunPrefillWorker(const WorkerOptions& opts, SourceKv source);

struct DecodeResult {
  Status status;  // OK when a transfer was published (even if P died afterwards)
  nlohmann::json report;
  // The published attempt: its plan, destination bytes (same layout as the source) and the
  // manifest payload. Absent when nothing was published.
  std::optional<TransferPlan> plan;
  std::vector<uint64_t> offsets;
  std::vector<uint8_t> bytes;
  nlohmann::json payload;
  // The directory's published handle decode must be admitted from (its cache_snapshot is what
  // model::Engine::AdoptPublished recreates). Set exactly when `plan` is.
  std::optional<PublishedHandle> published;
};
// `abi` is the destination's own cache ABI: id = its tensor ABI digest (validated against the
// manifest), num_layers = its L.
DecodeResult RunDecodeWorker(const WorkerOptions& opts, const lifecycle::CacheAbi& abi);

// Microseconds on the steady clock (the producer gate compares two such P-side times).
uint64_t SteadyNowUs();

// The benchmark peer: the same bytes, the same message size and window, no protocol.
struct RawResult {
  Status status;
  double seconds = 0;  // first send .. receiver's done message (sender side)
};
RawResult RunRawSender(const WorkerOptions& opts, const SourceKv& source);
RawResult RunRawReceiver(const WorkerOptions& opts);

}  // namespace kvc::handoff::transport

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_PD_WORKER_H_
