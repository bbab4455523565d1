// Coupled reorder: one permutation over token, cache, position and sampler state.
#include "reference/lifecycle/reorder/reorder.h"

#include <string_view>
#include <unordered_map>

namespace kvc::lifecycle {

Status CheckPermutation(const std::vector<uint64_t>& parent_index, size_t n) {
  if (parent_index.size() != n)
    return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE,
                           "reorder index has " + std::to_string(parent_index.size()) +
                               " entries for " + std::to_string(n) + " rows");
  std::vector<bool> seen(n, false);
  for (size_t i = 0; i < n; ++i) {
    uint64_t p = parent_index[i];
    if (p >= n)
      return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE,
                             "reorder index[" + std::to_string(i) + "] = " + std::to_string(p) +
                                 " is not a row");
    if (seen[p])
      return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE,
                             "reorder selects parent " + std::to_string(p) +
                                 " twice; a repeated parent is selection plus fork, not reorder");
    seen[p] = true;
  }
  return Status::Ok();
}

StatusOr<std::vector<LiveSequenceRow>> Reorder(const std::vector<LiveSequenceRow>& rows,
                                               const std::vector<uint64_t>& parent_index) {
  KVC_RETURN_IF_ERROR(CheckPermutation(parent_index, rows.size()));
  std::vector<LiveSequenceRow> out;
  out.reserve(rows.size());
  for (uint64_t p : parent_index) out.push_back(rows[p]);
  return out;
}

Status CheckCoupledReorder(const std::vector<LiveSequenceRow>& before,
                           const std::vector<uint64_t>& parent_index,
                           const std::vector<LiveSequenceRow>& after) {
  KVC_RETURN_IF_ERROR(CheckPermutation(parent_index, before.size()));
  // Each row is one live sequence with its own handle: two rows on one handle would make the
  // permutation move one sequence twice (a selection plus fork without the fork).
  std::unordered_map<std::string_view, size_t> row_of;
  for (size_t i = 0; i < before.size(); ++i)
    if (auto [it, fresh] = row_of.emplace(before[i].cache_handle, i); !fresh)
      return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE,
                             "reorder rows " + std::to_string(it->second) + " and " +
                                 std::to_string(i) + " hold the same cache handle \"" +
                                 before[i].cache_handle +
                                 "\"; each row is one live sequence with its own handle");
  if (after.size() != before.size())
    return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE,
                           "reorder produced " + std::to_string(after.size()) + " rows from " +
                               std::to_string(before.size()));
  for (size_t i = 0; i < after.size(); ++i) {
    const LiveSequenceRow& want = before[parent_index[i]];
    const LiveSequenceRow& got = after[i];
    const char* field = got.token_state != want.token_state ? "token_state"
                        : got.cache_handle != want.cache_handle
                            ? "cache_handle (a trace row's request_id)"
                        : got.next_position != want.next_position ? "next_position"
                        : got.sampler_state != want.sampler_state ? "sampler_state"
                                                                  : nullptr;
    if (!field) continue;
    // The whole of another parent's row: its state moved together, but not where parent_index
    // says (a message of one split field would name a split that did not happen).
    for (size_t q = 0; q < before.size(); ++q)
      if (before[q] == got)
        return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_SPLIT_STATE,
                               "reorder row " + std::to_string(i) + " holds parent " +
                                   std::to_string(q) + "'s whole row, but parent_index names " +
                                   std::to_string(parent_index[i]) +
                                   " (rows_after and parent_index disagree)");
    return ViolationStatus(ErrorCode::LIFECYCLE_REORDER_SPLIT_STATE,
                           "reorder row " + std::to_string(i) + ": " + field +
                               " did not move with the row's other state (parent " +
                               std::to_string(parent_index[i]) + ")");
  }
  return Status::Ok();
}

}  // namespace kvc::lifecycle
