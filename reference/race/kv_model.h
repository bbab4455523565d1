// The sequential specification of one handle lineage, as a model for the linearizability checker.
//
// State of one partition (a lineage: a root handle and all its fork descendants, with their
// transactions and beam groups) is a lifecycle::KvObject plus the beam-group rows its forks
// created. Every rule comes from reference/lifecycle (KvObject, Reorder); this file only maps a
// KvOp onto those calls and encodes the result (kv_ops.h), so the checker judges a store by the
// same rules the store is built on. Sequential reads report every layer at the committed
// length: the all-layer invariant I(S_g) of M5.1 0x01.
//
// Why partition by lineage (P-compositionality): linearizability is local (Herlihy & Wing), so
// a history is linearizable iff each object's sub-history is, when no operation spans objects.
// A fork reads the parent's snapshot and creates children whose state depends on it, so parent
// and children are one object; handles of different lineages share nothing (txn ids, groups and
// child ids are unique per lineage), so each lineage is its own object. Per-handle partitions
// would be unsound: a fork would be split from the state it reads.
// Thread safety: KvModel is immutable and shareable; LineageState is a value.
#ifndef KVCONFORM_REFERENCE_RACE_KV_MODEL_H_
#define KVCONFORM_REFERENCE_RACE_KV_MODEL_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/lifecycle/reorder/reorder.h"
#include "reference/race/history.h"
#include "reference/race/kv_ops.h"

namespace kvc::race {

struct LineageState {
  explicit LineageState(lifecycle::CacheAbi abi) : obj(std::move(abi)) {}
  lifecycle::KvObject obj;
  std::map<std::string, std::vector<lifecycle::LiveSequenceRow>> groups;
  // Ids created so far (for Describe only; determined by obj, so equality is unaffected).
  std::set<std::string> handles, txns;
  // Opaque-digest histories only: (lineage, runtime digest) -> model digest, learned from
  // results (a bijection within each lineage: one runtime digest per model snapshot and vice
  // versa). Keyed by the op's partition, so that searching the lineages together (fuzz check
  // --no-partition) judges what searching each alone does: two lineages may report equal
  // runtime digests (a runtime's digest may be of content; probe 79: the two modes disagreed).
  std::map<std::string, std::string> digest_map;
  // Its inverse, keyed (lineage, model digest) the same way: one model snapshot has one runtime
  // digest within a lineage (a lookup; probe 87: each newly learned digest scanned the whole map,
  // quadratic in an opaque-digest history's length).
  std::map<std::string, std::string> digest_rmap;
  friend bool operator==(const LineageState&, const LineageState&) = default;
};

struct OpResult {
  Outcome outcome = Outcome::kOk;  // kOk or kError
  Json result;
};

// Applies `op` to `st` sequentially (one atomic step) and encodes the result.
OpResult ApplySequential(LineageState& st, const KvOp& op);
// The same for the read-only ops (read, read_row), which never change the state.
bool IsReadOnly(KvOpKind k);
OpResult ApplyReadOnly(const LineageState& st, const KvOp& op);

// The KV lineage model for CheckHistory. `opaque_digests`: the history's snapshot digests come
// from a runtime with its own digest scheme, so digests in results are not compared and a
// the model learns a bijection between the runtime's digests and its own from results, and
// translates a begin_append base through it (docs/history-format.md).
class KvModel {
 public:
  // Lifetime: an Op refers to the HistoryOp it was compiled from (checked mode), which must
  // outlive it (CheckHistory compiles and uses ops within one call).
  struct Op {
    KvOp call;
    Outcome outcome;
    const Json* result = nullptr;      // the recorded result (checked mode: the HistoryOp's)
    Json stripped;                     // opaque mode: the result with digests removed
    std::vector<std::string> digests;  // opaque mode: the removed digests, in order
    std::string scope;                 // opaque mode: digest_map's key prefix (the partition)
  };
  // Immutable, shared: Step copies the lineage only for ops that can change it, and the
  // checker's stack and visited cache share states instead of copying them.
  using State = std::shared_ptr<const LineageState>;

  KvModel(lifecycle::CacheAbi abi, bool opaque_digests)
      : abi_(std::move(abi)), opaque_digests_(opaque_digests) {}
  // From a history header: {"model": "kv_lineage/1", "cache_abi", "num_layers", "digests"}.
  static StatusOr<KvModel> FromHeader(const Json& header);
  Json Header() const;  // the header fields FromHeader reads

  StatusOr<Op> Compile(const HistoryOp& h) const;
  State Initial(const std::string&) const { return std::make_shared<const LineageState>(abi_); }
  bool Step(State& s, const Op& op, bool known) const;

  // The checker's in-place fast path (InPlaceModel in linearizability.h): one mutable lineage
  // and a digest kept up to date incrementally (XOR of per-record hashes of the records an op
  // can touch, recomputed around each Apply), so a step costs the op, not a lineage copy.
  struct Work {
    LineageState st;
    uint64_t digest = 0;
  };
  Work InitialWork(const std::string&) const { return Work{LineageState(abi_), 0}; }
  bool Apply(Work& w, const Op& op, bool known) const;
  // A read never changes the lineage, except that with opaque digests it can learn a digest
  // correspondence; so reads count as read-only in checked mode only.
  bool ReadOnly(const Op& op) const { return !opaque_digests_ && IsReadOnly(op.call.kind); }
  uint64_t Digest(const Work& w) const { return w.digest; }
  // The state `w` holds, for describing a witness the fast search found.
  State ToState(Work w) const { return std::make_shared<const LineageState>(std::move(w.st)); }
  // The lineage object's hash (KvObject::Hash: its handles' snapshots and its transactions) and
  // the counts of the rest; equal states hash equal, the cache compares states in full. (Until
  // 2026-12-05 the counts alone: states of equal counts shared a bucket, and each insert into
  // the exact search's cache compared them all; probe 66's 302-op history took 30 s, now 20 s,
  // and RaceFuzzer.FindsEveryMutant 25.5 s, now 0.4 s.)
  uint64_t Hash(const State& s) const;
  // About how many bytes `s` holds (its records and id sets; an estimate, for the exact search's
  // memory cap: each cached state is a private copy of the lineage).
  size_t StateBytes(const State& s) const;
  bool Equal(const State& a, const State& b) const { return a == b || *a == *b; }
  std::string Describe(const State& s) const;
  // What `op`'s call returns when applied to `s` alone, as a history result line's outcome and
  // result ("ok {...}" or "error {...}"); `s` is unchanged. For a witness: the result the
  // store's recorded one differs from. (Opaque digests: the model's own digests.)
  std::string Expect(const State& s, const Op& op) const;

  const lifecycle::CacheAbi& abi() const { return abi_; }

 private:
  // Applies op to st in place and compares the result with the recorded one (known ops);
  // on false, st may have changed. Step runs it on a private copy, Apply on the Work.
  bool ApplyInPlace(LineageState& st, const Op& op, bool known, uint64_t* digest) const;
  // `call` with a runtime's base digest (opaque mode) translated into the model's, in
  // *scratch; `call` itself when there is nothing to translate.
  const KvOp* InModelDigests(const LineageState& st, const Op& op, KvOp* scratch) const;

  lifecycle::CacheAbi abi_;
  bool opaque_digests_;
};

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_KV_MODEL_H_
