// The immutable request/cache manifest of M5.1 0x01 and its oracle, validate_manifest.
//
// Document kind "kvconform.request_cache_manifest/1" (docs/manifest-format.md). The
// three identities are derived exactly as the seed derives them:
//   prompt_token_ids_sha256 = SHA256(JCS(prompt_token_ids))
//   cache_abi_sha256        = SHA256(JCS({artifact_identity, cache_schema, position_contract}))
//   prefix_identity_sha256  = SHA256(JCS({cache_abi_sha256, prompt_token_ids_sha256,
//                                         input_side_data_sha256, cache_isolation_salt_sha256}))
// request_id is deliberately not in the prefix identity; adapter and side-input identity are.
// snapshot_sha256 binds the handle, lineage, declared ABI and the semantic state snapshot
// (residency and reclaimable bytes are residency-plane observations and are excluded).
//
// Validation order and gating (so a one-field mutation raises its own code only):
//   1 schema (INPUT_*) - stop if any;  2 identity well-formedness (malformed digests, zero
//   extents, dtype widths, shard/head geometry);  3 digests, each recomputed from the
//   *declared* digests it depends on and skipped when its inputs failed step 2;
//   4 semantic state predicates;  5 residency predicates;  6 the analytical ledger,
//   recomputed only when the schema (2) and state (4) passed. The snapshot digest is
//   checked only when the state predicates passed: a digest over an impossible state
//   proves nothing, and the root cause is the predicate.
#ifndef KVCONFORM_REFERENCE_MANIFEST_MANIFEST_H_
#define KVCONFORM_REFERENCE_MANIFEST_MANIFEST_H_

#include <string>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kManifestKind = "kvconform.request_cache_manifest/1";

// Projections and digests (inputs are the manifest's own sub-objects).
StatusOr<std::string> PromptTokenIdsSha256(const Json& prompt_token_ids);
StatusOr<std::string> CacheAbiSha256(const Json& artifact_identity, const Json& cache_schema,
                                     const Json& position_contract);
StatusOr<std::string> PrefixIdentitySha256(const std::string& cache_abi_sha256,
                                           const std::string& prompt_token_ids_sha256,
                                           const std::string& input_side_data_sha256,
                                           const std::string& cache_isolation_salt_sha256);
StatusOr<std::string> SnapshotSha256(const Json& manifest);

// Every violation of the manifest contract, in check order (see the file comment).
Violations ValidateManifest(const Json& manifest);

// Recomputes and writes every derived field (the three identity digests, snapshot
// digest, prompt count and analytical ledger) into `manifest`. Used by
// `kvconform manifest seal` to regenerate fixtures; fails on schema errors.
Status SealManifest(Json& manifest);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_MANIFEST_MANIFEST_H_
