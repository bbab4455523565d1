// The thread-safe reference store: a lineage lock around the lifecycle rules, plus mutants.
#include "reference/race/concurrent_store.h"

namespace kvc::race {

using lifecycle::Phase;
using lifecycle::TxnState;

ConcurrentStore::ConcurrentStore(lifecycle::CacheAbi abi, Mutant mutant,
                                 std::function<void()> pause)
    : abi_(std::move(abi)), mutant_(mutant), pause_(std::move(pause)) {}

ConcurrentStore::Lineage& ConcurrentStore::Get(const std::string& lineage) {
  std::lock_guard<std::mutex> lock(map_mu_);
  auto& slot = lineages_[lineage];
  if (!slot) slot = std::make_unique<Lineage>(abi_);
  return *slot;  // stable: lineages are never erased while the store lives
}

void ConcurrentStore::SetLayers(Lineage& l, const std::string& handle, uint64_t length) {
  l.layers[handle].assign(abi_.num_layers, length);
}

void ConcurrentStore::TakeSlot(Lineage& l, const std::string& handle) {
  size_t i = 0;
  while (i < l.slots.size() && !l.slots[i].empty()) ++i;
  if (i == l.slots.size()) l.slots.emplace_back();
  l.slots[i] = handle;
  l.slot_of[handle] = i;
}

void ConcurrentStore::FreeSlot(Lineage& l, const std::string& handle) {
  auto it = l.slot_of.find(handle);
  if (it != l.slot_of.end() && l.slots[it->second] == handle) l.slots[it->second].clear();
}

OpResult ConcurrentStore::Execute(const std::string& lineage, const KvOp& op) {
  Pause();
  Lineage& l = Get(lineage);
  Pause();
  std::unique_lock<std::mutex> lock(l.mu);
  lifecycle::KvObject& obj = l.st.obj;
  switch (op.kind) {
    case KvOpKind::kRead:
      return Read(l, op);
    case KvOpKind::kPublish:
      return Publish(l, lock, op);
    case KvOpKind::kReorder:
      return Reorder(l, op);
    case KvOpKind::kTruncate:
      return Truncate(l, op);
    case KvOpKind::kCancelTxn:
      if (mutant_ == Mutant::kCancelLeavesPublishable) {
        const lifecycle::AppendTxn* t = obj.FindTxn(op.txn);
        if (t && (t->state == TxnState::kOpen || t->state == TxnState::kPrepared))
          return {Outcome::kOk, Json::object()};  // acknowledged, but nothing aborted
      }
      return ApplySequential(l.st, op);
    case KvOpKind::kFinish: {
      OpResult r = ApplySequential(l.st, op);
      if (r.outcome == Outcome::kOk && mutant_ == Mutant::kFinishAsRelease) {
        auto rel = obj.Release(op.handle);
        if (rel.ok()) return {Outcome::kOk, SnapshotJson(*rel)};
      }
      return r;
    }
    case KvOpKind::kRelease: {
      auto before = obj.Read(op.handle);
      OpResult r = ApplySequential(l.st, op);
      if (r.outcome == Outcome::kOk) {
        if (mutant_ == Mutant::kReleaseLeavesReadable && before.ok()) {
          l.shadow.insert_or_assign(op.handle, *before);  // keeps layers too
        } else {
          l.layers.erase(op.handle);  // logical ownership ends; rows are unreachable
        }
        FreeSlot(l, op.handle);  // the address is reused by the next allocation
      }
      return r;
    }
    case KvOpKind::kAllocate: {
      OpResult r = ApplySequential(l.st, op);
      if (r.outcome == Outcome::kOk) {
        SetLayers(l, op.handle, 0);
        TakeSlot(l, op.handle);
      }
      return r;
    }
    case KvOpKind::kFork: {
      OpResult r = ApplySequential(l.st, op);
      if (r.outcome == Outcome::kOk) {
        for (const auto& c : op.children) {
          SetLayers(l, c, op.length);  // shared prefix rows
          TakeSlot(l, c);
        }
      }
      return r;
    }
    case KvOpKind::kBeginAppend:
    case KvOpKind::kStageLayer:
    case KvOpKind::kCancelRequest:
    case KvOpKind::kReadRow:
      // Staged rows live with the transaction until publication (nothing physical changes).
      return ApplySequential(l.st, op);
  }
  return {Outcome::kError, ErrorJson(Internal("unhandled op"))};
}

OpResult ConcurrentStore::Read(Lineage& l, const KvOp& op) {
  auto s = l.st.obj.Read(op.handle);
  if (!s.ok()) {
    if (mutant_ == Mutant::kReleaseLeavesReadable &&
        s.status().error() == ErrorCode::LIFECYCLE_HANDLE_RELEASED) {
      auto sh = l.shadow.find(op.handle);
      auto ly = l.layers.find(op.handle);
      if (sh != l.shadow.end() && ly != l.layers.end()) {
        Json j = SnapshotJson(sh->second);
        j["layers"] = ly->second;
        return {Outcome::kOk, std::move(j)};
      }
    }
    return {Outcome::kError, ErrorJson(s.status())};
  }
  auto ly = l.layers.find(op.handle);
  if (ly == l.layers.end())
    return {Outcome::kError, ErrorJson(Internal("read: no layer rows for a live handle"))};
  Json j = SnapshotJson(*s);
  j["layers"] = ly->second;  // the physical rows each layer exposes
  return {Outcome::kOk, std::move(j)};
}

StatusOr<lifecycle::PublishReceipt> ConcurrentStore::InternalAppend(Lineage& l,
                                                                    const std::string& handle,
                                                                    uint64_t count) {
  lifecycle::KvObject& obj = l.st.obj;
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot live, obj.Read(handle));
  KvOp b;
  b.kind = KvOpKind::kBeginAppend;
  b.txn = "~mutant" + std::to_string(l.internal_txns++);
  b.key = b.txn;
  b.handle = handle;
  b.base_generation = live.generation;
  b.base_digest = live.digest;
  b.start = live.committed_length;
  b.count = count;
  KVC_ASSIGN_OR_RETURN(auto txn, obj.BeginAppend(BeginRequest(b, abi_)));
  (void)txn;
  for (uint32_t layer = 0; layer < abi_.num_layers; ++layer) {
    lifecycle::StageLayerRequest s;
    s.txn_id = b.txn;
    s.layer = layer;
    s.interval = {b.start, b.count};
    KVC_ASSIGN_OR_RETURN(auto st, obj.StageLayer(s));
    (void)st;
  }
  return obj.Publish(b.txn);
}

OpResult ConcurrentStore::Publish(Lineage& l, std::unique_lock<std::mutex>& lock,
                                  const KvOp& op) {
  lifecycle::KvObject& obj = l.st.obj;
  if (const lifecycle::AppendTxn* t = obj.FindTxn(op.txn)) {
    const std::string handle = t->request.handle_id.str();
    const lifecycle::HandleRecord* h = obj.Find(handle);
    const bool live = h && h->current.phase == Phase::kDecodeReady;
    if (mutant_ == Mutant::kNoGenerationFence && t->state == TxnState::kPrepared) {
      // Compares the slot (address) only, never the generation: the completion lands on
      // whatever live handle occupies the transaction's slot now. After release + reuse
      // (M5.1 0x01 slot-17 example) that is the new occupant; without reuse it is the same
      // handle at a newer snapshot.
      auto slot = l.slot_of.find(handle);
      const std::string occupant = slot == l.slot_of.end() ? "" : l.slots[slot->second];
      const lifecycle::HandleRecord* o = occupant.empty() ? nullptr : obj.Find(occupant);
      if (o && o->current.phase == Phase::kDecodeReady &&
          !(occupant == handle && o->current.base() == t->request.base)) {
        const uint64_t count = t->request.interval.count;
        if (live) (void)obj.CancelTxn(op.txn);
        auto r = InternalAppend(l, occupant, count);
        if (!r.ok()) return {Outcome::kError, ErrorJson(r.status())};
        SetLayers(l, occupant, r->result.committed_length);
        return {Outcome::kOk, ReceiptJson(*r)};
      }
    }
    if (mutant_ == Mutant::kRetryDoubleAdvance && live && t->state == TxnState::kPublished) {
      auto r = obj.Publish(op.txn);  // the replayed receipt...
      if (!r.ok()) return {Outcome::kError, ErrorJson(r.status())};
      auto again = obj.Truncate(handle, h->current.committed_length);  // ...advanced again
      if (again.ok()) r->result = *again;
      return {Outcome::kOk, ReceiptJson(*r)};
    }
  }
  OpResult r = ApplySequential(l.st, op);
  if (r.outcome != Outcome::kOk || r.result.value("replayed", false)) return r;
  const std::string handle = r.result.at("handle").get<std::string>();
  const uint64_t length = r.result.at("length").get<uint64_t>();
  if (mutant_ != Mutant::kPublishLayerByLayer) {
    SetLayers(l, handle, length);  // same critical section as the compare-and-publish
    return r;
  }
  // Mutant: the snapshot is published, then each layer's rows appear in its own step.
  for (uint32_t layer = 0; layer < abi_.num_layers; ++layer) {
    lock.unlock();
    Pause();
    lock.lock();
    auto it = l.layers.find(handle);
    if (it != l.layers.end() && layer < it->second.size()) it->second[layer] = length;
  }
  return r;
}

OpResult ConcurrentStore::Reorder(Lineage& l, const KvOp& op) {
  if (mutant_ != Mutant::kReorderCachesOnly) return ApplySequential(l.st, op);
  auto g = l.st.groups.find(op.group);
  if (g == l.st.groups.end())
    return {Outcome::kError, ErrorJson(GroupError("reorder: unknown group '" + op.group + "'"))};
  auto moved = lifecycle::Reorder(g->second, op.perm);
  if (!moved.ok()) return {Outcome::kError, ErrorJson(moved.status())};
  // Mutant: only the cache handles follow the permutation.
  for (size_t i = 0; i < g->second.size(); ++i) g->second[i].cache_handle = (*moved)[i].cache_handle;
  return {Outcome::kOk, Json::object()};
}

OpResult ConcurrentStore::Truncate(Lineage& l, const KvOp& op) {
  if (mutant_ == Mutant::kTruncateAcceptsGrowth) {
    auto live = l.st.obj.Read(op.handle);
    if (live.ok() && live->phase == Phase::kDecodeReady && op.length > live->committed_length) {
      auto r = InternalAppend(l, op.handle, op.length - live->committed_length);
      if (!r.ok()) return {Outcome::kError, ErrorJson(r.status())};
      SetLayers(l, op.handle, r->result.committed_length);
      return {Outcome::kOk, SnapshotJson(r->result)};
    }
  }
  OpResult r = ApplySequential(l.st, op);
  if (r.outcome == Outcome::kOk) SetLayers(l, op.handle, op.length);
  return r;
}

}  // namespace kvc::race
