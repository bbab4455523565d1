// Document kind "kvconform.runtime_release/1": the runtime release manifest of M5.6
// 0x0FA-0x0FH (deployment identity with its frozen source pins, the source audit: pins,
// audited paths with Git blob identities and claim/evidence records; signed capability and the
// transfer requests it must authorize, release transitions with promotion gates, and the
// rollback drill).
//
// Checks, in order: schema; the source audit (source_audit.h; its findings gate the rest:
// a deployment manifest that does not verify promotes nothing); every transfer request through AuthorizeTransfer (one shared
// nonce store, so a replayed nonce is denied); the release transitions through
// ReleaseMachine (stop at the first illegal one); when the release ends ROLLED_BACK, the
// rollback steps through RollbackMachine (exact order, then the rollback gate), which must
// complete. Capabilities verify against the synthetic test keyring only (SyntheticTestKey).
// Not covered here (left): the sensitivity cell and observability names of the seed's full
// release oracle, and recomputing blob identities from repository bytes.
#ifndef KVCONFORM_REFERENCE_HANDOFF_RUNTIME_RELEASE_H_
#define KVCONFORM_REFERENCE_HANDOFF_RUNTIME_RELEASE_H_

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::handoff {

inline constexpr const char* kRuntimeReleaseKind = "kvconform.runtime_release/1";

Violations ValidateRuntimeRelease(const Json& doc);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_RUNTIME_RELEASE_H_
