// Replay of a transfer-protocol fixture through the TransferTxn state machines.
#include "reference/handoff/transfer_protocol.h"

#include <algorithm>
#include <optional>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/transfer_txn.h"

namespace kvc::handoff {
namespace {

constexpr const char* kSha = "a 64-character lowercase hex SHA-256";

struct Event {
  uint64_t t = 0;
  std::string type, chunk, checksum, reason;
  uint64_t generation = 0;
  bool rejected = false;  // the runtime records that it refused this operation
};

struct Doc {
  TransferPlan plan;
  TransferIdentity expected;
  std::string expected_abi;
  uint64_t credit_capacity = 0, pool_blocks = 0, directory_generation = 0;
  bool has_directory_generation = false;
  std::vector<uint64_t> ready;
  std::vector<Event> events;
  const Json* declared = nullptr;
};

void ReadIdentity(FieldReader r, TransferIdentity* id) {
  if (auto s = r.String("tenant")) id->tenant = *s;
  if (auto s = r.String("request_id")) id->request_id = *s;
  if (auto x = r.Uint("generation")) id->generation = *x;
  if (auto x = r.Uint("attempt")) id->attempt = *x;
  if (auto x = r.Uint("source_worker_epoch")) id->source_worker_epoch = *x;
  if (auto x = r.Uint("destination_worker_epoch")) id->destination_worker_epoch = *x;
  if (auto s = r.String("reservation_id")) id->reservation_id = *s;
  r.RejectUnknownFields();
}

bool Read(const Json& doc, Doc* d, Violations* v) {
  size_t before = v->size();
  FieldReader top(&doc, "", v);
  top.Enum("kind", {kTransferProtocolKind});
  top.OptString("description");
  top.OptString("seed_ref");
  if (auto s = top.String("transfer_id")) d->plan.transfer_id = *s;
  ReadIdentity(FieldReader(top.Object("identity"), "/identity", v), &d->plan.identity);
  ReadIdentity(FieldReader(top.Object("expected_identity"), "/expected_identity", v), &d->expected);
  if (auto s = top.String("tensor_abi_sha256")) d->plan.tensor_abi_sha256 = *s;
  if (auto s = top.String("expected_tensor_abi_sha256")) d->expected_abi = *s;
  FieldReader g(top.Object("geometry"), "/geometry", v);
  uint64_t kv_heads = 0, head_dim = 0, b = 0;
  if (auto x = g.Uint("num_layers", 1)) d->plan.num_layers = *x;
  if (auto x = g.Uint("token_start")) d->plan.token_start = *x;
  if (auto x = g.Uint("token_count", 1)) d->plan.token_count = *x;
  if (auto x = g.Uint("kv_heads", 1)) kv_heads = *x;
  if (auto x = g.Uint("head_dim", 1)) head_dim = *x;
  if (auto x = g.Uint("bytes_per_scalar", 1, 64)) b = *x;
  g.RejectUnknownFields();
  if (auto p = CheckedProduct({2, kv_heads, head_dim, b}))
    d->plan.bytes_per_token_layer = *p;
  else
    v->push_back({ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/geometry",
                  "2 * H_kv * d_h * b overflows 64 bits"});
  if (auto x = top.Uint("credit_capacity_bytes")) d->credit_capacity = *x;
  FieldReader dst(top.Object("destination"), "/destination", v);
  if (auto x = dst.Uint("pool_blocks")) d->pool_blocks = *x;
  if (auto x = dst.Uint("reserved_blocks")) d->plan.reserved_blocks = *x;
  if (dst.Has("superseded_generation")) {
    if (auto x = dst.Uint("superseded_generation")) {
      d->directory_generation = *x;
      d->has_directory_generation = true;
    }
  }
  dst.RejectUnknownFields();
  if (const Json* r = top.Array("producer_ready_ms"))
    if (auto xs = FieldReader::UintArray(*r, "/producer_ready_ms", v)) d->ready = *xs;
  if (const Json* cs = top.Array("chunks")) d->plan.chunks = ReadExpectedChunks(*cs, "/chunks", v);
  if (const Json* es = top.Array("events")) {
    for (size_t i = 0; i < es->size(); ++i) {
      FieldReader e(&(*es)[i], "/events/" + std::to_string(i), v);
      Event ev;
      if (auto x = e.Uint("t_ms")) ev.t = *x;
      auto type =
          e.Enum("event", {"reserve", "credit_acquire", "send", "receive", "device_visible",
                           "validate", "publish", "decode_admit", "source_release_ack", "abort"});
      if (type) {
        ev.type = *type;
        if (ev.type == "credit_acquire" || ev.type == "send" || ev.type == "receive" ||
            ev.type == "device_visible")
          if (auto x = e.String("chunk")) ev.chunk = *x;
        if (ev.type == "receive")
          if (auto x = e.String("checksum")) ev.checksum = *x;
        if (ev.type == "decode_admit" || ev.type == "source_release_ack")
          if (auto x = e.Uint("generation")) ev.generation = *x;
        if (ev.type == "abort")
          if (auto x = e.String("reason")) ev.reason = *x;
      }
      if (e.Has("disposition"))
        if (auto x = e.Enum("disposition", {"accepted", "rejected"}))
          ev.rejected = *x == "rejected";
      // An event of an unknown type has no known members: its bad type is the one code (probe
      // 49: its chunk was INPUT_FIELD_UNKNOWN too).
      if (type) e.RejectUnknownFields();
      d->events.push_back(std::move(ev));
    }
  }
  d->declared = top.Object("declared");
  if (d->declared) {
    FieldReader dr(d->declared, "/declared", v);
    for (const char* k : {"last_layer_ready_ms", "max_inflight_bytes", "logical_bytes"}) dr.Uint(k);
    // Absent when the timeline never reaches the event (an aborted transfer).
    for (const char* k : {"all_device_visible_ms", "validated_ms", "published_ms"}) dr.OptUint(k);
    dr.Enum("final_state", {"PUBLISHED", "ABORTED"});
    dr.RejectUnknownFields();
  }
  top.RejectUnknownFields();
  return v->size() == before;
}

}  // namespace

std::vector<ChunkSpec> ReadExpectedChunks(const Json& chunks, const std::string& pointer,
                                          Violations* v) {
  std::vector<ChunkSpec> out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    FieldReader c(&chunks[i], pointer + "/" + std::to_string(i), v);
    ChunkSpec s;
    if (auto x = c.String("chunk_id")) s.chunk_id = *x;
    if (auto x = c.Uint("layer")) s.layer = *x;
    if (auto x = c.Uint("token_start")) s.token_start = *x;
    if (auto x = c.Uint("token_count", 1)) s.token_count = *x;
    if (auto x = c.Uint("bytes", 1)) s.bytes = *x;
    if (auto x = c.String("checksum")) s.checksum = *x;
    c.RejectUnknownFields();
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// Checks 1-5; fills `out` (when given) once the replay completed without a breach.
Violations Run(const Json& doc, std::optional<ProtocolSummary>* out) {
  Violations v;
  Doc d;
  if (!Read(doc, &d, &v)) return v;

  // 2. Digest formats.
  auto fmt = [&](const std::string& ptr, const std::string& s) {
    if (!IsSha256Hex(s))
      v.push_back({ErrorCode::HANDOFF_DIGEST_MALFORMED, ptr,
                   "expected " + std::string(kSha) + ", got " + base::QuoteClipped(s)});
  };
  fmt("/tensor_abi_sha256", d.plan.tensor_abi_sha256);
  fmt("/expected_tensor_abi_sha256", d.expected_abi);
  for (size_t i = 0; i < d.plan.chunks.size(); ++i)
    fmt("/chunks/" + std::to_string(i) + "/checksum", d.plan.chunks[i].checksum);
  for (size_t i = 0; i < d.events.size(); ++i)
    if (d.events[i].type == "receive")
      fmt("/events/" + std::to_string(i) + "/checksum", d.events[i].checksum);
  if (!v.empty()) return v;

  // 3. Static plan.
  for (const auto& issue : CheckPlan(d.plan))
    v.push_back({issue.code,
                 // The transfer id is a top-level member; the plan's sizes come from geometry.
                 issue.field == "transfer_id" ? "/transfer_id"
                 // 2 * H_kv * d_h * b: the geometry's kv_heads, head_dim and bytes_per_scalar.
                 : issue.field == "bytes_per_token_layer" ? "/geometry"
                 // (The reservation is the destination's member; probe 73: it was reported at a
                 // /geometry/reserved_blocks that no document has.)
                 : issue.field == "reserved_blocks" ? "/destination/reserved_blocks"
                 : !issue.field.empty()             ? "/geometry/" + issue.field
                 : issue.chunk_index >= 0           ? "/chunks/" + std::to_string(issue.chunk_index)
                                                    : "/chunks",
                 issue.message});
  if (d.ready.size() != d.plan.num_layers)
    v.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/producer_ready_ms",
                 "expected one producer-ready time per layer (" +
                     std::to_string(d.plan.num_layers) + "), got " +
                     std::to_string(d.ready.size())});
  uint64_t largest = 0;
  for (const auto& c : d.plan.chunks) largest = std::max(largest, c.bytes);
  if (d.credit_capacity < largest)
    v.push_back({ErrorCode::HANDOFF_CREDIT_WINDOW_TOO_SMALL, "/credit_capacity_bytes",
                 "credit window " + std::to_string(d.credit_capacity) +
                     " B is below the largest chunk (" + std::to_string(largest) +
                     " B); no chunk could ever be sent"});
  if (!v.empty()) return v;

  // 4. Replay.
  ByteCreditWindow credits(d.credit_capacity);
  DestinationBlockPool pool(d.pool_blocks);
  if (d.plan.num_layers > UINT32_MAX) {
    v.push_back(
        {ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/geometry/num_layers", "more than 2^32 layers"});
    return v;
  }
  // The destination's cache ABI is the expected one; the transaction's claim is validated.
  DecodeDirectory directory(
      lifecycle::CacheAbi{d.expected_abi, static_cast<uint32_t>(d.plan.num_layers), "post_rope"});
  if (d.has_directory_generation)
    directory.SetCurrentGeneration(d.plan.identity.request_id, d.directory_generation);
  auto txn_or = TransferTxn::Create(d.plan, &credits, &pool, &directory);
  if (!txn_or.ok()) {
    v.push_back({txn_or.status().error(), "/chunks", txn_or.status().message()});
    return v;
  }
  TransferTxn& txn = *txn_or;
  std::map<std::string, uint64_t> layer_of;
  for (const auto& c : d.plan.chunks) layer_of[c.chunk_id] = c.layer;
  std::optional<PublishedHandle> handle;
  std::optional<uint64_t> validated_at, published_at;
  uint64_t last_visible = 0, prev_t = 0;
  for (size_t i = 0; i < d.events.size(); ++i) {
    const Event& e = d.events[i];
    std::string ptr = "/events/" + std::to_string(i);
    if (e.t < prev_t) {
      v.push_back({ErrorCode::HANDOFF_EVENT_TIME_REGRESSION, ptr + "/t_ms",
                   "event at " + std::to_string(e.t) + " ms follows one at " +
                       std::to_string(prev_t) + " ms"});
      return v;
    }
    prev_t = e.t;
    Status s;
    if (e.type == "reserve") {
      s = txn.Reserve();
    } else if (e.type == "credit_acquire") {
      s = txn.AcquireCredit(e.chunk);
    } else if (e.type == "send") {
      auto it = layer_of.find(e.chunk);
      s = txn.Send(e.chunk, e.t, it == layer_of.end() ? 0 : d.ready[it->second]);
    } else if (e.type == "receive") {
      s = txn.Receive(e.chunk, e.checksum);
    } else if (e.type == "device_visible") {
      // A chunk's visibility time is its first DEVICE_VISIBLE: a repeated completion is an
      // idempotent retry (probe 49: it moved all_device_visible_ms, past validated_ms too).
      const bool already = txn.chunk_state(e.chunk) == ChunkState::kDeviceVisible;
      s = txn.MarkDeviceVisible(e.chunk);
      if (s.ok() && !already) last_visible = std::max(last_visible, e.t);
    } else if (e.type == "validate") {
      s = txn.Validate(d.expected, d.expected_abi);
      if (s.ok()) validated_at = e.t;
    } else if (e.type == "publish") {
      auto h = txn.Publish();
      s = h.status();
      // A retried publication returns the published handle (M5.1 0x06D: "publication may be
      // retried idempotently"); the publication happened at the first (probe 73: a retry at
      // 123 ms moved the replayed publication time past the 121 ms decode admission).
      if (h.ok() && !published_at) {
        handle = *h;
        published_at = e.t;
      }
    } else if (e.type == "decode_admit") {
      // The admitted handle is the directory's entry for (request, generation named here).
      PublishedHandle want = handle.value_or(PublishedHandle{});
      want.request_id = d.plan.identity.request_id;
      want.generation = e.generation;
      if (!handle) want.transfer_id = d.plan.transfer_id;
      s = txn.AdmitDecode(want);
    } else if (e.type == "source_release_ack") {
      s = txn.AcknowledgeSourceRelease(e.generation);
    } else if (e.type == "abort") {
      s = txn.Abort(e.reason);
    }
    if (e.rejected) {
      // The runtime refused this operation (e.g. a late completion after abort); the
      // protocol must refuse it too, and a refused operation changes nothing.
      if (s.ok()) {
        v.push_back(
            {ErrorCode::HANDOFF_DECLARED_RESULT_MISMATCH, ptr + "/disposition",
             "t=" + std::to_string(e.t) + " ms " + e.type +
                 ": the runtime records a rejection but the protocol accepts this operation"});
        return v;
      }
      continue;
    }
    if (!s.ok()) {
      ErrorCode c =
          s.error() == ErrorCode::kNone ? ErrorCode::HANDOFF_TXN_TRANSITION_INVALID : s.error();
      v.push_back({c, ptr, "t=" + std::to_string(e.t) + " ms " + e.type + ": " + s.message()});
      return v;
    }
  }

  // 5. Declared results against the replay.
  std::optional<uint64_t> logical = 0;
  for (const auto& c : d.plan.chunks)
    if (logical)
      logical = CheckedAdd(*logical, c.bytes);  // nullopt (reported as absent) on overflow
  bool all_visible = true;
  for (const auto& c : d.plan.chunks)
    all_visible &= txn.chunk_state(c.chunk_id) == ChunkState::kDeviceVisible;
  // A timeline that stops mid-transfer is that fact, the code the trace checker gives a
  // transfer open at the end of a trace (one rule for both documents), not a mismatch of each
  // declared result it never reached (since 2026-12-06: HANDOFF_DECLARED_RESULT_MISMATCH only).
  if (txn.state() != TxnState::kPublished && txn.state() != TxnState::kAborted) {
    v.push_back({ErrorCode::TRACE_OPERATION_UNTERMINATED, "/events",
                 "the timeline ends with transfer " + base::QuoteClipped(d.plan.transfer_id) +
                     " in state " + std::string(TxnStateName(txn.state())) +
                     "; a handoff ends PUBLISHED or ABORTED (0x06A)"});
    return v;
  }
  // Only a timeline that ended has a summary: `handoff replay` of one that stops mid-transfer
  // reports its violation, as `validate` does (since 2026-12-06, helper 115's review: it printed
  // figures and exited 0).
  if (out) {
    ProtocolSummary s;
    s.last_layer_ready = d.ready.back();
    if (all_visible) s.all_device_visible = last_visible;
    s.validated = validated_at;
    s.published = published_at;
    s.max_inflight_bytes = credits.high_water();
    s.logical_bytes = logical;
    s.final_state = std::string(TxnStateName(txn.state()));
    s.credits_in_flight_at_end = credits.in_flight();
    s.unpublished_blocks_at_end = pool.unpublished();
    s.retries = txn.retries();
    *out = s;
  }
  const Json& dec = *d.declared;
  auto check = [&](const char* key, std::optional<uint64_t> computed, const char* what) {
    std::optional<uint64_t> declared;
    if (dec.contains(key)) declared = dec.at(key).get<uint64_t>();
    if (computed != declared)
      v.push_back({ErrorCode::HANDOFF_DECLARED_RESULT_MISMATCH, std::string("/declared/") + key,
                   std::string(what) + " recomputed by replay is " +
                       (computed ? std::to_string(*computed) : "absent") + ", fixture declares " +
                       (declared ? std::to_string(*declared) : "none")});
  };
  check("last_layer_ready_ms", d.ready.back(), "the last layer's producer-ready time");
  check("all_device_visible_ms", all_visible ? std::optional<uint64_t>(last_visible) : std::nullopt,
        "the time every chunk was DEVICE_VISIBLE");
  check("validated_ms", validated_at, "the validation time");
  check("published_ms", published_at, "the publication time");
  check("max_inflight_bytes", credits.high_water(), "the peak in-flight credit");
  check("logical_bytes", logical, "the logical K/V bytes (sum of chunk bytes)");
  std::string final_state(TxnStateName(txn.state()));
  if (dec.at("final_state").get<std::string>() != final_state)
    v.push_back({ErrorCode::HANDOFF_DECLARED_RESULT_MISMATCH, "/declared/final_state",
                 "replay ends in " + final_state + ", fixture declares " +
                     dec.at("final_state").get<std::string>()});
  if (txn.state() == TxnState::kAborted && (credits.in_flight() != 0 || pool.unpublished() != 0))
    v.push_back({ErrorCode::HANDOFF_DECLARED_RESULT_MISMATCH, "/events",
                 "internal: abort left " + std::to_string(credits.in_flight()) +
                     " B of credit and " + std::to_string(pool.unpublished()) +
                     " unpublished blocks held"});
  return v;
}

}  // namespace

Violations ValidateTransferProtocol(const Json& doc) { return Run(doc, nullptr); }

std::optional<ProtocolSummary> ReplayTransferProtocol(const Json& doc) {
  std::optional<ProtocolSummary> s;
  (void)Run(doc, &s);
  return s;
}

}  // namespace kvc::handoff
