// Model-based RapidCheck properties of the lifecycle KvObject (M5.1 0x01) against a deliberately
// simple sequential model with per-layer lengths, plus the 0x02 ledger identities and the 0x05
// TPOT/TBT relation.
//
// On failure RapidCheck prints the seed and a shrunk counterexample with a reproduce string;
// rerun exactly that case with
//   RC_PARAMS="reproduce=<string>" build/bin/conformance_tests --gtest_filter='*Properties.*'
// More cases: RC_PARAMS="max_success=2000" (ctest keeps the default 100 for speed).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "reference/ledger/byte_trajectory.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/service/service_metrics.h"

namespace kvc::lifecycle {
namespace {

constexpr uint32_t kLayers = 2;
const CacheAbi kAbi{"abi-prop", kLayers, "post_rope"};

// The simple model: lengths kept per layer, phases as small integers, no digests.
enum MPhase { kReady, kFinished, kCancelled, kReleased };
struct MHandle {
  std::vector<uint64_t> layer_len = std::vector<uint64_t>(kLayers, 0);
  uint64_t gen = 0;
  MPhase phase = kReady;
};
enum MTxnState { kOpen, kPrepared, kPublished, kAborted, kRejected };
struct MTxn {
  std::string h;
  uint64_t base_gen = 0;
  uint64_t start = 0, count = 0;
  std::vector<bool> staged = std::vector<bool>(kLayers, false);
  MTxnState state = kOpen;
  std::optional<PublishReceipt> receipt;
  BeginAppendRequest request;  // as first sent: a retry re-sends it
};

using Step = std::tuple<uint8_t, uint8_t, uint8_t, uint8_t>;

class Harness {
 public:
  // Applies one generated step to both the object and the model; RC_ASSERTs the properties.
  void Run(const Step& step) {
    auto [kind, a, b, c] = step;
    switch (kind % 10) {
      case 0: return Allocate("h" + std::to_string(a % 4));
      case 1: return Begin(PickHandle(a), b, c);
      case 2: return Stage(PickTxn(a), b % kLayers);
      case 3: return Publish(PickTxn(a));
      case 4: return CancelTxn(PickTxn(a));
      case 5: return Truncate(PickHandle(a), b);
      case 6: return Fork(PickHandle(a), b);
      case 7: return (b % 2) ? Finish(PickHandle(a)) : CancelRequest(PickHandle(a));
      case 8: return Release(PickHandle(a));
      default: return RetryBegin(PickTxn(a), b);
    }
  }

  int published = 0, rejected = 0, released = 0, forked = 0, retried = 0;

  void CheckInvariants() const {
    for (const auto& [id, m] : model_) {
      const HandleRecord* r = obj_.Find(id);
      RC_ASSERT(r != nullptr);
      // Equal per-layer lengths in every snapshot, and the object exposes exactly that length.
      for (uint64_t l : m.layer_len) RC_ASSERT(l == m.layer_len[0]);
      RC_ASSERT(r->current.committed_length == (m.phase == kReleased ? 0 : m.layer_len[0]));
      RC_ASSERT(r->current.generation == m.gen);
      RC_ASSERT((r->current.phase == Phase::kReleased) == (m.phase == kReleased));
    }
  }

 private:
  std::string PickHandle(uint8_t a) const {
    if (model_.empty()) return "none";
    auto it = model_.begin();
    std::advance(it, a % model_.size());
    return it->first;
  }
  std::string PickTxn(uint8_t a) const {
    if (txns_.empty()) return "none";
    auto it = txns_.begin();
    std::advance(it, a % txns_.size());
    return it->first;
  }
  // Generations strictly increase and are never reused for a handle.
  void AdvanceGen(const std::string& h, const Snapshot& s) {
    RC_ASSERT(s.generation == model_[h].gen + 1);
    RC_ASSERT(seen_.insert({h + "#" + std::to_string(s.generation), s.digest}).second);
    model_[h].gen = s.generation;
  }

  void Allocate(const std::string& h) {
    bool expect = !model_.count(h);
    auto r = obj_.Allocate(h, h);
    RC_ASSERT(r.ok() == expect);
    if (r.ok()) {
      model_[h] = MHandle{};
      seen_.insert({h + "#0", r->digest});
    }
  }

  void Begin(const std::string& h, uint8_t count_seed, uint8_t stale_seed) {
    const HandleRecord* rec = obj_.Find(h);
    if (!rec) return;
    const Snapshot s = rec->current;
    const MHandle& m = model_[h];
    BeginAppendRequest q;
    q.txn_id = "t" + std::to_string(next_txn_++);
    q.handle_id = h;
    q.idempotency_key = q.txn_id;
    q.cache_abi = kAbi.id;
    q.base = s.base();
    if (stale_seed % 5 == 0 && s.generation > 0) q.base.generation = s.generation - 1;
    uint64_t count = 1 + count_seed % 3;
    q.interval = {m.layer_len[0], count};
    q.binding = {m.layer_len[0], count, m.layer_len[0] + count, "post_rope"};
    bool expect = m.phase == kReady && q.base.generation == m.gen;
    auto r = obj_.BeginAppend(q);
    RC_ASSERT(r.ok() == expect);
    if (!r.ok()) {
      RC_ASSERT(m.phase != kReleased || r.status().error() == ErrorCode::LIFECYCLE_HANDLE_RELEASED);
      return;
    }
    MTxn t;
    t.h = h;
    t.base_gen = m.gen;
    t.start = m.layer_len[0];
    t.count = count;
    t.request = q;
    txns_[q.txn_id] = t;
  }

  // Re-sends a transaction's BeginAppend, faithfully or with one field changed. Retry
  // idempotency: the faithful retry returns the transaction's record and changes nothing, in
  // whatever state it is; a changed key or interval is a conflict, and a changed position
  // binding (not part of the fingerprint) is refused by the binding rules. Never any state change.
  void RetryBegin(const std::string& id, uint8_t variant) {
    if (!txns_.count(id)) return;
    const MTxn& t = txns_[id];
    BeginAppendRequest q = t.request;
    ErrorCode want = ErrorCode::kNone;
    switch (variant % 5) {
      case 0:
        break;
      case 1:
        q.idempotency_key += "'";
        want = ErrorCode::LIFECYCLE_RETRY_CONFLICT;
        break;
      case 2:
        q.interval.count += 1;
        want = ErrorCode::LIFECYCLE_RETRY_CONFLICT;
        break;
      case 3:
        q.binding.mask_key_length += 1;
        want = ErrorCode::LIFECYCLE_MASK_LENGTH_MISMATCH;
        break;
      default:
        q.binding.position_stage = "pre_rope";
        want = ErrorCode::LIFECYCLE_POSITION_STAGE_MISMATCH;
    }
    const KvObject before = obj_;
    auto r = obj_.BeginAppend(q);
    if (want == ErrorCode::kNone) {
      RC_ASSERT(r.ok());
      RC_ASSERT((*r)->request.txn_id == id);
      ++retried;
    } else {
      RC_ASSERT(!r.ok());
      RC_ASSERT(r.status().error() == want);
    }
    RC_ASSERT(obj_ == before);
  }

  void Stage(const std::string& id, uint32_t layer) {
    if (!txns_.count(id)) return;
    MTxn& t = txns_[id];
    const Snapshot before_snap = obj_.Find(t.h)->current;
    const uint64_t before = before_snap.committed_length;
    bool expect = (t.state == kOpen || t.state == kPrepared) && model_[t.h].phase != kReleased &&
                  !t.staged[layer];
    auto r = obj_.StageLayer({id, layer, {t.start, t.count}, true, true, ""});
    RC_ASSERT(r.ok() == expect);
    // No partial publication: staging never changes what readers resolve.
    RC_ASSERT(obj_.Find(t.h)->current.committed_length == before);
    if (auto seen = obj_.Read(t.h); seen.ok()) RC_ASSERT(*seen == before_snap);  // a reader's view
    if (!r.ok()) return;
    t.staged[layer] = true;
    bool all = true;
    for (bool x : t.staged) all &= x;
    if (all) t.state = kPrepared;
    RC_ASSERT(*r == (all ? TxnState::kPrepared : TxnState::kOpen));
  }

  void Publish(const std::string& id) {
    if (!txns_.count(id)) return;
    MTxn& t = txns_[id];
    MHandle& m = model_[t.h];
    const uint64_t gen_before = obj_.Find(t.h)->current.generation;
    auto r = obj_.Publish(id);
    if (t.state == kPublished) {
      // Retry idempotency: the original receipt, and the generation does not move.
      RC_ASSERT(r.ok());
      RC_ASSERT(r->replayed);
      RC_ASSERT(r->result == t.receipt->result);
      RC_ASSERT(obj_.Find(t.h)->current.generation == gen_before);
      return;
    }
    if (t.state != kPrepared) {
      RC_ASSERT(!r.ok());
      return;
    }
    if (m.gen != t.base_gen) {
      RC_ASSERT(!r.ok());
      RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_STALE_BASE);
      t.state = kRejected;
      ++rejected;
      return;
    }
    RC_ASSERT(r.ok());
    RC_ASSERT(!r->replayed);
    AdvanceGen(t.h, r->result);
    for (auto& l : m.layer_len) l += t.count;
    t.state = kPublished;
    t.receipt = *r;
    ++published;
  }

  void CancelTxn(const std::string& id) {
    if (!txns_.count(id)) return;
    MTxn& t = txns_[id];
    Status s = obj_.CancelTxn(id);
    RC_ASSERT(s.ok() == (t.state != kPublished));
    if (t.state == kOpen || t.state == kPrepared) t.state = kAborted;
  }

  void Truncate(const std::string& h, uint8_t n) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    uint64_t len = n % (m.layer_len[0] + 2);
    auto r = obj_.Truncate(h, len);
    // Truncate never grows the cache.
    RC_ASSERT(r.ok() == (m.phase == kReady && len <= m.layer_len[0]));
    if (!r.ok()) {
      if (m.phase == kReady) RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_TRUNCATE_GROWTH);
      return;
    }
    AdvanceGen(h, *r);
    for (auto& l : m.layer_len) l = len;
  }

  void Fork(const std::string& h, uint8_t n) {
    if (!model_.count(h)) return;
    MHandle m = model_[h];
    uint64_t prefix = n % (m.layer_len[0] + 2);
    const Snapshot parent_before = obj_.Find(h)->current;
    std::string child = "f" + std::to_string(next_fork_++);
    auto r = obj_.Fork(h, prefix, {child});
    RC_ASSERT(r.ok() == ((m.phase == kReady || m.phase == kFinished) && prefix <= m.layer_len[0]));
    // Fork isolation: the parent is unchanged whether or not the fork succeeded.
    RC_ASSERT(obj_.Find(h)->current == parent_before);
    if (!r.ok()) return;
    RC_ASSERT((*r)[0].generation == 0u);
    RC_ASSERT((*r)[0].digest != parent_before.digest);
    ++forked;
    MHandle c;
    for (auto& l : c.layer_len) l = prefix;
    model_[child] = c;
  }

  void Finish(const std::string& h) { Terminal(h, kFinished); }
  void CancelRequest(const std::string& h) { Terminal(h, kCancelled); }
  void Terminal(const std::string& h, MPhase to) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    auto r = to == kFinished ? obj_.Finish(h) : obj_.CancelRequest(h);
    RC_ASSERT(r.ok() == (m.phase == kReady));
    if (!r.ok()) return;
    AdvanceGen(h, *r);
    m.phase = to;
    if (to == kCancelled)
      for (auto& [id, t] : txns_)
        if (t.h == h && (t.state == kOpen || t.state == kPrepared)) t.state = kAborted;
  }

  void Release(const std::string& h) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    auto r = obj_.Release(h);
    RC_ASSERT(r.ok() == (m.phase == kFinished || m.phase == kCancelled));
    if (!r.ok()) {
      if (m.phase == kReady) RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_RELEASE_LIVE);
      return;
    }
    AdvanceGen(h, *r);
    m.phase = kReleased;
    ++released;
    // Nothing is legal after release.
    RC_ASSERT(!obj_.Read(h).ok());
    RC_ASSERT(!obj_.Truncate(h, 0).ok());
    RC_ASSERT(!obj_.Finish(h).ok());
    RC_ASSERT(!obj_.Release(h).ok());
    RC_ASSERT(!obj_.Fork(h, 0, {"never"}).ok());
  }

  KvObject obj_{kAbi};
  std::map<std::string, MHandle> model_;
  std::map<std::string, MTxn> txns_;
  std::map<std::string, uint64_t> seen_;
  int next_txn_ = 0, next_fork_ = 0;
};

RC_GTEST_PROP(LifecycleProperties, RandomHistoriesMatchTheSequentialModel, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(rc::gen::arbitrary<Step>());
  Harness h;
  for (const Step& s : steps) {
    h.Run(s);
    h.CheckInvariants();
  }
  // Shown in RapidCheck's distribution report: the histories do reach the interesting states.
  RC_CLASSIFY(h.published > 0, "published");
  RC_CLASSIFY(h.rejected > 0, "stale publication rejected");
  RC_CLASSIFY(h.released > 0, "released");
  RC_CLASSIFY(h.forked > 0, "forked");
  RC_CLASSIFY(h.retried > 0, "retried");
}

// Histories biased towards one handle so appends, races and releases actually interleave.
RC_GTEST_PROP(LifecycleProperties, ContendedSingleHandleHistories, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(
      rc::gen::map(rc::gen::arbitrary<Step>(), [](Step s) {
        std::get<1>(s) %= 2;  // the first two handles / transactions only
        return s;
      }));
  Harness h;
  h.Run({0, 0, 0, 0});
  for (const Step& s : steps) {
    h.Run(s);
    h.CheckInvariants();
  }
  RC_CLASSIFY(h.published > 0, "published");
  RC_CLASSIFY(h.rejected > 0, "stale publication rejected");
  RC_CLASSIFY(h.released > 0, "released");
}

// M5.1 0x02 ledger identities for any owned state: logical <= materialized (every request has
// at least its primary copy), reserved >= materialized (capacity C_i >= T_i per copy), and the
// resident tiers partition the physical bytes. Values are kept small enough not to overflow.
RC_GTEST_PROP(LedgerProperties, LedgerIdentitiesHoldForAnyOwnedState, ()) {
  const std::vector<std::string> tiers = {"gpu", "cpu", "remote"};
  const auto n = *rc::gen::inRange<size_t>(0, 6);
  std::vector<OwnedCacheState> owned(n);
  uint64_t sum_t = 0, sum_rt = 0, sum_rc = 0, copies = 0;
  for (auto& o : owned) {
    o.committed = *rc::gen::inRange<uint64_t>(0, 5000);
    o.capacity = o.committed + *rc::gen::inRange<uint64_t>(0, 5000);
    const auto r = *rc::gen::inRange<size_t>(1, 4);
    for (size_t k = 0; k < r; ++k) o.copy_tiers.push_back(tiers[*rc::gen::inRange<size_t>(0, 3)]);
    sum_t += o.committed;
    sum_rt += r * o.committed;
    sum_rc += r * o.capacity;
    copies += r;
  }
  const auto b_token = *rc::gen::inRange<uint64_t>(1, 1u << 20);
  const auto meta = *rc::gen::inRange<uint64_t>(0, 1u << 16);
  const auto workspace = *rc::gen::inRange<uint64_t>(0, 1u << 30);
  auto l = kvc::SnapshotLedger(owned, b_token, meta, tiers, workspace);
  RC_ASSERT(l.ok());
  RC_ASSERT(l->logical == b_token * sum_t);
  RC_ASSERT(l->materialized == b_token * sum_rt);
  RC_ASSERT(l->reserved == b_token * sum_rc);
  RC_ASSERT(l->logical <= l->materialized);
  RC_ASSERT(l->reserved >= l->materialized);
  RC_ASSERT(l->replication_overhead == l->materialized - l->logical);
  RC_ASSERT(l->reservation_slack == l->reserved - l->materialized);
  RC_ASSERT(l->physical == l->reserved + copies * meta);
  uint64_t resident = 0;
  for (const auto& [tier, bytes] : l->resident_by_tier) resident += bytes;
  RC_ASSERT(l->resident_by_tier.size() == tiers.size());
  RC_ASSERT(resident == l->physical);
  RC_ASSERT(l->instantaneous == l->physical + workspace);
  RC_CLASSIFY(n == 0, "no owned request");
  RC_CLASSIFY(sum_rt > sum_t, "replicated copies");
}

// M5.1 0x05: TPOT = (y_{G-1} - y_0) / (G - 1) equals the mean of the G - 1 TBT gaps when G > 1,
// and is undefined (never 0) for G = 1.
RC_GTEST_PROP(ServiceMetricProperties, TpotIsTheMeanTbtWhenDefined, ()) {
  kvc::RequestEndpoints r;
  r.arrival = *rc::gen::inRange<uint64_t>(0, 1000);
  const auto outputs = *rc::gen::inRange<size_t>(1, 20);
  uint64_t t = r.arrival + *rc::gen::inRange<uint64_t>(0, 100);
  for (size_t j = 0; j < outputs; ++j) {
    r.output_times.push_back(t);
    t += *rc::gen::inRange<uint64_t>(0, 50);
  }
  r.finish = r.output_times.back();
  r.completed = true;
  auto m = kvc::ComputeRequestMetrics(r, {15, 10}, 64);
  RC_ASSERT(m.ok());
  RC_ASSERT(m->tbt.size() == outputs - 1);
  RC_CLASSIFY(outputs == 1, "one output: TPOT undefined");
  if (outputs == 1) {
    RC_ASSERT(!m->tpot.has_value());
    return;
  }
  uint64_t sum = 0;
  for (uint64_t gap : m->tbt) sum += gap;
  RC_ASSERT(sum == r.output_times.back() - r.output_times.front());
  auto mean = kvc::Rational::Make(sum, outputs - 1);
  RC_ASSERT(mean.ok());
  RC_ASSERT(m->tpot.has_value());
  RC_ASSERT(*m->tpot == *mean);
}

}  // namespace
}  // namespace kvc::lifecycle
