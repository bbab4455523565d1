// KvObject::Save / Restore: the undo of one operation (see kv_object.h).
#include <unordered_set>

#include "reference/lifecycle/kv_object/kv_object.h"

namespace kvc::lifecycle {

KvObject::Saved KvObject::Save(const std::vector<std::string_view>& handle_ids,
                               const std::vector<std::string_view>& txn_ids,
                               bool named_txns_only) const {
  Saved saved;
  // Ids already saved, as views of the caller's arguments or of this object's records (both
  // outlive the call): a fork names thousands of children, a handle holds thousands of open
  // transactions, and each is saved once in O(1).
  std::unordered_set<std::string_view, base::StringHash, base::StringEq> seen_txns, seen_handles;
  auto save_txn = [&](std::string_view id) {
    if (!seen_txns.insert(id).second) return;
    auto it = txns_.find(id);
    saved.txns.emplace_back(std::string(id), it == txns_.end()
                                                 ? std::nullopt
                                                 : std::optional<AppendTxn>(it->second));
  };
  auto save_handle = [&](std::string_view id) {
    if (!seen_handles.insert(id).second) return;
    auto it = handles_.find(id);
    if (it == handles_.end()) {
      saved.handles.push_back({std::string(id), std::nullopt, 0, false, {}});
      return;
    }
    const HandleRecord& h = it->second;
    HandleRecord copy;  // every state field; the derived txn_ids list only by its length
    copy.current = h.current;
    copy.released_length = h.released_length;
    copy.parent_id = h.parent_id;
    SavedHandle entry{std::string(id), std::nullopt, h.txn_ids.size(), false, {}};
    if (named_txns_only) {
      entry.open_txns_omitted = true;
      for (std::string_view txn : txn_ids)
        entry.named_open.emplace_back(std::string(txn), h.open_txns.contains(txn));
    } else {
      copy.open_txns = h.open_txns;
    }
    entry.record = std::move(copy);
    saved.handles.push_back(std::move(entry));
    // Final transactions never change again; an operation on the handle changes only its open
    // ones (CancelRequest aborts them) besides the transaction it names.
    if (!named_txns_only)
      for (std::string_view txn : h.open_txns) save_txn(txn);
  };
  for (std::string_view id : handle_ids) save_handle(id);
  for (std::string_view id : txn_ids) {
    save_txn(id);
    if (auto it = txns_.find(id); it != txns_.end()) save_handle(it->second.request.handle_id);
  }
  return saved;
}

void KvObject::Restore(Saved saved) {
  for (auto& [id, record, listed, open_txns_omitted, named_open] : saved.handles) {
    auto it = handles_.find(id);
    if (record) {
      // The live list holds the saved one plus at most the ids the operation appended (a
      // re-allocation moves the list to the new record whole).
      if (it != handles_.end()) {
        if (open_txns_omitted) {
          // Only the named transactions' membership can have changed (Save's promise).
          record->open_txns = std::move(it->second.open_txns);
          for (const auto& [txn, was_open] : named_open) {
            if (was_open && !record->open_txns.contains(txn)) record->open_txns.Insert(txn);
            if (!was_open) record->open_txns.Erase(txn);
          }
        }
        record->txn_ids = std::move(it->second.txn_ids);
        if (record->txn_ids.size() > listed) record->txn_ids.resize(listed);
        // Derived too; an id the operation listed as closed may name a transaction restored
        // open below, which ForgetTxnsBefore skips.
        record->kept_open_txn_ids = std::move(it->second.kept_open_txn_ids);
        record->closed_kept_txn_ids = std::move(it->second.closed_kept_txn_ids);
      }
      handles_.insert_or_assign(id, std::move(*record));
    } else if (it != handles_.end()) {
      handles_.erase(it);
      ++handle_erasures_;
    }
  }
  for (auto& [id, txn] : saved.txns) {
    if (txn)
      txns_.insert_or_assign(id, std::move(*txn));
    else if (auto it = txns_.find(id); it != txns_.end()) {
      txns_.erase(it);
      ++txn_erasures_;
    }
  }
}

}  // namespace kvc::lifecycle
