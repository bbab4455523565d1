// Physical K/V row storage for one request, behind one interface with two layouts.
//
// Logical model (M5.1 0x01): for every layer l and position p the storage holds a post-RoPE
// key row and a value row, each [H_kv * d_h] fp32. Positions [0, committed_length()) are
// the published snapshot; [committed_length(), committed_length() + staged_count()) are the
// rows of the one open append (written by the current model call, layer by layer), usable by
// the current call only. Commit() makes the staged rows part of the prefix, Abort() drops
// them. The storage does not decide when to commit: the engine calls Commit() only after the
// lifecycle object (reference/lifecycle/) has published the append transaction.
//
// Layouts:
//   ContiguousKvStorage: per layer one growable [capacity, H_kv*d_h] K and V array.
//   PagedKvStorage: fixed-size blocks of `block_size` positions (each block holds every
//     layer's K and V rows for its positions) and a block table; Fork() shares the parent's
//     blocks (reference counted), and the first write into a shared block copies it
//     (copy-on-write at the divergence).
// Ownership: a storage object owns its rows (paged blocks are shared between forks via
// shared_ptr; a block is freed when its last table drops it). Row pointers stay valid until
// the next Stage/Truncate/Release on the same object. Thread safety: none; one request
// object is driven by one thread.
#ifndef KVCONFORM_REFERENCE_MODEL_KV_STORAGE_KV_STORAGE_H_
#define KVCONFORM_REFERENCE_MODEL_KV_STORAGE_KV_STORAGE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/base/status.h"

namespace kvc::model {

struct KvShape {
  uint64_t layers = 0;  // L
  uint64_t row = 0;     // H_kv * d_h floats per K (and per V) row
};

class KvStorage {
 public:
  virtual ~KvStorage() = default;
  virtual std::string layout() const = 0;  // "contiguous" | "paged(block_size=N)"
  virtual KvShape shape() const = 0;
  virtual uint64_t committed_length() const = 0;
  virtual uint64_t staged_count() const = 0;

  // Opens the row interval [committed_length(), committed_length() + count) for writing.
  // FailedPrecondition if an interval is already staged or the storage was released.
  virtual Status Stage(uint64_t count) = 0;
  // Writes layer `layer`'s K and V rows ([row] floats each) at staged position `pos`.
  virtual void WriteRow(uint64_t layer, uint64_t pos, const float* k, const float* v) = 0;
  // Row pointers for pos < committed_length() + staged_count().
  virtual const float* KeyRow(uint64_t layer, uint64_t pos) const = 0;
  virtual const float* ValueRow(uint64_t layer, uint64_t pos) const = 0;
  // The staged rows become committed (after the lifecycle publication) / are dropped.
  virtual void Commit() = 0;
  virtual void Abort() = 0;

  // A new storage whose committed prefix is this one's first `prefix` rows (prefix <=
  // committed_length()). Paged: shares blocks; contiguous: copies rows.
  virtual StatusOr<std::unique_ptr<KvStorage>> Fork(uint64_t prefix) const = 0;
  // Drops committed rows at and after `length` (length <= committed_length()).
  virtual Status Truncate(uint64_t length) = 0;
  // Frees every row; later Stage() fails.
  virtual void Release() = 0;
  virtual bool released() const = 0;
  // Bytes of row payload this object references (paged: whole blocks it holds).
  virtual uint64_t ResidentBytes() const = 0;
};

std::unique_ptr<KvStorage> NewContiguousKvStorage(KvShape shape);
// block_size >= 1.
std::unique_ptr<KvStorage> NewPagedKvStorage(KvShape shape, uint64_t block_size);

// Introspection of a paged storage for tests: how many of its blocks are shared with another
// table (use_count > 1). Returns 0 for contiguous storage.
uint64_t SharedBlockCount(const KvStorage& s);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_KV_STORAGE_KV_STORAGE_H_
