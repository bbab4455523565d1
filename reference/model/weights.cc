// Checkpoint directory loading: config, (sharded) safetensors, shape checks, fp32 widening.
#include "reference/model/weights.h"

#include <filesystem>
#include <map>
#include <memory>

#include "reference/base/strict_json.h"
#include "reference/model/safetensors/safetensors.h"

namespace kvc::model {
namespace {

std::string ShapeString(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Status IndexError(const std::string& src, const std::string& what) {
  return ViolationStatus(ErrorCode::MODEL_SHARD_INDEX_INVALID, src + ": " + what);
}

}  // namespace

std::vector<TensorSpec> RequiredTensors(const LlamaConfig& c) {
  const uint64_t d = c.hidden_size, F = c.intermediate_size;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {c.vocab_size, d}});
  for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    t.push_back({p + "input_layernorm.weight", {d}});
    t.push_back({p + "self_attn.q_proj.weight", {c.q_width(), d}});
    t.push_back({p + "self_attn.k_proj.weight", {c.kv_width(), d}});
    t.push_back({p + "self_attn.v_proj.weight", {c.kv_width(), d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, c.q_width()}});
    t.push_back({p + "post_attention_layernorm.weight", {d}});
    t.push_back({p + "mlp.gate_proj.weight", {F, d}});
    t.push_back({p + "mlp.up_proj.weight", {F, d}});
    t.push_back({p + "mlp.down_proj.weight", {d, F}});
  }
  t.push_back({"model.norm.weight", {d}});
  if (!c.tie_word_embeddings) t.push_back({"lm_head.weight", {c.vocab_size, d}});
  return t;
}

StatusOr<LlamaWeights> LoadLlamaCheckpoint(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return IoError(dir + ": not a model directory");
  KVC_ASSIGN_OR_RETURN(LlamaConfig config, LoadLlamaConfig((root / "config.json").string()));

  // tensor name -> shard file name; shard file name -> opened file.
  std::map<std::string, std::string> where;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> shards;
  const fs::path index = root / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    auto j = ReadJsonFileStrict(index.string());
    if (!j.ok()) {
      if (j.status().code() == StatusCode::kIoError) return j.status();
      return IndexError(index.string(), j.status().message());
    }
    const Json& wm =
        j->value.is_object() && j->value.contains("weight_map") ? j->value["weight_map"] : Json();
    if (!wm.is_object())
      return IndexError(index.string(), "field 'weight_map': expected an object");
    for (const auto& [name, file] : wm.items()) {
      if (!file.is_string())
        return IndexError(index.string(), "weight_map['" + name + "']: expected a shard file name");
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        return IndexError(index.string(), "weight_map['" + name + "']: '" + f +
                                              "' is not a file name inside the model directory");
      where[name] = f;
      if (!shards.count(f)) {
        KVC_ASSIGN_OR_RETURN(SafetensorsFile sf, SafetensorsFile::Open((root / f).string()));
        shards[f] = std::make_unique<SafetensorsFile>(std::move(sf));
      }
      if (!shards[f]->Find(name))
        return IndexError(index.string(), "weight_map['" + name + "'] names shard '" + f +
                                              "', which does not hold that tensor");
    }
  } else {
    const std::string f = "model.safetensors";
    KVC_ASSIGN_OR_RETURN(SafetensorsFile sf, SafetensorsFile::Open((root / f).string()));
    for (const auto& [name, t] : sf.tensors()) where[name] = f;
    shards[f] = std::make_unique<SafetensorsFile>(std::move(sf));
  }

  std::map<std::string, std::vector<float>> loaded;
  for (const auto& spec : RequiredTensors(config)) {
    auto it = where.find(spec.name);
    if (it == where.end()) {
      return ViolationStatus(
          ErrorCode::MODEL_TENSOR_MISSING,
          dir + ": tensor '" + spec.name + "' is required by config.json but absent");
    }
    const SafetensorsFile& sf = *shards[it->second];
    const TensorView* t = sf.Find(spec.name);
    if (t->shape != spec.shape) {
      return ViolationStatus(ErrorCode::MODEL_TENSOR_SHAPE_MISMATCH,
                             sf.path() + ": tensor '" + spec.name +
                                 "' field 'shape': " + ShapeString(t->shape) + ", expected " +
                                 ShapeString(spec.shape) + " from config.json");
    }
    loaded[spec.name] = ToFloat32(*t);
  }

  LlamaWeights w;
  w.config = config;
  w.embed_tokens = std::move(loaded["model.embed_tokens.weight"]);
  for (uint64_t l = 0; l < config.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights lw;
    lw.input_norm = std::move(loaded[p + "input_layernorm.weight"]);
    lw.q_proj = std::move(loaded[p + "self_attn.q_proj.weight"]);
    lw.k_proj = std::move(loaded[p + "self_attn.k_proj.weight"]);
    lw.v_proj = std::move(loaded[p + "self_attn.v_proj.weight"]);
    lw.o_proj = std::move(loaded[p + "self_attn.o_proj.weight"]);
    lw.post_norm = std::move(loaded[p + "post_attention_layernorm.weight"]);
    lw.gate_proj = std::move(loaded[p + "mlp.gate_proj.weight"]);
    lw.up_proj = std::move(loaded[p + "mlp.up_proj.weight"]);
    lw.down_proj = std::move(loaded[p + "mlp.down_proj.weight"]);
    w.layers.push_back(std::move(lw));
  }
  w.final_norm = std::move(loaded["model.norm.weight"]);
  if (!config.tie_word_embeddings) w.lm_head = std::move(loaded["lm_head.weight"]);
  return w;
}

}  // namespace kvc::model
