// The registry of document kinds kvconform validates, keyed by the "kind" field.
//
// A JSON document declares {"kind": "..."}; a JSON Lines document (a trace) declares it in
// its first line. Each kind maps to one validator from reference/ that returns every
// violation it finds. To add a kind, add one row to kKinds in kinds.cc.
#ifndef KVCONFORM_REFERENCE_VALIDATE_KINDS_H_
#define KVCONFORM_REFERENCE_VALIDATE_KINDS_H_

#include <span>
#include <string>
#include <string_view>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

struct KindEntry {
  std::string_view kind;         // e.g. "kvconform.request_cache_manifest/1"
  std::string_view title;        // short human name for reports, e.g. "request/cache manifest"
  std::string_view seed_ref;     // the seed section it enforces
  // Exactly one of these is set: a whole-document JSON validator, or a JSON Lines validator
  // over the raw text (source names the file in messages; lines are 1-based).
  Violations (*validate_json)(const Json& doc) = nullptr;
  Violations (*validate_jsonl)(std::string_view text, std::string_view source) = nullptr;
};

std::span<const KindEntry> AllKinds();
const KindEntry* FindKind(std::string_view kind);
// The "kind" a document (or a JSON Lines header line) declares; "" when it is not an object or
// its "kind" is absent or not a string.
std::string KindOf(const Json& doc);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_VALIDATE_KINDS_H_
