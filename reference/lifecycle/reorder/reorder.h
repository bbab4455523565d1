// Reorder of coupled live-sequence rows (M5.1 0x01 "Fork, Reorder, And Truncate").
//
// A pure reorder applies ONE permutation to rows that couple token state, cache handle, next
// position and sampler state. A repeated parent is selection plus fork, not a reorder. Token and
// sampler state are opaque strings here (their meaning belongs to M3.10); only identity matters.
// Pure functions; thread-safe.
#ifndef KVCONFORM_REFERENCE_LIFECYCLE_REORDER_REORDER_H_
#define KVCONFORM_REFERENCE_LIFECYCLE_REORDER_REORDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/status.h"

namespace kvc::lifecycle {

struct LiveSequenceRow {
  std::string token_state;    // opaque identity of the row's token history
  std::string cache_handle;   // handle id of the row's KV snapshot
  uint64_t next_position = 0; // the row's next cache position
  std::string sampler_state;  // opaque identity of the row's sampler state
  friend bool operator==(const LiveSequenceRow&, const LiveSequenceRow&) = default;
};

// LIFECYCLE_REORDER_NOT_BIJECTIVE unless parent_index is a permutation of [0, n).
Status CheckPermutation(const std::vector<uint64_t>& parent_index, size_t n);

// rows_after[i] = rows[parent_index[i]].
StatusOr<std::vector<LiveSequenceRow>> Reorder(const std::vector<LiveSequenceRow>& rows,
                                               const std::vector<uint64_t>& parent_index);

// Checks that `after` is `before` moved by exactly `parent_index`, field by field; a field that
// moved differently is LIFECYCLE_REORDER_SPLIT_STATE naming the row and field. Two rows of
// `before` on one cache handle are LIFECYCLE_REORDER_NOT_BIJECTIVE.
Status CheckCoupledReorder(const std::vector<LiveSequenceRow>& before,
                           const std::vector<uint64_t>& parent_index,
                           const std::vector<LiveSequenceRow>& after);

}  // namespace kvc::lifecycle

#endif  // KVCONFORM_REFERENCE_LIFECYCLE_REORDER_REORDER_H_
