// Tests of the CUDA engine: without a device, a clear kUnavailable error (runs in CI); with one,
// CPU-vs-GPU and GPU path parity on the bundled test models plus the transaction rules
// (cancelled appends leave the device's published state untouched).
#include "kernels/cuda_engine.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda_kernels.h"
#include "kernels/cuda_parity.h"
#include "reference/testutil/testutil.h"

namespace kvc::kernels {
namespace {

model::LlamaWeights LoadFixture(const std::string& name) {
  auto w = model::LoadLlamaCheckpoint(test::SourcePath("fixtures/models/" + name));
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return w.ok() ? std::move(*w) : model::LlamaWeights{};
}

#define REQUIRE_DEVICE()                                                       \
  do {                                                                         \
    std::string why;                                                           \
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

const std::vector<int64_t> kPrompt = {1,  5,  9,  2, 7,  3,  11, 4,  8, 6,
                                      10, 12, 13, 0, 14, 15, 16, 17, 18};

TEST(CudaEngine, UnavailableWithoutDeviceIsAClearError) {
  std::string why;
  if (CudaDeviceAvailable(&why)) GTEST_SKIP() << "a CUDA device is present";
  const model::LlamaWeights w = LoadFixture("gqa2");
  auto m = CudaModel::Upload(w);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(m.status().message().find("no usable CUDA device"), std::string::npos)
      << m.status().message();
  EXPECT_EQ(CheckCudaDevice().code(), StatusCode::kUnavailable);
}

TEST(CudaEngine, ParityPairsOnEveryBundledShape) {
  REQUIRE_DEVICE();
  for (const char* name : {"mha", "gqa2", "gqa4", "mqa", "tied", "headdim", "bf16", "llama3"}) {
    const model::LlamaWeights w = LoadFixture(name);
    const model::LlamaModel cpu(w);
    auto gpu = CudaModel::Upload(w);
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    for (auto mode : {model::ComputeMode::kDeterministic, model::ComputeMode::kFast}) {
      auto res = RunCudaParity(cpu, **gpu, kPrompt, 4, mode);
      ASSERT_TRUE(res.ok()) << name << ": " << res.status().ToString();
      ASSERT_EQ(res->size(), 7u);
      for (const auto& r : *res) {
        EXPECT_TRUE(r.passed) << name << " " << model::ComputeModeName(mode) << " " << r.name
                              << ": " << r.detail << " max_abs=" << r.max_abs;
        if (mode == model::ComputeMode::kDeterministic && r.name != "cpu_vs_gpu" && !r.skipped) {
          EXPECT_TRUE(r.bit_identical) << name << " " << r.name;
        }
      }
      std::printf("[ parity   ] %s %s cpu_vs_gpu max_abs=%.3g max_rel=%.3g\n", name,
                  std::string(model::ComputeModeName(mode)).c_str(), (*res)[0].max_abs,
                  (*res)[0].max_rel);
    }
  }
}

// Probe 59: RunGreedyCuda built its engine with the default max_tokens, min(max_position, 8192),
// so a run model::CheckMaxNewTokens accepts (up to max_position positions) failed on the device
// past 8192 positions. The engine is now sized for the run (no device needed).
TEST(CudaEngine, GreedyRunsAreSizedForTheirPositions) {
  CudaEngineOptions o;
  EXPECT_EQ(SizedForRun(o, 8000, 1000).max_tokens, 8999u);
  EXPECT_EQ(SizedForRun(o, 5, 1).max_tokens, 5u);
  o.max_tokens = 64;  // an explicit size is kept
  EXPECT_EQ(SizedForRun(o, 8000, 1000).max_tokens, 64u);
}

TEST(CudaEngine, FailedAppendsLeaveThePublishedStateUnchanged) {
  REQUIRE_DEVICE();
  const model::LlamaWeights w = LoadFixture("gqa4");
  auto gpu = CudaModel::Upload(w);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  for (bool paged : {false, true}) {
    CudaEngineOptions o;
    o.paged = paged;
    o.block_size = 4;
    o.max_tokens = 8;
    o.max_requests = 1;
    auto e = CudaEngine::Create(**gpu, o);
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    CudaEngine& eng = **e;
    ASSERT_TRUE(eng.NewRequest("r").ok());
    std::vector<float> logits, l7, l8, other;
    const std::vector<int64_t> p6(kPrompt.begin(), kPrompt.begin() + 6);
    ASSERT_TRUE(eng.Prefill("r", p6, 0, &logits).ok());
    ASSERT_EQ(logits.size(), w.config.vocab_size);
    const int64_t y = model::Argmax(logits);
    ASSERT_TRUE(eng.Emit("r", y).ok());
    // Wrong frontier token: refused before any transaction opens.
    EXPECT_FALSE(eng.Decode("r", (y + 1) % 96, &other).ok());
    ASSERT_TRUE(eng.Decode("r", y, &l7).ok());  // 7 rows
    const int64_t y2 = model::Argmax(l7);
    ASSERT_TRUE(eng.Emit("r", y2).ok());
    ASSERT_TRUE(eng.Decode("r", y2, &l8).ok());  // 8 rows: full
    const int64_t y3 = model::Argmax(l8);
    ASSERT_TRUE(eng.Emit("r", y3).ok());
    // Capacity: 8 + 1 > 8 rows; the staged interval is refused, the transaction cancelled.
    EXPECT_EQ(eng.Decode("r", y3, &other).code(), StatusCode::kOutOfRange);
    EXPECT_EQ(eng.Read("r")->committed_length, 8u);
    EXPECT_EQ(*eng.DeviceVisibleLength("r"), 8);
    // A second request: no free block in the one-request pool (paged) / its own buffer (contig).
    ASSERT_TRUE(eng.NewRequest("s").ok());
    const Status s2 = eng.Prefill("s", p6, 0, &other);
    if (paged) {
      EXPECT_EQ(s2.code(), StatusCode::kOutOfRange) << s2.ToString();
      EXPECT_EQ(eng.Read("s")->committed_length, 0u);
      EXPECT_EQ(*eng.DeviceVisibleLength("s"), 0);
    } else {
      EXPECT_TRUE(s2.ok()) << s2.ToString();
      EXPECT_EQ(other, logits);  // same prompt, same logits
    }
    // The decode logits equal a fresh engine's prefill of the same sequence (bit-identical in
    // deterministic mode).
    auto fresh = CudaEngine::Create(**gpu, CudaEngineOptions{});
    ASSERT_TRUE(fresh.ok());
    std::vector<int64_t> seq = p6;
    seq.insert(seq.end(), {y, y2});
    std::vector<float> ref;
    ASSERT_TRUE((*fresh)->NewRequest("f").ok());
    ASSERT_TRUE((*fresh)->Prefill("f", seq, 0, &ref).ok());
    EXPECT_EQ(ref, l8) << (paged ? "paged" : "contiguous");
    // Release needs FINISHED or CANCELLED; a released paged request returns its blocks, after
    // which the second request fits.
    EXPECT_FALSE(eng.Release("r").ok());
    ASSERT_TRUE(eng.Cancel("r").ok());
    ASSERT_TRUE(eng.Release("r").ok());
    if (paged) {
      ASSERT_TRUE(eng.Prefill("s", p6, 0, &other).ok());
      EXPECT_EQ(other, logits);
      EXPECT_EQ(*eng.DeviceVisibleLength("s"), 6);
    }
  }
}

}  // namespace
}  // namespace kvc::kernels
