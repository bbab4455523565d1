// Tensor-core causal prefill attention (bf16 K/V, head_dim 128): a flash-attention-style kernel
// on mma.sync.m16n8k16 (bf16 x bf16 -> fp32) with an online softmax and the bottom-right causal
// mask over a committed past. Tiling, smem layout and fragment maps: kernel_types.h ("Tensor-core
// causal prefill"); the tiled SIMT AttentionKernel stays the reference path (simt_only).
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda_launch_internal.h"

namespace kvc::kernels::internal {
namespace {

constexpr int kThreads = kTcWarps * 32;
constexpr int kDSteps = kTcHeadDim / 16;  // k-steps of S = Q K^T
constexpr int kKeyTiles = kTcBlockN / 8;  // n-tiles of S
constexpr int kPvSteps = kTcBlockN / 16;  // k-steps of O += P V
constexpr int kDTiles = kTcHeadDim / 8;   // n-tiles of O
constexpr unsigned kFull = 0xffffffffu;
static_assert(kTcBlockM == 16 * kTcWarps, "one m16 row tile per warp");

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ uint32_t Ld32(const __nv_bfloat16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// d[0..3] += A[16x16] * B[16x8] (fragments per kernel_types.h Mma* maps).
__device__ __forceinline__ void Mma(float* d, const uint32_t* a, const uint32_t* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// grid = (ceil(t_q / 64), H_q, B), heaviest (last) query tiles first; block = 128 threads.
__global__ void __launch_bounds__(kThreads) AttentionTcKernel(AttentionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);  // [kTcBlockM][kTcQkStride]
  __nv_bfloat16* ks = qs + kTcBlockM * kTcQkStride;                // [kTcBlockN][kTcQkStride]
  __nv_bfloat16* vt = ks + kTcBlockN * kTcQkStride;                // [kTcHeadDim][kTcVtStride]
  const KvLayout& l = p.layout;
  const int32_t m0 = (gridDim.x - 1 - blockIdx.x) * kTcBlockM;
  const int32_t h_q = blockIdx.y;
  const int32_t b = blockIdx.z;
  const int32_t h_kv = KvHeadOfQueryHead(h_q, p.num_q_heads, l.num_kv_heads);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int32_t kv_len = max(0, min(p.kv_len[b], p.max_kv_len));
  const int64_t q_row0 = (static_cast<int64_t>(b) * p.num_q_heads + h_q) * p.t_q;

  // Q tile -> bf16 shared memory (rows past t_q are zeros and never written out).
  constexpr int kQVecs = kTcHeadDim / 4;
  for (int e = tid; e < kTcBlockM * kQVecs; e += kThreads) {
    const int r = e / kQVecs, c = (e % kQVecs) * 4;
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (m0 + r < p.t_q)
      v = *reinterpret_cast<const float4*>(p.q + (q_row0 + m0 + r) * kTcHeadDim + c);
    uint2 u;
    u.x = PackBf16(v.x, v.y);
    u.y = PackBf16(v.z, v.w);
    *reinterpret_cast<uint2*>(qs + r * kTcQkStride + c) = u;
  }
  __syncthreads();
  uint32_t qa[kDSteps][4];
#pragma unroll
  for (int kk = 0; kk < kDSteps; ++kk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      qa[kk][j] = Ld32(qs + (warp * 16 + MmaARow(lane, 2 * j)) * kTcQkStride + kk * 16 +
                       MmaACol(lane, 2 * j));
    }
  }
  // This thread's two rows (C fragment rows g and g + 8) and their causal limits.
  const int32_t row0 = m0 + warp * 16 + MmaCRow(lane, 0);
  const int32_t lim[2] = {CausalKeyLimit(kv_len, p.t_q, row0),
                          CausalKeyLimit(kv_len, p.t_q, row0 + 8)};
  float o[kDTiles][4];
#pragma unroll
  for (int dt = 0; dt < kDTiles; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};

  const int32_t key_end = TcPrefillKeyEnd(kv_len, p.t_q, m0);
  constexpr int kKvVecs = kTcHeadDim / 8;  // 16-byte chunks per K/V row
  for (int32_t n0 = 0; n0 < key_end; n0 += kTcBlockN) {
    __syncthreads();  // the previous tile's readers are done
    for (int e = tid; e < kTcBlockN * kKvVecs; e += kThreads) {
      const int key = e / kKvVecs, c = (e % kKvVecs) * 8;
      const int32_t t = n0 + key;
      uint4 kq = make_uint4(0u, 0u, 0u, 0u), vq = kq;  // keys past kv_len: zeros (P = 0 there)
      if (t < kv_len) {
        const int64_t off = KvRowOffset(l, p.block_table, b, h_kv, t);
        if (off >= 0) {
          kq = *reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(p.k_cache) + off +
                                               c);
          vq = *reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(p.v_cache) + off +
                                               c);
        } else {
          kq = vq = make_uint4(kFull, kFull, kFull, kFull);  // unaddressable row: NaN, visible
        }
      }
      *reinterpret_cast<uint4*>(ks + key * kTcQkStride + c) = kq;
      const __nv_bfloat16* v8 = reinterpret_cast<const __nv_bfloat16*>(&vq);
#pragma unroll
      for (int i = 0; i < 8; ++i) vt[(c + i) * kTcVtStride + key] = v8[i];
    }
    __syncthreads();

    // S = Q K^T for this warp's 16 rows x 64 keys.
    float s[kKeyTiles][4];
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
      s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
      const __nv_bfloat16* krow = ks + (nt * 8 + MmaBCol(lane, 0)) * kTcQkStride;
#pragma unroll
      for (int kk = 0; kk < kDSteps; ++kk) {
        const uint32_t bk[2] = {Ld32(krow + kk * 16 + MmaBRow(lane, 0)),
                                Ld32(krow + kk * 16 + MmaBRow(lane, 2))};
        Mma(s[nt], qa[kk], bk);
      }
    }
    // Scale and mask (bottom-right causal; keys past kv_len are past every limit).
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int32_t key = n0 + nt * 8 + MmaCCol(lane, i);
        s[nt][i] = key < lim[i >> 1] ? s[nt][i] * p.scale : -INFINITY;
      }
    }
    // Online softmax per row (the four lanes of a quad share a row).
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt)
        mx = fmaxf(mx, fmaxf(s[nt][2 * rh], s[nt][2 * rh + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
      const float m_new = fmaxf(m_run[rh], mx);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet
      const float corr = expf(m_run[rh] - m_use);             // 0 when m_run was -inf
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kKeyTiles; ++nt) {
#pragma unroll
        for (int c = 2 * rh; c < 2 * rh + 2; ++c) {
          const float e = expf(s[nt][c] - m_use);  // 0 for masked keys
          s[nt][c] = e;
          sum += e;
        }
      }
      sum += __shfl_xor_sync(kFull, sum, 1);
      sum += __shfl_xor_sync(kFull, sum, 2);
      l_run[rh] = l_run[rh] * corr + sum;
      m_run[rh] = m_new;
#pragma unroll
      for (int dt = 0; dt < kDTiles; ++dt) {
        o[dt][2 * rh] *= corr;
        o[dt][2 * rh + 1] *= corr;
      }
    }
    // O += P V: the S accumulators of n-tiles 2kk, 2kk+1 are the A fragment of k-step kk.
#pragma unroll
    for (int kk = 0; kk < kPvSteps; ++kk) {
      const uint32_t pa[4] = {PackBf16(s[2 * kk][0], s[2 * kk][1]),
                              PackBf16(s[2 * kk][2], s[2 * kk][3]),
                              PackBf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              PackBf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dt = 0; dt < kDTiles; ++dt) {
        const __nv_bfloat16* vrow = vt + (dt * 8 + MmaBCol(lane, 0)) * kTcVtStride + kk * 16;
        const uint32_t bv[2] = {Ld32(vrow + MmaBRow(lane, 0)), Ld32(vrow + MmaBRow(lane, 2))};
        Mma(o[dt], pa, bv);
      }
    }
  }

#pragma unroll
  for (int dt = 0; dt < kDTiles; ++dt) {
#pragma unroll
    for (int rh = 0; rh < 2; ++rh) {
      const int32_t qi = row0 + 8 * rh;
      if (qi >= p.t_q) continue;
      const float inv = l_run[rh] > 0.0f ? 1.0f / l_run[rh] : 0.0f;
      float2 w;
      w.x = o[dt][2 * rh] * inv;
      w.y = o[dt][2 * rh + 1] * inv;
      *reinterpret_cast<float2*>(p.out + (q_row0 + qi) * kTcHeadDim + dt * 8 +
                                 MmaCCol(lane, 2 * rh)) = w;
    }
  }
}

}  // namespace

cudaError_t LaunchAttentionTc(const AttentionParams& p, cudaStream_t stream) {
  const int smem = TcPrefillSmemBytes();
  cudaError_t e =
      cudaFuncSetAttribute(AttentionTcKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  if (p.num_q_heads > 65535 || p.layout.batch > 65535) return cudaErrorInvalidConfiguration;
  const dim3 grid(static_cast<unsigned>(CeilDiv(p.t_q, kTcBlockM)),
                  static_cast<unsigned>(p.num_q_heads), static_cast<unsigned>(p.layout.batch));
  AttentionTcKernel<<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::internal
