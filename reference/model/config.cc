// Parsing and validation of Llama-family config.json documents.
#include "reference/model/config.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "reference/base/text_forms.h"

namespace kvc::model {
namespace {

// A double as %.9g (std::to_string prints 1e-45 as 0.000000).
std::string FormatG(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

class Reader {
 public:
  Reader(const Json& j, const std::string& src) : j_(j), src_(src) {}

  Status Invalid(const std::string& field, const std::string& what) const {
    return ViolationStatus(ErrorCode::MODEL_CONFIG_INVALID,
                           src_ + ": field '" + field + "': " + what);
  }
  Status Unsupported(const std::string& field, const std::string& what) const {
    return ViolationStatus(ErrorCode::MODEL_CONFIG_UNSUPPORTED,
                           src_ + ": field '" + field + "': " + what);
  }
  bool Has(const std::string& f) const { return j_.contains(f) && !j_[f].is_null(); }

  // A positive integer field (required unless `fallback` is given).
  Status PositiveInt(const std::string& f, uint64_t* out,
                     std::optional<uint64_t> fallback = {}) const {
    if (!Has(f)) {
      if (fallback) {
        *out = *fallback;
        return Status::Ok();
      }
      return Invalid(f, "missing; expected a positive integer");
    }
    const Json& v = j_[f];
    if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() > 0)) {
      *out = v.get<uint64_t>();
      if (*out == 0) return Invalid(f, "is 0; expected a positive integer");
      if (*out > (1ull << 31)) return Invalid(f, "is larger than 2^31");
      return Status::Ok();
    }
    return Invalid(f, "expected a positive integer, got " + base::ClippedJsonText(v.dump()));
  }
  Status PositiveNumber(const std::string& f, double* out,
                        std::optional<double> fallback = {}) const {
    if (!Has(f)) {
      if (fallback) {
        *out = *fallback;
        return Status::Ok();
      }
      return Invalid(f, "missing; expected a positive number");
    }
    const Json& v = j_[f];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      return Invalid(f,
                     "expected a positive finite number, got " + base::ClippedJsonText(v.dump()));
    // The engine computes in float32: a value it rounds to 0 or infinity would make every
    // logit NaN (probe 35: rope_theta 1e-300 and rms_norm_eps 1e300 generated tokens, exit 0).
    const float as_float = static_cast<float>(v.get<double>());
    if (!(as_float > 0) || !std::isfinite(as_float))
      return Invalid(f, base::ClippedJsonText(v.dump()) +
                            " is not a positive finite float32 (the engine computes in float32)");
    *out = v.get<double>();
    return Status::Ok();
  }
  Status Bool(const std::string& f, bool* out, bool fallback) const {
    if (!Has(f)) {
      *out = fallback;
      return Status::Ok();
    }
    if (!j_[f].is_boolean())
      return Invalid(f, "expected true or false, got " + base::ClippedJsonText(j_[f].dump()));
    *out = j_[f].get<bool>();
    return Status::Ok();
  }

 private:
  const Json& j_;
  const std::string src_;  // a copy: callers pass temporaries (probe 35: a dangling reference)
};

}  // namespace

StatusOr<LlamaConfig> ParseLlamaConfig(const Json& j, const std::string& src) {
  Reader r(j, src);
  if (!j.is_object()) return r.Invalid("", "config.json is not a JSON object");
  if (r.Has("model_type")) {
    if (!j["model_type"].is_string()) return r.Invalid("model_type", "expected a string");
    if (j["model_type"].get<std::string>() != "llama")
      return r.Unsupported("model_type",
                           base::SingleQuoteClipped(j["model_type"].get<std::string>()) +
                               "; the reference engine implements 'llama'");
  }
  // The class Transformers would build: another family's (Qwen2's q/k/v biases, Mistral's
  // sliding window) under model_type "llama" is another computation (since 2026-12-06: accepted).
  if (r.Has("architectures")) {
    const Json& a = j["architectures"];
    if (!a.is_array()) return r.Invalid("architectures", "expected an array of class names");
    for (const Json& name : a) {
      if (!name.is_string())
        return r.Invalid("architectures",
                         "expected class names, got " + base::ClippedJsonText(name.dump()));
      if (name.get<std::string>() != "LlamaForCausalLM")
        return r.Unsupported("architectures",
                             base::SingleQuoteClipped(name.get<std::string>()) +
                                 "; the reference engine implements LlamaForCausalLM");
    }
  }
  if (r.Has("hidden_act")) {
    if (!j["hidden_act"].is_string() || j["hidden_act"].get<std::string>() != "silu")
      return r.Unsupported("hidden_act", base::ClippedJsonText(j["hidden_act"].dump()) +
                                             "; expected \"silu\" (SwiGLU)");
  }
  for (const char* f : {"attention_bias", "mlp_bias"}) {
    bool b = false;
    KVC_RETURN_IF_ERROR(r.Bool(f, &b, false));
    if (b) return r.Unsupported(f, "true; the engine implements bias-free projections");
  }
  LlamaConfig c;
  KVC_RETURN_IF_ERROR(r.PositiveInt("vocab_size", &c.vocab_size));
  KVC_RETURN_IF_ERROR(r.PositiveInt("hidden_size", &c.hidden_size));
  KVC_RETURN_IF_ERROR(r.PositiveInt("intermediate_size", &c.intermediate_size));
  KVC_RETURN_IF_ERROR(r.PositiveInt("num_hidden_layers", &c.num_hidden_layers));
  KVC_RETURN_IF_ERROR(r.PositiveInt("num_attention_heads", &c.num_attention_heads));
  KVC_RETURN_IF_ERROR(
      r.PositiveInt("num_key_value_heads", &c.num_key_value_heads, c.num_attention_heads));
  KVC_RETURN_IF_ERROR(r.PositiveInt("max_position_embeddings", &c.max_position_embeddings));
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    return r.Invalid("num_key_value_heads", std::to_string(c.num_key_value_heads) +
                                                " does not divide num_attention_heads " +
                                                std::to_string(c.num_attention_heads));
  }
  if (!r.Has("head_dim") && c.hidden_size % c.num_attention_heads != 0) {
    return r.Invalid("hidden_size",
                     std::to_string(c.hidden_size) +
                         " is not a multiple of num_attention_heads and head_dim is absent");
  }
  KVC_RETURN_IF_ERROR(
      r.PositiveInt("head_dim", &c.head_dim, c.hidden_size / c.num_attention_heads));
  if (c.head_dim % 2 != 0) return r.Invalid("head_dim", "is odd; RoPE rotates pairs");
  // Bounded before anything is sized by them (probe 64: rope_scaling's check below built
  // head_dim / 2 frequencies first, 4 GiB for a head_dim of 2^31).
  if (c.head_dim > (1u << 16) || c.num_attention_heads > (1u << 16))
    return r.Invalid("head_dim", "head_dim or num_attention_heads above 65536");
  KVC_RETURN_IF_ERROR(r.PositiveNumber("rms_norm_eps", &c.rms_norm_eps, 1e-6));
  KVC_RETURN_IF_ERROR(r.PositiveNumber("rope_theta", &c.rope_theta, 10000.0));
  KVC_RETURN_IF_ERROR(r.Bool("tie_word_embeddings", &c.tie_word_embeddings, false));
  // The RoPE inverse frequencies theta^(-2i/d) are float32: a theta whose powers leave float32
  // (a subnormal theta: 1e-45^(-14/16) is infinite) would make every logit NaN, reported as
  // MODEL_LOGITS_NONFINITE without naming the field (probe 64).
  for (float f : RopeInverseFrequencies(c))
    if (!(f > 0) || !std::isfinite(f))
      return r.Invalid("rope_theta", FormatG(c.rope_theta) + " gives a RoPE inverse frequency of " +
                                         std::to_string(f) + " (not a positive finite float32)");
  if (r.Has("rope_scaling")) {
    const Json& rs = j["rope_scaling"];
    if (!rs.is_object()) return r.Invalid("rope_scaling", "expected an object or null");
    // Its type is a string (probe 46: a number was skipped, and the scaling ignored).
    std::string type;
    for (const char* key : {"rope_type", "type"}) {
      if (!rs.contains(key)) continue;
      if (!rs[key].is_string())
        return r.Invalid(std::string("rope_scaling.") + key,
                         "expected a string, got " + base::ClippedJsonText(rs[key].dump()));
      type = rs[key];
      break;
    }
    if (type == "default") {
      // Plain RoPE.
    } else if (type == "llama3") {
      Reader s(rs, src + " rope_scaling");
      c.has_llama3_scaling = true;
      KVC_RETURN_IF_ERROR(s.PositiveNumber("factor", &c.llama3.factor));
      KVC_RETURN_IF_ERROR(s.PositiveNumber("low_freq_factor", &c.llama3.low_freq_factor));
      KVC_RETURN_IF_ERROR(s.PositiveNumber("high_freq_factor", &c.llama3.high_freq_factor));
      KVC_RETURN_IF_ERROR(s.PositiveInt("original_max_position_embeddings",
                                        &c.llama3.original_max_position_embeddings));
      if (!(c.llama3.high_freq_factor > c.llama3.low_freq_factor))
        return s.Invalid("high_freq_factor", "must be greater than low_freq_factor");
      // The scaled frequencies are float32 too: a factor that divides one to infinity or 0
      // would make every logit NaN (probe 46: factor 1e-44, a positive float32, generated
      // "0,0,0" with exit 0).
      for (float f : RopeInverseFrequencies(c))
        if (!(f > 0) || !std::isfinite(f))
          return s.Invalid("factor", base::ClippedJsonText(rs["factor"].dump()) +
                                         " scales a RoPE inverse frequency to " +
                                         std::to_string(f) + " (not a positive finite float32)");
    } else {
      return r.Unsupported("rope_scaling.rope_type",
                           base::SingleQuoteClipped(type) + "; supported: default, llama3");
    }
  }
  return c;
}

StatusOr<LlamaConfig> LoadLlamaConfig(const std::string& path) {
  // A checkpoint's files are regular files: opening a FIFO blocks until a writer comes (probe
  // 35: a FIFO at config.json hung the command).
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    return IoError(path + ": not a regular file");
  // At most 4 MiB: a model config is a few KB, and its parse needs ~20 times its size (probe
  // 64: a 100 MB config.json of zeros loaded, peaking at 2.2 GB).
  constexpr uint64_t kMaxConfigBytes = uint64_t{4} << 20;
  if (const uint64_t size = std::filesystem::file_size(path, ec); !ec && size > kMaxConfigBytes)
    return ViolationStatus(ErrorCode::MODEL_CONFIG_INVALID,
                           path + ": " + std::to_string(size) +
                               " bytes; a model config is at most 4 MiB (a few KB is usual)");
  JsonLimits limits;
  limits.max_bytes = kMaxConfigBytes;
  auto j = ReadJsonFileStrict(path, false, limits);
  if (!j.ok()) {
    if (j.status().code() == StatusCode::kIoError) return j.status();
    return ViolationStatus(ErrorCode::MODEL_CONFIG_INVALID, j.status().message());
  }
  return ParseLlamaConfig(j->value, path);
}

Json LlamaConfigToJson(const LlamaConfig& c) {
  Json j = {{"architectures", Json::array({"LlamaForCausalLM"})},
            {"model_type", "llama"},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"head_dim", c.head_dim},
            {"max_position_embeddings", c.max_position_embeddings},
            {"rms_norm_eps", c.rms_norm_eps},
            {"rope_theta", c.rope_theta},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"torch_dtype", "float32"}};
  if (c.has_llama3_scaling) {
    j["rope_scaling"] = {
        {"rope_type", "llama3"},
        {"factor", c.llama3.factor},
        {"low_freq_factor", c.llama3.low_freq_factor},
        {"high_freq_factor", c.llama3.high_freq_factor},
        {"original_max_position_embeddings", c.llama3.original_max_position_embeddings}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  return j;
}

std::vector<float> RopeInverseFrequencies(const LlamaConfig& c) {
  const uint64_t half = c.head_dim / 2;
  std::vector<float> inv(half);
  const float base = static_cast<float>(c.rope_theta);
  for (uint64_t i = 0; i < half; ++i) {
    const float expo = static_cast<float>(2 * i) / static_cast<float>(c.head_dim);
    inv[i] = 1.0f / std::pow(base, expo);
  }
  if (!c.has_llama3_scaling) return inv;
  const float factor = static_cast<float>(c.llama3.factor);
  const float lo = static_cast<float>(c.llama3.low_freq_factor);
  const float hi = static_cast<float>(c.llama3.high_freq_factor);
  const float old_ctx = static_cast<float>(c.llama3.original_max_position_embeddings);
  const float low_freq_wavelen = old_ctx / lo;
  const float high_freq_wavelen = old_ctx / hi;
  const float two_pi = static_cast<float>(2.0 * M_PI);
  for (uint64_t i = 0; i < half; ++i) {
    const float f = inv[i];
    const float wavelen = two_pi / f;
    float scaled = wavelen > low_freq_wavelen ? f / factor : f;  // low frequency: divide
    const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
    if (medium) {
      const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
      scaled = (1 - smooth) * scaled / factor + smooth * scaled;
    }
    inv[i] = scaled;
  }
  return inv;
}

}  // namespace kvc::model
