// The source audit of a runtime release (M5.6 0x0FA, 0x0FF, 0x0FH): immutable source pins, the
// audited source paths with their Git blob identities, and claim/evidence records whose
// evidence must fit their label.
//
// Rules (each a HANDOFF_* registry code):
//   - a pin names a repository once, with a 40-hex commit and a YYYY-MM-DD observation date
//     (HANDOFF_SOURCE_PIN_INVALID);
//   - an audited path belongs to a declared pin, is a normalized relative path, appears once per
//     pin and carries its 40-hex Git blob identity (HANDOFF_AUDITED_PATH_INVALID): a release tag
//     and commit do not prove that a cited path exists;
//   - a claim cites a source path only when pin, path and blob identity reconcile, i.e. the path
//     is an audited path of that pin (HANDOFF_CLAIM_PATH_UNAUDITED: the seed's 1p1d proxy defect);
//   - a claim's evidence fits its label (HANDOFF_CLAIM_LABEL_MISMATCH): pinned_source_observation
//     cites audited source paths, source_reported cites a publication, local_synthetic_oracle
//     cites a local fixture, target_measurement cites a target-topology trace;
//   - the deployment manifest freezes the pins it runs (every id resolves, each pin once).
// Pure function of the parsed records; no network and no repository access (blob identities are
// checked for form and reconciliation, not recomputed from file bytes).
#ifndef KVCONFORM_REFERENCE_HANDOFF_SOURCE_AUDIT_H_
#define KVCONFORM_REFERENCE_HANDOFF_SOURCE_AUDIT_H_

#include <optional>
#include <string>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::handoff {

// The four evidence labels of 0x0FA (rebuilt from the text; the table was lost).
inline constexpr const char* kEvidenceLabels[] = {"pinned_source_observation", "source_reported",
                                                  "local_synthetic_oracle", "target_measurement"};

struct SourcePin {
  std::string pin_id;
  std::string repository;
  std::optional<std::string> release;  // tag, when the audit recorded one
  std::string commit;                  // 40 lowercase hex
  std::string observed;                // YYYY-MM-DD
};

struct AuditedPath {
  std::string pin_id;
  std::string path;
  std::string git_blob_sha1;  // 40 lowercase hex
};

struct Evidence {
  std::string kind;  // source_path | publication | local_fixture | target_trace
  std::string pin_id, path, citation;
};

struct Claim {
  std::string claim_id;
  std::string label;
  std::string statement;
  std::vector<Evidence> evidence;
};

struct SourceAudit {
  std::vector<SourcePin> pins;
  std::vector<AuditedPath> paths;
  std::vector<Claim> claims;
  std::vector<std::string> deployment_pins;  // the deployment manifest's frozen pin ids
};

// Reads "source_pins", "audited_paths", "claims" of `doc` (schema errors into `v`).
SourceAudit ReadSourceAudit(FieldReader& top, Violations* v);
// The strings of a JSON array (none when `arr` is null); a non-string element is
// INPUT_FIELD_TYPE at pointer/i with message `expected`.
std::vector<std::string> ReadStringArray(const Json* arr, const std::string& pointer,
                                         const std::string& expected, Violations* v);
// Reads the deployment's "source_pins" id list.
std::vector<std::string> ReadPinIds(const Json* arr, const std::string& pointer, Violations* v);
// Every rule above; violations carry JSON pointers into the release document.
Violations CheckSourceAudit(const SourceAudit& a);

}  // namespace kvc::handoff

#endif  // KVCONFORM_REFERENCE_HANDOFF_SOURCE_AUDIT_H_
