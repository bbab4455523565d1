// The Llama-family model configuration read from a Hugging Face config.json.
//
// Shapes the rest of reference/model/ derives from it (d = hidden_size, H_q, H_kv, d_h,
// L = num_hidden_layers, V = vocab_size, F = intermediate_size):
//   embed_tokens  [V, d]          q_proj [H_q*d_h, d]   k_proj, v_proj [H_kv*d_h, d]
//   o_proj        [d, H_q*d_h]    gate_proj, up_proj [F, d]   down_proj [d, F]
//   norms         [d]             lm_head [V, d] (absent when tie_word_embeddings)
// Values only; thread-compatible.
#ifndef KVCONFORM_REFERENCE_MODEL_CONFIG_H_
#define KVCONFORM_REFERENCE_MODEL_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"

namespace kvc::model {

// rope_scaling {"rope_type": "llama3", ...} of Llama 3.1+ (HF _compute_llama3_parameters).
struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  uint64_t original_max_position_embeddings = 8192;
};

struct LlamaConfig {
  uint64_t vocab_size = 0;               // V
  uint64_t hidden_size = 0;              // d
  uint64_t intermediate_size = 0;        // F
  uint64_t num_hidden_layers = 0;        // L
  uint64_t num_attention_heads = 0;      // H_q
  uint64_t num_key_value_heads = 0;      // H_kv (defaults to H_q)
  uint64_t head_dim = 0;                 // d_h (defaults to d / H_q)
  uint64_t max_position_embeddings = 0;  // positions must stay below this
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  bool has_llama3_scaling = false;
  Llama3RopeScaling llama3;
  bool tie_word_embeddings = false;

  uint64_t group_size() const { return num_attention_heads / num_key_value_heads; }  // g
  uint64_t q_width() const { return num_attention_heads * head_dim; }
  uint64_t kv_width() const { return num_key_value_heads * head_dim; }
};

// Parses and validates a config.json document. `source` names it in messages. Errors:
// MODEL_CONFIG_INVALID (missing field, wrong type, inconsistent: H_q % H_kv != 0, zero
// extent, d % H_q != 0 without head_dim, odd head_dim) and MODEL_CONFIG_UNSUPPORTED
// (model_type/architecture outside Llama, hidden_act != silu, attention/mlp bias, an
// unknown rope_scaling type).
StatusOr<LlamaConfig> ParseLlamaConfig(const Json& j, const std::string& source);
StatusOr<LlamaConfig> LoadLlamaConfig(const std::string& path);

// The config.json document for `c` (what the test-model generator writes).
Json LlamaConfigToJson(const LlamaConfig& c);

// RoPE inverse frequencies, d_h/2 of them, in float as HF computes them (theta^(-2i/d_h)),
// with llama3 scaling applied when configured.
std::vector<float> RopeInverseFrequencies(const LlamaConfig& c);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_CONFIG_H_
