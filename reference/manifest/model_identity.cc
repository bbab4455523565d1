// Schema readers of the model-side identity shared by the M5.1 and M5.6 manifests.
#include "reference/manifest/model_identity.h"

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
    for (size_t i = 0; i < arr->size(); ++i) {
      std::string p = ai.Ptr(list) + "/" + std::to_string(i);
      FieldReader e(&(*arr)[i], p, v);
      e.String(std::string_view(list) == "adapter_set" ? "adapter_id" : "name");
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
  rope.Enum("type", {"default", "llama3", "linear", "none"});
  rope.Number("theta");
  rope.OptObject("scaling");
  rope.RejectUnknownFields();
  pc.Enum("visibility_policy", {"causal"});
  pc.RejectUnknownFields();
  return origin;
}

}  // namespace kvc
