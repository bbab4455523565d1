// Request-level vs per-layer streamed transfer schedules (M5.6 0x07, 0x08I) and the
// exposed-stall term of the transfer trace (0x0F).
//
// For layer l with K/V-ready time r_l and transfer duration x_l on one serialized engine:
//   per-layer:      v_l = max(r_l, v_(l-1)) + x_l,  v_(-1) = 0
//   request-level:  C_request = r_(L-1) + sum_l x_l
// exposed_after_prefill = v_(L-1) - r_(L-1) (the transfer tail left after the last layer is
// computed); hidden = sum_l x_l - exposed_after_prefill. Pure functions, overflow-checked.
#ifndef KVCONFORM_REFERENCE_HANDOFF_SCHEDULE_H_
#define KVCONFORM_REFERENCE_HANDOFF_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "reference/base/status.h"

namespace kvc::handoff {

struct LayerStreamSchedule {
  std::vector<uint64_t> per_layer_visible;  // v_l
  uint64_t per_layer_complete = 0;          // v_(L-1)
  uint64_t request_level_complete = 0;      // C_request
  uint64_t total_transfer = 0;              // sum x_l
  uint64_t exposed_after_prefill = 0;       // v_(L-1) - r_(L-1)
  uint64_t hidden_transfer = 0;             // sum x_l - exposed_after_prefill
};

// `ready` must be non-decreasing (layers finish in order) and as long as `transfer` (>= 1
// layer); otherwise HANDOFF_SCHEDULE_INVALID. Overflow -> INPUT_ARITHMETIC_OVERFLOW.
StatusOr<LayerStreamSchedule> ComputeLayerStream(const std::vector<uint64_t>& ready,
                                                 const std::vector<uint64_t>& transfer);

// T_exposed = max(0, t_publish_end - t_decode_ready).
inline uint64_t ExposedStall(uint64_t publish_end, uint64_t decode_ready) {
  return publish_end > decode_ready ? publish_end - decode_ready : 0;
}

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_SCHEDULE_H_
