// The byte-credit window of M5.6 0x06B and the destination block reservation it is not.
//
// ByteCreditWindow bounds bytes owned by network and destination staging/copy work:
// 0 <= in_flight <= capacity at every instant. A transfer acquires a chunk's bytes before
// sending it and returns them at DEVICE_VISIBLE (never at receive). DestinationBlockPool is
// the separate destination cache reservation: blocks reserved for the complete prompt K/V,
// unpublished until commit, then decode-owned. Neither type is thread-safe; the owner of a
// transfer engine serializes calls (the checker is sequential).
#ifndef KVCONFORM_REFERENCE_HANDOFF_BYTE_CREDIT_WINDOW_H_
#define KVCONFORM_REFERENCE_HANDOFF_BYTE_CREDIT_WINDOW_H_

#include <cstdint>

#include "reference/base/status.h"

namespace kvc::handoff {

class ByteCreditWindow {
 public:
  explicit ByteCreditWindow(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

  uint64_t capacity() const { return capacity_; }
  uint64_t in_flight() const { return in_flight_; }
  // Largest in_flight ever observed.
  uint64_t high_water() const { return high_water_; }

  // Takes `bytes` of credit, or fails with HANDOFF_CREDIT_WINDOW_EXCEEDED and changes
  // nothing. Zero bytes is an InvalidArgument (a chunk always carries payload).
  Status Acquire(uint64_t bytes);
  // Returns `bytes` of credit; Internal when more than is in flight (a bookkeeping bug).
  Status Release(uint64_t bytes);

 private:
  uint64_t capacity_;
  uint64_t in_flight_ = 0;
  uint64_t high_water_ = 0;
};

// Destination blocks: free -> reserved (unpublished) -> decode-owned -> free (the decode side's
// release), or reserved -> free (abort).
class DestinationBlockPool {
 public:
  explicit DestinationBlockPool(uint64_t capacity_blocks) : capacity_(capacity_blocks) {}

  uint64_t capacity() const { return capacity_; }
  uint64_t free_blocks() const { return capacity_ - unpublished_ - decode_owned_; }
  uint64_t unpublished() const { return unpublished_; }
  uint64_t decode_owned() const { return decode_owned_; }

  // Fails with HANDOFF_RESERVATION_TOO_SMALL when fewer than `blocks` are free.
  Status Reserve(uint64_t blocks);
  // Unpublished blocks go back to free (abort / stale publication).
  Status ReleaseUnpublished(uint64_t blocks);
  // Unpublished blocks become decode-owned (publication).
  Status PublishToDecode(uint64_t blocks);
  // Decode-owned blocks go back to free: the decode side's lifecycle released them (M5.6 0x06B:
  // they stay out of the pool "until the ordinary M5.1/M5.3 lifecycle releases them").
  Status ReleaseDecodeOwned(uint64_t blocks);

 private:
  uint64_t capacity_;
  uint64_t unpublished_ = 0;
  uint64_t decode_owned_ = 0;
};

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_BYTE_CREDIT_WINDOW_H_
