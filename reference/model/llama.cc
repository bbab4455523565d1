// The Llama-family forward pass over a staged K/V append.
#include "reference/model/llama.h"

#include <cmath>
#include <cstring>

namespace kvc::model {

LlamaModel::LlamaModel(LlamaWeights w)
    : w_(std::move(w)), inv_freq_(RopeInverseFrequencies(w_.config)) {}

StatusOr<LlamaModel> LlamaModel::Load(const std::string& dir) {
  KVC_ASSIGN_OR_RETURN(LlamaWeights w, LoadLlamaCheckpoint(dir));
  return LlamaModel(std::move(w));
}

Status LlamaModel::CheckInputs(std::span<const int64_t> tokens, uint64_t t_past) const {
  const LlamaConfig& c = w_.config;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<uint64_t>(tokens[i]) >= c.vocab_size) {
      return ViolationStatus(ErrorCode::MODEL_TOKEN_OUT_OF_RANGE,
                             "token ids[" + std::to_string(i) + "] = " + std::to_string(tokens[i]) +
                                 " is outside [0, vocab_size=" + std::to_string(c.vocab_size) +
                                 ")");
    }
  }
  if (t_past + tokens.size() > c.max_position_embeddings) {
    return ViolationStatus(
        ErrorCode::MODEL_POSITION_OUT_OF_RANGE,
        "positions [" + std::to_string(t_past) + ", " + std::to_string(t_past + tokens.size()) +
            ") reach past max_position_embeddings=" + std::to_string(c.max_position_embeddings));
  }
  return Status::Ok();
}

namespace {

// In-place HF rotate_half RoPE on one head row x[d_h] at absolute position `pos`:
// x[i] <- x[i]*cos - x[i+half]*sin, x[i+half] <- x[i+half]*cos + x[i]*sin.
void ApplyRope(float* x, const float* cosv, const float* sinv, size_t half) {
  for (size_t i = 0; i < half; ++i) {
    const float a = x[i], b = x[i + half];
    x[i] = a * cosv[i] - b * sinv[i];
    x[i + half] = b * cosv[i] + a * sinv[i];
  }
}

}  // namespace

Status LlamaModel::Forward(std::span<const int64_t> tokens, KvStorage& cache, ComputeMode mode,
                           bool all_rows, const LayerStagedHook& hook,
                           std::vector<float>* logits) const {
  const LlamaConfig& c = w_.config;
  const uint64_t t_past = cache.committed_length();
  const size_t T = tokens.size();
  if (T == 0) return InvalidArgument("forward: no tokens");
  if (cache.staged_count() != T)
    return FailedPrecondition("forward: the cache must have exactly T_new staged rows");
  KVC_RETURN_IF_ERROR(CheckInputs(tokens, t_past));
  const size_t d = c.hidden_size, F = c.intermediate_size, dh = c.head_dim, half = dh / 2;
  const size_t Hq = c.num_attention_heads, g = c.group_size();
  const size_t qw = c.q_width(), kvw = c.kv_width();
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));  // HF: head_dim ** -0.5

  // cos/sin [T, half] for positions t_past + i, as HF: angle = float(pos) * inv_freq.
  std::vector<float> cosv(T * half), sinv(T * half);
  for (size_t i = 0; i < T; ++i) {
    const float pos = static_cast<float>(t_past + i);
    for (size_t j = 0; j < half; ++j) {
      const float angle = pos * inv_freq_[j];
      cosv[i * half + j] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sinv[i * half + j] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }

  std::vector<float> h(T * d);  // [T, d] residual stream
  for (size_t i = 0; i < T; ++i)
    std::memcpy(&h[i * d], &w_.embed_tokens[static_cast<size_t>(tokens[i]) * d], d * sizeof(float));

  std::vector<float> x(T * d), q(T * qw), k(T * kvw), v(T * kvw), attn(T * qw), o(T * d);
  std::vector<float> gate(T * F), up(T * F), scores(t_past + T);
  for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    RmsNorm(h.data(), lw.input_norm.data(), x.data(), T, d, eps);
    Linear(x.data(), lw.q_proj.data(), q.data(), T, qw, d, mode);   // [T, H_q*d_h]
    Linear(x.data(), lw.k_proj.data(), k.data(), T, kvw, d, mode);  // [T, H_kv*d_h]
    Linear(x.data(), lw.v_proj.data(), v.data(), T, kvw, d, mode);  // [T, H_kv*d_h]
    for (size_t i = 0; i < T; ++i) {
      for (size_t hq = 0; hq < Hq; ++hq)
        ApplyRope(&q[i * qw + hq * dh], &cosv[i * half], &sinv[i * half], half);
      for (size_t hk = 0; hk < kvw / dh; ++hk)
        ApplyRope(&k[i * kvw + hk * dh], &cosv[i * half], &sinv[i * half], half);
      // Stored row: post-RoPE K, V (this article's cache ABI), staged, not yet committed.
      cache.WriteRow(l, t_past + i, &k[i * kvw], &v[i * kvw]);
    }
    if (hook) KVC_RETURN_IF_ERROR(hook(l));
    // Attention: row i (position t_past + i) sees keys [0, t_past + i]; reductions in key order.
    for (size_t i = 0; i < T; ++i) {
      const size_t n_keys = t_past + i + 1;
      for (size_t hq = 0; hq < Hq; ++hq) {
        const size_t hk = hq / g;
        const float* qi = &q[i * qw + hq * dh];
        float mx = -INFINITY;
        for (size_t j = 0; j < n_keys; ++j) {
          scores[j] = Dot(qi, cache.KeyRow(l, j) + hk * dh, dh) * scale;
          if (scores[j] > mx) mx = scores[j];
        }
        float sum = 0;
        for (size_t j = 0; j < n_keys; ++j) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
        float* out = &attn[i * qw + hq * dh];
        std::fill(out, out + dh, 0.0f);
        for (size_t j = 0; j < n_keys; ++j) {
          const float p = scores[j] / sum;
          const float* vj = cache.ValueRow(l, j) + hk * dh;
          for (size_t e = 0; e < dh; ++e) out[e] += p * vj[e];
        }
      }
    }
    Linear(attn.data(), lw.o_proj.data(), o.data(), T, d, qw, mode);  // [T, d]
    for (size_t i = 0; i < T * d; ++i) h[i] += o[i];
    RmsNorm(h.data(), lw.post_norm.data(), x.data(), T, d, eps);
    Linear(x.data(), lw.gate_proj.data(), gate.data(), T, F, d, mode);  // [T, F]
    Linear(x.data(), lw.up_proj.data(), up.data(), T, F, d, mode);      // [T, F]
    for (size_t i = 0; i < T * F; ++i) {
      const float a = gate[i];
      gate[i] = a / (1.0f + std::exp(-a)) * up[i];  // SiLU(gate) * up
    }
    Linear(gate.data(), lw.down_proj.data(), o.data(), T, d, F, mode);  // [T, d]
    for (size_t i = 0; i < T * d; ++i) h[i] += o[i];
  }
  const size_t first = all_rows ? 0 : T - 1, rows = T - first;
  RmsNorm(&h[first * d], w_.final_norm.data(), x.data(), rows, d, eps);
  logits->assign(rows * c.vocab_size, 0.0f);
  Linear(x.data(), w_.head().data(), logits->data(), rows, c.vocab_size, d, mode);  // [rows, V]
  return Status::Ok();
}

}  // namespace kvc::model
