// Small random-weight Llama checkpoints in the real format (config.json + model.safetensors).
//
// Shapes (NAME: layers, d, H_q, H_kv, d_h, F, V, notes):
//   mha     2, 32, 4, 4, 8, 64, 96          untied head
//   gqa2    2, 32, 4, 2, 8, 64, 96          GQA 2:1
//   gqa4    2, 64, 8, 2, 8, 96, 96          GQA 4:1
//   mqa     2, 32, 4, 1, 8, 64, 96          MQA
//   tied    2, 32, 4, 2, 8, 64, 96          tie_word_embeddings
//   headdim 2, 32, 4, 2, 16, 64, 96         head_dim != d / H_q
//   bf16    2, 32, 4, 2, 8, 64, 96          BF16 weights
//   llama3  2, 32, 4, 2, 8, 64, 96          rope_scaling llama3 (original_max 256)
//   bench100m 12, 768, 12, 4, 64, 2048, 32000   ~110M parameters, for benchmarks
// Weights come from a SplitMix64 stream seeded by `seed` (uniform, fan-in scaled), so a
// (shape, seed) pair always writes the same bytes. Thread-compatible.
#ifndef KVCONFORM_REFERENCE_MODEL_GENERATOR_H_
#define KVCONFORM_REFERENCE_MODEL_GENERATOR_H_

#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/model/config.h"
#include "reference/model/safetensors/safetensors.h"

namespace kvc::model {

std::vector<std::string> GeneratorShapeNames();
// The configuration and weight dtype of a named shape; InvalidArgument for an unknown name.
StatusOr<LlamaConfig> GeneratorShape(const std::string& name, DType* weight_dtype);

// Writes DIR/config.json and DIR/model.safetensors (creating DIR) for any configuration.
Status GenerateModelFromConfig(const std::string& dir, const LlamaConfig& c, DType dtype,
                               uint64_t seed, const Json& extra_config = Json::object());

// Writes DIR/config.json and DIR/model.safetensors (creating DIR).
Status GenerateModel(const std::string& dir, const std::string& shape, uint64_t seed);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_GENERATOR_H_
