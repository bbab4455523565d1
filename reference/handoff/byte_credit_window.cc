// ByteCreditWindow and DestinationBlockPool bookkeeping (overflow-checked).
#include "reference/handoff/byte_credit_window.h"

#include <string>

#include "reference/base/checked_math.h"

namespace kvc::handoff {

Status ByteCreditWindow::Acquire(uint64_t bytes) {
  if (bytes == 0) return InvalidArgument("a credit acquisition must be for a positive byte count");
  auto next = CheckedAdd(in_flight_, bytes);
  if (!next || *next > capacity_)
    return ViolationStatus(ErrorCode::HANDOFF_CREDIT_WINDOW_EXCEEDED,
                           "acquiring " + std::to_string(bytes) + " B with " +
                               std::to_string(in_flight_) + " B in flight exceeds the " +
                               std::to_string(capacity_) + " B credit window");
  in_flight_ = *next;
  if (in_flight_ > high_water_) high_water_ = in_flight_;
  return Status();
}

Status ByteCreditWindow::Release(uint64_t bytes) {
  if (bytes > in_flight_)
    return Internal("releasing " + std::to_string(bytes) + " B of credit with only " +
                    std::to_string(in_flight_) + " B in flight");
  in_flight_ -= bytes;
  return Status();
}

Status DestinationBlockPool::Reserve(uint64_t blocks) {
  if (blocks > free_blocks())
    return ViolationStatus(ErrorCode::HANDOFF_RESERVATION_TOO_SMALL,
                           "reserving " + std::to_string(blocks) +
                               " destination blocks with only " + std::to_string(free_blocks()) +
                               " free");
  unpublished_ += blocks;
  return Status();
}

Status DestinationBlockPool::ReleaseUnpublished(uint64_t blocks) {
  if (blocks > unpublished_)
    return Internal("releasing " + std::to_string(blocks) + " unpublished blocks with only " +
                    std::to_string(unpublished_) + " held");
  unpublished_ -= blocks;
  return Status();
}

Status DestinationBlockPool::ReleaseDecodeOwned(uint64_t blocks) {
  if (blocks > decode_owned_)
    return Internal("releasing " + std::to_string(blocks) + " decode-owned blocks with only " +
                    std::to_string(decode_owned_) + " held");
  decode_owned_ -= blocks;
  return Status();
}

Status DestinationBlockPool::PublishToDecode(uint64_t blocks) {
  if (blocks > unpublished_)
    return Internal("publishing " + std::to_string(blocks) + " blocks with only " +
                    std::to_string(unpublished_) + " unpublished");
  unpublished_ -= blocks;
  decode_owned_ += blocks;
  return Status();
}

}  // namespace kvc::handoff
