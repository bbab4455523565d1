// The per-layer visibility recurrence and the serialized request-level completion time.
#include "reference/handoff/schedule.h"

#include <algorithm>
#include <string>

#include "reference/base/checked_math.h"

namespace kvc::handoff {

StatusOr<LayerStreamSchedule> ComputeLayerStream(const std::vector<uint64_t>& ready,
                                                 const std::vector<uint64_t>& transfer) {
  if (ready.empty() || ready.size() != transfer.size())
    return ViolationStatus(ErrorCode::HANDOFF_SCHEDULE_INVALID,
                           "need one ready time and one transfer duration per layer (got " +
                               std::to_string(ready.size()) + " and " +
                               std::to_string(transfer.size()) + ")");
  LayerStreamSchedule s;
  uint64_t prev = 0;
  for (size_t l = 0; l < ready.size(); ++l) {
    if (l > 0 && ready[l] < ready[l - 1])
      return ViolationStatus(ErrorCode::HANDOFF_SCHEDULE_INVALID,
                             "ready time of layer " + std::to_string(l) + " (" +
                                 std::to_string(ready[l]) + ") precedes layer " +
                                 std::to_string(l - 1) + " (" + std::to_string(ready[l - 1]) + ")");
    auto v = CheckedAdd(std::max(ready[l], prev), transfer[l]);
    auto total = CheckedAdd(s.total_transfer, transfer[l]);
    if (!v || !total)
      return Status(StatusCode::kOutOfRange, "schedule arithmetic overflows 64 bits",
                    ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
    s.per_layer_visible.push_back(*v);
    s.total_transfer = *total;
    prev = *v;
  }
  auto req = CheckedAdd(ready.back(), s.total_transfer);
  if (!req)
    return Status(StatusCode::kOutOfRange, "schedule arithmetic overflows 64 bits",
                  ErrorCode::INPUT_ARITHMETIC_OVERFLOW);
  s.request_level_complete = *req;
  s.per_layer_complete = prev;
  s.exposed_after_prefill = prev - ready.back();  // prev >= ready.back() + x_(L-1) >= ready.back()
  s.hidden_transfer =
      s.total_transfer - s.exposed_after_prefill;  // exposed <= total (ready non-decreasing)
  return s;
}

}  // namespace kvc::handoff
