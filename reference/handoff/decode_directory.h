// The decode directory of M5.6 0x06D/0x10: the one place a transferred cache becomes
// visible to decode, published atomically under the request's current generation.
//
// Per request it keeps the current (newest reserved) generation and at most one published
// handle. Rules (0x10 publish_transfer):
//   - a reservation must carry a generation newer than the request's current one (a
//     reroute supersedes older attempts); older or equal -> HANDOFF_STALE_GENERATION;
//   - publication succeeds only for the current generation with no newer handle published;
//   - re-publishing the same transfer_id with the same content digest is idempotent and
//     returns the original handle; the same transfer_id with another digest is
//     HANDOFF_DUPLICATE_CORRUPTION; anything else under a non-current generation is stale.
// All-layer atomicity is not re-implemented here: each attempt's destination cache is a
// handle "<request_id>@g<generation>" in the destination's lifecycle::KvObject (M5.1), the
// transferred interval is one append transaction (txn id = transfer_id) whose layers are
// staged as they become DEVICE_VISIBLE, and publication is that object's compare-and-publish
// (every layer or none). This type adds only the M5.6 cross-attempt generation fence and the
// decode-visible handle. A cold destination handle starts empty, so its transferred interval
// starts at token 0 (OpenDestination; token_start > 0 there is LIFECYCLE_APPEND_HOLE). A warm
// destination already holds an exact visible prefix V_D (PublishVisiblePrefix): the attempt's
// handle is then an exact fork of that prefix and the transfer appends only the missing
// interval X = U \ V_D onto it (OpenDestinationOnto); publication makes [0, |U|) visible.
// Not thread-safe; callers serialize (one logical directory lock).
#ifndef KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_
#define KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "reference/base/status.h"
#include "reference/lifecycle/kv_object/kv_object.h"

namespace kvc::handoff {

// What decode may be admitted from: the published, complete destination cache.
struct PublishedHandle {
  std::string request_id;
  uint64_t generation = 0;
  std::string transfer_id;
  std::string content_digest;          // digest over the expected chunk checksums
  uint64_t handle_id = 0;              // directory-assigned, never reused
  std::string cache_handle_id;         // the lifecycle handle decode reads
  lifecycle::Snapshot cache_snapshot;  // the snapshot the all-layer publication created
  bool operator==(const PublishedHandle&) const = default;
};

struct PublishResult {
  PublishedHandle handle;
  bool idempotent_replay = false;  // true when this transfer_id was already published
};

class DecodeDirectory {
 public:
  // `abi` is the destination's cache ABI (id: the tensor ABI digest; L layers).
  explicit DecodeDirectory(lifecycle::CacheAbi abi) : cache_(std::move(abi)) {}

  // Declares `generation` as the request's current attempt (reservation before transfer).
  Status ReserveGeneration(const std::string& request_id, uint64_t generation);
  // Seeds a request's current generation (a checker loading an observed directory).
  void SetCurrentGeneration(const std::string& request_id, uint64_t generation);

  // Allocates the attempt's empty destination handle and begins its append transaction
  // (txn id = transfer_id) for [token_start, token_start + token_count). LIFECYCLE_* codes
  // from the lifecycle object pass through (e.g. APPEND_HOLE for token_start > 0).
  Status OpenDestination(const std::string& request_id, uint64_t generation,
                         const std::string& transfer_id, uint64_t token_start,
                         uint64_t token_count);
  // Makes `tokens` tokens of exact state visible at this destination as the all-layer snapshot
  // of handle `prefix_handle_id` (a prefix-cache entry that already passed the model, position,
  // ABI, generation and visibility fences; its identity is the caller's claim). Re-publishing an
  // equal prefix is a no-op; another length under the same handle is InvalidArgument.
  // A name of the form of an attempt handle ("<anything>@g<digits>") is InvalidArgument: it
  // would be some request's destination handle (IsAttemptHandleName).
  Status PublishVisiblePrefix(const std::string& prefix_handle_id, uint64_t tokens);
  // True for names of the form "<anything>@g<digits>", the attempt handles' (OpenDestination):
  // reserved, so that a visible prefix never shares a handle with an attempt (since 2026-12-04:
  // probe 11, a prefix named "r1@g1" became request r1's generation-1 destination handle, and a
  // cold plan appended onto its rows).
  static bool IsAttemptHandleName(std::string_view name);
  // The append transaction that publishes a visible prefix is "visible-prefix:<handle>", in the
  // destination object's one transaction namespace with the transfer ids: a transfer id of that
  // form is reserved (refused where a plan is read: CheckPlan, the trace's transfer_plan; probe
  // 40: a transfer named "visible-prefix:pfx" collided with prefix pfx's transaction).
  static constexpr std::string_view kPrefixTxnPrefix = "visible-prefix:";
  static bool IsReservedTransferId(std::string_view id) { return id.starts_with(kPrefixTxnPrefix); }
  // OpenDestination onto a warm destination: the attempt's handle starts as an exact fork of
  // `visible_prefix_handle`, whose committed length must equal token_start (the transfer set
  // X = U \ V_D begins where V_D ends; otherwise HANDOFF_COVERAGE_MISMATCH), and its append
  // transaction (base = the fork's snapshot) covers only [token_start, token_start+token_count).
  // With token_count 0 (a zero-byte handoff: the destination already holds all of U) there is
  // no append: publication makes the fork itself visible.
  Status OpenDestinationOnto(const std::string& request_id, uint64_t generation,
                             const std::string& transfer_id, uint64_t token_start,
                             uint64_t token_count, const std::string& visible_prefix_handle);
  // Stages K and V of one layer (every chunk of it is DEVICE_VISIBLE).
  Status StageLayer(const std::string& transfer_id, uint64_t layer, uint64_t token_start,
                    uint64_t token_count);
  // Drops the attempt's unpublished rows (abort); the handle stays empty.
  Status CancelDestination(const std::string& transfer_id);

  // Forgets a finished attempt's destination: the handle "<request_id>@g<generation>" that
  // OpenDestination or OpenDestinationOnto created for it (cancelled if still DECODE_READY,
  // released, then KvObject::ForgetReleased: every lifecycle record on it) and a zero-byte
  // attempt's fork. Visible prefixes and handles it did not create are left alone. The request's
  // generation fence and published handle stay (ForgetRequest). The caller decides how long a
  // finished attempt stays known (the trace checker keeps a documented window).
  Status ForgetDestination(const std::string& request_id, uint64_t generation,
                           const std::string& transfer_id);
  // Forgets a request's current generation and published handle: a reservation of the request
  // is then admitted under any generation (as for a request never reserved).
  void ForgetRequest(const std::string& request_id) { entries_.erase(request_id); }
  size_t request_count() const { return entries_.size(); }

  // The generation fence, then the lifecycle compare-and-publish of transfer_id's append.
  StatusOr<PublishResult> PublishIfGenerationCurrent(const std::string& request_id,
                                                     uint64_t generation,
                                                     const std::string& transfer_id,
                                                     const std::string& content_digest);

  // The decode side released the published cache `handle` (M5.6 0x06B: decode-owned until "the
  // ordinary M5.1/M5.3 lifecycle releases" it): its lifecycle handle is finished (when still
  // DECODE_READY) and released, and when it is the request's publication, that publication is
  // withdrawn: Lookup no longer returns it, so no decode is admitted from it. The generation
  // fence stays, and a re-publication of the same transfer still returns the original handle
  // (idempotent). LIFECYCLE_* codes pass through (e.g. LIFECYCLE_HANDLE_RELEASED: released twice).
  Status ReleasePublished(const PublishedHandle& handle);
  std::optional<uint64_t> CurrentGeneration(const std::string& request_id) const;
  // The request's publication decode may be admitted from: null when none, or when the decode side
  // released it (ReleasePublished).
  const PublishedHandle* Lookup(const std::string& request_id) const;
  // Number of successful (non-idempotent) publications, for property tests.
  uint64_t publications() const { return publications_; }

  const lifecycle::KvObject& cache() const { return cache_; }

 private:
  struct Entry {
    uint64_t current_generation = 0;
    std::optional<PublishedHandle> published;
    bool published_released = false;  // ReleasePublished(*published) ran
  };
  lifecycle::KvObject cache_;
  std::map<std::string, Entry> entries_;
  // Zero-byte attempts (transfer_id -> their fork's handle), from opening to publication or
  // cancellation: they have no append transaction to publish.
  std::map<std::string, std::string> nothing_to_move_;
  uint64_t next_handle_id_ = 1;
  uint64_t publications_ = 0;
};

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_DECODE_DIRECTORY_H_
