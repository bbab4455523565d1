// Checkpoint directory loading: config, (sharded) safetensors, shape checks, fp32 widening.
#include "reference/model/weights.h"

#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"
#include "reference/model/safetensors/safetensors.h"

namespace kvc::model {
namespace {

// A checkpoint tensor the forward pass does not read changes the configured model when it
// belongs to a layer the config runs, or is a bias outside the layers: Transformers would apply
// it (Qwen2's q/k/v biases under a config mislabelled llama), so ignoring it computes another
// model. Derived RoPE buffers (inv_freq, position_ids) and the layers from num_hidden_layers on
// (a config running a prefix of the checkpoint's layers: noted, not refused) do not.
bool ChangesTheConfiguredModel(const std::string& name, const LlamaConfig& c) {
  auto ends_with = [&](std::string_view suffix) {
    return name.size() >= suffix.size() &&
           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("rotary_emb.inv_freq") || ends_with("rotary_emb.position_ids")) return false;
  constexpr std::string_view kLayers = "model.layers.";
  if (name.rfind(kLayers, 0) != 0) return ends_with(".bias");
  uint64_t layer = 0;
  size_t i = kLayers.size();
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return true;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) {
    if (layer > c.num_hidden_layers) break;  // already past the configured layers
    layer = layer * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return layer < c.num_hidden_layers;
}

std::string ShapeString(const std::vector<uint64_t>& s) { return base::ClippedList(s); }

Status IndexError(const std::string& src, const std::string& what) {
  return ViolationStatus(ErrorCode::MODEL_SHARD_INDEX_INVALID, src + ": " + what);
}

}  // namespace

void ForEachRequiredTensor(const LlamaConfig& c, const std::function<bool(const TensorSpec&)>& fn) {
  const uint64_t d = c.hidden_size, F = c.intermediate_size;
  if (!fn({"model.embed_tokens.weight", {c.vocab_size, d}})) return;
  for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (TensorSpec spec : {TensorSpec{p + "input_layernorm.weight", {d}},
                            TensorSpec{p + "self_attn.q_proj.weight", {c.q_width(), d}},
                            TensorSpec{p + "self_attn.k_proj.weight", {c.kv_width(), d}},
                            TensorSpec{p + "self_attn.v_proj.weight", {c.kv_width(), d}},
                            TensorSpec{p + "self_attn.o_proj.weight", {d, c.q_width()}},
                            TensorSpec{p + "post_attention_layernorm.weight", {d}},
                            TensorSpec{p + "mlp.gate_proj.weight", {F, d}},
                            TensorSpec{p + "mlp.up_proj.weight", {F, d}},
                            TensorSpec{p + "mlp.down_proj.weight", {d, F}}})
      if (!fn(spec)) return;
  }
  if (!fn({"model.norm.weight", {d}})) return;
  if (!c.tie_word_embeddings) fn({"lm_head.weight", {c.vocab_size, d}});
}

std::vector<TensorSpec> RequiredTensors(const LlamaConfig& c) {
  std::vector<TensorSpec> t;
  ForEachRequiredTensor(c, [&](const TensorSpec& spec) {
    t.push_back(spec);
    return true;
  });
  return t;
}

StatusOr<LlamaWeights> LoadLlamaCheckpoint(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return IoError(dir + ": not a model directory");
  KVC_ASSIGN_OR_RETURN(LlamaConfig config, LoadLlamaConfig((root / "config.json").string()));

  // tensor name -> shard file name; shard file name -> opened file, one per file: names that
  // reach one file (symlinks, as in the Hugging Face cache) share it (probe 64: each of 90 names
  // of one 16 MB shard mapped and parsed it again, 3.9 GB).
  std::map<std::string, std::string> where;
  std::map<std::string, SafetensorsFile*> shards;
  std::map<std::pair<dev_t, ino_t>, std::unique_ptr<SafetensorsFile>> files;
  auto open_shard = [&](const std::string& name) -> Status {
    const std::string path = (root / name).string();
    struct stat st {};
    const bool known = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (known) {
      if (auto it = files.find({st.st_dev, st.st_ino}); it != files.end()) {
        shards[name] = it->second.get();
        return Status::Ok();
      }
    }
    KVC_ASSIGN_OR_RETURN(SafetensorsFile sf, SafetensorsFile::Open(path));
    auto owned = std::make_unique<SafetensorsFile>(std::move(sf));
    shards[name] = owned.get();
    if (known) {
      files[{st.st_dev, st.st_ino}] = std::move(owned);
    } else {  // Open succeeded where stat did not: kept under a key no other name has
      files[{static_cast<dev_t>(-1), static_cast<ino_t>(files.size())}] = std::move(owned);
    }
    return Status::Ok();
  };
  // A single model.safetensors wins over an index beside it, as in Transformers' loader (its
  // local-directory lookup tries SAFE_WEIGHTS_NAME before SAFE_WEIGHTS_INDEX_NAME; probe 46:
  // the index won here, so the two loaded different weights from one directory).
  const fs::path index = root / "model.safetensors.index.json";
  const fs::path single = root / "model.safetensors";
  if (!fs::exists(single, ec) && fs::exists(index, ec)) {
    // A regular file (probe 64: a FIFO here hung every model command), of at most 64 MiB (an
    // index of 100,000 tensors is about 10 MB; its parse needs ~20 times its size).
    if (!fs::is_regular_file(index, ec)) return IoError(index.string() + ": not a regular file");
    constexpr uint64_t kMaxIndexBytes = uint64_t{64} << 20;
    if (const uint64_t size = fs::file_size(index, ec); !ec && size > kMaxIndexBytes)
      return IndexError(index.string(),
                        std::to_string(size) + " bytes; a shard index is at most 64 MiB");
    JsonLimits limits;
    limits.max_bytes = kMaxIndexBytes;
    auto j = ReadJsonFileStrict(index.string(), false, limits);
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
        return IndexError(index.string(), "weight_map[" + base::SingleQuoteClipped(name) +
                                              "]: expected a shard file name");
      const std::string f = file.get<std::string>();
      if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
        return IndexError(index.string(), "weight_map[" + base::SingleQuoteClipped(name) +
                                              "]: " + base::SingleQuoteClipped(f) +
                                              " is not a file name inside the model directory");
      where[name] = f;
      if (!shards.count(f)) KVC_RETURN_IF_ERROR(open_shard(f));
      if (!shards[f]->Find(name))
        return IndexError(index.string(), "weight_map[" + base::SingleQuoteClipped(name) +
                                              "] names shard " + base::SingleQuoteClipped(f) +
                                              ", which does not hold that tensor");
    }
  } else {
    const std::string f = "model.safetensors";
    KVC_RETURN_IF_ERROR(open_shard(f));
    for (const auto& [name, t] : shards[f]->tensors()) where[name] = f;
  }

  // Every required tensor is present with its shape, judged one name at a time before anything
  // is listed or loaded: a config declaring 2^24 layers beside a two-layer checkpoint is
  // MODEL_TENSOR_MISSING at layer 2, not an out-of-memory building 150 million names (probe 35).
  Status present = Status::Ok();
  ForEachRequiredTensor(config, [&](const TensorSpec& spec) {
    auto it = where.find(spec.name);
    if (it == where.end()) {
      present = ViolationStatus(
          ErrorCode::MODEL_TENSOR_MISSING,
          dir + ": tensor '" + spec.name + "' is required by config.json but absent");
      return false;
    }
    const TensorView* t = shards[it->second]->Find(spec.name);
    // A file may hold tensors of any safetensors dtype; a weight the model reads is a float
    // (probe 64: an integer dtype refused the file even on a tensor the model never reads).
    if (!IsWeightDType(t->dtype)) {
      present = ViolationStatus(ErrorCode::MODEL_SAFETENSORS_DTYPE_UNKNOWN,
                                shards[it->second]->path() + ": tensor '" + spec.name +
                                    "' field 'dtype': " + std::string(DTypeName(t->dtype)) +
                                    "; a weight the engine reads is F32, F16 or BF16");
      return false;
    }
    if (t->shape != spec.shape) {
      present = ViolationStatus(ErrorCode::MODEL_TENSOR_SHAPE_MISMATCH,
                                shards[it->second]->path() + ": tensor '" + spec.name +
                                    "' field 'shape': " + ShapeString(t->shape) + ", expected " +
                                    ShapeString(spec.shape) + " from config.json");
      return false;
    }
    return true;
  });
  KVC_RETURN_IF_ERROR(present);

  std::map<std::string, std::vector<float>> loaded;
  for (const auto& spec : RequiredTensors(config)) {  // each present, with its shape (above)
    const SafetensorsFile& sf = *shards[where.at(spec.name)];
    const TensorView* t = sf.Find(spec.name);
    std::vector<float> values = ToFloat32(*t);
    // A NaN or an infinity makes every logit it reaches NaN, and argmax then reads token 0
    // (probe 35: one NaN in a k_proj generated "0,0" with exit 0).
    for (size_t i = 0; i < values.size(); ++i)
      if (!std::isfinite(values[i]))
        return ViolationStatus(ErrorCode::MODEL_TENSOR_NONFINITE,
                               sf.path() + ": tensor '" + spec.name + "' element " +
                                   std::to_string(i) + " is " +
                                   (std::isnan(values[i]) ? "NaN" : "infinite") +
                                   " (as float32); a checkpoint's weights are finite");
    loaded[spec.name] = std::move(values);
  }

  LlamaWeights w;
  w.config = config;
  for (const auto& [name, shard] : where) {
    if (loaded.count(name)) continue;
    if (ChangesTheConfiguredModel(name, config))
      return ViolationStatus(
          ErrorCode::MODEL_TENSOR_UNEXPECTED,
          shards[shard]->path() + ": tensor " + base::SingleQuoteClipped(name) +
              " belongs to the configured model but the Llama forward pass does not apply it "
              "(a bias, a quantization scale, another architecture's weight); ignoring it would "
              "compute another model");
    w.unused_tensors.push_back(name);
  }
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
