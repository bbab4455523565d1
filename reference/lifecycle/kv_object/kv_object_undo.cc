// KvObject::Save / Restore: the undo of one operation (see kv_object.h).
#include "reference/lifecycle/kv_object/kv_object.h"

namespace kvc::lifecycle {

KvObject::Saved KvObject::Save(const std::vector<std::string_view>& handle_ids,
                               const std::vector<std::string_view>& txn_ids) const {
  Saved saved;
  auto save_txn = [&](std::string_view id) {
    for (const auto& [saved_id, unused] : saved.txns)
      if (saved_id == id) return;
    auto it = txns_.find(id);
    saved.txns.emplace_back(std::string(id), it == txns_.end()
                                                 ? std::nullopt
                                                 : std::optional<AppendTxn>(it->second));
  };
  auto save_handle = [&](std::string_view id) {
    for (const auto& [saved_id, unused] : saved.handles)
      if (saved_id == id) return;
    auto it = handles_.find(id);
    if (it == handles_.end()) {
      saved.handles.emplace_back(std::string(id), std::nullopt);
      return;
    }
    saved.handles.emplace_back(std::string(id), it->second);
    // Final transactions never change again; an operation on the handle changes only its open
    // ones (CancelRequest aborts them) besides the transaction it names.
    for (const std::string& txn : it->second.open_txns) save_txn(txn);
  };
  for (std::string_view id : handle_ids) save_handle(id);
  for (std::string_view id : txn_ids) {
    save_txn(id);
    if (auto it = txns_.find(id); it != txns_.end()) save_handle(it->second.request.handle_id);
  }
  return saved;
}

void KvObject::Restore(Saved saved) {
  for (auto& [id, record] : saved.handles) {
    if (record)
      handles_.insert_or_assign(id, std::move(*record));
    else if (auto it = handles_.find(id); it != handles_.end()) {
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
