// CPU-vs-GPU and GPU execution-path parity pairs of the CUDA engine.
#include "kernels/cuda_parity.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kvc::kernels {
namespace {

using model::GreedyRun;
using model::PairResult;

PairResult Compare(const std::string& name, const GreedyRun& base, const GreedyRun& cand,
                   double tol) {
  return model::CompareSteps(name, base, cand.logits, cand.tokens, tol);
}

PairResult Failed(const std::string& name, const Status& s) { return model::FailedPair(name, s); }

}  // namespace

CudaEngineOptions SizedForRun(CudaEngineOptions opts, uint64_t prompt, uint64_t max_new) {
  // The run commits prompt + max_new - 1 positions (the last token is emitted, never appended).
  if (opts.max_tokens == 0 && max_new > 0) opts.max_tokens = prompt + max_new - 1;
  return opts;
}

StatusOr<GreedyRun> RunGreedyCuda(const CudaModel& m, const std::vector<int64_t>& prompt,
                                  uint64_t max_new, const CudaEngineOptions& opts, uint64_t chunk) {
  if (max_new == 0) return InvalidArgument("max_new_tokens must be >= 1");
  KVC_RETURN_IF_ERROR(model::CheckPagedBlockSize(m.config(), opts.paged, opts.block_size));
  KVC_ASSIGN_OR_RETURN(std::unique_ptr<CudaEngine> e,
                       CudaEngine::Create(m, SizedForRun(opts, prompt.size(), max_new)));
  KVC_RETURN_IF_ERROR(e->NewRequest("r"));
  GreedyRun run;
  std::vector<float> logits;
  KVC_RETURN_IF_ERROR(e->Prefill("r", prompt, chunk, &logits));
  for (uint64_t g = 0;; ++g) {
    KVC_ASSIGN_OR_RETURN(const int64_t y, model::GreedyToken(logits, g));
    run.tokens.push_back(y);
    run.logits.push_back(logits);
    KVC_RETURN_IF_ERROR(e->Emit("r", y));
    if (g + 1 == max_new) break;
    KVC_RETURN_IF_ERROR(e->Decode("r", y, &logits));
  }
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot s, e->Read("r"));
  run.committed_length = s.committed_length;
  const frontier::FrontierState* fs = e->frontier_state("r");
  if (!fs || !fs->tracked() || fs->committed() != s.committed_length || fs->emitted() != max_new)
    return Internal("greedy run (cuda): frontier counters disagree with the published snapshot");
  KVC_ASSIGN_OR_RETURN(int32_t visible, e->DeviceVisibleLength("r"));
  if (visible < 0 || static_cast<uint64_t>(visible) != s.committed_length)
    return Internal("greedy run (cuda): device visible length " + std::to_string(visible) +
                    " differs from the published snapshot's " + std::to_string(s.committed_length));
  return run;
}

StatusOr<std::vector<PairResult>> RunCudaParity(const model::LlamaModel& cpu, const CudaModel& gpu,
                                                const std::vector<int64_t>& prompt,
                                                uint64_t max_new, model::ComputeMode mode) {
  CudaEngineOptions base_opts;
  base_opts.mode = mode;
  KVC_ASSIGN_OR_RETURN(GreedyRun base, RunGreedyCuda(gpu, prompt, max_new, base_opts));
  const double tol0 = mode == model::ComputeMode::kDeterministic ? 0.0 : model::kFastTolerance;
  std::vector<PairResult> out;
  {
    model::EngineOptions eo;
    eo.mode = mode;
    auto c = model::RunGreedy(cpu, prompt, max_new, eo);
    if (!c.ok()) {
      out.push_back(Failed("cpu_vs_gpu", c.status()));
    } else {
      // The CPU run is the reference side: max |CPU - GPU| over every step's logits, within
      // kCpuGpuRelTolerance x max(1, max |CPU logit|) (CompareSteps scales by the baseline's
      // logits, the CPU run's here).
      out.push_back(Compare("cpu_vs_gpu", *c, base, kCpuGpuRelTolerance));
    }
  }
  {  // cache vs no-cache: every step recomputed over the whole prefix in a fresh engine.
    GreedyRun cand;
    std::vector<int64_t> prefix = prompt;
    Status st;
    for (uint64_t g = 0; g < max_new && st.ok(); ++g) {
      auto e = CudaEngine::Create(gpu, base_opts);
      if (!e.ok()) {
        st = e.status();
        break;
      }
      std::vector<float> logits;
      st = (*e)->NewRequest("nc");
      if (st.ok()) st = (*e)->Prefill("nc", prefix, 0, &logits);
      if (!st.ok()) break;
      cand.tokens.push_back(model::Argmax(logits));
      cand.logits.push_back(std::move(logits));
      prefix.push_back(cand.tokens.back());
    }
    out.push_back(st.ok() ? Compare("gpu_cache_vs_nocache", base, cand, tol0)
                          : Failed("gpu_cache_vs_nocache", st));
  }
  for (uint64_t c : {1, 3, 16}) {
    const std::string name = "gpu_chunked_prefill_c" + std::to_string(c);
    if (c >= prompt.size()) {
      out.push_back(model::SkippedPair(name, "chunk >= prompt length (same as unchunked)", 0));
      continue;
    }
    auto run = RunGreedyCuda(gpu, prompt, max_new, base_opts, c);
    out.push_back(run.ok() ? Compare(name, base, *run, tol0) : Failed(name, run.status()));
  }
  for (uint64_t b : {1, 16}) {
    CudaEngineOptions o = base_opts;
    o.paged = true;
    o.block_size = b;
    const std::string name = "gpu_paged_b" + std::to_string(b) + "_vs_contiguous";
    auto run = RunGreedyCuda(gpu, prompt, max_new, o);
    out.push_back(run.ok() ? Compare(name, base, *run, tol0) : Failed(name, run.status()));
  }
  return out;
}

}  // namespace kvc::kernels
