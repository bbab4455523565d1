// Cache/no-cache parity (M5.1 0x03) and the engine's other execution-path pairs.
//
// Baseline: greedy generation with a contiguous cache, the prompt in one append, then one
// decode append per emitted token (the frontier token), in the requested compute mode. Each
// pair runs the same prompt through another path and compares, at every output step, the
// logits that chose that step's token:
//   cache_vs_nocache            step g recomputed from scratch over prompt + y[0:g) (no cache)
//   chunked_prefill_c{1,3,16,64,127}  prefill in appends of c tokens (chunks >= P are skipped)
//   paged_b{1,4,16}_vs_contiguous     paged storage, block size b
//   fork_then_continue_vs_fresh       prefill in a parent, fork at P, the child decodes
//   fork_diverge_vs_fresh             the parent decodes 2 tokens, a fork at P+1 continues with
//                                     a different token (copy-on-write in the shared block),
//                                     compared with a fresh run of that token sequence
//   batched_vs_alone                  every call shares a ragged batch with another request
//   fast_vs_deterministic             (deterministic baseline only) BLAS kernels
// In deterministic mode every pair declares tolerance 0 and must be bit-identical (memcmp)
// except fast_vs_deterministic, which declares FastTolerance; in fast mode every pair declares
// FastTolerance (BLAS blocking depends on the number of rows per call), and
// fast_vs_deterministic is skipped. max_rel = max_abs / max |baseline logit|. A pair passes when
// max_abs <= tolerance and every step's argmax agrees, and no logit is NaN or infinite. A pair
// that would compare nothing its name promises is skipped with its reason: cache_vs_nocache and
// fork_then_continue_vs_fresh with one new token (no decode step reads the cache).
// Thread-compatible; runs on the caller's thread.
#ifndef KVCONFORM_REFERENCE_MODEL_PARITY_H_
#define KVCONFORM_REFERENCE_MODEL_PARITY_H_

#include <string>
#include <vector>

#include "reference/model/engine.h"

namespace kvc::model {

// The tolerance of a pair that is not bit-identical: max |logit diff| <= kFastTolerance x
// max(1, max |baseline logit|) (FastTolerance). Relative to the logits' scale, as float32
// rounding is (probe 71: an absolute 1e-3 failed a healthy checkpoint whose logits reach 3,000,
// at a relative difference of 5e-7); the CUDA pairs scale the same way.
inline constexpr double kFastTolerance = 1e-3;
// `relative` x max(1, max |baseline logit|): the absolute tolerance of a pair declaring
// `relative` (CompareSteps, pd-run's fast compare).
inline double ScaledTolerance(double relative, double max_abs_baseline_logit) {
  return relative * (max_abs_baseline_logit > 1 ? max_abs_baseline_logit : 1.0);
}
inline double FastTolerance(double max_abs_baseline_logit) {
  return ScaledTolerance(kFastTolerance, max_abs_baseline_logit);
}

struct GreedyRun {
  std::vector<int64_t> tokens;             // emitted ids y[0..G)
  std::vector<std::vector<float>> logits;  // [G][V]: the logits that chose y[g]
  uint64_t committed_length = 0;           // after the run: P + G - 1 (frontier unprocessed)
};

// InvalidArgument unless a paged block size (when `paged`) is in 1..max_position_embeddings of
// `config`: the CPU engine's and the CUDA engine's runs judge their options with it.
Status CheckPagedBlockSize(const LlamaConfig& config, bool paged, uint64_t block_size);

// InvalidArgument unless 1 <= max_new and a prompt of `prompt` tokens plus `max_new` generated
// tokens fit the model's positions: decode processes every generated token but the last, at
// positions up to prompt + max_new - 2 (probe 37: a huge --max-new-tokens failed only in
// pd-run's decode worker; probe 46: generate computed up to the limit, or ran out of memory
// keeping each step's logits, before failing). The message names the --max-new-tokens option
// of the commands that judge it before loading anything heavy.
Status CheckMaxNewTokens(uint64_t max_new, uint64_t prompt, const LlamaConfig& c);

// Greedy generation of `max_new` tokens (>= 1) through an Engine with `opts`, prefill in
// appends of `chunk` tokens (0 = whole prompt).
StatusOr<GreedyRun> RunGreedy(const LlamaModel& model, const std::vector<int64_t>& prompt,
                              uint64_t max_new, const EngineOptions& opts, uint64_t chunk = 0);

struct PairResult {
  std::string name;
  uint64_t steps = 0;  // output steps whose logits were compared (0 when skipped; summed over
                       // both requests of fork_diverge_vs_fresh)
  double max_abs = 0;
  double max_rel = 0;
  bool bit_identical = false;
  bool argmax_agree = false;
  bool non_finite = false;  // a NaN/inf logit on either side: always a failure
  double tolerance = 0;
  bool passed = false;
  std::string detail;  // why it failed, or why it was skipped
  bool skipped = false;
};

// Runs every pair. Errors only for failures to run (bad tokens, ...); mismatches are results.
// The verdict rules every parity pair uses (the CPU pairs here, the GPU pairs in kernels/):
// candidate step logits and greedy tokens against the baseline's; `tol` 0 demands bit-identical
// logits, otherwise max |diff| <= tol x max(1, max |baseline logit|) (the tolerance the result
// reports); non-finite logits or differing tokens always fail.
PairResult CompareSteps(const std::string& name, const GreedyRun& base,
                        const std::vector<std::vector<float>>& cand,
                        const std::vector<int64_t>& cand_tokens, double tol);
// fork_diverge_vs_fresh's verdict from its two sides, each against a fresh run: the child's
// diverging step and the parent's step after the fork (both write into the shared block). It
// passes only when both pass; steps add up; bit_identical and argmax_agree hold for both; the
// figures (max_abs, max_rel, tolerance) are a failed side's, the child's first, else those of
// the side nearer its tolerance; the detail names the failed side(s).
PairResult CombineForkSides(PairResult child, PairResult parent);
// A pair whose candidate run failed to execute.
PairResult FailedPair(const std::string& name, const Status& s);
// A pair that cannot run on this model and prompt: skipped (and passed) with the reason `why`.
PairResult SkippedPair(const std::string& name, const std::string& why, double tol);

StatusOr<std::vector<PairResult>> RunParity(const LlamaModel& model,
                                            const std::vector<int64_t>& prompt, uint64_t max_new,
                                            ComputeMode mode);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_PARITY_H_
