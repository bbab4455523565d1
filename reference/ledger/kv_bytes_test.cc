// B_token and the ragged sensitivity ledger against the seed's worked numbers.
#include "reference/ledger/kv_bytes.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kvc
