// Loading a Hugging Face Llama checkpoint directory into fp32 weights.
//
// A directory holds config.json and either model.safetensors or a sharded
// model.safetensors.index.json ({"weight_map": {tensor: shard file}}). Shards are
// memory-mapped and strictly validated (safetensors.h); every tensor the configuration needs
// must be present with exactly the shape the configuration implies (config.h lists them);
// F32/F16/BF16 are widened to fp32 on load. Errors name the file, tensor and field.
// Ownership: LlamaWeights owns plain fp32 copies; the mappings are closed after loading.
// Thread safety: immutable after load.
#ifndef KVCONFORM_REFERENCE_MODEL_WEIGHTS_H_
#define KVCONFORM_REFERENCE_MODEL_WEIGHTS_H_

#include <functional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/model/config.h"

namespace kvc::model {

struct LayerWeights {
  std::vector<float> input_norm;  // [d]
  std::vector<float> q_proj;      // [H_q*d_h, d]
  std::vector<float> k_proj;      // [H_kv*d_h, d]
  std::vector<float> v_proj;      // [H_kv*d_h, d]
  std::vector<float> o_proj;      // [d, H_q*d_h]
  std::vector<float> post_norm;   // [d]
  std::vector<float> gate_proj;   // [F, d]
  std::vector<float> up_proj;     // [F, d]
  std::vector<float> down_proj;   // [d, F]
};

struct LlamaWeights {
  LlamaConfig config;
  std::vector<float> embed_tokens;   // [V, d]
  std::vector<LayerWeights> layers;  // L of them
  std::vector<float> final_norm;     // [d]
  std::vector<float> lm_head;        // [V, d]; empty when tied (use embed_tokens)
  // Tensors the checkpoint names (its single file's, or its index's weight_map) that
  // config.json does not use, in name order: a config with fewer layers than the checkpoint, an
  // lm_head beside tie_word_embeddings, buffers such as rotary_emb.inv_freq. Loading ignores
  // them, as Transformers does (which warns); the CLI notes them on standard error (probe 64:
  // a one-layer config beside a two-layer checkpoint generated other tokens without a word).
  std::vector<std::string> unused_tensors;
  const std::vector<float>& head() const { return lm_head.empty() ? embed_tokens : lm_head; }
};

// Loads `dir` (config.json + model.safetensors or model.safetensors.index.json).
StatusOr<LlamaWeights> LoadLlamaCheckpoint(const std::string& dir);

// The tensor names and shapes a configuration requires, in a stable order (used by the loader
// and by the generator). lm_head.weight is listed only for untied heads.
struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
};
std::vector<TensorSpec> RequiredTensors(const LlamaConfig& c);
// The same specs one at a time, in the same order, until `fn` returns false (no list is built:
// a config may declare 2^31 layers).
void ForEachRequiredTensor(const LlamaConfig& c, const std::function<bool(const TensorSpec&)>& fn);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_WEIGHTS_H_
