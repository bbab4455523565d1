// B_token and the ragged sensitivity ledger against the seed's worked numbers.
#include "reference/ledger/kv_bytes.h"

#include <gtest/gtest.h>

#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

const CacheGeometry kLoop2{2, 2, 4, 2, 2};  // M5.1 Loop 2: L=2, H_kv=2, d_h=4, fp16 K/V

TEST(KvBytes, Loop2FixtureIs64BytesPerToken) {
  auto b = BytesPerToken(kLoop2);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 64u);
}

TEST(KvBytes, SensitivitySweepsOfTheSeed) {
  // Doubling L, H_kv or d_h gives 128 B/token; one-byte K and V give 32 B/token.
  EXPECT_EQ(*BytesPerToken({4, 2, 4, 2, 2}), 128u);
  EXPECT_EQ(*BytesPerToken({2, 4, 4, 2, 2}), 128u);
  EXPECT_EQ(*BytesPerToken({2, 2, 8, 2, 2}), 128u);
  EXPECT_EQ(*BytesPerToken({2, 2, 4, 1, 1}), 32u);
  // Separate K and V widths are kept separate: fp16 K, fp8 V.
  EXPECT_EQ(*BytesPerToken({2, 2, 4, 2, 1}), 48u);
}

TEST(KvBytes, LlamaScaleGqaAndMha) {
  EXPECT_EQ(*BytesPerToken({32, 8, 128, 2, 2}), 131072u);
  EXPECT_EQ(*BytesPerToken({32, 32, 128, 2, 2}), 524288u);
  auto r = ComputeRaggedLedger({32, 8, 128, 2, 2}, std::vector<uint64_t>{4096}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->logical, 536870912u);  // 512 MiB
}

TEST(KvBytes, RaggedLedgerOfTheSensitivityBase) {
  // Requests A (T=5, one copy) and B (T=3, two copies): 512 / 704 / 640 / 128.
  std::vector<uint64_t> lengths{5, 3}, copies{1, 2};
  auto r = ComputeRaggedLedger(kLoop2, lengths, copies);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->logical, 512u);
  EXPECT_EQ(r->materialized, 704u);
  EXPECT_EQ(r->rectangular, 640u);
  EXPECT_EQ(r->phantom, 128u);
  // Lengths [5, 2]: 448 real, 640 rectangle, 192 phantom (0x02).
  auto r2 = ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{5, 2}, {});
  EXPECT_EQ(r2->logical, 448u);
  EXPECT_EQ(r2->phantom, 192u);
  // A request of length 0 owns no committed cache state: it is not a row of the rectangle
  // (0x02's N counts the state-owning requests; probe 33: [5, 0] gave 640 and 320 phantom).
  auto r3 = ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{5, 0}, {});
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ(r3->rectangular, 320u);
  EXPECT_EQ(r3->phantom, 0u);
  auto none = ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{0, 0}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->rectangular, 0u);
}

TEST(KvBytes, RejectsZeroAndOverflow) {
  EXPECT_EQ(BytesPerToken({0, 2, 4, 2, 2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BytesPerToken({2, 2, 4, 0, 2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BytesPerToken({1ull << 40, 1ull << 20, 1ull << 10, 2, 2}).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{1ull << 62}, {}).status().code(),
            StatusCode::kOutOfRange);
  EXPECT_EQ(ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{5, 3}, std::vector<uint64_t>{1}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeRaggedLedger(kLoop2, std::vector<uint64_t>{5}, std::vector<uint64_t>{0}).status().code(),
            StatusCode::kInvalidArgument);
}

// Probe 55: byte figures beyond 2^53 (here 2^60: 2^43 tokens of the GQA shape) were out of
// range in a document though exact here.
TEST(KvBytes, RegressionByteFiguresBeyond2To53AreDeclarable) {
  Json doc = test::LoadJson("fixtures/m5_1/ledger/gqa_scale_check.json");
  doc["committed_lengths"] = Json::array({uint64_t{1} << 43});
  doc["expected"] = {{"logical", uint64_t{1} << 60},
                     {"materialized", uint64_t{1} << 60},
                     {"rectangular", uint64_t{1} << 60},
                     {"phantom", 0}};
  Violations v = ValidateKvBytes(doc);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

TEST(KvBytes, HfConfigGeometry) {
  Json cfg = {{"num_hidden_layers", 32}, {"num_attention_heads", 32}, {"num_key_value_heads", 8},
              {"hidden_size", 4096}, {"torch_dtype", "bfloat16"}};
  auto g = GeometryFromHfConfig(cfg);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(*BytesPerToken(*g), 131072u);
  cfg.erase("num_key_value_heads");  // MHA fallback
  EXPECT_EQ(*BytesPerToken(*GeometryFromHfConfig(cfg)), 524288u);
  cfg["head_dim"] = 64;  // explicit head_dim wins over hidden/heads
  EXPECT_EQ(GeometryFromHfConfig(cfg)->head_dim, 64u);
  cfg.erase("torch_dtype");
  EXPECT_NE(GeometryFromHfConfig(cfg).status().message().find("torch_dtype"), std::string::npos);
  EXPECT_TRUE(GeometryFromHfConfig(cfg, "float32").ok());
  cfg["num_hidden_layers"] = -1;
  EXPECT_NE(GeometryFromHfConfig(cfg, "float32").status().message().find("num_hidden_layers"),
            std::string::npos);
}

// The CLI doc audit of 2026-12-07: "torch_dtype": 5 was "no torch_dtype"; a dtype of another
// JSON type is named as such (null stays absent, as transformers writes it), and --dtype still
// overrides it.
TEST(KvBytes, RegressionADtypeThatIsNotAStringIsNamedAsSuch) {
  Json cfg = {{"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"hidden_size", 64}};
  for (const char* key : {"torch_dtype", "dtype"}) {
    Json c = cfg;
    c[key] = 5;
    const std::string m = GeometryFromHfConfig(c).status().message();
    EXPECT_NE(m.find(std::string("field ") + key + " is a number, not a dtype name"),
              std::string::npos)
        << m;
    EXPECT_TRUE(GeometryFromHfConfig(c, "bfloat16").ok());
    c[key] = nullptr;
    EXPECT_NE(GeometryFromHfConfig(c).status().message().find("no torch_dtype"), std::string::npos);
  }
}

// Probe 98: vLLM's --kv-cache-dtype spellings (fp8_e4m3, fp8_e5m2) and torch's fnuz fp8 formats
// were unknown; a --dtype the kit does not know was blamed on config.json, and no message
// listed the known names.
TEST(KvBytes, RegressionVendorFp8NamesAreOneByteAndAnUnknownDtypeNamesItsSource) {
  for (const char* name :
       {"fp8_e4m3", "fp8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "torch.float8_e4m3fnuz"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(DtypeBytes(name), std::optional<uint64_t>(1));
  }
  EXPECT_EQ(DtypeBytes("nvfp4"), std::nullopt);  // sub-byte with scales: another cache ABI
  // Every name the messages list is a name DtypeBytes knows (the list is written by hand).
  std::string list(kKnownDtypeNames);
  for (char& ch : list)
    if (ch == ',' || ch == ';' || ch == '(' || ch == ')') ch = ' ';
  std::istringstream names(list);
  size_t listed = 0;
  for (std::string name; names >> name;) {
    if (name == "bytes" || name == "byte" || std::isdigit(static_cast<unsigned char>(name[0])))
      continue;
    ++listed;
    EXPECT_TRUE(DtypeBytes(name).has_value()) << name;
  }
  EXPECT_EQ(listed, 24u);
  EXPECT_EQ(DtypeBytes("fp8_per_token_head"), std::nullopt);
  Json cfg = {{"num_hidden_layers", 32},
              {"num_attention_heads", 32},
              {"num_key_value_heads", 8},
              {"hidden_size", 4096},
              {"torch_dtype", "bfloat16"}};
  const std::string flag = GeometryFromHfConfig(cfg, "fp8_per_token_head").status().message();
  EXPECT_TRUE(flag.starts_with("--dtype: unknown dtype \"fp8_per_token_head\" (known: ")) << flag;
  EXPECT_NE(flag.find("fp8_e4m3"), std::string::npos) << flag;
  cfg["torch_dtype"] = "float7";
  EXPECT_TRUE(GeometryFromHfConfig(cfg).status().message().starts_with(
      "config.json: unknown dtype \"float7\""))
      << GeometryFromHfConfig(cfg).status().message();
}

// Regression: a config's values were quoted whole in its refusals, so a 10 KB dtype name,
// hybrid pattern or layer kind made a 10 KB message (2026-12-07); each is clipped at 80 bytes
// and counted.
TEST(HfConfig, RegressionALongValueIsClippedInTheRefusal) {
  const Json base = {{"num_hidden_layers", 32},
                     {"num_attention_heads", 32},
                     {"num_key_value_heads", 8},
                     {"hidden_size", 4096},
                     {"torch_dtype", "bfloat16"}};
  const std::string long_value(10000, 'z');
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, Json>>{{"torch_dtype", long_value},
                                                 {"hybrid_override_pattern", long_value},
                                                 {"layer_types", Json::array({long_value})},
                                                 {"v_head_dim", long_value},
                                                 {"num_kv_shared_layers", long_value}}) {
    Json cfg = base;
    cfg[key] = value;
    const Status s = GeometryFromHfConfig(cfg).status();
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_LT(s.message().size(), 600u) << key << ": " << s.message().substr(0, 200);
    EXPECT_NE(s.message().find(" bytes)"), std::string::npos) << key;
    if (value.is_string()) {  // clipped inside its quotes (ClippedJsonText)
      EXPECT_NE(s.message().find("...\" (10000 bytes)"), std::string::npos)
          << key << ": " << s.message();
    }
  }
}

// Regression (probe 17, finding 01): a DeepSeek-V2 (MLA) config printed a full-K/V B_token of
// 1,228,800 B from hidden_size / heads = 40, a head width the model does not have (its cache is
// a 512 + 64 latent per layer). Latent and quantized K/V caches are refused, naming the field.
TEST(KvBytes, RegressionHfConfigOfALatentOrQuantizedCacheIsRefused) {
  const Json mla = {
      {"model_type", "deepseek_v2"}, {"num_hidden_layers", 60},  {"num_attention_heads", 128},
      {"num_key_value_heads", 128},  {"hidden_size", 5120},      {"kv_lora_rank", 512},
      {"q_lora_rank", 1536},         {"qk_rope_head_dim", 64},   {"qk_nope_head_dim", 128},
      {"v_head_dim", 128},           {"torch_dtype", "bfloat16"}};
  auto g = GeometryFromHfConfig(mla);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("kv_lora_rank"), std::string::npos) << g.status().message();

  const Json gqa = {{"num_hidden_layers", 32},
                    {"num_attention_heads", 32},
                    {"num_key_value_heads", 8},
                    {"hidden_size", 4096},
                    {"torch_dtype", "bfloat16"}};
  ASSERT_TRUE(GeometryFromHfConfig(gqa).ok());
  Json null_latent = gqa;
  null_latent["kv_lora_rank"] = nullptr;  // absent in effect
  EXPECT_TRUE(GeometryFromHfConfig(null_latent).ok());
  Json top = gqa;
  top["kv_cache_dtype"] = "fp8";
  EXPECT_NE(GeometryFromHfConfig(top).status().message().find("field kv_cache_dtype"),
            std::string::npos);
  for (const char* key : {"kv_cache_dtype", "kv_cache_scheme", "kv_cache_quant_algo"}) {
    Json q = gqa;
    q["quantization_config"] = {{"quant_method", "fp8"}, {key, "fp8"}};
    EXPECT_NE(
        GeometryFromHfConfig(q).status().message().find(std::string("quantization_config.") + key),
        std::string::npos)
        << key;
  }
  Json weights_only = gqa;  // weight quantization leaves the K/V cache as it is
  weights_only["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}};
  EXPECT_TRUE(GeometryFromHfConfig(weights_only).ok());
  Json v_width = gqa;
  v_width["v_head_dim"] = 64;  // K heads are 128 wide
  EXPECT_NE(GeometryFromHfConfig(v_width).status().message().find("v_head_dim"), std::string::npos);
  v_width["v_head_dim"] = 128;
  EXPECT_TRUE(GeometryFromHfConfig(v_width).ok());
}

// Regression (probe 17, finding 01b): num_kv_shared_layers (Gemma-3n cross-layer K/V sharing)
// was ignored, so L_cache counted layers that produce no cache rows.
TEST(KvBytes, RegressionHfConfigCountsOnlyCacheProducingLayers) {
  Json cfg = {{"num_hidden_layers", 2}, {"num_attention_heads", 4},  {"num_key_value_heads", 2},
              {"hidden_size", 64},      {"torch_dtype", "bfloat16"}, {"num_kv_shared_layers", 1}};
  auto g = GeometryFromHfConfig(cfg);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->layers, 1u);
  EXPECT_EQ(*BytesPerToken(*g), 1u * 2 * 16 * (2 + 2));
  cfg["num_kv_shared_layers"] = 0;
  EXPECT_EQ(GeometryFromHfConfig(cfg)->layers, 2u);
  for (Json bad : {Json(2), Json(-1), Json("1")}) {
    cfg["num_kv_shared_layers"] = bad;
    EXPECT_NE(GeometryFromHfConfig(cfg).status().message().find("num_kv_shared_layers"),
              std::string::npos)
        << bad.dump();
  }
}

// Regression: a composite (multimodal) config nests its language model in text_config; it was
// refused as missing num_hidden_layers, and a latent cache declared only in text_config, beside
// top-level geometry, was computed (probe 19: only top-level keys were read). Shaped like
// Gemma 3 4B's config.json: the decoder's geometry in text_config, torch_dtype at the top level.
TEST(KvBytes, RegressionHfConfigOfACompositeModelIsReadFromTextConfig) {
  Json text = {{"num_hidden_layers", 34},
               {"num_attention_heads", 8},
               {"num_key_value_heads", 4},
               {"head_dim", 256},
               {"hidden_size", 2560}};
  Json cfg = {{"architectures", {"Gemma3ForConditionalGeneration"}},
              {"torch_dtype", "bfloat16"},
              {"text_config", text},
              {"vision_config", {{"num_hidden_layers", 27}, {"num_attention_heads", 16}}}};
  auto g = GeometryFromHfConfig(cfg);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->layers, 34u);
  EXPECT_EQ(*BytesPerToken(*g), 34u * 4 * 256 * (2 + 2));
  // The language model's own dtype wins over the top level's.
  cfg["text_config"]["torch_dtype"] = "float32";
  EXPECT_EQ(GeometryFromHfConfig(cfg)->k_bytes, 4u);
  // A nested field's message names it where it is.
  cfg["text_config"].erase("num_attention_heads");
  EXPECT_NE(GeometryFromHfConfig(cfg).status().message().find(
                "missing field text_config.num_attention_heads"),
            std::string::npos);
  // A quantized K/V cache is refused at either level.
  cfg["text_config"] = text;
  cfg["quantization_config"] = {{"kv_cache_scheme", {{"num_bits", 8}}}};
  EXPECT_NE(GeometryFromHfConfig(cfg).status().message().find(
                "field quantization_config.kv_cache_scheme"),
            std::string::npos);
  cfg.erase("quantization_config");
  cfg["text_config"]["kv_cache_dtype"] = "fp8";
  EXPECT_NE(GeometryFromHfConfig(cfg).status().message().find("field text_config.kv_cache_dtype"),
            std::string::npos);
  // A top level that declares its own layers is a plain decoder config: its geometry is read
  // there, but a latent cache declared in text_config is still another ABI.
  Json plain = {{"num_hidden_layers", 2},
                {"num_attention_heads", 4},
                {"hidden_size", 64},
                {"torch_dtype", "float16"},
                {"text_config", text}};
  EXPECT_EQ(GeometryFromHfConfig(plain)->layers, 2u);
  plain["text_config"]["kv_lora_rank"] = 512;
  EXPECT_NE(GeometryFromHfConfig(plain).status().message().find("field text_config.kv_lora_rank"),
            std::string::npos);
  // A text_config leaves out members equal to its model type's defaults, which are not the
  // full-attention ones: a missing head_dim or num_key_value_heads is refused, not derived
  // (probe 25: Gemma 3 12B's text_config omits head_dim 256; 3840 / 16 = 240 was printed).
  Json sparse = {{"torch_dtype", "bfloat16"}, {"text_config", text}};
  sparse["text_config"].erase("head_dim");
  sparse["text_config"]["model_type"] = "gemma3_text";
  EXPECT_NE(
      GeometryFromHfConfig(sparse).status().message().find("missing field text_config.head_dim"),
      std::string::npos)
      << GeometryFromHfConfig(sparse).status().message();
  // The model type named is text_config's, else the composite's (the CLI doc audit of
  // 2026-12-07: "model_type unnamed" beside a top-level "gemma3").
  sparse["text_config"].erase("model_type");
  sparse["model_type"] = "gemma3";
  EXPECT_NE(GeometryFromHfConfig(sparse).status().message().find(
                "(model_type \"gemma3\" at the top level)"),
            std::string::npos)
      << GeometryFromHfConfig(sparse).status().message();
  // A text_config that is not an object is named (it was taken as absent: "missing field
  // num_hidden_layers").
  sparse["text_config"] = Json::array({1});
  EXPECT_NE(GeometryFromHfConfig(sparse).status().message().find(
                "field text_config is an array, expected an object"),
            std::string::npos)
      << GeometryFromHfConfig(sparse).status().message();
  // Layers of another shape, or without a row per token, are refused (probe 25: Llama 3.2
  // Vision's cross-attention layers were counted).
  Json mllama = {{"torch_dtype", "bfloat16"}, {"text_config", text}};
  mllama["text_config"]["cross_attention_layers"] = {3, 8, 13};
  EXPECT_NE(GeometryFromHfConfig(mllama).status().message().find(
                "field text_config.cross_attention_layers"),
            std::string::npos);
  // (Cross-attention layers hold another modality's K/V, not a recurrent state: the note on
  // state-space layers is not said of them; probe 99.)
  EXPECT_EQ(GeometryFromHfConfig(mllama).status().message().find("state-space"), std::string::npos);
  mllama["text_config"]["cross_attention_layers"] = Json::array();
  EXPECT_TRUE(GeometryFromHfConfig(mllama).ok());
  // Hybrid and linear-attention models mark such layers under further names and in layer_types
  // (probe 27: 8 of 32 attention layers were counted as 32); a marker declaring nothing is none.
  Json hybrid = {{"torch_dtype", "bfloat16"}, {"text_config", text}};
  hybrid["text_config"]["layer_types"] = {"linear_attention", "full_attention"};
  EXPECT_NE(GeometryFromHfConfig(hybrid).status().message().find("layer_types holds"),
            std::string::npos);
  EXPECT_NE(GeometryFromHfConfig(hybrid).status().message().find("state-space"), std::string::npos);
  hybrid["text_config"]["layer_types"] = {"cross_attention", "full_attention"};
  EXPECT_EQ(GeometryFromHfConfig(hybrid).status().message().find("state-space"), std::string::npos)
      << GeometryFromHfConfig(hybrid).status().message();
  hybrid["text_config"]["layer_types"] = {"sliding_attention", "full_attention"};
  EXPECT_TRUE(GeometryFromHfConfig(hybrid).ok());
  hybrid["text_config"]["attn_layer_period"] = 8;
  EXPECT_NE(GeometryFromHfConfig(hybrid).status().message().find("text_config.attn_layer_period"),
            std::string::npos);
  EXPECT_NE(GeometryFromHfConfig(hybrid).status().message().find(
                "the per-request state of state-space or linear-attention layers is another cache "
                "ABI, not counted"),
            std::string::npos);
  hybrid["text_config"]["attn_layer_period"] = 0;
  hybrid["text_config"]["hybrid_override_pattern"] = "";
  EXPECT_TRUE(GeometryFromHfConfig(hybrid).ok())
      << GeometryFromHfConfig(hybrid).status().ToString();
  // The same member at both levels with two values is refused, not one picked.
  Json twice = {{"torch_dtype", "bfloat16"}, {"num_kv_shared_layers", 8}, {"text_config", text}};
  twice["text_config"]["num_kv_shared_layers"] = 4;
  EXPECT_NE(GeometryFromHfConfig(twice).status().message().find("differ"), std::string::npos);
  // num_kv_shared_layers beside the text_config counts; a null top-level num_hidden_layers is
  // absent (the text_config is read).
  Json shared = {{"torch_dtype", "bfloat16"},
                 {"num_hidden_layers", nullptr},
                 {"num_kv_shared_layers", 10},
                 {"text_config", text}};
  ASSERT_TRUE(GeometryFromHfConfig(shared).ok())
      << GeometryFromHfConfig(shared).status().ToString();
  EXPECT_EQ(GeometryFromHfConfig(shared)->layers, 24u);
  // Without text_config, the missing field is named at the top level, as before.
  EXPECT_NE(GeometryFromHfConfig(Json{{"torch_dtype", "float16"}})
                .status()
                .message()
                .find("missing field num_hidden_layers"),
            std::string::npos);
}

// kvconform.kv_bytes/1: the seed's scale-check fixtures validate; what the one-field invalid
// fixtures do not reach (the form, the copies, an overflow) has one code each.
// Regression (probe 35): Falcon-7B (multi_query) printed 71 K/V heads and Falcon-40B
// (new_decoder_architecture, num_kv_heads 8) 128, 71 and 16 times their caches.
TEST(KvBytes, RegressionHfConfigReadsFalconAndChatGlmKvHeads) {
  Json falcon7b = {{"num_hidden_layers", 32},
                   {"num_attention_heads", 71},
                   {"hidden_size", 4544},
                   {"multi_query", true},
                   {"torch_dtype", "bfloat16"}};
  EXPECT_EQ(*BytesPerToken(*GeometryFromHfConfig(falcon7b)), 32u * 1 * 64 * 4);  // 8,192
  Json falcon40b = {{"num_hidden_layers", 60},  {"num_attention_heads", 128},
                    {"hidden_size", 8192},      {"new_decoder_architecture", true},
                    {"num_kv_heads", 8},        {"multi_query", true},
                    {"torch_dtype", "bfloat16"}};
  EXPECT_EQ(*BytesPerToken(*GeometryFromHfConfig(falcon40b)), 60u * 8 * 64 * 4);  // 122,880
  Json glm = {{"num_hidden_layers", 28},    {"num_attention_heads", 32},
              {"hidden_size", 4096},        {"multi_query_attention", true},
              {"multi_query_group_num", 2}, {"torch_dtype", "bfloat16"}};
  EXPECT_EQ(GeometryFromHfConfig(glm)->kv_heads_local, 2u);
  // Probe 35 too: torch_dtype and dtype that disagree are not resolved silently, and 2^64 - 1
  // layers are "too large", not "not positive".
  Json both = glm;
  both["dtype"] = "float32";
  EXPECT_NE(GeometryFromHfConfig(both).status().message().find("disagree"), std::string::npos);
  both["num_hidden_layers"] = UINT64_MAX;
  both.erase("dtype");
  EXPECT_NE(GeometryFromHfConfig(both).status().message().find("too large"), std::string::npos);
  // A K/V head count without the flag that makes the model use it is not guessed.
  falcon40b.erase("new_decoder_architecture");
  falcon40b.erase("multi_query");
  const auto refused = GeometryFromHfConfig(falcon40b);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("num_kv_heads"), std::string::npos);
}

TEST(KvBytesDocument, ScaleChecksValidateAndBadDocumentsRaiseOneCode) {
  for (const char* f :
       {"fixtures/m5_1/ledger/gqa_scale_check.json", "fixtures/m5_1/ledger/mha_scale_check.json",
        "fixtures/m5_1/ledger/ragged_rectangle.json"}) {
    const Violations v = ValidateKvBytes(test::LoadJson(f));
    EXPECT_TRUE(v.empty()) << f << test::Describe(v);
  }
  const Json base = test::LoadJson("fixtures/m5_1/ledger/ragged_rectangle.json");
  struct Case {
    std::string pointer;  // replaced with `value`
    Json value;
    std::string code;
    std::string at;
  };
  const std::vector<Case> cases = {
      {"/committed_lengths/1", -2, "INPUT_VALUE_OUT_OF_RANGE", "/committed_lengths/1"},
      {"/expected/rectangular", "640", "INPUT_FIELD_TYPE", "/expected/rectangular"},
      {"/copies", Json::array({1}), "INPUT_VALUE_INVALID", "/copies"},
      {"/copies", Json::array({1, 0}), "INPUT_VALUE_OUT_OF_RANGE", "/copies/1"},
      // Two copies of the second request: materialized 5 * 64 + 2 * 2 * 64 = 576 B.
      {"/copies", Json::array({1, 2}), "LEDGER_EXPECTED_DRIFT", "/expected/materialized"},
      {"/cache_abi/head_dim", 0, "LEDGER_ABI_INVALID", "/cache_abi/head_dim"},
      {"/extra", 1, "INPUT_FIELD_UNKNOWN", "/extra"},
  };
  for (const Case& c : cases) {
    Json doc = base;
    doc[Json::json_pointer(c.pointer)] = c.value;
    const Violations v = ValidateKvBytes(doc);
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{c.code})
        << c.pointer << test::Describe(v);
    EXPECT_EQ(v[0].pointer, c.at) << c.pointer;
  }
  // 2^53 tokens of 128 KiB overflow 64 bits: an error, not a wrapped ledger.
  Json huge = test::LoadJson("fixtures/m5_1/ledger/gqa_scale_check.json");
  huge["committed_lengths"][0] = uint64_t{1} << 53;
  const Violations v = ValidateKvBytes(huge);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_ARITHMETIC_OVERFLOW"})
      << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/committed_lengths");
}

// Probe 91: an ABI whose coefficient L * H_kv * d_h * (b_K + b_V) overflows was reported at
// /committed_lengths, the byte trajectory reporting the same fault at /cache_abi.
TEST(KvBytes, RegressionAnOverflowingCoefficientIsTheAbisFault) {
  Json doc = test::LoadJson("fixtures/m5_1/ledger/gqa_scale_check.json");
  doc["cache_abi"]["num_cache_layers"] = uint64_t{1} << 53;
  doc["cache_abi"]["head_dim"] = uint64_t{1} << 20;
  const Violations v = ValidateKvBytes(doc);
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_ARITHMETIC_OVERFLOW", "/cache_abi"))
      << test::Describe(v);
}

// A mutation audit of the M5.1 0x02/0x03/0x05 calculators (2026-12-05, helper 97: 99 single-point
// mutants of reference/ledger/, reference/saved_work/, reference/service/ and
// reference/frontier/phase.cc; 40 survived every test and the suite, 35 of them real gaps). Each
// test below fails under the mutant its comment names (checked against the mutant's library).

// Mutation audit 2026-12-05 (M10): GeometryFromHfConfig accepts num_attention_heads not a multiple
// of num_key_value_heads.
TEST(KvBytesRules, HfConfigHeadsNotAMultipleOfKvHeadsIsRefused) {
  Json cfg = Json::parse(R"({"num_hidden_layers": 2, "num_attention_heads": 6,
      "num_key_value_heads": 4, "head_dim": 8, "torch_dtype": "bfloat16"})");
  auto g = GeometryFromHfConfig(cfg, "");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(g.status().message()).find("is not a multiple of"), std::string::npos);
}

}  // namespace
}  // namespace kvc
