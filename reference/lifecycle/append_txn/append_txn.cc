// Transaction state names, the operation fingerprint, receipts and the prepared predicate.
#include "reference/lifecycle/append_txn/append_txn.h"

namespace kvc::lifecycle {

std::string_view TxnStateName(TxnState s) {
  switch (s) {
    case TxnState::kOpen: return "OPEN";
    case TxnState::kPrepared: return "PREPARED";
    case TxnState::kPublished: return "PUBLISHED";
    case TxnState::kAborted: return "ABORTED";
    case TxnState::kRejected: return "REJECTED";
  }
  return "?";
}

namespace {

// The one encoding of the fingerprint: each string as its length (8 bytes) then its bytes, then
// base generation, base digest, interval start and count (8 bytes each, little-endian), FNV-1a.
uint64_t Fingerprint(std::string_view txn_id, std::string_view key, std::string_view handle_id,
                     std::string_view cache_abi, const BaseRef& base, const Interval& interval) {
  uint64_t h = kFnvOffset;
  for (std::string_view s : {txn_id, key, handle_id, cache_abi}) {
    h = Fnv1a64U64(s.size(), h);
    h = Fnv1a64(s, h);
  }
  h = Fnv1a64U64(base.generation, h);
  h = Fnv1a64U64(base.digest, h);
  h = Fnv1a64U64(interval.start, h);
  return Fnv1a64U64(interval.count, h);
}

}  // namespace

BeginAppendView ViewOf(const BeginAppendRequest& r) {
  BeginAppendView v;
  v.txn_id = r.txn_id;
  v.idempotency_key = r.idempotency_key;
  v.handle_id = r.handle_id;
  v.base = r.base;
  v.cache_abi = r.cache_abi;
  v.interval = r.interval;
  v.cache_position_start = r.binding.cache_position_start;
  v.cache_position_count = r.binding.cache_position_count;
  v.mask_key_length = r.binding.mask_key_length;
  v.position_stage = r.binding.position_stage;
  v.repair = r.repair;
  return v;
}

uint64_t OperationFingerprint(const BeginAppendRequest& r) {
  return Fingerprint(r.txn_id, r.idempotency_key, r.handle_id, r.cache_abi, r.base, r.interval);
}

uint64_t OperationFingerprint(const BeginAppendView& r) {
  return Fingerprint(r.txn_id, r.idempotency_key, r.handle_id, r.cache_abi, r.base, r.interval);
}

uint64_t OperationFingerprint(const AppendIdentity& id, std::string_view cache_abi) {
  return Fingerprint(id.txn_id, id.idempotency_key, id.handle_id, cache_abi, id.base,
                     id.interval);
}

PublishReceipt ReceiptOf(const AppendTxn& t, std::string_view cache_abi, bool replayed) {
  PublishReceipt r;
  r.txn_id = t.request.txn_id;
  r.idempotency_key = t.request.idempotency_key;
  r.handle_id = t.request.handle_id;
  r.fingerprint = OperationFingerprint(t.request, cache_abi);
  r.base = t.request.base;
  r.interval = t.request.interval;
  r.result = t.result;
  r.replayed = replayed;
  return r;
}

}  // namespace kvc::lifecycle
