// The Llama-family forward pass over a staged K/V append.
#include "reference/model/llama.h"

#include <algorithm>
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
  const ForwardSegment seg{tokens, &cache, all_rows, logits};
  return ForwardBatch(std::span<const ForwardSegment>(&seg, 1), mode, hook);
}

Status LlamaModel::ForwardBatch(std::span<const ForwardSegment> segs, ComputeMode mode,
                                const LayerStagedHook& hook) const {
  const LlamaConfig& c = w_.config;
  if (segs.empty()) return InvalidArgument("forward: no segments");
  // Row r of the batch belongs to segment seg_of[r] at absolute position pos_of[r].
  std::vector<size_t> seg_of, first_row(segs.size());
  std::vector<uint64_t> pos_of;
  for (size_t s = 0; s < segs.size(); ++s) {
    const ForwardSegment& g = segs[s];
    if (g.tokens.empty() || g.cache == nullptr || g.logits == nullptr)
      return InvalidArgument("forward: segment " + std::to_string(s) +
                             " has no tokens, cache or output");
    if (g.cache->staged_count() != g.tokens.size())
      return FailedPrecondition("forward: the cache must have exactly T_new staged rows");
    const uint64_t t_past = g.cache->committed_length();
    KVC_RETURN_IF_ERROR(CheckInputs(g.tokens, t_past));
    first_row[s] = seg_of.size();
    for (size_t i = 0; i < g.tokens.size(); ++i) {
      seg_of.push_back(s);
      pos_of.push_back(t_past + i);
    }
  }
  const size_t T = seg_of.size();
  const size_t d = c.hidden_size, F = c.intermediate_size, dh = c.head_dim, half = dh / 2;
  const size_t Hq = c.num_attention_heads, g = c.group_size();
  const size_t qw = c.q_width(), kvw = c.kv_width();
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));  // HF: head_dim ** -0.5

  // cos/sin [T, half] at each row's position, as HF: angle = float(pos) * inv_freq.
  std::vector<float> cosv(T * half), sinv(T * half);
  uint64_t max_keys = 0;
  for (size_t r = 0; r < T; ++r) {
    const float pos = static_cast<float>(pos_of[r]);
    max_keys = std::max<uint64_t>(max_keys, pos_of[r] + 1);
    for (size_t j = 0; j < half; ++j) {
      const float angle = pos * inv_freq_[j];
      cosv[r * half + j] = static_cast<float>(std::cos(static_cast<double>(angle)));
      sinv[r * half + j] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }

  std::vector<float> h(T * d);  // [T, d] residual stream
  for (size_t r = 0; r < T; ++r) {
    const int64_t tok = segs[seg_of[r]].tokens[r - first_row[seg_of[r]]];
    std::memcpy(&h[r * d], &w_.embed_tokens[static_cast<size_t>(tok) * d], d * sizeof(float));
  }

  std::vector<float> x(T * d), q(T * qw), k(T * kvw), v(T * kvw), attn(T * qw), o(T * d);
  std::vector<float> gate(T * F), up(T * F), scores(max_keys);
  for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
    const LayerWeights& lw = w_.layers[l];
    RmsNorm(h.data(), lw.input_norm.data(), x.data(), T, d, eps);
    Linear(x.data(), lw.q_proj.data(), q.data(), T, qw, d, mode);   // [T, H_q*d_h]
    Linear(x.data(), lw.k_proj.data(), k.data(), T, kvw, d, mode);  // [T, H_kv*d_h]
    Linear(x.data(), lw.v_proj.data(), v.data(), T, kvw, d, mode);  // [T, H_kv*d_h]
    for (size_t r = 0; r < T; ++r) {
      for (size_t hq = 0; hq < Hq; ++hq)
        ApplyRope(&q[r * qw + hq * dh], &cosv[r * half], &sinv[r * half], half);
      for (size_t hk = 0; hk < kvw / dh; ++hk)
        ApplyRope(&k[r * kvw + hk * dh], &cosv[r * half], &sinv[r * half], half);
      // Stored row: post-RoPE K, V (this article's cache ABI), staged, not yet committed.
      segs[seg_of[r]].cache->WriteRow(l, pos_of[r], &k[r * kvw], &v[r * kvw]);
    }
    if (hook) {
      for (size_t s = 0; s < segs.size(); ++s) KVC_RETURN_IF_ERROR(hook(s, l));
    }
    // Attention: row r (position p) sees keys [0, p] of its own segment; reductions in key
    // order.
    for (size_t r = 0; r < T; ++r) {
      const KvStorage& cache = *segs[seg_of[r]].cache;
      const size_t n_keys = pos_of[r] + 1;
      for (size_t hq = 0; hq < Hq; ++hq) {
        const size_t hk = hq / g;
        const float* qi = &q[r * qw + hq * dh];
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
        float* out = &attn[r * qw + hq * dh];
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
  // Final norm and LM head over the rows whose logits are wanted, gathered: [rows, d].
  std::vector<size_t> want;
  for (size_t s = 0; s < segs.size(); ++s) {
    const size_t n = segs[s].tokens.size();
    for (size_t i = segs[s].all_rows ? 0 : n - 1; i < n; ++i) want.push_back(first_row[s] + i);
  }
  std::vector<float> sel(want.size() * d), all_logits(want.size() * c.vocab_size);
  for (size_t i = 0; i < want.size(); ++i)
    std::memcpy(&sel[i * d], &h[want[i] * d], d * sizeof(float));
  RmsNorm(sel.data(), w_.final_norm.data(), sel.data(), want.size(), d, eps);
  Linear(sel.data(), w_.head().data(), all_logits.data(), want.size(), c.vocab_size, d, mode);
  size_t at = 0;
  for (size_t s = 0; s < segs.size(); ++s) {
    const size_t rows = segs[s].all_rows ? segs[s].tokens.size() : 1;
    segs[s].logits->assign(all_logits.begin() + at * c.vocab_size,
                           all_logits.begin() + (at + rows) * c.vocab_size);
    at += rows;
  }
  return Status::Ok();
}

}  // namespace kvc::model
