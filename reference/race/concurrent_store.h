// A thread-safe reference store of versioned all-layer KV handles: many handles, many threads.
//
// The store holds one lineage object per handle lineage (a root and its fork descendants): the
// sequential lifecycle::KvObject (every rule), the beam-group rows of its forks, and the
// physical per-layer row counts of each handle (the "payload seam" of docs/lifecycle.md: rows
// staged under a transaction move into the handle's layers when Publish() returns a receipt).
// One mutex per lineage makes each operation one atomic step; for an append that step is the
// compare-and-publish inside KvObject::Publish together with making every layer's rows visible,
// which is the seed's linearization point. Readers therefore see S_g or S_(g+1), never a mix.
// Operations on different lineages never share state and run in parallel.
//
// A Mutant (mutants.h) deliberately breaks one rule; Mutant::kNone is the correct store.
// Thread safety: Execute() is safe from any number of threads. The pause hook is called from
// the calling thread at points where interleavings matter (before taking a lineage lock, and
// inside the windows a mutant opens); it must be thread-safe and must not call the store.
#ifndef KVCONFORM_REFERENCE_RACE_CONCURRENT_STORE_H_
#define KVCONFORM_REFERENCE_RACE_CONCURRENT_STORE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/lifecycle/reorder/reorder.h"
#include "reference/race/kv_model.h"
#include "reference/race/kv_ops.h"
#include "reference/race/mutants.h"

namespace kvc::race {

class ConcurrentStore {
 public:
  ConcurrentStore(lifecycle::CacheAbi abi, Mutant mutant = Mutant::kNone,
                  std::function<void()> pause = {});
  ConcurrentStore(const ConcurrentStore&) = delete;
  ConcurrentStore& operator=(const ConcurrentStore&) = delete;

  // Runs one operation on lineage `lineage` atomically (outcome kOk or kError, never unknown).
  OpResult Execute(const std::string& lineage, const KvOp& op);

  const lifecycle::CacheAbi& abi() const { return abi_; }
  Mutant mutant() const { return mutant_; }

 private:
  struct Lineage {
    explicit Lineage(lifecycle::CacheAbi abi) : st(std::move(abi)) {}
    std::mutex mu;
    // All below guarded by mu. st is the sequential lineage (KvObject + beam groups).
    LineageState st;
    std::unordered_map<std::string, std::vector<uint64_t>> layers;  // handle -> rows per layer
    std::unordered_map<std::string, lifecycle::Snapshot> shadow;     // kReleaseLeavesReadable
    uint64_t internal_txns = 0;                                      // mutant helper txn ids
    // Physical slots (addresses): a handle occupies the lowest free slot from allocate/fork
    // until release; a released slot is reused by the next handle. slot_of keeps the slot of
    // released handles too, so a stale transaction still knows the address it was staged for.
    std::vector<std::string> slots;                      // slot -> occupant ("" when free)
    std::unordered_map<std::string, size_t> slot_of;     // handle -> its slot
  };

  Lineage& Get(const std::string& lineage);
  void Pause() const {
    if (pause_) pause_();
  }
  // Each runs with l.mu held (taken by Execute) unless documented otherwise.
  OpResult Read(Lineage& l, const KvOp& op);
  OpResult Publish(Lineage& l, std::unique_lock<std::mutex>& lock, const KvOp& op);
  OpResult Reorder(Lineage& l, const KvOp& op);
  OpResult Truncate(Lineage& l, const KvOp& op);
  // Mutant helper: appends `count` rows to `handle` through a fresh internal transaction.
  StatusOr<lifecycle::PublishReceipt> InternalAppend(Lineage& l, const std::string& handle,
                                                     uint64_t count);
  void SetLayers(Lineage& l, const std::string& handle, uint64_t length);
  void TakeSlot(Lineage& l, const std::string& handle);
  void FreeSlot(Lineage& l, const std::string& handle);

  const lifecycle::CacheAbi abi_;
  const Mutant mutant_;
  const std::function<void()> pause_;
  std::mutex map_mu_;
  std::unordered_map<std::string, std::unique_ptr<Lineage>> lineages_;  // guarded by map_mu_
};

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_CONCURRENT_STORE_H_
