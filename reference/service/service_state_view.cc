// ServiceStateView reading, naming and JSON form; see service_state_view.h.
#include "reference/service/service_state_view.h"

namespace kvc {
namespace {

constexpr std::array<ServicePhase, 6> kPhases = {
    ServicePhase::kWaitingPrefill,      ServicePhase::kPrefillInFlight,   ServicePhase::kOutputReady,
    ServicePhase::kDecodeFrontierReady, ServicePhase::kFinishedRetained, ServicePhase::kReleased};
constexpr std::array<EligibleWork, 3> kWork = {EligibleWork::kPrefillRowsAvailable,
                                               EligibleWork::kDecodeFrontierAvailable, EligibleWork::kNone};

std::optional<uint64_t> OptionalTime(FieldReader& r, const Json& obj, std::string_view key, bool* ok) {
  if (obj.contains(std::string(key)) && obj[std::string(key)].is_null()) {
    r.Allow({key});
    return std::nullopt;
  }
  auto x = r.Uint(key);
  if (!x) *ok = false;
  return x;
}

}  // namespace

ServiceStateView WithClocks(const frontier::ServiceStateView& f, uint64_t arrival_time,
                            std::vector<uint64_t> output_times, std::optional<uint64_t> finish_time,
                            std::optional<uint64_t> release_time) {
  ServiceStateView v;
  v.request_id = f.request_id;
  v.handle_generation = f.handle_generation;
  v.snapshot_version = f.snapshot_version;
  v.phase = f.phase;
  v.eligible_work = f.eligible_work;
  v.prompt_rows_remaining = f.prompt_rows_remaining;
  v.emitted_output_tokens = f.emitted_output_tokens;
  v.processed_generated_tokens = f.processed_generated_tokens;
  v.committed_tokens = f.committed_tokens;
  v.output_frontier_count = f.output_frontier_count;
  v.logical_payload_bytes = f.logical_payload_bytes;
  v.next_ordinary_append_bytes = f.next_ordinary_append_bytes;
  v.terminal_retained_logical_payload_bytes = f.terminal_retained_logical_payload_bytes;
  v.arrival_time = arrival_time;
  v.output_times = std::move(output_times);
  v.finish_time = finish_time;
  v.release_time = release_time;
  return v;
}

void RejectPolicyFields(FieldReader& r, std::string_view object, Violations* out) {
  for (std::string_view f : kForbiddenPolicyFields) {
    if (!r.Has(f)) continue;
    Add(out, ErrorCode::SERVICE_POLICY_FIELD_IN_STATE, r.Ptr(f),
        "\"" + std::string(f) + "\" in " + std::string(object) +
            " is a scheduling decision, not a fact of the request/cache object");
    r.Allow({f});
  }
}

std::optional<ServiceStateView> ReadServiceStateView(const Json& obj, const std::string& pointer,
                                                     Violations* out) {
  size_t before = out->size();
  FieldReader r(&obj, pointer, out);
  if (!r.valid()) return std::nullopt;
  RejectPolicyFields(r, "the state view", out);
  ServiceStateView v;
  bool ok = true;
  auto u = [&](std::string_view key, uint64_t* dst) {
    if (auto x = r.Uint(key)) *dst = *x;
    else ok = false;
  };
  if (auto s = r.String("request_id")) v.request_id = *s;
  u("handle_generation", &v.handle_generation);
  u("snapshot_version", &v.snapshot_version);
  if (auto s = r.Enum("phase", {"WAITING_PREFILL", "PREFILL_IN_FLIGHT", "OUTPUT_READY", "DECODE_FRONTIER_READY",
                                "FINISHED_RETAINED", "RELEASED"})) {
    for (ServicePhase k : kPhases)
      if (frontier::ServicePhaseName(k) == *s) v.phase = k;
  }
  if (auto s = r.Enum("eligible_work", {"PREFILL_ROWS_AVAILABLE", "DECODE_FRONTIER_AVAILABLE", "NONE"})) {
    for (EligibleWork k : kWork)
      if (frontier::EligibleWorkName(k) == *s) v.eligible_work = k;
  }
  u("prompt_rows_remaining", &v.prompt_rows_remaining);
  u("emitted_output_tokens", &v.emitted_output_tokens);
  u("processed_generated_tokens", &v.processed_generated_tokens);
  u("committed_tokens", &v.committed_tokens);
  u("output_frontier_count", &v.output_frontier_count);
  u("logical_payload_bytes", &v.logical_payload_bytes);
  u("next_ordinary_append_bytes", &v.next_ordinary_append_bytes);
  u("terminal_retained_logical_payload_bytes", &v.terminal_retained_logical_payload_bytes);
  u("arrival_time", &v.arrival_time);
  if (const Json* times = r.Array("output_times")) {
    if (auto t = FieldReader::UintArray(*times, r.Ptr("output_times"), out)) v.output_times = *t;
  }
  v.finish_time = OptionalTime(r, obj, "finish_time", &ok);
  v.release_time = OptionalTime(r, obj, "release_time", &ok);
  r.RejectUnknownFields();
  if (!ok || out->size() != before) return std::nullopt;
  return v;
}

Json ServiceStateViewToJson(const ServiceStateView& v) {
  Json j = Json::object();
  j["request_id"] = v.request_id;
  j["handle_generation"] = v.handle_generation;
  j["snapshot_version"] = v.snapshot_version;
  j["phase"] = std::string(frontier::ServicePhaseName(v.phase));
  j["eligible_work"] = std::string(frontier::EligibleWorkName(v.eligible_work));
  j["prompt_rows_remaining"] = v.prompt_rows_remaining;
  j["emitted_output_tokens"] = v.emitted_output_tokens;
  j["processed_generated_tokens"] = v.processed_generated_tokens;
  j["committed_tokens"] = v.committed_tokens;
  j["output_frontier_count"] = v.output_frontier_count;
  j["logical_payload_bytes"] = v.logical_payload_bytes;
  j["next_ordinary_append_bytes"] = v.next_ordinary_append_bytes;
  j["terminal_retained_logical_payload_bytes"] = v.terminal_retained_logical_payload_bytes;
  j["arrival_time"] = v.arrival_time;
  j["output_times"] = v.output_times;
  j["finish_time"] = v.finish_time ? Json(*v.finish_time) : Json(nullptr);
  j["release_time"] = v.release_time ? Json(*v.release_time) : Json(nullptr);
  return j;
}

}  // namespace kvc
