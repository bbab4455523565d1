// The cache/no-cache saved-work ledgers of M5.1 0x03.
//
// rows_no_cache = G*P + G(G-1)/2, rows_cache = P + G - 1; pairs_no_cache = sum over the
// G growing prefixes of S(S+1)/2, pairs_cache = P(P+1)/2 + sum_{j=1..G-1} (P + j).
// Exact integer arithmetic (128-bit intermediates); OutOfRange when a result needs
// more than 64 bits.
#ifndef KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_H_
#define KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_H_

#include <cstdint>

#include "reference/base/status.h"

namespace kvc {

struct SavedWork {
  uint64_t prompt = 0;   // P
  uint64_t outputs = 0;  // G
  uint64_t rows_no_cache = 0;
  uint64_t rows_cache = 0;
  uint64_t rows_saved = 0;
  double row_reduction = 0;  // rows_no_cache / rows_cache
  uint64_t pairs_no_cache = 0;
  uint64_t pairs_cache = 0;
  uint64_t pairs_saved = 0;
  double pair_reduction = 0;  // pairs_no_cache / pairs_cache
};

// Requires P >= 1 and G >= 1.
StatusOr<SavedWork> ComputeSavedWork(uint64_t prompt, uint64_t outputs);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_H_
