// Model-based RapidCheck properties of the lifecycle KvObject (M5.1 0x01) against a deliberately
// simple sequential model with per-layer lengths, plus the 0x02 ledger identities and the 0x05
// TPOT/TBT relation.
//
// Reproduce: when a suite of this file starts it prints the run's seed and
//   RC_PARAMS="seed=<seed>" build/bin/conformance_tests --gtest_filter='<Suite>.*'
// and after a failure RapidCheck prints the shrunk counterexample and, at exit, a
// RC_PARAMS="reproduce=<string>" line; replay that case alone with
//   RC_PARAMS="reproduce=<string>" build/bin/conformance_tests --gtest_filter='<Suite>.<Test>'
// More cases: RC_PARAMS="max_success=2000" (ctest keeps the default 100 for speed).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <initializer_list>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "conformance/rapidcheck_reproduce.h"
#include "reference/ledger/byte_trajectory.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/service/service_metrics.h"

namespace kvc::lifecycle {
namespace {

constexpr uint32_t kLayers = 2;
const CacheAbi kAbi{"abi-prop", kLayers, "post_rope"};

// The simple model: lengths kept per layer, phases as small integers, no digests. `snap` is
// the last snapshot an operation returned for the handle (its tombstone once released): what
// every reader must resolve, exactly, until the next operation on the handle succeeds.
enum MPhase { kReady, kFinished, kCancelled, kReleased };
struct MHandle {
  std::vector<uint64_t> layer_len = std::vector<uint64_t>(kLayers, 0);
  uint64_t gen = 0;
  uint64_t inc = 0;  // the live incarnation; the tombstone's once released
  MPhase phase = kReady;
  Snapshot snap;
};
enum MTxnState { kOpen, kPrepared, kPublished, kAborted, kRejected };
struct MTxn {
  std::string h;
  uint64_t inc = 0;  // the incarnation of `h` it was opened on
  uint64_t base_gen = 0;
  uint64_t start = 0, count = 0;
  std::vector<bool> k = std::vector<bool>(kLayers, false);
  std::vector<bool> v = std::vector<bool>(kLayers, false);
  MTxnState state = kOpen;
  std::optional<PublishReceipt> receipt;
  BeginAppendRequest request;  // as first sent: a retry re-sends it
  bool Live() const { return state == kOpen || state == kPrepared; }
};

using Step = std::tuple<uint8_t, uint8_t, uint8_t, uint8_t>;
constexpr uint8_t kStepKinds = 13;

class Harness {
 public:
  // Applies one generated step to both the object and the model; RC_ASSERTs the properties.
  // Every step, and every operation inside a composite step, is followed by CheckInvariants.
  void Run(const Step& step) {
    auto [kind, a, b, c] = step;
    switch (kind % kStepKinds) {
      case 0:
        Allocate("h" + std::to_string(a % 4), b, c);
        break;
      case 1:
        Begin(PickHandle(a), b, c);
        break;
      case 2:
        Stage(PickTxn(a), b, c);
        break;
      case 3:
        Publish(PickTxn(a));
        break;
      case 4:
        CancelTxn(PickTxn(a));
        break;
      case 5:
        Truncate(PickHandle(a), b);
        break;
      case 6:
        Fork(PickHandle(a), b);
        break;
      case 7:
        (b % 2) ? Finish(PickHandle(a)) : CancelRequest(PickHandle(a));
        break;
      case 8:
        Release(PickHandle(a));
        break;
      case 9:
        RetryBegin(PickTxn(a), b, c);
        break;
      case 10:
        AppendAll(PickHandle(a), b);
        break;
      case 11:
        Retire(PickHandle(a), b);
        break;
      default:
        Forget(PickHandle(a), b, c);
        break;
    }
    CheckInvariants();
  }

  int published = 0, rejected = 0, released = 0, forked = 0, retried = 0, reallocated = 0;
  int refused_stages = 0, parent_checks = 0, late_after_release = 0, forgotten = 0;

  // Readers of every handle, live or released, see exactly the model's last snapshot: never a
  // length between two publications, every layer at that one length.
  void CheckInvariants() {
    for (const auto& [id, m] : model_) {
      const HandleRecord* r = obj_.Find(id);
      RC_ASSERT(r != nullptr);
      // (A snapshot holds one committed length for every layer: equal per-layer lengths are
      // what Stage and Publish judge, a stage whose rows would leave the layers unequal being
      // refused and only a transaction with every layer staged publishing. The model's own
      // lengths are not asserted equal here: that assertion could not fail.)
      RC_ASSERT(r->current == m.snap);
      RC_ASSERT(r->current.committed_length == (m.phase == kReleased ? 0 : m.layer_len[0]));
      RC_ASSERT(r->current.generation == m.gen);
      RC_ASSERT(r->current.incarnation == m.inc);
      // The record lists exactly the OPEN/PREPARED appends of its own life (a released record
      // keeps those its life left open; a fork child starts with none).
      const uint64_t life = m.phase == kReleased ? m.inc - 1 : m.inc;
      std::set<std::string> open;
      for (const auto& [tid, t] : txns_)
        if (t.h == id && t.inc == life && t.Live()) open.insert(tid);
      RC_ASSERT(std::set<std::string>(r->open_txns.begin(), r->open_txns.end()) == open);
      auto seen = obj_.Read(id);
      if (m.phase == kReleased) {
        RC_ASSERT(!seen.ok());
        RC_ASSERT(seen.status().error() == ErrorCode::LIFECYCLE_HANDLE_RELEASED);
      } else {
        RC_ASSERT(seen.ok());
        RC_ASSERT(*seen == m.snap);
      }
      if (!r->parent_id.empty() && model_.count(r->parent_id.str())) ++parent_checks;
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
  // Every new snapshot of a handle id has a digest never seen on that id, in any incarnation.
  void Record(const std::string& h, const Snapshot& s) {
    RC_ASSERT(s.handle_id == h);
    RC_ASSERT(digests_.insert({h, s.digest}).second);
    model_[h].snap = s;
  }
  // Generations strictly increase within a life of the handle and are never reused.
  void AdvanceGen(const std::string& h, const Snapshot& s) {
    RC_ASSERT(s.generation == model_[h].gen + 1);
    model_[h].gen = s.generation;
    Record(h, s);
  }

  // A fresh id under any incarnation; a released id only under an incarnation at least its
  // tombstone's (older: LIFECYCLE_HANDLE_EXISTS); a live id never.
  void Allocate(const std::string& h, uint8_t which, uint8_t extra) {
    uint64_t inc = 0;
    bool expect = true;
    const bool recycled = model_.count(h) && model_[h].phase == kReleased;
    if (model_.count(h)) {
      const uint64_t tomb = model_[h].inc;
      switch (which % 3) {
        case 0:
          inc = tomb - 1;
          break;  // the released life's own incarnation
        case 1:
          inc = tomb;
          break;
        default:
          inc = tomb + 1 + extra % 3;
      }
      expect = recycled && inc >= tomb;
    }
    auto r = obj_.Allocate(h, h, inc);
    RC_ASSERT(r.ok() == expect);
    if (!r.ok()) {
      RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_HANDLE_EXISTS);
      return;
    }
    RC_ASSERT(r->incarnation == inc);
    RC_ASSERT(r->generation == 0u);
    RC_ASSERT(r->committed_length == 0u);
    model_[h] = MHandle{};
    model_[h].inc = inc;
    Record(h, *r);
    if (recycled) {
      ++reallocated;
      ProbeStaleTxns(h);
    }
  }

  // The transactions of an earlier life of `h` can neither stage nor publish onto the new one.
  // Probed on a copy: a refused publication marks the transaction REJECTED.
  void ProbeStaleTxns(const std::string& h) {
    for (const auto& [id, t] : txns_) {
      if (t.h != h || t.inc == model_[h].inc || !t.Live()) continue;
      KvObject probe = obj_;
      for (uint32_t l = 0; l < kLayers; ++l) {
        auto s = probe.StageLayer({id, l, {t.start, t.count}, !t.k[l], !t.v[l] || t.k[l], ""});
        RC_ASSERT(!s.ok());
        RC_ASSERT(s.status().error() == ErrorCode::LIFECYCLE_LATE_COMPLETION);
      }
      auto p = probe.Publish(id);
      RC_ASSERT(!p.ok());
      ++late_after_release;
    }
  }

  // Opens an append of 1..3 rows at the model's length on the handle's current base (or, one
  // time in five, on the previous generation: refused as stale).
  std::optional<std::string> Begin(const std::string& h, uint8_t count_seed, uint8_t stale_seed) {
    const HandleRecord* rec = obj_.Find(h);
    if (!rec) return std::nullopt;
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
      return std::nullopt;
    }
    MTxn t;
    t.h = h;
    t.inc = m.inc;
    t.base_gen = m.gen;
    t.start = m.layer_len[0];
    t.count = count;
    t.request = q;
    txns_[q.txn_id] = t;
    return q.txn_id;
  }

  // Re-sends a transaction's BeginAppend, faithfully or with one field changed. Retry
  // idempotency: the faithful retry returns the transaction's record and changes nothing, in
  // whatever state it is; a changed key, interval, base or handle is a conflict, and a changed
  // position binding (not part of the fingerprint) is refused by the binding rules. Never any
  // state change.
  void RetryBegin(const std::string& id, uint8_t variant, uint8_t other) {
    if (!txns_.count(id)) return;
    const MTxn& t = txns_[id];
    BeginAppendRequest q = t.request;
    ErrorCode want = ErrorCode::kNone;
    switch (variant % 8) {
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
      case 4:
        q.binding.position_stage = "pre_rope";
        want = ErrorCode::LIFECYCLE_POSITION_STAGE_MISMATCH;
        break;
      case 5:  // another base: the handle's live one when it moved on, else another generation
        q.base = model_[t.h].snap.base();
        if (q.base == t.request.base) q.base.generation += 1 + other % 2;
        want = ErrorCode::LIFECYCLE_RETRY_CONFLICT;
        break;
      case 6:  // the same base generation under another digest
        q.base.digest ^= 1 + other;
        want = ErrorCode::LIFECYCLE_RETRY_CONFLICT;
        break;
      default: {  // another handle, existing or not
        std::string to = PickHandle(other);
        q.handle_id = to == t.h ? t.h + "'" : to;
        want = ErrorCode::LIFECYCLE_RETRY_CONFLICT;
      }
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

  // Stages K and/or V rows of one layer: usually the transaction's own interval with both, else
  // K only, V only, another count, another start or a layer beyond the ABI. The model refuses,
  // with the documented code, every stage whose rows would leave the layers at unequal lengths.
  void Stage(const std::string& id, uint8_t layer_seed, uint8_t variant) {
    if (!txns_.count(id)) return;
    MTxn& t = txns_[id];
    const MHandle& m = model_[t.h];
    uint32_t layer = layer_seed % kLayers;
    Interval iv{t.start, t.count};
    bool k = true, v = true;
    switch (variant % 10) {
      case 4:
        v = false;
        break;
      case 5:
        k = false;
        break;
      case 6:
        iv.count += 1 + variant / 10 % 2;
        break;
      case 7:
        iv.count -= 1;
        break;  // 0 rows when the append has one
      case 8:
        iv.start += 1;
        break;
      case 9:
        if (iv.start > 0)
          --iv.start;
        else
          layer = kLayers;
        break;
      default:
        break;
    }
    ErrorCode want = ErrorCode::kNone;
    if (t.state == kAborted || t.state == kRejected)
      want = ErrorCode::LIFECYCLE_LATE_COMPLETION;
    else if (t.state == kPublished)
      want = ErrorCode::LIFECYCLE_TXN_FINAL;
    else if (m.phase == kReleased || m.inc != t.inc)
      want = ErrorCode::LIFECYCLE_LATE_COMPLETION;
    else if (layer >= kLayers)
      want = ErrorCode::LIFECYCLE_LAYER_OUT_OF_RANGE;
    else if (!(iv == Interval{t.start, t.count}))
      want = ErrorCode::LIFECYCLE_LAYER_INTERVAL_MISMATCH;
    else if ((k && t.k[layer]) || (v && t.v[layer]))
      want = ErrorCode::LIFECYCLE_LAYER_DUPLICATE;
    auto r = obj_.StageLayer({id, layer, iv, k, v, ""});
    if (want != ErrorCode::kNone) {
      RC_ASSERT(!r.ok());
      RC_ASSERT(r.status().error() == want);
      ++refused_stages;
      return;
    }
    RC_ASSERT(r.ok());
    if (k) t.k[layer] = true;
    if (v) t.v[layer] = true;
    bool all = true;
    for (uint32_t l = 0; l < kLayers; ++l) all &= t.k[l] && t.v[l];
    if (all) t.state = kPrepared;
    RC_ASSERT(*r == (all ? TxnState::kPrepared : TxnState::kOpen));
  }

  // Only a PREPARED transaction (K and V of every layer staged with its interval) publishes,
  // and only onto the live incarnation's generation it read.
  void Publish(const std::string& id) {
    if (!txns_.count(id)) return;
    MTxn& t = txns_[id];
    MHandle& m = model_[t.h];
    auto r = obj_.Publish(id);
    if (t.state == kPublished) {
      // Retry idempotency: the original receipt, and the generation does not move.
      RC_ASSERT(r.ok());
      RC_ASSERT(r->replayed);
      RC_ASSERT(r->result == t.receipt->result);
      return;
    }
    RC_ASSERT(!r.ok() || t.state == kPrepared);
    if (t.state == kOpen) {
      RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_LAYER_INCOMPLETE);
      return;
    }
    if (t.state != kPrepared) {
      RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_LATE_COMPLETION);
      return;
    }
    if (t.inc != m.inc || m.gen != t.base_gen) {
      RC_ASSERT(!r.ok());
      if (t.inc == m.inc)
        RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_STALE_BASE);
      else
        RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_STALE_BASE ||
                  r.status().error() == ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT);
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
    if (t.Live()) t.state = kAborted;
  }

  // One complete append on `h` when it is live: begin, stage every layer, publish.
  void AppendAll(const std::string& h, uint8_t count_seed) {
    auto id = Begin(h, count_seed, 1);
    CheckInvariants();
    if (!id) return;
    for (uint32_t l = 0; l < kLayers; ++l) {
      Stage(*id, l, 0);
      CheckInvariants();
    }
    Publish(*id);
  }

  // Retires `h` with an append left open (variant 0), half staged (1) or prepared (2): finish,
  // then release; the left-over transaction can do nothing afterwards.
  void Retire(const std::string& h, uint8_t variant) {
    auto id = Begin(h, variant, 1);
    CheckInvariants();
    if (id)
      for (uint32_t l = 0; l < variant % 3 && l < kLayers; ++l) {
        Stage(*id, l, 0);
        CheckInvariants();
      }
    Finish(h);
    CheckInvariants();
    Release(h);
  }

  // Truncate never grows the cache.
  void Truncate(const std::string& h, uint8_t n) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    uint64_t len = n % (m.layer_len[0] + 2);
    auto r = obj_.Truncate(h, len);
    RC_ASSERT(r.ok() == (m.phase == kReady && len <= m.layer_len[0]));
    if (!r.ok()) {
      if (m.phase == kReady) RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_TRUNCATE_GROWTH);
      return;
    }
    AdvanceGen(h, *r);
    for (auto& l : m.layer_len) l = len;
  }

  // Fork isolation: children start at generation 0 with the prefix; the parent is unchanged,
  // now and (CheckInvariants) after every later operation on either side.
  void Fork(const std::string& h, uint8_t n) {
    if (!model_.count(h)) return;
    MHandle m = model_[h];
    uint64_t prefix = n % (m.layer_len[0] + 2);
    const Snapshot parent_before = obj_.Find(h)->current;
    std::string child = "f" + std::to_string(next_fork_++);
    auto r = obj_.Fork(h, prefix, {child});
    RC_ASSERT(r.ok() == ((m.phase == kReady || m.phase == kFinished) && prefix <= m.layer_len[0]));
    RC_ASSERT(obj_.Find(h)->current == parent_before);
    if (!r.ok()) return;
    RC_ASSERT((*r)[0].generation == 0u);
    RC_ASSERT((*r)[0].committed_length == prefix);
    RC_ASSERT((*r)[0].digest != parent_before.digest);
    ++forked;
    MHandle c;
    for (auto& l : c.layer_len) l = prefix;
    model_[child] = c;
    Record(child, (*r)[0]);
  }

  void Finish(const std::string& h) { Terminal(h, kFinished); }
  void CancelRequest(const std::string& h) { Terminal(h, kCancelled); }
  void Terminal(const std::string& h, MPhase to) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    auto r = to == kFinished ? obj_.Finish(h) : obj_.CancelRequest(h);
    RC_ASSERT(r.ok() == (m.phase == kReady));
    if (!r.ok()) {
      if (m.phase == kReleased)
        RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_HANDLE_RELEASED);
      return;
    }
    AdvanceGen(h, *r);
    m.phase = to;
    if (to == kCancelled)  // the live incarnation's appends only
      for (auto& [id, t] : txns_)
        if (t.h == h && t.inc == m.inc && t.Live()) t.state = kAborted;
  }

  // Forgets the receipts (ForgetFinalTxnsOf) or every record (ForgetTxnsOf) of the lives of `h`
  // before a generation G it has reached (one past it: FAILED_PRECONDITION). The model drops
  // the same records: the final ones of those lives, the open ones too with ForgetTxnsOf (an
  // open one kept by ForgetFinalTxnsOf and closed later goes at the next call). Every other
  // transaction is still found (probe 80: the receipt forgetting had one unit test).
  void Forget(const std::string& h, uint8_t which, uint8_t g_seed) {
    if (!model_.count(h)) return;
    const uint64_t g = g_seed % (model_[h].inc + 2);
    const bool open_too = which % 2;
    const Status st = open_too ? obj_.ForgetTxnsOf(h, g) : obj_.ForgetFinalTxnsOf(h, g);
    RC_ASSERT(st.ok() == (g <= model_[h].inc));
    if (!st.ok()) return;
    std::vector<std::string> gone;
    for (const auto& [id, t] : txns_)
      if (t.h == h && t.inc < g && (open_too || !t.Live())) gone.push_back(id);
    for (const std::string& id : gone) {
      txns_.erase(id);
      RC_ASSERT(obj_.FindTxn(id) == nullptr);
      ++forgotten;
    }
    for (const auto& [id, t] : txns_) RC_ASSERT(obj_.FindTxn(id) != nullptr);
    if (open_too) return;
    // A late record closes one of the open ones the call kept: the next call forgets it.
    std::string late;
    for (const auto& [id, t] : txns_)
      if (t.h == h && t.inc < g && t.Live()) late = id;
    if (late.empty()) return;
    CancelTxn(late);
    CheckInvariants();
    RC_ASSERT(obj_.ForgetFinalTxnsOf(h, g).ok());
    RC_ASSERT(obj_.FindTxn(late) == nullptr);
    txns_.erase(late);
    ++forgotten;
  }

  // Nothing is legal after release: every operation on the tombstone, and every step of an
  // append the released life left open, is refused (probed on a copy of the object).
  void Release(const std::string& h) {
    if (!model_.count(h)) return;
    MHandle& m = model_[h];
    auto r = obj_.Release(h);
    RC_ASSERT(r.ok() == (m.phase == kFinished || m.phase == kCancelled));
    if (!r.ok()) {
      if (m.phase == kReady) RC_ASSERT(r.status().error() == ErrorCode::LIFECYCLE_RELEASE_LIVE);
      return;
    }
    RC_ASSERT(r->incarnation == m.inc + 1);
    RC_ASSERT(r->committed_length == 0u);
    const uint64_t life = m.inc;
    m.inc = r->incarnation;
    AdvanceGen(h, *r);
    m.phase = kReleased;
    ++released;
    const ErrorCode gone = ErrorCode::LIFECYCLE_HANDLE_RELEASED;
    KvObject probe = obj_;
    RC_ASSERT(probe.Read(h).status().error() == gone);
    RC_ASSERT(probe.Truncate(h, 0).status().error() == gone);
    RC_ASSERT(probe.Finish(h).status().error() == gone);
    RC_ASSERT(probe.CancelRequest(h).status().error() == gone);
    RC_ASSERT(probe.Release(h).status().error() == gone);
    RC_ASSERT(probe.Fork(h, 0, {"never"}).status().error() == gone);
    BeginAppendRequest q;
    q.txn_id = q.idempotency_key = "after-release";
    q.handle_id = h;
    q.cache_abi = kAbi.id;
    q.base = r->base();
    q.interval = {0, 1};
    q.binding = {0, 1, 1, "post_rope"};
    RC_ASSERT(probe.BeginAppend(q).status().error() == gone);
    for (const auto& [id, t] : txns_) {
      if (t.h != h || t.inc != life || !t.Live()) continue;
      for (uint32_t l = 0; l < kLayers; ++l) {
        auto s = probe.StageLayer({id, l, {t.start, t.count}, !t.k[l], !t.v[l] || t.k[l], ""});
        RC_ASSERT(s.status().error() == ErrorCode::LIFECYCLE_LATE_COMPLETION);
      }
      auto p = probe.Publish(id);
      RC_ASSERT(!p.ok());
      if (t.state == kPrepared) RC_ASSERT(p.status().error() == ErrorCode::LIFECYCLE_STALE_BASE);
      ++late_after_release;
    }
    RC_ASSERT(probe.Find(h)->current == *r);
  }

  KvObject obj_{kAbi};
  std::map<std::string, MHandle> model_;
  std::map<std::string, MTxn> txns_;
  std::set<std::pair<std::string, uint64_t>> digests_;  // (handle id, digest) ever produced
  int next_txn_ = 0, next_fork_ = 0;
};

// Steps of every kind, uniformly.
rc::Gen<Step> AnyStep() { return rc::gen::arbitrary<Step>(); }

// Steps whose kind is drawn with the given (weight, kind) pairs.
rc::Gen<Step> WeightedSteps(std::initializer_list<std::pair<size_t, uint8_t>> kinds) {
  return rc::gen::map(rc::gen::pair(rc::gen::weightedElement(kinds), AnyStep()),
                      [](std::pair<uint8_t, Step> p) {
                        std::get<0>(p.second) = p.first;
                        return p.second;
                      });
}

RC_GTEST_PROP(LifecycleProperties, RandomHistoriesMatchTheSequentialModel, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(AnyStep());
  Harness h;
  for (const Step& s : steps) h.Run(s);
  // Shown in RapidCheck's distribution report: the histories do reach the interesting states.
  RC_CLASSIFY(h.published > 0, "published");
  RC_CLASSIFY(h.rejected > 0, "stale publication rejected");
  RC_CLASSIFY(h.released > 0, "released");
  RC_CLASSIFY(h.reallocated > 0, "re-allocated");
  RC_CLASSIFY(h.forked > 0, "forked");
  RC_CLASSIFY(h.retried > 0, "retried");
  RC_CLASSIFY(h.refused_stages > 0, "stage refused");
}

// Histories biased towards one handle so appends, races and releases actually interleave.
RC_GTEST_PROP(LifecycleProperties, ContendedSingleHandleHistories, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(rc::gen::map(AnyStep(), [](Step s) {
    std::get<1>(s) %= 2;  // the first two handles / transactions only
    return s;
  }));
  Harness h;
  h.Run({0, 0, 0, 0});
  for (const Step& s : steps) h.Run(s);
  RC_CLASSIFY(h.published > 0, "published");
  RC_CLASSIFY(h.rejected > 0, "stale publication rejected");
  RC_CLASSIFY(h.released > 0, "released");
}

// Fork isolation under load: a root with a committed prefix, then mostly complete appends,
// forks and truncations (of parents and children alike), with every other step mixed in.
RC_GTEST_PROP(LifecycleProperties, ForkFamiliesStayIsolated, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(WeightedSteps(
      {{1, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {6, 5}, {4, 6}, {1, 7}, {1, 8}, {1, 9}, {5, 10}}));
  Harness h;
  h.Run({0, 0, 0, 0});
  h.Run({10, 0, 1, 0});
  h.Run({10, 0, 2, 0});
  for (const Step& s : steps) h.Run(s);
  RC_CLASSIFY(h.forked > 0, "forked");
  RC_CLASSIFY(h.parent_checks > 10, "parents checked after >10 steps");
}

// Lives of handle ids: appends left open, prepared or half staged when a request finishes and
// is released, then re-allocation of the id under an older, equal or newer incarnation.
RC_GTEST_PROP(LifecycleProperties, ReleasedAndRecycledHandlesAdmitNothingStale, ()) {
  const auto steps = *rc::gen::container<std::vector<Step>>(WeightedSteps({{4, 0},
                                                                           {2, 1},
                                                                           {2, 2},
                                                                           {2, 3},
                                                                           {1, 4},
                                                                           {1, 5},
                                                                           {1, 6},
                                                                           {1, 7},
                                                                           {1, 8},
                                                                           {2, 9},
                                                                           {2, 10},
                                                                           {4, 11},
                                                                           {3, 12}}));
  Harness h;
  for (const Step& s : steps) h.Run(s);
  RC_CLASSIFY(h.reallocated > 0, "re-allocated");
  RC_CLASSIFY(h.late_after_release > 0, "late steps probed");
  RC_CLASSIFY(h.forgotten > 0, "records forgotten");
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
  // Finish may come after the last output (the request ends later): TPOT stops at the output.
  r.finish = r.output_times.back() + *rc::gen::element<uint64_t>(0, 0, 1, 7, 40);
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

// The seed and reproduce lines of this file's suites (conformance/rapidcheck_reproduce.h).
[[maybe_unused]] const bool kReproducer = test::RegisterRapidCheckReproducer(
    "lifecycle_properties", {"LifecycleProperties", "LedgerProperties", "ServiceMetricProperties"});

}  // namespace
}  // namespace kvc::lifecycle
