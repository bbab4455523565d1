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

uint64_t OperationFingerprint(const BeginAppendRequest& r) {
  uint64_t h = kFnvOffset;
  for (const std::string* s : {&r.txn_id, &r.idempotency_key, &r.handle_id, &r.cache_abi}) {
    h = Fnv1a64U64(s->size(), h);
    h = Fnv1a64(*s, h);
  }
  h = Fnv1a64U64(r.base.generation, h);
  h = Fnv1a64U64(r.base.digest, h);
  h = Fnv1a64U64(r.interval.start, h);
  return Fnv1a64U64(r.interval.count, h);
}

PublishReceipt ReceiptOf(const AppendTxn& t, bool replayed) {
  PublishReceipt r;
  r.txn_id = t.request.txn_id;
  r.idempotency_key = t.request.idempotency_key;
  r.handle_id = t.request.handle_id;
  r.fingerprint = t.fingerprint;
  r.base = t.request.base;
  r.interval = t.request.interval;
  r.result = t.result;
  r.replayed = replayed;
  return r;
}

LayerStages::LayerStages(uint32_t num_layers) : n_(num_layers) {
  if (num_layers > 64) more_.assign(2 * ((num_layers - 64 + 63) / 64), 0);
}

}  // namespace kvc::lifecycle
