// Runtime-binding header rules of kvconform.trace/1; see runtime_binding.h.
#include "reference/trace/runtime_binding.h"

#include <simdjson.h>

#include <map>
#include <set>

#include "reference/base/text_forms.h"

namespace kvc::trace {
namespace {

using base::IsLowerHex;

void AddOnHeader(Violations* out, ErrorCode code, std::string pointer, std::string message) {
  out->push_back({code, std::move(pointer), std::move(message), 1});
}

// Reads a non-empty string array member; duplicates are INPUT_VALUE_INVALID.
std::vector<std::string> StringSet(FieldReader& r, std::string_view key, Violations* out) {
  std::vector<std::string> items;
  const Json* arr = r.Array(key);
  if (arr == nullptr) return items;
  std::set<std::string, std::less<>> seen;
  for (size_t i = 0; i < arr->size(); ++i) {
    const Json& v = (*arr)[i];
    std::string p = r.Ptr(key) + "/" + std::to_string(i);
    if (!v.is_string() || v.get<std::string>().empty()) {
      AddOnHeader(out, ErrorCode::INPUT_FIELD_TYPE, p, "expected a non-empty string");
      continue;
    }
    if (!seen.insert(v.get<std::string>()).second) {
      AddOnHeader(out, ErrorCode::INPUT_VALUE_INVALID, p,
                  "\"" + v.get<std::string>() + "\" listed twice");
      continue;
    }
    items.push_back(v.get<std::string>());
  }
  return items;
}

}  // namespace

bool IsUnboundedIdentityLabel(std::string_view label) {
  for (auto l : kUnboundedIdentityLabels)
    if (l == label) return true;
  return false;
}

Violations CheckRuntimePin(const Json& pin, const std::string& pointer) {
  Violations out;
  FieldReader r(&pin, pointer, &out);
  if (!r.valid()) return out;
  r.String("name");
  auto release = r.String("release");
  auto commit = r.String("commit");
  auto checked = r.OptString("checked_on");
  const Json* files = r.Array("files");
  r.RejectUnknownFields();
  const auto pin_bad = [&](std::string p, std::string m) {
    AddOnHeader(&out, ErrorCode::TRACE_RUNTIME_PIN_INVALID, std::move(p), std::move(m));
  };
  if (release && release->empty())
    pin_bad(r.Ptr("release"), "the pinned release is empty; name the exact release tag");
  if (commit && !IsLowerHex(*commit, 40))
    pin_bad(r.Ptr("commit"), "commit " + base::QuoteClipped(*commit) +
                                 " is not a full 40-digit lowercase hex commit id (a short or "
                                 "symbolic ref can move)");
  if (checked && !base::IsIsoDate(*checked))
    AddOnHeader(
        &out, ErrorCode::INPUT_VALUE_INVALID, r.Ptr("checked_on"),
        "expected a date YYYY-MM-DD (month 01-12, day 01-31), got " + base::QuoteClipped(*checked));
  if (files == nullptr) return out;
  if (files->empty())
    pin_bad(r.Ptr("files"), "a pin lists the digest of at least one source file it was checked on");
  std::set<std::string, std::less<>> paths;
  for (size_t i = 0; i < files->size(); ++i) {
    FieldReader f(&(*files)[i], r.Ptr("files") + "/" + std::to_string(i), &out);
    if (!f.valid()) continue;
    auto path = f.String("path");
    auto digest = f.String("sha256");
    f.RejectUnknownFields();
    if (path && (path->empty() || !paths.insert(*path).second))
      pin_bad(f.Ptr("path"), path->empty()
                                 ? std::string("empty source path")
                                 : "source file " + base::QuoteClipped(*path) + " is pinned twice");
    if (digest && !IsLowerHex(*digest, 64))
      pin_bad(f.Ptr("sha256"), "digest " + base::QuoteClipped(*digest) +
                                   " is not a SHA-256 (64 lowercase hex digits)");
  }
  return out;
}

Violations CheckMetricFamilies(const Json& metrics, const std::string& pointer) {
  Violations out;
  if (!metrics.is_array()) {
    AddOnHeader(&out, ErrorCode::INPUT_FIELD_TYPE, pointer,
                "expected an array of metric families, got " + std::string(JsonTypeName(metrics)));
    return out;
  }
  struct Family {
    std::string type, counts, denominator, pointer;
    bool denominator_unreadable = false;  // present but not a string (reported)
  };
  std::vector<Family> families(metrics.size());
  std::set<std::string, std::less<>> names;
  std::vector<std::string> name_of(metrics.size());
  // A family declared again is reported there and ignored: the first declaration stands; a
  // failure counter naming a family declared twice is not judged against either (which one
  // the runtime keeps is unknown; one code: probe 47, its denominator was looked up in the
  // last declaration and raised a second code, or none, by the declarations' order).
  std::vector<bool> repeated(metrics.size(), false);
  bool unnamed = false;  // a family whose name is unreadable (reported): it may be a denominator
  for (size_t i = 0; i < metrics.size(); ++i) {
    FieldReader m(&metrics[i], pointer + "/" + std::to_string(i), &out);
    if (!m.valid()) {
      unnamed = true;
      continue;
    }
    auto name = m.String("name");
    if (!name) unnamed = true;
    auto type = m.Enum("type", {"counter", "gauge", "histogram"});
    std::vector<std::string> labels = StringSet(m, "labels", &out);
    std::optional<std::string> counts =
        m.Has("counts") ? m.Enum("counts", {"events", "failures"}) : std::string("events");
    auto denominator = m.OptString("denominator");
    const bool denominator_unreadable = !denominator && m.Has("denominator");
    m.RejectUnknownFields();
    if (name) {
      if (name->empty() || !names.insert(*name).second) {
        AddOnHeader(&out, ErrorCode::INPUT_VALUE_INVALID, m.Ptr("name"),
                    name->empty() ? std::string("empty metric name")
                                  : "metric family " + base::QuoteClipped(*name) +
                                        " declared twice (the first declaration stands)");
        repeated[i] = !name->empty();
      }
      name_of[i] = *name;
    }
    for (size_t k = 0; k < labels.size(); ++k)
      if (IsUnboundedIdentityLabel(labels[k]))
        AddOnHeader(
            &out, ErrorCode::TRACE_METRIC_LABEL_UNBOUNDED, m.Ptr("labels"),
            "metric \"" + name.value_or("?") + "\" is labelled by \"" + labels[k] +
                "\": every value names one request/operation/event, so the number of time "
                "series grows with traffic; keep identity in traces, audit records or logs");
    if (counts && *counts == "failures" && type && *type != "counter")
      AddOnHeader(&out, ErrorCode::INPUT_VALUE_INVALID, m.Ptr("counts"),
                  "only a counter counts failures; " + base::QuoteClipped(*type) +
                      " describes snapshots or distributions");
    if (denominator && counts && *counts != "failures")  // (an unreadable counts was reported)
      AddOnHeader(&out, ErrorCode::INPUT_VALUE_INVALID, m.Ptr("denominator"),
                  "a denominator is declared only by a failure counter (\"counts\": \"failures\")");
    families[i] = {type.value_or(""), counts.value_or(""), denominator.value_or(""), m.pointer(),
                   denominator_unreadable};
  }
  // Failure counters: the attempts counter must be declared beside them. Looked up by name
  // (since 2026-12-06, probe 86: a scan of every family per failure counter took 26 s for a
  // header of 50,000 pairs).
  std::map<std::string_view, size_t, std::less<>> first_of;  // name -> its first declaration
  std::set<std::string_view, std::less<>> declared_again;
  for (size_t j = 0; j < families.size(); ++j) {
    if (name_of[j].empty()) continue;
    first_of.emplace(name_of[j], j);
    if (repeated[j]) declared_again.insert(name_of[j]);
  }
  for (size_t i = 0; i < families.size(); ++i) {
    const Family& f = families[i];
    if (f.counts != "failures" || repeated[i]) continue;
    // A family that is not a counter counts no failures: that is its one code, above (the doc
    // audit of 2026-12-07: a gauge without a denominator was also a "failure counter" that
    // names no attempts counter).
    if (!f.type.empty() && f.type != "counter") continue;
    if (!f.denominator.empty() && declared_again.count(f.denominator)) continue;  // ambiguous
    const Family* d = nullptr;
    if (auto it = f.denominator.empty() ? first_of.end() : first_of.find(f.denominator);
        it != first_of.end() && it->second != i)
      d = &families[it->second];
    // A denominator whose own type or counts is unreadable was reported there, and so was an
    // unreadable denominator member or a family whose name is unreadable (one code).
    if (d != nullptr && (d->type.empty() || d->counts.empty())) continue;
    if (f.denominator_unreadable || (d == nullptr && unnamed && !f.denominator.empty())) continue;
    if (d == nullptr || d->type != "counter" || d->counts != "events")
      AddOnHeader(&out, ErrorCode::TRACE_METRIC_DENOMINATOR_MISSING, f.pointer + "/denominator",
                  "failure counter \"" + name_of[i] + "\" " +
                      (f.denominator.empty() ? std::string("names no attempts counter")
                                             : "names " + base::QuoteClipped(f.denominator) +
                                                   ", which is not a declared attempts counter") +
                      "; a failure count without its attempts cannot produce a failure ratio");
  }
  return out;
}

Violations ReadRuntimeBinding(const Json& header, RuntimeBinding* out) {
  Violations v;
  *out = RuntimeBinding{};
  if (!header.is_object()) return v;
  const auto append = [&](Violations more) {
    for (auto& x : more) v.push_back(std::move(x));
  };
  // An optional member that is null is the same as an absent one (probe 47: each raised a code).
  const auto member = [&header](const char* key) {
    auto it = header.find(key);
    return it != header.end() && !it->is_null() ? &*it : nullptr;
  };
  if (const Json* pin = member("runtime_pin")) append(CheckRuntimePin(*pin, "/0/runtime_pin"));
  if (const Json* metrics = member("metrics")) append(CheckMetricFamilies(*metrics, "/0/metrics"));
  if (const Json* it = member("trace_identity")) {
    if (it->is_string() && (*it == "required" || *it == "optional"))
      out->trace_identity_required = *it == "required";
    else
      AddOnHeader(
          &v, ErrorCode::INPUT_VALUE_INVALID, "/0/trace_identity",
          "expected \"required\" or \"optional\", got " + base::ClippedJsonText(it->dump()));
  }
  if (const Json* it = member("expected_final_states")) {
    if (!it->is_array()) {
      AddOnHeader(&v, ErrorCode::INPUT_FIELD_TYPE, "/0/expected_final_states",
                  "expected an array of final request states");
      return v;
    }
    std::set<std::string> listed;  // a request's end is stated once
    for (size_t i = 0; i < it->size(); ++i) {
      ExpectedFinalState s;
      s.pointer = "/0/expected_final_states/" + std::to_string(i);
      FieldReader r(&(*it)[i], s.pointer, &v);
      if (!r.valid()) continue;
      auto id = r.String("request_id");
      // uint64 like the trace's own numbers (probe 47: capped at 2^53, so a valid state failed).
      auto gen = r.Uint("handle_generation", 0, UINT64_MAX);
      auto snap = r.Uint("snapshot", 0, UINT64_MAX);
      auto len = r.Uint("committed_length", 0, UINT64_MAX);
      auto phase = r.Enum("phase", {"DECODE_READY", "FINISHED", "CANCELLED", "RELEASED"});
      r.RejectUnknownFields();
      if (!id || !gen || !snap || !len || !phase) continue;
      if (!listed.insert(*id).second) {
        AddOnHeader(&v, ErrorCode::INPUT_VALUE_INVALID, s.pointer + "/request_id",
                    "request " + base::QuoteClipped(*id) +
                        " is listed twice in expected_final_states; a request has one final state");
        continue;
      }
      s.request_id = *id;
      s.handle_generation = *gen;
      s.snapshot = *snap;
      s.committed_length = *len;
      s.phase = *lifecycle::ParsePhase(*phase);
      out->expected_final_states.push_back(std::move(s));
    }
  }
  for (auto& x : v) x.line = 1;
  return v;
}

Violations ReadRuntimeBinding(const simdjson::dom::object& header, RuntimeBinding* out) {
  Json members = Json::object();
  for (auto key : kRuntimeBindingKeys) {
    simdjson::dom::element el;
    if (header.at_key(key).get(el)) continue;
    try {
      members[std::string(key)] = Json::parse(simdjson::to_string(el));
    } catch (const std::exception& e) {  // the line parsed once already; keep the edge safe
      *out = RuntimeBinding{};
      return {{ErrorCode::TRACE_HEADER_INVALID, "/0/" + std::string(key),
               std::string("cannot read header member: ") + e.what(), 1}};
    }
  }
  return ReadRuntimeBinding(members, out);
}

Violations CheckExpectedFinalStates(
    const RuntimeBinding& binding, const lifecycle::KvObject& kv,
    const std::unordered_map<std::string, lifecycle::Snapshot>* forgotten) {
  Violations out;
  const auto U = [](uint64_t x) { return std::to_string(x); };
  for (const ExpectedFinalState& s : binding.expected_final_states) {
    const lifecycle::HandleRecord* h = kv.Find(s.request_id);
    const lifecycle::Snapshot* kept = nullptr;
    if (h == nullptr && forgotten != nullptr)
      if (auto it = forgotten->find(s.request_id); it != forgotten->end()) kept = &it->second;
    const std::string who = "request " + base::QuoteClipped(s.request_id);
    if (h == nullptr && kept == nullptr) {
      AddOnHeader(&out, ErrorCode::TRACE_EXPECTED_RESULT_MISMATCH, s.pointer + "/request_id",
                  who + " is expected at the end of the trace but was never allocated or forked");
      continue;
    }
    const lifecycle::Snapshot& c = h != nullptr ? h->current : *kept;
    const auto check = [&](const char* field, uint64_t want, uint64_t got) {
      if (want != got)
        AddOnHeader(&out, ErrorCode::TRACE_EXPECTED_RESULT_MISMATCH, s.pointer + "/" + field,
                    who + " is expected to end with " + field + " " + U(want) +
                        "; the replay ends at " + U(got));
    };
    check("handle_generation", s.handle_generation, c.incarnation);
    check("snapshot", s.snapshot, c.version);
    check("committed_length", s.committed_length, c.committed_length);
    if (s.phase != c.phase)
      AddOnHeader(&out, ErrorCode::TRACE_EXPECTED_RESULT_MISMATCH, s.pointer + "/phase",
                  who + " is expected to end " + std::string(lifecycle::PhaseName(s.phase)) +
                      "; the replay ends " + std::string(lifecycle::PhaseName(c.phase)));
  }
  return out;
}

}  // namespace kvc::trace
