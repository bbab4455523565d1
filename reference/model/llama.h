// The Llama-family decoder forward pass (fp32 CPU), in the pinned Transformers v4.57.0 order.
//
// LlamaModel: embed -> for each layer: RMSNorm -> Q/K/V projections -> RoPE(Q, K) at the
// call's cache positions -> stage this layer's K/V rows into the open append of the cache
// -> attention over committed + this call's rows (causal, GQA: query head h reads KV head
// h / g) -> o_proj -> residual -> RMSNorm -> SwiGLU MLP -> residual; then final RMSNorm and
// the LM head (tied to embed_tokens when tie_word_embeddings).
// Shapes of one call (one segment) with T_past committed rows and T_new tokens:
//   h      [T_new, d]               q [T_new, H_q*d_h]       k, v [T_new, H_kv*d_h]
//   scores per (row i, head h): [T_past + i + 1]  (causal mask extent T_past + T_new)
//   logits [T_new, V] (or [1, V]: the last row only)
// Ownership: the model owns its weights; Forward borrows the caller's KvStorage.
// Thread safety: Forward is const and may run concurrently on different storages.
#ifndef KVCONFORM_REFERENCE_MODEL_LLAMA_H_
#define KVCONFORM_REFERENCE_MODEL_LLAMA_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "reference/base/status.h"
#include "reference/model/kernels.h"
#include "reference/model/kv_storage/kv_storage.h"
#include "reference/model/weights.h"

namespace kvc::model {

// Called after layer `layer` has staged its K and V rows for the whole call interval of
// segment `segment` (the lifecycle hook: the engine records the layer's stage in that
// segment's append transaction). A non-OK status aborts the forward pass.
using LayerStagedHook = std::function<Status(size_t segment, uint64_t layer)>;

// One request's part of a (ragged) batched call: its new tokens, its cache (with exactly
// tokens.size() staged rows) and where its logits go ([n, V] when all_rows, else [1, V]).
struct ForwardSegment {
  std::span<const int64_t> tokens;
  KvStorage* cache = nullptr;
  bool all_rows = false;
  std::vector<float>* logits = nullptr;
};

class LlamaModel {
 public:
  explicit LlamaModel(LlamaWeights w);
  static StatusOr<LlamaModel> Load(const std::string& dir);

  const LlamaConfig& config() const { return w_.config; }
  // LlamaWeights::unused_tensors of the checkpoint it was loaded from.
  const std::vector<std::string>& unused_tensors() const { return w_.unused_tensors; }
  KvShape kv_shape() const { return {w_.config.num_hidden_layers, w_.config.kv_width()}; }

  // Token ids in [0, V) and positions below max_position_embeddings, or
  // MODEL_TOKEN_OUT_OF_RANGE / MODEL_POSITION_OUT_OF_RANGE naming the offending index.
  Status CheckInputs(std::span<const int64_t> tokens, uint64_t t_past) const;

  // Runs `tokens` at positions [T_past, T_past + T_new), T_past = cache.committed_length().
  // Precondition: cache.staged_count() == tokens.size() (the caller opened the append).
  // Writes every layer's K/V rows into the staged interval, calling `hook` after each
  // layer; fills `logits` with [T_new, V] (all_rows) or [1, V] (last row).
  Status Forward(std::span<const int64_t> tokens, KvStorage& cache, ComputeMode mode, bool all_rows,
                 const LayerStagedHook& hook, std::vector<float>* logits) const;
  // A ragged batch: the rows of every segment are concatenated for the projections and the
  // MLP ([sum n_i, d]); attention of each row reads only its own segment's cache. In
  // deterministic mode a row's logits do not depend on what else is in the batch.
  Status ForwardBatch(std::span<const ForwardSegment> segments, ComputeMode mode,
                      const LayerStagedHook& hook) const;

 private:
  LlamaWeights w_;
  std::vector<float> inv_freq_;  // [d_h / 2]
};

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_LLAMA_H_
