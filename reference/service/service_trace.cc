// ValidateServiceTrace and DeriveServiceMetrics; see service_trace.h for the projection
// and the check order.
#include "reference/service/service_trace.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/frontier/frontier.h"
#include "reference/frontier/phase.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc {
namespace {

struct Request {
  std::string id, ptr;
  uint64_t generation = 0, prompt = 0;
  std::vector<std::string> outputs;
};

struct Event {
  uint64_t t = 0;
  std::string request, op, token, ptr;
  uint64_t rows = 0, output_index = 0;
  std::optional<ServiceStateView> view;
};

struct Doc {
  CacheGeometry geometry;
  const Json* abi = nullptr;
  std::string abi_sha;
  uint64_t bytes_per_token = 0, window = 0, units_per_second = 1000;
  std::string time_unit;
  SloLimits slo;
  std::vector<Request> requests;
  std::vector<Event> events;
  const Json* expected = nullptr;  // expected_metrics (nullptr when only deriving)
};

// One request's replay state. The output/cache frontier rules live in frontier::FrontierState
// and the phase projection in frontier::Project; this file adds the service trace's own
// facts (arrival, the prefill begin/publish pairing, declared outputs, clocks) and keeps the
// lifecycle snapshot counters the projection reads (version: publications and release;
// incarnation: +1 on release, docs/lifecycle.md).
struct State {
  bool arrived = false;
  std::optional<frontier::FrontierState> frontier;
  lifecycle::Snapshot snapshot;
  uint64_t in_flight = 0;  // rows of the open prefill interval, 0 when none
  uint64_t arrival = 0;
  std::vector<uint64_t> output_times;
  std::optional<uint64_t> finish, release;
  ServiceStateView view;
  std::vector<std::pair<uint64_t, uint64_t>> steps;  // (time, committed tokens)
};

constexpr const char* kRequestMetricKeys[] = {"outputs", "ttft", "tbt", "tpot", "e2e", "release_lag", "slo_valid",
                                              "kv_byte_time"};
constexpr const char* kAggregateKeys[] = {"completed",       "slo_valid",           "throughput_per_s",
                                          "request_goodput_per_s", "goodput_fraction", "token_goodput_per_s",
                                          "kv_byte_time"};

// The form of a declared metric, read like any other field before its value is compared
// (a string TPOT was SERVICE_TPOT_UNDEFINED_AS_ZERO, an unknown member of a rational or a zero
// denominator SERVICE_METRIC_DRIFT, and integers beyond 2^53 passed): integers <= 2^53 (tbt an
// array of them, a request's slo_valid a boolean), rationals {num, den >= 1, value}, and null
// where a metric may be undefined (ttft, e2e, release_lag, tpot, goodput_fraction). A TPOT may
// also be a plain number here: declaring an undefined TPOT as 0 is SERVICE_TPOT_UNDEFINED_AS_ZERO,
// judged with the values (CompareMetric; a plain number for a defined TPOT is INPUT_FIELD_TYPE
// there).
void CheckMetricForm(const Json& x, const std::string& ptr, std::string_view key, bool aggregate,
                     Violations* v) {
  const bool rational = key == "tpot" || key.ends_with("_per_s") || key == "goodput_fraction";
  const bool nullable = key == "ttft" || key == "e2e" || key == "release_lag" || key == "tpot" ||
                        key == "goodput_fraction";
  if (x.is_null() && nullable) return;
  if (key == "tbt") {
    if (!x.is_array())
      Add(v, ErrorCode::INPUT_FIELD_TYPE, ptr,
          "expected an array of intervals, found " + std::string(JsonTypeName(x)));
    else
      FieldReader::UintArray(x, ptr, v);
    return;
  }
  if (key == "slo_valid" && !aggregate) {
    if (!x.is_boolean())
      Add(v, ErrorCode::INPUT_FIELD_TYPE, ptr,
          "expected a boolean, found " + std::string(JsonTypeName(x)));
    return;
  }
  if (!rational) {
    // A byte-time is a byte count times a clock span: beyond 2^53 at serving scale (512 MiB
    // held for a second in ns is 5.4e17), and exact to 2^64 here (probe 55: the calculator
    // printed it, and no document could declare it).
    ReadUint(x, ptr, v, 0, key == "kv_byte_time" ? UINT64_MAX : uint64_t{1} << 53);
    return;
  }
  if (key == "tpot" && x.is_number()) return;  // the undefined-as-zero mistake, judged later
  if (!x.is_object()) {
    Add(v, ErrorCode::INPUT_FIELD_TYPE, ptr,
        "expected a rational {num, den, value}" + std::string(nullable ? " or null" : "") +
            ", found " + std::string(JsonTypeName(x)));
    return;
  }
  FieldReader r(&x, ptr, v);
  r.Uint("num");
  r.Uint("den", 1);
  r.Number("value");
  r.RejectUnknownFields();
}

bool ReadDoc(const Json& doc, Doc* d, Violations* v, bool need_expected) {
  size_t before = v->size();
  FieldReader top(&doc, "", v);
  top.Enum("kind", {kServiceTraceKind});
  top.OptString("description");
  top.OptString("seed_ref");
  d->abi = ReadCacheAbiBinding(top, v, &d->geometry);
  if (auto s = top.String("cache_abi_sha256")) d->abi_sha = *s;
  if (auto x = top.Uint("bytes_per_token")) d->bytes_per_token = *x;
  if (auto s = top.Enum("time_unit", {"ms", "us", "ns"})) {
    d->time_unit = *s;
    d->units_per_second = *s == "ms" ? 1000 : *s == "us" ? 1000000 : 1000000000;
  }
  if (auto x = top.Uint("window", 1)) d->window = *x;
  FieldReader slo(top.Object("slo"), "/slo", v);
  if (auto x = slo.Uint("ttft_limit")) d->slo.ttft = *x;
  if (auto x = slo.Uint("tbt_limit")) d->slo.tbt = *x;
  slo.RejectUnknownFields();
  top.Enum("tpot_convention", {"mean_inter_output_gap_undefined_for_one_output"});
  if (const Json* reqs = top.Array("requests")) {
    for (size_t i = 0; i < reqs->size(); ++i) {
      Request r;
      r.ptr = "/requests/" + std::to_string(i);
      FieldReader rr(&(*reqs)[i], r.ptr, v);
      // A decision on the request object hides policy inside state as on a view (M5.1 0x05;
      // probe 92: it was INPUT_FIELD_UNKNOWN here).
      RejectPolicyFields(rr, "a request declaration", v);
      if (auto s = rr.String("request_id")) r.id = *s;
      // The release view reads the generation + 1, and a view's integers end at 2^53: a request
      // declaring 2^53 could never declare its release (probe 92: it was accepted).
      if (auto x = rr.Uint("handle_generation", 0, (uint64_t{1} << 53) - 1)) r.generation = *x;
      if (auto x = rr.Uint("prompt_tokens")) r.prompt = *x;
      if (const Json* outs = rr.Array("outputs")) {
        for (size_t j = 0; j < outs->size(); ++j) {
          if ((*outs)[j].is_string()) r.outputs.push_back((*outs)[j].get<std::string>());
          else Add(v, ErrorCode::INPUT_FIELD_TYPE, rr.Ptr("outputs") + "/" + std::to_string(j), "expected a token string");
        }
      }
      rr.RejectUnknownFields();
      d->requests.push_back(std::move(r));
    }
  }
  // The span of the event times that were read (an unreadable t, reported, is no time).
  std::optional<uint64_t> t_lo, t_hi;
  if (const Json* evs = top.Array("events")) {
    for (size_t i = 0; i < evs->size(); ++i) {
      Event e;
      e.ptr = "/events/" + std::to_string(i);
      const Json& ej = (*evs)[i];
      FieldReader er(&ej, e.ptr, v);
      RejectPolicyFields(er, "an event", v);  // a decision recorded as a fact of the timeline
      if (auto x = er.Uint("t")) {
        e.t = *x;
        t_lo = std::min(t_lo.value_or(*x), *x);
        t_hi = std::max(t_hi.value_or(*x), *x);
      }
      if (auto s = er.String("request")) e.request = *s;
      if (auto s = er.Enum("op", {"arrive", "prefill_begin", "prefill_publish", "emit",
                                  "decode_publish", "repair_publish", "finish", "release"}))
        e.op = *s;
      // Per-op operands: exactly the ones the op takes.
      if (e.op == "prefill_begin" || e.op == "prefill_publish") {
        if (auto x = er.Uint("rows")) e.rows = *x;
      } else if (e.op == "emit") {
        if (auto x = er.Uint("output_index")) e.output_index = *x;
        if (auto s = er.String("token")) e.token = *s;
      } else if (e.op == "decode_publish" || e.op == "repair_publish") {
        if (auto s = er.String("token")) e.token = *s;
      }
      if (need_expected) {
        if (const Json* view = er.Object("view")) e.view = ReadServiceStateView(*view, er.Ptr("view"), v);
      } else {
        er.Allow({"view"});
      }
      // An unreadable op has no known operands: its op is the one code (probe 55: an "emitt"
      // also made its output_index and token unknown members).
      if (!e.op.empty()) er.RejectUnknownFields();
      d->events.push_back(std::move(e));
    }
  }
  // W is the observation window of the rates: the events it counts lie inside it (the worked
  // trace spans t = 0..50 in W = 100). A window shorter than the events' span divides their
  // completions by less time than they took. Judged on the times that were read (probe 78: an
  // event whose t was out of range counted as t = 0 and raised a second, invented span).
  if (t_lo && d->window > 0) {
    const uint64_t lo = *t_lo, hi = *t_hi;
    if (d->window < hi - lo)
      Add(v, ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/window",
          "window W = " + std::to_string(d->window) +
              " is shorter than the trace's events (t = " + std::to_string(lo) + ".." +
              std::to_string(hi) + "): the rates would count completions outside their window");
  }
  if (need_expected) {
    d->expected = top.Object("expected_metrics");
    FieldReader em(d->expected, "/expected_metrics", v);
    if (const Json* per = em.Object("requests")) {
      for (auto it = per->begin(); it != per->end(); ++it) {
        FieldReader rm(&it.value(), "/expected_metrics/requests/" + JsonPointerEscape(it.key()), v);
        for (const char* k : kRequestMetricKeys)
          if (const Json* x = rm.Any(k)) CheckMetricForm(*x, rm.Ptr(k), k, false, v);
        rm.RejectUnknownFields();
      }
    }
    FieldReader ag(em.Object("aggregate"), "/expected_metrics/aggregate", v);
    for (const char* k : kAggregateKeys)
      if (const Json* x = ag.Any(k)) CheckMetricForm(*x, ag.Ptr(k), k, true, v);
    ag.RejectUnknownFields();
    em.RejectUnknownFields();
  } else {
    top.Allow({"expected_metrics"});
  }
  top.RejectUnknownFields();
  return v->size() == before;
}

bool CheckAbi(const Doc& d, Violations* v) {
  bool digest_ok = IsSha256Hex(d.abi_sha);
  if (!digest_ok)
    Add(v, ErrorCode::SERVICE_DIGEST_MALFORMED, "/cache_abi_sha256",
        "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(d.abi_sha));
  auto bpt = BytesPerToken(d.geometry);
  if (!bpt.ok()) {
    Add(v, ErrorCode::SERVICE_ABI_INVALID, "/cache_abi", std::string(bpt.status().message()));
    return false;
  }
  if (!digest_ok) return false;
  auto sha = CanonicalSha256(*d.abi);
  if (!sha.ok() || *sha != d.abi_sha) {
    Add(v, ErrorCode::SERVICE_ABI_DIGEST_MISMATCH, "/cache_abi_sha256",
        "SHA256(canonical_json(cache_abi)) is " + (sha.ok() ? *sha : std::string("uncomputable")) +
            " but the trace binds " + d.abi_sha);
    return false;
  }
  if (*bpt != d.bytes_per_token) {
    Add(v, ErrorCode::SERVICE_TOKEN_COEFFICIENT_DRIFT, "/bytes_per_token",
        "the cache ABI gives " + std::to_string(*bpt) + " B/token, declared " + std::to_string(d.bytes_per_token));
    return false;
  }
  return true;
}

bool CheckRequests(const Doc& d, Violations* v) {
  size_t before = v->size();
  std::set<std::string> ids;
  for (const Request& r : d.requests) {
    if (!ids.insert(r.id).second)
      Add(v, ErrorCode::SERVICE_REQUEST_INVALID, r.ptr + "/request_id",
          "request id " + base::QuoteClipped(r.id) + " is declared twice");
    if (r.prompt == 0) Add(v, ErrorCode::SERVICE_REQUEST_INVALID, r.ptr + "/prompt_tokens", "expected a prompt");
    if (r.outputs.empty()) Add(v, ErrorCode::SERVICE_REQUEST_INVALID, r.ptr + "/outputs", "expected at least one output");
  }
  return v->size() == before;
}

// An AppendCall with every member named (the struct has members without initializers).
frontier::AppendCall MakeCall(frontier::AppendPurpose purpose, uint64_t rows,
                              std::optional<uint64_t> input_token = std::nullopt) {
  frontier::AppendCall c;
  c.purpose = purpose;
  c.rows = rows;
  c.input_token = input_token;
  return c;
}

// The frontier's opaque token id of a token string: its first index among the request's
// declared outputs, or a value past them for an undeclared token.
uint64_t TokenId(const Request& r, const std::string& token) {
  for (size_t i = 0; i < r.outputs.size(); ++i)
    if (r.outputs[i] == token) return i;
  return r.outputs.size();
}

// Applies one event to `s`; returns false after recording why it is illegal.
bool Apply(const Doc& d, const Request& r, const Event& e, State& s, Violations* v) {
  auto fail = [&](ErrorCode c, const std::string& field, const std::string& msg) {
    Add(v, c, e.ptr + field,
        "t=" + std::to_string(e.t) + " " + e.op + " " + e.request + " (phase " +
            (s.arrived ? std::string(frontier::ServicePhaseName(s.view.phase)) : std::string("none: not arrived")) +
            "): " + msg);
    return false;
  };
  auto fail_status = [&](const Status& st, const std::string& field) {
    return fail(st.error() == ErrorCode::kNone ? ErrorCode::SERVICE_PHASE_ILLEGAL : st.error(), field,
                std::string(st.message()));
  };
  using lifecycle::Phase;
  using frontier::AppendCall;
  using frontier::AppendPurpose;
  lifecycle::Snapshot& snap = s.snapshot;
  // A call of one row processing `e.token` (decode_publish, repair_publish): judged by the
  // frontier, then published (one version, one committed row); false after recording why not.
  auto publish_row = [&](AppendPurpose purpose) {
    const AppendCall call = MakeCall(purpose, 1, TokenId(r, e.token));
    if (Status st = s.frontier->CheckAppend(call); !st.ok()) {
      if (st.error() != ErrorCode::FRONTIER_TOKEN_MISMATCH) return fail_status(st, "/op");
      // The frontier names tokens by their ids here (indices into the request's outputs); the
      // message also names them as this document writes them (probe 78).
      const std::optional<uint64_t> want = s.frontier->frontier_token();
      return fail_status(
          Status(st.code(),
                 std::string(st.message()) + " (token ids are indices into request " +
                     base::Clipped(e.request) + "'s outputs: the event processes " +
                     base::QuoteClipped(e.token) +
                     (want && *want < r.outputs.size() ? ", the unprocessed frontier token is " +
                                                             base::QuoteClipped(r.outputs[*want])
                                                       : std::string()) +
                     ")",
                 st.error()),
          "/token");
    }
    s.frontier->ApplyPublished(call);
    snap.version += 1;
    snap.committed_length = s.frontier->committed();
    s.steps.emplace_back(e.t, snap.committed_length);
    return true;
  };
  if (e.op == "arrive") {
    // (After its release a request takes no event, an arrival included: the byte trajectory's
    // code too; probe 95.)
    if (snap.phase == Phase::kReleased)
      return fail(ErrorCode::LIFECYCLE_HANDLE_RELEASED, "/op",
                  "the request was released; no later event is legal");
    if (s.arrived) return fail(ErrorCode::SERVICE_WORK_BEFORE_ARRIVAL, "/op", "the request already arrived");
    s.arrived = true;
    s.frontier.emplace(r.prompt);
    snap.handle_id = snap.lineage_id = r.id;
    snap.incarnation = r.generation;
    s.arrival = e.t;
    s.steps.emplace_back(e.t, 0);
  } else if (!s.arrived) {
    return fail(ErrorCode::SERVICE_WORK_BEFORE_ARRIVAL, "/op", "the request has not arrived");
  } else if (snap.phase == Phase::kReleased) {
    return fail(ErrorCode::LIFECYCLE_HANDLE_RELEASED, "/op", "the request was released; no later event is legal");
  } else if (e.op == "release") {
    if (snap.phase != Phase::kFinished)
      return fail(ErrorCode::LIFECYCLE_RELEASE_LIVE, "/op", "only a finished request may release");
    snap.phase = Phase::kReleased;
    snap.version += 1;
    snap.incarnation += 1;
    snap.committed_length = 0;
    s.release = e.t;
    s.steps.emplace_back(e.t, 0);
  } else if (e.op == "repair_publish") {
    // A repair processes the unprocessed output frontier token for reuse and discards its
    // logits (no output follows): legal before or after finish (0x05 FINISHED_RETAINED: "the
    // owner can retain, repair for reuse, or release"). The frontier judges the token and row.
    if (!publish_row(AppendPurpose::kRepair)) return false;
  } else if (snap.phase == Phase::kFinished) {
    return fail(ErrorCode::SERVICE_PHASE_ILLEGAL, "/op",
                "the request already finished; only repair_publish (of the final output, for "
                "reuse) or release is legal");
  } else if (e.op == "prefill_begin") {
    if (s.in_flight != 0 || s.frontier->prompt_complete())
      return fail(ErrorCode::SERVICE_PHASE_ILLEGAL, "/op", "prefill may begin only while prompt rows wait");
    if (e.rows == 0) return fail(ErrorCode::LIFECYCLE_APPEND_EMPTY, "/rows", "a prefill interval selects no rows");
    if (Status st = s.frontier->CheckAppend(MakeCall(AppendPurpose::kPrefill, e.rows)); !st.ok()) return fail_status(st, "/rows");
    s.in_flight = e.rows;
  } else if (e.op == "prefill_publish") {
    if (s.in_flight == 0 || e.rows != s.in_flight)
      return fail(ErrorCode::SERVICE_PUBLISH_BEFORE_PREFILL_BEGIN, "/rows",
                  "a publication must publish exactly the in-flight prefill interval (" + std::to_string(s.in_flight) +
                      " rows)");
    s.frontier->ApplyPublished(MakeCall(AppendPurpose::kPrefill, e.rows));
    s.in_flight = 0;
    snap.version += 1;
    snap.committed_length = s.frontier->committed();
    s.steps.emplace_back(e.t, snap.committed_length);
  } else if (e.op == "emit") {
    if (s.in_flight != 0)
      return fail(ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS, "/op", "a prefill interval is still in flight");
    if (Status st = s.frontier->Emit(e.output_index, TokenId(r, e.token)); !st.ok())
      return fail_status(st, st.error() == ErrorCode::FRONTIER_OUTPUT_INDEX_GAP ? "/output_index" : "/op");
    uint64_t index = s.frontier->emitted() - 1;
    if (index >= r.outputs.size() || e.token != r.outputs[index])
      return fail(ErrorCode::SERVICE_OUTPUT_TOKEN_MISMATCH, "/token",
                  "output " + std::to_string(index) + " is declared as " +
                      (index < r.outputs.size() ? base::QuoteClipped(r.outputs[index])
                                                : std::string("\"(none)\"")) +
                      ", emitted " + base::QuoteClipped(e.token));
    s.output_times.push_back(e.t);
  } else if (e.op == "decode_publish") {
    if (!publish_row(AppendPurpose::kDecode)) return false;
  } else {  // finish
    if (s.in_flight != 0)
      return fail(ErrorCode::SERVICE_PHASE_EARLY_FINISH, "/op", "a prefill interval is still in flight");
    if (Status st = s.frontier->CheckFinish(); !st.ok()) return fail_status(st, "/op");
    if (s.frontier->emitted() != r.outputs.size())
      return fail(ErrorCode::SERVICE_FINISH_BEFORE_DECLARED_OUTPUTS, "/op",
                  "finished after " + std::to_string(s.frontier->emitted()) + " of " +
                      std::to_string(r.outputs.size()) + " declared outputs");
    snap.phase = Phase::kFinished;
    s.finish = e.t;
  }
  if (!CheckedMul(snap.committed_length, d.bytes_per_token))
    return fail(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "", "logical payload overflows 64 bits");
  s.view = WithClocks(frontier::Project(snap, *s.frontier, s.in_flight != 0, d.bytes_per_token), s.arrival,
                      s.output_times, s.finish, s.release);
  return true;
}

struct Replayed {
  std::map<std::string, State> states;
  std::vector<ServiceStateView> views;  // the event's request after each event
};

std::optional<Replayed> Replay(const Doc& d, Violations* v) {
  std::map<std::string, const Request*> by_id;
  for (const Request& r : d.requests) by_id[r.id] = &r;
  Replayed out;
  for (size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    if (i > 0 && e.t < d.events[i - 1].t) {
      Add(v, ErrorCode::SERVICE_EVENT_ORDER, e.ptr + "/t",
          "expected t >= " + std::to_string(d.events[i - 1].t) + ", got " + std::to_string(e.t));
      return std::nullopt;
    }
    auto it = by_id.find(e.request);
    if (it == by_id.end()) {
      Add(v, ErrorCode::SERVICE_REQUEST_INVALID, e.ptr + "/request",
          base::QuoteClipped(e.request) + " is not a declared request");
      return std::nullopt;
    }
    State& s = out.states[e.request];
    if (!Apply(d, *it->second, e, s, v)) return std::nullopt;
    out.views.push_back(s.view);
  }
  return out;
}

// Derives the metrics of a replayed trace.
StatusOr<ServiceTraceMetrics> Metrics(const Doc& d, const Replayed& rp) {
  ServiceTraceMetrics m;
  m.time_unit = d.time_unit;
  std::vector<RequestMetrics> all;
  for (const Request& r : d.requests) {
    auto it = rp.states.find(r.id);
    if (it == rp.states.end()) continue;
    const State& st = it->second;
    RequestEndpoints ep{st.arrival, st.output_times, st.finish, st.release, st.finish.has_value(), st.steps};
    auto rm = ComputeRequestMetrics(ep, d.slo, d.bytes_per_token);
    if (!rm.ok()) return rm.status();
    m.requests[r.id] = *rm;
    all.push_back(*rm);
  }
  auto agg = ComputeAggregateMetrics(all, d.window, d.units_per_second);
  if (!agg.ok()) return agg.status();
  m.aggregate = *agg;
  return m;
}

void CompareMetric(const Json& declared, const Json& derived, const std::string& ptr, const char* key,
                   Violations* v) {
  if (declared == derived) return;
  if (std::string_view(key) == "tpot" && derived.is_null()) {
    Add(v, ErrorCode::SERVICE_TPOT_UNDEFINED_AS_ZERO, ptr,
        "TPOT is undefined for a one-output request (no inter-output interval), declared " +
            base::ClippedJsonText(declared.dump()));
    return;
  }
  // A plain number passes the form check only for the undefined-as-zero mistake above; for a
  // defined TPOT it is the wrong form, not a wrong value (probe 33 finding 04: it was
  // SERVICE_METRIC_DRIFT even when it was the right mean).
  if (std::string_view(key) == "tpot" && declared.is_number()) {
    Add(v, ErrorCode::INPUT_FIELD_TYPE, ptr,
        "expected a rational {num, den, value} (TPOT derives to " + derived.dump() +
            "), found a plain number " + base::ClippedJsonText(declared.dump()));
    return;
  }
  Add(v, ErrorCode::SERVICE_METRIC_DRIFT, ptr,
      std::string(key) + " derives to " + derived.dump() + ", declared " +
          base::ClippedJsonText(declared.dump()));
}

}  // namespace

Json RationalToJson(const Rational& r) { return Json{{"num", r.num}, {"den", r.den}, {"value", r.Value()}}; }

Json RequestMetricsToJson(const RequestMetrics& m) {
  auto opt = [](const std::optional<uint64_t>& x) { return x ? Json(*x) : Json(nullptr); };
  return Json{{"outputs", m.outputs},
              {"ttft", opt(m.ttft)},
              {"tbt", m.tbt},
              {"tpot", m.tpot ? RationalToJson(*m.tpot) : Json(nullptr)},
              {"e2e", opt(m.e2e)},
              {"release_lag", opt(m.release_lag)},
              {"slo_valid", m.slo_valid},
              {"kv_byte_time", m.kv_byte_time}};
}

Json AggregateMetricsToJson(const AggregateMetrics& a) {
  return Json{{"completed", a.completed},
              {"slo_valid", a.slo_valid},
              {"throughput_per_s", RationalToJson(a.throughput)},
              {"request_goodput_per_s", RationalToJson(a.request_goodput)},
              {"goodput_fraction", a.goodput_fraction ? RationalToJson(*a.goodput_fraction) : Json(nullptr)},
              {"token_goodput_per_s", RationalToJson(a.token_goodput)},
              {"kv_byte_time", a.kv_byte_time}};
}

// Every request of a closed trace releases by its last event (its E2E, release lag and byte-time
// are defined only then). Reports each open one; true when none is.
static bool CheckClosed(const Doc& d, const Replayed& rp, Violations* v) {
  const size_t before = v->size();
  for (const Request& r : d.requests) {
    auto it = rp.states.find(r.id);
    if (it == rp.states.end() || it->second.snapshot.phase != lifecycle::Phase::kReleased)
      Add(v, ErrorCode::SERVICE_TERMINAL_STATE_OPEN, r.ptr,
          "request " + base::Clipped(r.id) + " ends in " +
              std::string(it == rp.states.end()
                              ? "no event"
                              : frontier::ServicePhaseName(it->second.view.phase)) +
              "; every request of a closed trace releases");
  }
  return v->size() == before;
}

Violations ValidateServiceTrace(const Json& doc) {
  Violations v;
  Doc d;
  if (!ReadDoc(doc, &d, &v, true)) return v;
  if (!CheckAbi(d, &v)) return v;
  if (!CheckRequests(d, &v)) return v;
  auto rp = Replay(d, &v);
  if (!rp) return v;
  const bool closed = CheckClosed(d, *rp, &v);
  for (size_t i = 0; i < d.events.size(); ++i) {
    Json got = ServiceStateViewToJson(rp->views[i]);
    Json want = ServiceStateViewToJson(*d.events[i].view);
    for (auto it = got.begin(); it != got.end(); ++it)
      if (want[it.key()] != it.value())
        Add(&v, ErrorCode::SERVICE_VIEW_DRIFT, d.events[i].ptr + "/view/" + it.key(),
            "projects to " + base::ClippedJsonText(it.value().dump()) + ", declared " +
                base::ClippedJsonText(want[it.key()].dump()));
  }
  // The metrics derive from the replayed events, not from the declared views: a drifted view
  // hides no metric violation. An open trace has no metrics (E2E, release lag and byte-time of
  // an unreleased request are undefined), so they are compared for a closed trace only.
  if (!closed) return v;
  auto m = Metrics(d, *rp);
  if (!m.ok()) {
    Add(&v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/events", std::string(m.status().message()));
    return v;
  }
  const Json& per = (*d.expected)["requests"];
  std::set<std::string> declared_ids;
  for (auto it = per.begin(); it != per.end(); ++it) declared_ids.insert(it.key());
  for (const auto& [id, rm] : m->requests) {
    std::string p = "/expected_metrics/requests/" + JsonPointerEscape(id);
    if (!declared_ids.erase(id)) {
      Add(&v, ErrorCode::SERVICE_METRIC_DRIFT, p,
          "metrics of request " + base::Clipped(id) + " are not declared");
      continue;
    }
    Json derived = RequestMetricsToJson(rm);
    for (const char* k : kRequestMetricKeys) CompareMetric(per[id][k], derived[k], p + "/" + k, k, &v);
  }
  for (const auto& id : declared_ids)
    Add(&v, ErrorCode::SERVICE_METRIC_DRIFT, "/expected_metrics/requests/" + JsonPointerEscape(id),
        "metrics declared for a request with no events");
  Json agg = AggregateMetricsToJson(m->aggregate);
  for (const char* k : kAggregateKeys)
    CompareMetric((*d.expected)["aggregate"][k], agg[k], std::string("/expected_metrics/aggregate/") + k, k, &v);
  return v;
}

StatusOr<ServiceTraceMetrics> DeriveServiceMetrics(const Json& doc) {
  Violations v;
  Doc d;
  // The first violation: its registry code (Status::error()) and, in the message, its code,
  // pointer and message.
  auto first = [&]() {
    const Violation f = ForReport(v.front());
    return ViolationStatus(
        f.code, std::string(ErrorCodeName(f.code)) + " at '" + f.pointer + "': " + f.message);
  };
  if (!ReadDoc(doc, &d, &v, false)) return first();
  if (!CheckAbi(d, &v) || !CheckRequests(d, &v)) return first();
  auto rp = Replay(d, &v);
  if (!rp) return first();
  // An open request's metrics are not defined (calc used to print a byte-time that stopped at
  // its last publication, and left out a request with no events).
  if (!CheckClosed(d, *rp, &v)) return first();
  return Metrics(d, *rp);
}

}  // namespace kvc
