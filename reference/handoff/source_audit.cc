// Source pins, audited paths and claim/evidence records of a runtime release.
#include "reference/handoff/source_audit.h"

#include <map>
#include <set>

#include "reference/base/text_forms.h"

namespace kvc::handoff {
namespace {

using base::IsIsoDate;
using base::IsLowerHex;

// A relative path of non-empty segments, none of them "." or "..".
bool IsNormalizedRelative(const std::string& p) {
  if (p.empty() || p.front() == '/' || p.back() == '/') return false;
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    std::string seg = p.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == "..") return false;
    start = end + 1;
  }
  return p.find('\\') == std::string::npos;
}

const char* EvidenceFor(const std::string& label) {
  if (label == "pinned_source_observation") return "source_path";
  if (label == "source_reported") return "publication";
  if (label == "local_synthetic_oracle") return "local_fixture";
  return "target_trace";
}

}  // namespace

std::vector<std::string> ReadStringArray(const Json* arr, const std::string& pointer,
                                         const std::string& expected, Violations* v) {
  std::vector<std::string> out;
  if (!arr) return out;
  for (size_t i = 0; i < arr->size(); ++i) {
    if ((*arr)[i].is_string())
      out.push_back((*arr)[i].get<std::string>());
    else
      v->push_back({ErrorCode::INPUT_FIELD_TYPE, pointer + "/" + std::to_string(i), expected});
  }
  return out;
}

std::vector<std::string> ReadPinIds(const Json* arr, const std::string& pointer, Violations* v) {
  return ReadStringArray(arr, pointer, "expected a pin id", v);
}

SourceAudit ReadSourceAudit(FieldReader& top, Violations* v) {
  SourceAudit a;
  if (const Json* pins = top.Array("source_pins")) {
    for (size_t i = 0; i < pins->size(); ++i) {
      FieldReader r(&(*pins)[i], "/source_pins/" + std::to_string(i), v);
      SourcePin p;
      p.pin_id = r.String("pin_id").value_or("");
      p.repository = r.String("repository").value_or("");
      if (r.Has("release") && !(*pins)[i].at("release").is_null())
        p.release = r.String("release");
      else
        r.Allow({"release"});
      p.commit = r.String("commit").value_or("");
      p.observed = r.String("observed").value_or("");
      r.RejectUnknownFields();
      a.pins.push_back(std::move(p));
    }
  }
  if (const Json* paths = top.Array("audited_paths")) {
    for (size_t i = 0; i < paths->size(); ++i) {
      FieldReader r(&(*paths)[i], "/audited_paths/" + std::to_string(i), v);
      AuditedPath p;
      p.pin_id = r.String("pin_id").value_or("");
      p.path = r.String("path").value_or("");
      p.git_blob_sha1 = r.String("git_blob_sha1").value_or("");
      r.RejectUnknownFields();
      a.paths.push_back(std::move(p));
    }
  }
  if (const Json* claims = top.Array("claims")) {
    for (size_t i = 0; i < claims->size(); ++i) {
      const std::string ptr = "/claims/" + std::to_string(i);
      FieldReader r(&(*claims)[i], ptr, v);
      Claim c;
      c.claim_id = r.String("claim_id").value_or("");
      c.label = r.Enum("label", {kEvidenceLabels[0], kEvidenceLabels[1], kEvidenceLabels[2],
                                 kEvidenceLabels[3]})
                    .value_or("");
      c.statement = r.String("statement").value_or("");
      if (const Json* ev = r.Array("evidence")) {
        for (size_t j = 0; j < ev->size(); ++j) {
          FieldReader e(&(*ev)[j], ptr + "/evidence/" + std::to_string(j), v);
          Evidence x;
          x.kind = e.Enum("kind", {"source_path", "publication", "local_fixture", "target_trace"})
                       .value_or("");
          if (x.kind == "source_path") {
            x.pin_id = e.String("pin_id").value_or("");
            x.path = e.String("path").value_or("");
          } else if (x.kind == "publication") {
            x.citation = e.String("citation").value_or("");
          } else if (!x.kind.empty()) {
            x.path = e.String("path").value_or("");
          }
          e.RejectUnknownFields();
          c.evidence.push_back(std::move(x));
        }
      }
      r.RejectUnknownFields();
      a.claims.push_back(std::move(c));
    }
  }
  return a;
}

Violations CheckSourceAudit(const SourceAudit& a) {
  Violations v;
  std::set<std::string> pin_ids, repos;
  // One root cause, one code (probe 51): a pin id that is empty or repeated may be another
  // pin's misnamed id, so what names pins (audited paths, the deployment) is not judged against
  // the ids; and a claim citing a path of a pin whose audited paths were reported is not also
  // unaudited (the misspelled audited path may be the one it cites).
  bool pins_ok = true;
  std::set<std::string> pins_with_bad_paths;
  for (size_t i = 0; i < a.pins.size(); ++i) {
    const SourcePin& p = a.pins[i];
    const std::string ptr = "/source_pins/" + std::to_string(i);
    auto bad = [&](const std::string& field, const std::string& why) {
      v.push_back({ErrorCode::HANDOFF_SOURCE_PIN_INVALID, ptr + "/" + field,
                   "source pin " + base::QuoteClipped(p.pin_id) + ": " + why});
    };
    if (p.pin_id.empty() || !pin_ids.insert(p.pin_id).second) {
      bad("pin_id", "pin ids are non-empty and unique");
      pins_ok = false;
    }
    if (p.repository.empty() || !repos.insert(p.repository).second)
      bad("repository",
          "each repository is pinned exactly once (" + base::QuoteClipped(p.repository) + ")");
    if (!IsLowerHex(p.commit, 40))
      bad("commit", "an immutable pin is a 40-character lowercase hex commit, not " +
                        base::QuoteClipped(p.commit) + " (a tag or branch can move)");
    if (!IsIsoDate(p.observed)) bad("observed", "expected the audit date as YYYY-MM-DD");
    if (p.release && p.release->empty()) bad("release", "an empty release tag");
  }
  // Audited paths: pin, path form, uniqueness, blob identity.
  std::map<std::pair<std::string, std::string>, size_t> audited;
  for (size_t i = 0; i < a.paths.size(); ++i) {
    const AuditedPath& p = a.paths[i];
    const std::string ptr = "/audited_paths/" + std::to_string(i);
    auto bad = [&](const std::string& field, const std::string& why) {
      v.push_back({ErrorCode::HANDOFF_AUDITED_PATH_INVALID, ptr + "/" + field,
                   "audited path " + base::QuoteClipped(p.path, 256) + ": " + why});
      pins_with_bad_paths.insert(p.pin_id);
    };
    if (!pin_ids.count(p.pin_id)) {
      if (pins_ok)
        bad("pin_id",
            "names pin " + base::QuoteClipped(p.pin_id) + ", which source_pins does not declare");
      continue;
    }
    if (!IsNormalizedRelative(p.path)) {
      bad("path", "expected a normalized repository-relative path");
      continue;
    }
    if (!audited.emplace(std::pair{p.pin_id, p.path}, i).second) {
      bad("path", "is audited twice under pin " + base::QuoteClipped(p.pin_id));
      continue;
    }
    if (!IsLowerHex(p.git_blob_sha1, 40))
      bad("git_blob_sha1", "expected the 40-character lowercase hex Git blob identity, got " +
                               base::QuoteClipped(p.git_blob_sha1));
  }
  // Claims: ids, evidence fitting the label, cited source paths reconciled.
  std::set<std::string> claim_ids;
  for (size_t i = 0; i < a.claims.size(); ++i) {
    const Claim& c = a.claims[i];
    const std::string ptr = "/claims/" + std::to_string(i);
    if (c.claim_id.empty() || !claim_ids.insert(c.claim_id).second)
      v.push_back({ErrorCode::INPUT_VALUE_INVALID, ptr + "/claim_id",
                   "claim ids are non-empty and unique (" + base::QuoteClipped(c.claim_id) + ")"});
    if (c.evidence.empty()) {
      v.push_back({ErrorCode::HANDOFF_CLAIM_LABEL_MISMATCH, ptr + "/evidence",
                   "claim " + base::Clipped(c.claim_id) + " (" + base::Clipped(c.label) +
                       ") cites no evidence"});
      continue;
    }
    const std::string want = EvidenceFor(c.label);
    for (size_t j = 0; j < c.evidence.size(); ++j) {
      const Evidence& e = c.evidence[j];
      const std::string eptr = ptr + "/evidence/" + std::to_string(j);
      if (e.kind != want) {
        v.push_back({ErrorCode::HANDOFF_CLAIM_LABEL_MISMATCH, eptr + "/kind",
                     "claim " + base::Clipped(c.claim_id) + " is labeled " +
                         base::Clipped(c.label) + ", which rests on " + want + " evidence, not " +
                         e.kind});
        continue;
      }
      if (e.kind == "source_path" && pins_ok && !pins_with_bad_paths.count(e.pin_id) &&
          !audited.count({e.pin_id, e.path}))
        v.push_back({ErrorCode::HANDOFF_CLAIM_PATH_UNAUDITED, eptr + "/path",
                     "claim " + base::Clipped(c.claim_id) + " cites " +
                         base::QuoteClipped(e.path, 256) + " at pin " +
                         base::QuoteClipped(e.pin_id) +
                         ", which is not an audited path of that pin: a release tag and commit "
                         "do not prove that a cited path exists"});
      if ((e.kind == "local_fixture" || e.kind == "target_trace") && !IsNormalizedRelative(e.path))
        v.push_back({ErrorCode::HANDOFF_CLAIM_LABEL_MISMATCH, eptr + "/path",
                     "evidence path " + base::QuoteClipped(e.path, 256) +
                         " is not a normalized relative path"});
      if (e.kind == "publication" && e.citation.empty())
        v.push_back({ErrorCode::HANDOFF_CLAIM_LABEL_MISMATCH, eptr + "/citation",
                     "a source-reported claim names its publication"});
    }
  }
  // The deployment manifest freezes the pins it runs.
  std::set<std::string> frozen;
  for (size_t i = 0; i < a.deployment_pins.size(); ++i) {
    const std::string& id = a.deployment_pins[i];
    if ((pins_ok && !pin_ids.count(id)) || !frozen.insert(id).second)
      v.push_back({ErrorCode::HANDOFF_SOURCE_PIN_INVALID,
                   "/deployment/source_pins/" + std::to_string(i),
                   "the deployment freezes pin " + base::QuoteClipped(id) +
                       ", which is undeclared in source_pins or listed twice"});
  }
  return v;
}

}  // namespace kvc::handoff
