// The M5.6 0x0F transfer-trace analyzer: identity, ordering, bytes, wall/overlap/exposed.
#include "reference/handoff/transfer_trace.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/schedule.h"
#include "reference/handoff/transfer_txn.h"

namespace kvc::handoff {
namespace {

struct Ev {
  std::string phase, result, transfer_id;
  uint64_t generation = 0, start = 0, end = 0, bytes = 0, attempt = 1;
  std::optional<uint64_t> layer;
};

struct Trace {
  std::string transfer_id;
  uint64_t generation = 0, payload = 0, decode_ready = 0;
  std::map<uint64_t, uint64_t> layer_bytes;
  std::vector<Ev> events;
};

bool Read(const Json& doc, Trace* t, Violations* v) {
  size_t before = v->size();
  FieldReader top(&doc, "", v);
  top.Enum("kind", {kTransferTraceKind});
  top.OptString("description");
  top.OptString("seed_ref");
  top.String("link");
  FieldReader tx(top.Object("transaction"), "/transaction", v);
  if (auto s = tx.String("transfer_id")) {
    t->transfer_id = *s;
    // The identity every event repeats (probe 67: an empty one passed).
    if (std::string why = TransferIdProblem(*s); !why.empty())
      v->push_back({ErrorCode::INPUT_VALUE_INVALID, "/transaction/transfer_id", why});
  }
  if (auto x = tx.Uint("generation")) t->generation = *x;
  tx.RejectUnknownFields();
  if (auto x = top.Uint("payload_bytes")) t->payload = *x;
  if (auto x = top.Uint("decode_ready_us")) t->decode_ready = *x;
  if (const Json* ls = top.Array("layers")) {
    // A transfer moves at least one layer (probe 67: "layers": [] skipped the whole chain).
    if (ls->empty())
      v->push_back({ErrorCode::INPUT_VALUE_INVALID, "/layers",
                    "a transfer moves at least one layer; none is declared"});
    for (size_t i = 0; i < ls->size(); ++i) {
      FieldReader l(&(*ls)[i], "/layers/" + std::to_string(i), v);
      auto id = l.Uint("layer");
      auto b = l.Uint("bytes", 1);
      l.RejectUnknownFields();
      if (id && b && !t->layer_bytes.emplace(*id, *b).second)
        v->push_back({ErrorCode::INPUT_VALUE_INVALID, "/layers/" + std::to_string(i),
                      "layer declared twice"});
    }
  }
  if (const Json* es = top.Array("events")) {
    for (size_t i = 0; i < es->size(); ++i) {
      FieldReader e(&(*es)[i], "/events/" + std::to_string(i), v);
      Ev ev;
      if (auto s = e.Enum("phase", {"registration", "gather", "network", "device_copy",
                                    "visibility", "publication"}))
        ev.phase = *s;
      if (auto s = e.String("transfer_id")) ev.transfer_id = *s;
      if (auto x = e.Uint("generation")) ev.generation = *x;
      // The other members depend on the phase: with no phase read (reported), they are not
      // judged, so a misspelled phase is one code, as an event type of transfer_protocol/1 is
      // (since 2026-12-06, helper 115's review: "netwrok" also raised INPUT_FIELD_UNKNOWN for
      // its attempt and bytes, and an unknown phase INPUT_FIELD_MISSING for its layer).
      if (ev.phase.empty()) continue;
      if (ev.phase == "visibility") {
        if (auto x = e.Uint("at_us")) ev.start = ev.end = *x;
      } else {
        if (auto x = e.Uint("start_us")) ev.start = *x;
        if (auto x = e.Uint("end_us")) ev.end = *x;
      }
      if (ev.phase != "registration" && ev.phase != "publication") {
        if (auto x = e.Uint("layer")) ev.layer = *x;
      }
      if (ev.phase == "gather" || ev.phase == "network" || ev.phase == "device_copy")
        if (auto x = e.Uint("bytes")) ev.bytes = *x;
      if (ev.phase == "network") {
        if (auto x = e.Uint("attempt", 1)) ev.attempt = *x;
        if (auto s = e.Enum("result", {"ok", "failed"})) ev.result = *s;
      } else if (ev.phase == "publication") {
        if (auto s = e.Enum("result", {"ok", "failed"})) ev.result = *s;
      } else if (ev.phase == "registration" || !e.Has("result")) {
        ev.result = "ok";
      } else if (auto s = e.Enum("result", {"ok", "failed"})) {
        // A gather, device copy or visibility may fail and be redone (since 2026-12-06: before,
        // these carried no result, so a re-copy read as the layer's bytes copied twice).
        ev.result = *s;
      }
      e.RejectUnknownFields();
      t->events.push_back(std::move(ev));
    }
  }
  FieldReader d(top.Object("declared"), "/declared", v);
  for (const char* k : {"wall_us", "overlapped_us", "exposed_us", "retries", "transferred_bytes"})
    d.Uint(k);
  d.RejectUnknownFields();
  top.RejectUnknownFields();
  return v->size() == before;
}

// Checks 2-3; returns the summary when the trace is sound.
std::optional<TraceSummary> Check(const Trace& t, Violations* v) {
  size_t before = v->size();
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Ev& e = t.events[i];
    std::string ptr = "/events/" + std::to_string(i);
    if (e.transfer_id != t.transfer_id || e.generation != t.generation)
      v->push_back({ErrorCode::HANDOFF_TRACE_IDENTITY_MISMATCH, ptr,
                    e.phase + " event carries " + base::Clipped(e.transfer_id) + "@" +
                        std::to_string(e.generation) + ", the transaction is " +
                        base::Clipped(t.transfer_id) + "@" + std::to_string(t.generation)});
    if (e.end < e.start)
      v->push_back({ErrorCode::HANDOFF_TRACE_INTERVAL_INVALID, ptr + "/end_us",
                    e.phase + " ends at " + std::to_string(e.end) + " us before it starts at " +
                        std::to_string(e.start)});
    if (e.layer && !t.layer_bytes.count(*e.layer))
      v->push_back({ErrorCode::HANDOFF_TRACE_INTERVAL_INVALID, ptr + "/layer",
                    "layer " + std::to_string(*e.layer) + " is not a declared layer"});
    // One event moves at most its layer's bytes (probe 67: a failed attempt of 10^15 B of a
    // 4 MiB layer passed).
    else if (e.layer && e.bytes > t.layer_bytes.at(*e.layer))
      v->push_back({ErrorCode::HANDOFF_TRACE_BYTES_MISMATCH, ptr + "/bytes",
                    e.phase + " of layer " + std::to_string(*e.layer) + " moves " +
                        std::to_string(e.bytes) + " B, more than the layer's " +
                        std::to_string(t.layer_bytes.at(*e.layer)) + " B"});
  }
  if (v->size() != before) return std::nullopt;

  // Ordering: per layer, the earliest end of an ok network attempt (a device copy may start once
  // the first piece is delivered: pipelined), and the latest ends of the ok network attempts
  // and of the device copies (a layer split into pieces is delivered, and copied, when its
  // last piece is: probe 67, a second piece arriving after the layer was made visible passed).
  std::map<uint64_t, uint64_t> net_done, net_last, copy_last, visible, net_bytes;
  // A layer's gathers and device copies each move its bytes too (probe 49: a 1-byte copy of a
  // 4 MiB layer passed): summed per layer, with the last such event's index for the pointer.
  std::map<uint64_t, uint64_t> gather_bytes, copy_bytes;
  std::map<uint64_t, size_t> last_gather, last_copy;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Ev& e = t.events[i];
    if (!e.layer || e.result != "ok" || (e.phase != "gather" && e.phase != "device_copy")) continue;
    const bool gather = e.phase == "gather";
    auto sum = CheckedAdd((gather ? gather_bytes : copy_bytes)[*e.layer], e.bytes);
    if (!sum) {
      v->push_back(
          {ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/events", "layer bytes overflow 64 bits"});
      return std::nullopt;
    }
    (gather ? gather_bytes : copy_bytes)[*e.layer] = *sum;
    (gather ? last_gather : last_copy)[*e.layer] = i;
  }
  for (const Ev& e : t.events) {
    if (!e.layer) continue;
    if (e.phase == "network" && e.result == "ok") {
      net_done[*e.layer] = net_done.count(*e.layer) ? std::min(net_done[*e.layer], e.end) : e.end;
      net_last[*e.layer] = std::max(net_last[*e.layer], e.end);
      auto sum = CheckedAdd(net_bytes[*e.layer], e.bytes);
      if (!sum) {
        v->push_back(
            {ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/events", "layer bytes overflow 64 bits"});
        return std::nullopt;
      }
      net_bytes[*e.layer] = *sum;
    }
    if (e.phase == "device_copy" && e.result == "ok")
      copy_last[*e.layer] = std::max(copy_last[*e.layer], e.end);
  }
  // The chain of M5.6 0x0F, layer by layer: registration -> gather -> network attempts ->
  // device copy -> visibility. Each phase consumes the one before it, so it starts only once
  // that one ended (probe 36: a device copy finishing before the network delivered the layer,
  // and a send of a layer not yet gathered, passed; so did a trace without a registration or a
  // layer's gather once the declared summary was adjusted).
  {
    const size_t before_chain = v->size();
    std::optional<uint64_t> registered;     // the earliest registration's end
    std::map<uint64_t, uint64_t> gathered;  // layer -> earliest gather end
    std::map<uint64_t, uint64_t> gather_last;  // layer -> latest gather end
    std::optional<uint64_t> published;         // the successful publication's start
    for (const Ev& e : t.events) {
      if (e.phase == "registration") registered = std::min(registered.value_or(e.end), e.end);
      if (e.phase == "gather" && e.layer && e.result == "ok") {
        gathered[*e.layer] = gathered.count(*e.layer) ? std::min(gathered[*e.layer], e.end) : e.end;
        gather_last[*e.layer] = std::max(gather_last[*e.layer], e.end);
      }
      if (e.phase == "publication" && e.result == "ok")
        published = std::min(published.value_or(e.start), e.start);
    }
    if (!registered)
      v->push_back({ErrorCode::HANDOFF_TRACE_PHASE_MISSING, "/events",
                    "no registration event: the chain starts with the registration of the "
                    "transfer's memory (M5.6 0x0F)"});
    for (const auto& [l, bytes] : t.layer_bytes)
      if (!gathered.count(l))
        v->push_back({ErrorCode::HANDOFF_TRACE_PHASE_MISSING, "/events",
                      "layer " + std::to_string(l) + " has no successful gather event"});
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Ev& e = t.events[i];
      const std::string ptr = "/events/" + std::to_string(i) + "/start_us";
      auto late = [&](uint64_t ready, const std::string& what) {
        v->push_back({ErrorCode::HANDOFF_TRACE_ORDER_INVALID, ptr,
                      e.phase + (e.layer ? " of layer " + std::to_string(*e.layer) : "") +
                          " starts at " + std::to_string(e.start) + " us, before " + what +
                          " ends at " + std::to_string(ready) + " us"});
      };
      if (e.phase == "gather" && registered && e.start < *registered)
        late(*registered, "the registration");
      if (!e.layer) continue;
      if (e.phase == "network" && gathered.count(*e.layer) && e.start < gathered[*e.layer])
        late(gathered[*e.layer], "its gather");
      if (e.phase == "device_copy" && net_done.count(*e.layer) && e.start < net_done[*e.layer])
        late(net_done[*e.layer], "its successful network attempt");
    }
    // Pieces: a layer's last gather piece ends before its last successful network piece does
    // (nothing is sent that was not gathered), and its last device copy ends after it (nothing
    // is copied that was not delivered); probe 67.
    for (size_t i = 0; i < t.events.size(); ++i) {
      const Ev& e = t.events[i];
      if (!e.layer || !net_last.count(*e.layer)) continue;
      const uint64_t delivered = net_last[*e.layer];
      if (e.result != "ok") continue;  // a failed piece delivered or copied nothing
      const bool gather_late = e.phase == "gather" && e.end > delivered;
      const bool copy_early = e.phase == "device_copy" && e.end == copy_last[*e.layer] &&
                              copy_last[*e.layer] < delivered;
      if (gather_late || copy_early)
        v->push_back({ErrorCode::HANDOFF_TRACE_ORDER_INVALID,
                      "/events/" + std::to_string(i) + "/end_us",
                      e.phase + " of layer " + std::to_string(*e.layer) + " ends at " +
                          std::to_string(e.end) + " us, " + (gather_late ? "after" : "before") +
                          " the layer's last successful network piece ends at " +
                          std::to_string(delivered) + " us"});
    }
    // Network attempts of a layer, in start order, are numbered from 1, a retry after a failed
    // attempt with a higher number; none starts once the layer's bytes were all delivered
    // (probe 67: attempt 1 failed then attempt 1 ok, attempt 7 alone, and a failed attempt after
    // delivery passed, counted as retries).
    {
      std::map<uint64_t, std::vector<size_t>> attempts;  // layer -> network events
      for (size_t i = 0; i < t.events.size(); ++i)
        if (t.events[i].phase == "network" && t.events[i].layer)
          attempts[*t.events[i].layer].push_back(i);
      for (auto& [l, idx] : attempts) {
        std::stable_sort(idx.begin(), idx.end(),
                         [&](size_t a, size_t b) { return t.events[a].start < t.events[b].start; });
        uint64_t prev = 0, delivered_bytes = 0;
        bool prev_failed = false;
        for (size_t k = 0; k < idx.size(); ++k) {
          const Ev& e = t.events[idx[k]];
          const std::string ptr = "/events/" + std::to_string(idx[k]);
          std::string why;
          if (k == 0 && e.attempt != 1)
            why = "the layer's first network attempt is numbered " + std::to_string(e.attempt) +
                  ", not 1";
          else if (k > 0 && (e.attempt < prev || (prev_failed && e.attempt == prev)))
            why = "attempt " + std::to_string(e.attempt) + " follows attempt " +
                  std::to_string(prev) +
                  (prev_failed ? ", which failed (a retry is a new attempt)"
                               : " (attempts are numbered upward)");
          // (A second successful delivery is HANDOFF_TRACE_BYTES_MISMATCH below.)
          else if (e.result != "ok" && delivered_bytes >= t.layer_bytes.at(l))
            why = "the layer's bytes were all delivered before this attempt starts";
          if (!why.empty())
            v->push_back({ErrorCode::HANDOFF_TRACE_ORDER_INVALID, ptr + "/attempt",
                          "network attempt of layer " + std::to_string(l) + ": " + why});
          if (e.result == "ok")  // saturating at the layer's bytes: no sum of pieces overflows
            delivered_bytes = std::min(t.layer_bytes.at(l),
                                       delivered_bytes + std::min(e.bytes, t.layer_bytes.at(l)));
          prev = e.attempt;
          prev_failed = e.result != "ok";
        }
      }
    }
    // Nothing of the chain happens after the publication: it publishes the layers as they are
    // (probe 67: a registration, a network attempt and a gather after it passed).
    if (published)
      for (size_t i = 0; i < t.events.size(); ++i) {
        const Ev& e = t.events[i];
        // (A successful visibility after it is HANDOFF_TRACE_VISIBILITY_MISSING below: the layer
        // was not visible when it was published. A failed one claims nothing there, so it is
        // judged here: since 2026-12-06, helper 115's review, it passed and stretched wall_us.)
        if (e.phase == "publication" || (e.phase == "visibility" && e.result == "ok") ||
            e.start <= *published)
          continue;
        v->push_back({ErrorCode::HANDOFF_TRACE_ORDER_INVALID,
                      "/events/" + std::to_string(i) +
                          (e.phase == "visibility" ? "/at_us" : "/start_us"),
                      e.phase + (e.layer ? " of layer " + std::to_string(*e.layer) : "") +
                          " starts at " + std::to_string(e.start) +
                          " us, after the publication at " + std::to_string(*published) +
                          " us (nothing of a transfer follows its publication)"});
      }
    if (v->size() != before_chain) return std::nullopt;
  }
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Ev& e = t.events[i];
    if (e.phase != "visibility" || e.result != "ok") continue;  // a failed one claims nothing
    uint64_t l = *e.layer;
    bool copied = net_last.count(l) && copy_last.count(l) && net_last[l] <= e.start &&
                  copy_last[l] <= e.start;
    if (!copied)
      v->push_back({ErrorCode::HANDOFF_TRACE_VISIBLE_BEFORE_COPY, "/events/" + std::to_string(i),
                    "layer " + std::to_string(l) + " is visible at " + std::to_string(e.start) +
                        " us without a completed successful network attempt and device copy"});
    // A premature visibility is still the layer's visibility event: its prematurity is the
    // root cause reported above, not a missing event.
    if (!visible.count(l) || e.start < visible[l]) visible[l] = e.start;
  }
  std::vector<size_t> pubs;
  for (size_t i = 0; i < t.events.size(); ++i)
    if (t.events[i].phase == "publication" && t.events[i].result == "ok") pubs.push_back(i);
  if (pubs.size() != 1) {
    v->push_back(
        {ErrorCode::HANDOFF_TRACE_PUBLICATION_COUNT, "/events",
         "expected exactly one successful publication, found " + std::to_string(pubs.size())});
  } else {
    const Ev& p = t.events[pubs[0]];
    for (const auto& [l, bytes] : t.layer_bytes)
      if (!visible.count(l) || visible[l] > p.start)
        v->push_back({ErrorCode::HANDOFF_TRACE_VISIBILITY_MISSING,
                      "/events/" + std::to_string(pubs[0]),
                      "publication at " + std::to_string(p.start) + " us but layer " +
                          std::to_string(l) + " has no successful visibility event before it"});
  }
  uint64_t layer_sum = 0;
  for (const auto& [l, bytes] : t.layer_bytes) {
    auto sum = CheckedAdd(layer_sum, bytes);
    if (!sum) {
      v->push_back(
          {ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/layers", "layer bytes overflow 64 bits"});
      return std::nullopt;
    }
    layer_sum = *sum;
    if (net_bytes[l] != bytes)
      v->push_back({ErrorCode::HANDOFF_TRACE_BYTES_MISMATCH, "/layers",
                    "layer " + std::to_string(l) + " moved " + std::to_string(net_bytes[l]) +
                        " B in successful network attempts, expected " + std::to_string(bytes)});
    for (const auto& [what, moved, last] :
         {std::tuple{"gathered", &gather_bytes, &last_gather},
          std::tuple{"copied to the device", &copy_bytes, &last_copy}})
      if (last->count(l) && (*moved)[l] != bytes)
        v->push_back({ErrorCode::HANDOFF_TRACE_BYTES_MISMATCH,
                      "/events/" + std::to_string(last->at(l)) + "/bytes",
                      "layer " + std::to_string(l) + " " + what + " " +
                          std::to_string((*moved)[l]) + " B, expected its " +
                          std::to_string(bytes) + " B"});
  }
  if (layer_sum != t.payload)
    v->push_back({ErrorCode::HANDOFF_TRACE_BYTES_MISMATCH, "/payload_bytes",
                  "layers sum to " + std::to_string(layer_sum) + " B, payload_bytes declares " +
                      std::to_string(t.payload)});
  if (v->size() != before || t.events.empty()) return std::nullopt;

  TraceSummary s;
  uint64_t lo = UINT64_MAX, hi = 0, pub_end = 0;
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  for (const Ev& e : t.events) {
    lo = std::min(lo, e.start);
    hi = std::max(hi, e.end);
    if (e.phase == "publication" && e.result == "ok") pub_end = e.end;
    // A failed gather, network attempt or device copy is redone: each is a retry.
    if (e.result == "failed" &&
        (e.phase == "gather" || e.phase == "network" || e.phase == "device_copy"))
      ++s.retries;
    if (e.phase == "network" && e.result == "ok")
      s.transferred_bytes += e.bytes;  // == sum of net_bytes (checked)
    if (e.phase == "visibility") continue;
    auto work = CheckedAdd(s.work, e.end - e.start);
    if (!work) {
      v->push_back(
          {ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/events", "summed phase work overflows 64 bits"});
      return std::nullopt;
    }
    s.work = *work;
    iv.push_back({e.start, e.end});
  }
  std::sort(iv.begin(), iv.end());
  uint64_t cur_s = 0, cur_e = 0;
  bool open = false;
  for (auto [a, b] : iv) {
    if (open && a <= cur_e) {
      cur_e = std::max(cur_e, b);
      continue;
    }
    if (open) s.busy += cur_e - cur_s;
    cur_s = a;
    cur_e = b;
    open = true;
  }
  if (open) s.busy += cur_e - cur_s;
  s.wall = hi - lo;
  s.overlapped = s.work - s.busy;  // busy <= work: the union never exceeds the sum
  s.exposed = ExposedStall(pub_end, t.decode_ready);
  return s;
}

}  // namespace

std::optional<TraceSummary> AnalyzeTransferTrace(const Json& doc) {
  Violations v;
  Trace t;
  if (!Read(doc, &t, &v)) return std::nullopt;
  return Check(t, &v);
}

Violations ValidateTransferTrace(const Json& doc) {
  Violations v;
  Trace t;
  if (!Read(doc, &t, &v)) return v;
  auto s = Check(t, &v);
  if (!s) return v;
  const Json& d = doc.at("declared");
  auto cmp = [&](const char* key, uint64_t computed, const char* what) {
    uint64_t declared = d.at(key).get<uint64_t>();
    if (declared != computed)
      v.push_back({ErrorCode::HANDOFF_TRACE_SUMMARY_MISMATCH, std::string("/declared/") + key,
                   std::string(what) + " recomputed from the trace is " + std::to_string(computed) +
                       ", the trace declares " + std::to_string(declared)});
  };
  cmp("wall_us", s->wall, "wall time max(end) - min(start)");
  cmp("overlapped_us", s->overlapped, "overlapped work (sum of durations - busy union)");
  cmp("exposed_us", s->exposed, "exposed stall max(0, t_publish_end - t_decode_ready)");
  cmp("retries", s->retries, "failed gathers, network attempts and device copies");
  cmp("transferred_bytes", s->transferred_bytes, "bytes moved by successful network attempts");
  return v;
}

}  // namespace kvc::handoff
