// config.json parsing: defaults, inconsistencies, unsupported features, RoPE frequencies.
#include "reference/model/config.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvc::model {
namespace {

Json Minimal() {
  return {{"vocab_size", 10},       {"hidden_size", 16},        {"intermediate_size", 32},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"max_position_embeddings", 64}};
}

ErrorCode CodeOf(const Json& j) {
  auto c = ParseLlamaConfig(j, "config.json");
  EXPECT_FALSE(c.ok());
  return c.ok() ? ErrorCode::kNone : c.status().error();
}

TEST(LlamaConfig, DefaultsFollowTransformers) {
  auto c = ParseLlamaConfig(Minimal(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_key_value_heads, 4u);  // MHA when absent
  EXPECT_EQ(c->head_dim, 4u);             // hidden / heads
  EXPECT_EQ(c->rope_theta, 10000.0);
  EXPECT_FALSE(c->tie_word_embeddings);
  Json j = Minimal();
  j["head_dim"] = 8;  // explicit head_dim wins over hidden / heads
  EXPECT_EQ(ParseLlamaConfig(j, "c")->head_dim, 8u);
}

TEST(LlamaConfig, RejectsMissingAndInconsistentFields) {
  Json j = Minimal();
  j.erase("hidden_size");
  auto c = ParseLlamaConfig(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_NE(c.status().message().find("'hidden_size'"), std::string::npos);
  j = Minimal();
  j["num_key_value_heads"] = 3;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["num_hidden_layers"] = 0;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["vocab_size"] = "10";
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["num_attention_heads"] = 5;  // 16 % 5 without head_dim
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["head_dim"] = 3;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["rms_norm_eps"] = -1;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
}

// Another family's class under model_type "llama" (Qwen2's q/k/v biases, Mistral's sliding
// window) is another computation: it was accepted.
TEST(LlamaConfig, RegressionAnotherArchitectureLabelledLlamaIsRefused) {
  Json j = Minimal();
  j["architectures"] = Json::array({"Qwen2ForCausalLM"});
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
  j["architectures"] = Json::array({"LlamaForCausalLM", "MistralForCausalLM"});
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
  j["architectures"] = "LlamaForCausalLM";
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j["architectures"] = Json::array({7});
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j["architectures"] = Json::array({"LlamaForCausalLM"});
  EXPECT_TRUE(ParseLlamaConfig(j, "config.json").ok());
  j.erase("architectures");
  EXPECT_TRUE(ParseLlamaConfig(j, "config.json").ok());
}

TEST(LlamaConfig, RejectsUnsupportedFeatures) {
  Json j = Minimal();
  j["hidden_act"] = "gelu";
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
  j = Minimal();
  j["attention_bias"] = true;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
  j = Minimal();
  j["model_type"] = "mistral";
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
  j = Minimal();
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}};
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
}

TEST(LlamaConfig, Llama3RopeScalingBands) {
  // d_h = 8, theta = 500000: base wavelengths 2*pi/inv = 6.28, 167.2, 4443, 118000.
  Json j = Minimal();
  j["head_dim"] = 8;
  j["rope_theta"] = 500000.0;
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 256}};
  auto c = ParseLlamaConfig(j, "c");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  LlamaConfig plain = *c;
  plain.has_llama3_scaling = false;
  const auto base = RopeInverseFrequencies(plain);
  const auto scaled = RopeInverseFrequencies(*c);
  ASSERT_EQ(base.size(), 4u);
  EXPECT_EQ(scaled[0], base[0]);  // wavelength 6.28 < 256/4: high frequency kept
  // wavelength 167 in [64, 256]: smooth = (256/167.2 - 1) / 3, blend of inv/8 and inv.
  const double wl = 2 * M_PI / base[1];
  const double smooth = (256.0 / wl - 1.0) / 3.0;
  EXPECT_NEAR(scaled[1], (1 - smooth) * base[1] / 8 + smooth * base[1], 1e-7);
  EXPECT_FLOAT_EQ(scaled[2], base[2] / 8);  // wavelength 4443 > 256: divided by factor
  EXPECT_FLOAT_EQ(scaled[3], base[3] / 8);
}

// Regressions (probe 35). A llama3 rope_scaling error named the file through a dangling
// reference (heap bytes in place of the path); values float32 rounds to 0 or infinity made
// every logit NaN.
TEST(LlamaConfig, RegressionRopeScalingErrorsNameTheFileAndValuesFitFloat32) {
  Json j = Minimal();
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
  auto c = ParseLlamaConfig(j, "some/dir/config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(
      c.status().message().rfind("some/dir/config.json rope_scaling: field 'low_freq_factor'", 0),
      0u)
      << c.status().message();
  for (const auto& [field, value] :
       {std::pair{"rope_theta", 1e-300}, std::pair{"rms_norm_eps", 1e300}}) {
    j = Minimal();
    j[field] = value;
    auto bad = ParseLlamaConfig(j, "config.json");
    ASSERT_FALSE(bad.ok()) << field;
    EXPECT_EQ(bad.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
    EXPECT_NE(bad.status().message().find("float32"), std::string::npos) << bad.status().message();
  }
}

// Regressions (probe 46). A llama3 factor that is a positive float32 but scales an inverse
// frequency to infinity (1e-44), and a rope_type that is not a string, were accepted: the first
// generated "0,0,0" from NaN logits with exit 0, the second ignored the scaling.
// Regression: a config's values were quoted whole in its refusals, so a 10 KB model type,
// class name, activation, RoPE type or number field made a 10 KB message (2026-12-07); each is
// clipped at 80 bytes and counted.
TEST(LlamaConfig, RegressionALongValueIsClippedInTheRefusal) {
  const std::string long_value(10000, 'v');
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, Json>>{{"model_type", long_value},
                                                 {"architectures", Json::array({long_value})},
                                                 {"hidden_act", long_value},
                                                 {"rope_scaling", {{"rope_type", long_value}}},
                                                 {"vocab_size", long_value},
                                                 {"rope_theta", long_value},
                                                 {"attention_bias", long_value}}) {
    Json j = Minimal();
    j[key] = value;
    auto c = ParseLlamaConfig(j, "config.json");
    ASSERT_FALSE(c.ok()) << key;
    EXPECT_LT(c.status().message().size(), 600u)
        << key << ": " << c.status().message().substr(0, 200);
    EXPECT_NE(c.status().message().find(" bytes)"), std::string::npos) << key;
    // A string is clipped inside its quotes (SingleQuoteClipped, or ClippedJsonText for its JSON
    // text): its 10,000 bytes, not the 10,002 of its text with the quotes.
    if (value.is_string()) {
      EXPECT_NE(c.status().message().find(" (10000 bytes)"), std::string::npos)
          << key << ": " << c.status().message();
      EXPECT_EQ(c.status().message().find(" (10002 bytes)"), std::string::npos)
          << key << ": " << c.status().message();
    }
  }
}

TEST(LlamaConfig, RegressionRopeScalingFactorAndTypeAreChecked) {
  Json j = Minimal();
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 1e-44},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8}};
  auto c = ParseLlamaConfig(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_NE(c.status().message().find("field 'factor'"), std::string::npos) << c.status().message();
  j["rope_scaling"]["factor"] = 8.0;
  EXPECT_TRUE(ParseLlamaConfig(j, "config.json").ok());
  for (const Json& bad : {Json{{"rope_type", 3}, {"type", "default"}}, Json{{"type", nullptr}}}) {
    j["rope_scaling"] = bad;
    auto t = ParseLlamaConfig(j, "config.json");
    ASSERT_FALSE(t.ok()) << bad.dump();
    EXPECT_EQ(t.status().error(), ErrorCode::MODEL_CONFIG_INVALID) << t.status().ToString();
    EXPECT_NE(t.status().message().find("expected a string"), std::string::npos)
        << t.status().message();
  }
}

// Unsupported features: mlp_bias true is refused like attention_bias (bias-free projections).
TEST(LlamaConfig, MlpBiasIsUnsupported) {
  Json j = Minimal();
  j["mlp_bias"] = true;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_UNSUPPORTED);
}

// max_position_embeddings has no default: a config without it is MODEL_CONFIG_INVALID.
TEST(LlamaConfig, MaxPositionEmbeddingsIsRequired) {
  Json j = Minimal();
  j.erase("max_position_embeddings");
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
}

// Transformers' LlamaConfig default rms_norm_eps is 1e-6.
TEST(LlamaConfig, RmsNormEpsDefaultsToTransformersValue) {
  auto c = ParseLlamaConfig(Minimal(), "config.json");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rms_norm_eps, 1e-6);
}

// Integer fields are at most 2^31; head_dim and num_attention_heads at most 65536.
TEST(LlamaConfig, IntegerFieldsAreBounded) {
  Json j = Minimal();
  j["vocab_size"] = (uint64_t{1} << 31) + 1;
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
  j = Minimal();
  j["vocab_size"] = uint64_t{1} << 31;
  EXPECT_TRUE(ParseLlamaConfig(j, "config.json").ok());
  j = Minimal();
  j["num_attention_heads"] = 65537;  // head_dim given: no hidden_size divisibility to fail first
  j["head_dim"] = 2;
  auto c = ParseLlamaConfig(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_NE(c.status().message().find("65536"), std::string::npos) << c.status().message();
}

// Without head_dim, hidden_size must be a multiple of num_attention_heads (even when the
// truncated quotient would be a valid even head_dim).
TEST(LlamaConfig, HiddenSizeMustDivideIntoHeadsWithoutHeadDim) {
  Json j = Minimal();
  j["hidden_size"] = 20;
  j["num_attention_heads"] = 3;  // 20 / 3 = 6, even
  auto c = ParseLlamaConfig(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_NE(c.status().message().find("'hidden_size'"), std::string::npos) << c.status().message();
}

// A config that is not an object, and a rope_scaling that is not an object or null, are
// MODEL_CONFIG_INVALID (malformed, not an unsupported feature).
TEST(LlamaConfig, NonObjectConfigAndRopeScalingAreInvalid) {
  EXPECT_EQ(CodeOf(Json::array({1, 2})), ErrorCode::MODEL_CONFIG_INVALID);
  Json j = Minimal();
  j["rope_scaling"] = "llama3";
  EXPECT_EQ(CodeOf(j), ErrorCode::MODEL_CONFIG_INVALID);
}

// llama3 scaling needs high_freq_factor strictly greater than low_freq_factor.
TEST(LlamaConfig, Llama3HighFrequencyFactorExceedsLowStrictly) {
  Json j = Minimal();
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 2.0},
                       {"high_freq_factor", 2.0},
                       {"original_max_position_embeddings", 32}};
  auto c = ParseLlamaConfig(j, "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_NE(c.status().message().find("'high_freq_factor'"), std::string::npos);
}

// LlamaConfigToJson (what gen-model writes) parses back to the same configuration.
TEST(LlamaConfig, ToJsonRoundTripsEveryField) {
  LlamaConfig c;
  c.vocab_size = 10;
  c.hidden_size = 16;
  c.intermediate_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 500000.0;
  c.tie_word_embeddings = true;
  c.has_llama3_scaling = true;
  c.llama3 = {8.0, 1.0, 4.0, 32};
  auto back = ParseLlamaConfig(LlamaConfigToJson(c), "config.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(LlamaConfigToJson(*back), LlamaConfigToJson(c));
  EXPECT_EQ(back->rms_norm_eps, 1e-5);
  EXPECT_EQ(back->llama3.original_max_position_embeddings, 32u);
}

}  // namespace
}  // namespace kvc::model
