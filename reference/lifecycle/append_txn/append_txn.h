// Append transactions OPEN -> PREPARED -> PUBLISHED | ABORTED | REJECTED (M5.1 0x01).
//
// A transaction stages the half-open interval [T_g, T_g + delta) for every cache-producing
// layer; it is PREPARED exactly when every layer has complete K and V rows for exactly that
// interval. Pending rows are reachable only through the transaction, never through a snapshot.
// The position/mask binding of "Cache Position, Attention Mask, And Append Ordering" is part of
// the request and is checked against the interval when the transaction begins.
// Values only; thread safety: none (owned by KvObject).
#ifndef KVCONFORM_REFERENCE_LIFECYCLE_APPEND_TXN_APPEND_TXN_H_
#define KVCONFORM_REFERENCE_LIFECYCLE_APPEND_TXN_APPEND_TXN_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc::lifecycle {

enum class TxnState : uint8_t { kOpen, kPrepared, kPublished, kAborted, kRejected };
std::string_view TxnStateName(TxnState s);

// Half-open [start, start + count).
struct Interval {
  uint64_t start = 0;
  uint64_t count = 0;
  friend bool operator==(const Interval&, const Interval&) = default;
};

// How the model call addressed the rows it produces (checked against the interval).
struct PositionBinding {
  uint64_t cache_position_start = 0;  // first absolute slot; positions are contiguous
  uint64_t cache_position_count = 0;  // number of new positions (T_new)
  uint64_t mask_key_length = 0;       // must be T_past + T_new
  std::string position_stage;         // key stage stored, e.g. "post_rope"; must match the ABI
  friend bool operator==(const PositionBinding&, const PositionBinding&) = default;
};

// Everything that identifies one append operation (its retry fingerprint covers all but
// the binding, which is checked, not identified).
struct BeginAppendRequest {
  std::string txn_id;
  std::string idempotency_key;
  std::string handle_id;
  BaseRef base;                 // the snapshot the call read: (generation, digest)
  std::string cache_abi;        // must equal the object's ABI id
  Interval interval;            // [T_g, T_g + delta)
  PositionBinding binding;
  // A repair append (M5.1 0x03/0x05): closes the output frontier of a FINISHED handle for reuse.
  // Only repair appends are legal on FINISHED handles; finish stays in force.
  bool repair = false;
  friend bool operator==(const BeginAppendRequest&, const BeginAppendRequest&) = default;
};

// A BeginAppendRequest whose strings are views, valid for the call that takes it: what
// KvObject::BeginAppend reads (the trace checker begins every traced append with views of the
// trace line, so no id is copied to ask). ViewOf(r) views request `r`.
struct BeginAppendView {
  std::string_view txn_id;
  std::string_view idempotency_key;
  std::string_view handle_id;
  BaseRef base;
  std::string_view cache_abi;
  Interval interval;
  // PositionBinding's members.
  uint64_t cache_position_start = 0;
  uint64_t cache_position_count = 0;
  uint64_t mask_key_length = 0;
  std::string_view position_stage;
  bool repair = false;
};
BeginAppendView ViewOf(const BeginAppendRequest& r);

// The seed's operation fingerprint: hash(txn_id, idempotency_key, handle_id, base generation,
// base snapshot, cache ABI, append interval). OperationFingerprint(ViewOf(r)) ==
// OperationFingerprint(r).
uint64_t OperationFingerprint(const BeginAppendRequest& r);
uint64_t OperationFingerprint(const BeginAppendView& r);

// What a transaction keeps of its BeginAppendRequest: the identity a retry, a receipt and the
// publication need. The request's cache_abi and binding are not kept: BeginAppend admits a
// request only when cache_abi is the object's ABI id and the binding is exactly
// {interval.start, interval.count, interval.start + interval.count, the ABI's position stage},
// so for every recorded transaction they follow from `interval` and the object's ABI
// (KvObject::RequestOf rebuilds the whole request).
struct AppendIdentity {
  base::IdString txn_id;
  base::IdString idempotency_key;
  base::IdString handle_id;
  BaseRef base;
  Interval interval;
  bool repair = false;
  friend bool operator==(const AppendIdentity&, const AppendIdentity&) = default;
};

// The operation fingerprint of the request whose identity is `id` and whose cache ABI id is
// `cache_abi`: OperationFingerprint(r) for every request r with those fields.
uint64_t OperationFingerprint(const AppendIdentity& id, std::string_view cache_abi);

// Per-layer staging progress. K and V are tracked separately: a layer is complete only when
// both hold the transaction's interval.
struct LayerStage {
  bool k = false;
  bool v = false;
  bool complete() const { return k && v; }
  friend bool operator==(const LayerStage&, const LayerStage&) = default;
};

// One staged contribution: K and/or V rows of one layer for an interval.
struct StageLayerRequest {
  std::string txn_id;
  uint32_t layer = 0;
  Interval interval;
  bool k = true;
  bool v = true;
  std::string cache_abi;  // empty = the transaction's ABI
};

// The staging progress of every cache-producing layer of one transaction: a K bit and a V bit
// per layer, held inline (no allocation) for up to 64 layers; beyond that in chunks of
// kChunkLayers layers allocated when a layer of the chunk is first staged, so that memory
// follows the rows staged, not the ABI's layer count (a header may declare 2^20 layers).
// A value; a layer index must be < size().
class LayerStages {
 public:
  static constexpr size_t kChunkLayers = 512;

  LayerStages() = default;
  explicit LayerStages(uint32_t num_layers) : n_(num_layers) {}

  size_t size() const { return n_; }
  // Defined inline (every staged layer of every traced append reads and adds one).
  LayerStage operator[](size_t layer) const {
    if (layer < 64) return {((k_ >> layer) & 1) != 0, ((v_ >> layer) & 1) != 0};
    auto it = more_.find(static_cast<uint32_t>((layer - 64) / kChunkLayers));
    if (it == more_.end()) return {};
    const size_t b = (layer - 64) % kChunkLayers;
    return {((it->second[b / 64] >> b % 64) & 1) != 0,
            ((it->second[kChunkWords + b / 64] >> b % 64) & 1) != 0};
  }
  // Adds K and/or V rows of `layer` (bits already set stay set).
  void Add(size_t layer, bool k, bool v) {
    uint64_t* kw = &k_;
    uint64_t* vw = &v_;
    size_t b = layer;
    if (layer >= 64) {
      Chunk& c = more_[static_cast<uint32_t>((layer - 64) / kChunkLayers)];  // zeros when new
      b = (layer - 64) % kChunkLayers;
      kw = &c[b / 64];
      vw = &c[kChunkWords + b / 64];
      b %= 64;
    }
    const uint64_t bit = uint64_t{1} << b;
    const bool was_complete = (*kw & bit) && (*vw & bit);
    if (k) *kw |= bit;
    if (v) *vw |= bit;
    if (!was_complete && (*kw & bit) && (*vw & bit)) ++complete_;
  }
  // Every layer complete (false without layers).
  bool all_complete() const { return n_ > 0 && complete_ == n_; }
  // Layers holding both K and V rows.
  size_t complete_count() const { return complete_; }
  // Chunks of layers >= 64 allocated so far (memory accounting, for tests).
  size_t allocated_chunks() const { return more_.size(); }

  // Iteration over the layers in order, by value (for (LayerStage l : stages)).
  class Iterator {
   public:
    Iterator(const LayerStages* s, size_t i) : s_(s), i_(i) {}
    LayerStage operator*() const { return (*s_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    const LayerStages* s_;
    size_t i_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, n_); }

  // Equal bits (a chunk exists only once one of its bits is set, so equal bits are equal maps).
  friend bool operator==(const LayerStages&, const LayerStages&) = default;

 private:
  static constexpr size_t kChunkWords = kChunkLayers / 64;
  // Words [0, kChunkWords) hold the K bits of the chunk's layers, the next kChunkWords the V
  // bits; layer 64 + c * kChunkLayers + b is bit b % 64 of word b / 64 of chunk c.
  using Chunk = std::array<uint64_t, 2 * kChunkWords>;

  uint32_t n_ = 0;
  uint32_t complete_ = 0;   // layers holding both K and V
  uint64_t k_ = 0, v_ = 0;  // bit l: layer l < 64
  std::map<uint32_t, Chunk> more_;  // layers >= 64 by chunk; empty for up to 64 layers
};

// The operation fingerprint is not stored: it is a function of `request` and the owning
// object's cache ABI id (KvObject::FingerprintOf), computed when a retry or a receipt needs it
// (the trace checker's hot path never does).
struct AppendTxn {
  AppendIdentity request;  // the identifying part of the BeginAppendRequest that opened it
  TxnState state = TxnState::kOpen;
  // Bookkeeping, not state (operator== ignores it): KvObject::ForgetFinalTxnsOf passed over it
  // while it was open (HandleRecord::kept_open_txn_ids lists it), closed since or not.
  bool kept_past_forget = false;
  // The handle generation (0x07 incarnation) of the handle it was opened on: a released and
  // re-allocated handle id is another incarnation, which this transaction never stages into.
  uint64_t incarnation = 0;
  // One entry per cache-producing layer while OPEN/PREPARED; a final transaction's staging is
  // no longer state and is dropped (LayerStages(), size 0): nothing stages into it again.
  LayerStages layers;
  // PUBLISHED: the snapshot the publication created (with `request` and the fingerprint it is
  // the whole PublishReceipt a retry gets back). Default-constructed otherwise.
  Snapshot result;

  bool prepared() const { return layers.all_complete(); }  // every layer complete
  friend bool operator==(const AppendTxn& a, const AppendTxn& b) {
    return a.request == b.request && a.state == b.state && a.incarnation == b.incarnation &&
           a.layers == b.layers && a.result == b.result;
  }
};

// The durable receipt of a published append; a retry with the same fingerprint gets it back.
struct PublishReceipt {
  std::string txn_id;
  std::string idempotency_key;
  std::string handle_id;
  uint64_t fingerprint = 0;
  BaseRef base;
  Interval interval;
  Snapshot result;       // the snapshot this publication created
  bool replayed = false; // true when returned for a retry (generation not advanced again)
  friend bool operator==(const PublishReceipt&, const PublishReceipt&) = default;
};

// The receipt of a PUBLISHED transaction of an object whose cache ABI id is `cache_abi`: its
// identity, fingerprint and the snapshot it created.
PublishReceipt ReceiptOf(const AppendTxn& t, std::string_view cache_abi, bool replayed);

}  // namespace kvc::lifecycle

#endif  // KVCONFORM_REFERENCE_LIFECYCLE_APPEND_TXN_APPEND_TXN_H_
