// The reference engine: model calls as lifecycle append transactions over physical storage.
#include "reference/model/engine.h"

#include <cmath>

namespace kvc::model {
namespace {

frontier::AppendCall Call(frontier::AppendPurpose purpose, uint64_t rows,
                          std::optional<uint64_t> token = std::nullopt) {
  frontier::AppendCall c;
  c.purpose = purpose;
  c.rows = rows;
  c.input_token = token;
  return c;
}

}  // namespace

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

StatusOr<int64_t> GreedyToken(std::span<const float> logits, uint64_t step) {
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      return ViolationStatus(
          ErrorCode::MODEL_LOGITS_NONFINITE,
          "output " + std::to_string(step) + ": logit " + std::to_string(i) + " is " +
              (std::isnan(logits[i]) ? "NaN" : "infinite") +
              " (the forward pass overflowed float32: weights or config values whose products "
              "exceed its range); no token can be selected");
  return Argmax(logits);
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
  const frontier::FrontierState* f = frontier_state(handle);
  if (!f || !f->frontier_token()) return std::nullopt;
  return static_cast<int64_t>(*f->frontier_token());
}

const frontier::FrontierState* Engine::frontier_state(const std::string& handle) const {
  auto it = requests_.find(handle);
  return it == requests_.end() || !it->second.fs ? nullptr : &*it->second.fs;
}

frontier::FrontierState& Engine::Fs(Request* r) {
  if (!r->fs) r->fs.emplace(0);
  return *r->fs;
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
  std::vector<std::optional<frontier::AppendCall>> calls(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].whole_prompt) {
      auto it = requests_.find(items[i].handle);
      if (it != requests_.end() && !it->second.fs && it->second.storage->committed_length() == 0)
        it->second.fs.emplace(items[i].tokens.size());
      calls[i] = Call(frontier::AppendPurpose::kPrefill, items[i].tokens.size());
    }
  }
  return RunBatch(items, calls);
}

Status Engine::RunBatch(std::span<const AppendItem> items,
                        const std::vector<std::optional<frontier::AppendCall>>& calls) {
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
    if (calls[i]) KVC_RETURN_IF_ERROR(Fs(open[i].r).CheckAppend(*calls[i]));
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
  for (size_t i = 0; i < open.size(); ++i) {
    auto& o = open[i];
    auto receipt = kv_.Publish(o.req.txn_id);
    if (!receipt.ok() || receipt->replayed) {
      o.r->storage->Abort();
    } else {
      o.r->storage->Commit();
      if (calls[i]) {
        Fs(o.r).ApplyPublished(*calls[i]);
      } else {
        Fs(o.r).Untrack();  // a raw append: the frontier cannot follow it
      }
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
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (!r->fs && r->storage->committed_length() == 0) r->fs.emplace(prompt.size());
  const uint64_t step = chunk == 0 ? prompt.size() : chunk;
  for (uint64_t at = 0; at < prompt.size(); at += step) {
    const uint64_t n = std::min<uint64_t>(step, prompt.size() - at);
    const AppendItem item{handle, prompt.subspan(at, n), false, logits};
    KVC_RETURN_IF_ERROR(RunBatch(std::span<const AppendItem>(&item, 1),
                                 {Call(frontier::AppendPurpose::kPrefill, n)}));
  }
  return Status::Ok();
}

Status EmitOnFrontier(const std::string& handle, int64_t token,
                      std::optional<frontier::FrontierState>* fs) {
  if (token < 0) {
    return ViolationStatus(
        ErrorCode::MODEL_TOKEN_OUT_OF_RANGE,
        "emit on '" + handle + "': token " + std::to_string(token) + " is negative");
  }
  // Applied only when the emission is legal; before any tracked call there are no logits.
  frontier::FrontierState next = *fs ? **fs : frontier::FrontierState(0);
  KVC_RETURN_IF_ERROR(next.Emit(next.emitted(), static_cast<uint64_t>(token)));
  *fs = next;
  return Status::Ok();
}

Status Engine::Emit(const std::string& handle, int64_t token) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  return EmitOnFrontier(handle, token, &r->fs);
}

Status Engine::Decode(const std::string& handle, int64_t token, std::vector<float>* logits) {
  const DecodeItem item{handle, token, logits};
  return DecodeBatch(std::span<const DecodeItem>(&item, 1));
}

Status Engine::DecodeBatch(std::span<const DecodeItem> items) {
  std::vector<AppendItem> appends;
  std::vector<std::optional<frontier::AppendCall>> calls;
  for (const auto& it : items) {
    if (it.token < 0) {
      return ViolationStatus(
          ErrorCode::MODEL_TOKEN_OUT_OF_RANGE,
          "decode on '" + it.handle + "': token " + std::to_string(it.token) + " is negative");
    }
    appends.push_back({it.handle, std::span<const int64_t>(&it.token, 1), false, it.logits});
    calls.push_back(Call(frontier::AppendPurpose::kDecode, 1, static_cast<uint64_t>(it.token)));
  }
  return RunBatch(appends, calls);
}

Status Engine::RepairFrontier(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  const auto tok = Fs(r).frontier_token();
  const frontier::AppendCall call = Call(frontier::AppendPurpose::kRepair, 1, tok);
  KVC_RETURN_IF_ERROR(Fs(r).CheckAppend(call));  // FRONTIER_NOTHING_TO_REPAIR when empty
  if (!tok) return FailedPrecondition("repair on '" + handle + "': the frontier is not tracked");
  const int64_t t = static_cast<int64_t>(*tok);
  std::vector<float> discarded;  // real model work; not another output decision
  const AppendItem item{handle, std::span<const int64_t>(&t, 1), false, &discarded};
  return RunBatch(std::span<const AppendItem>(&item, 1), {call});
}

Status Engine::AdoptPublished(const lifecycle::Snapshot& published, const ImportRows& rows,
                              const std::string& warm_prefix) {
  const std::string h = published.handle_id.str();
  const uint64_t t = published.committed_length;
  if (h.empty() || t == 0 || published.phase != lifecycle::Phase::kDecodeReady)
    return InvalidArgument("adopt: published handle '" + h +
                           "' must be a non-empty DECODE_READY snapshot");
  if (requests_.count(h)) return InvalidArgument("adopt: handle '" + h + "' already exists");
  if (!rows) return InvalidArgument("adopt: no row source");
  uint64_t start = 0;
  if (warm_prefix.empty()) {
    KVC_RETURN_IF_ERROR(kv_.Allocate(h, published.lineage_id, published.incarnation).status());
    requests_[h] = Request{NewStorage(), std::nullopt};
  } else {
    KVC_ASSIGN_OR_RETURN(Request * p, Get(warm_prefix));
    start = p->storage->committed_length();
    if (start >= t)
      return InvalidArgument("adopt: warm prefix '" + warm_prefix + "' holds " +
                             std::to_string(start) + " rows, the published handle only " +
                             std::to_string(t));
    KVC_RETURN_IF_ERROR(Fork(warm_prefix, start, {h}));
  }
  Request* r = &requests_.at(h);
  auto discard = [&](Status s) {
    (void)kv_.CancelRequest(h);
    if (kv_.Release(h).ok()) r->storage->Release();
    r->fs.reset();
    return s;
  };
  StatusOr<lifecycle::Snapshot> base = kv_.Read(h);
  if (!base.ok()) return discard(base.status());
  lifecycle::BeginAppendRequest req;
  req.txn_id = h + "/import-" + std::to_string(next_txn_++);
  req.idempotency_key = req.txn_id;
  req.handle_id = h;
  req.base = base->base();
  req.cache_abi = kv_.abi().id;
  req.interval = {start, t - start};
  req.binding = {start, t - start, t, kv_.abi().position_stage};
  if (Status s = kv_.BeginAppend(req).status(); !s.ok()) return discard(s);
  auto abandon = [&](Status s) {
    (void)kv_.CancelTxn(req.txn_id);
    r->storage->Abort();
    return discard(s);
  };
  if (Status s = r->storage->Stage(t - start); !s.ok()) return abandon(s);
  for (uint64_t l = 0; l < kv_.abi().num_layers; ++l) {
    for (uint64_t pos = start; pos < t; ++pos) {
      const float* k = nullptr;
      const float* v = nullptr;
      if (Status s = rows(l, pos, &k, &v); !s.ok()) return abandon(s);
      if (!k || !v)
        return abandon(InvalidArgument("adopt: row source gave no row for layer " +
                                       std::to_string(l) + " position " + std::to_string(pos)));
      r->storage->WriteRow(l, pos, k, v);
    }
    if (Status s =
            kv_.StageLayer({req.txn_id, static_cast<uint32_t>(l), req.interval, true, true, ""})
                .status();
        !s.ok())
      return abandon(s);
  }
  auto receipt = kv_.Publish(req.txn_id);
  if (!receipt.ok()) return abandon(receipt.status());
  r->storage->Commit();
  if (receipt->result != published)
    return discard(ViolationStatus(
        ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED,
        "adopt: the imported handle '" + h + "' reached generation " +
            std::to_string(receipt->result.generation) + " digest " +
            std::to_string(receipt->result.digest) + ", not the published generation " +
            std::to_string(published.generation) + " digest " + std::to_string(published.digest) +
            " (a different history than the directory's)"));
  r->fs.emplace(t);
  r->fs->ApplyPublished(Call(frontier::AppendPurpose::kPrefill, t));
  return Status::Ok();
}

Status Engine::Fork(const std::string& parent, uint64_t prefix,
                    const std::vector<std::string>& children) {
  KVC_ASSIGN_OR_RETURN(Request * p, Get(parent));
  KVC_RETURN_IF_ERROR(kv_.Fork(parent, prefix, children).status());
  for (const auto& c : children) {
    auto st = p->storage->Fork(prefix);
    // The child continues the parent's output history only when it keeps every committed row.
    std::optional<frontier::FrontierState> fs = p->fs;
    if (fs && prefix != p->storage->committed_length()) fs->Untrack();
    if (!st.ok())
      return Internal("engine: storage fork failed after the lifecycle fork: " +
                      st.status().message());
    requests_[c] = Request{std::move(st).value(), fs};
  }
  return Status::Ok();
}

Status Engine::Truncate(const std::string& handle, uint64_t length) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.Truncate(handle, length).status());
  Fs(r).Untrack();  // rollback the frontier cannot follow (frontier.h)
  return r->storage->Truncate(length);
}

Status Engine::Finish(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (r->fs) KVC_RETURN_IF_ERROR(r->fs->CheckFinish());  // SERVICE_PHASE_EARLY_FINISH
  return kv_.Finish(handle).status();
}

Status Engine::Cancel(const std::string& handle) {
  KVC_RETURN_IF_ERROR(Get(handle).status());
  return kv_.CancelRequest(handle).status();
}

Status Engine::Release(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.Release(handle).status());
  r->storage->Release();
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
