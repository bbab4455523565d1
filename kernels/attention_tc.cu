// Tensor-core causal prefill attention (bf16 K/V, head_dim 128): a flash-attention-style kernel
// on mma.sync.m16n8k16 (bf16 x bf16 -> fp32) with an online softmax and the bottom-right causal
// mask over a committed past. Tiling, smem layout and fragment maps: kernel_types.h ("Tensor-core
// causal prefill"); the tiled SIMT AttentionKernel stays the reference path (simt_only).
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda_launch_internal.h"
#include "kernels/tc_primitives.cuh"

namespace kvc::kernels::internal {
namespace {

constexpr int kThreads = kTcWarps * 32;
constexpr int kDSteps = kTcHeadDim / 16;  // k-steps of S = Q K^T
constexpr int kKeyTiles = kTcBlockN / 8;  // n-tiles of S
constexpr int kPvSteps = kTcBlockN / 16;  // k-steps of O += P V
constexpr int kDTiles = kTcHeadDim / 8;   // n-tiles of O
constexpr int kRowBytes = kTcQkStride * 2;
constexpr int kTileBytes = kTcBlockN * kRowBytes;  // one K (or V) tile
constexpr int kChunks = kTcHeadDim * 2 / 16;       // 16-byte chunks per K/V row
static_assert(kTcBlockM == 16 * kTcWarps, "one m16 row tile per warp");
static_assert(kThreads % kChunks == 0 && kTcBlockN % (kThreads / kChunks) == 0, "copy tiling");

// Starts the copy of the K/V tile of keys n0 .. n0 + kTcBlockN - 1 into `k_dst` / `v_dst` (shared
// memory, [key][d] rows of kRowBytes): thread `tid` copies 16-byte chunk (tid % 16) of rows
// tid / 16 + 8 i. Keys past kv_len are zero-filled (P is 0 there); an unaddressable row reads as
// NaN (visible in the output, as on every path).
__device__ __forceinline__ void IssueKvTile(const AttentionParams& p, int32_t b, int32_t h_kv,
                                            int32_t n0, int32_t kv_len, unsigned char* k_dst,
                                            unsigned char* v_dst, int tid) {
  const KvLayout& l = p.layout;
  const int c = tid % kChunks;
  const __nv_bfloat16* kc = static_cast<const __nv_bfloat16*>(p.k_cache);
  const __nv_bfloat16* vc = static_cast<const __nv_bfloat16*>(p.v_cache);
#pragma unroll
  for (int r = tid / kChunks; r < kTcBlockN; r += kThreads / kChunks) {
    const int32_t t = n0 + r;
    const int at = r * kRowBytes + c * 16;
    const int64_t off = t < kv_len ? KvRowOffset(l, p.block_table, b, h_kv, t) : 0;
    if (off < 0) {
      const uint4 nan = make_uint4(tc::kFull, tc::kFull, tc::kFull, tc::kFull);
      *reinterpret_cast<uint4*>(k_dst + at) = nan;
      *reinterpret_cast<uint4*>(v_dst + at) = nan;
    } else {
      const int bytes = t < kv_len ? 16 : 0;
      tc::CpAsync16(tc::SmemAddr(k_dst + at), kc + off + c * 8, bytes);
      tc::CpAsync16(tc::SmemAddr(v_dst + at), vc + off + c * 8, bytes);
    }
  }
}

// grid = (ceil(t_q / 64), H_q, B), heaviest (last) query tiles first; block = 128 threads.
__global__ void __launch_bounds__(kThreads, 3) AttentionTcKernel(AttentionParams p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // Ring stage s: K tile at smem_raw + 2 s kTileBytes, V tile right after it.
  unsigned char* ring = smem_raw;
  const KvLayout& l = p.layout;
  const int32_t m0 = (gridDim.x - 1 - blockIdx.x) * kTcBlockM;
  const int32_t h_q = blockIdx.y;
  const int32_t b = blockIdx.z;
  const int32_t h_kv = KvHeadOfQueryHead(h_q, p.num_q_heads, l.num_kv_heads);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int32_t kv_len = max(0, min(p.kv_len[b], p.max_kv_len));
  const int64_t q_row0 = (static_cast<int64_t>(b) * p.num_q_heads + h_q) * p.t_q;
  const int32_t key_end = TcPrefillKeyEnd(kv_len, p.t_q, m0);
  const int32_t n_tiles = key_end > 0 ? CeilDiv(key_end, kTcBlockN) : 0;
  if (n_tiles > 0) IssueKvTile(p, b, h_kv, 0, kv_len, ring, ring + kTileBytes, tid);
  tc::CpAsyncCommit();

  // This warp's Q A-fragments straight from global memory (rows past t_q are zeros and never
  // written out), rounded to bf16; the first tile's copy is in flight meanwhile.
  uint32_t qa[kDSteps][4];
#pragma unroll
  for (int kk = 0; kk < kDSteps; ++kk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int32_t row = m0 + warp * 16 + MmaARow(lane, 2 * j);
      float2 v = make_float2(0.0f, 0.0f);
      if (row < p.t_q)
        v = *reinterpret_cast<const float2*>(p.q + (q_row0 + row) * kTcHeadDim + kk * 16 +
                                             MmaACol(lane, 2 * j));
      qa[kk][j] = tc::PackBf16(v.x, v.y);
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

  // Scores are kept in the base-2 domain (s * scale * log2 e, one FMA-able multiply), so the
  // softmax's exponentials are exp2f; the running maxima are in that domain too.
  const float scale_log2 = p.scale * tc::kLog2e;
  for (int32_t it = 0; it < n_tiles; ++it) {
    const int32_t n0 = it * kTcBlockN;
    unsigned char* stage = ring + (it % kTcStages) * 2 * kTileBytes;
    // The next tile's copy overlaps this tile's MMAs; its stage was last read in iteration
    // it - 1, before that iteration's closing barrier.
    if (it + 1 < n_tiles) {
      unsigned char* next = ring + ((it + 1) % kTcStages) * 2 * kTileBytes;
      IssueKvTile(p, b, h_kv, n0 + kTcBlockN, kv_len, next, next + kTileBytes, tid);
    }
    tc::CpAsyncCommit();
    tc::CpAsyncWait<1>();  // this thread's copies of tile `it` have landed
    __syncthreads();       // ... and every thread's
    const uint32_t k_s = tc::SmemAddr(stage), v_s = k_s + kTileBytes;

    // S = Q K^T for this warp's 16 rows x 64 keys.
    float s[kKeyTiles][4];
    tc::QkTile(s, qa, k_s, kRowBytes, lane);
    // Scale and mask (bottom-right causal; keys past kv_len are past every limit).
#pragma unroll
    for (int nt = 0; nt < kKeyTiles; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int32_t key = n0 + nt * 8 + MmaCCol(lane, i);
        s[nt][i] = key < lim[i >> 1] ? s[nt][i] * scale_log2 : -INFINITY;
      }
    }
    tc::OnlineSoftmaxStep(s, m_run, l_run, o);
    // O += P V, one k-step of 16 keys at a time.
#pragma unroll
    for (int kk = 0; kk < kPvSteps; ++kk) tc::PvStep(o, s, kk, v_s, kRowBytes, lane);
    __syncthreads();  // every warp has read this stage before it is refilled
  }
  tc::CpAsyncWait<0>();

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
  if (p.num_q_heads > kMaxGridYZ || p.layout.batch > kMaxGridYZ) {
    return cudaErrorInvalidConfiguration;  // ValidateAttention refuses these shapes
  }
  const int64_t row_tiles = (static_cast<int64_t>(p.t_q) + kTcBlockM - 1) / kTcBlockM;
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(p.num_q_heads),
                  static_cast<unsigned>(p.layout.batch));
  AttentionTcKernel<<<grid, kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::internal
