// Deterministic random-weight Llama checkpoint generator.
#include "reference/model/generator.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reference/model/weights.h"

namespace kvc::model {
namespace {

struct SplitMix64 {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float Uniform() {
    return static_cast<float>(static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0);
  }
};

LlamaConfig Base() {
  LlamaConfig c;
  c.vocab_size = 96;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  return c;
}

Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError(path + ": cannot open for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace

std::vector<std::string> GeneratorShapeNames() {
  return {"mha", "gqa2", "gqa4", "mqa", "tied", "headdim", "bf16", "llama3", "bench100m"};
}

StatusOr<LlamaConfig> GeneratorShape(const std::string& name, DType* dtype) {
  LlamaConfig c = Base();
  *dtype = DType::kF32;
  if (name == "mha") {
    c.num_key_value_heads = 4;
  } else if (name == "gqa2") {
  } else if (name == "gqa4") {
    c.hidden_size = 64;
    c.num_attention_heads = 8;
    c.num_key_value_heads = 2;
    c.intermediate_size = 96;
  } else if (name == "mqa") {
    c.num_key_value_heads = 1;
  } else if (name == "tied") {
    c.tie_word_embeddings = true;
  } else if (name == "headdim") {
    c.head_dim = 16;
  } else if (name == "bf16") {
    *dtype = DType::kBF16;
  } else if (name == "llama3") {
    c.rope_theta = 500000.0;
    c.has_llama3_scaling = true;
    c.max_position_embeddings = 1024;
    c.llama3 = {8.0, 1.0, 4.0, 256};  // wavelengths 6.3 (high), 167 (medium), 4443 (low)
  } else if (name == "bench100m") {
    c.vocab_size = 32000;
    c.hidden_size = 768;
    c.intermediate_size = 2048;
    c.num_hidden_layers = 12;
    c.num_attention_heads = 12;
    c.num_key_value_heads = 4;
    c.head_dim = 64;
    c.max_position_embeddings = 4096;
  } else {
    std::string known;
    for (const auto& n : GeneratorShapeNames()) known += (known.empty() ? "" : ", ") + n;
    return InvalidArgument("unknown model shape '" + name + "'; known: " + known);
  }
  return c;
}

Status GenerateModel(const std::string& dir, const std::string& shape, uint64_t seed) {
  DType dtype;
  KVC_ASSIGN_OR_RETURN(LlamaConfig c, GeneratorShape(shape, &dtype));
  Json extra = {{"kvconform_generator",
                 {{"shape", shape},
                  {"seed", seed},
                  {"tool", "kvconform gen-model --out DIR --shape " + shape + " --seed " +
                               std::to_string(seed)}}}};
  return GenerateModelFromConfig(dir, c, dtype, seed, extra);
}

Status GenerateModelFromConfig(const std::string& dir, const LlamaConfig& c, DType dtype,
                               uint64_t seed, const Json& extra_config) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir + ": cannot create: " + ec.message());
  SplitMix64 rng{seed};
  std::vector<TensorToWrite> out;
  for (const auto& spec : RequiredTensors(c)) {
    TensorToWrite t;
    t.name = spec.name;
    t.dtype = dtype;
    t.shape = spec.shape;
    uint64_t n = 1;
    for (auto s : spec.shape) n *= s;
    const bool norm = spec.shape.size() == 1;
    const bool embed = spec.name == "model.embed_tokens.weight";
    const float a = embed ? 1.0f : std::sqrt(3.0f / static_cast<float>(spec.shape.back()));
    t.bytes.resize(n * DTypeSize(dtype));
    for (uint64_t i = 0; i < n; ++i) {
      const float r = rng.Uniform();
      const float val = norm ? 1.0f + 0.1f * r : a * r;
      if (dtype == DType::kF32) {
        std::memcpy(&t.bytes[4 * i], &val, 4);
      } else {
        const uint16_t b = dtype == DType::kBF16 ? FloatToBFloat16(val) : FloatToHalf(val);
        std::memcpy(&t.bytes[2 * i], &b, 2);
      }
    }
    out.push_back(std::move(t));
  }
  Json cfg = LlamaConfigToJson(c);
  if (dtype == DType::kBF16) cfg["torch_dtype"] = "bfloat16";
  for (const auto& [k, v] : extra_config.items()) cfg[k] = v;
  KVC_RETURN_IF_ERROR(WriteFile(dir + "/config.json", cfg.dump(2) + "\n"));
  return WriteFile(dir + "/model.safetensors", SerializeSafetensors(out));
}

}  // namespace kvc::model
