// Parity pairs of the CUDA engine (`kvconform parity --device cuda`): the GPU against the CPU
// reference engine, and the GPU's own execution paths against each other.
//
// Baseline: greedy generation on the GPU (contiguous cache, whole-prompt prefill, one decode
// append per emitted token) in the requested mode, compared step by step like
// reference/model/parity.h:
//   cpu_vs_gpu                   CPU reference engine (same mode) vs the GPU baseline;
//                                tolerance kCpuGpuRelTolerance * max(1, max |CPU logit|) on
//                                max |logit diff| (both fp32; the GPU sums in other orders and
//                                uses its own expf/sincosf), and the same greedy tokens
//   gpu_cache_vs_nocache         step g recomputed from scratch on the GPU over prompt + y[0:g)
//   gpu_chunked_prefill_c{1,3,16}  prefill in appends of c tokens (chunks >= P are skipped)
//   gpu_paged_b{1,16}_vs_contiguous  paged device storage, block size b
// The gpu_* pairs declare tolerance 0 (bit-identical, memcmp) in deterministic mode (see
// cuda_engine.h for why that holds by construction) and FastTolerance in fast mode (cuBLAS picks
// its kernel by the number of rows per call). Each pair also fails on NaN/inf or differing
// greedy tokens. Thread-compatible; runs on the caller's thread and the engine's stream.
#ifndef KVCONFORM_KERNELS_CUDA_PARITY_H_
#define KVCONFORM_KERNELS_CUDA_PARITY_H_

#include <vector>

#include "kernels/cuda_engine.h"
#include "reference/model/parity.h"

namespace kvc::kernels {

inline constexpr double kCpuGpuRelTolerance = 1e-3;

// `opts` with max_tokens 0 (the engine's default, min(max_position_embeddings, 8192)) replaced
// by the positions a greedy run of `max_new` tokens after `prompt` commits (prompt + max_new -
// 1), so that every run model::CheckMaxNewTokens accepts fits the engine (probe 59: a run past
// 8192 positions failed on the device only); an explicit max_tokens is kept.
CudaEngineOptions SizedForRun(CudaEngineOptions opts, uint64_t prompt, uint64_t max_new);

// Greedy generation through a CudaEngine (same contract as model::RunGreedy); also checks that
// the device's published length equals the lifecycle snapshot after the run. The engine is sized
// by SizedForRun.
StatusOr<model::GreedyRun> RunGreedyCuda(const CudaModel& m, const std::vector<int64_t>& prompt,
                                         uint64_t max_new, const CudaEngineOptions& opts,
                                         uint64_t chunk = 0);

// The pairs above. Errors only for failures to run; mismatches are results.
StatusOr<std::vector<model::PairResult>> RunCudaParity(const model::LlamaModel& cpu,
                                                       const CudaModel& gpu,
                                                       const std::vector<int64_t>& prompt,
                                                       uint64_t max_new, model::ComputeMode mode);

}  // namespace kvc::kernels

#endif  // KVCONFORM_KERNELS_CUDA_PARITY_H_
