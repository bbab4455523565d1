// KvObject: the sequential, deterministic model of versioned all-layer KV handles (M5.1 0x01).
//
// One object holds every handle of one cache ABI: live snapshots, release tombstones and append
// transactions. Every operation is one atomic step: it either returns the successor state or a
// Status carrying the registry code of the breached rule, and (except where documented) leaves
// the object unchanged on error. Readers resolve a handle to its current Snapshot: S_g before a
// publication and S_(g+1) after, never a mix, because pending rows live only in the transaction.
//
// Roles (one copy of the rules for all of them):
//  * trace checker model (reference/trace/checker.h replays events through it);
//  * the reference model's cache bookkeeping: the object tracks metadata only. K/V payload lives
//    in the caller, keyed by the ids this object hands back: stage rows under txn_id+layer, move
//    them into the handle's storage when Publish() returns a receipt (not replayed), drop them on
//    CancelTxn()/rejection, share or copy the parent prefix on Fork(), cut on Truncate(), free on
//    Release(). See docs/lifecycle.md "Payload seam".
//  * sequential specification for a linearizability checker: the object is a copyable value;
//    operator== compares complete state and Hash() is a cheap order-independent digest of it.
//  * the publication step of the M5.6 transfer protocol (BeginAppend/StageLayer/Publish).
//
// Errors that mutate: a Publish() that loses compare-and-publish marks the transaction REJECTED
// (its pending rows are discarded) before returning its code (CompareBase's STALE_BASE or
// UNKNOWN_SNAPSHOT; STALE_BASE or APPEND_HOLE for an equal base of another incarnation or
// position). Nothing else changes state on error (CancelRequest() aborts the handle's open
// transactions on success).
// Thread safety: none. The object is single-threaded; concurrent users wrap it.
#ifndef KVCONFORM_REFERENCE_LIFECYCLE_KV_OBJECT_KV_OBJECT_H_
#define KVCONFORM_REFERENCE_LIFECYCLE_KV_OBJECT_KV_OBJECT_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "reference/base/stable_string_map.h"
#include "reference/base/status.h"
#include "reference/base/string_hash.h"
#include "reference/lifecycle/append_txn/append_txn.h"
#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc::lifecycle {

// The part of the cache ABI (M5.1 0x01 manifest) the lifecycle rules need.
struct CacheAbi {
  std::string id;                          // e.g. cache_abi_sha256 of the manifest
  uint32_t num_layers = 0;                 // cache-producing layers L (>= 1)
  std::string position_stage = "post_rope";  // key stage stored in the cache
  friend bool operator==(const CacheAbi&, const CacheAbi&) = default;
};

// The OPEN/PREPARED transactions of one handle: a set of transaction ids. Insert and Erase
// cost O(1) whatever the size (a vector; from kIndexFrom ids on, also a hash index of
// positions), so a handle with many concurrent appends closes each in constant time.
// Iteration order is unspecified (Erase moves the last id into the hole); equality compares
// the sets. A value; thread safety: none.
class OpenTxnIds {
 public:
  // `id` must not be present (BeginAppend adds each new transaction once).
  void Insert(std::string_view id);
  // No-op when `id` is absent.
  void Erase(std::string_view id);
  bool contains(std::string_view id) const;
  void clear() {
    ids_.clear();
    index_.clear();
  }
  bool empty() const { return ids_.empty(); }
  size_t size() const { return ids_.size(); }
  std::vector<base::IdString>::const_iterator begin() const { return ids_.begin(); }
  std::vector<base::IdString>::const_iterator end() const { return ids_.end(); }
  friend bool operator==(const OpenTxnIds& a, const OpenTxnIds& b);

 private:
  static constexpr size_t kIndexFrom = 16;
  std::vector<base::IdString> ids_;
  // id -> position in ids_; empty while ids_ is shorter than kIndexFrom (a scan is cheaper).
  std::unordered_map<base::IdString, size_t, base::StringHash, base::StringEq> index_;
};

// An entry of HandleRecord::kept_open_txn_ids: the id, and the incarnation of the record it
// lists (the id may have been forgotten and reused since, by another life or handle).
struct KeptTxn {
  base::IdString id;
  uint64_t incarnation = 0;
};

// Per-handle record: the current snapshot (a tombstone once released) and bookkeeping.
struct HandleRecord {
  Snapshot current;
  uint64_t released_length = 0;        // committed length at release (audit; not readable)
  base::IdString parent_id;            // fork parent, empty for allocated roots
  OpenTxnIds open_txns;                // OPEN or PREPARED transactions on this handle
  // Derived index, not state (operator== ignores it): the ids of every transaction recorded on
  // this handle id, final ones included, in BeginAppend order, until ForgetFinalTxnsOf,
  // ForgetTxnsOf or ForgetReleased drops them. It survives re-allocation of a released id (the
  // records of the earlier incarnations stay listed until forgotten by incarnation). Kept here
  // rather than in a map of its own so an append costs no extra lookup. A deque: appending never
  // moves the ids already listed (a long-lived request records thousands of transactions).
  std::deque<base::IdString> txn_ids;
  // Derived too: the ids of OPEN or PREPARED transactions of released incarnations that
  // ForgetFinalTxnsOf passed over (moved here from txn_ids, in order), so that the next call
  // does not walk them again (probe 76: an id re-allocated 40,000 times with an append left open
  // in each life took 82% of a check in this walk, quadratic in the released window). ForgetTxnsOf
  // and ForgetReleased drop them. One that a late record closes is listed again in
  // closed_kept_txn_ids, for the next ForgetFinalTxnsOf to forget as a final one.
  // (Engaged only while it lists any: an empty std::deque allocates ~576 B, which every
  // tombstone of the released window held: +2.5 MiB on a 1M-event check.)
  std::optional<std::deque<KeptTxn>> kept_open_txn_ids;
  std::vector<base::IdString> closed_kept_txn_ids;
  // Compares the state fields: current, released_length, parent_id, open_txns.
  friend bool operator==(const HandleRecord& a, const HandleRecord& b) {
    return a.current == b.current && a.released_length == b.released_length &&
           a.parent_id == b.parent_id && a.open_txns == b.open_txns;
  }
};

// The id maps' hash and byte equality (reference/base/string_hash.h), under their lifecycle
// names (the trace checker uses them too).
using base::SameBytes;
using base::SameBytesLong;
using base::StringEq;
using base::StringHash;

class KvObject {
 public:
  explicit KvObject(CacheAbi abi);

  const CacheAbi& abi() const { return abi_; }

  // Establishes an empty snapshot: generation 0, version 0, T = 0, DECODE_READY. `incarnation`
  // is the request's handle generation (0x07). Arrival creates no K/V. A released handle id
  // may be re-allocated with incarnation >= its tombstone's (recycled request identity).
  StatusOr<Snapshot> Allocate(std::string_view handle_id, std::string_view lineage_id,
                              uint64_t incarnation = 0);

  // The readable snapshot of a handle; LIFECYCLE_HANDLE_RELEASED for a tombstone.
  StatusOr<Snapshot> Read(std::string_view handle_id) const;
  // Any record, tombstones included; nullptr when unknown. Valid until the next mutation.
  const HandleRecord* Find(std::string_view handle_id) const;
  const AppendTxn* FindTxn(std::string_view txn_id) const;
  // Hints, no effect on the state: start loading into the cache the index slot an id hashes to
  // (the *Slot ones), or the handle / transaction record it probably names (StableStringMap's
  // PrefetchSlot and Prefetch). For a caller that looks up many cold records at once (the trace
  // checker).
  void PrefetchHandleSlot(std::string_view handle_id) const { handles_.PrefetchSlot(handle_id); }
  void PrefetchTxnSlot(std::string_view txn_id) const { txns_.PrefetchSlot(txn_id); }
  void PrefetchHandle(std::string_view handle_id) const { handles_.Prefetch(handle_id); }
  void PrefetchTxn(std::string_view txn_id) const { txns_.Prefetch(txn_id); }
  // The complete BeginAppendRequest that opened `t` (a transaction of this object): its
  // identity plus the cache ABI id and position binding BeginAppend required (see
  // AppendIdentity). OperationFingerprint(RequestOf(t)) == FingerprintOf(t).
  BeginAppendRequest RequestOf(const AppendTxn& t) const;
  // The operation fingerprint of `t` (a transaction of this object), computed from its
  // identity and the object's ABI id (not stored: see AppendTxn).
  uint64_t FingerprintOf(const AppendTxn& t) const {
    return OperationFingerprint(t.request, abi_.id);
  }
  // The receipt Publish() returns for the PUBLISHED transaction `t` of this object.
  PublishReceipt ReceiptOf(const AppendTxn& t, bool replayed) const {
    return lifecycle::ReceiptOf(t, abi_.id, replayed);
  }

  // Opens a transaction on `req.base`. Re-sending an existing txn_id with the same
  // fingerprint returns the existing transaction unchanged (a retry); with a different
  // fingerprint it is LIFECYCLE_RETRY_CONFLICT. The returned transaction is owned by the
  // object (not a copy) and valid until the next mutation.
  StatusOr<const AppendTxn*> BeginAppend(const BeginAppendRequest& req) {
    return BeginAppend(ViewOf(req));
  }
  // The same with the request's strings as views, valid for the call (no copy but the record's).
  StatusOr<const AppendTxn*> BeginAppend(const BeginAppendView& req);
  // Records K and/or V rows of one layer; returns the transaction state afterwards
  // (PREPARED once every layer is complete).
  StatusOr<TxnState> StageLayer(const StageLayerRequest& req);
  // StageLayer(req) with the request's members passed as views, valid for the call (no
  // copies: the trace checker stages every layer of every traced append through it).
  StatusOr<TxnState> StageLayer(std::string_view txn_id, uint32_t layer, Interval interval,
                                bool k, bool v, std::string_view cache_abi);
  // One logical compare-and-publish of (handle, base generation, base digest). A published
  // transaction returns its original receipt with replayed = true and advances nothing.
  StatusOr<PublishReceipt> Publish(std::string_view txn_id);
  // Publish() without the receipt copy: the PUBLISHED transaction itself (owned by the object,
  // valid until the next mutation; ReceiptOf(*txn, replayed) is the receipt Publish() returns).
  struct Published {
    const AppendTxn* txn = nullptr;
    bool replayed = false;
  };
  StatusOr<Published> PublishTxn(std::string_view txn_id);
  // Aborts one OPEN/PREPARED transaction; the handle's snapshot is untouched.
  Status CancelTxn(std::string_view txn_id);

  // Lifecycle operations. `expected`, when given, is compared like a publication base.
  StatusOr<Snapshot> Truncate(std::string_view handle_id, uint64_t new_length,
                              std::optional<BaseRef> expected = std::nullopt);
  // Children start at generation 0 with the exact prefix [0, prefix_length); parent unchanged.
  StatusOr<std::vector<Snapshot>> Fork(std::string_view parent_id, uint64_t prefix_length,
                                       const std::vector<std::string>& child_ids,
                                       std::optional<BaseRef> expected = std::nullopt);
  StatusOr<Snapshot> Finish(std::string_view handle_id,
                            std::optional<BaseRef> expected = std::nullopt);
  // CANCELLED; aborts the handle's open transactions (their late completions are rejected).
  StatusOr<Snapshot> CancelRequest(std::string_view handle_id,
                                   std::optional<BaseRef> expected = std::nullopt);
  // Terminal tombstone: generation, version and incarnation advance, T reads as 0.
  // Only from FINISHED or CANCELLED.
  StatusOr<Snapshot> Release(std::string_view handle_id,
                             std::optional<BaseRef> expected = std::nullopt);

  // Removes the final (PUBLISHED/ABORTED/REJECTED) transaction records, the receipts a retry
  // gets back, of the incarnations of `handle_id` older than `before_incarnation` (the handle
  // generation its release of them produced); open ones stay (see ForgetTxnsOf) until a later
  // call finds them final. Afterwards a retry of such a
  // transaction is unknown. The caller decides how long receipts outlive a release (the trace
  // checker keeps a documented window, counted per incarnation, so a recycled id keeps no more
  // than the window's incarnations). Cost: proportional to the transactions of those
  // incarnations not yet forgotten (the list is in incarnation order; the open ones it keeps are
  // not walked again). FAILED_PRECONDITION unless the handle exists and its
  // current incarnation is at least `before_incarnation` (that release happened).
  Status ForgetFinalTxnsOf(std::string_view handle_id, uint64_t before_incarnation);
  // The same for every transaction record of those incarnations, open ones included: an open
  // transaction of a released incarnation can never publish (its late completions are judged
  // LIFECYCLE_LATE_COMPLETION while it is held, unknown afterwards).
  Status ForgetTxnsOf(std::string_view handle_id, uint64_t before_incarnation);
  // Forgets a released handle entirely: its tombstone and every transaction record on it, so
  // that a long stream of requests leaves no per-request state behind. Afterwards the id is
  // unknown (LIFECYCLE_UNKNOWN_HANDLE) and Allocate accepts it under any incarnation: the
  // caller decides how long a tombstone must fence (the trace checker keeps a documented
  // window). FAILED_PRECONDITION unless the handle exists and is RELEASED.
  Status ForgetReleased(std::string_view handle_id);

  // Undo of one operation (kv_object_undo.cc). The trace checker replays an operation the
  // runtime reports as refused on the live object and must undo it when the contract admits
  // it. Save() records the named handles (present or absent) with their open transactions, the
  // named transactions (present or absent) and the handles those name; Restore() puts exactly
  // that state back. Every lifecycle operation of this class (Allocate through Release, the
  // append transaction's steps, Fork, Truncate; reorder is reorder/'s free functions) changes only
  // the handles it names (Fork: the parent and the children), their open transactions (final ones
  // never change), the transaction it names and its handle. The memory-bounding Forget* operations
  // erase final transactions and tombstones, which Save() does not record: they are not undone
  // (probe 50; the trace checker saves around the one operation a runtime reported refused, never
  // around a Forget*). Cost: proportional to the saved records (the named handles, their open
  // transactions and the named transactions), not to the object or to a handle's history. A saved
  // handle record leaves its derived txn_ids list empty and keeps only its length (listed_txns): an
  // operation appends at most one id to it (BeginAppend), so Restore cuts the live list back
  // instead of copying a long-lived request's whole history.
  //
  // With `named_txns_only` the caller promises that the operation changes no transaction but
  // the named ones (an append transaction's own steps: begin, stage, publish, abort): the
  // handles' open sets are then not copied, only whether each named transaction was in its
  // handle's set, which Restore puts back (probe 86: a refused publication on a handle with N
  // open appends copied all N; N - 1 refused publications took N^2, 133 s at 25,000).
  struct SavedHandle {
    std::string id;
    std::optional<HandleRecord> record;  // nullopt: the handle did not exist
    size_t listed_txns = 0;
    // named_txns_only: record->open_txns is left empty; the named transactions' membership.
    bool open_txns_omitted = false;
    std::vector<std::pair<std::string, bool>> named_open;
  };
  struct Saved {
    std::vector<SavedHandle> handles;
    std::vector<std::pair<std::string, std::optional<AppendTxn>>> txns;
  };
  Saved Save(const std::vector<std::string_view>& handle_ids,
             const std::vector<std::string_view>& txn_ids, bool named_txns_only = false) const;
  void Restore(Saved saved);

  size_t handle_count() const { return handles_.size(); }
  // How many handle records were ever erased (re-allocation, ForgetReleased, Restore): a
  // pointer from Find() stays valid while this count is unchanged (the map's nodes are stable;
  // only erasure frees one). Lets a caller memoize Find() across mutations.
  uint64_t handle_erasures() const { return handle_erasures_; }
  size_t txn_count() const { return txns_.size(); }
  // Order-independent digest of the complete state (equal states hash equal).
  uint64_t Hash() const;
  // Compares the state (handles, transactions with their receipts), not the derived indexes.
  friend bool operator==(const KvObject& a, const KvObject& b) {
    return a.abi_ == b.abi_ && a.handles_ == b.handles_ && a.txns_ == b.txns_;
  }

 private:
  // Resolves a live (not released) handle for a mutation; `allow_finished` admits FINISHED.
  StatusOr<HandleRecord*> Live(std::string_view handle_id, std::string_view op,
                               bool allow_terminal);
  // Every rule a new append must pass (handle live, ABI, base, interval, binding); the handle.
  StatusOr<HandleRecord*> AdmitAppend(const BeginAppendView& req);
  // The position binding of an append call whose interval ends at `end`: cache_position is the
  // interval, the key-side mask is T_past + T_new, keys are at the ABI's position stage. Every
  // call is judged, a retry included (the fingerprint does not cover the binding).
  Status CheckPositionBinding(const BeginAppendView& req, uint64_t end) const;
  Status CheckExpected(const Snapshot& s, const std::optional<BaseRef>& expected,
                       std::string_view op) const;
  // The counters of the successor of `s`: generation+1 and (when `content`) version+1;
  // LIFECYCLE_GENERATION_OVERFLOW instead of wrapping.
  struct Counters {
    uint64_t generation = 0;
    uint64_t version = 0;
  };
  StatusOr<Counters> NextCounters(const Snapshot& s, bool content) const;
  // Successor of `s` with generation+1 (and version+1 when `content`); overflow-checked.
  StatusOr<Snapshot> Successor(const Snapshot& s, bool content) const;
  // `t` (of `h`, id `txn_id`) became final: it leaves h's open set.
  void CloseTxn(HandleRecord& h, std::string_view txn_id, AppendTxn& t);
  // ForgetFinalTxnsOf (open_too false) and ForgetTxnsOf (true).
  Status ForgetTxnsBefore(std::string_view handle_id, uint64_t before_incarnation, bool open_too);
  // txns_.find(txn_id) through memo_ (nullptr when unknown).
  base::StableStringMap<AppendTxn>::value_type* FindTxnEntry(std::string_view txn_id);
  // The record of the handle that transaction `t` names (nullptr when there is none), through
  // memo_ when `t` is the remembered transaction.
  HandleRecord* HandleOfTxn(const AppendTxn& t);
  // Makes `entry` (and `handle`, nullptr when not looked up yet) the remembered lookup.
  void Remember(base::StableStringMap<AppendTxn>::value_type* entry, HandleRecord* handle);

  CacheAbi abi_;
  // Node addresses are stable until the node is erased (StableStringMap): Find(), FindTxn(),
  // BeginAppend() and PublishTxn() hand out pointers into these maps.
  base::StableStringMap<HandleRecord> handles_;
  base::StableStringMap<AppendTxn> txns_;
  uint64_t handle_erasures_ = 0;  // see handle_erasures(); not state (operator== ignores it)
  uint64_t txn_erasures_ = 0;     // transaction records ever erased; not state
  // Lookup memo, not state (operator== and Hash() ignore it; a copy or an assignment starts
  // empty, so it never points into another object): the transaction entry FindTxnEntry last
  // found and, once looked up, the handle record it names. Valid while txn_erasures_ and
  // handle_erasures_ equal the counts recorded with it (records never move until erased). One
  // append's StageLayer and PublishTxn calls then cost no hash lookups.
  struct TxnMemo {
    base::StableStringMap<AppendTxn>::value_type* entry = nullptr;
    HandleRecord* handle = nullptr;  // nullptr: not looked up yet
    uint64_t txn_erasures = 0;
    uint64_t handle_erasures = 0;
    TxnMemo() = default;
    TxnMemo(const TxnMemo&) {}
    TxnMemo& operator=(const TxnMemo&) {
      entry = nullptr;
      handle = nullptr;
      return *this;
    }
    // A move leaves neither side pointing into the other's records: the moved-from object's
    // memo pointed into the records now owned by the moved-to one (probe 50: a moved-from
    // object staged and published into the other, and read freed memory once it was gone).
    TxnMemo(TxnMemo&& other) noexcept { other.Clear(); }
    TxnMemo& operator=(TxnMemo&& other) noexcept {
      Clear();
      other.Clear();
      return *this;
    }
    void Clear() {
      entry = nullptr;
      handle = nullptr;
    }
  };
  TxnMemo memo_;
};

// Base comparison used by every compare-and-publish: OK, STALE_BASE (older generation) or
// UNKNOWN_SNAPSHOT (future generation, or same generation with another digest).
// `op` and `id` only name the operation in the message.
Status CompareBase(const Snapshot& live, const BaseRef& base, std::string_view op,
                   std::string_view id = "");

}  // namespace kvc::lifecycle

#endif  // KVCONFORM_REFERENCE_LIFECYCLE_KV_OBJECT_KV_OBJECT_H_
