// The CUDA kernels: RMSNorm, RoPE, SwiGLU, KV append/publish, and one tiled attention kernel
// (decode, split-K decode and causal chunked prefill) with its split combine.
// Template instantiations are limited to the three K/V storage dtypes of append and attention.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda_launch_internal.h"

namespace kvc::kernels::internal {
namespace {

// Storage access: fp32 in registers, the storage dtype in memory (round to nearest even).
template <typename T>
struct Kv;
template <>
struct Kv<float> {
  static __device__ __forceinline__ float Load(const void* p, int64_t i) {
    return static_cast<const float*>(p)[i];
  }
  static __device__ __forceinline__ void Store(void* p, int64_t i, float v) {
    static_cast<float*>(p)[i] = v;
  }
};
template <>
struct Kv<__half> {
  static __device__ __forceinline__ float Load(const void* p, int64_t i) {
    return __half2float(static_cast<const __half*>(p)[i]);
  }
  static __device__ __forceinline__ void Store(void* p, int64_t i, float v) {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  }
};
template <>
struct Kv<__nv_bfloat16> {
  static __device__ __forceinline__ float Load(const void* p, int64_t i) {
    return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  }
  static __device__ __forceinline__ void Store(void* p, int64_t i, float v) {
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
  }
};

constexpr int kRmsThreads = 256;

// One block per row; fp32 sum of squares reduced through warp shuffles and shared memory.
__global__ void __launch_bounds__(kRmsThreads) RmsNormKernel(RmsNormParams p) {
  const int64_t row = blockIdx.x;
  const float* x = p.x + row * p.dim;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < p.dim; i += blockDim.x) ss += x[i] * x[i];
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  __shared__ float warp_sums[kRmsThreads / 32];
  __shared__ float inv_s;
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kRmsThreads / 32; ++w) total += warp_sums[w];
    inv_s = 1.0f / sqrtf(total / static_cast<float>(p.dim) + p.eps);
  }
  __syncthreads();
  const float inv = inv_s;
  float* y = p.y + row * p.dim;
  for (int i = threadIdx.x; i < p.dim; i += blockDim.x) y[i] = x[i] * inv * p.weight[i];
}

// One thread per (row, i < d_h/2) pair; rows of Q first, then rows of K.
__global__ void RopeKernel(RopeParams p, int64_t q_rows, int64_t total_pairs) {
  const int32_t half = p.head_dim / 2;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total_pairs;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t row = e / half;
    const int32_t i = static_cast<int32_t>(e % half);
    float* base = p.q;
    int32_t heads = p.num_q_heads;
    if (row >= q_rows) {
      row -= q_rows;
      base = p.k;
      heads = p.num_kv_heads;
    }
    const int64_t t = row % p.t;
    const int64_t b = row / (static_cast<int64_t>(heads) * p.t);
    const float pos = static_cast<float>(p.positions[b * p.t + t]);
    const float angle = pos * (p.inv_freq ? p.inv_freq[i] : RopeInvFreq(i, p.head_dim, p.theta));
    float s, c;
    sincosf(angle, &s, &c);
    float* r = base + row * p.head_dim;
    const float x0 = r[i];
    const float x1 = r[i + half];
    r[i] = x0 * c - x1 * s;
    r[i + half] = x1 * c + x0 * s;
  }
}

__global__ void SwiGluKernel(SwiGluParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = p.gate[i];
    p.out[i] = g / (1.0f + expf(-g)) * p.up[i];
  }
}

// One thread per staged element; the destination row comes from the transaction's table.
template <typename T>
__global__ void KvAppendKernel(KvAppendParams p, int64_t total) {
  const KvLayout& l = p.layout;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t d = static_cast<int32_t>(e % l.head_dim);
    int64_t rest = e / l.head_dim;
    const int32_t i = static_cast<int32_t>(rest % p.t_new);
    rest /= p.t_new;
    const int32_t h = static_cast<int32_t>(rest % l.num_kv_heads);
    const int32_t b = static_cast<int32_t>(rest / l.num_kv_heads);
    const int32_t base = p.base_len[b];
    const int64_t t = static_cast<int64_t>(base) + i;
    const int64_t off = (base < 0 || base != p.visible_len[b] || t > INT32_MAX)
                            ? -1
                            : KvRowOffset(l, p.block_table, b, h, static_cast<int32_t>(t));
    if (off < 0) {
      *p.error_flag = 1;  // every failing thread writes the same value
      continue;
    }
    Kv<T>::Store(p.k_cache, off + d, p.k_new[e]);
    Kv<T>::Store(p.v_cache, off + d, p.v_new[e]);
  }
}

// Vectorized append (head_dim % 4 == 0, fewer than 2^31 vectors): one thread per 4 channels of
// a staged row, 32-bit index arithmetic within a vector index (the grid-stride counter is 64-bit:
// a vector index plus the grid size can exceed INT32_MAX), 16-byte loads of the fp32 rows and one
// 16/8-byte store per buffer. Same rounding (RNE) and the same error-flag rule as KvAppendKernel.
template <typename T>
__device__ __forceinline__ void Store4(void* base, int64_t i, float4 v);
template <>
__device__ __forceinline__ void Store4<float>(void* base, int64_t i, float4 v) {
  *reinterpret_cast<float4*>(static_cast<float*>(base) + i) = v;
}
template <>
__device__ __forceinline__ void Store4<__nv_bfloat16>(void* base, int64_t i, float4 v) {
  const __nv_bfloat162 a = __floats2bfloat162_rn(v.x, v.y);
  const __nv_bfloat162 b = __floats2bfloat162_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<const uint32_t*>(&a);
  u.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(base) + i) = u;
}
template <>
__device__ __forceinline__ void Store4<__half>(void* base, int64_t i, float4 v) {
  const __half2 a = __floats2half2_rn(v.x, v.y);
  const __half2 b = __floats2half2_rn(v.z, v.w);
  uint2 u;
  u.x = *reinterpret_cast<const uint32_t*>(&a);
  u.y = *reinterpret_cast<const uint32_t*>(&b);
  *reinterpret_cast<uint2*>(static_cast<__half*>(base) + i) = u;
}

template <typename T>
__global__ void KvAppendVec4Kernel(KvAppendParams p, int32_t total_vecs) {
  const KvLayout& l = p.layout;
  const int32_t vecs_per_row = l.head_dim / 4;
  for (int64_t e64 = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e64 < total_vecs;
       e64 += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t e = static_cast<int32_t>(e64);  // < total_vecs <= INT32_MAX
    const int32_t row = e / vecs_per_row;
    const int32_t d = (e - row * vecs_per_row) * 4;
    const int32_t bh = row / p.t_new;
    const int32_t i = row - bh * p.t_new;
    const int32_t b = bh / l.num_kv_heads;
    const int32_t h = bh - b * l.num_kv_heads;
    const int32_t base = p.base_len[b];
    const int64_t t = static_cast<int64_t>(base) + i;
    const int64_t off = (base < 0 || base != p.visible_len[b] || t > INT32_MAX)
                            ? -1
                            : KvRowOffset(l, p.block_table, b, h, static_cast<int32_t>(t));
    if (off < 0) {
      *p.error_flag = 1;
      continue;
    }
    const int64_t src = static_cast<int64_t>(row) * l.head_dim + d;
    Store4<T>(p.k_cache, off + d, *reinterpret_cast<const float4*>(p.k_new + src));
    Store4<T>(p.v_cache, off + d, *reinterpret_cast<const float4*>(p.v_new + src));
  }
}

// One thread per sequence: compare-and-publish (see KvPublishParams).
__global__ void KvPublishKernel(KvPublishParams p) {
  const int32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  const KvLayout& l = p.layout;
  if (b >= l.batch) return;
  const int64_t new_len = static_cast<int64_t>(p.base_len[b]) + p.t_new;
  if (*p.error_flag != 0 || p.base_len[b] < 0 || p.visible_len[b] != p.base_len[b] ||
      new_len > MaxTokensPerSeq(l)) {
    p.published[b] = 0;
    return;
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

constexpr int kAttnThreads = 128;
constexpr int kKeyTile = 32;
constexpr int kMaxAcc = kAttnMaxRowElems / kAttnThreads;  // accumulators per thread
constexpr int kWarps = kAttnThreads / 32;

__host__ __device__ inline int64_t AttentionSmemFloats(int32_t rows, int32_t d_h) {
  return static_cast<int64_t>(rows) * d_h + 2LL * kKeyTile * (d_h + 1) +
         static_cast<int64_t>(rows) * kKeyTile + 3LL * rows;
}

// grid = (splits, row tiles, B * H_kv); block = 128 threads. A block owns `rows_per_block`
// query rows of one (b, h_kv) pair and the key range of one split; it streams K/V tiles of 32
// rows through shared memory (fp32, padded rows) with an online softmax per query row.
template <typename T>
__global__ void __launch_bounds__(kAttnThreads)
    AttentionKernel(AttentionParams p, int32_t rows_per_block, int32_t num_splits) {
  extern __shared__ float smem[];
  const KvLayout& l = p.layout;
  const int32_t d_h = l.head_dim;
  const int32_t ks = d_h + 1;
  const int32_t split = blockIdx.x;
  const int32_t b = blockIdx.z / l.num_kv_heads;
  const int32_t h_kv = blockIdx.z % l.num_kv_heads;
  const int32_t g = p.num_q_heads / l.num_kv_heads;
  const int32_t row0 = blockIdx.y * rows_per_block;
  const int32_t rows = min(rows_per_block, g * p.t_q - row0);
  const int tid = threadIdx.x;

  float* q_s = smem;                        // [rows][d_h], pre-scaled
  float* k_s = q_s + rows_per_block * d_h;  // [kKeyTile][d_h + 1]
  float* v_s = k_s + kKeyTile * ks;         // [kKeyTile][d_h + 1]
  float* s_s = v_s + kKeyTile * ks;         // [rows][kKeyTile] scores, then weights
  float* m_s = s_s + rows_per_block * kKeyTile;
  float* l_s = m_s + rows_per_block;
  float* c_s = l_s + rows_per_block;

  int32_t kv_len = p.kv_len[b];
  kv_len = max(0, min(kv_len, p.max_kv_len));
  auto row_qi = [&](int32_t r) { return (row0 + r) / g; };
  auto row_index = [&](int32_t r) {  // flat [B, H_q, t_q] index of block row r
    const int32_t gr = row0 + r;
    const int32_t h_q = h_kv * g + gr % g;
    return (static_cast<int64_t>(b) * p.num_q_heads + h_q) * p.t_q + gr / g;
  };

  for (int32_t e = tid; e < rows * d_h; e += kAttnThreads) {
    const int32_t r = e / d_h;
    q_s[e] = p.q[row_index(r) * d_h + e % d_h] * p.scale;
  }
  for (int32_t r = tid; r < rows; r += kAttnThreads) {
    m_s[r] = -INFINITY;
    l_s[r] = 0.0f;
  }
  float acc[kMaxAcc];
#pragma unroll
  for (int i = 0; i < kMaxAcc; ++i) acc[i] = 0.0f;

  // Keys this block may need: the split's range clipped to the last (widest) row's limit.
  int32_t t_begin, t_end;
  SplitKeyRange(split, p.split_size, CausalKeyLimit(kv_len, p.t_q, row_qi(rows - 1)), &t_begin,
                &t_end);
  __syncthreads();

  const int warp = tid >> 5;
  const int lane = tid & 31;
  for (int32_t t0 = t_begin; t0 < t_end; t0 += kKeyTile) {
    const int32_t n = min(kKeyTile, t_end - t0);
    for (int32_t j = warp; j < n; j += kWarps) {
      const int64_t off = KvRowOffset(l, p.block_table, b, h_kv, t0 + j);
      for (int32_t d = lane; d < d_h; d += 32) {
        k_s[j * ks + d] = off < 0 ? NAN : Kv<T>::Load(p.k_cache, off + d);
        v_s[j * ks + d] = off < 0 ? NAN : Kv<T>::Load(p.v_cache, off + d);
      }
    }
    __syncthreads();
    // Scores: lane = key j, warps stride over rows; K read once per channel for 2 rows.
    {
      const int32_t j = lane;
      for (int32_t r = warp; r < rows; r += 2 * kWarps) {
        const int32_t r2 = r + kWarps;
        const bool two = r2 < rows;
        float a0 = 0.0f, a1 = 0.0f;
        if (j < n) {
          const float* kr = k_s + j * ks;
          const float* q0 = q_s + r * d_h;
          const float* q1 = q_s + (two ? r2 : r) * d_h;
          for (int32_t d = 0; d < d_h; ++d) {
            const float kv = kr[d];
            a0 += q0[d] * kv;
            a1 += q1[d] * kv;
          }
        }
        const int32_t tk = t0 + j;
        s_s[r * kKeyTile + j] =
            (j < n && tk < CausalKeyLimit(kv_len, p.t_q, row_qi(r))) ? a0 : -INFINITY;
        if (two) {
          s_s[r2 * kKeyTile + j] =
              (j < n && tk < CausalKeyLimit(kv_len, p.t_q, row_qi(r2))) ? a1 : -INFINITY;
        }
      }
    }
    __syncthreads();
    // Online softmax bookkeeping, one thread per row.
    for (int32_t r = tid; r < rows; r += kAttnThreads) {
      float* s = s_s + r * kKeyTile;
      float mx = -INFINITY;
      for (int32_t j = 0; j < kKeyTile; ++j) mx = fmaxf(mx, s[j]);
      const float m_old = m_s[r];
      const float m_new = fmaxf(m_old, mx);
      float corr = 1.0f, sum = 0.0f;
      if (m_new == -INFINITY) {
        for (int32_t j = 0; j < kKeyTile; ++j) s[j] = 0.0f;
      } else {
        corr = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
        for (int32_t j = 0; j < kKeyTile; ++j) {
          const float w = s[j] == -INFINITY ? 0.0f : expf(s[j] - m_new);
          s[j] = w;
          sum += w;
        }
      }
      m_s[r] = m_new;
      l_s[r] = l_s[r] * corr + sum;
      c_s[r] = corr;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kMaxAcc; ++i) {
      const int32_t e = tid + i * kAttnThreads;
      if (e < rows * d_h) {
        const int32_t r = e / d_h;
        const int32_t d = e % d_h;
        const float* w = s_s + r * kKeyTile;
        float a = acc[i] * c_s[r];
        for (int32_t j = 0; j < n; ++j) a += w[j] * v_s[j * ks + d];
        acc[i] = a;
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < kMaxAcc; ++i) {
    const int32_t e = tid + i * kAttnThreads;
    if (e < rows * d_h) {
      const int32_t r = e / d_h;
      const int32_t d = e % d_h;
      const int64_t ri = row_index(r);
      if (num_splits == 1) {
        p.out[ri * d_h + d] = l_s[r] > 0.0f ? acc[i] / l_s[r] : 0.0f;
      } else {
        float* ws = p.workspace + (ri * num_splits + split) * (d_h + 2);
        ws[d] = acc[i];
        if (d == 0) {
          ws[d_h] = m_s[r];
          ws[d_h + 1] = l_s[r];
        }
      }
    }
  }
}

// ---- Decode fast path: t_q == 1, G in {1, 2, 4, 8}, head_dim 64 / 128 -------------------------
// grid = (splits, 1, B * H_kv); block = 4 warps (kernel_types.h "Decode fast path" gives the
// lane/entry maps). No shared-memory staging of K/V: each lane owns D/32 channels (4: 8-byte
// bf16/f16 or 16-byte f32 loads; 2: 4/8-byte loads), holds the group's G pre-scaled query heads
// for its channels in registers, and a warp walks chunks of 8 keys (warp w takes chunks w, w+4,
// ...). The N = 8G partial dots of a chunk are summed across the warp by a reduce-scatter
// (plus butterfly adds when N < 64), after which lane L holds complete scores of two entries
// (G >= 2: one key, heads h0 and h0 + 1; G == 1: two keys of the one head). The four warps'
// online-softmax states are merged through shared memory at the end (fixed warp order).
constexpr int kDecKeys = kDecodeKeys;
constexpr int kDecWarps = 4;
constexpr unsigned kFull = 0xffffffffu;

template <typename T>
__device__ __forceinline__ float4 Load4(const void* base, int64_t i);
template <>
__device__ __forceinline__ float4 Load4<float>(const void* base, int64_t i) {
  return *reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
}
template <>
__device__ __forceinline__ float4 Load4<__nv_bfloat16>(const void* base, int64_t i) {
  const uint2 u = *reinterpret_cast<const uint2*>(static_cast<const __nv_bfloat16*>(base) + i);
  return make_float4(__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                     __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u));
}
template <>
__device__ __forceinline__ float4 Load4<__half>(const void* base, int64_t i) {
  const uint2 u = *reinterpret_cast<const uint2*>(static_cast<const __half*>(base) + i);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&u.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}

template <typename T, int C>
struct LoadC;
template <typename T>
struct LoadC<T, 4> {
  static __device__ __forceinline__ void Run(const void* base, int64_t i, float* out) {
    const float4 v = Load4<T>(base, i);
    out[0] = v.x;
    out[1] = v.y;
    out[2] = v.z;
    out[3] = v.w;
  }
};
template <>
struct LoadC<float, 2> {
  static __device__ __forceinline__ void Run(const void* base, int64_t i, float* out) {
    const float2 v = *reinterpret_cast<const float2*>(static_cast<const float*>(base) + i);
    out[0] = v.x;
    out[1] = v.y;
  }
};
template <>
struct LoadC<__nv_bfloat16, 2> {
  static __device__ __forceinline__ void Run(const void* base, int64_t i, float* out) {
    const uint32_t u =
        *reinterpret_cast<const uint32_t*>(static_cast<const __nv_bfloat16*>(base) + i);
    out[0] = __uint_as_float(u << 16);
    out[1] = __uint_as_float(u & 0xffff0000u);
  }
};
template <>
struct LoadC<__half, 2> {
  static __device__ __forceinline__ void Run(const void* base, int64_t i, float* out) {
    const float2 v =
        __half22float2(*reinterpret_cast<const __half2*>(static_cast<const __half*>(base) + i));
    out[0] = v.x;
    out[1] = v.y;
  }
};

// One step of the warp reduce-scatter over s[0 .. 2 kHalf): lanes exchange with lane ^ (kHalf/2)
// and keep the lower (bit clear) or upper (bit set) half; compile-time indices keep s in registers.
template <int kHalf>
__device__ __forceinline__ void ReduceScatterStep(float* s, int lane) {
  constexpr int o = kHalf / 2;
  const bool upper = (lane & o) != 0;
#pragma unroll
  for (int i = 0; i < kHalf; ++i) {
    const float send = upper ? s[i] : s[i + kHalf];
    const float keep = upper ? s[i + kHalf] : s[i];
    s[i] = keep + __shfl_xor_sync(kFull, send, o);
  }
}

// Reduce-scatter N partials down to s[0], s[1], then complete the sums over the lanes the
// scatter did not cover (offsets N/2 .. 16).
template <int N>
__device__ __forceinline__ void ReduceScatterAll(float* s, int lane) {
  if constexpr (N >= 64) ReduceScatterStep<32>(s, lane);
  if constexpr (N >= 32) ReduceScatterStep<16>(s, lane);
  if constexpr (N >= 16) ReduceScatterStep<8>(s, lane);
  ReduceScatterStep<4>(s, lane);
  ReduceScatterStep<2>(s, lane);
#pragma unroll
  for (int o = N / 2; o < 32; o <<= 1) {
    s[0] += __shfl_xor_sync(kFull, s[0], o);
    s[1] += __shfl_xor_sync(kFull, s[1], o);
  }
}

template <typename T, int G, int D>
__global__ void __launch_bounds__(kDecWarps * 32, 2)
    DecodeFastKernel(AttentionParams p, int32_t num_splits) {
  // C channels per lane, N partial dots per chunk, kHeadBits = log2(G / 2) (0 for G <= 2).
  constexpr int C = D / 32;
  constexpr int N = kDecKeys * G;
  constexpr int kHeadBits = G >= 2 ? (G == 8 ? 2 : (G == 4 ? 1 : 0)) : 0;
  static_assert(C == 2 || C == 4, "head_dim 64 or 128");
  static_assert(G == 1 || G == 2 || G == 4 || G == 8, "GQA group 1, 2, 4 or 8");
  __shared__ float red_m[kDecWarps][G];
  __shared__ float red_l[kDecWarps][G];
  __shared__ float red_acc[kDecWarps][G][D];
  const KvLayout& l = p.layout;
  const int32_t split = blockIdx.x;
  const int32_t b = blockIdx.z / l.num_kv_heads;
  const int32_t h_kv = blockIdx.z % l.num_kv_heads;
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int32_t kv_len = max(0, min(p.kv_len[b], p.max_kv_len));
  int32_t t_begin, t_end;
  SplitKeyRange(split, p.split_size, kv_len, &t_begin, &t_end);  // t_q == 1: limit = kv_len

  float q[G][C];
#pragma unroll
  for (int h = 0; h < G; ++h) {
    LoadC<float, C>::Run(
        p.q, (static_cast<int64_t>(b) * p.num_q_heads + h_kv * G + h) * D + lane * C, q[h]);
#pragma unroll
    for (int c = 0; c < C; ++c) q[h][c] *= p.scale;
  }
  float acc[G][C];
#pragma unroll
  for (int h = 0; h < G; ++h)
#pragma unroll
    for (int c = 0; c < C; ++c) acc[h][c] = 0.0f;
  // Online-softmax state of this lane's two entries: G >= 2: heads h0, h0 + 1 (replicated over
  // the key/replica lanes); G == 1: the one head (m0/l0; m1/l1 unused).
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
  const int key_of_lane = G >= 2 ? ((lane >> kHeadBits) & (kDecKeys - 1)) : 2 * (lane & 3);

  for (int32_t c0 = t_begin + warp * kDecKeys; c0 < t_end; c0 += kDecWarps * kDecKeys) {
    float kr[kDecKeys][C], vr[kDecKeys][C];
#pragma unroll
    for (int kk = 0; kk < kDecKeys; ++kk) {
      const int32_t t = c0 + kk;
#pragma unroll
      for (int c = 0; c < C; ++c) kr[kk][c] = vr[kk][c] = 0.0f;
      if (t < t_end) {
        const int64_t off = KvRowOffset(l, p.block_table, b, h_kv, t);
        if (off >= 0) {
          LoadC<T, C>::Run(p.k_cache, off + lane * C, kr[kk]);
          LoadC<T, C>::Run(p.v_cache, off + lane * C, vr[kk]);
        } else {
#pragma unroll
          for (int c = 0; c < C; ++c) kr[kk][c] = vr[kk][c] = NAN;
        }
      }
    }
    float s[N];
#pragma unroll
    for (int kk = 0; kk < kDecKeys; ++kk) {
#pragma unroll
      for (int h = 0; h < G; ++h) {
        float a = 0.0f;
#pragma unroll
        for (int c = 0; c < C; ++c) a += q[h][c] * kr[kk][c];
        s[kk * G + h] = a;
      }
    }
    ReduceScatterAll<N>(s, lane);
    if constexpr (G >= 2) {
      const bool valid = c0 + key_of_lane < t_end;
      const float sc0 = valid ? s[0] : -INFINITY;
      const float sc1 = valid ? s[1] : -INFINITY;
      // Max and sum over the 8 keys: lane bits kHeadBits .. kHeadBits + 2 (replicas excluded).
      float mx0 = sc0, mx1 = sc1;
#pragma unroll
      for (int o = G / 2; o < 4 * G; o <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(kFull, mx0, o));
        mx1 = fmaxf(mx1, __shfl_xor_sync(kFull, mx1, o));
      }
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      const float corr0 = mn0 == -INFINITY ? 1.0f : expf(m0 - mn0);
      const float corr1 = mn1 == -INFINITY ? 1.0f : expf(m1 - mn1);
      const float p0 = sc0 == -INFINITY ? 0.0f : expf(sc0 - mn0);
      const float p1 = sc1 == -INFINITY ? 0.0f : expf(sc1 - mn1);
      float ps0 = p0, ps1 = p1;
#pragma unroll
      for (int o = G / 2; o < 4 * G; o <<= 1) {
        ps0 += __shfl_xor_sync(kFull, ps0, o);
        ps1 += __shfl_xor_sync(kFull, ps1, o);
      }
      l0 = l0 * corr0 + ps0;
      l1 = l1 * corr1 + ps1;
      m0 = mn0;
      m1 = mn1;
#pragma unroll
      for (int h = 0; h < G; ++h) {
        const float c = __shfl_sync(kFull, (h & 1) ? corr1 : corr0, h >> 1);
#pragma unroll
        for (int e = 0; e < C; ++e) acc[h][e] *= c;
      }
#pragma unroll
      for (int kk = 0; kk < kDecKeys; ++kk) {
#pragma unroll
        for (int h = 0; h < G; ++h) {
          const float w = __shfl_sync(kFull, (h & 1) ? p1 : p0, (kk << kHeadBits) | (h >> 1));
#pragma unroll
          for (int e = 0; e < C; ++e) acc[h][e] += w * vr[kk][e];
        }
      }
    } else {
      // G == 1: lane L holds keys 2(L&3) and 2(L&3)+1 of the one head.
      const float sc0 = c0 + key_of_lane < t_end ? s[0] : -INFINITY;
      const float sc1 = c0 + key_of_lane + 1 < t_end ? s[1] : -INFINITY;
      float mx = fmaxf(sc0, sc1);
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
      const float mn = fmaxf(m0, mx);
      const float corr = mn == -INFINITY ? 1.0f : expf(m0 - mn);
      const float p0 = sc0 == -INFINITY ? 0.0f : expf(sc0 - mn);
      const float p1 = sc1 == -INFINITY ? 0.0f : expf(sc1 - mn);
      float ps = p0 + p1;
      ps += __shfl_xor_sync(kFull, ps, 1);
      ps += __shfl_xor_sync(kFull, ps, 2);
      l0 = l0 * corr + ps;
      m0 = mn;
#pragma unroll
      for (int e = 0; e < C; ++e) acc[0][e] *= corr;
#pragma unroll
      for (int kk = 0; kk < kDecKeys; ++kk) {
        const float w = __shfl_sync(kFull, (kk & 1) ? p1 : p0, kk >> 1);
#pragma unroll
        for (int e = 0; e < C; ++e) acc[0][e] += w * vr[kk][e];
      }
    }
  }

#pragma unroll
  for (int h = 0; h < G; ++h) {
#pragma unroll
    for (int c = 0; c < C; ++c) red_acc[warp][h][lane * C + c] = acc[h][c];
  }
  if constexpr (G >= 2) {
    if (lane < G / 2) {
      red_m[warp][2 * lane] = m0;
      red_m[warp][2 * lane + 1] = m1;
      red_l[warp][2 * lane] = l0;
      red_l[warp][2 * lane + 1] = l1;
    }
  } else {
    if (lane == 0) {
      red_m[warp][0] = m0;
      red_l[warp][0] = l0;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < G * D; e += kDecWarps * 32) {
    const int h = e / D, d = e % D;
    float big_m = -INFINITY;
    for (int w = 0; w < kDecWarps; ++w)
      if (red_l[w][h] > 0.0f) big_m = fmaxf(big_m, red_m[w][h]);
    float sum_l = 0.0f, sum_a = 0.0f;
    for (int w = 0; w < kDecWarps; ++w) {
      if (!(red_l[w][h] > 0.0f)) continue;
      const float f = expf(red_m[w][h] - big_m);
      sum_l += f * red_l[w][h];
      sum_a += f * red_acc[w][h][d];
    }
    const int64_t ri = static_cast<int64_t>(b) * p.num_q_heads + h_kv * G + h;
    if (num_splits == 1) {
      p.out[ri * D + d] = sum_l > 0.0f ? sum_a / sum_l : 0.0f;
    } else {
      float* ws = p.workspace + (ri * num_splits + split) * (D + 2);
      ws[d] = sum_a;
      if (d == 0) {
        ws[D] = big_m;
        ws[D + 1] = sum_l;
      }
    }
  }
}

// One block of kCombineThreads per query row: combine split partials in split order 0..n-1
// (each channel: weights f_s = exp(m_s - max m), denominator sum f_s l_s, numerator sum f_s a_s,
// over the splits with l_s > 0). The splits' (m_s, l_s) are read once, in parallel, and the
// weights kept in shared memory (dynamic: 2 * num_splits floats), so that a channel's walk over
// the splits loads only its own partial sums (before, every channel re-read every split's m_s and
// l_s from global memory in a serial loop).
constexpr int kCombineThreads = 128;
__global__ void __launch_bounds__(kCombineThreads)
    AttentionCombineKernel(AttentionParams p, int32_t num_splits) {
  extern __shared__ float combine_smem[];
  float* weight = combine_smem;              // [num_splits]: f_s, 0 for an empty split
  float* sum_l = combine_smem + num_splits;  // [num_splits]: l_s
  __shared__ float warp_max[kCombineThreads / 32];
  const int64_t ri = blockIdx.x;
  const int32_t d_h = p.layout.head_dim;
  const float* ws = p.workspace + ri * num_splits * (d_h + 2);
  float mx = -INFINITY;
  for (int32_t s = threadIdx.x; s < num_splits; s += kCombineThreads) {
    const float* w = ws + s * (d_h + 2);
    weight[s] = w[d_h];
    sum_l[s] = w[d_h + 1];
    if (w[d_h + 1] > 0.0f) mx = fmaxf(mx, w[d_h]);
  }
  for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, o));
  if ((threadIdx.x & 31) == 0) warp_max[threadIdx.x >> 5] = mx;
  __syncthreads();
  float big_m = -INFINITY;
  for (int w = 0; w < kCombineThreads / 32; ++w) big_m = fmaxf(big_m, warp_max[w]);
  for (int32_t s = threadIdx.x; s < num_splits; s += kCombineThreads)
    weight[s] = sum_l[s] > 0.0f ? expf(weight[s] - big_m) : 0.0f;
  __syncthreads();
  for (int32_t d = threadIdx.x; d < d_h; d += kCombineThreads) {
    float denom = 0.0f, acc = 0.0f;
#pragma unroll 8
    for (int32_t s = 0; s < num_splits; ++s) {
      if (!(sum_l[s] > 0.0f)) continue;
      denom += weight[s] * sum_l[s];
      acc += weight[s] * ws[s * (d_h + 2) + d];
    }
    p.out[ri * d_h + d] = denom > 0.0f ? acc / denom : 0.0f;
  }
}

// Counter-based uniform values in [lo, hi), never exactly zero (benchmark and test inputs).
template <typename T>
__global__ void FillUniformKernel(void* dst, int64_t n, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1);  // splitmix64
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // [0, 1)
    float v = lo + (hi - lo) * u;
    if (v == 0.0f) v = (hi - lo) * (1.0f / 16777216.0f);
    Kv<T>::Store(dst, i, v);
  }
}

int GridFor(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < 65536 * 16 ? blocks : 65536 * 16);
}

template <typename T>
cudaError_t LaunchAppendT(const KvAppendParams& p, cudaStream_t stream) {
  const int64_t total =
      static_cast<int64_t>(p.layout.batch) * p.layout.num_kv_heads * p.t_new * p.layout.head_dim;
  if (p.layout.head_dim % 4 == 0 && total / 4 < INT32_MAX) {
    const int32_t vecs = static_cast<int32_t>(total / 4);
    KvAppendVec4Kernel<T><<<GridFor(vecs, 256), 256, 0, stream>>>(p, vecs);
  } else {
    KvAppendKernel<T><<<GridFor(total, 256), 256, 0, stream>>>(p, total);
  }
  return cudaGetLastError();
}

// Decode (t_q == 1) with bf16 K/V, head_dim 128 and G <= 16 takes the tensor-core decode
// (decode_tc.cu, UseTensorCoreDecode); other decode shapes with G in {1, 2, 4, 8} and head_dim
// 64 / 128 take DecodeFastKernel (UseDecodeFastPath in kernel_types.h); every other shape the
// tiled AttentionKernel. All write the same outputs / split partials.
template <typename T, int G, int D>
void LaunchDecodeFastGD(const AttentionParams& p, int32_t splits, unsigned bh,
                        cudaStream_t stream) {
  DecodeFastKernel<T, G, D><<<dim3(splits, 1, bh), kDecWarps * 32, 0, stream>>>(p, splits);
}
template <typename T, int D>
void LaunchDecodeFastD(const AttentionParams& p, int32_t g, int32_t splits, unsigned bh,
                       cudaStream_t stream) {
  switch (g) {
    case 1:
      return LaunchDecodeFastGD<T, 1, D>(p, splits, bh, stream);
    case 2:
      return LaunchDecodeFastGD<T, 2, D>(p, splits, bh, stream);
    case 4:
      return LaunchDecodeFastGD<T, 4, D>(p, splits, bh, stream);
    default:
      return LaunchDecodeFastGD<T, 8, D>(p, splits, bh, stream);
  }
}

template <typename T>
cudaError_t LaunchAttentionT(const AttentionParams& p, cudaStream_t stream) {
  const KvLayout& l = p.layout;
  const int32_t g = p.num_q_heads / l.num_kv_heads;
  const int32_t rows = AttentionRowsPerBlock(g, p.t_q, l.head_dim);
  const int64_t tiles = AttentionRowTiles(p);  // ValidateAttention bounds it and bh
  const int32_t splits = NumSplits(p.max_kv_len, p.split_size);
  const int64_t bh = static_cast<int64_t>(l.batch) * l.num_kv_heads;
  if (tiles > kMaxGridYZ || bh > kMaxGridYZ) return cudaErrorInvalidConfiguration;
  cudaError_t e = cudaSuccess;
  if (UseTensorCoreDecode(p)) {
    e = LaunchDecodeTc(p, splits, stream);
    if (e != cudaSuccess) return e;
  } else if (UseDecodeFastPath(p)) {
    if (l.head_dim == 64) {
      LaunchDecodeFastD<T, 64>(p, g, splits, static_cast<unsigned>(bh), stream);
    } else {
      LaunchDecodeFastD<T, 128>(p, g, splits, static_cast<unsigned>(bh), stream);
    }
  } else {
    const size_t smem = static_cast<size_t>(AttentionSmemFloats(rows, l.head_dim)) * sizeof(float);
    e = cudaFuncSetAttribute(AttentionKernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(smem));
    if (e != cudaSuccess) return e;
    AttentionKernel<T><<<dim3(splits, static_cast<unsigned>(tiles), static_cast<unsigned>(bh)),
                         kAttnThreads, smem, stream>>>(p, rows, splits);
  }
  e = cudaGetLastError();
  if (e != cudaSuccess || splits == 1) return e;
  const int64_t total_rows = static_cast<int64_t>(l.batch) * p.num_q_heads * p.t_q;
  if (total_rows > INT32_MAX) return cudaErrorInvalidConfiguration;  // ValidateAttention refuses
  // Over 48 KB of weights (more than 6144 splits) needs the opt-in; past the device's limit
  // (about 29,000 splits on an H200) the launch fails with that error.
  const size_t combine_smem = 2 * static_cast<size_t>(splits) * sizeof(float);
  if (combine_smem > 48 * 1024) {
    e = cudaFuncSetAttribute(AttentionCombineKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(combine_smem));
    if (e != cudaSuccess) return e;
  }
  AttentionCombineKernel<<<static_cast<unsigned>(total_rows), kCombineThreads, combine_smem,
                           stream>>>(p, splits);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchRmsNorm(const RmsNormParams& p, cudaStream_t stream) {
  RmsNormKernel<<<p.rows, kRmsThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchRope(const RopeParams& p, cudaStream_t stream) {
  const int64_t q_rows = static_cast<int64_t>(p.batch) * p.num_q_heads * p.t;
  const int64_t k_rows = p.k ? static_cast<int64_t>(p.batch) * p.num_kv_heads * p.t : 0;
  const int64_t pairs = (q_rows + k_rows) * (p.head_dim / 2);
  RopeKernel<<<GridFor(pairs, 256), 256, 0, stream>>>(p, q_rows, pairs);
  return cudaGetLastError();
}

cudaError_t LaunchSwiGlu(const SwiGluParams& p, cudaStream_t stream) {
  SwiGluKernel<<<GridFor(p.n, 256), 256, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchKvAppend(const KvAppendParams& p, cudaStream_t stream) {
  switch (p.layout.dtype) {
    case KvDtype::kF16:
      return LaunchAppendT<__half>(p, stream);
    case KvDtype::kBF16:
      return LaunchAppendT<__nv_bfloat16>(p, stream);
    default:
      return LaunchAppendT<float>(p, stream);
  }
}

cudaError_t LaunchKvPublish(const KvPublishParams& p, cudaStream_t stream) {
  KvPublishKernel<<<CeilDiv(p.layout.batch, 128), 128, 0, stream>>>(p);
  return cudaGetLastError();
}

cudaError_t LaunchAttention(const AttentionParams& p, cudaStream_t stream) {
  if (UseTensorCorePrefill(p)) return LaunchAttentionTc(p, stream);
  switch (p.layout.dtype) {
    case KvDtype::kF16:
      return LaunchAttentionT<__half>(p, stream);
    case KvDtype::kBF16:
      return LaunchAttentionT<__nv_bfloat16>(p, stream);
    default:
      return LaunchAttentionT<float>(p, stream);
  }
}

cudaError_t LaunchFillUniform(void* dst, KvDtype dtype, int64_t n, uint64_t seed, float lo,
                              float hi, cudaStream_t stream) {
  switch (dtype) {
    case KvDtype::kF16:
      FillUniformKernel<__half><<<GridFor(n, 256), 256, 0, stream>>>(dst, n, seed, lo, hi);
      break;
    case KvDtype::kBF16:
      FillUniformKernel<__nv_bfloat16><<<GridFor(n, 256), 256, 0, stream>>>(dst, n, seed, lo, hi);
      break;
    default:
      FillUniformKernel<float><<<GridFor(n, 256), 256, 0, stream>>>(dst, n, seed, lo, hi);
      break;
  }
  return cudaGetLastError();
}

}  // namespace kvc::kernels::internal
