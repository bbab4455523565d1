// ValidateLedgerSensitivity and ChangedControls; see sensitivity.h for the contract.
#include "reference/ledger/sensitivity.h"

#include <map>
#include <optional>

#include "reference/base/text_forms.h"

namespace kvc {
namespace {

struct Declared {
  SensitivityCase c;
  std::string control;  // empty for the base
  std::string ptr;
  std::map<std::string, uint64_t> expected;
};

constexpr const char* kLedgerFields[] = {"bytes_per_token", "logical", "materialized", "rectangular", "phantom"};

void ReadCase(const Json& obj, const std::string& ptr, bool sweep, Declared* d, Violations* v) {
  d->ptr = ptr;
  FieldReader r(&obj, ptr, v);
  if (sweep) {
    r.String("name");
    if (auto s = r.String("control")) d->control = *s;
  }
  FieldReader g(r.Object("geometry"), ptr + "/geometry", v);
  if (auto x = g.Uint("num_cache_layers")) d->c.geometry.layers = *x;
  if (auto x = g.Uint("num_query_heads")) d->c.query_heads = *x;
  if (auto x = g.Uint("kv_heads_per_rank")) d->c.geometry.kv_heads_local = *x;
  if (auto x = g.Uint("head_dim")) d->c.geometry.head_dim = *x;
  if (auto x = g.Uint("key_bytes_per_scalar", 0, 64)) d->c.geometry.k_bytes = *x;
  if (auto x = g.Uint("value_bytes_per_scalar", 0, 64)) d->c.geometry.v_bytes = *x;
  g.RejectUnknownFields();
  if (const Json* reqs = r.Array("requests")) {
    for (size_t i = 0; i < reqs->size(); ++i) {
      FieldReader q(&(*reqs)[i], ptr + "/requests/" + std::to_string(i), v);
      SensitivityRequest sr;
      if (auto s = q.String("request_id")) sr.id = *s;
      if (auto x = q.Uint("committed_tokens")) sr.committed = *x;
      if (auto x = q.Uint("copies")) sr.copies = *x;
      q.RejectUnknownFields();
      d->c.requests.push_back(sr);
    }
  }
  FieldReader e(r.Object("expected"), ptr + "/expected", v);
  for (const char* k : kLedgerFields)
    if (auto x = e.Uint(k)) d->expected[k] = *x;
  e.RejectUnknownFields();
  r.RejectUnknownFields();
}

// Impossible-case checks; true when the case can be derived.
bool CheckCase(const Declared& d, Violations* v) {
  size_t before = v->size();
  const CacheGeometry& g = d.c.geometry;
  if (g.layers == 0 || g.kv_heads_local == 0 || g.head_dim == 0 || g.k_bytes == 0 || g.v_bytes == 0 ||
      d.c.query_heads == 0 || d.c.query_heads % g.kv_heads_local != 0)
    Add(v, ErrorCode::LEDGER_SWEEP_HEAD_GEOMETRY_INVALID, d.ptr + "/geometry",
        "expected positive extents and widths and query heads (" + std::to_string(d.c.query_heads) +
            ") a positive multiple of local K/V heads (" + std::to_string(g.kv_heads_local) + ")");
  std::map<std::string, int> seen;
  for (size_t i = 0; i < d.c.requests.size(); ++i) {
    const SensitivityRequest& r = d.c.requests[i];
    std::string p = d.ptr + "/requests/" + std::to_string(i);
    if (r.copies == 0 || r.committed == 0)
      Add(v, ErrorCode::LEDGER_SWEEP_COPIES_ZERO, p,
          "a live request needs at least one committed token and one materialized copy");
    if (seen[r.id]++)
      Add(v, ErrorCode::INPUT_VALUE_INVALID, p + "/request_id", "request id \"" + r.id + "\" appears twice");
  }
  if (d.c.requests.empty())
    Add(v, ErrorCode::LEDGER_SWEEP_COPIES_ZERO, d.ptr + "/requests", "expected at least one live request");
  return v->size() == before;
}

void CheckLedger(const Declared& d, Violations* v) {
  std::vector<uint64_t> lengths, copies;
  for (const auto& r : d.c.requests) {
    lengths.push_back(r.committed);
    copies.push_back(r.copies);
  }
  auto l = ComputeRaggedLedger(d.c.geometry, lengths, copies);
  if (!l.ok()) {
    Add(v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, d.ptr, std::string(l.status().message()));
    return;
  }
  std::map<std::string, uint64_t> got = {{"bytes_per_token", l->bytes_per_token},
                                         {"logical", l->logical},
                                         {"materialized", l->materialized},
                                         {"rectangular", l->rectangular},
                                         {"phantom", l->phantom}};
  for (const char* k : kLedgerFields)
    if (got[k] != d.expected.at(k))
      Add(v, ErrorCode::LEDGER_SWEEP_LEDGER_DRIFT, d.ptr + "/expected/" + k,
          std::string(k) + " derives to " + std::to_string(got[k]) + " B, declared " + std::to_string(d.expected.at(k)));
}

}  // namespace

std::vector<std::string> ChangedControls(const SensitivityCase& a, const SensitivityCase& b) {
  std::vector<std::string> out;
  if (a.geometry.layers != b.geometry.layers) out.push_back("num_cache_layers");
  if (a.query_heads != b.query_heads) out.push_back("num_query_heads");
  if (a.geometry.kv_heads_local != b.geometry.kv_heads_local) out.push_back("kv_heads_per_rank");
  if (a.geometry.head_dim != b.geometry.head_dim) out.push_back("head_dim");
  if (a.geometry.k_bytes != b.geometry.k_bytes || a.geometry.v_bytes != b.geometry.v_bytes)
    out.push_back("bytes_per_scalar");
  // Concurrency is the set of live requests growing or shrinking: requests added, or requests
  // removed, not both. A request renamed (or one swapped for another) removes one and adds one:
  // two changes (probe 38: a rename, even one that also changed A's tokens, passed as
  // "concurrency").
  std::map<std::string, const SensitivityRequest*> in_a, in_b;
  for (const auto& r : a.requests) in_a[r.id] = &r;
  for (const auto& r : b.requests) in_b[r.id] = &r;
  bool removed = false, added = false;
  for (const auto& r : a.requests) {
    auto it = in_b.find(r.id);
    if (it == in_b.end()) {
      removed = true;
      continue;
    }
    if (r.committed != it->second->committed) out.push_back("requests/" + r.id + "/committed_tokens");
    if (r.copies != it->second->copies) out.push_back("requests/" + r.id + "/copies");
  }
  for (const auto& r : b.requests)
    if (!in_a.count(r.id)) added = true;
  if (removed && added) {
    out.push_back("concurrency (requests removed)");
    out.push_back("concurrency (requests added)");
  } else if (removed || added) {
    out.push_back("concurrency");
  }
  return out;
}

Violations ValidateLedgerSensitivity(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  top.Enum("kind", {kLedgerSensitivityKind});
  top.OptString("description");
  top.OptString("seed_ref");
  Declared base;
  std::vector<Declared> sweeps;
  if (const Json* b = top.Object("base")) ReadCase(*b, "/base", false, &base, &v);
  if (const Json* s = top.Array("sweeps")) {
    sweeps.resize(s->size());
    for (size_t i = 0; i < s->size(); ++i) ReadCase((*s)[i], "/sweeps/" + std::to_string(i), true, &sweeps[i], &v);
  }
  top.RejectUnknownFields();
  if (!v.empty()) return v;
  if (!CheckCase(base, &v)) return v;
  CheckLedger(base, &v);
  for (const Declared& s : sweeps) {
    if (!CheckCase(s, &v)) continue;
    auto changed = ChangedControls(base.c, s.c);
    if (changed.size() != 1) {
      std::string list;
      for (const auto& c : changed) list += (list.empty() ? "" : ", ") + c;
      Add(&v, ErrorCode::LEDGER_SWEEP_MULTI_CONTROL, s.ptr,
          "expected exactly one changed control, found " + std::to_string(changed.size()) + " [" + list + "]");
      continue;
    }
    if (changed[0] != s.control) {
      Add(&v, ErrorCode::LEDGER_SWEEP_CONTROL_MISMATCH, s.ptr + "/control",
          "the sweep changes " + base::QuoteClipped(changed[0]) + " but declares " +
              base::QuoteClipped(s.control));
      continue;
    }
    CheckLedger(s, &v);
  }
  return v;
}

}  // namespace kvc
