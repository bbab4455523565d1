// Document kind "kvconform.handoff_manifest/1": the immutable request, placement and
// handoff manifest of M5.6 0x01A, and its oracle.
//
// The manifest freezes the identity fence (tenant, request, generation, attempt, source and
// destination worker epochs, reservation), the tensor ABI (coordinates, dtype, axis order,
// layout, block size, partition; tensor_abi_sha256 = SHA256(JCS(tensor_abi))), and the three
// block sets over the prompt universe U:
//   C_P = U \ R_P (compute),  S_P = R_P u C_P = U (source state),  X = U \ V_D (transfer).
// Logical transfer bytes follow X, never C_P:
//   M = |X| * B_block * L * 2 * H_kv * d_h * b.
// Padding, descriptors, checksums, retries and framing live in a separate physical ledger
// whose logical_payload_bytes must equal M and whose total is the sum of its terms.
//
// Gating: 1 schema (INPUT_*) stops; 2 digest formats, ABI well-formedness, unknown blocks;
// 3 the ABI digest (only over a well-formed ABI); 4 set algebra (only over known blocks);
// 5 reservation and identity; 6 ledgers (only when ABI, its digest and X are sound).
#ifndef KVCONFORM_REFERENCE_HANDOFF_HANDOFF_MANIFEST_H_
#define KVCONFORM_REFERENCE_HANDOFF_HANDOFF_MANIFEST_H_

#include <string>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::handoff {

inline constexpr const char* kHandoffManifestKind = "kvconform.handoff_manifest/1";

Violations ValidateHandoffManifest(const Json& doc);

// SHA256(JCS(tensor_abi)).
StatusOr<std::string> TensorAbiSha256(const Json& tensor_abi);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_HANDOFF_MANIFEST_H_
