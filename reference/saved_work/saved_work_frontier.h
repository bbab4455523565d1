// The frontier part of the saved-work fixture (M5.1 0x03 "Output Progress And Cache
// Progress Are Different Counters", "Boundary Consumed By Speculative Correction").
//
// Replays, through the one frontier implementation (reference/frontier/frontier.h, owned by
// the lifecycle part of the kit), the P=4, G=3 ordinary stop trace, the optional final-token
// repair (one row, logits discarded, no output) and the speculative handoff (base length,
// verification committing only accepted draft rows, the correction token emitted
// unprocessed, then its own target append). Frontier rule breaches carry the frontier's
// FRONTIER_* / SERVICE_PHASE_* codes; declared counters that differ from the replay are
// FRONTIER_CACHE_OVERCOMMIT when they claim more committed rows than were processed, and
// SAVED_WORK_FRONTIER_DRIFT otherwise, one violation per declared state (at its first
// differing member). A stop follows an output selection: a stop before the whole prompt is
// prefilled and an output emitted is the frontier's SERVICE_PHASE_EARLY_FINISH, at the stop.
// Each replay (stop trace + repair, speculative) stops at its first violation, a drifted
// declared state included: later calls are not replayed against it (probe 92: their findings
// followed from the first one). The stop summary (counters, returned tokens, logical length)
// is one declared state like the others: a call left out moves all of it, and the repair
// declared after it would process the wrong token.
#ifndef KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FRONTIER_H_
#define KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FRONTIER_H_

#include <string>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

// Checks the "frontier" object of a kvconform.saved_work/1 document at `pointer`.
void ValidateSavedWorkFrontier(const Json& frontier, const std::string& pointer, Violations* out);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_SAVED_WORK_SAVED_WORK_FRONTIER_H_
