// Schema readers of the model-side identity shared by the M5.1 and M5.6 manifests.
#include "reference/manifest/model_identity.h"

#include <optional>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"

namespace kvc {

ArtifactIdentityView ReadArtifactIdentity(const Json* obj, const std::string& pointer,
                                          Violations* v) {
  ArtifactIdentityView out;
  FieldReader ai(obj, pointer, v);
  for (const char* k : {"model_artifact_sha256", "model_config_sha256"})
    if (auto s = ai.String(k)) out.digests.emplace_back(ai.Ptr(k), *s);
  if (auto x = ai.Uint("max_position_embeddings", 1)) out.max_position_embeddings = *x;
  for (const char* list : {"adapter_set", "weight_transforms"}) {
    const Json* arr = ai.Array(list);
    if (!arr) continue;
    const bool is_set = std::string_view(list) == "adapter_set";
    std::optional<std::string> previous_id;
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string p = ai.Ptr(list) + "/" + std::to_string(i);
      FieldReader e(&(*arr)[i], p, v);
      auto id = e.String(is_set ? "adapter_id" : "name");
      // The active adapters are a set (M5.1 0x01): listed once each, in ascending adapter_id
      // order (bytewise), so that one set has one digest (probe 94: the same two adapters in
      // the other order gave another ABI digest, and a repeated adapter passed). The weight
      // transforms are a sequence: their order is theirs.
      if (is_set && id) {
        if (previous_id && !(*previous_id < *id))
          v->push_back({ErrorCode::INPUT_VALUE_INVALID, e.Ptr("adapter_id"),
                        "the adapter set lists each adapter once, in ascending adapter_id order: " +
                            base::QuoteClipped(*id) + " " +
                            (*previous_id == *id ? "repeats" : "follows") + " " +
                            base::QuoteClipped(*previous_id)});
        previous_id = id;
      }
      if (auto s = e.String("sha256")) out.digests.emplace_back(e.Ptr("sha256"), *s);
      e.RejectUnknownFields();
    }
  }
  ai.RejectUnknownFields();
  return out;
}

uint64_t ReadPositionContract(const Json* obj, const std::string& pointer, Violations* v) {
  uint64_t origin = 0;
  FieldReader pc(obj, pointer, v);
  pc.Enum("cache_position_convention", {"absolute"});
  if (auto x = pc.Uint("position_origin")) origin = *x;
  FieldReader rope(pc.Object("rope"), pc.Ptr("rope"), v);
  // RoPE's base: inv_freq = theta^(-2i/d_h) is defined for theta > 0 only (probe 94: 0 and
  // negative bases were accepted); `type: none` rotates nothing, so its theta is not a base.
  const auto type = rope.Enum("type", {"default", "llama3", "linear", "none"});
  if (auto theta = rope.Number("theta"); theta && !(*theta > 0) && type != "none")
    Add(v, ErrorCode::INPUT_VALUE_OUT_OF_RANGE, rope.Ptr("theta"),
        "expected a positive RoPE base (theta > 0: inv_freq = theta^(-2i/d_h)), got " +
            FormatEcmaScriptNumber(*theta));
  rope.OptObject("scaling");
  rope.RejectUnknownFields();
  pc.Enum("visibility_policy", {"causal"});
  pc.RejectUnknownFields();
  // The contract is hashed into the cache ABI digest, whose canonical form holds integers within
  // +/-2^53 (I-JSON): one beyond is out of range where it is (probe 94: a rope theta of 2^53 + 1
  // was reported at /digests/cache_abi_sha256, and seal failed naming nothing).
  // (position_origin is range-read above; rope's theta and scaling are read as any number.)
  if (obj && obj->is_object() && obj->contains("rope"))
    ReportNonIJsonIntegers((*obj)["rope"], pc.Ptr("rope"), v);
  return origin;
}

void ReportNonIJsonIntegers(const Json& value, const std::string& pointer, Violations* v) {
  constexpr uint64_t kMax = static_cast<uint64_t>(kMaxIJsonInteger);
  const bool beyond =
      value.is_number_unsigned()
          ? value.get<uint64_t>() > kMax
          : value.is_number_integer() && (value.get<int64_t>() > static_cast<int64_t>(kMax) ||
                                          value.get<int64_t>() < -static_cast<int64_t>(kMax));
  if (beyond) {
    v->push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, pointer,
                  "expected an integer within +/-2^53 (I-JSON: the value is hashed)"});
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it)
      ReportNonIJsonIntegers(it.value(), pointer + "/" + JsonPointerEscape(it.key()), v);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      ReportNonIJsonIntegers(value[i], pointer + "/" + std::to_string(i), v);
  }
}

uint64_t ReadKvHeadReplication(FieldReader& shard) {
  if (!shard.Has("kv_head_replication")) return 1;
  return shard.Uint("kv_head_replication", 2).value_or(1);
}

bool KvShardLayoutHolds(const KvShardLayout& s) {
  const uint64_t r = s.replication;
  if (r == 0 || s.tp_rank >= s.tp_size || (r > 1 && s.kv_heads_local != 1)) return false;
  const auto held = CheckedMul(s.kv_heads_local, s.tp_size);
  const auto copies = CheckedMul(s.kv_heads_total, r);
  const auto offset =
      r == 1 ? CheckedMul(s.tp_rank, s.kv_heads_local) : std::optional<uint64_t>(s.tp_rank / r);
  return held && copies && *held == *copies && offset && *offset == s.kv_head_offset;
}

std::string KvShardLayoutExpectation(const KvShardLayout& s, const std::string& local_name,
                                     const std::string& total_name) {
  const std::string r = std::to_string(s.replication);
  if (s.replication == 1)
    return "expected " + local_name + " * tp_size == " + total_name + " (" +
           std::to_string(s.kv_heads_local) + " * " + std::to_string(s.tp_size) + " vs " +
           std::to_string(s.kv_heads_total) +
           "), tp_rank < tp_size and kv_head_offset == tp_rank * " + local_name +
           " (K/V heads copied on several ranks declare kv_head_replication)";
  return "expected, with kv_head_replication " + r + ", " + local_name +
         " == 1, tp_size == " + total_name + " * kv_head_replication (" +
         std::to_string(s.tp_size) + " vs " + std::to_string(s.kv_heads_total) + " * " + r +
         "), tp_rank < tp_size and kv_head_offset == tp_rank / kv_head_replication";
}

}  // namespace kvc
