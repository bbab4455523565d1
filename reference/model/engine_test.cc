// The reference engine end to end: parity pairs on every bundled shape, the seed's two-layer
// decode trace, the output/cache frontier, lifecycle operations on real rows, checkpoint errors.
#include "reference/model/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "reference/handoff/decode_directory.h"
#include "reference/model/generator.h"
#include "reference/model/hf_logits.h"
#include "reference/model/parity.h"
#include "reference/testutil/testutil.h"

namespace kvc::model {
namespace {

using test::TempDir;

namespace fs = std::filesystem;

const char* const kShapes[] = {"mha", "gqa2", "gqa4", "mqa", "tied", "headdim", "bf16", "llama3"};

const LlamaModel& Fixture(const std::string& name) {
  static std::map<std::string, std::unique_ptr<LlamaModel>> cache;
  auto& m = cache[name];
  if (!m) {
    auto loaded = LlamaModel::Load(test::SourcePath("fixtures/models/" + name));
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    m = std::make_unique<LlamaModel>(std::move(loaded).value());
  }
  return *m;
}

std::vector<int64_t> Prompt(size_t n, int64_t vocab, int64_t salt = 0) {
  std::vector<int64_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>((i * 37 + 11 + salt) % vocab);
  return p;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class ParityOnShape : public ::testing::TestWithParam<const char*> {};

// Cache vs no-cache, chunked prefill (1, 3, 16, 64, 127 vs full), paged vs contiguous,
// fork-then-continue and fork-diverge vs fresh: memcmp-identical logits; fast within 1e-3.
TEST_P(ParityOnShape, EveryPairPasses) {
  const LlamaModel& m = Fixture(GetParam());
  auto res = RunParity(m, Prompt(130, m.config().vocab_size), 4, ComputeMode::kDeterministic);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->size(), 13u);
  for (const auto& r : *res) {
    EXPECT_FALSE(r.skipped) << r.name;
    EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
    if (r.tolerance == 0) {
      EXPECT_TRUE(r.bit_identical) << r.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, ParityOnShape, ::testing::ValuesIn(kShapes));

// Regression (probe 35): with a prompt one short of max_position_embeddings, fork_diverge (which
// decodes two positions past the prompt) and batched_vs_alone (a companion of P + 2 tokens)
// cannot run; they failed ("argmax DIFF", max_abs inf). They are skipped with the reason.
TEST(ParityLimits, RegressionPairsThatCannotFitTheContextAreSkipped) {
  const LlamaModel& m = Fixture(kShapes[0]);
  const uint64_t max_pos = m.config().max_position_embeddings;
  auto res =
      RunParity(m, Prompt(max_pos - 1, m.config().vocab_size), 2, ComputeMode::kDeterministic);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (const auto& r : *res) {
    const bool cannot_fit = r.name == "fork_diverge_vs_fresh" || r.name == "batched_vs_alone";
    EXPECT_EQ(r.skipped, cannot_fit) << r.name;  // (every chunk size is below 255 tokens)
    EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
    if (cannot_fit) {
      EXPECT_NE(r.detail.find("max_position_embeddings"), std::string::npos) << r.detail;
    }
  }
}

// Regression (probe 71): with one new token, cache_vs_nocache and fork_then_continue_vs_fresh
// passed having compared two prefills (no decode step reads the cache): skipped now, with the
// reason; every pair reports the steps it compared. In fast mode fast_vs_deterministic is listed
// as skipped (it was dropped without a line).
TEST(ParityLimits, RegressionPairsThatWouldCompareNothingAreSkipped) {
  const LlamaModel& m = Fixture(kShapes[0]);
  auto res = RunParity(m, Prompt(19, m.config().vocab_size), 1, ComputeMode::kFast);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  ASSERT_EQ(res->size(), 13u);
  for (const auto& r : *res) {
    const bool no_decode = r.name == "cache_vs_nocache" || r.name == "fork_then_continue_vs_fresh";
    const bool chunk_too_big = r.name == "chunked_prefill_c64" || r.name == "chunked_prefill_c127";
    const bool fast = r.name == "fast_vs_deterministic";
    EXPECT_EQ(r.skipped, no_decode || chunk_too_big || fast) << r.name;
    EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
    // fork_diverge_vs_fresh compares a step of the child and one of the parent.
    const uint64_t compared = r.name == "fork_diverge_vs_fresh" ? 2u : 1u;
    EXPECT_EQ(r.steps, r.skipped ? 0u : compared) << r.name;
    if (no_decode) {
      EXPECT_NE(r.detail.find("no decode step reads the cache"), std::string::npos);
    }
    if (fast) {
      EXPECT_NE(r.detail.find("--mode fast"), std::string::npos) << r.detail;
    }
  }
}

// Regression (probe 71): the fast tolerance was an absolute 1e-3, so a checkpoint whose logits
// reach 3,000 failed every fast pair at a relative difference of 5e-7 (float32 rounding). It is
// kFastTolerance x max(1, max |baseline logit|) now; bit-identity (tolerance 0) is unchanged.
TEST(CompareStepsTest, RegressionTheFastToleranceScalesWithTheLogits) {
  GreedyRun base;
  base.tokens = {0};
  base.logits = {{3000.0f, -2000.0f, 1.0f}};
  auto cand = base.logits;
  cand[0][1] += 0.0015f;  // ~1.5e-3 off (float32 spacing near 2,000 is 1.2e-4)
  cand[0][0] -= 0.25f;    // 2.5e-1 off: within 1e-3 x 3,000 = 3
  PairResult r = CompareSteps("p", base, cand, {0}, kFastTolerance);
  EXPECT_TRUE(r.passed) << r.detail;
  EXPECT_DOUBLE_EQ(r.tolerance, 3.0);
  EXPECT_EQ(r.steps, 1u);
  cand[0][0] -= 4.0f;  // 4.25 off: beyond 3
  r = CompareSteps("p", base, cand, {0}, kFastTolerance);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.detail.find("> tolerance 3"), std::string::npos) << r.detail;
  EXPECT_FALSE(CompareSteps("p", base, cand, {0}, 0).passed);  // bit-identity stays exact
  GreedyRun small;                                             // below 1 the tolerance stays 1e-3
  small.tokens = {1};
  small.logits = {{0.1f, 0.5f}};
  auto near = small.logits;
  near[0][0] += 0.002f;
  EXPECT_FALSE(CompareSteps("p", small, near, {1}, kFastTolerance).passed);
}

class ModelHfParity : public ::testing::TestWithParam<const char*> {};

// Transformers v4.57.0 logits recorded by tools/record_hf_logits.py: max |diff| <= 1e-4.
TEST_P(ModelHfParity, MatchesRecordedTransformersLogits) {
  const std::string path =
      test::SourcePath(std::string("fixtures/models/") + GetParam() + "/hf_logits.json");
  auto cmp = CompareWithHfLogits(Fixture(GetParam()), path);
  ASSERT_TRUE(cmp.ok()) << cmp.status().ToString();
  EXPECT_TRUE(cmp->tokens_agree);
  EXPECT_LE(cmp->max_abs, 1e-4);
  EXPECT_EQ(cmp->tolerance, 1e-4);
  EXPECT_TRUE(cmp->passed) << cmp->detail;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ModelHfParity, ::testing::ValuesIn(kShapes));

TEST(ModelHfParityCheck, DetectsAPerturbedLogit) {
  TempDir t;
  Json j = test::LoadJson("fixtures/models/gqa2/hf_logits.json");
  j["logits"][1][3] = j["logits"][1][3].get<double>() + 2e-4;
  std::ofstream(t / "hf.json") << j.dump();
  auto cmp = CompareWithHfLogits(Fixture("gqa2"), t / "hf.json");
  ASSERT_TRUE(cmp.ok()) << cmp.status().ToString();
  EXPECT_FALSE(cmp->passed);
  EXPECT_GE(cmp->max_abs, 1.9e-4);
}

// A kind of another JSON type is the file's error, not an exception: value("kind", "") threw on
// a number there, and the CLI reported "internal error" (exit 3; type sweep, 2026-12-07).
TEST(ModelHfParityCheck, RegressionAKindThatIsNotAStringIsTheFilesError) {
  TempDir t;
  for (Json kind : {Json(5), Json(nullptr), Json::array(), Json::object()}) {
    Json j = test::LoadJson("fixtures/models/gqa2/hf_logits.json");
    j["kind"] = kind;
    std::ofstream(t / "hf.json") << j.dump();
    auto cmp = CompareWithHfLogits(Fixture("gqa2"), t / "hf.json");
    ASSERT_FALSE(cmp.ok()) << kind.dump();
    EXPECT_NE(std::string(cmp.status().message()).find("field 'kind': expected"), std::string::npos)
        << cmp.status().ToString();
  }
}

// M5.1 0x01 "Worked Two-Layer Decode Trace": B=1, L=2, d=16, H_q=4, H_kv=2, d_h=4, T_past=4,
// T_new=1. Inside each layer the current call sees 5 rows while the snapshot stays at 4; the
// pending payload is 32 bytes per layer at fp16 K/V and 64 bytes for both layers; H_q=8
// leaves it at 64. After publication the next-call snapshot is 5.
TEST(EngineTrace, WorkedTwoLayerDecodeTrace) {
  for (uint64_t hq : {4, 8}) {
    TempDir t;
    LlamaConfig c;
    c.vocab_size = 32;
    c.hidden_size = 16;
    c.intermediate_size = 32;
    c.num_hidden_layers = 2;
    c.num_attention_heads = hq;
    c.num_key_value_heads = 2;
    c.head_dim = 4;
    c.max_position_embeddings = 64;
    ASSERT_TRUE(GenerateModelFromConfig(t.str(), c, DType::kF32, 3).ok());
    auto m = LlamaModel::Load(t.str());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    Engine e(*m, {});
    ASSERT_TRUE(e.NewRequest("r").ok());
    std::vector<float> logits;
    ASSERT_TRUE(e.Prefill("r", Prompt(4, 32), 0, &logits).ok());
    const uint64_t fp16_bytes = 2;
    uint64_t pending_bytes = 0;
    std::vector<uint64_t> layers_seen;
    e.set_layer_observer([&](const std::string& h, uint64_t layer, const KvStorage& s) -> Status {
      auto snap = e.Read(h);
      EXPECT_EQ(snap->committed_length, 4u);                   // next-call snapshot
      EXPECT_EQ(s.committed_length() + s.staged_count(), 5u);  // current-call view
      const uint64_t rows = s.staged_count();                  // T_new
      pending_bytes += 1 /*B*/ * rows * s.shape().row * (fp16_bytes + fp16_bytes);
      layers_seen.push_back(layer);
      return Status::Ok();
    });
    ASSERT_TRUE(e.Emit("r", Argmax(logits)).ok());
    ASSERT_TRUE(e.Decode("r", Argmax(logits), &logits).ok());
    EXPECT_EQ(layers_seen, (std::vector<uint64_t>{0, 1}));
    EXPECT_EQ(pending_bytes, 64u) << "H_q=" << hq;
    EXPECT_EQ(pending_bytes / 2, 32u);
    EXPECT_EQ(e.Read("r")->committed_length, 5u);
    EXPECT_EQ(e.Read("r")->generation, 2u);  // two publications: prefill, decode
  }
}

// A failure after layer 0 staged: no publication, snapshot and storage unchanged; the retry
// produces the same logits as an undisturbed run.
TEST(EngineTrace, MidCallFailurePublishesNothing) {
  const LlamaModel& m = Fixture("gqa2");
  Engine e(m, {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits, retry;
  ASSERT_TRUE(e.Prefill("r", Prompt(6, 96), 0, &logits).ok());
  const auto before = *e.Read("r");
  e.set_layer_observer([](const std::string&, uint64_t layer, const KvStorage&) -> Status {
    return layer == 0 ? Unavailable("injected worker loss after layer 0") : Status::Ok();
  });
  const int64_t tok[1] = {5};
  EXPECT_FALSE(e.Append("r", tok, false, &retry).ok());
  EXPECT_EQ(*e.Read("r"), before);
  EXPECT_EQ(e.storage("r")->committed_length(), 6u);
  EXPECT_EQ(e.storage("r")->staged_count(), 0u);
  e.set_layer_observer(nullptr);
  ASSERT_TRUE(e.Append("r", tok, false, &retry).ok());
  Engine f(m, {});
  ASSERT_TRUE(f.NewRequest("r").ok());
  auto p = Prompt(6, 96);
  p.push_back(5);
  ASSERT_TRUE(f.Prefill("r", p, 0, &logits).ok());
  EXPECT_TRUE(SameBits(logits, retry));
}

// A batched call is one forward pass with one transaction per request: a failure in any
// segment before publication cancels every transaction of the batch.
TEST(EngineTrace, BatchFailureCancelsEveryTransaction) {
  const LlamaModel& m = Fixture("gqa2");
  Engine e(m, {});
  ASSERT_TRUE(e.NewRequest("a").ok());
  ASSERT_TRUE(e.NewRequest("b").ok());
  std::vector<float> la, lb;
  const auto pa = Prompt(5, 96), pb = Prompt(3, 96, 1);
  const Engine::AppendItem dup[2] = {{"a", pa, false, &la}, {"a", pb, false, &lb}};
  EXPECT_EQ(e.AppendBatch(dup).code(), StatusCode::kInvalidArgument);
  e.set_layer_observer([](const std::string& h, uint64_t layer, const KvStorage&) -> Status {
    return h == "b" && layer == 1 ? Unavailable("injected failure in segment b") : Status::Ok();
  });
  const Engine::AppendItem batch[2] = {{"a", pa, false, &la}, {"b", pb, false, &lb}};
  EXPECT_EQ(e.AppendBatch(batch).code(), StatusCode::kUnavailable);
  for (const char* h : {"a", "b"}) {
    EXPECT_EQ(e.Read(h)->committed_length, 0u);
    EXPECT_EQ(e.Read(h)->generation, 0u);
    EXPECT_EQ(e.storage(h)->staged_count(), 0u);
  }
  e.set_layer_observer(nullptr);
  ASSERT_TRUE(e.AppendBatch(batch).ok());
  EXPECT_EQ(e.Read("a")->committed_length, 5u);
  EXPECT_EQ(e.Read("b")->committed_length, 3u);
  std::vector<float> alone;
  Engine f(m, {});
  ASSERT_TRUE(f.NewRequest("b").ok());
  ASSERT_TRUE(f.Prefill("b", pb, 0, &alone).ok());
  EXPECT_TRUE(SameBits(lb, alone));
}

// M5.1 0x03 P=4, G=3 ordinary stop trace and the explicit final-token repair.
TEST(EngineFrontier, OrdinaryStopTraceAndRepair) {
  const LlamaModel& m = Fixture("gqa2");
  EngineOptions o;
  auto run = RunGreedy(m, Prompt(4, 96), 3, o);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->tokens.size(), 3u);
  EXPECT_EQ(run->committed_length, 6u);  // P + E - 1: y2 emitted, not committed

  Engine e(m, o);
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  EXPECT_EQ(e.Emit("r", 1).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);  // no logits yet
  ASSERT_TRUE(e.Prefill("r", Prompt(4, 96), 0, &logits).ok());
  EXPECT_EQ(e.Read("r")->committed_length, 4u);
  const int64_t y0 = Argmax(logits);
  ASSERT_TRUE(e.Emit("r", y0).ok());
  EXPECT_EQ(e.Emit("r", 1).error(), ErrorCode::FRONTIER_OUTPUT_BEFORE_LOGITS);  // y0 unprocessed
  EXPECT_EQ(e.Decode("r", y0 + 1, &logits).error(), ErrorCode::FRONTIER_TOKEN_MISMATCH);
  EXPECT_EQ(e.Read("r")->committed_length, 4u);
  ASSERT_TRUE(e.Decode("r", y0, &logits).ok());
  EXPECT_EQ(e.Read("r")->committed_length, 5u);
  const int64_t y1 = Argmax(logits);
  ASSERT_TRUE(e.Emit("r", y1).ok());
  ASSERT_TRUE(e.Decode("r", y1, &logits).ok());
  const int64_t y2 = Argmax(logits);
  ASSERT_TRUE(e.Emit("r", y2).ok());
  EXPECT_EQ(e.Read("r")->committed_length, 6u);
  EXPECT_EQ(e.frontier("r"), y2);
  EXPECT_EQ(e.frontier_state("r")->emitted(), 3u);    // O
  EXPECT_EQ(e.frontier_state("r")->processed(), 2u);  // G_in
  EXPECT_EQ(e.frontier_state("r")->committed(), 6u);  // K_c = P + G_in
  ASSERT_TRUE(e.RepairFrontier("r").ok());            // real model work; logits discarded
  EXPECT_EQ(e.Read("r")->committed_length, 7u);
  EXPECT_FALSE(e.frontier("r").has_value());
  EXPECT_EQ(e.RepairFrontier("r").error(), ErrorCode::FRONTIER_NOTHING_TO_REPAIR);
  // The repaired cache holds y2's true row: continuing equals a fresh 8-token prefill.
  const int64_t z[1] = {9};
  std::vector<float> cont, fresh;
  ASSERT_TRUE(e.Append("r", z, false, &cont).ok());
  Engine f(m, o);
  ASSERT_TRUE(f.NewRequest("r").ok());
  auto all = Prompt(4, 96);
  all.insert(all.end(), {y0, y1, y2, 9});
  ASSERT_TRUE(f.Prefill("r", all, 0, &fresh).ok());
  EXPECT_TRUE(SameBits(cont, fresh));
}

TEST(EngineLifecycle, TruncateForkReleaseOnRealRows) {
  const LlamaModel& m = Fixture("gqa4");
  EngineOptions o;
  o.paged = true;
  o.block_size = 4;
  Engine e(m, o);
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits, cont, fresh;
  const auto p = Prompt(10, 96);
  ASSERT_TRUE(e.Prefill("r", p, 3, &logits).ok());
  // Truncate to 7, then continue: equals a fresh run of p[0:7] + token.
  ASSERT_TRUE(e.Truncate("r", 7).ok());
  EXPECT_EQ(e.Truncate("r", 8).error(), ErrorCode::LIFECYCLE_TRUNCATE_GROWTH);
  const int64_t z[1] = {42};
  ASSERT_TRUE(e.Append("r", z, false, &cont).ok());
  Engine f(m, {});
  ASSERT_TRUE(f.NewRequest("x").ok());
  std::vector<int64_t> q(p.begin(), p.begin() + 7);
  q.push_back(42);
  ASSERT_TRUE(f.Prefill("x", q, 0, &fresh).ok());
  EXPECT_TRUE(SameBits(cont, fresh));
  // Fork: children share the parent's blocks.
  EXPECT_EQ(e.Fork("r", 9, {"c"}).error(), ErrorCode::LIFECYCLE_FORK_BEYOND_PREFIX);
  ASSERT_TRUE(e.Fork("r", 8, {"c1", "c2"}).ok());
  EXPECT_EQ(SharedBlockCount(*e.storage("c1")), 2u);
  EXPECT_EQ(e.Read("c1")->committed_length, 8u);
  EXPECT_EQ(e.Read("c1")->generation, 0u);
  // Release: only from FINISHED or CANCELLED; afterwards the handle takes no appends.
  EXPECT_EQ(e.Release("c2").error(), ErrorCode::LIFECYCLE_RELEASE_LIVE);
  ASSERT_TRUE(e.Finish("c2").ok());
  ASSERT_TRUE(e.Release("c2").ok());
  EXPECT_TRUE(e.storage("c2")->released());
  EXPECT_EQ(e.Append("c2", z, false, &cont).error(), ErrorCode::LIFECYCLE_HANDLE_RELEASED);
  EXPECT_EQ(SharedBlockCount(*e.storage("c1")), 2u);  // still shared with r
  // Cancel: no further appends, then release frees the rows.
  ASSERT_TRUE(e.Fork("r", 8, {"c3"}).ok());
  ASSERT_TRUE(e.Cancel("c3").ok());
  EXPECT_EQ(e.Append("c3", z, false, &cont).error(), ErrorCode::LIFECYCLE_HANDLE_TERMINAL);
  ASSERT_TRUE(e.Release("c3").ok());
  EXPECT_EQ(e.storage("c3")->ResidentBytes(), 0u);
  ASSERT_TRUE(e.Append("c1", z, false, &cont).ok());
  q.push_back(42);
  ASSERT_TRUE(f.NewRequest("y").ok());
  ASSERT_TRUE(f.Prefill("y", q, 0, &fresh).ok());
  EXPECT_TRUE(SameBits(cont, fresh));
}

// Greedy decode of `steps` tokens after prefill logits `first`, each step's logits appended.
std::vector<std::vector<float>> GreedyFrom(Engine& e, const std::string& h,
                                           std::vector<float> logits, int steps) {
  std::vector<std::vector<float>> out{logits};
  for (int i = 0; i < steps; ++i) {
    const int64_t y = Argmax(logits);
    EXPECT_TRUE(e.Emit(h, y).ok());
    Status s = e.Decode(h, y, &logits);
    EXPECT_TRUE(s.ok()) << s.ToString();
    out.push_back(logits);
  }
  return out;
}

// Rows of the colocated storage `s`, recording which positions were asked for.
Engine::ImportRows RowsOf(const KvStorage& s, std::vector<uint64_t>* asked) {
  return [&s, asked](uint64_t l, uint64_t pos, const float** k, const float** v) -> Status {
    if (l == 0) asked->push_back(pos);
    *k = s.KeyRow(l, pos);
    *v = s.ValueRow(l, pos);
    return Status::Ok();
  };
}

// Decode admitted from a decode directory's published handle (cold and warm destination):
// the engine's handle equals the published snapshot, decode steps are appends on it, and the
// per-step logits equal a colocated run bit for bit.
TEST(EngineAdoptPublished, DecodesFromThePublishedHandle) {
  const LlamaModel& m = Fixture("gqa2");
  const lifecycle::CacheAbi abi{EngineCacheAbiId(m.config()),
                                static_cast<uint32_t>(m.config().num_hidden_layers), "post_rope"};
  const uint64_t layers = abi.num_layers, t = 9, warm = 4;
  const auto p = Prompt(t, 96, 5);
  Engine colo(m, {});
  ASSERT_TRUE(colo.NewRequest("r").ok());
  std::vector<float> logits;
  ASSERT_TRUE(colo.Prefill("r", p, 0, &logits).ok());
  // Source rows are read before the colocated decode appends more.
  Engine src(m, {});
  ASSERT_TRUE(src.NewRequest("r").ok());
  std::vector<float> src_logits;
  ASSERT_TRUE(src.Prefill("r", p, 0, &src_logits).ok());
  const auto want = GreedyFrom(colo, "r", logits, 5);

  for (bool warm_dest : {false, true}) {
    SCOPED_TRACE(warm_dest ? "warm" : "cold");
    handoff::DecodeDirectory dir(abi);
    Engine d(m, {});
    ASSERT_TRUE(dir.ReserveGeneration("req", 3).ok());
    uint64_t start = 0;
    if (warm_dest) {
      // D computed V_D = [0, warm) itself (a prefix-cache hit) and publishes it as visible.
      std::vector<float> ignored;
      ASSERT_TRUE(d.NewRequest("pfx").ok());
      ASSERT_TRUE(d.Prefill("pfx", std::span(p).first(warm), 0, &ignored).ok());
      ASSERT_TRUE(dir.PublishVisiblePrefix("pfx", warm).ok());
      ASSERT_TRUE(dir.OpenDestinationOnto("req", 3, "x1", warm, t - warm, "pfx").ok());
      start = warm;
    } else {
      ASSERT_TRUE(dir.OpenDestination("req", 3, "x1", 0, t).ok());
    }
    for (uint64_t l = 0; l < layers; ++l)
      ASSERT_TRUE(dir.StageLayer("x1", l, start, t - start).ok());
    auto pub = dir.PublishIfGenerationCurrent("req", 3, "x1", "digest");
    ASSERT_TRUE(pub.ok()) << pub.status().ToString();
    const lifecycle::Snapshot published = pub->handle.cache_snapshot;

    // A snapshot the directory never published is refused, and leaves no live handle.
    lifecycle::Snapshot forged = published;
    forged.handle_id = forged.handle_id + "-forged";
    forged.digest ^= 1;
    std::vector<uint64_t> asked;
    EXPECT_EQ(
        d.AdoptPublished(forged, RowsOf(*src.storage("r"), &asked), warm_dest ? "pfx" : "").error(),
        ErrorCode::HANDOFF_DECODE_ADMIT_UNPUBLISHED);
    EXPECT_EQ(d.Read(forged.handle_id.str()).status().error(),
              ErrorCode::LIFECYCLE_HANDLE_RELEASED);

    asked.clear();
    Status s =
        d.AdoptPublished(published, RowsOf(*src.storage("r"), &asked), warm_dest ? "pfx" : "");
    ASSERT_TRUE(s.ok()) << s.ToString();
    // Only the transfer set X = U \ V_D was imported.
    std::vector<uint64_t> x;
    for (uint64_t i = start; i < t; ++i) x.push_back(i);
    EXPECT_EQ(asked, x);
    const std::string h = published.handle_id.str();
    EXPECT_EQ(*d.Read(h), published);
    const auto got = GreedyFrom(d, h, src_logits, 5);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(SameBits(got[i], want[i])) << "step " << i;
    // Each decode step was one append on the published handle's generation chain.
    EXPECT_EQ(d.Read(h)->generation, published.generation + 5);
    EXPECT_EQ(d.Read(h)->committed_length, t + 5);
    // Adopting the same handle twice is refused.
    EXPECT_FALSE(d.AdoptPublished(published, RowsOf(*src.storage("r"), &asked)).ok());
  }
}

TEST(EngineLifecycle, ReorderMovesCoupledRows) {
  const LlamaModel& m = Fixture("mqa");
  Engine e(m, {});
  std::vector<lifecycle::LiveSequenceRow> rows;
  std::vector<std::vector<float>> next(3);
  for (int i = 0; i < 3; ++i) {
    const std::string h = "beam" + std::to_string(i);
    ASSERT_TRUE(e.NewRequest(h).ok());
    std::vector<float> l;
    ASSERT_TRUE(e.Prefill(h, Prompt(5 + i, 96, i), 0, &l).ok());
    rows.push_back({"tokens" + std::to_string(i), h, 5u + i, "sampler" + std::to_string(i)});
  }
  auto after = e.Reorder(rows, {2, 0, 1});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ((*after)[0].cache_handle, "beam2");
  EXPECT_EQ((*after)[0].next_position, 7u);
  EXPECT_EQ(e.Reorder(rows, {0, 0, 1}).status().error(),
            ErrorCode::LIFECYCLE_REORDER_NOT_BIJECTIVE);
  auto bad = rows;
  bad[1].next_position = 9;  // the row's position no longer matches its handle's K/V
  EXPECT_FALSE(e.Reorder(bad, {2, 0, 1}).ok());
}

TEST(EngineInputs, TokenAndPositionErrorsOpenNoTransaction) {
  const LlamaModel& m = Fixture("gqa2");
  Engine e(m, {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  const int64_t bad[2] = {3, 96};
  Status s = e.Append("r", bad, false, &logits);
  EXPECT_EQ(s.error(), ErrorCode::MODEL_TOKEN_OUT_OF_RANGE);
  EXPECT_NE(s.message().find("ids[1] = 96"), std::string::npos) << s.message();
  const int64_t neg[1] = {-1};
  EXPECT_EQ(e.Append("r", neg, false, &logits).error(), ErrorCode::MODEL_TOKEN_OUT_OF_RANGE);
  EXPECT_EQ(e.Prefill("r", Prompt(257, 96), 0, &logits).error(),
            ErrorCode::MODEL_POSITION_OUT_OF_RANGE);
  EXPECT_EQ(e.Read("r")->generation, 0u);
  EXPECT_EQ(e.kv_object().txn_count(), 0u);
}

// A tensor the Llama forward pass does not apply, in a layer the config runs or as a bias,
// would be ignored and another model computed: Qwen2's q/k/v biases under a config labelled
// llama loaded and generated (it was only noted, like the layers past num_hidden_layers, which
// still are). Derived RoPE buffers stay notes.
TEST(EngineCheckpoint, RegressionABiasTheEngineWouldIgnoreIsRefused) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "one", "gqa2", 7).ok());
  auto one = SafetensorsFile::Open(t / "one/model.safetensors");
  ASSERT_TRUE(one.ok());
  auto with_extra = [&](const std::string& dir, const std::string& name) {
    std::vector<TensorToWrite> all;
    for (const auto& [n, tv] : one->tensors())
      all.push_back({n, tv.dtype, tv.shape, std::vector<std::byte>(tv.data, tv.data + tv.nbytes)});
    all.push_back({name, DType::kF32, {4}, std::vector<std::byte>(16)});
    const std::string d = t / dir;
    fs::create_directories(d);
    fs::copy_file(t / "one/config.json", d + "/config.json");
    std::ofstream(d + "/model.safetensors", std::ios::binary) << SerializeSafetensors(all);
    return LlamaModel::Load(d);
  };
  for (const char* name :
       {"model.layers.0.self_attn.q_proj.bias", "model.layers.1.mlp.up_proj.bias",
        "model.layers.0.self_attn.q_proj.weight_scale", "model.norm.bias"}) {
    auto m =
        with_extra(std::string("x") + std::to_string(std::hash<std::string>{}(name) % 1000), name);
    ASSERT_FALSE(m.ok()) << name;
    EXPECT_EQ(m.status().error(), ErrorCode::MODEL_TENSOR_UNEXPECTED) << name;
    EXPECT_NE(m.status().message().find(name), std::string::npos) << m.status().message();
  }
  for (const char* name :
       {"model.layers.0.self_attn.rotary_emb.inv_freq", "model.layers.2.self_attn.q_proj.bias",
        "model.layers.10.mlp.bias", "model.rotary_emb.position_ids"}) {
    auto m =
        with_extra(std::string("y") + std::to_string(std::hash<std::string>{}(name) % 1000), name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    ASSERT_EQ(m->unused_tensors().size(), 1u);
    EXPECT_EQ(m->unused_tensors()[0], name);
  }
}

// Which unused tensor names change the configured (two-layer) model: a derived RoPE buffer is a
// note wherever it lies, a layer index is read whole (a huge one is past the configured layers,
// not wrapped into them), and a name under model.layers. without a layer index is refused.
TEST(EngineCheckpoint, AnUnusedTensorsLayerIndexIsReadWholeAndRopeBuffersAreNotes) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "one", "gqa2", 7).ok());
  auto one = SafetensorsFile::Open(t / "one/model.safetensors");
  ASSERT_TRUE(one.ok());
  int dirs = 0;
  auto with_extra = [&](const std::string& name) {
    std::vector<TensorToWrite> all;
    for (const auto& [n, tv] : one->tensors())
      all.push_back({n, tv.dtype, tv.shape, std::vector<std::byte>(tv.data, tv.data + tv.nbytes)});
    all.push_back({name, DType::kF32, {4}, std::vector<std::byte>(16)});
    const std::string d = t / ("z" + std::to_string(dirs++));
    fs::create_directories(d);
    fs::copy_file(t / "one/config.json", d + "/config.json");
    std::ofstream(d + "/model.safetensors", std::ios::binary) << SerializeSafetensors(all);
    return LlamaModel::Load(d);
  };
  for (const char* name : {"model.layers.1.self_attn.rotary_emb.position_ids",
                           "model.layers.18446744073709551617.mlp.bias",
                           "model.layers.99999999999999999999999.self_attn.q_proj.bias"}) {
    auto m = with_extra(name);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status().ToString();
    ASSERT_EQ(m->unused_tensors().size(), 1u);
    EXPECT_EQ(m->unused_tensors()[0], name);
  }
  for (const char* name : {"model.layers.bias", "model.layers.", "model.layers.x.mlp.bias"}) {
    auto m = with_extra(name);
    ASSERT_FALSE(m.ok()) << name;
    EXPECT_EQ(m.status().error(), ErrorCode::MODEL_TENSOR_UNEXPECTED) << name;
  }
}

// Checkpoint directories: sharded index, missing tensor, shape mismatch, bad index, bad config.
TEST(EngineCheckpoint, ShardedAndMalformedDirectories) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "one", "gqa2", 7).ok());
  auto one = SafetensorsFile::Open(t / "one/model.safetensors");
  ASSERT_TRUE(one.ok());
  // Split into two shards plus an index.
  std::vector<TensorToWrite> a, b;
  Json wm = Json::object();
  int i = 0;
  for (const auto& [name, tv] : one->tensors()) {
    TensorToWrite w{name, tv.dtype, tv.shape, std::vector<std::byte>(tv.data, tv.data + tv.nbytes)};
    const bool first = (i++ % 2) == 0;
    (first ? a : b).push_back(std::move(w));
    wm[name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  fs::create_directories(t / "sharded");
  fs::copy_file(t / "one/config.json", t / "sharded/config.json");
  std::ofstream(t / "sharded/model-00001-of-00002.safetensors", std::ios::binary)
      << SerializeSafetensors(a);
  std::ofstream(t / "sharded/model-00002-of-00002.safetensors", std::ios::binary)
      << SerializeSafetensors(b);
  std::ofstream(t / "sharded/model.safetensors.index.json")
      << Json{{"metadata", Json::object()}, {"weight_map", wm}}.dump();
  auto ms = LlamaModel::Load(t / "sharded");
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  auto r1 = RunGreedy(Fixture("gqa2"), Prompt(8, 96), 2, {});
  auto r2 = RunGreedy(*ms, Prompt(8, 96), 2, {});
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_TRUE(SameBits(r1->logits[1], r2->logits[1]));

  // The index names a shard that lacks the tensor.
  Json wrong = wm;
  wrong["model.norm.weight"] = wm["model.norm.weight"] == "model-00001-of-00002.safetensors"
                                   ? "model-00002-of-00002.safetensors"
                                   : "model-00001-of-00002.safetensors";
  std::ofstream(t / "sharded/model.safetensors.index.json") << Json{{"weight_map", wrong}}.dump();
  EXPECT_EQ(LlamaModel::Load(t / "sharded").status().error(), ErrorCode::MODEL_SHARD_INDEX_INVALID);
  Json escape = wm;
  escape["model.norm.weight"] = "../one/model.safetensors";
  std::ofstream(t / "sharded/model.safetensors.index.json") << Json{{"weight_map", escape}}.dump();
  EXPECT_EQ(LlamaModel::Load(t / "sharded").status().error(), ErrorCode::MODEL_SHARD_INDEX_INVALID);
  std::ofstream(t / "sharded/model.safetensors.index.json") << "{\"weight_map\": 3}";
  EXPECT_EQ(LlamaModel::Load(t / "sharded").status().error(), ErrorCode::MODEL_SHARD_INDEX_INVALID);
  // A model.safetensors beside an index is what Transformers loads (probe 46: the index won):
  // here the index is broken and the single file holds other weights (seed 8).
  ASSERT_TRUE(GenerateModel(t / "eight", "gqa2", 8).ok());
  fs::copy_file(t / "eight/model.safetensors", t / "sharded/model.safetensors");
  auto both = LlamaModel::Load(t / "sharded");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  auto eight = LlamaModel::Load(t / "eight");
  ASSERT_TRUE(eight.ok());
  auto r8 = RunGreedy(*eight, Prompt(8, 96), 2, {});
  auto rb = RunGreedy(*both, Prompt(8, 96), 2, {});
  ASSERT_TRUE(r8.ok() && rb.ok());
  EXPECT_TRUE(SameBits(r8->logits[1], rb->logits[1]));
  fs::remove(t / "sharded/model.safetensors");

  // Missing tensor: drop lm_head from an untied model.
  std::vector<TensorToWrite> all;
  for (const auto& [name, tv] : one->tensors())
    if (name != "lm_head.weight")
      all.push_back(
          {name, tv.dtype, tv.shape, std::vector<std::byte>(tv.data, tv.data + tv.nbytes)});
  fs::create_directories(t / "missing");
  fs::copy_file(t / "one/config.json", t / "missing/config.json");
  std::ofstream(t / "missing/model.safetensors", std::ios::binary) << SerializeSafetensors(all);
  Status s = LlamaModel::Load(t / "missing").status();
  EXPECT_EQ(s.error(), ErrorCode::MODEL_TENSOR_MISSING);
  EXPECT_NE(s.message().find("lm_head.weight"), std::string::npos);

  // Shape mismatch: config says intermediate_size 65.
  fs::create_directories(t / "shape");
  fs::copy_file(t / "one/model.safetensors", t / "shape/model.safetensors");
  Json cfg = test::LoadJson("fixtures/models/gqa2/config.json");
  cfg["intermediate_size"] = 65;
  std::ofstream(t / "shape/config.json") << cfg.dump();
  s = LlamaModel::Load(t / "shape").status();
  EXPECT_EQ(s.error(), ErrorCode::MODEL_TENSOR_SHAPE_MISMATCH);
  EXPECT_NE(s.message().find("model.layers.0.mlp.gate_proj.weight"), std::string::npos)
      << s.message();

  // Truncated safetensors file.
  fs::create_directories(t / "trunc");
  fs::copy_file(t / "one/config.json", t / "trunc/config.json");
  fs::copy_file(t / "one/model.safetensors", t / "trunc/model.safetensors");
  fs::resize_file(t / "trunc/model.safetensors", fs::file_size(t / "trunc/model.safetensors") - 3);
  EXPECT_EQ(LlamaModel::Load(t / "trunc").status().error(),
            ErrorCode::MODEL_SAFETENSORS_SIZE_MISMATCH);

  // Malformed config.json.
  std::ofstream(t / "shape/config.json") << "{\"vocab_size\": 96,";
  EXPECT_EQ(LlamaModel::Load(t / "shape").status().error(), ErrorCode::MODEL_CONFIG_INVALID);
  EXPECT_EQ(LlamaModel::Load(t / "nope").status().code(), StatusCode::kIoError);

  // Regressions (probe 35). 2^24 declared layers beside a two-layer checkpoint: the first missing
  // tensor, not an out-of-memory listing 150 million names.
  fs::create_directories(t / "deep");
  fs::copy_file(t / "one/model.safetensors", t / "deep/model.safetensors");
  cfg = test::LoadJson("fixtures/models/gqa2/config.json");
  cfg["num_hidden_layers"] = 1 << 24;
  std::ofstream(t / "deep/config.json") << cfg.dump();
  s = LlamaModel::Load(t / "deep").status();
  EXPECT_EQ(s.error(), ErrorCode::MODEL_TENSOR_MISSING);
  EXPECT_NE(s.message().find("model.layers.2."), std::string::npos) << s.message();
  // A NaN in the weights: refused at load, not argmax of NaN logits (token 0, exit 0).
  fs::create_directories(t / "nan");
  fs::copy_file(t / "one/config.json", t / "nan/config.json");
  fs::copy_file(t / "one/model.safetensors", t / "nan/model.safetensors");
  {
    std::fstream f(t / "nan/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    uint64_t header = 0;
    f.read(reinterpret_cast<char*>(&header), 8);
    f.seekp(static_cast<std::streamoff>(8 + header));
    const unsigned char nan_bytes[4] = {0x00, 0x00, 0xC0, 0x7F};  // f32 NaN; bf16/f16 NaN too
    f.write(reinterpret_cast<const char*>(nan_bytes), 4);
  }
  EXPECT_EQ(LlamaModel::Load(t / "nan").status().error(), ErrorCode::MODEL_TENSOR_NONFINITE);
  // A paged block larger than the context: refused, not a null write (2^64-1 segfaulted).
  auto m = LlamaModel::Load(t / "one");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EngineOptions paged;
  paged.paged = true;
  paged.block_size = UINT64_MAX;
  EXPECT_EQ(RunGreedy(*m, {1, 2, 3}, 2, paged).status().code(), StatusCode::kInvalidArgument);
}

TEST(EngineGenerator, SameSeedSameBytes) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "a", "gqa2", 7).ok());
  auto a = ReadFileToString(t / "a/model.safetensors");
  auto fixture = ReadFileToString(test::SourcePath("fixtures/models/gqa2/model.safetensors"));
  ASSERT_TRUE(a.ok() && fixture.ok());
  EXPECT_EQ(*a, *fixture);  // the bundled fixture is exactly what the README command writes
  ASSERT_TRUE(GenerateModel(t / "b", "gqa2", 8).ok());
  EXPECT_NE(*a, *ReadFileToString(t / "b/model.safetensors"));
  DType d;
  EXPECT_FALSE(GeneratorShape("nope", &d).ok());
}

// Greedy selection takes the first of equal largest logits.
TEST(EngineGreedy, ArgmaxTakesTheFirstOfTiedLogits) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 2.0f};
  EXPECT_EQ(Argmax(logits), 1);
  EXPECT_EQ(*GreedyToken(logits, 0), 1);
}

// No token is selected from logits holding an infinity (of either sign), not only from NaN.
TEST(EngineGreedy, InfiniteLogitsAreNonFinite) {
  for (float bad : {INFINITY, -INFINITY}) {
    const std::vector<float> logits = {0.5f, bad, 0.25f};
    EXPECT_EQ(GreedyToken(logits, 3).status().error(), ErrorCode::MODEL_LOGITS_NONFINITE);
  }
}

// The engine's cache ABI id names the KV head count (H_kv), not the query head count.
TEST(EngineGreedy, CacheAbiIdNamesTheKvGeometry) {
  EXPECT_EQ(EngineCacheAbiId(Fixture("gqa2").config()),
            "kvconform.llama/L=2;H_kv=2;d_h=8;k=post_rope;dtype=f32");
}

// An empty prompt is refused (it would publish nothing and produce no logits).
TEST(EngineInputs, EmptyPromptIsRefused) {
  Engine e(Fixture("gqa2"), {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  EXPECT_EQ(e.Prefill("r", {}, 0, &logits).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(e.Read("r")->generation, 0u);
}

// A negative token is refused by Emit with MODEL_TOKEN_OUT_OF_RANGE, and not recorded.
TEST(EngineInputs, NegativeEmittedTokenIsOutOfRange) {
  Engine e(Fixture("gqa2"), {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  ASSERT_TRUE(e.Prefill("r", Prompt(4, 96), 0, &logits).ok());
  EXPECT_EQ(e.Emit("r", -1).error(), ErrorCode::MODEL_TOKEN_OUT_OF_RANGE);
  EXPECT_FALSE(e.frontier("r").has_value());
  EXPECT_EQ(e.frontier_state("r")->emitted(), 0u);
}

// The frontier stops being tracked when the engine cannot follow it: after a raw append, a
// truncation, and in a child forked short of the parent's committed rows (a full fork keeps it).
TEST(EngineFrontier, UntrackedAfterRawAppendTruncateAndPartialFork) {
  const LlamaModel& m = Fixture("gqa2");
  std::vector<float> logits;
  const int64_t z[1] = {9};
  {
    Engine e(m, {});
    ASSERT_TRUE(e.NewRequest("r").ok());
    ASSERT_TRUE(e.Prefill("r", Prompt(6, 96), 0, &logits).ok());
    ASSERT_TRUE(e.frontier_state("r")->tracked());
    ASSERT_TRUE(e.Append("r", z, false, &logits).ok());
    EXPECT_FALSE(e.frontier_state("r")->tracked()) << "raw append";
  }
  {
    Engine e(m, {});
    ASSERT_TRUE(e.NewRequest("r").ok());
    ASSERT_TRUE(e.Prefill("r", Prompt(6, 96), 0, &logits).ok());
    ASSERT_TRUE(e.Truncate("r", 4).ok());
    EXPECT_FALSE(e.frontier_state("r")->tracked()) << "truncate";
  }
  {
    Engine e(m, {});
    ASSERT_TRUE(e.NewRequest("r").ok());
    ASSERT_TRUE(e.Prefill("r", Prompt(6, 96), 0, &logits).ok());
    ASSERT_TRUE(e.Emit("r", Argmax(logits)).ok());
    ASSERT_TRUE(e.Fork("r", 4, {"part"}).ok());
    ASSERT_TRUE(e.Fork("r", 6, {"full"}).ok());
    EXPECT_FALSE(e.frontier_state("part")->tracked()) << "fork at 4 of 6";
    EXPECT_TRUE(e.frontier_state("full")->tracked()) << "fork at 6 of 6";
    EXPECT_EQ(e.frontier("full"), e.frontier("r"));
  }
}

// Repair needs a tracked frontier token: an untracked request is FailedPrecondition.
TEST(EngineFrontier, RepairOfAnUntrackedRequestIsRefused) {
  Engine e(Fixture("gqa2"), {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  const int64_t z[2] = {3, 4};
  ASSERT_TRUE(e.Append("r", z, false, &logits).ok());  // raw: untracked, no frontier token
  EXPECT_EQ(e.RepairFrontier("r").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.Read("r")->committed_length, 2u);
}

// Finish before the first output is SERVICE_PHASE_EARLY_FINISH and leaves the request live.
TEST(EngineFrontier, FinishBeforeAnyOutputIsEarly) {
  Engine e(Fixture("gqa2"), {});
  ASSERT_TRUE(e.NewRequest("r").ok());
  std::vector<float> logits;
  ASSERT_TRUE(e.Prefill("r", Prompt(4, 96), 0, &logits).ok());
  EXPECT_EQ(e.Finish("r").error(), ErrorCode::SERVICE_PHASE_EARLY_FINISH);
  EXPECT_EQ(e.Read("r")->phase, lifecycle::Phase::kDecodeReady);
  ASSERT_TRUE(e.Emit("r", Argmax(logits)).ok());
  EXPECT_TRUE(e.Finish("r").ok());
}

// Adoption admits only a non-empty DECODE_READY snapshot, a warm prefix shorter than it, and
// a row source that yields every row; a refused import leaves no live handle.
TEST(EngineAdoptPublished, RefusesNonDecodeReadyLongPrefixesAndMissingRows) {
  const LlamaModel& m = Fixture("gqa2");
  const auto p = Prompt(6, 96);
  Engine src(m, {});
  ASSERT_TRUE(src.NewRequest("r").ok());
  std::vector<float> logits;
  ASSERT_TRUE(src.Prefill("r", p, 0, &logits).ok());
  const lifecycle::Snapshot published = *src.Read("r");
  std::vector<uint64_t> asked;
  const auto rows = RowsOf(*src.storage("r"), &asked);

  lifecycle::Snapshot finished = published;
  finished.phase = lifecycle::Phase::kFinished;
  Engine d(m, {});
  EXPECT_EQ(d.AdoptPublished(finished, rows).code(), StatusCode::kInvalidArgument);

  ASSERT_TRUE(d.NewRequest("pfx").ok());
  ASSERT_TRUE(d.Prefill("pfx", p, 0, &logits).ok());  // holds all 6 published rows
  Status s = d.AdoptPublished(published, rows, "pfx");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("holds 6 rows"), std::string::npos) << s.message();

  Engine n(m, {});
  s = n.AdoptPublished(published, [](uint64_t, uint64_t, const float** k, const float** v) {
    *k = *v = nullptr;
    return Status::Ok();
  });
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_EQ(n.Read("r").status().error(), ErrorCode::LIFECYCLE_HANDLE_RELEASED);
}

// CompareSteps: differing greedy tokens, a different token count, or fewer steps fail a pair
// whose logits agree; a NaN is neither bit-identical nor within any distance; max_rel is
// max_abs over the largest baseline |logit|; a pair that did not run compared nothing.
TEST(CompareStepsTest, TokensStepsAndNonFiniteLogitsDecideThePair) {
  GreedyRun base;
  base.tokens = {0, 0};
  base.logits = {{4.0f, 0.0f}, {4.0f, 0.0f}};
  PairResult r = CompareSteps("p", base, base.logits, {0, 1}, 0);
  EXPECT_FALSE(r.passed);
  EXPECT_FALSE(r.argmax_agree);
  EXPECT_EQ(r.detail, "greedy tokens differ");
  EXPECT_FALSE(CompareSteps("p", base, base.logits, {0}, 0).argmax_agree);
  r = CompareSteps("p", base, {base.logits[0]}, base.tokens, 0);  // one step of two
  EXPECT_FALSE(r.bit_identical);
  EXPECT_FALSE(r.passed);
  r = CompareSteps("p", base, {{4.0f, 1.0f}, {4.0f, 0.0f}}, base.tokens, kFastTolerance);
  EXPECT_DOUBLE_EQ(r.max_abs, 1.0);
  EXPECT_DOUBLE_EQ(r.max_rel, 0.25);
  GreedyRun nan;
  nan.tokens = {1};
  nan.logits = {{NAN, 1.0f}};
  r = CompareSteps("p", nan, nan.logits, nan.tokens, 0);  // the same bits on both sides
  EXPECT_TRUE(r.non_finite);
  EXPECT_FALSE(r.bit_identical);
  EXPECT_EQ(r.max_abs, INFINITY);
  EXPECT_FALSE(r.passed);
  r = FailedPair("p", Internal("did not run"));
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.max_abs, INFINITY);
}

// A paged block holds 1..max_position_embeddings positions; --max-new-tokens is 1..(positions
// - prompt + 1).
TEST(ParityLimits, BlockSizeAndMaxNewTokensBoundsAreExact) {
  const LlamaConfig& c = Fixture("gqa2").config();  // max_position_embeddings 256
  EXPECT_TRUE(CheckPagedBlockSize(c, true, 256).ok());
  EXPECT_EQ(CheckPagedBlockSize(c, true, 257).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckPagedBlockSize(c, true, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckPagedBlockSize(c, false, 0).ok());
  EXPECT_TRUE(CheckMaxNewTokens(254, 3, c).ok());
  EXPECT_EQ(CheckMaxNewTokens(255, 3, c).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMaxNewTokens(0, 3, c).code(), StatusCode::kInvalidArgument);
}

// A chunk as long as the prompt is skipped (the same as unchunked), and batched_vs_alone is
// skipped as soon as its companion needs one position more than the model has.
TEST(ParityLimits, SkipsAtTheExactBoundaries) {
  const LlamaModel& m = Fixture("gqa2");
  auto res = RunParity(m, Prompt(16, 96), 2, ComputeMode::kDeterministic);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (const auto& r : *res) {
    if (r.name == "chunked_prefill_c16") {
      EXPECT_TRUE(r.skipped);
    }
    if (r.name == "chunked_prefill_c3") {
      EXPECT_FALSE(r.skipped);
    }
  }
  const uint64_t max_pos = m.config().max_position_embeddings;
  res = RunParity(m, Prompt(max_pos - 2, 96), 2, ComputeMode::kDeterministic);  // needs max_pos + 1
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  for (const auto& r : *res) {
    EXPECT_EQ(r.skipped, r.name == "batched_vs_alone") << r.name;
    EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  }
}

// Weights are finite: an infinity is refused at load like a NaN (MODEL_TENSOR_NONFINITE).
TEST(EngineCheckpoint, InfiniteWeightsAreRefused) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "inf", "gqa2", 7).ok());
  {
    std::fstream f(t / "inf/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    uint64_t header = 0;
    f.read(reinterpret_cast<char*>(&header), 8);
    f.seekp(static_cast<std::streamoff>(8 + header));
    const unsigned char inf_bytes[4] = {0x00, 0x00, 0x80, 0x7F};  // f32 +infinity
    f.write(reinterpret_cast<const char*>(inf_bytes), 4);
  }
  Status s = LlamaModel::Load(t / "inf").status();
  EXPECT_EQ(s.error(), ErrorCode::MODEL_TENSOR_NONFINITE);
  EXPECT_NE(s.message().find("infinite"), std::string::npos) << s.message();
}

// A shard index names shard files inside the directory ("." and ".." are not), as strings.
TEST(EngineCheckpoint, ShardIndexEntriesAreFileNames) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "one", "gqa2", 7).ok());
  for (const Json& file : {Json("."), Json(".."), Json(3)}) {
    SCOPED_TRACE(file.dump());
    fs::remove_all(t / "idx");
    fs::create_directories(t / "idx");
    fs::copy_file(t / "one/config.json", t / "idx/config.json");
    std::ofstream(t / "idx/model.safetensors.index.json")
        << Json{{"weight_map", {{"model.norm.weight", file}}}}.dump();
    EXPECT_EQ(LlamaModel::Load(t / "idx").status().error(), ErrorCode::MODEL_SHARD_INDEX_INVALID);
  }
}

// A forward pass writes exactly the rows staged for it: a cache staged with more rows than the
// call's tokens is FailedPrecondition.
TEST(EngineInputs, ForwardNeedsExactlyTheStagedRows) {
  const LlamaModel& m = Fixture("gqa2");
  auto cache = NewContiguousKvStorage(m.kv_shape());
  ASSERT_TRUE(cache->Stage(3).ok());
  const int64_t tokens[2] = {1, 2};
  std::vector<float> logits;
  EXPECT_EQ(m.Forward(tokens, *cache, ComputeMode::kDeterministic, false, nullptr, &logits).code(),
            StatusCode::kFailedPrecondition);
}

// gen-model records the shape, seed and command that wrote the checkpoint in its config.json.
TEST(EngineGenerator, ConfigRecordsTheGeneratorCommand) {
  TempDir t;
  ASSERT_TRUE(GenerateModel(t / "m", "mqa", 5).ok());
  const Json cfg = Json::parse(*ReadFileToString(t / "m/config.json"));
  EXPECT_EQ(cfg["kvconform_generator"]["shape"], "mqa");
  EXPECT_EQ(cfg["kvconform_generator"]["seed"], 5);
  EXPECT_EQ(cfg["kvconform_generator"]["tool"],
            "kvconform gen-model --out DIR --shape mqa --seed 5");
}

}  // namespace
}  // namespace kvc::model
