// The sequential lineage model: KvOp -> lifecycle::KvObject / Reorder calls -> encoded result.
#include "reference/race/kv_model.h"

#include <algorithm>

#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc::race {

namespace {

OpResult Err(const Status& s) { return {Outcome::kError, ErrorJson(s)}; }

template <typename T, typename F>
OpResult Wrap(const StatusOr<T>& r, F&& encode) {
  if (!r.ok()) return Err(r.status());
  return {Outcome::kOk, encode(*r)};
}

// Removes every "digest" member, appending its value to `out` (deterministic order: objects
// are key-sorted).
void StripDigests(Json& j, std::vector<std::string>* out) {
  if (j.is_object()) {
    if (auto d = j.find("digest"); d != j.end()) {
      if (out) out->push_back(d->is_string() ? d->get<std::string>() : d->dump());
      j.erase(d);
    }
    for (auto& [k, v] : j.items()) StripDigests(v, out);
  } else if (j.is_array()) {
    for (auto& v : j) StripDigests(v, out);
  }
}

}  // namespace

bool IsReadOnly(KvOpKind k) { return k == KvOpKind::kRead || k == KvOpKind::kReadRow; }

OpResult ApplyReadOnly(const LineageState& st, const KvOp& op) {
  if (op.kind == KvOpKind::kRead) {
    auto r = st.obj.Read(op.handle);
    if (!r.ok()) return Err(r.status());
    Json j = SnapshotJson(*r);
    j["layers"] = std::vector<uint64_t>(st.obj.abi().num_layers, r->committed_length);
    return {Outcome::kOk, std::move(j)};
  }
  if (op.kind == KvOpKind::kReadRow) {
    auto g = st.groups.find(op.group);
    if (g == st.groups.end()) return Err(GroupError("read_row: unknown group '" + op.group + "'"));
    if (op.row >= g->second.size())
      return Err(GroupError("read_row: group '" + op.group + "' has no row " + std::to_string(op.row)));
    return {Outcome::kOk, RowJson(g->second[op.row])};
  }
  return Err(Internal("ApplyReadOnly: not a read-only op"));
}

OpResult ApplySequential(LineageState& st, const KvOp& op) {
  lifecycle::KvObject& o = st.obj;
  switch (op.kind) {
    case KvOpKind::kAllocate: {
      OpResult r = Wrap(o.Allocate(op.handle, op.handle), SnapshotJson);
      if (r.outcome == Outcome::kOk) st.handles.insert(op.handle);
      return r;
    }
    case KvOpKind::kRead:
    case KvOpKind::kReadRow:
      return ApplyReadOnly(st, op);
    case KvOpKind::kBeginAppend: {
      OpResult r =
          Wrap(o.BeginAppend(BeginRequest(op, o.abi())), [](const lifecycle::AppendTxn* t) {
            return Json{{"txn", t->request.txn_id}, {"state", lifecycle::TxnStateName(t->state)}};
          });
      if (r.outcome == Outcome::kOk) st.txns.insert(op.txn);
      return r;
    }
    case KvOpKind::kStageLayer: {
      lifecycle::StageLayerRequest req;
      req.txn_id = op.txn;
      req.layer = op.layer;
      req.interval = {op.start, op.count};
      return Wrap(o.StageLayer(req), [](lifecycle::TxnState s) {
        return Json{{"state", lifecycle::TxnStateName(s)}};
      });
    }
    case KvOpKind::kPublish:
      return Wrap(o.Publish(op.txn), ReceiptJson);
    case KvOpKind::kCancelTxn: {
      Status s = o.CancelTxn(op.txn);
      if (!s.ok()) return Err(s);
      return {Outcome::kOk, Json::object()};
    }
    case KvOpKind::kCancelRequest:
      return Wrap(o.CancelRequest(op.handle), SnapshotJson);
    case KvOpKind::kFork: {
      if (st.groups.count(op.group)) return Err(GroupError("fork: group '" + op.group + "' exists"));
      auto r = o.Fork(op.handle, op.length, op.children);
      if (!r.ok()) return Err(r.status());
      st.groups[op.group] = ForkGroupRows(op);
      st.handles.insert(op.children.begin(), op.children.end());
      Json kids = Json::array();
      for (const auto& s : *r) kids.push_back(SnapshotJson(s));
      return {Outcome::kOk, Json{{"children", std::move(kids)}}};
    }
    case KvOpKind::kReorder: {
      auto g = st.groups.find(op.group);
      if (g == st.groups.end()) return Err(GroupError("reorder: unknown group '" + op.group + "'"));
      auto r = lifecycle::Reorder(g->second, op.perm);
      if (!r.ok()) return Err(r.status());
      g->second = std::move(*r);
      return {Outcome::kOk, Json::object()};
    }
    case KvOpKind::kTruncate:
      return Wrap(o.Truncate(op.handle, op.length), SnapshotJson);
    case KvOpKind::kFinish:
      return Wrap(o.Finish(op.handle), SnapshotJson);
    case KvOpKind::kRelease:
      return Wrap(o.Release(op.handle), SnapshotJson);
  }
  return Err(Internal("unhandled op"));
}

StatusOr<KvModel> KvModel::FromHeader(const Json& h) {
  auto model = h.find("model");
  if (model == h.end() || !model->is_string() || model->get<std::string>() != "kv_lineage/1")
    return ParseError("header: model: expected \"kv_lineage/1\"");
  lifecycle::CacheAbi abi;
  auto id = h.find("cache_abi");
  if (id == h.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
    return ParseError("header: cache_abi: expected a non-empty string");
  abi.id = id->get<std::string>();
  auto layers = h.find("num_layers");
  // Any JSON integer: a parsed file holds 2 as unsigned, a header built in code as signed.
  if (layers == h.end() || !layers->is_number_integer() || layers->get<int64_t>() < 1 ||
      layers->get<int64_t>() > 4096)
    return ParseError("header: num_layers: expected an integer in [1, 4096]");
  abi.num_layers = layers->get<uint32_t>();
  auto stage = h.find("position_stage");
  if (stage != h.end()) {
    if (!stage->is_string()) return ParseError("header: position_stage: expected a string");
    abi.position_stage = stage->get<std::string>();
  }
  auto digests = h.find("digests");
  if (digests == h.end() || !digests->is_string() ||
      (*digests != "checked" && *digests != "opaque"))
    return ParseError("header: digests: expected \"checked\" or \"opaque\"");
  return KvModel(std::move(abi), *digests == "opaque");
}

Json KvModel::Header() const {
  return {{"model", "kv_lineage/1"},
          {"cache_abi", abi_.id},
          {"num_layers", abi_.num_layers},
          {"position_stage", abi_.position_stage},
          {"digests", opaque_digests_ ? "opaque" : "checked"}};
}

StatusOr<KvModel::Op> KvModel::Compile(const HistoryOp& h) const {
  auto call = ParseKvOp(h.op, h.args);
  if (!call.ok())
    return ParseError("line " + std::to_string(h.line) + " (op " + std::to_string(h.id) +
                      "): " + call.status().message());
  Op op{std::move(*call), h.outcome, &h.result, {}, {}, {}};
  if (opaque_digests_) {
    op.stripped = h.result;
    StripDigests(op.stripped, &op.digests);
    // Length-prefixed, so that no (partition, digest) pair reads as another.
    op.scope = std::to_string(h.partition.size()) + ':' + h.partition + ':';
    for (std::string& d : op.digests) d.insert(0, op.scope);
  }
  return op;
}

namespace {

uint64_t MixU64(uint64_t h, uint64_t v) { return lifecycle::Fnv1a64U64(v, h); }

uint64_t MixStr(uint64_t h, std::string_view s) {
  h = MixU64(h, s.size());
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Per-record hashes for the Work digest (0 for an absent record).
uint64_t HandleHash(const LineageState& st, std::string_view id) {
  const lifecycle::HandleRecord* h = st.obj.Find(id);
  if (!h) return 0;
  const lifecycle::Snapshot& s = h->current;
  uint64_t x = MixStr(0x68616e646c65ull, id);
  for (uint64_t v : {s.incarnation, s.generation, s.version, s.committed_length, s.digest,
                     static_cast<uint64_t>(s.phase), h->released_length,
                     static_cast<uint64_t>(h->open_txns.size())})
    x = MixU64(x, v);
  return x;
}

uint64_t TxnHash(const LineageState& st, std::string_view id) {
  const lifecycle::AppendTxn* t = st.obj.FindTxn(id);
  if (!t) return 0;
  uint64_t x = MixU64(MixStr(0x74786eull, id), st.obj.FingerprintOf(*t));
  x = MixU64(x, static_cast<uint64_t>(t->state));
  for (const auto& l : t->layers) x = MixU64(x, (l.k ? 1u : 0u) | (l.v ? 2u : 0u));
  return x;
}

uint64_t GroupHash(const LineageState& st, const std::string& id) {
  auto g = st.groups.find(id);
  if (g == st.groups.end()) return 0;
  uint64_t x = MixStr(0x67726f7570ull, id);
  for (const auto& r : g->second) {
    x = MixStr(x, r.token_state);
    x = MixStr(x, r.cache_handle);
    x = MixU64(x, r.next_position);
    x = MixStr(x, r.sampler_state);
  }
  return x;
}

// The records an op can change (deduplicated), read before it is applied. Ids are views into
// the op, or into `owned` (ids read from the lineage, which the op may change).
struct Touched {
  std::vector<std::string_view> handles, txns;
  std::vector<std::string> owned;
  const std::string* group = nullptr;
  uint64_t Hash(const LineageState& st) const {
    uint64_t x = 0;
    for (auto h : handles) x ^= HandleHash(st, h);
    for (auto t : txns) x ^= TxnHash(st, t);
    if (group) x ^= GroupHash(st, *group);
    return x;
  }
};

void AddUnique(std::vector<std::string_view>& v, std::string_view s) {
  if (!s.empty() && std::find(v.begin(), v.end(), s) == v.end()) v.push_back(s);
}

Touched TouchedBy(const LineageState& st, const KvOp& op) {
  Touched t;
  // Ids read from the lineage are copied first (owned never reallocates after this).
  std::vector<std::string> from_lineage;
  const lifecycle::AppendTxn* txn = op.txn.empty() ? nullptr : st.obj.FindTxn(op.txn);
  if (txn) from_lineage.push_back(txn->request.handle_id.str());
  for (std::string_view h :
       {std::string_view(op.handle), txn ? txn->request.handle_id.view() : std::string_view()}) {
    if (h.empty()) continue;
    if (const lifecycle::HandleRecord* r = st.obj.Find(h))
      for (const auto& id : r->open_txns) from_lineage.push_back(id.str());
  }
  t.owned = std::move(from_lineage);
  AddUnique(t.handles, op.handle);
  for (const auto& c : op.children) AddUnique(t.handles, c);
  if (txn) AddUnique(t.handles, t.owned[0]);
  AddUnique(t.txns, op.txn);
  for (size_t i = txn ? 1 : 0; i < t.owned.size(); ++i) AddUnique(t.txns, t.owned[i]);
  if (!op.group.empty()) t.group = &op.group;
  return t;
}

}  // namespace

bool KvModel::Step(State& s, const Op& op, bool known) const {
  if (ReadOnly(op)) {
    // Never changes the lineage: run it on the shared state (ApplyInPlace does not write it).
    return ApplyInPlace(const_cast<LineageState&>(*s), op, known, nullptr);
  }
  auto next = std::make_shared<LineageState>(*s);  // a private copy for an op that can change it
  if (!ApplyInPlace(*next, op, known, nullptr)) return false;
  s = std::move(next);
  return true;
}

bool KvModel::Apply(Work& w, const Op& op, bool known) const {
  if (ReadOnly(op)) return ApplyInPlace(w.st, op, known, nullptr);
  Touched t = TouchedBy(w.st, op.call);
  w.digest ^= t.Hash(w.st);
  bool ok = ApplyInPlace(w.st, op, known, &w.digest);
  w.digest ^= t.Hash(w.st);
  return ok;
}

const KvOp* KvModel::InModelDigests(const LineageState& st, const Op& op, KvOp* scratch) const {
  const KvOp& call = op.call;
  if (!opaque_digests_ || call.kind != KvOpKind::kBeginAppend) return &call;
  // The runtime's digests are its own: translate a base digest it reported (in this op's
  // lineage) into the model's.
  auto it = st.digest_map.find(op.scope + lifecycle::DigestHex(call.base_digest));
  if (it != st.digest_map.end()) {
    *scratch = call;
    scratch->base_digest = *lifecycle::ParseDigestHex(it->second);
    return scratch;
  }
  if (const lifecycle::HandleRecord* h = st.obj.Find(call.handle)) {
    // A runtime digest no result has reported names no snapshot the model knows, so it must
    // not match the handle's current one (probe 44: the raw digest was used, and a runtime
    // that accepted the model's own digest, never reported to it, passed). The complement of
    // the current digest never does.
    *scratch = call;
    scratch->base_digest = ~h->current.digest;
    return scratch;
  }
  return &call;
}

bool KvModel::ApplyInPlace(LineageState& st, const Op& op, bool known, uint64_t* digest) const {
  KvOp translated;
  const KvOp* call = InModelDigests(st, op, &translated);
  // Read-only ops never write st (ApplyReadOnly takes it const).
  OpResult r = IsReadOnly(call->kind) ? ApplyReadOnly(st, *call) : ApplySequential(st, *call);
  if (!known) return true;
  if (r.outcome != op.outcome) return false;
  if (!opaque_digests_) return r.result == *op.result;
  // Learn the runtime-digest <-> model-digest correspondence; it must stay a bijection.
  std::vector<std::string> mine;
  StripDigests(r.result, &mine);
  if (r.result != op.stripped || mine.size() != op.digests.size()) return false;
  std::vector<std::pair<std::string, std::string>> learned;
  for (size_t i = 0; i < mine.size(); ++i) {
    auto it = st.digest_map.find(op.digests[i]);
    if (it != st.digest_map.end()) {
      if (it->second != mine[i]) return false;
      continue;
    }
    if (st.digest_rmap.count(op.scope + mine[i]))
      return false;  // one model snapshot, two runtime digests
    for (const auto& [theirs, ours] : learned)
      if ((theirs == op.digests[i]) != (ours == mine[i])) return false;
    learned.emplace_back(op.digests[i], mine[i]);
  }
  for (auto& [theirs, ours] : learned) {
    if (!st.digest_map.emplace(theirs, ours).second) continue;
    st.digest_rmap.emplace(op.scope + ours, theirs);
    if (digest) *digest ^= MixStr(MixStr(0x6d6170ull, theirs), ours);
  }
  return true;
}

uint64_t KvModel::Hash(const State& s) const {
  // Every input is part of LineageState's equality, so equal states hash equal.
  uint64_t h = lifecycle::Fnv1a64U64(s->obj.Hash(), lifecycle::kFnvOffset);
  h = lifecycle::Fnv1a64U64(s->obj.handle_count(), h);
  h = lifecycle::Fnv1a64U64(s->obj.txn_count(), h);
  h = lifecycle::Fnv1a64U64(s->groups.size(), h);
  return lifecycle::Fnv1a64U64(s->digest_map.size(), h);
}

size_t KvModel::StateBytes(const State& s) const {
  // Per record: a handle's snapshot strings and bookkeeping, a transaction's identity and
  // receipt, with their share of the maps' tables (~900 B each: calibrated 2026-12-07 on a
  // 32,000-op lineage whose exact search stopped at its 4 GiB cap with 4.4 GiB resident; 512
  // had put 7.1 GB under the cap), an id's set node (~64 B beside the id).
  size_t bytes = sizeof(LineageState) + 896 * (s->obj.handle_count() + s->obj.txn_count());
  for (const auto& id : s->handles) bytes += 64 + id.size();
  for (const auto& id : s->txns) bytes += 64 + id.size();
  for (const auto& [id, rows] : s->groups)
    bytes += 96 + id.size() + rows.size() * sizeof(lifecycle::LiveSequenceRow);
  for (const auto& [a, b] : s->digest_map) bytes += 2 * (96 + a.size() + b.size());  // and rmap
  return bytes;
}

std::string KvModel::Expect(const State& s, const Op& op) const {
  LineageState copy = *s;
  KvOp translated;
  const KvOp* call = InModelDigests(copy, op, &translated);
  OpResult r = IsReadOnly(call->kind) ? ApplyReadOnly(copy, *call) : ApplySequential(copy, *call);
  return std::string(OutcomeName(r.outcome)) + " " + r.result.dump();
}

std::string KvModel::Describe(const State& state) const {
  const LineageState& s = *state;
  Json j = Json::object();
  Json handles = Json::object();
  for (const auto& id : s.handles) {
    if (const lifecycle::HandleRecord* h = s.obj.Find(id)) handles[id] = SnapshotJson(h->current);
  }
  j["handles"] = handles;
  Json txns = Json::object();
  for (const auto& id : s.txns) {
    if (const lifecycle::AppendTxn* t = s.obj.FindTxn(id)) {
      Json layers = Json::array();
      for (const auto& l : t->layers) layers.push_back(std::string(l.k ? "K" : "") + (l.v ? "V" : ""));
      txns[id] = {{"handle", t->request.handle_id},
                  {"base_generation", t->request.base.generation},
                  {"interval", {t->request.interval.start, t->request.interval.count}},
                  {"state", lifecycle::TxnStateName(t->state)},
                  {"layers", layers}};
    }
  }
  j["txns"] = txns;
  Json groups = Json::object();
  for (const auto& [g, rows] : s.groups) {
    Json arr = Json::array();
    for (const auto& r : rows) arr.push_back(RowJson(r));
    groups[g] = arr;
  }
  j["groups"] = groups;
  return j.dump();
}

}  // namespace kvc::race
