// ValidateByteTrajectory and SnapshotLedger; see byte_trajectory.h for the check order.
#include "reference/ledger/byte_trajectory.h"

#include <algorithm>
#include <optional>
#include <set>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/ledger/kv_bytes.h"

namespace kvc {
namespace {

// Accumulates checked arithmetic; `ok` turns false on the first overflow/underflow.
struct Checked {
  bool ok = true;
  uint64_t Add(uint64_t a, uint64_t b) { return Take(CheckedAdd(a, b)); }
  uint64_t Sub(uint64_t a, uint64_t b) { return Take(CheckedSub(a, b)); }
  uint64_t Mul(uint64_t a, uint64_t b) { return Take(CheckedMul(a, b)); }
  uint64_t Take(std::optional<uint64_t> r) {
    if (!r) ok = false;
    return r.value_or(0);
  }
};

struct Request {
  std::string id;
  uint64_t prompt = 0, replicas = 0, capacity = 0;
  std::vector<std::string> tiers;
  std::string ptr;
};

struct Event {
  uint64_t tau = 0;
  std::string request, op;
  uint64_t rows = 0, workspace = 0;
  const Json* expected = nullptr;
  std::string ptr;
};

struct Doc {
  CacheGeometry geometry;
  const Json* abi = nullptr;
  std::string abi_sha;
  uint64_t bytes_per_token = 0, metadata_per_copy = 0;
  std::vector<std::string> tiers;
  std::vector<Request> requests;
  std::vector<Event> events;
  uint64_t peak_physical = 0, peak_instantaneous = 0;
};

constexpr const char* kScalarFields[] = {"logical",           "materialized",  "replication_overhead",
                                         "reserved",          "reservation_slack", "allocator",
                                         "physical",          "temporary_workspace", "instantaneous"};

bool ReadDoc(const Json& doc, Doc* d, Violations* v) {
  size_t before = v->size();
  FieldReader top(&doc, "", v);
  top.Enum("kind", {kByteTrajectoryKind});
  top.OptString("description");
  top.OptString("seed_ref");
  d->abi = ReadCacheAbiBinding(top, v, &d->geometry);
  if (auto s = top.String("cache_abi_sha256")) d->abi_sha = *s;
  // Byte quantities may reach 2^64 - 1 (every sum and product of them is overflow-checked), as
  // the expected ledger values do; counts and times stay in the I-JSON range (probe 78: an ABI
  // of 2^60 B/token, which `calc kv-bytes` computes, could not be declared).
  if (auto x = top.Uint("bytes_per_token", 0, UINT64_MAX)) d->bytes_per_token = *x;
  FieldReader al(top.Object("allocator"), "/allocator", v);
  al.Enum("policy", {"synthetic_metadata_per_copy"});
  if (auto x = al.Uint("metadata_bytes_per_copy", 0, UINT64_MAX)) d->metadata_per_copy = *x;
  al.RejectUnknownFields();
  if (const Json* tiers = top.Array("tiers")) {
    for (size_t i = 0; i < tiers->size(); ++i) {
      if ((*tiers)[i].is_string())
        d->tiers.push_back((*tiers)[i].get<std::string>());
      else
        Add(v, ErrorCode::INPUT_FIELD_TYPE, "/tiers/" + std::to_string(i), "expected a tier name string");
    }
  }
  if (const Json* reqs = top.Array("requests")) {
    for (size_t i = 0; i < reqs->size(); ++i) {
      Request r;
      r.ptr = "/requests/" + std::to_string(i);
      FieldReader rr(&(*reqs)[i], r.ptr, v);
      if (auto s = rr.String("request_id")) r.id = *s;
      if (auto x = rr.Uint("prompt_tokens")) r.prompt = *x;
      if (auto x = rr.Uint("replica_count")) r.replicas = *x;
      if (auto x = rr.Uint("reserved_token_capacity")) r.capacity = *x;
      if (const Json* ct = rr.Array("copy_tiers")) {
        for (size_t j = 0; j < ct->size(); ++j) {
          if ((*ct)[j].is_string())
            r.tiers.push_back((*ct)[j].get<std::string>());
          else
            Add(v, ErrorCode::INPUT_FIELD_TYPE, rr.Ptr("copy_tiers") + "/" + std::to_string(j),
                "expected a tier name string");
        }
      }
      rr.RejectUnknownFields();
      d->requests.push_back(std::move(r));
    }
  }
  if (const Json* evs = top.Array("events")) {
    for (size_t i = 0; i < evs->size(); ++i) {
      Event e;
      e.ptr = "/events/" + std::to_string(i);
      FieldReader er(&(*evs)[i], e.ptr, v);
      if (auto x = er.Uint("tau")) e.tau = *x;
      if (auto s = er.String("request")) e.request = *s;
      if (auto s = er.Enum("op", {"arrive", "prefill_publish", "decode_publish", "repair_publish",
                                  "finish", "release"}))
        e.op = *s;
      if (auto x = er.Uint("rows")) e.rows = *x;
      if (auto x = er.Uint("workspace_bytes", 0, UINT64_MAX)) e.workspace = *x;
      e.expected = er.Object("expected");
      er.RejectUnknownFields();
      if (e.expected) {
        FieldReader ex(e.expected, e.ptr + "/expected", v);
        if (const Json* c = ex.Object("committed"))
          for (auto it = c->begin(); it != c->end(); ++it)
            ReadUint(it.value(), ex.Ptr("committed") + "/" + JsonPointerEscape(it.key()), v);
        for (const char* k : kScalarFields) ex.Uint(k, 0, UINT64_MAX);
        if (const Json* rt = ex.Object("resident_by_tier"))
          for (auto it = rt->begin(); it != rt->end(); ++it)
            ReadUint(it.value(), ex.Ptr("resident_by_tier") + "/" + JsonPointerEscape(it.key()), v,
                     0, UINT64_MAX);
        ex.RejectUnknownFields();
      }
      d->events.push_back(std::move(e));
    }
  }
  FieldReader pk(top.Object("expected_peaks"), "/expected_peaks", v);
  if (auto x = pk.Uint("physical", 0, UINT64_MAX)) d->peak_physical = *x;
  if (auto x = pk.Uint("instantaneous", 0, UINT64_MAX)) d->peak_instantaneous = *x;
  pk.RejectUnknownFields();
  top.RejectUnknownFields();
  return v->size() == before;
}

// Stage 2: the cache ABI binding and the token coefficient.
bool CheckAbi(const Doc& d, Violations* v) {
  size_t before = v->size();
  bool digest_ok = IsSha256Hex(d.abi_sha);
  if (!digest_ok)
    Add(v, ErrorCode::LEDGER_DIGEST_MALFORMED, "/cache_abi_sha256",
        "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(d.abi_sha));
  const CacheGeometry& g = d.geometry;
  bool abi_ok = true;
  for (auto [key, value] : {std::pair{"num_cache_layers", g.layers}, std::pair{"kv_heads_per_rank", g.kv_heads_local},
                            std::pair{"head_dim", g.head_dim}, std::pair{"key_bytes_per_scalar", g.k_bytes},
                            std::pair{"value_bytes_per_scalar", g.v_bytes}}) {
    if (value == 0) {
      Add(v, ErrorCode::LEDGER_ABI_INVALID, std::string("/cache_abi/") + key, "expected a positive value, got 0");
      abi_ok = false;
    }
  }
  if (!digest_ok || !abi_ok) return false;
  auto sha = CanonicalSha256(*d.abi);
  if (!sha.ok()) {
    Add(v, ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/cache_abi", std::string(sha.status().message()));
    return false;
  }
  if (*sha != d.abi_sha) {
    Add(v, ErrorCode::LEDGER_ABI_DIGEST_MISMATCH, "/cache_abi_sha256",
        "SHA256(canonical_json(cache_abi)) is " + *sha + " but the document binds " + d.abi_sha);
    return false;
  }
  auto bpt = BytesPerToken(g);
  if (!bpt.ok()) {
    Add(v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/cache_abi", std::string(bpt.status().message()));
    return false;
  }
  if (*bpt != d.bytes_per_token)
    Add(v, ErrorCode::LEDGER_TOKEN_COEFFICIENT_DRIFT, "/bytes_per_token",
        "L_cache * H_kv,local * d_h * (b_K + b_V) = " + std::to_string(*bpt) + " B/token, declared " +
            std::to_string(d.bytes_per_token));
  return v->size() == before;
}

// Stage 3: request declarations.
bool CheckRequests(const Doc& d, Violations* v) {
  size_t before = v->size();
  std::set<std::string> tiers;
  for (size_t i = 0; i < d.tiers.size(); ++i)
    if (!tiers.insert(d.tiers[i]).second)
      Add(v, ErrorCode::LEDGER_TIER_UNDECLARED, "/tiers/" + std::to_string(i),
          "tier " + base::QuoteClipped(d.tiers[i]) + " is declared twice");
  std::set<std::string> ids;
  for (const Request& r : d.requests) {
    if (!ids.insert(r.id).second)
      Add(v, ErrorCode::LEDGER_REQUEST_INVALID, r.ptr + "/request_id",
          "request id " + base::QuoteClipped(r.id) + " is declared twice");
    if (r.prompt == 0)
      Add(v, ErrorCode::LEDGER_REQUEST_INVALID, r.ptr + "/prompt_tokens", "expected at least one prompt token");
    if (r.capacity == 0)
      Add(v, ErrorCode::LEDGER_REQUEST_INVALID, r.ptr + "/reserved_token_capacity", "expected a positive capacity");
    if (r.replicas == 0 || r.replicas != r.tiers.size())
      Add(v, ErrorCode::LEDGER_REPLICA_TIER_MISMATCH, r.ptr + "/replica_count",
          "replica_count " + std::to_string(r.replicas) + " must be positive and equal the " +
              std::to_string(r.tiers.size()) + " copy residency tiers");
    for (size_t j = 0; j < r.tiers.size(); ++j)
      if (!tiers.count(r.tiers[j]))
        Add(v, ErrorCode::LEDGER_TIER_UNDECLARED, r.ptr + "/copy_tiers/" + std::to_string(j),
            "copy tier " + base::QuoteClipped(r.tiers[j]) + " is not one of the declared tiers");
  }
  return v->size() == before;
}

// Per-request lifecycle during replay.
struct Live {
  bool arrived = false, owns = false, finished = false, released = false;
  bool repaired = false;  // the repair append after finish published its row
  uint64_t prefilled = 0, committed = 0;
};

// Stage 4: replays the events; returns the ledger after each event, or nullopt after
// recording the first illegal event.
std::optional<std::vector<std::pair<ByteLedger, std::map<std::string, uint64_t>>>> Replay(
    const Doc& d, Violations* v) {
  std::map<std::string, const Request*> by_id;
  for (const Request& r : d.requests) by_id[r.id] = &r;
  std::map<std::string, Live> live;
  std::vector<std::pair<ByteLedger, std::map<std::string, uint64_t>>> out;
  for (size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    auto fail = [&](ErrorCode c, const std::string& field, const std::string& msg) {
      Add(v, c, e.ptr + field,
          "event at tau=" + std::to_string(e.tau) + " (" + base::Clipped(e.op) + " " +
              base::Clipped(e.request) + "): " + msg);
      return std::nullopt;
    };
    if (i > 0 && e.tau <= d.events[i - 1].tau)
      return fail(ErrorCode::LEDGER_EVENT_ORDER, "/tau",
                  "expected tau > " + std::to_string(d.events[i - 1].tau) + " (events are strictly ordered)");
    auto rq = by_id.find(e.request);
    if (rq == by_id.end()) return fail(ErrorCode::LEDGER_REQUEST_INVALID, "/request", "not a declared request");
    const Request& r = *rq->second;
    Live& s = live[e.request];
    bool publish =
        e.op == "prefill_publish" || e.op == "decode_publish" || e.op == "repair_publish";
    if (!publish && e.rows != 0)
      return fail(ErrorCode::LEDGER_NONPUBLISH_ROWS, "/rows", "expected 0 rows for a non-publication event");
    if (e.op == "arrive") {
      // (After its release a request takes no event, an arrival included: one code for every
      // event after release; probe 91: an arrival said "already arrived".)
      if (s.released)
        return fail(ErrorCode::LIFECYCLE_HANDLE_RELEASED, "/op",
                    "the request was already released");
      if (s.arrived) return fail(ErrorCode::LEDGER_WORK_BEFORE_ARRIVAL, "/op", "the request already arrived");
      s.arrived = true;
    } else if (!s.arrived) {
      return fail(ErrorCode::LEDGER_WORK_BEFORE_ARRIVAL, "/op", "the request has not arrived");
    } else if (s.released) {
      return fail(ErrorCode::LIFECYCLE_HANDLE_RELEASED, "/op", "the request was already released");
    } else if (e.op == "release") {
      if (!s.finished) return fail(ErrorCode::LIFECYCLE_RELEASE_LIVE, "/op", "the request has not finished");
      s.released = true;
      s.owns = false;
      s.committed = 0;
    } else if (e.op == "repair_publish") {
      // The repair append of 0x03: after an ordinary stop the last sampled token is emitted
      // but unprocessed (K_c = S + G_in); one call processes it, publishes one row per layer
      // and discards its logits, closing the frontier for reuse (0x05 FINISHED_RETAINED). Before
      // finish a one-row publication is an ordinary decode_publish.
      if (!s.finished)
        return fail(ErrorCode::SERVICE_PHASE_ILLEGAL, "/op",
                    "a repair append follows finish (the request has not finished; a one-row "
                    "publication before finish is decode_publish)");
      if (s.repaired)
        return fail(ErrorCode::FRONTIER_NOTHING_TO_REPAIR, "/op",
                    "the repair after finish already processed the final token");
      if (e.rows != 1)
        return fail(
            ErrorCode::FRONTIER_REPAIR_ROW_COUNT, "/rows",
            "a repair publishes exactly 1 row (the final token's), not " + std::to_string(e.rows));
      s.repaired = true;
      s.committed += 1;
    } else if (s.finished) {
      return fail(ErrorCode::LEDGER_EVENT_AFTER_FINISH, "/op",
                  "the request already finished (only repair_publish, once, or release follow)");
    } else if (e.op == "finish") {
      // Finish is a stop condition, an output decision: the first output is ready only after
      // prefill published the whole prompt (0x05); a request still waiting for prompt rows
      // has nothing to stop (the service and trace checkers' SERVICE_PHASE_EARLY_FINISH).
      if (s.prefilled != r.prompt)
        return fail(ErrorCode::SERVICE_PHASE_EARLY_FINISH, "/op",
                    "prefill has published " + std::to_string(s.prefilled) + " of " +
                        std::to_string(r.prompt) +
                        " prompt rows: no output is ready, so no stop condition was reached");
      s.finished = true;
    } else if (e.op == "prefill_publish") {
      if (e.rows == 0 || e.rows > r.prompt - s.prefilled)
        return fail(ErrorCode::LEDGER_PREFILL_OVERRUN, "/rows",
                    "expected 1.." + std::to_string(r.prompt - s.prefilled) + " remaining prompt rows");
      s.prefilled += e.rows;
      s.committed += e.rows;
      s.owns = true;
    } else {  // decode_publish
      // A decode before the whole prompt is published is the trace checker's and the service
      // oracle's SERVICE_PHASE_DECODE_BEFORE_PREFILL here too (probe 91: one condition, two codes;
      // as SERVICE_PHASE_EARLY_FINISH for a finish).
      if (s.prefilled != r.prompt)
        return fail(ErrorCode::SERVICE_PHASE_DECODE_BEFORE_PREFILL, "/op",
                    "prefill has published " + std::to_string(s.prefilled) + " of " +
                        std::to_string(r.prompt) +
                        " prompt rows: a decode follows the whole prompt's publication");
      if (e.rows != 1) return fail(ErrorCode::LEDGER_DECODE_NOT_ONE_ROW, "/rows", "expected exactly 1 row");
      s.committed += 1;
    }
    if (s.committed > r.capacity)
      return fail(ErrorCode::LEDGER_CAPACITY_EXCEEDED, "/request",
                  "committed length " + std::to_string(s.committed) + " exceeds reserved capacity " +
                      std::to_string(r.capacity) + " per copy");
    std::vector<OwnedCacheState> owned;
    std::map<std::string, uint64_t> committed;
    for (const Request& q : d.requests) {
      auto it = live.find(q.id);
      if (it == live.end() || !it->second.arrived || it->second.released) continue;
      committed[q.id] = it->second.committed;
      if (it->second.owns) owned.push_back({it->second.committed, q.capacity, q.tiers});
    }
    auto ledger = SnapshotLedger(owned, d.bytes_per_token, d.metadata_per_copy, d.tiers, e.workspace);
    if (!ledger.ok())
      return fail(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "", std::string(ledger.status().message()));
    out.emplace_back(*ledger, std::move(committed));
  }
  return out;
}

uint64_t Field(const ByteLedger& l, std::string_view k) {
  if (k == "logical") return l.logical;
  if (k == "materialized") return l.materialized;
  if (k == "replication_overhead") return l.replication_overhead;
  if (k == "reserved") return l.reserved;
  if (k == "reservation_slack") return l.reservation_slack;
  if (k == "allocator") return l.allocator;
  if (k == "physical") return l.physical;
  if (k == "temporary_workspace") return l.temporary_workspace;
  return l.instantaneous;
}

std::map<std::string, uint64_t> UintMap(const Json& obj) {
  std::map<std::string, uint64_t> m;
  for (auto it = obj.begin(); it != obj.end(); ++it) m[it.key()] = it.value().get<uint64_t>();
  return m;
}

std::string Render(const std::map<std::string, uint64_t>& m) {
  std::string s = "{";
  for (const auto& [k, x] : m)
    s += (s.size() > 1 ? ", " : "") + base::Clipped(k) + ": " + std::to_string(x);
  return s + "}";
}

// Stage 5: expected ledgers, peaks, terminal allocation.
void CheckExpected(const Doc& d, const std::vector<std::pair<ByteLedger, std::map<std::string, uint64_t>>>& got,
                   Violations* v) {
  uint64_t peak_physical = 0, peak_inst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Event& e = d.events[i];
    const ByteLedger& l = got[i].first;
    const Json& ex = *e.expected;
    std::string p = e.ptr + "/expected";
    peak_physical = std::max(peak_physical, l.physical);
    peak_inst = std::max(peak_inst, l.instantaneous);
    auto committed = UintMap(ex["committed"]);
    if (committed != got[i].second)
      Add(v, ErrorCode::LEDGER_EXPECTED_DRIFT, p + "/committed",
          "replayed committed lengths are " + Render(got[i].second) + ", declared " + Render(committed));
    for (const char* k : kScalarFields) {
      uint64_t declared = ex[k].get<uint64_t>();
      if (declared != Field(l, k))
        Add(v, ErrorCode::LEDGER_EXPECTED_DRIFT, p + "/" + k,
            std::string(k) + " recomputes to " + std::to_string(Field(l, k)) + " B, declared " + std::to_string(declared));
    }
    auto resident = UintMap(ex["resident_by_tier"]);
    std::set<std::string> keys, tiers(d.tiers.begin(), d.tiers.end());
    Checked c;
    uint64_t sum = 0;
    for (const auto& [k, x] : resident) {
      keys.insert(k);
      sum = c.Add(sum, x);
    }
    // The declared residency must partition the physical bytes over exactly the declared
    // tiers: the declared physical or the replayed one. Only a closed partition is compared
    // tier by tier. A drifted declared physical beside a residency that partitions the replayed
    // one is LEDGER_EXPECTED_DRIFT at /physical alone, not an open partition too.
    uint64_t declared_physical = ex["physical"].get<uint64_t>();
    if (keys != tiers) {
      std::string names;
      for (const std::string& t : tiers) names += (names.empty() ? "" : ", ") + t;
      Add(v, ErrorCode::LEDGER_TIER_PARTITION_OPEN, p + "/resident_by_tier",
          "declared residency " + Render(resident) +
              " names other tiers than the document's "
              "tiers [" +
              names + "]: a partition of physical bytes has one entry per declared tier");
    } else if (!c.ok || (sum != declared_physical && sum != l.physical)) {
      Add(v, ErrorCode::LEDGER_TIER_PARTITION_OPEN, p + "/resident_by_tier",
          "declared residency " + Render(resident) + " does not partition the declared physical " +
              std::to_string(declared_physical) + " B (nor the replayed " +
              std::to_string(l.physical) + " B) over the declared tiers");
    } else if (resident != l.resident_by_tier) {
      Add(v, ErrorCode::LEDGER_EXPECTED_DRIFT, p + "/resident_by_tier",
          "residency recomputes to " + Render(l.resident_by_tier) + ", declared " + Render(resident));
    }
  }
  if (!got.empty()) {
    // The requests that own cache state (committed rows) at the end. One that only arrived owns
    // none (arrival is not prefill, 0x02): it is no terminal allocation (probe 33 finding 06:
    // an arrive-only request raised this code with physical 0 B).
    const ByteLedger& last = got.back().first;
    size_t owners = 0;
    for (const auto& [id, committed] : got.back().second) owners += committed != 0 ? 1 : 0;
    if (last.physical != 0 || owners != 0)
      Add(v, ErrorCode::LEDGER_TERMINAL_ALLOCATION_NONZERO, d.events.back().ptr,
          "after the last event " + std::to_string(owners) +
              " request(s) still own cache state (physical " + std::to_string(last.physical) +
              " B); every request that published rows must be released");
  }
  if (peak_physical != d.peak_physical)
    Add(v, ErrorCode::LEDGER_EXPECTED_DRIFT, "/expected_peaks/physical",
        "peak physical recomputes to " + std::to_string(peak_physical) + " B, declared " + std::to_string(d.peak_physical));
  if (peak_inst != d.peak_instantaneous)
    Add(v, ErrorCode::LEDGER_EXPECTED_DRIFT, "/expected_peaks/instantaneous",
        "peak instantaneous recomputes to " + std::to_string(peak_inst) + " B, declared " +
            std::to_string(d.peak_instantaneous));
}

}  // namespace

StatusOr<ByteLedger> SnapshotLedger(std::span<const OwnedCacheState> owned, uint64_t bytes_per_token,
                                    uint64_t metadata_per_copy, std::span<const std::string> tiers,
                                    uint64_t workspace) {
  ByteLedger l;
  for (const std::string& t : tiers) l.resident_by_tier[t] = 0;
  Checked c;
  uint64_t copies = 0;
  for (const OwnedCacheState& s : owned) {
    if (s.copy_tiers.empty()) return InvalidArgument("a cache-owning request has zero copies");
    if (s.committed > s.capacity)
      return InvalidArgument("committed length " + std::to_string(s.committed) + " exceeds capacity " +
                                     std::to_string(s.capacity));
    uint64_t r = s.copy_tiers.size();
    uint64_t logical = c.Mul(s.committed, bytes_per_token);
    l.logical = c.Add(l.logical, logical);
    l.materialized = c.Add(l.materialized, c.Mul(r, logical));
    uint64_t per_copy_reserved = c.Mul(s.capacity, bytes_per_token);
    l.reserved = c.Add(l.reserved, c.Mul(r, per_copy_reserved));
    copies = c.Add(copies, r);
    uint64_t per_copy_physical = c.Add(per_copy_reserved, metadata_per_copy);
    for (const std::string& t : s.copy_tiers) {
      auto it = l.resident_by_tier.find(t);
      if (it == l.resident_by_tier.end())
        return InvalidArgument("copy tier " + base::QuoteClipped(t) + " is not declared");
      it->second = c.Add(it->second, per_copy_physical);
    }
  }
  l.replication_overhead = c.Sub(l.materialized, l.logical);
  l.reservation_slack = c.Sub(l.reserved, l.materialized);
  l.allocator = c.Mul(copies, metadata_per_copy);
  l.physical = c.Add(l.reserved, l.allocator);
  l.temporary_workspace = workspace;
  l.instantaneous = c.Add(l.physical, workspace);
  if (!c.ok) return OutOfRange("byte ledger arithmetic overflows 64 bits");
  return l;
}

Violations ValidateByteTrajectory(const Json& doc) {
  Violations v;
  Doc d;
  if (!ReadDoc(doc, &d, &v)) return v;
  if (!CheckAbi(d, &v)) return v;
  if (!CheckRequests(d, &v)) return v;
  auto got = Replay(d, &v);
  if (!got) return v;
  CheckExpected(d, *got, &v);
  return v;
}

}  // namespace kvc
