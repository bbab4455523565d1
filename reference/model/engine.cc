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
  const AppendItem item{handle, tokens, all_rows, logits};
  return AppendBatch(std::span<const AppendItem>(&item, 1));
}

Status Engine::AppendBatch(std::span<const AppendItem> items) {
  if (items.empty()) return InvalidArgument("engine: empty batch");
  struct Open {
    Request* r = nullptr;
    lifecycle::BeginAppendRequest req;
    bool begun = false, staged = false;
  };
  std::vector<Open> open(items.size());
  // Validate everything before any transaction opens.
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t j = 0; j < i; ++j)
      if (items[j].handle == items[i].handle)
        return InvalidArgument("engine: handle '" + items[i].handle +
                               "' appears twice in one batch");
    KVC_ASSIGN_OR_RETURN(open[i].r, Get(items[i].handle));
    KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot snap, kv_.Read(items[i].handle));
    const uint64_t t = snap.committed_length, n = items[i].tokens.size();
    if (open[i].r->storage->committed_length() != t)
      return Internal("engine: storage length differs from the published snapshot of '" +
                      items[i].handle + "'");
    KVC_RETURN_IF_ERROR(model_.CheckInputs(items[i].tokens, t));
    auto& req = open[i].req;
    req.txn_id = items[i].handle + "/append-" + std::to_string(next_txn_++);
    req.idempotency_key = req.txn_id;
    req.handle_id = items[i].handle;
    req.base = snap.base();
    req.cache_abi = kv_.abi().id;
    req.interval = {t, n};
    req.binding = {t, n, t + n, "post_rope"};
  }
  auto abandon = [&](Status s) {
    for (auto& o : open) {
      if (o.begun) (void)kv_.CancelTxn(o.req.txn_id);
      if (o.staged) o.r->storage->Abort();
    }
    return s;
  };
  std::vector<ForwardSegment> segs;
  for (size_t i = 0; i < items.size(); ++i) {
    if (Status s = kv_.BeginAppend(open[i].req).status(); !s.ok()) return abandon(s);
    open[i].begun = true;
    if (Status s = open[i].r->storage->Stage(items[i].tokens.size()); !s.ok()) return abandon(s);
    open[i].staged = true;
    segs.push_back({items[i].tokens, open[i].r->storage.get(), items[i].all_rows, items[i].logits});
  }
  // Segment s's layer rows are in its storage's staged interval when the hook runs.
  auto hook = [&](size_t s, uint64_t layer) -> Status {
    const auto& req = open[s].req;
    KVC_RETURN_IF_ERROR(
        kv_.StageLayer({req.txn_id, static_cast<uint32_t>(layer), req.interval, true, true, ""})
            .status());
    return observer_ ? observer_(items[s].handle, layer, *open[s].r->storage) : Status::Ok();
  };
  if (Status s = model_.ForwardBatch(segs, opts_.mode, hook); !s.ok()) return abandon(s);
  Status first;
  for (auto& o : open) {
    auto receipt = kv_.Publish(o.req.txn_id);
    if (!receipt.ok() || receipt->replayed) {
      o.r->storage->Abort();
    } else {
      o.r->storage->Commit();
    }
    if (!receipt.ok()) {
      if (first.ok()) first = receipt.status();
    } else if (o.r->storage->committed_length() != receipt->result.committed_length && first.ok()) {
      first = Internal("engine: storage committed length differs from the publication receipt");
    }
  }
  return first;
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
  const DecodeItem item{handle, token, logits};
  return DecodeBatch(std::span<const DecodeItem>(&item, 1));
}

Status Engine::DecodeBatch(std::span<const DecodeItem> items) {
  std::vector<AppendItem> appends;
  std::vector<Request*> reqs;
  for (const auto& it : items) {
    KVC_ASSIGN_OR_RETURN(Request * r, Get(it.handle));
    if (!r->frontier || *r->frontier != it.token) {
      return ViolationStatus(
          ErrorCode::FRONTIER_TOKEN_MISMATCH,
          "decode of token " + std::to_string(it.token) + " on '" + it.handle +
              "': the unprocessed frontier is " +
              (r->frontier ? "[" + std::to_string(*r->frontier) + "]" : "empty"));
    }
    reqs.push_back(r);
    appends.push_back({it.handle, std::span<const int64_t>(&it.token, 1), false, it.logits});
  }
  std::vector<uint64_t> before;
  for (Request* r : reqs) before.push_back(r->storage->committed_length());
  Status s = AppendBatch(appends);
  // A request whose row was published (committed grew by one) has processed its frontier.
  for (size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i]->storage->committed_length() == before[i] + 1) reqs[i]->frontier.reset();
  return s;
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
