// The sequential KvObject: every rule of the versioned all-layer handle in one place.
#include "reference/lifecycle/kv_object/kv_object.h"

#include <algorithm>
#include <set>
#include <utility>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"

namespace kvc::lifecycle {
namespace {

// Message builders and the violation constructor run only on a violation: cold, so that the
// compiler moves the paths that build messages out of the hot code.
// A name from the caller, quoted; past 80 bytes clipped and counted (a 10 KB id made a 10 KB
// message, 2026-12-07).
[[gnu::cold]] std::string Q(std::string_view s) { return base::SingleQuoteClipped(s); }
[[gnu::cold]] std::string U(uint64_t v) { return std::to_string(v); }
// The half-open interval of `count` rows from `start`, as "[start, end)" (every interval in a
// message is written so); an end beyond 2^64 - 1 is written as the sum.
[[gnu::cold]] std::string Span(uint64_t start, uint64_t count) {
  if (count > UINT64_MAX - start) return "[" + U(start) + ", " + U(start) + " + " + U(count) + ")";
  return "[" + U(start) + ", " + U(start + count) + ")";
}

[[gnu::cold]] Status V(ErrorCode e, std::string m) { return ViolationStatus(e, std::move(m)); }

// `t` is the record a kept list of handle `handle_id` names (HandleRecord::kept_open_txn_ids),
// not another record under a reused id.
bool IsKept(const AppendTxn& t, std::string_view handle_id) {
  return t.kept_past_forget && SameBytes(t.request.handle_id, handle_id);
}

// A transaction's final state; its staging progress stops being state (see AppendTxn::layers).
void Finalize(AppendTxn& t, TxnState final_state) {
  t.state = final_state;
  t.layers = LayerStages();
}

}  // namespace

Status CompareBase(const Snapshot& live, const BaseRef& base, std::string_view op,
                   std::string_view id) {
  if (base == live.base()) return Status::Ok();
  std::string where = std::string(op) + (id.empty() ? "" : " " + Q(id)) + " on " + Q(live.handle_id) + ": base (generation " +
                      U(base.generation) + ", digest " + DigestHex(base.digest) +
                      ") vs live (generation " + U(live.generation) + ", digest " +
                      DigestHex(live.digest) + ")";
  if (base.generation < live.generation)
    return V(ErrorCode::LIFECYCLE_STALE_BASE,
             where + "; the base generation is older than the live generation");
  return V(ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT,
           where + "; no such snapshot was ever published for this handle");
}

void OpenTxnIds::Insert(std::string_view id) {
  ids_.emplace_back(id);
  if (!index_.empty()) {
    index_.emplace(ids_.back(), ids_.size() - 1);
  } else if (ids_.size() >= kIndexFrom) {
    for (size_t i = 0; i < ids_.size(); ++i) index_.emplace(ids_[i], i);
  }
}

void OpenTxnIds::Erase(std::string_view id) {
  size_t at = ids_.size();
  if (index_.empty()) {
    for (size_t i = 0; i < ids_.size(); ++i)
      if (ids_[i] == id) {
        at = i;
        break;
      }
    if (at == ids_.size()) return;
  } else {
    auto it = index_.find(id);
    if (it == index_.end()) return;
    at = it->second;
    index_.erase(it);
  }
  if (at + 1 != ids_.size()) {
    ids_[at] = std::move(ids_.back());
    if (!index_.empty()) index_.find(ids_[at])->second = at;
  }
  ids_.pop_back();
  if (ids_.size() < kIndexFrom / 2) index_.clear();  // hysteresis: no rebuild per insert/erase
}

bool OpenTxnIds::contains(std::string_view id) const {
  if (!index_.empty()) return index_.find(id) != index_.end();
  for (const auto& x : ids_)
    if (x == id) return true;
  return false;
}

bool operator==(const OpenTxnIds& a, const OpenTxnIds& b) {
  if (a.ids_.size() != b.ids_.size()) return false;
  if (a.ids_ == b.ids_) return true;
  std::vector<std::string_view> x(a.ids_.begin(), a.ids_.end()), y(b.ids_.begin(), b.ids_.end());
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

KvObject::KvObject(CacheAbi abi) : abi_(std::move(abi)) {}

StatusOr<Snapshot> KvObject::Allocate(std::string_view handle_id, std::string_view lineage_id,
                                      uint64_t incarnation) {
  if (handle_id.empty()) return InvalidArgument("allocate: empty handle id");
  // An ABI of no cache-producing layer holds no K/V: its appends could never publish (probe 50:
  // they opened, and every publication was LAYER_INCOMPLETE naming no layer).
  if (abi_.num_layers == 0)
    return V(ErrorCode::INPUT_VALUE_OUT_OF_RANGE,
             "allocate: cache ABI " + Q(abi_.id) + " has no cache-producing layer (num_layers 0)");
  std::deque<base::IdString> txn_ids;  // a recycled id keeps its earlier records listed
  std::optional<std::deque<KeptTxn>> kept_open;
  std::vector<base::IdString> closed_kept;
  if (auto it = handles_.find(handle_id); it != handles_.end()) {
    // A released identity may be recycled, but only under a newer handle generation: the
    // fence (incarnation, bound into every digest) keeps stale work from matching it.
    const Snapshot& old = it->second.current;
    if (old.phase != Phase::kReleased || incarnation < old.incarnation)
      return V(ErrorCode::LIFECYCLE_HANDLE_EXISTS,
               "allocate: handle " + Q(handle_id) + " exists" +
                   (old.phase == Phase::kReleased
                        ? " (released; a recycled identity needs handle generation >= " +
                              U(old.incarnation) + ")"
                        : ""));
    txn_ids = std::move(it->second.txn_ids);
    kept_open = std::move(it->second.kept_open_txn_ids);
    closed_kept = std::move(it->second.closed_kept_txn_ids);
    handles_.erase(it);
    ++handle_erasures_;
  }
  HandleRecord h;
  h.txn_ids = std::move(txn_ids);
  h.kept_open_txn_ids = std::move(kept_open);
  h.closed_kept_txn_ids = std::move(closed_kept);
  Snapshot& s = h.current;
  s.handle_id = handle_id;
  s.lineage_id = lineage_id.empty() ? s.handle_id : base::IdString(lineage_id);
  s.incarnation = incarnation;
  s.digest = SnapshotDigest(Fnv1a64(s.lineage_id), Transition::kAllocate, s, incarnation);
  Snapshot out = s;
  handles_.emplace(out.handle_id, std::move(h));
  return out;
}

StatusOr<Snapshot> KvObject::Read(std::string_view handle_id) const {
  auto it = handles_.find(handle_id);
  if (it == handles_.end())
    return V(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE, "read: unknown handle " + Q(handle_id));
  if (!it->second.current.readable())
    return V(ErrorCode::LIFECYCLE_HANDLE_RELEASED,
             "read: handle " + Q(handle_id) + " was released; the tombstone is not readable");
  return it->second.current;
}

const HandleRecord* KvObject::Find(std::string_view handle_id) const {
  auto it = handles_.find(handle_id);
  return it == handles_.end() ? nullptr : &it->second;
}

const AppendTxn* KvObject::FindTxn(std::string_view txn_id) const {
  auto it = txns_.find(txn_id);
  return it == txns_.end() ? nullptr : &it->second;
}

StatusOr<HandleRecord*> KvObject::Live(std::string_view handle_id, std::string_view op,
                                       bool allow_terminal) {
  auto it = handles_.find(handle_id);
  if (it == handles_.end())
    return V(ErrorCode::LIFECYCLE_UNKNOWN_HANDLE,
             std::string(op) + ": unknown handle " + Q(handle_id));
  const Snapshot& s = it->second.current;
  if (s.phase == Phase::kReleased)
    return V(ErrorCode::LIFECYCLE_HANDLE_RELEASED,
             std::string(op) + ": handle " + Q(handle_id) +
                 " was released; nothing is legal after release");
  // (The message names every phase the operation admits: a fork also takes a FINISHED parent,
  // an append on a FINISHED handle is only a repair; probe 39: both said "expected
  // DECODE_READY".)
  if (!allow_terminal && s.phase != Phase::kDecodeReady)
    return V(ErrorCode::LIFECYCLE_HANDLE_TERMINAL,
             std::string(op) + ": handle " + Q(handle_id) + " is " +
                 std::string(PhaseName(s.phase)) + "; expected " +
                 (op == "fork"     ? "DECODE_READY or FINISHED"
                  : op == "append" ? "DECODE_READY (a FINISHED handle admits only a repair "
                                     "append of its last emitted token)"
                                   : "DECODE_READY"));
  return &it->second;
}

Status KvObject::CheckExpected(const Snapshot& s, const std::optional<BaseRef>& expected,
                               std::string_view op) const {
  if (!expected) return Status::Ok();
  return CompareBase(s, *expected, op);
}

StatusOr<KvObject::Counters> KvObject::NextCounters(const Snapshot& s, bool content) const {
  auto g = CheckedAdd(s.generation, 1);
  auto v = content ? CheckedAdd(s.version, 1) : std::optional<uint64_t>(s.version);
  if (!g || !v)
    return V(ErrorCode::LIFECYCLE_GENERATION_OVERFLOW,
             "handle " + Q(s.handle_id) + ": generation " + U(s.generation) + " / version " +
                 U(s.version) + " cannot advance without wrapping");
  return Counters{*g, *v};
}

StatusOr<Snapshot> KvObject::Successor(const Snapshot& s, bool content) const {
  KVC_ASSIGN_OR_RETURN(Counters c, NextCounters(s, content));
  Snapshot n = s;
  n.generation = c.generation;
  n.version = c.version;
  return n;
}

base::StableStringMap<AppendTxn>::value_type* KvObject::FindTxnEntry(std::string_view txn_id) {
  if (memo_.entry && memo_.txn_erasures == txn_erasures_ && SameBytes(memo_.entry->first, txn_id))
    return memo_.entry;
  auto it = txns_.find(txn_id);
  if (it == txns_.end()) return nullptr;
  Remember(&*it, nullptr);
  return memo_.entry;
}

void KvObject::Remember(base::StableStringMap<AppendTxn>::value_type* entry, HandleRecord* handle) {
  memo_.entry = entry;
  memo_.handle = handle;
  memo_.txn_erasures = txn_erasures_;
  memo_.handle_erasures = handle_erasures_;
}

HandleRecord* KvObject::HandleOfTxn(const AppendTxn& t) {
  const bool memo = memo_.entry && &memo_.entry->second == &t;
  if (memo && memo_.handle && memo_.handle_erasures == handle_erasures_) return memo_.handle;
  auto h = handles_.find(t.request.handle_id);
  HandleRecord* rec = h == handles_.end() ? nullptr : &h->second;
  if (memo) {
    memo_.handle = rec;
    memo_.handle_erasures = handle_erasures_;
  }
  return rec;
}

void KvObject::CloseTxn(HandleRecord& h, std::string_view txn_id, AppendTxn& t) {
  h.open_txns.Erase(txn_id);
  if (t.kept_past_forget) h.closed_kept_txn_ids.emplace_back(txn_id);
}

StatusOr<const AppendTxn*> KvObject::BeginAppend(const BeginAppendView& req) {
  if (req.txn_id.empty()) return InvalidArgument("append: empty txn id");
  // One lookup for both outcomes: an existing id is a retry (or a conflict); a new id gets its
  // record now and loses it again below if the append is refused, so a refusal still leaves
  // the state unchanged. Fingerprints are computed only for a reused id.
  auto [it, inserted] = txns_.try_emplace(req.txn_id);
  if (!inserted) {
    // A retry is the same operation field by field (the fingerprint's parts, M5.1 0x01), not an
    // equal 64-bit hash of them (probe 50: two 8-byte keys with one hash passed as a retry).
    const AppendIdentity& was = it->second.request;
    if (req.idempotency_key == was.idempotency_key && req.handle_id == was.handle_id &&
        req.cache_abi == abi_.id && req.base == was.base && req.interval == was.interval) {
      // A retry of the same operation, whose interval was admitted (so its end fits 64 bits).
      const Interval& iv = it->second.request.interval;
      KVC_RETURN_IF_ERROR(CheckPositionBinding(req, iv.start + iv.count));
      return &it->second;
    }
    const auto& o = it->second.request;
    // Name what differs (the fingerprint's parts, M5.1 0x01), then the original.
    std::string diff;
    auto differs = [&](const std::string& what) { diff += (diff.empty() ? "" : ", ") + what; };
    if (req.idempotency_key != o.idempotency_key)
      differs("idempotency key " + Q(req.idempotency_key));
    if (req.handle_id != o.handle_id) differs("handle " + Q(req.handle_id));
    if (req.cache_abi != abi_.id) differs("cache ABI " + Q(req.cache_abi));
    if (!(req.base == o.base)) {
      // The same generation with another digest: another history of the handle id, most often
      // another incarnation (the handle generation is bound into every digest; probe 39: the
      // message showed two equal generations and named no difference).
      std::string why = " (another snapshot digest)";
      if (req.base.generation == o.base.generation && req.handle_id == o.handle_id) {
        auto hit = handles_.find(req.handle_id);
        if (hit != handles_.end() && hit->second.current.incarnation != it->second.incarnation)
          why = " of handle generation " + U(hit->second.current.incarnation) +
                " (another incarnation: the original was opened on handle generation " +
                U(it->second.incarnation) + ")";
      }
      differs("base generation " + U(req.base.generation) +
              (req.base.generation == o.base.generation ? why : ""));
    }
    if (!(req.interval == o.interval))
      differs("interval " + Span(req.interval.start, req.interval.count));
    return V(ErrorCode::LIFECYCLE_RETRY_CONFLICT,
             "append: txn " + Q(req.txn_id) + " reused with a different fingerprint: " + diff +
                 "; the original has key " + Q(o.idempotency_key) + ", handle " + Q(o.handle_id) +
                 ", base generation " + U(o.base.generation) + ", interval " +
                 Span(o.interval.start, o.interval.count) +
                 " (a transaction id names one operation for the whole history, across "
                 "incarnations of a handle id)");
  }
  StatusOr<HandleRecord*> h = AdmitAppend(req);
  if (!h.ok()) {
    txns_.erase(it);
    ++txn_erasures_;
    return h.status();
  }
  (*h)->open_txns.Insert(req.txn_id);
  (*h)->txn_ids.emplace_back(req.txn_id);
  AppendTxn& t = it->second;
  // The append's layers and publication come next: they find the record and its handle here.
  Remember(&*it, *h);
  t.request.txn_id = req.txn_id;
  t.request.idempotency_key = req.idempotency_key;
  t.request.handle_id = req.handle_id;
  t.request.base = req.base;
  t.request.interval = req.interval;
  t.request.repair = req.repair;
  t.incarnation = (*h)->current.incarnation;
  t.layers = LayerStages(abi_.num_layers);
  return &t;
}

StatusOr<HandleRecord*> KvObject::AdmitAppend(const BeginAppendView& req) {
  KVC_ASSIGN_OR_RETURN(HandleRecord * h, Live(req.handle_id, "append", req.repair));
  const Snapshot& s = h->current;
  if (s.phase == Phase::kCancelled)
    return V(ErrorCode::LIFECYCLE_HANDLE_TERMINAL,
             "append: handle " + Q(req.handle_id) + " is CANCELLED; no new work");
  if (req.cache_abi != abi_.id)
    return V(ErrorCode::LIFECYCLE_CACHE_ABI_MISMATCH,
             "append " + Q(req.txn_id) + ": cache ABI " + Q(req.cache_abi) + ", handle has " +
                 Q(abi_.id));
  if (!(req.base == s.base())) return CompareBase(s, req.base, "append", req.txn_id);
  if (req.interval.count == 0)
    return V(ErrorCode::LIFECYCLE_APPEND_EMPTY, "append " + Q(req.txn_id) + ": empty interval");
  if (req.interval.start != s.committed_length)
    return V(ErrorCode::LIFECYCLE_APPEND_HOLE,
             "append " + Q(req.txn_id) + ": interval starts at " + U(req.interval.start) +
                 ", expected the committed length T_g = " + U(s.committed_length));
  auto end = CheckedAdd(req.interval.start, req.interval.count);
  if (!end)
    return V(ErrorCode::LIFECYCLE_GENERATION_OVERFLOW,
             "append " + Q(req.txn_id) + ": interval end overflows 64 bits");
  KVC_RETURN_IF_ERROR(CheckPositionBinding(req, *end));
  return h;
}

Status KvObject::CheckPositionBinding(const BeginAppendView& req, uint64_t end) const {
  const BeginAppendView& b = req;  // the binding's members
  if (b.cache_position_start != req.interval.start || b.cache_position_count != req.interval.count)
    return V(ErrorCode::LIFECYCLE_POSITION_MISMATCH,
             "append " + Q(req.txn_id) + ": cache_position " +
                 Span(b.cache_position_start, b.cache_position_count) + ", expected [" +
                 U(req.interval.start) + ", " + U(end) + ")");
  if (b.mask_key_length != end)
    return V(ErrorCode::LIFECYCLE_MASK_LENGTH_MISMATCH,
             "append " + Q(req.txn_id) + ": mask key length " + U(b.mask_key_length) +
                 ", expected T_past + T_new = " + U(end));
  if (b.position_stage != abi_.position_stage)
    return V(ErrorCode::LIFECYCLE_POSITION_STAGE_MISMATCH,
             "append " + Q(req.txn_id) + ": keys at stage " + Q(b.position_stage) +
                 ", the cache ABI stores " + Q(abi_.position_stage));
  return Status::Ok();
}

BeginAppendRequest KvObject::RequestOf(const AppendTxn& t) const {
  BeginAppendRequest r;
  r.txn_id = t.request.txn_id;
  r.idempotency_key = t.request.idempotency_key;
  r.handle_id = t.request.handle_id;
  r.base = t.request.base;
  r.cache_abi = abi_.id;
  r.interval = t.request.interval;
  r.binding = {t.request.interval.start, t.request.interval.count,
               t.request.interval.start + t.request.interval.count, abi_.position_stage};
  r.repair = t.request.repair;
  return r;
}

StatusOr<TxnState> KvObject::StageLayer(const StageLayerRequest& req) {
  return StageLayer(req.txn_id, req.layer, req.interval, req.k, req.v, req.cache_abi);
}

StatusOr<TxnState> KvObject::StageLayer(std::string_view txn_id, uint32_t layer,
                                        Interval interval, bool k, bool v,
                                        std::string_view cache_abi) {
  auto* entry = FindTxnEntry(txn_id);
  if (!entry) return V(ErrorCode::LIFECYCLE_TXN_UNKNOWN, "stage: unknown txn " + Q(txn_id));
  AppendTxn& t = entry->second;
  // (The message says how to start again: probe 68's vendor re-sent a cancelled operation's
  // id for a new attempt, which the begin admitted as a retry returning the ABORTED record.)
  if (t.state == TxnState::kAborted || t.state == TxnState::kRejected)
    return V(ErrorCode::LIFECYCLE_LATE_COMPLETION,
             "stage: txn " + Q(txn_id) + " is " + std::string(TxnStateName(t.state)) +
                 "; a late layer completion is rejected (a retry of a final transaction "
                 "returns it final: a new attempt takes a new transaction id)");
  if (t.state == TxnState::kPublished)
    return V(ErrorCode::LIFECYCLE_TXN_FINAL,
             "stage: txn " + Q(txn_id) + " is already PUBLISHED");
  const HandleRecord* h = HandleOfTxn(t);
  if (h && h->current.phase == Phase::kReleased)
    return V(ErrorCode::LIFECYCLE_LATE_COMPLETION,
             "stage: txn " + Q(txn_id) + " targets released handle " +
                 Q(t.request.handle_id));
  // The ABA case on staging: the id was released and allocated again (since 2026-12-03:
  // before, the stale transaction's layers staged silently; its publication still fails on
  // the compare-and-publish, as the seed's slot-17 example requires).
  if (h && h->current.incarnation != t.incarnation)
    return V(ErrorCode::LIFECYCLE_LATE_COMPLETION,
             "stage: txn " + Q(txn_id) + " was opened on handle generation " + U(t.incarnation) +
                 " of " + Q(t.request.handle_id) +
                 ", which was released; the handle id now names generation " +
                 U(h->current.incarnation) + " (a late layer completion is rejected)");
  if (layer >= t.layers.size())
    return V(ErrorCode::LIFECYCLE_LAYER_OUT_OF_RANGE,
             "stage: txn " + Q(txn_id) + " layer " + U(layer) + ", the ABI has " +
                 U(t.layers.size()) + " cache-producing layers");
  // The transaction's ABI is the object's: BeginAppend admitted no other.
  if (!cache_abi.empty() && cache_abi != abi_.id)
    return V(ErrorCode::LIFECYCLE_CACHE_ABI_MISMATCH,
             "stage: txn " + Q(txn_id) + " layer " + U(layer) + " rows under ABI " +
                 Q(cache_abi) + ", txn has " + Q(abi_.id));
  if (!(interval == t.request.interval))
    return V(ErrorCode::LIFECYCLE_LAYER_INTERVAL_MISMATCH,
             "stage: txn " + Q(txn_id) + " layer " + U(layer) + " interval " +
                 Span(interval.start, interval.count) + ", expected " +
                 Span(t.request.interval.start, t.request.interval.count));
  if (!k && !v) return InvalidArgument("stage: neither K nor V rows");
  const LayerStage l = t.layers[layer];
  if ((k && l.k) || (v && l.v))
    return V(ErrorCode::LIFECYCLE_LAYER_DUPLICATE,
             "stage: txn " + Q(txn_id) + " layer " + U(layer) + " " +
                 (k && l.k ? "K" : "V") + " rows staged twice");
  t.layers.Add(layer, k, v);
  if (t.prepared()) t.state = TxnState::kPrepared;
  return t.state;
}

StatusOr<PublishReceipt> KvObject::Publish(std::string_view txn_id) {
  KVC_ASSIGN_OR_RETURN(Published p, PublishTxn(txn_id));
  return ReceiptOf(*p.txn, p.replayed);
}

StatusOr<KvObject::Published> KvObject::PublishTxn(std::string_view txn_id) {
  auto* entry = FindTxnEntry(txn_id);
  if (!entry)
    return V(ErrorCode::LIFECYCLE_TXN_UNKNOWN,
             "publish: unknown txn " + Q(txn_id) + " (publication without a start)");
  AppendTxn& t = entry->second;
  if (t.state == TxnState::kPublished) return Published{&t, true};
  if (t.state == TxnState::kAborted || t.state == TxnState::kRejected)
    return V(ErrorCode::LIFECYCLE_LATE_COMPLETION,
             "publish: txn " + Q(txn_id) + " is " + std::string(TxnStateName(t.state)) +
                 "; completion is not permission to publish");
  if (t.state != TxnState::kPrepared) {
    // The first kListedLayers incomplete layers and how many more: the message stays bounded
    // however many layers the ABI declares (probe 23: 2^20 listed layers were 13.5 MB per
    // violation).
    constexpr size_t kListedLayers = 8;
    const size_t incomplete = t.layers.size() - t.layers.complete_count();
    std::string missing;
    size_t listed = 0;
    for (size_t i = 0; i < t.layers.size() && listed < kListedLayers; ++i) {
      if (t.layers[i].complete()) continue;
      missing += (missing.empty() ? "" : ", ") + U(i) +
                 (t.layers[i].k   ? "(V)"
                  : t.layers[i].v ? "(K)"
                                  : "(K,V)");
      ++listed;
    }
    if (incomplete > listed)
      missing += " and " + U(incomplete - listed) + " more (" + U(incomplete) + " of " +
                 U(t.layers.size()) + " layers incomplete)";
    return V(ErrorCode::LIFECYCLE_LAYER_INCOMPLETE,
             "publish: txn " + Q(txn_id) + " is OPEN; layers without complete rows: " + missing);
  }
  HandleRecord* h = HandleOfTxn(t);
  if (!h) return Internal("publish: txn handle vanished");
  HandleRecord& rec = *h;
  const Snapshot& live = rec.current;
  // One logical compare-and-publish on (handle, generation, digest). A released handle's
  // tombstone has a newer generation, so stale work fails on generation, not on any address.
  if (!(t.request.base == live.base())) {
    Status cas = CompareBase(live, t.request.base, "publish", txn_id);
    Finalize(t, TxnState::kRejected);
    CloseTxn(rec, txn_id, t);
    return cas;
  }
  // The (generation, digest) pair is a 64-bit digest chain: an equal pair on another incarnation
  // of the id, or at another length, is a collision, not the base (probe 50 built one: a
  // prepared append of a released incarnation published onto the recycled id's handle at
  // another length). The fence is the incarnation and the seed's position assertion
  // (publish_append: txn.position_start == live.committed_length), checked exactly. The
  // incarnation alone is tested with a collision at an equal length (tools/collide); the
  // position alone cannot differ through this API (BeginAppend admits only start == the base's
  // length, and within one incarnation a generation names one snapshot), so it stands as the
  // seed's assertion, an invariant check.
  if (t.incarnation != live.incarnation || t.request.interval.start != live.committed_length) {
    const bool other = t.incarnation != live.incarnation;
    Status fenced =
        V(other ? ErrorCode::LIFECYCLE_STALE_BASE : ErrorCode::LIFECYCLE_APPEND_HOLE,
          "publish: txn " + Q(txn_id) + " on " + Q(live.handle_id) +
              (other ? " was opened on handle generation " + U(t.incarnation) +
                           "; the live handle generation is " + U(live.incarnation) +
                           " (an equal (generation, digest) of another incarnation)"
                     : " starts at " + U(t.request.interval.start) +
                           "; the live committed length is " + U(live.committed_length)));
    Finalize(t, TxnState::kRejected);
    CloseTxn(rec, txn_id, t);
    return fenced;
  }
  if (live.phase != Phase::kDecodeReady && !(t.request.repair && live.phase == Phase::kFinished))
    return Internal("publish: base matched a terminal phase");
  KVC_ASSIGN_OR_RETURN(Counters next, NextCounters(live, true));
  auto len = CheckedAdd(live.committed_length, t.request.interval.count);
  if (!len) return V(ErrorCode::LIFECYCLE_GENERATION_OVERFLOW, "publish: length overflows");
  // Every check passed: the live snapshot becomes its successor in place (the same value
  // Successor() would build, without the intermediate copy); the receipt keeps one copy.
  Snapshot& cur = rec.current;
  const uint64_t prev_digest = cur.digest;
  cur.generation = next.generation;
  cur.version = next.version;
  cur.committed_length = *len;
  cur.digest = SnapshotDigest(prev_digest, Transition::kAppend, cur, t.request.interval.start);
  t.result = cur;
  Finalize(t, TxnState::kPublished);
  CloseTxn(rec, txn_id, t);
  return Published{&t, false};
}

Status KvObject::CancelTxn(std::string_view txn_id) {
  auto it = txns_.find(txn_id);
  if (it == txns_.end())
    return V(ErrorCode::LIFECYCLE_TXN_UNKNOWN, "cancel_txn: unknown txn " + Q(txn_id));
  AppendTxn& t = it->second;
  if (t.state == TxnState::kPublished)
    return V(ErrorCode::LIFECYCLE_TXN_FINAL,
             "cancel_txn: txn " + Q(txn_id) + " is already PUBLISHED");
  if (t.state != TxnState::kOpen && t.state != TxnState::kPrepared)
    return Status::Ok();  // aborting an aborted/rejected txn is a no-op
  Finalize(t, TxnState::kAborted);
  if (auto h = handles_.find(t.request.handle_id); h != handles_.end())
    CloseTxn(h->second, txn_id, t);
  return Status::Ok();
}

StatusOr<Snapshot> KvObject::Truncate(std::string_view handle_id, uint64_t new_length,
                                      std::optional<BaseRef> expected) {
  KVC_ASSIGN_OR_RETURN(HandleRecord * h, Live(handle_id, "truncate", false));
  KVC_RETURN_IF_ERROR(CheckExpected(h->current, expected, "truncate"));
  if (new_length > h->current.committed_length)
    return V(ErrorCode::LIFECYCLE_TRUNCATE_GROWTH,
             "truncate " + Q(handle_id) + " to " + U(new_length) +
                 " exceeds the committed length " + U(h->current.committed_length));
  KVC_ASSIGN_OR_RETURN(Snapshot next, Successor(h->current, true));
  next.committed_length = new_length;
  next.digest = SnapshotDigest(h->current.digest, Transition::kTruncate, next, new_length);
  h->current = next;
  return next;
}

StatusOr<std::vector<Snapshot>> KvObject::Fork(std::string_view parent_id,
                                               uint64_t prefix_length,
                                               const std::vector<std::string>& child_ids,
                                               std::optional<BaseRef> expected) {
  auto pit = handles_.find(parent_id);
  if (pit != handles_.end() && pit->second.current.phase == Phase::kFinished) {
    // A finished request may still be forked (its committed prefix is retained).
  } else {
    KVC_ASSIGN_OR_RETURN(HandleRecord * p, Live(parent_id, "fork", false));
    (void)p;
  }
  const Snapshot& parent = handles_.find(parent_id)->second.current;
  KVC_RETURN_IF_ERROR(CheckExpected(parent, expected, "fork"));
  if (prefix_length > parent.committed_length)
    return V(ErrorCode::LIFECYCLE_FORK_BEYOND_PREFIX,
             "fork of " + Q(parent_id) + " at " + U(prefix_length) +
                 " beyond the committed prefix [0, " + U(parent.committed_length) + ")");
  if (child_ids.empty()) return InvalidArgument("fork: no children");
  std::set<std::string_view> seen;
  for (const auto& c : child_ids) {
    if (c.empty()) return InvalidArgument("fork: empty child id");
    if (c == parent_id || !seen.insert(c).second)
      return V(ErrorCode::LIFECYCLE_FORK_ALIAS,
               "fork of " + Q(parent_id) + ": child id " + Q(c) +
                   " aliases the parent or a sibling; children need distinct identities");
    if (auto it = handles_.find(c); it != handles_.end())
      return V(ErrorCode::LIFECYCLE_HANDLE_EXISTS,
               "fork: child handle " + Q(c) + " exists" +
                   (it->second.current.phase == Phase::kReleased
                        ? " (released: a fork child needs an id never used; a released id is "
                          "reused only by an allocation at a later handle generation)"
                        : " (" + std::string(PhaseName(it->second.current.phase)) +
                              "); a fork child needs an id never used"));
  }
  std::vector<Snapshot> out;
  for (const auto& c : child_ids) {
    HandleRecord r;
    Snapshot& s = r.current;
    s.handle_id = c;
    s.lineage_id = parent.lineage_id;
    s.committed_length = prefix_length;
    s.digest = SnapshotDigest(parent.digest, Transition::kFork, s, prefix_length);
    r.parent_id = std::string(parent_id);
    out.push_back(s);
    handles_.emplace(c, std::move(r));
  }
  return out;
}

StatusOr<Snapshot> KvObject::Finish(std::string_view handle_id, std::optional<BaseRef> expected) {
  KVC_ASSIGN_OR_RETURN(HandleRecord * h, Live(handle_id, "finish", false));
  KVC_RETURN_IF_ERROR(CheckExpected(h->current, expected, "finish"));
  KVC_ASSIGN_OR_RETURN(Snapshot next, Successor(h->current, false));
  next.phase = Phase::kFinished;
  next.digest = SnapshotDigest(h->current.digest, Transition::kFinish, next, 0);
  h->current = next;
  return next;
}

StatusOr<Snapshot> KvObject::CancelRequest(std::string_view handle_id,
                                           std::optional<BaseRef> expected) {
  KVC_ASSIGN_OR_RETURN(HandleRecord * h, Live(handle_id, "cancel_request", false));
  KVC_RETURN_IF_ERROR(CheckExpected(h->current, expected, "cancel_request"));
  KVC_ASSIGN_OR_RETURN(Snapshot next, Successor(h->current, false));
  next.phase = Phase::kCancelled;
  next.digest = SnapshotDigest(h->current.digest, Transition::kCancel, next, 0);
  h->current = next;
  for (const auto& id : h->open_txns)  // every open transaction has a record
    if (auto t = txns_.find(id); t != txns_.end()) Finalize(t->second, TxnState::kAborted);
  h->open_txns.clear();
  return next;
}

StatusOr<Snapshot> KvObject::Release(std::string_view handle_id, std::optional<BaseRef> expected) {
  KVC_ASSIGN_OR_RETURN(HandleRecord * h, Live(handle_id, "release", true));
  KVC_RETURN_IF_ERROR(CheckExpected(h->current, expected, "release"));
  if (h->current.phase == Phase::kDecodeReady)
    return V(ErrorCode::LIFECYCLE_RELEASE_LIVE,
             "release of " + Q(handle_id) + " while DECODE_READY; finish or cancel it first");
  KVC_ASSIGN_OR_RETURN(Snapshot next, Successor(h->current, true));
  auto inc = CheckedAdd(next.incarnation, 1);
  if (!inc)
    return V(ErrorCode::LIFECYCLE_GENERATION_OVERFLOW, "release: handle generation overflows");
  next.incarnation = *inc;
  next.committed_length = 0;
  next.phase = Phase::kReleased;
  next.digest = SnapshotDigest(h->current.digest, Transition::kRelease, next,
                               h->current.committed_length);
  h->released_length = h->current.committed_length;
  h->current = next;
  return next;
}

Status KvObject::ForgetTxnsBefore(std::string_view handle_id, uint64_t before_incarnation,
                                  bool open_too) {
  auto h = handles_.find(handle_id);
  if (h == handles_.end() || h->second.current.incarnation < before_incarnation)
    return FailedPrecondition("forget receipts: handle " + Q(handle_id) +
                              " has no released incarnation before generation " +
                              U(before_incarnation));
  HandleRecord& rec = h->second;
  // Incarnations only grow along a handle's lists (transactions begin on the live one), so the
  // records to judge are a prefix of each: the walk stops at the first later incarnation.
  // The records of an incarnation released a while ago are cold: their loads overlap (perf).
  constexpr size_t kPrefetch = 256;
  for (size_t i = 0; i < rec.txn_ids.size() && i < kPrefetch; ++i) txns_.Prefetch(rec.txn_ids[i]);
  // Forgets or keeps (keep_open: an open one moves to kept_open_txn_ids) the prefix of txn_ids
  // before before_incarnation. An id whose record is gone is dropped from the list (txn_ids
  // names no record but its own: an id leaves it before it can be forgotten).
  auto forget_listed = [&](bool keep_open) {
    std::deque<base::IdString>& ids = rec.txn_ids;
    auto id = ids.begin();
    for (; id != ids.end(); ++id) {
      auto t = txns_.find(*id);
      if (t == txns_.end()) continue;
      if (t->second.incarnation >= before_incarnation) break;
      const TxnState st = t->second.state;
      const bool open = st == TxnState::kOpen || st == TxnState::kPrepared;
      if (open && keep_open) {
        t->second.kept_past_forget = true;
        if (!rec.kept_open_txn_ids) rec.kept_open_txn_ids.emplace();
        rec.kept_open_txn_ids->push_back({std::move(*id), t->second.incarnation});
        continue;
      }
      // An open transaction of a released incarnation is still listed on the tombstone.
      if (open) rec.open_txns.Erase(*id);
      txns_.erase(t);
      ++txn_erasures_;
    }
    ids.erase(ids.begin(), id);
    if (ids.empty()) ids = std::deque<base::IdString>();  // memory follows live handles
  };
  // The same for kept_open_txn_ids, open ones included: an entry whose record is gone, or is
  // another record under its id (not kept, another handle's, another incarnation), is dropped;
  // the others are in incarnation order.
  auto forget_kept = [&](std::deque<KeptTxn>& kept) {
    auto k = kept.begin();
    for (; k != kept.end(); ++k) {
      auto t = txns_.find(k->id);
      if (t == txns_.end() || !IsKept(t->second, handle_id) ||
          t->second.incarnation != k->incarnation)
        continue;
      if (k->incarnation >= before_incarnation) break;
      rec.open_txns.Erase(k->id);
      txns_.erase(t);
      ++txn_erasures_;
    }
    kept.erase(kept.begin(), k);
  };
  // Kept ones a late record has closed since (their ids stay listed in kept_open_txn_ids,
  // dropped there when found gone). One of an incarnation not before before_incarnation stays
  // listed, and so does one open again (listed by an operation that Restore undid).
  std::vector<base::IdString> still_closed_kept;
  for (base::IdString& id : rec.closed_kept_txn_ids) {
    auto t = txns_.find(id);
    if (t == txns_.end() || !IsKept(t->second, handle_id)) continue;
    const TxnState st = t->second.state;
    if (t->second.incarnation >= before_incarnation || st == TxnState::kOpen ||
        st == TxnState::kPrepared) {
      still_closed_kept.push_back(std::move(id));
      continue;
    }
    txns_.erase(t);
    ++txn_erasures_;
  }
  rec.closed_kept_txn_ids = std::move(still_closed_kept);
  if (open_too && rec.kept_open_txn_ids) {
    forget_kept(*rec.kept_open_txn_ids);
    if (rec.kept_open_txn_ids->empty()) rec.kept_open_txn_ids.reset();
  }
  forget_listed(!open_too);
  return Status::Ok();
}

Status KvObject::ForgetFinalTxnsOf(std::string_view handle_id, uint64_t before_incarnation) {
  return ForgetTxnsBefore(handle_id, before_incarnation, false);
}

Status KvObject::ForgetTxnsOf(std::string_view handle_id, uint64_t before_incarnation) {
  return ForgetTxnsBefore(handle_id, before_incarnation, true);
}

Status KvObject::ForgetReleased(std::string_view handle_id) {
  auto h = handles_.find(handle_id);
  if (h == handles_.end() || h->second.current.phase != Phase::kReleased)
    return FailedPrecondition("forget: handle " + Q(handle_id) + " is not a released handle");
  for (const base::IdString& txn : h->second.txn_ids) txn_erasures_ += txns_.erase(txn);
  // The kept lists may name ids forgotten and reused since: only the records they list go.
  auto erase_kept = [&](std::string_view txn) {
    if (auto t = txns_.find(txn); t != txns_.end() && IsKept(t->second, handle_id)) {
      txns_.erase(t);
      ++txn_erasures_;
    }
  };
  if (h->second.kept_open_txn_ids)
    for (const KeptTxn& k : *h->second.kept_open_txn_ids) erase_kept(k.id);
  for (const base::IdString& txn : h->second.closed_kept_txn_ids) erase_kept(txn);
  handles_.erase(h);
  ++handle_erasures_;
  return Status::Ok();
}

uint64_t KvObject::Hash() const {
  uint64_t acc = Fnv1a64(abi_.id);
  uint64_t sum = 0;
  for (const auto& [id, h] : handles_) {
    uint64_t x = Fnv1a64U64(h.current.digest, Fnv1a64(id));
    x = Fnv1a64U64(h.current.committed_length, x);
    x = Fnv1a64U64(h.open_txns.size(), x);
    sum += x * 0x9e3779b97f4a7c15ull;
  }
  for (const auto& [id, t] : txns_) {
    uint64_t x = Fnv1a64U64(FingerprintOf(t), Fnv1a64(id));
    x = Fnv1a64U64(static_cast<uint64_t>(t.state), x);
    for (const LayerStage l : t.layers) x = Fnv1a64U64((l.k ? 1u : 0u) | (l.v ? 2u : 0u), x);
    sum += x;
  }
  return Fnv1a64U64(sum, acc);
}

}  // namespace kvc::lifecycle
