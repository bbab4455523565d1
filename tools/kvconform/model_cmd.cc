// `kvconform gen-model | generate | parity`: the reference engine from the command line, plus
// the "model parity" section of `kvconform suite` (parity on the bundled test models).
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "reference/model/generator.h"
#include "reference/model/hf_logits.h"
#include "reference/model/parity.h"
#include "tools/kvconform/cli.h"
#if defined(KVCONFORM_HAVE_CUDA_KERNELS)
#include "kernels/cuda_parity.h"
#endif

namespace kvc::cli {
namespace {

using model::ComputeMode;

// `--device cuda` when this build has no CUDA kernels or no usable device is found
// (docs/model.md "CUDA backend").
constexpr int kExitDeviceUnavailable = 4;

int FailWith(const char* cmd, const Status& s) {
  std::cerr << "kvconform " << cmd << ": " << Printable(s.ToString()) << "\n";
  if (s.code() == StatusCode::kUnavailable) return kExitDeviceUnavailable;
  // Memory exhaustion is no verdict: exit 3, as an allocation failure is (docs/cli.md).
  if (s.code() == StatusCode::kResourceExhausted) return kExitInternal;
  return s.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
}

// OK for "cpu"; for "cuda" OK only when this build has the CUDA backend and a device is usable
// (kUnavailable otherwise, which FailWith maps to kExitDeviceUnavailable).
Status CheckDevice(const std::string& device) {
  if (device == "cpu") return Status::Ok();
#if defined(KVCONFORM_HAVE_CUDA_KERNELS)
  Status s = kernels::CheckCudaDevice();
  if (!s.ok()) return Unavailable("--device cuda: " + s.message());
  return Status::Ok();
#else
  return Unavailable(
      "--device cuda: this kvconform was built without the CUDA backend (configure with "
      "KVCONFORM_CUDA=ON or AUTO on a machine with nvcc)");
#endif
}

StatusOr<ComputeMode> ParseMode(const std::string& s) {
  if (s == "deterministic") return ComputeMode::kDeterministic;
  if (s == "fast") return ComputeMode::kFast;
  return InvalidArgument("--mode: '" + s + "'; expected deterministic or fast");
}

struct GenOptions {
  std::string out, shape;
  uint64_t seed = 0;
};

struct GenerateOptions {
  std::string model, prompt_ids, dump_logits, mode = "deterministic", layout = "contiguous";
  std::string device = "cpu";
  uint64_t max_new = 1, block_size = 16, chunk = 0;
};

void RunGenerate(const GenerateOptions& o) {
  auto ids = ParsePromptIds(o.prompt_ids);
  if (!ids.ok()) {
    ExitCode() = FailWith("generate", ids.status());
    return;
  }
  auto mode = ParseMode(o.mode);
  if (!mode.ok()) {
    ExitCode() = FailWith("generate", mode.status());
    return;
  }
  if (Status d = CheckDevice(o.device); !d.ok()) {
    ExitCode() = FailWith("generate", d);
    return;
  }
  // Judged before the weights are loaded or anything computed (probe 46: a --max-new-tokens
  // past the positions ran to the limit, or out of memory, before failing without naming the
  // flag; an unwritable --dump-logits was found after the run). A config that cannot be read
  // is reported by the load below.
  if (auto c = model::LoadLlamaConfig((std::filesystem::path(o.model) / "config.json").string());
      c.ok()) {
    if (Status s = model::CheckMaxNewTokens(o.max_new, ids->size(), *c); !s.ok()) {
      ExitCode() = FailWith("generate", s);
      return;
    }
  }
  std::ofstream dump;
  if (!o.dump_logits.empty()) {
    dump.open(o.dump_logits, std::ios::trunc);
    if (!dump) {
      ExitCode() = FailWith(
          "generate", IoError("--dump-logits: " + o.dump_logits + ": cannot open for writing"));
      return;
    }
  }
  StatusOr<model::GreedyRun> run = Internal("no run");
  if (o.device == "cpu") {
    auto m = model::LlamaModel::Load(o.model);
    if (!m.ok()) {
      ExitCode() = FailWith("generate", m.status());
      return;
    }
    NoteUnusedTensors("generate", m->unused_tensors());
    model::EngineOptions eo;
    eo.mode = *mode;
    eo.paged = o.layout == "paged";
    eo.block_size = o.block_size;
    run = model::RunGreedy(*m, *ids, o.max_new, eo, o.chunk);
  } else {
#if defined(KVCONFORM_HAVE_CUDA_KERNELS)
    auto w = model::LoadLlamaCheckpoint(o.model);
    if (!w.ok()) {
      ExitCode() = FailWith("generate", w.status());
      return;
    }
    NoteUnusedTensors("generate", w->unused_tensors);
    auto gm = kernels::CudaModel::Upload(*w);
    if (!gm.ok()) {
      ExitCode() = FailWith("generate", gm.status());
      return;
    }
    kernels::CudaEngineOptions eo;
    eo.mode = *mode;
    eo.paged = o.layout == "paged";
    eo.block_size = o.block_size;
    run = kernels::RunGreedyCuda(**gm, *ids, o.max_new, eo, o.chunk);
#endif
  }
  if (!run.ok()) {
    ExitCode() = FailWith("generate", run.status());
    return;
  }
  if (dump.is_open()) {
    for (size_t g = 0; g < run->tokens.size(); ++g) {
      nlohmann::json j = {{"step", g}, {"token", run->tokens[g]}, {"logits", run->logits[g]}};
      dump << j.dump() << "\n";
    }
    dump.flush();
    if (!dump) {
      ExitCode() =
          FailWith("generate", IoError("--dump-logits: " + o.dump_logits + ": write failed"));
      return;
    }
  }
  for (size_t g = 0; g < run->tokens.size(); ++g) std::cout << (g ? "," : "") << run->tokens[g];
  std::cout << "\n";
  ExitCode() = kExitOk;
}

struct ParityOptions {
  std::string model, prompt_ids, mode = "deterministic", format = "text", device = "cpu";
  uint64_t max_new = 4;
};

nlohmann::json PairToJson(const model::PairResult& r) {
  // A skipped pair compared nothing: its figures are null, not a perfect agreement (probe 71).
  auto num = [&](double x) {
    return r.skipped          ? nlohmann::json(nullptr)
           : std::isfinite(x) ? nlohmann::json(x)
                              : nlohmann::json("inf");
  };
  auto flag = [&](bool b) { return r.skipped ? nlohmann::json(nullptr) : nlohmann::json(b); };
  return {{"pair", r.name},
          {"steps", r.steps},
          {"max_abs_diff", num(r.max_abs)},
          {"max_rel_diff", num(r.max_rel)},
          {"bit_identical", flag(r.bit_identical)},
          {"argmax_agree", flag(r.argmax_agree)},
          {"tolerance", r.tolerance},
          {"skipped", r.skipped},
          {"verdict", r.skipped  ? "skip"
                      : r.passed ? "pass"
                                 : "fail"},
          {"detail", r.detail}};
}

void RunParityCmd(const ParityOptions& o) {
  // An error is reported on standard error and, with --format json, as {"verdict": "error",
  // "error": MESSAGE} on standard output (probe 71: nothing was written there, where a CI
  // consumer parses the report). The message is carried unescaped, as in every JSON report
  // (probe 84: Printable's escapes were escaped again, \\x01 for a control byte).
  auto fail = [&](const Status& s) {
    if (o.format == "json") PrintJsonError(s.ToString());
    ExitCode() = FailWith("parity", s);
  };
  auto ids = ParsePromptIds(o.prompt_ids);
  if (!ids.ok()) return fail(ids.status());
  auto mode = ParseMode(o.mode);
  if (!mode.ok()) return fail(mode.status());
  if (Status d = CheckDevice(o.device); !d.ok()) return fail(d);
  auto w = model::LoadLlamaCheckpoint(o.model);
  if (!w.ok()) return fail(w.status());
  // Named by its option, as generate and pd-run name it (probe 71: the engine's position error).
  if (Status s = model::CheckMaxNewTokens(o.max_new, ids->size(), w->config); !s.ok())
    return fail(s);
  NoteUnusedTensors("parity", w->unused_tensors);
  const model::LlamaModel m(o.device == "cpu" ? std::move(*w) : *w);
  auto res = model::RunParity(m, *ids, o.max_new, *mode);
  if (!res.ok()) return fail(res.status());
#if defined(KVCONFORM_HAVE_CUDA_KERNELS)
  if (o.device == "cuda") {  // the GPU pairs follow the CPU pairs
    auto gm = kernels::CudaModel::Upload(*w);
    if (!gm.ok()) return fail(gm.status());
    auto gpu = kernels::RunCudaParity(m, **gm, *ids, o.max_new, *mode);
    if (!gpu.ok()) return fail(gpu.status());
    res->insert(res->end(), gpu->begin(), gpu->end());
  }
#endif
  bool ok = true;
  for (const auto& r : *res) ok = ok && r.passed;
  if (o.format == "json") {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& r : *res) pairs.push_back(PairToJson(r));
    std::cout << DumpReport(nlohmann::json{{"model", o.model},
                                           {"mode", o.mode},
                                           {"device", o.device},
                                           {"prompt_ids", *ids},
                                           {"max_new_tokens", o.max_new},
                                           {"verdict", ok ? "pass" : "fail"},
                                           {"pairs", pairs}})
              << "\n";
  } else {
    std::cout << "kvconform parity: " << Printable(o.model) << " (" << Printable(o.mode)
              << ", device " << o.device << ", " << ids->size() << " prompt tokens, " << o.max_new
              << " new)\n";
    std::cout << std::left << std::setw(32) << "pair" << std::right << std::setw(6) << "steps"
              << std::setw(13) << "max_abs" << std::setw(13) << "max_rel" << std::setw(8)
              << "argmax" << std::setw(11) << "tolerance"
              << "  verdict\n";
    for (const auto& r : *res) {
      std::cout << std::left << std::setw(32) << r.name << std::right << std::setw(6) << r.steps
                << std::setprecision(4);
      if (r.skipped)
        std::cout << std::setw(13) << "-" << std::setw(13) << "-";
      else
        std::cout << std::setw(13) << r.max_abs << std::setw(13) << r.max_rel;
      std::cout << std::setw(8)
                << (r.skipped                   ? "-"
                    : !std::isfinite(r.max_rel) ? "n/a"
                    : r.argmax_agree            ? "same"
                                                : "DIFF")
                << std::setw(11) << r.tolerance << "  "
                << (r.skipped  ? "skip"
                    : r.passed ? "pass"
                               : "FAIL")
                << (r.detail.empty() ? "" : " (" + r.detail + ")") << "\n";
    }
    std::cout << "verdict: " << (ok ? "pass" : "fail") << "\n";
  }
  ExitCode() = ok ? kExitOk : kExitViolation;
}

// Suite section: every bundled model under fixtures/models/<name>/ runs the deterministic
// parity pairs and, when it has hf_logits.json, the comparison with the recorded logits.
std::vector<FixtureOutcome> RunModelSection(const std::string& root) {
  std::vector<FixtureOutcome> out;
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(root) / "fixtures" / "models";
  std::error_code ec;
  std::vector<fs::path> models;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (fs::exists(e.path() / "config.json")) models.push_back(e.path());
  std::sort(models.begin(), models.end());
  for (const auto& p : models) {
    const std::string name = "models/" + p.filename().string();
    auto m = model::LlamaModel::Load(p.string());
    if (!m.ok()) {
      FixtureOutcome o;
      o.case_name = name + "/load";
      o.error = m.status();
      o.detail = m.status().ToString();
      out.push_back(o);
      continue;
    }
    const std::vector<int64_t> prompt = {1,  5,  9,  2, 7,  3,  11, 4,  8, 6,
                                         10, 12, 13, 0, 14, 15, 16, 17, 18};
    auto res = model::RunParity(*m, prompt, 4, ComputeMode::kDeterministic);
    if (!res.ok()) {
      FixtureOutcome o;
      o.case_name = name + "/parity";
      o.error = res.status();
      o.detail = res.status().ToString();
      out.push_back(o);
    } else {
      for (const auto& r : *res) {
        FixtureOutcome o;
        o.path = p.string();
        o.case_name = name + "/" + r.name;
        o.kind = "model parity";
        o.passed = r.passed;
        o.detail = r.detail;
        out.push_back(o);
      }
    }
    if (fs::exists(p / "hf_logits.json")) {
      FixtureOutcome o;
      o.path = (p / "hf_logits.json").string();
      o.case_name = name + "/hf_logits";
      o.kind = "model parity";
      auto cmp = model::CompareWithHfLogits(*m, o.path);
      if (!cmp.ok()) {
        o.error = cmp.status();
        o.detail = cmp.status().ToString();
      } else {
        o.passed = cmp->passed;
        o.detail = cmp->detail;
      }
      out.push_back(o);
    }
  }
  return out;
}

struct BenchOptions {
  std::string model, format = "text";
  uint64_t prompt_len = 128, decode = 32;
  int threads = 1;
};

// Prefill and decode throughput of both modes (a benchmark: prints figures, asserts nothing).
void RunBench(const BenchOptions& o) {
  auto m = model::LlamaModel::Load(o.model);
  if (!m.ok()) {
    ExitCode() = FailWith("bench-engine", m.status());
    return;
  }
  NoteUnusedTensors("bench-engine", m->unused_tensors());
  // Bounded before anything is allocated (probe 35: --prompt-len 2^64-1 was an internal error).
  if (o.prompt_len >= m->config().max_position_embeddings) {
    ExitCode() = FailWith("bench-engine",
                          InvalidArgument("--prompt-len " + std::to_string(o.prompt_len) +
                                          ": expected below max_position_embeddings " +
                                          std::to_string(m->config().max_position_embeddings)));
    return;
  }
  // Every decode step processes one token at the next position (probe 46: --decode past the
  // positions ran the prefill benchmark, then failed without naming the flag).
  if (o.decode > m->config().max_position_embeddings - o.prompt_len) {
    ExitCode() = FailWith(
        "bench-engine",
        InvalidArgument("--decode " + std::to_string(o.decode) + ": a prompt of " +
                        std::to_string(o.prompt_len) + " tokens leaves room for at most " +
                        std::to_string(m->config().max_position_embeddings - o.prompt_len) +
                        " decode steps (max_position_embeddings " +
                        std::to_string(m->config().max_position_embeddings) + ")"));
    return;
  }
  model::SetBlasThreads(o.threads);
  std::vector<int64_t> prompt(o.prompt_len);
  for (size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<int64_t>((i * 7919 + 13) % m->config().vocab_size);
  nlohmann::json rows = nlohmann::json::array();
  for (ComputeMode mode : {ComputeMode::kDeterministic, ComputeMode::kFast}) {
    model::EngineOptions eo;
    eo.mode = mode;
    model::Engine e(*m, eo);
    Status st = e.NewRequest("bench");
    std::vector<float> logits;
    const auto t0 = std::chrono::steady_clock::now();
    if (st.ok()) st = e.Prefill("bench", prompt, 0, &logits);
    const auto t1 = std::chrono::steady_clock::now();
    for (uint64_t g = 0; g < o.decode && st.ok(); ++g) {
      StatusOr<int64_t> y = model::GreedyToken(logits, g);
      st = y.status();
      if (st.ok()) st = e.Emit("bench", *y);
      if (st.ok()) st = e.Decode("bench", *y, &logits);
    }
    if (st.ok()) st = model::GreedyToken(logits, o.decode).status();  // the last step's too
    const auto t2 = std::chrono::steady_clock::now();
    if (!st.ok()) {
      ExitCode() = FailWith("bench-engine", st);
      return;
    }
    const double pre = std::chrono::duration<double>(t1 - t0).count();
    const double dec = std::chrono::duration<double>(t2 - t1).count();
    rows.push_back({{"mode", std::string(model::ComputeModeName(mode))},
                    {"prefill_tokens_per_s", o.prompt_len / pre},
                    {"decode_tokens_per_s", o.decode / dec},
                    {"prefill_s", pre},
                    {"decode_s", dec}});
  }
  nlohmann::json out = {{"engine", "kvconform"},
                        {"model", o.model},
                        {"threads", o.threads},
                        {"blas", model::FastModeUsesBlas()},
                        {"prompt_len", o.prompt_len},
                        {"decode_tokens", o.decode},
                        {"results", rows}};
  if (o.format == "json") {
    std::cout << DumpReport(out) << "\n";
  } else {
    std::cout << "kvconform bench-engine: " << Printable(o.model) << " threads=" << o.threads
              << " prompt=" << o.prompt_len << " decode=" << o.decode << "\n";
    for (const auto& r : rows)
      std::cout << "  " << std::left << std::setw(14) << r["mode"].get<std::string>() << std::fixed
                << std::setprecision(2) << " prefill " << r["prefill_tokens_per_s"].get<double>()
                << " tok/s   decode " << r["decode_tokens_per_s"].get<double>() << " tok/s\n";
    std::cout << "  deterministic/fast decode time ratio: "
              << rows[0]["decode_s"].get<double>() / rows[1]["decode_s"].get<double>() << "x\n";
  }
  ExitCode() = kExitOk;
}

}  // namespace

// An unsigned option's value is at least 1 (after the decimal-only transform of common.cc;
// CLI::PositiveNumber's message printed a range up to 1.8e308 for 0: probe 35).
CLI::Validator AtLeastOne() {
  return CLI::Validator(
      [](std::string& v) {
        return v.find_first_not_of('0') == std::string::npos ? "expected an integer >= 1, got " + v
                                                             : std::string();
      },
      "INT >= 1");
}

void AddModelCommands(CLI::App& app) {
  auto bo = std::make_shared<BenchOptions>();
  auto* bench = app.add_subcommand(
      "bench-engine", "benchmark: prefill/decode tokens/s of the reference engine in both modes");
  bench->add_option("--model", bo->model, "HF model directory (e.g. gen-model --shape bench100m)")
      ->required();
  bench->add_option("--prompt-len", bo->prompt_len, "prompt tokens")->check(AtLeastOne());
  bench->add_option("--decode", bo->decode, "decode steps")->check(AtLeastOne());
  bench->add_option("--threads", bo->threads, "OpenBLAS threads in fast mode (1..256)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const bool digits = !v.empty() && v.size() <= 3 &&
                                v.find_first_not_of("0123456789") == std::string::npos;
            return digits && std::stoi(v) >= 1 && std::stoi(v) <= 256
                       ? std::string()
                       : "expected 1..256 threads, got " + v;
          },
          "1..256"));
  bench->add_option("--format", bo->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  bench->callback([bo] { RunBench(*bo); });

  auto gen = std::make_shared<GenOptions>();
  auto* g = app.add_subcommand(
      "gen-model",
      "write a small random-weight Llama checkpoint (config.json + model.safetensors)");
  g->add_option("--out", gen->out, "output directory")->required();
  std::string shapes;
  for (const auto& n : model::GeneratorShapeNames()) shapes += (shapes.empty() ? "" : ", ") + n;
  g->add_option("--shape", gen->shape, "one of: " + shapes)->required();
  g->add_option("--seed", gen->seed, "weight seed")->required();
  g->callback([gen] {
    Status s = model::GenerateModel(gen->out, gen->shape, gen->seed);
    if (!s.ok()) {
      ExitCode() = FailWith("gen-model", s);
      return;
    }
    std::cout << "wrote " << gen->out << "/config.json and model.safetensors (shape " << gen->shape
              << ", seed " << gen->seed << ")\n";
    ExitCode() = kExitOk;
  });

  auto go = std::make_shared<GenerateOptions>();
  auto* gen_cmd = app.add_subcommand(
      "generate", "greedy generation with the reference engine; prints the generated ids");
  gen_cmd->add_option("--model", go->model, "HF model directory")->required();
  gen_cmd->add_option("--prompt-ids", go->prompt_ids, "comma-separated prompt token ids")
      ->required();
  gen_cmd->add_option("--max-new-tokens", go->max_new, "tokens to generate (>= 1)")
      ->required()
      ->check(AtLeastOne());
  gen_cmd->add_option("--dump-logits", go->dump_logits, "write JSON Lines {step, token, logits}");
  gen_cmd->add_option("--mode", go->mode, "deterministic | fast");
  gen_cmd->add_option("--layout", go->layout, "contiguous | paged")
      ->check(CLI::IsMember({"contiguous", "paged"}));
  CLI::Option* block_size =
      gen_cmd
          ->add_option("--block-size", go->block_size,
                       "paged block size in positions (1..max_position_embeddings; with "
                       "--layout paged)")
          ->check(AtLeastOne());
  gen_cmd->add_option("--prefill-chunk", go->chunk,
                      "prefill in appends of this many tokens (0 = whole prompt)");
  gen_cmd
      ->add_option("--device", go->device,
                   "cpu | cuda (the CUDA backend; exit code 4 when it is unavailable)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  gen_cmd->callback([go, block_size] {
    // A block size means nothing to a contiguous cache (probe 71: it was ignored silently).
    if (block_size->count() > 0 && go->layout != "paged") {
      std::cerr << "kvconform generate: --block-size applies to --layout paged (the layout is "
                << go->layout << ")\n";
      ExitCode() = kExitUsage;
      return;
    }
    RunGenerate(*go);
  });

  auto po = std::make_shared<ParityOptions>();
  auto* par = app.add_subcommand(
      "parity",
      "run every execution-path parity pair (cache/no-cache, chunked, paged, fork, fast)");
  par->add_option("--model", po->model, "HF model directory")->required();
  par->add_option("--prompt-ids", po->prompt_ids, "comma-separated prompt token ids")->required();
  par->add_option("--max-new-tokens", po->max_new, "tokens to generate (>= 1)")
      ->required()
      ->check(AtLeastOne());
  par->add_option("--mode", po->mode, "deterministic | fast");
  par->add_option("--format", po->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  par->add_option("--device", po->device,
                  "cpu | cuda (adds the CPU-vs-GPU and GPU path pairs; exit code 4 when the CUDA "
                  "backend is unavailable)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  par->callback([po] { RunParityCmd(*po); });

  SuiteSections().push_back({"model parity (fixtures/models)", RunModelSection});
}

}  // namespace kvc::cli
