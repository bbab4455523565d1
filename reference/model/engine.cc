// The reference engine: model calls as lifecycle append transactions over physical storage.
#include "reference/model/engine.h"

namespace kvc::model {

std::string EngineCacheAbiId(const LlamaConfig& c) {
  return "kvconform.llama/L=" + std::to_string(c.num_hidden_layers) +
         ";H_kv=" + std::to_string(c.num_key_value_heads) + ";d_h=" + std::to_string(c.head_dim) +
         ";k=post_rope;dtype=f32";
}

int64_t Argmax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int64_t>(best);
}

Engine::Engine(const LlamaModel& model, EngineOptions opts)
    : model_(model),
      opts_(opts),
      kv_(lifecycle::CacheAbi{EngineCacheAbiId(model.config()),
                              static_cast<uint32_t>(model.config().num_hidden_layers),
                              "post_rope"}) {}

std::unique_ptr<KvStorage> Engine::NewStorage() const {
  return opts_.paged ? NewPagedKvStorage(model_.kv_shape(), opts_.block_size)
                     : NewContiguousKvStorage(model_.kv_shape());
}

StatusOr<Engine::Request*> Engine::Get(const std::string& handle) {
  auto it = requests_.find(handle);
  if (it == requests_.end()) return InvalidArgument("engine: unknown handle '" + handle + "'");
  return &it->second;
}

const KvStorage* Engine::storage(const std::string& handle) const {
  auto it = requests_.find(handle);
  return it == requests_.end() ? nullptr : it->second.storage.get();
}

std::optional<int64_t> Engine::frontier(const std::string& handle) const {
  auto it = requests_.find(handle);
  return it == requests_.end() ? std::nullopt : it->second.frontier;
}

Status Engine::NewRequest(const std::string& handle) {
  KVC_RETURN_IF_ERROR(kv_.Allocate(handle, handle).status());
  requests_[handle] = Request{NewStorage(), std::nullopt};
  return Status::Ok();
}

Status Engine::Append(const std::string& handle, std::span<const int64_t> tokens, bool all_rows,
                      std::vector<float>* logits) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot snap, kv_.Read(handle));
  const uint64_t t = snap.committed_length, n = tokens.size();
  if (r->storage->committed_length() != t)
    return Internal("engine: storage length differs from the published snapshot of '" + handle +
                    "'");
  KVC_RETURN_IF_ERROR(model_.CheckInputs(tokens, t));

  lifecycle::BeginAppendRequest req;
  req.txn_id = handle + "/append-" + std::to_string(next_txn_++);
  req.idempotency_key = req.txn_id;
  req.handle_id = handle;
  req.base = snap.base();
  req.cache_abi = kv_.abi().id;
  req.interval = {t, n};
  req.binding = {t, n, t + n, "post_rope"};
  KVC_RETURN_IF_ERROR(kv_.BeginAppend(req).status());
  if (Status s = r->storage->Stage(n); !s.ok()) {
    (void)kv_.CancelTxn(req.txn_id);
    return s;
  }
  // Layer l's rows are in the storage's staged interval when the hook runs.
  auto hook = [&](uint64_t layer) -> Status {
    KVC_RETURN_IF_ERROR(
        kv_.StageLayer({req.txn_id, static_cast<uint32_t>(layer), req.interval, true, true, ""})
            .status());
    return observer_ ? observer_(handle, layer, *r->storage) : Status::Ok();
  };
  Status s = model_.Forward(tokens, *r->storage, opts_.mode, all_rows, hook, logits);
  if (!s.ok()) {
    (void)kv_.CancelTxn(req.txn_id);
    r->storage->Abort();
    return s;
  }
  auto receipt = kv_.Publish(req.txn_id);
  if (!receipt.ok()) {
    r->storage->Abort();
    return receipt.status();
  }
  if (receipt->replayed) {
    r->storage->Abort();
  } else {
    r->storage->Commit();
  }
  if (r->storage->committed_length() != receipt->result.committed_length)
    return Internal("engine: storage committed length differs from the publication receipt");
  return Status::Ok();
}

Status Engine::Prefill(const std::string& handle, std::span<const int64_t> prompt, uint64_t chunk,
                       std::vector<float>* logits) {
  if (prompt.empty()) return InvalidArgument("prefill: empty prompt");
  const uint64_t step = chunk == 0 ? prompt.size() : chunk;
  for (uint64_t at = 0; at < prompt.size(); at += step) {
    const uint64_t n = std::min<uint64_t>(step, prompt.size() - at);
    KVC_RETURN_IF_ERROR(Append(handle, prompt.subspan(at, n), false, logits));
  }
  return Status::Ok();
}

Status Engine::Emit(const std::string& handle, int64_t token) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (r->frontier) {
    return ViolationStatus(ErrorCode::FRONTIER_FRONTIER_SKIPPED,
                           "emit " + std::to_string(token) + " on '" + handle +
                               "': emitted token " + std::to_string(*r->frontier) +
                               " has not been processed");
  }
  r->frontier = token;
  return Status::Ok();
}

Status Engine::Decode(const std::string& handle, int64_t token, std::vector<float>* logits) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (!r->frontier || *r->frontier != token) {
    return ViolationStatus(ErrorCode::FRONTIER_TOKEN_MISMATCH,
                           "decode of token " + std::to_string(token) + " on '" + handle +
                               "': the unprocessed frontier is " +
                               (r->frontier ? "[" + std::to_string(*r->frontier) + "]" : "empty"));
  }
  const int64_t t[1] = {token};
  KVC_RETURN_IF_ERROR(Append(handle, t, false, logits));
  r->frontier.reset();
  return Status::Ok();
}

Status Engine::RepairFrontier(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (!r->frontier) {
    return ViolationStatus(ErrorCode::FRONTIER_NOTHING_TO_REPAIR,
                           "repair on '" + handle + "': the output frontier is empty");
  }
  std::vector<float> discarded;  // real model work; not another output decision
  return Decode(handle, *r->frontier, &discarded);
}

Status Engine::Fork(const std::string& parent, uint64_t prefix,
                    const std::vector<std::string>& children) {
  KVC_ASSIGN_OR_RETURN(Request * p, Get(parent));
  KVC_RETURN_IF_ERROR(kv_.Fork(parent, prefix, children).status());
  for (const auto& c : children) {
    auto st = p->storage->Fork(prefix);
    if (!st.ok())
      return Internal("engine: storage fork failed after the lifecycle fork: " +
                      st.status().message());
    requests_[c] = Request{std::move(st).value(), std::nullopt};
  }
  return Status::Ok();
}

Status Engine::Truncate(const std::string& handle, uint64_t length) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.Truncate(handle, length).status());
  r->frontier.reset();  // the emitted token's context is gone; a new continuation starts
  return r->storage->Truncate(length);
}

Status Engine::Finish(const std::string& handle) { return kv_.Finish(handle).status(); }

Status Engine::Cancel(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.CancelRequest(handle).status());
  r->frontier.reset();
  return Status::Ok();
}

Status Engine::Release(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.Release(handle).status());
  r->storage->Release();
  r->frontier.reset();
  return Status::Ok();
}

StatusOr<std::vector<lifecycle::LiveSequenceRow>> Engine::Reorder(
    const std::vector<lifecycle::LiveSequenceRow>& rows,
    const std::vector<uint64_t>& parent_index) {
  KVC_ASSIGN_OR_RETURN(auto after, lifecycle::Reorder(rows, parent_index));
  KVC_RETURN_IF_ERROR(lifecycle::CheckCoupledReorder(rows, parent_index, after));
  for (const auto& row : after) {
    KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot s, kv_.Read(row.cache_handle));
    if (s.committed_length != row.next_position)
      return InvalidArgument("reorder: row of handle '" + row.cache_handle +
                             "' says next position " + std::to_string(row.next_position) +
                             " but the handle holds " + std::to_string(s.committed_length) +
                             " rows");
  }
  return after;
}

}  // namespace kvc::model
