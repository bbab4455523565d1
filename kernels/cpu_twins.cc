// CPU twins of the CUDA kernels (see cpu_twins.h): validation plus plain reference loops.
#include "kernels/cpu_twins.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "reference/base/checked_math.h"

namespace kvc::kernels {
namespace {

std::string Where(const char* kernel, const std::string& what) {
  return std::string(kernel) + ": " + what;
}

// Product of non-negative dimensions, or nullopt on a negative factor or uint64 overflow.
std::optional<uint64_t> Elems(std::initializer_list<int64_t> dims) {
  uint64_t acc = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto m = CheckedMul(acc, static_cast<uint64_t>(d));
    if (!m) return std::nullopt;
    acc = *m;
  }
  return acc;
}

// Keeps element counts addressable with int64 offsets (what the kernels use).
Status CheckCount(const char* kernel, const char* what, std::initializer_list<int64_t> dims) {
  auto n = Elems(dims);
  if (!n || *n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 4)) {
    return OutOfRange(Where(kernel, std::string(what) + " element count overflows int64"));
  }
  return Status::Ok();
}

}  // namespace

// IEEE 754 binary16 by bit manipulation, round to nearest even: the same bits as a compiler's
// float -> _Float16 conversion (libgcc __truncsfhf2 and __extendhfsf2, NaN payloads included;
// cpu_twins_test.cc compares them where the compiler has _Float16). Written out because not
// every supported compiler has _Float16 on x86-64 (Clang 14 does not).
uint16_t FloatToHalfBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u)  // NaN: quiet, the payload's top bits kept
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (or inf): inf
  if (a >= 0x38800000u) {  // a normal half: re-bias the exponent (127 -> 15), round 13 bits off
    const uint32_t m = a - 0x38000000u;
    return static_cast<uint16_t>(sign | ((m + 0xfffu + ((m >> 13) & 1u)) >> 13));
  }
  if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // below 2^-25 (or zero): zero
  // A subnormal half (it may round up to the smallest normal, 0x0400): units of 2^-24.
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - (a >> 23);  // 14..24
  uint32_t h = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}
float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1fu, mant = bits & 0x3ffu;
  uint32_t u;
  if (exp == 0x1fu) {
    u = sign | 0x7f800000u | (mant << 13) | (mant ? 0x400000u : 0u);  // inf, or NaN made quiet
  } else if (exp != 0) {
    u = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    u = sign;
  } else {  // subnormal: mant * 2^-24, normalized
    int e = 113;  // the exponent field of 2^-14, lowered once per leading zero
    uint32_t m = mant;
    while (!(m & 0x400u)) {
      m <<= 1;
      --e;
    }
    u = sign | (static_cast<uint32_t>(e) << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t FloatToBf16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
float Bf16BitsToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
float RoundToDtype(float f, KvDtype d) {
  switch (d) {
    case KvDtype::kF16:
      return HalfBitsToFloat(FloatToHalfBits(f));
    case KvDtype::kBF16:
      return Bf16BitsToFloat(FloatToBf16Bits(f));
    default:
      return f;
  }
}
float LoadKv(const void* base, KvDtype d, int64_t i) {
  switch (d) {
    case KvDtype::kF16:
      return HalfBitsToFloat(static_cast<const uint16_t*>(base)[i]);
    case KvDtype::kBF16:
      return Bf16BitsToFloat(static_cast<const uint16_t*>(base)[i]);
    default:
      return static_cast<const float*>(base)[i];
  }
}
void StoreKv(void* base, KvDtype d, int64_t i, float v) {
  switch (d) {
    case KvDtype::kF16:
      static_cast<uint16_t*>(base)[i] = FloatToHalfBits(v);
      break;
    case KvDtype::kBF16:
      static_cast<uint16_t*>(base)[i] = FloatToBf16Bits(v);
      break;
    default:
      static_cast<float*>(base)[i] = v;
      break;
  }
}

Status ValidateLayout(const KvLayout& l) {
  const char* k = "kv layout";
  if (l.dtype != KvDtype::kF32 && l.dtype != KvDtype::kF16 && l.dtype != KvDtype::kBF16) {
    return InvalidArgument(Where(k, "dtype must be f32, f16 or bf16"));
  }
  if (l.batch <= 0 || l.num_kv_heads <= 0 || l.head_dim <= 0) {
    return InvalidArgument(Where(k, "batch, num_kv_heads and head_dim must be > 0"));
  }
  if (l.head_dim > kAttnMaxHeadDim) {
    return InvalidArgument(Where(k, "head_dim must be <= " + std::to_string(kAttnMaxHeadDim)));
  }
  if (l.block_size < 0) return InvalidArgument(Where(k, "block_size must be >= 0"));
  if (!IsPaged(l)) {
    if (l.capacity <= 0) return InvalidArgument(Where(k, "contiguous capacity must be > 0"));
    return CheckCount(k, "storage", {l.batch, l.num_kv_heads, l.capacity, l.head_dim});
  }
  if (l.num_blocks <= 0 || l.max_blocks_per_seq <= 0) {
    return InvalidArgument(Where(k, "paged num_blocks and max_blocks_per_seq must be > 0"));
  }
  if (static_cast<int64_t>(l.block_size) * l.max_blocks_per_seq >
      std::numeric_limits<int32_t>::max()) {
    return OutOfRange(Where(k, "block_size * max_blocks_per_seq overflows int32 positions"));
  }
  KVC_RETURN_IF_ERROR(CheckCount(k, "block table", {l.batch, l.max_blocks_per_seq}));
  return CheckCount(k, "storage", {l.num_blocks, l.num_kv_heads, l.block_size, l.head_dim});
}

Status ValidateAttention(const AttentionParams& p) {
  const char* k = "attention";
  KVC_RETURN_IF_ERROR(ValidateLayout(p.layout));
  if (!p.k_cache || !p.v_cache || !p.kv_len || !p.q || !p.out) {
    return InvalidArgument(Where(k, "k_cache, v_cache, kv_len, q and out must be non-null"));
  }
  if (IsPaged(p.layout) && !p.block_table) {
    return InvalidArgument(Where(k, "paged layout needs a block_table"));
  }
  if (p.num_q_heads <= 0 || p.num_q_heads % p.layout.num_kv_heads != 0) {
    return InvalidArgument(Where(k, "num_q_heads must be a positive multiple of num_kv_heads"));
  }
  if (p.t_q <= 0) return InvalidArgument(Where(k, "t_q must be > 0"));
  if (p.max_kv_len < p.t_q || p.max_kv_len > MaxTokensPerSeq(p.layout)) {
    return OutOfRange(Where(k, "max_kv_len must be in [t_q, tokens addressable per sequence]"));
  }
  if (!(p.scale > 0.0f) || !std::isfinite(p.scale)) {
    return InvalidArgument(Where(k, "scale must be finite and > 0"));
  }
  if (p.split_size < 0) return InvalidArgument(Where(k, "split_size must be >= 0"));
  if (NumSplits(p.max_kv_len, p.split_size) > 1 && !p.workspace) {
    return InvalidArgument(Where(k, "split-K needs a workspace of AttentionWorkspaceFloats"));
  }
  KVC_RETURN_IF_ERROR(CheckCount(k, "q",
                                 {p.layout.batch, p.num_q_heads, p.t_q, p.layout.head_dim,
                                  NumSplits(p.max_kv_len, p.split_size), 2}));
  // The launch's grid limits (kernel_types.h, AttentionGroupRows), judged here so that the twin
  // refuses exactly the shapes the launcher cannot cover.
  const int64_t group_rows = AttentionGroupRows(p);
  if (group_rows > std::numeric_limits<int32_t>::max()) {
    return OutOfRange(Where(k, "(num_q_heads / num_kv_heads) * t_q = " +
                                   std::to_string(group_rows) + " overflows int32 row indices"));
  }
  if (UseTensorCorePrefill(p)) {
    if (p.num_q_heads > kMaxGridYZ || p.layout.batch > kMaxGridYZ) {
      return OutOfRange(Where(
          k, "tensor-core prefill needs num_q_heads and batch <= " + std::to_string(kMaxGridYZ)));
    }
  } else {
    const int64_t bh = static_cast<int64_t>(p.layout.batch) * p.layout.num_kv_heads;
    if (bh > kMaxGridYZ || AttentionRowTiles(p) > kMaxGridYZ) {
      return OutOfRange(Where(k, "batch * num_kv_heads = " + std::to_string(bh) +
                                     " and row tiles = " + std::to_string(AttentionRowTiles(p)) +
                                     " must each be <= " + std::to_string(kMaxGridYZ)));
    }
  }
  const int64_t total_rows = static_cast<int64_t>(p.layout.batch) * p.num_q_heads * p.t_q;
  if (NumSplits(p.max_kv_len, p.split_size) > 1 &&
      total_rows > std::numeric_limits<int32_t>::max()) {
    return OutOfRange(Where(k,
                            "split-K needs batch * num_q_heads * t_q <= INT32_MAX (one combine "
                            "block per query row), got " +
                                std::to_string(total_rows)));
  }
  return Status::Ok();
}

Status ValidateAppend(const KvAppendParams& p) {
  const char* k = "kv append";
  KVC_RETURN_IF_ERROR(ValidateLayout(p.layout));
  if (!p.k_cache || !p.v_cache || !p.base_len || !p.visible_len || !p.k_new || !p.v_new ||
      !p.error_flag) {
    return InvalidArgument(
        Where(k, "caches, base_len, visible_len, k_new, v_new, error_flag must be set"));
  }
  if (IsPaged(p.layout) && !p.block_table) {
    return InvalidArgument(Where(k, "paged layout needs the transaction's block_table"));
  }
  if (p.t_new <= 0 || p.t_new > MaxTokensPerSeq(p.layout)) {
    return OutOfRange(Where(k, "t_new must be in [1, tokens addressable per sequence]"));
  }
  return CheckCount(k, "k_new",
                    {p.layout.batch, p.layout.num_kv_heads, p.t_new, p.layout.head_dim});
}

Status ValidatePublish(const KvPublishParams& p) {
  const char* k = "kv publish";
  KVC_RETURN_IF_ERROR(ValidateLayout(p.layout));
  if (!p.visible_len || !p.base_len || !p.error_flag || !p.published) {
    return InvalidArgument(Where(k, "visible_len, base_len, error_flag, published must be set"));
  }
  if (IsPaged(p.layout) && (!p.staged_table || !p.visible_table)) {
    return InvalidArgument(Where(k, "paged layout needs staged_table and visible_table"));
  }
  if (p.t_new <= 0 || p.t_new > MaxTokensPerSeq(p.layout)) {
    return OutOfRange(Where(k, "t_new must be in [1, tokens addressable per sequence]"));
  }
  return Status::Ok();
}

Status ValidateRmsNorm(const RmsNormParams& p) {
  if (!p.x || !p.weight || !p.y) return InvalidArgument("rmsnorm: x, weight, y must be set");
  if (p.rows <= 0 || p.dim <= 0) return InvalidArgument("rmsnorm: rows and dim must be > 0");
  if (!(p.eps >= 0.0f)) return InvalidArgument("rmsnorm: eps must be >= 0");
  return CheckCount("rmsnorm", "x", {p.rows, p.dim});
}

Status ValidateRope(const RopeParams& p) {
  if (!p.q || !p.positions) return InvalidArgument("rope: q and positions must be set");
  if (p.batch <= 0 || p.num_q_heads <= 0 || p.t <= 0 || p.head_dim <= 0 ||
      (p.k && p.num_kv_heads <= 0)) {
    return InvalidArgument("rope: batch, heads, t and head_dim must be > 0");
  }
  if (p.head_dim % 2 != 0) return InvalidArgument("rope: head_dim must be even (rotate_half)");
  if (!(p.theta > 1.0f) || !std::isfinite(p.theta)) {
    return InvalidArgument("rope: theta must be finite and > 1");
  }
  // The kernel's rows: q's heads, and k's when k is set (num_kv_heads is unused without k).
  const int64_t heads = int64_t{p.num_q_heads} + (p.k ? p.num_kv_heads : 0);
  return CheckCount("rope", p.k ? "q and k" : "q", {p.batch, heads, p.t, p.head_dim});
}

Status ValidateSwiGlu(const SwiGluParams& p) {
  if (!p.gate || !p.up || !p.out) return InvalidArgument("swiglu: gate, up, out must be set");
  if (p.n <= 0) return InvalidArgument("swiglu: n must be > 0");
  return Status::Ok();
}

Status ValidateMatmul(const MatmulParams& p) {
  if (p.dtype != KvDtype::kF32 && p.dtype != KvDtype::kBF16) {
    return InvalidArgument("matmul: dtype must be f32 or bf16");
  }
  if (!p.x || !p.w || !p.y) return InvalidArgument("matmul: x, w, y must be set");
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return InvalidArgument("matmul: m, n, k must be > 0");
  KVC_RETURN_IF_ERROR(CheckCount("matmul", "x", {p.m, p.k}));
  KVC_RETURN_IF_ERROR(CheckCount("matmul", "w", {p.n, p.k}));
  return CheckCount("matmul", "y", {p.m, p.n});
}

Status RmsNormCpu(const RmsNormParams& p) {
  KVC_RETURN_IF_ERROR(ValidateRmsNorm(p));
  for (int64_t r = 0; r < p.rows; ++r) {
    const float* x = p.x + r * p.dim;
    float ss = 0.0f;
    for (int32_t i = 0; i < p.dim; ++i) ss += x[i] * x[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(p.dim) + p.eps);
    float* y = p.y + r * p.dim;
    for (int32_t i = 0; i < p.dim; ++i) y[i] = x[i] * inv * p.weight[i];
  }
  return Status::Ok();
}

Status RopeCpu(const RopeParams& p) {
  KVC_RETURN_IF_ERROR(ValidateRope(p));
  const int32_t half = p.head_dim / 2;
  auto rotate = [&](float* base, int32_t heads) {
    for (int32_t b = 0; b < p.batch; ++b) {
      for (int32_t h = 0; h < heads; ++h) {
        for (int32_t t = 0; t < p.t; ++t) {
          float* row = base + ((static_cast<int64_t>(b) * heads + h) * p.t + t) * p.head_dim;
          const float pos = static_cast<float>(p.positions[static_cast<int64_t>(b) * p.t + t]);
          for (int32_t i = 0; i < half; ++i) {
            const float angle =
                pos * (p.inv_freq ? p.inv_freq[i] : RopeInvFreq(i, p.head_dim, p.theta));
            const float c = std::cos(angle);
            const float s = std::sin(angle);
            const float x0 = row[i];
            const float x1 = row[i + half];
            row[i] = x0 * c - x1 * s;
            row[i + half] = x1 * c + x0 * s;
          }
        }
      }
    }
  };
  rotate(p.q, p.num_q_heads);
  if (p.k) rotate(p.k, p.num_kv_heads);
  return Status::Ok();
}

Status SwiGluCpu(const SwiGluParams& p) {
  KVC_RETURN_IF_ERROR(ValidateSwiGlu(p));
  for (int64_t i = 0; i < p.n; ++i) {
    const float g = p.gate[i];
    p.out[i] = g / (1.0f + std::exp(-g)) * p.up[i];
  }
  return Status::Ok();
}

Status MatmulCpu(const MatmulParams& p) {
  KVC_RETURN_IF_ERROR(ValidateMatmul(p));
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < p.k; ++kk) {
        acc += LoadKv(p.x, p.dtype, i * p.k + kk) * LoadKv(p.w, p.dtype, j * p.k + kk);
      }
      StoreKv(p.y, p.dtype, i * p.n + j, acc);
    }
  }
  return Status::Ok();
}

Status KvAppendCpu(const KvAppendParams& p) {
  KVC_RETURN_IF_ERROR(ValidateAppend(p));
  const KvLayout& l = p.layout;
  // Check every sequence and destination first, so a failing transaction writes nothing.
  for (int32_t b = 0; b < l.batch; ++b) {
    if (p.base_len[b] != p.visible_len[b]) {
      *p.error_flag = 1;
      return FailedPrecondition("kv append: sequence " + std::to_string(b) + " base_len " +
                                std::to_string(p.base_len[b]) + " differs from the published " +
                                "visible_len " + std::to_string(p.visible_len[b]) +
                                " (stale transaction; its rows would overwrite published rows)");
    }
    for (int32_t i = 0; i < p.t_new; ++i) {
      const int64_t t = static_cast<int64_t>(p.base_len[b]) + i;
      if (p.base_len[b] < 0 || t > std::numeric_limits<int32_t>::max() ||
          KvRowOffset(l, p.block_table, b, 0, static_cast<int32_t>(t)) < 0) {
        *p.error_flag = 1;
        return OutOfRange("kv append: sequence " + std::to_string(b) + " position " +
                          std::to_string(t) + " is not addressable (capacity or block table)");
      }
    }
  }
  for (int32_t b = 0; b < l.batch; ++b) {
    for (int32_t h = 0; h < l.num_kv_heads; ++h) {
      for (int32_t i = 0; i < p.t_new; ++i) {
        const int64_t dst = KvRowOffset(l, p.block_table, b, h, p.base_len[b] + i);
        const int64_t src =
            ((static_cast<int64_t>(b) * l.num_kv_heads + h) * p.t_new + i) * l.head_dim;
        for (int32_t d = 0; d < l.head_dim; ++d) {
          StoreKv(p.k_cache, l.dtype, dst + d, p.k_new[src + d]);
          StoreKv(p.v_cache, l.dtype, dst + d, p.v_new[src + d]);
        }
      }
    }
  }
  return Status::Ok();
}

Status KvPublishCpu(const KvPublishParams& p) {
  KVC_RETURN_IF_ERROR(ValidatePublish(p));
  const KvLayout& l = p.layout;
  for (int32_t b = 0; b < l.batch; ++b) {
    const int64_t new_len = static_cast<int64_t>(p.base_len[b]) + p.t_new;
    if (*p.error_flag != 0 || p.base_len[b] < 0 || p.visible_len[b] != p.base_len[b] ||
        new_len > MaxTokensPerSeq(l)) {
      p.published[b] = 0;
      continue;
    }
    if (IsPaged(l)) {
      const int32_t blocks = BlocksForTokens(l, static_cast<int32_t>(new_len));
      for (int32_t j = 0; j < blocks; ++j) {
        const int64_t idx = static_cast<int64_t>(b) * l.max_blocks_per_seq + j;
        p.visible_table[idx] = p.staged_table[idx];
      }
    }
    p.visible_len[b] = static_cast<int32_t>(new_len);
    p.published[b] = 1;
  }
  return Status::Ok();
}

Status AttentionCpu(const AttentionParams& p) {
  KVC_RETURN_IF_ERROR(ValidateAttention(p));
  const KvLayout& l = p.layout;
  const int32_t d_h = l.head_dim;
  const int32_t splits = NumSplits(p.max_kv_len, p.split_size);
  for (int32_t b = 0; b < l.batch; ++b) {
    if (p.kv_len[b] < p.t_q || p.kv_len[b] > p.max_kv_len) {
      return OutOfRange("attention: kv_len[" + std::to_string(b) +
                        "] = " + std::to_string(p.kv_len[b]) + " outside [t_q, max_kv_len]");
    }
    for (int32_t t = 0; t < p.kv_len[b]; ++t) {
      if (KvRowOffset(l, p.block_table, b, 0, t) < 0) {
        return OutOfRange("attention: sequence " + std::to_string(b) + " position " +
                          std::to_string(t) + " is not addressable (block table)");
      }
    }
  }
  std::vector<float> q(d_h), acc(d_h), scores;
  for (int32_t b = 0; b < l.batch; ++b) {
    for (int32_t hq = 0; hq < p.num_q_heads; ++hq) {
      const int32_t hkv = KvHeadOfQueryHead(hq, p.num_q_heads, l.num_kv_heads);
      for (int32_t qi = 0; qi < p.t_q; ++qi) {
        const int64_t row = (static_cast<int64_t>(b) * p.num_q_heads + hq) * p.t_q + qi;
        for (int32_t d = 0; d < d_h; ++d) q[d] = p.q[row * d_h + d] * p.scale;
        const int32_t limit = CausalKeyLimit(p.kv_len[b], p.t_q, qi);
        float* out = p.out + row * d_h;
        // Partials (m, l, acc) of each split, in split order.
        float big_m = -std::numeric_limits<float>::infinity();
        std::vector<float> ms(splits), ls(splits), accs(static_cast<size_t>(splits) * d_h);
        for (int32_t s = 0; s < splits; ++s) {
          int32_t t0, t1;
          SplitKeyRange(s, p.split_size, limit, &t0, &t1);
          float m = -std::numeric_limits<float>::infinity();
          scores.assign(std::max(0, t1 - t0), 0.0f);
          for (int32_t t = t0; t < t1; ++t) {
            const int64_t off = KvRowOffset(l, p.block_table, b, hkv, t);
            float dot = 0.0f;
            for (int32_t d = 0; d < d_h; ++d) dot += q[d] * LoadKv(p.k_cache, l.dtype, off + d);
            scores[t - t0] = dot;
            m = std::max(m, dot);
          }
          float sum = 0.0f;
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int32_t t = t0; t < t1; ++t) {
            const float w = std::exp(scores[t - t0] - m);
            sum += w;
            const int64_t off = KvRowOffset(l, p.block_table, b, hkv, t);
            for (int32_t d = 0; d < d_h; ++d) acc[d] += w * LoadKv(p.v_cache, l.dtype, off + d);
          }
          ms[s] = m;
          ls[s] = sum;
          std::copy(acc.begin(), acc.end(), accs.begin() + static_cast<int64_t>(s) * d_h);
          if (sum > 0.0f) big_m = std::max(big_m, m);
          if (splits > 1) {
            float* ws = p.workspace + (row * splits + s) * (d_h + 2);
            std::copy(acc.begin(), acc.end(), ws);
            ws[d_h] = m;
            ws[d_h + 1] = sum;
          }
        }
        if (splits == 1) {
          for (int32_t d = 0; d < d_h; ++d) out[d] = ls[0] > 0.0f ? accs[d] / ls[0] : 0.0f;
          continue;
        }
        // Combine in split order 0..n-1 (the device combine uses the same order and formula).
        float denom = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int32_t s = 0; s < splits; ++s) {
          if (!(ls[s] > 0.0f)) continue;
          const float w = std::exp(ms[s] - big_m);
          denom += w * ls[s];
          for (int32_t d = 0; d < d_h; ++d) acc[d] += w * accs[static_cast<int64_t>(s) * d_h + d];
        }
        for (int32_t d = 0; d < d_h; ++d) out[d] = denom > 0.0f ? acc[d] / denom : 0.0f;
      }
    }
  }
  return Status::Ok();
}

}  // namespace kvc::kernels
