// The saved-work fixture oracle of M5.1 0x03 "Executable Saved-Work Contract".
//
// Document kind "kvconform.saved_work/1" (docs/saved-work-format.md) with two parts:
//  * "work_ledger": P, G and the declared row and causal-pair ledgers (no-cache, cache,
//    saved, reduction to two decimals), recomputed with ComputeSavedWork. Root-cause codes
//    first: a ledger that is exactly the one of another P (or G) is one
//    SAVED_WORK_ROW_SUM_DRIFT at that declared input; a cached row count below P + G - 1
//    invents a first-prefill saving and cached pairs below the closed form drop historical
//    K/V reads, while the no-cache sum holds (else they drift with it); a reduction that
//    rounds drifted declared figures follows them; anything else is drift.
//  * "frontier": the P=4, G=3 ordinary stop trace, the optional final-token repair and the
//    speculative correction handoff (see ValidateSavedWorkFrontier).
//
// Gating: schema (INPUT_*) stops; then the work ledger and the frontier part are checked
// independently (each reports its root-cause codes).
#ifndef KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FIXTURE_H_
#define KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FIXTURE_H_

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kSavedWorkKind = "kvconform.saved_work/1";

// Every violation of the saved-work contract, in check order.
Violations ValidateSavedWorkFixture(const Json& doc);

// Checks the declared work ledger at `pointer` (already schema-checked by the caller or not:
// schema problems are reported as INPUT_*).
void ValidateWorkLedger(const Json& ledger, const std::string& pointer, Violations* out);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FIXTURE_H_
