// DecodeDirectory: generation-fenced, idempotent publication of complete handoffs.
#include "reference/handoff/decode_directory.h"

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"

namespace kvc::handoff {

Status DecodeDirectory::ReserveGeneration(const std::string& request_id, uint64_t generation) {
  auto it = entries_.find(request_id);
  if (it != entries_.end() && generation <= it->second.current_generation)
    return ViolationStatus(ErrorCode::HANDOFF_STALE_GENERATION,
                           "request " + base::Clipped(request_id) + " is at generation " +
                               std::to_string(it->second.current_generation) +
                               "; a new attempt must use a newer generation, got " +
                               std::to_string(generation));
  entries_[request_id].current_generation = generation;
  return Status();
}

void DecodeDirectory::SetCurrentGeneration(const std::string& request_id, uint64_t generation) {
  entries_[request_id].current_generation = generation;
}

namespace {
std::string CacheHandleId(const std::string& request_id, uint64_t generation) {
  return request_id + "@g" + std::to_string(generation);
}

// Opens an append transaction whose transaction id and idempotency key are `txn_id` (a
// transfer's id, or a visible prefix's own): the rows [start, start + count) go onto `base` of
// `handle` (the binding a model call would carry: contiguous positions, mask length
// start + count, the ABI's key stage).
Status BeginTransferAppend(lifecycle::KvObject& cache, const std::string& txn_id,
                           const std::string& handle, const lifecycle::Snapshot& base,
                           uint64_t start, uint64_t count) {
  lifecycle::BeginAppendRequest req;
  req.txn_id = txn_id;
  req.idempotency_key = txn_id;
  req.handle_id = handle;
  req.base = base.base();
  req.cache_abi = cache.abi().id;
  req.interval = {start, count};
  req.binding = {start, count, start + count, cache.abi().position_stage};
  return cache.BeginAppend(req).status();
}
}  // namespace

Status DecodeDirectory::OpenDestination(const std::string& request_id, uint64_t generation,
                                        const std::string& transfer_id, uint64_t token_start,
                                        uint64_t token_count) {
  const std::string handle = CacheHandleId(request_id, generation);
  const lifecycle::HandleRecord* rec = cache_.Find(handle);
  lifecycle::Snapshot base;
  if (rec) {
    base = rec->current;
  } else {
    KVC_ASSIGN_OR_RETURN(base, cache_.Allocate(handle, request_id, generation));
  }
  Status s = BeginTransferAppend(cache_, transfer_id, handle, base, token_start, token_count);
  // A refused opening leaves no handle behind (probe 15: the allocated handle stayed, empty, so a
  // later attempt of the request under that generation found it and was refused).
  if (!s.ok() && !rec) (void)ForgetDestination(request_id, generation, transfer_id);
  return s;
}

bool DecodeDirectory::IsAttemptHandleName(std::string_view name) {
  size_t digits = 0;
  while (digits < name.size() && name[name.size() - 1 - digits] >= '0' &&
         name[name.size() - 1 - digits] <= '9')
    ++digits;
  return digits > 0 && name.substr(0, name.size() - digits).ends_with("@g");
}

Status DecodeDirectory::PublishVisiblePrefix(const std::string& prefix_handle_id,
                                             uint64_t tokens) {
  if (tokens == 0) return InvalidArgument("a visible prefix holds at least one token");
  if (IsAttemptHandleName(prefix_handle_id))
    return InvalidArgument("visible prefix " + base::QuoteClipped(prefix_handle_id) +
                           " is named like an attempt's destination handle "
                           "(<request_id>@g<generation>); that form is reserved");
  if (const lifecycle::HandleRecord* rec = cache_.Find(prefix_handle_id)) {
    if (rec->current.readable() && rec->current.committed_length == tokens) return Status();
    return InvalidArgument("handle " + base::QuoteClipped(prefix_handle_id) + " already holds " +
                           std::to_string(rec->current.committed_length) +
                           " tokens; a visible prefix of " + std::to_string(tokens) +
                           " tokens needs its own handle");
  }
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot base,
                       cache_.Allocate(prefix_handle_id, prefix_handle_id, 0));
  const std::string txn = std::string(kPrefixTxnPrefix) + prefix_handle_id;
  KVC_RETURN_IF_ERROR(BeginTransferAppend(cache_, txn, prefix_handle_id, base, 0, tokens));
  for (uint32_t l = 0; l < cache_.abi().num_layers; ++l) {
    lifecycle::StageLayerRequest stage;
    stage.txn_id = txn;
    stage.layer = l;
    stage.interval = {0, tokens};
    KVC_RETURN_IF_ERROR(cache_.StageLayer(stage).status());
  }
  return cache_.Publish(txn).status();
}

Status DecodeDirectory::OpenDestinationOnto(const std::string& request_id, uint64_t generation,
                                            const std::string& transfer_id, uint64_t token_start,
                                            uint64_t token_count,
                                            const std::string& visible_prefix_handle) {
  auto end = CheckedAdd(token_start, token_count);
  if (!end) return OutOfRange("token_start + token_count overflows 64 bits");
  // Only a visible prefix the destination declared (PublishVisiblePrefix) is reusable; an
  // attempt's handle is not one (M5.6 0x06: only entries passing the model, position, ABI,
  // generation and visibility fences count; probe 15: a superseded attempt's handle was forked).
  if (IsAttemptHandleName(visible_prefix_handle))
    return ViolationStatus(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE,
                           base::QuoteClipped(visible_prefix_handle) +
                               " is an attempt's destination handle, not a visible prefix "
                               "(declare a prefix with destination_prefix)");
  if (!cache_.Find(visible_prefix_handle))
    return ViolationStatus(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE,
                           "transfer " + base::Clipped(transfer_id) +
                               " extends the visible prefix " +
                               base::QuoteClipped(visible_prefix_handle) +
                               ", which this destination never published (a prefix of "
                               "another prompt, or none): only a prefix the destination holds "
                               "is reusable");
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot prefix, cache_.Read(visible_prefix_handle));
  if (prefix.committed_length != token_start)
    return ViolationStatus(
        ErrorCode::HANDOFF_COVERAGE_MISMATCH,
        "the destination's visible prefix " + base::QuoteClipped(visible_prefix_handle) +
            " holds tokens [0," + std::to_string(prefix.committed_length) + "), but transfer " +
            base::Clipped(transfer_id) + " starts at token " + std::to_string(token_start) +
            ": the transfer set X = U \\ V_D begins exactly where V_D ends");
  const std::string handle = CacheHandleId(request_id, generation);
  lifecycle::Snapshot base;
  bool forked = false;  // this call created the handle: a refused opening forgets it
  if (const lifecycle::HandleRecord* rec = cache_.Find(handle)) {
    base = rec->current;  // a re-opened attempt handle already holds the fork
    if (base.committed_length != token_start)
      return ViolationStatus(ErrorCode::HANDOFF_COVERAGE_MISMATCH,
                             "destination handle " + base::Clipped(handle) + " holds " +
                                 std::to_string(base.committed_length) +
                                 " tokens; the transfer starts at " + std::to_string(token_start));
  } else {
    KVC_ASSIGN_OR_RETURN(std::vector<lifecycle::Snapshot> kids,
                         cache_.Fork(visible_prefix_handle, token_start, {handle}));
    base = kids.front();
    forked = true;
  }
  if (token_count == 0) {
    nothing_to_move_[transfer_id] = handle;
    return Status();
  }
  Status s = BeginTransferAppend(cache_, transfer_id, handle, base, token_start, token_count);
  if (!s.ok() && forked) (void)ForgetDestination(request_id, generation, transfer_id);
  return s;
}

Status DecodeDirectory::StageLayer(const std::string& transfer_id, uint64_t layer,
                                   uint64_t token_start, uint64_t token_count) {
  if (layer > UINT32_MAX) return OutOfRange("layer index exceeds 32 bits");
  lifecycle::StageLayerRequest req;
  req.txn_id = transfer_id;
  req.layer = static_cast<uint32_t>(layer);
  req.interval = {token_start, token_count};
  return cache_.StageLayer(req).status();
}

Status DecodeDirectory::CancelDestination(const std::string& transfer_id) {
  if (nothing_to_move_.erase(transfer_id) > 0) return Status();  // no rows to drop
  return cache_.CancelTxn(transfer_id);
}

StatusOr<PublishResult> DecodeDirectory::PublishIfGenerationCurrent(
    const std::string& request_id, uint64_t generation, const std::string& transfer_id,
    const std::string& content_digest) {
  auto it = entries_.find(request_id);
  if (it == entries_.end())
    return ViolationStatus(
        ErrorCode::HANDOFF_STALE_GENERATION,
        "request " + base::Clipped(request_id) + " has no reserved generation to publish under");
  Entry& e = it->second;
  if (e.published && e.published->transfer_id == transfer_id) {
    if (e.published->content_digest != content_digest || e.published->generation != generation)
      return ViolationStatus(ErrorCode::HANDOFF_DUPLICATE_CORRUPTION,
                             "transfer " + base::Clipped(transfer_id) +
                                 " was already published with other content or generation");
    return PublishResult{*e.published, true};
  }
  if (generation != e.current_generation || (e.published && e.published->generation >= generation))
    return ViolationStatus(ErrorCode::HANDOFF_STALE_GENERATION,
                           "publication of transfer " + base::Clipped(transfer_id) +
                               " under generation " + std::to_string(generation) + " but request " +
                               base::Clipped(request_id) + " is at generation " +
                               std::to_string(e.current_generation));
  std::string cache_handle_id;
  lifecycle::Snapshot snapshot;
  if (auto z = nothing_to_move_.find(transfer_id); z != nothing_to_move_.end()) {
    // A zero-byte handoff: the fork of the visible prefix is the whole cache.
    KVC_ASSIGN_OR_RETURN(snapshot, cache_.Read(z->second));
    cache_handle_id = z->second;
    nothing_to_move_.erase(z);
  } else {
    // The all-layer publication itself: M5.1 compare-and-publish of the attempt's append.
    KVC_ASSIGN_OR_RETURN(lifecycle::PublishReceipt receipt, cache_.Publish(transfer_id));
    cache_handle_id = receipt.handle_id;
    snapshot = receipt.result;
  }
  e.published = PublishedHandle{request_id,        generation,      transfer_id, content_digest,
                                next_handle_id_++, cache_handle_id, snapshot};
  e.published_released = false;
  ++publications_;
  return PublishResult{*e.published, false};
}

Status DecodeDirectory::ForgetDestination(const std::string& request_id, uint64_t generation,
                                          const std::string& transfer_id) {
  nothing_to_move_.erase(transfer_id);
  const std::string handle = CacheHandleId(request_id, generation);
  const lifecycle::HandleRecord* rec = cache_.Find(handle);
  // An attempt's handle is allocated under the request's lineage (OpenDestination) or forked
  // from a visible prefix (OpenDestinationOnto); a prefix has no parent and its own lineage.
  if (!rec || (rec->current.lineage_id != request_id && rec->parent_id.empty())) return Status();
  if (rec->current.phase == lifecycle::Phase::kDecodeReady)
    KVC_RETURN_IF_ERROR(cache_.CancelRequest(handle).status());
  if (cache_.Find(handle)->current.phase != lifecycle::Phase::kReleased)
    KVC_RETURN_IF_ERROR(cache_.Release(handle).status());
  return cache_.ForgetReleased(handle);
}

Status DecodeDirectory::ReleasePublished(const PublishedHandle& handle) {
  const lifecycle::HandleRecord* rec = cache_.Find(handle.cache_handle_id);
  if (rec && rec->current.phase == lifecycle::Phase::kDecodeReady)
    KVC_RETURN_IF_ERROR(cache_.Finish(handle.cache_handle_id).status());
  KVC_RETURN_IF_ERROR(cache_.Release(handle.cache_handle_id).status());
  if (auto it = entries_.find(handle.request_id);
      it != entries_.end() && it->second.published && *it->second.published == handle)
    it->second.published_released = true;
  return Status();
}

std::optional<uint64_t> DecodeDirectory::CurrentGeneration(const std::string& request_id) const {
  auto it = entries_.find(request_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.current_generation;
}

const PublishedHandle* DecodeDirectory::Lookup(const std::string& request_id) const {
  auto it = entries_.find(request_id);
  if (it == entries_.end() || !it->second.published || it->second.published_released)
    return nullptr;
  return &*it->second.published;
}

}  // namespace kvc::handoff
