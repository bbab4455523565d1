// Runtime release manifest: capabilities, release transitions and the rollback drill.
#include "reference/handoff/runtime_release.h"

#include <tuple>

#include "reference/base/canonical_json.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/capability.h"
#include "reference/handoff/rollback.h"
#include "reference/handoff/source_audit.h"

namespace kvc::handoff {
namespace {

std::vector<std::string> Strings(const Json* arr, const std::string& ptr, Violations* v) {
  return ReadStringArray(arr, ptr, "expected a string", v);
}

}  // namespace

Violations ValidateRuntimeRelease(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  top.Enum("kind", {kRuntimeReleaseKind});
  top.OptString("description");
  top.OptString("seed_ref");
  // The deployment manifest freezes the connector's direction, its roles and the cache ABI
  // (M5.6 0x0FF); the capability is judged against them below (probe 51: they were read and
  // never compared, so a pull deployment, swapped roles or another ABI passed).
  FieldReader dep(top.Object("deployment"), "/deployment", &v);
  for (const char* k : {"connector_class", "transfer_backend", "buffer_device", "topology",
                        "model", "tokenizer", "adapter"})
    dep.String(k);
  // P/D disaggregation: prefill produces the K/V, decode consumes it.
  dep.Enum("producer_role", {"prefill"});
  dep.Enum("consumer_role", {"decode"});
  const std::optional<std::string> dep_abi = dep.String("cache_abi_sha256");
  if (dep_abi && !IsSha256Hex(*dep_abi))
    v.push_back(
        {ErrorCode::HANDOFF_DIGEST_MALFORMED, "/deployment/cache_abi_sha256",
         "cache_abi_sha256 " + base::QuoteClipped(*dep_abi) + " is not 64 lowercase hex digits"});
  std::vector<std::string> frozen_pins =
      ReadPinIds(dep.Array("source_pins"), "/deployment/source_pins", &v);
  const std::optional<std::string> dep_direction = dep.Enum("direction", {"push", "pull"});
  dep.Enum("fallback_mode", {"colocated", "recompute"});
  dep.RejectUnknownFields();

  AuthorizationContext ctx;
  FieldReader au(top.Object("authorization"), "/authorization", &v);
  if (auto x = au.Uint("now_s")) ctx.now_s = *x;
  if (auto x = au.Uint("max_capability_ttl_s")) ctx.max_ttl_s = *x;
  if (auto x = au.Uint("current_route_epoch")) ctx.current_route_epoch = *x;
  for (auto& s : Strings(au.Array("trusted_issuers"), "/authorization/trusted_issuers", &v))
    ctx.trusted_issuers.insert(s);
  au.RejectUnknownFields();

  Capability cap;
  FieldReader c(top.Object("capability"), "/capability", &v);
  for (auto [k, dst] :
       {std::pair{"issuer", &cap.issuer}, std::pair{"key_id", &cap.key_id},
        std::pair{"tenant", &cap.tenant}, std::pair{"source", &cap.source},
        std::pair{"destination", &cap.destination}, std::pair{"transfer_id", &cap.transfer_id},
        std::pair{"cache_abi_sha256", &cap.cache_abi_sha256}, std::pair{"nonce", &cap.nonce},
        std::pair{"signature_hmac_sha256", &cap.signature_hex}})
    if (auto s = c.String(k)) *dst = *s;
  if (auto s = c.Enum("direction", {"push", "pull"})) cap.direction = *s;
  if (auto x = c.Uint("generation")) cap.generation = *x;
  if (auto x = c.Uint("route_epoch")) cap.route_epoch = *x;
  if (auto x = c.Uint("max_bytes")) cap.max_bytes = *x;
  if (auto x = c.Uint("expires_at_s")) cap.expires_at_s = *x;
  cap.allowed_regions = Strings(c.Array("allowed_regions"), "/capability/allowed_regions", &v);
  c.RejectUnknownFields();

  std::vector<TransferRequest> reqs;
  if (const Json* rs = top.Array("transfer_requests")) {
    for (size_t i = 0; i < rs->size(); ++i) {
      std::string ptr = "/transfer_requests/" + std::to_string(i);
      FieldReader r(&(*rs)[i], ptr, &v);
      TransferRequest q;
      for (auto [k, dst] :
           {std::pair{"tenant", &q.tenant}, std::pair{"prefill_owner", &q.prefill_owner},
            std::pair{"decode_owner", &q.decode_owner}, std::pair{"transfer_id", &q.transfer_id},
            std::pair{"cache_abi_sha256", &q.cache_abi_sha256}, std::pair{"nonce", &q.nonce}})
        if (auto s = r.String(k)) *dst = *s;
      if (auto s = r.Enum("direction", {"push", "pull"})) q.direction = *s;
      if (auto x = r.Uint("generation")) q.generation = *x;
      if (auto x = r.Uint("bytes")) q.bytes = *x;
      const Json* regions = r.Array("regions");
      q.regions = Strings(regions, ptr + "/regions", &v);
      // The request names the exact destination regions it needs (M5.6 0x0FE): at least one,
      // each once (probe 36: an empty list of regions for 7,168 bytes, and a region listed
      // twice, passed).
      if (regions && regions->is_array()) {
        if (regions->empty())
          v.push_back({ErrorCode::INPUT_VALUE_INVALID, ptr + "/regions",
                       "a transfer request names the destination regions it writes: at least one"});
        for (size_t a = 0; a < q.regions.size(); ++a)
          for (size_t b = 0; b < a; ++b)
            if (q.regions[a] == q.regions[b]) {
              v.push_back({ErrorCode::INPUT_VALUE_INVALID, ptr + "/regions/" + std::to_string(a),
                           "region " + base::QuoteClipped(q.regions[a]) +
                               " is listed twice (first at index " + std::to_string(b) + ")"});
              b = a;  // one report per repeated entry
            }
      }
      r.RejectUnknownFields();
      reqs.push_back(std::move(q));
    }
  }

  FieldReader rel(top.Object("release"), "/release", &v);
  auto transitions = Strings(rel.Array("transitions"), "/release/transitions", &v);
  PromotionGates pg;
  FieldReader g(rel.Object("promotion_gates"), "/release/promotion_gates", &v);
  for (auto [k, dst] : {std::pair{"deployment_manifest_verified", &pg.deployment_manifest_verified},
                        std::pair{"failure_injection_passed", &pg.failure_injection_passed},
                        std::pair{"colocated_fallback_healthy", &pg.colocated_fallback_healthy},
                        std::pair{"rollback_drill_completed", &pg.rollback_drill_completed}})
    if (auto b = g.Bool(k)) *dst = *b;
  for (auto [k, dst] :
       {std::pair{"exactness_mismatches", &pg.exactness_mismatches},
        std::pair{"stale_publications", &pg.stale_publications},
        std::pair{"unauthorized_accepted_transfers", &pg.unauthorized_accepted_transfers},
        std::pair{"canary_samples", &pg.canary_samples},
        std::pair{"min_canary_samples", &pg.min_canary_samples}})
    if (auto x = g.Uint(k)) *dst = *x;
  // Parts per million lie in [0, 10^6], bounds too, and an SLO target of 0 would pass any
  // attainment (probe 51: 1,000,001 ppm and a target of 0 passed; the bound on the failure rate
  // had no range until 2026-12-07).
  for (auto [k, dst, min] :
       {std::tuple{"ttft_attainment_ppm", &pg.ttft_attainment_ppm, 0},
        std::tuple{"tpot_attainment_ppm", &pg.tpot_attainment_ppm, 0},
        std::tuple{"slo_target_ppm", &pg.slo_target_ppm, 1},
        std::tuple{"transfer_failure_ppm", &pg.transfer_failure_ppm, 0},
        std::tuple{"max_transfer_failure_ppm", &pg.max_transfer_failure_ppm, 0}})
    if (auto x = g.Uint(k, static_cast<uint64_t>(min), 1'000'000)) *dst = *x;
  if (auto x = g.Int("net_margin_us")) pg.net_margin_us = *x;
  if (auto x = g.Int("safety_margin_us")) pg.safety_margin_us = *x;
  g.RejectUnknownFields();
  rel.RejectUnknownFields();

  FieldReader rb(top.Object("rollback"), "/rollback", &v);
  auto steps = Strings(rb.Array("steps"), "/rollback/steps", &v);
  RollbackGate rg;
  FieldReader gate(rb.Object("gate"), "/rollback/gate", &v);
  for (auto [k, dst] : {std::pair{"routes_selecting_connector", &rg.routes_selecting_connector},
                        std::pair{"inflight_publishable_under_retired_epoch",
                                  &rg.inflight_publishable_under_retired_epoch},
                        std::pair{"temporary_regions_unrevoked", &rg.temporary_regions_unrevoked},
                        std::pair{"unpublished_allocations", &rg.unpublished_allocations}})
    if (auto x = gate.Uint(k)) *dst = *x;
  for (auto [k, dst] :
       {std::pair{"fallback_health_visible", &rg.fallback_health_visible},
        std::pair{"slo_clocks_visible", &rg.slo_clocks_visible},
        std::pair{"incident_trace_preserves_pins", &rg.incident_trace_preserves_pins}})
    if (auto b = gate.Bool(k)) *dst = *b;
  gate.RejectUnknownFields();
  rb.RejectUnknownFields();
  SourceAudit audit = ReadSourceAudit(top, &v);
  audit.deployment_pins = std::move(frozen_pins);
  top.RejectUnknownFields();
  if (!v.empty()) return v;

  // Source audit first: an unverifiable deployment manifest gates everything after it.
  v = CheckSourceAudit(audit);
  if (!v.empty()) return v;

  // The capability is issued for the frozen deployment: its direction and cache ABI are the
  // deployment's (a request is then judged against the capability).
  if (dep_direction && cap.direction != *dep_direction)
    v.push_back({ErrorCode::HANDOFF_CAPABILITY_DIRECTION_MISMATCH, "/capability/direction",
                 "the capability is for a " + cap.direction +
                     " connector; the deployment manifest freezes " + *dep_direction});
  if (dep_abi && cap.cache_abi_sha256 != *dep_abi)
    v.push_back({ErrorCode::HANDOFF_CAPABILITY_ABI_MISMATCH, "/capability/cache_abi_sha256",
                 "the capability names cache ABI " + base::QuoteClipped(cap.cache_abi_sha256) +
                     "; the deployment manifest freezes " + *dep_abi});
  if (!v.empty()) return v;

  // Capabilities: deny before any remote operation; one shared nonce store.
  NonceStore nonces;
  ctx.nonces = &nonces;
  ctx.keys = SyntheticTestKey;
  for (size_t i = 0; i < reqs.size(); ++i) {
    Status s = AuthorizeTransfer(reqs[i], cap, ctx);
    if (!s.ok()) v.push_back({s.error(), "/transfer_requests/" + std::to_string(i), s.message()});
  }

  // Release transitions.
  ReleaseMachine release;
  bool release_ok = true;
  if (transitions.empty() || transitions.front() != "PINNED") {
    v.push_back({ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID, "/release/transitions/0",
                 "a release starts PINNED"});
    release_ok = false;
  }
  for (size_t i = 1; release_ok && i < transitions.size(); ++i) {
    Status s = release.Transition(transitions[i], pg);
    if (!s.ok()) {
      v.push_back({s.error(), "/release/transitions/" + std::to_string(i), s.message()});
      release_ok = false;
    }
  }
  // Rollback drill: required exactly when the release ends ROLLED_BACK.
  if (release_ok && release.state() == "ROLLED_BACK") {
    RollbackMachine rm;
    for (size_t i = 0; i < steps.size(); ++i) {
      Status s = rm.Apply(steps[i], rg);
      if (!s.ok()) {
        v.push_back({s.error(), "/rollback/steps/" + std::to_string(i), s.message()});
        return v;
      }
    }
    if (!rm.complete())
      v.push_back({ErrorCode::HANDOFF_ROLLBACK_ORDER, "/rollback/steps",
                   "rollback stops after " + std::to_string(rm.steps_done()) + " of " +
                       std::to_string(kRollbackSteps.size()) + " steps; next is " +
                       std::string(kRollbackSteps[rm.steps_done()])});
  } else if (release_ok && !steps.empty()) {
    v.push_back({ErrorCode::HANDOFF_RELEASE_TRANSITION_INVALID, "/release/transitions",
                 "rollback steps are recorded but the release never entered ROLLED_BACK"});
  }
  return v;
}

}  // namespace kvc::handoff
