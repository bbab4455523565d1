// Tensor-core GQA decode attention (bf16 K/V, head_dim 128, t_q == 1, G <= 16): the G query heads
// of one K/V head are the rows of an m16 MMA tile; keys stream per warp through a cp.async ring.
// Tiling, shared-memory layout and the selection rule: kernel_types.h ("Tensor-core GQA decode").
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda_launch_internal.h"
#include "kernels/tc_primitives.cuh"

namespace kvc::kernels::internal {
namespace {

constexpr int kD = kTcHeadDim;
constexpr int kKeys = kDecTcKeys;
constexpr int kWarps = kDecTcWarps;
constexpr int kStages = kDecTcStages;
constexpr int kRowBytes = kDecTcRowStride * 2;
constexpr int kTileBytes = kKeys * kRowBytes;  // one K (or V) tile
constexpr int kStageBytes = 2 * kTileBytes;    // K tile, then V tile
constexpr int kDSteps = kD / 16;               // k-steps of S = Q K^T
constexpr int kDTiles = kD / 8;                // n-tiles of O
constexpr int kChunks = kD * 2 / 16;           // 16-byte chunks per K/V row
constexpr float kLn2 = 0.6931471805599453f;
static_assert(kKeys == 16, "one k-step of P V per tile (two n-tiles of S)");
static_assert(kChunks == 16, "two rows of a tile per 32 lanes per copy step");

// Where this lane's rows of a tile, 2i + (lane >> 4) for i = 0..7, live in paged storage: their
// block-table entries (-1 for a row past MaxTokensPerSeq: unaddressable) and their rows within
// the block. Read a tile ahead of the copy, so that IssueTile never waits on the table, with one
// division per tile (rows step by 2: the block advances by carries).
struct TileRows {
  int32_t entry[kKeys / 2];
  int32_t in_block[kKeys / 2];
};
__device__ __forceinline__ void LocateRows(const AttentionParams& p, int32_t b, int32_t key0,
                                           int lane, TileRows* rows) {
  const KvLayout& l = p.layout;
  if (!IsPaged(l)) return;
  const int32_t bs = l.block_size;
  const int64_t limit = MaxTokensPerSeq(l);
  int32_t t = key0 + (lane >> 4);
  int32_t q = t / bs, m = t % bs;
  const int32_t* table = p.block_table + static_cast<int64_t>(b) * l.max_blocks_per_seq;
#pragma unroll
  for (int i = 0; i < kKeys / 2; ++i) {
    rows->entry[i] = t < limit ? table[q] : -1;
    rows->in_block[i] = m;
    t += 2;
    m += 2;
    if (m >= bs) m -= bs, ++q;
    if (m >= bs) m -= bs, ++q;  // block_size 1
  }
}

// Starts the copy of this warp's tile of keys key0 .. key0 + 15 into ring slot `slot`, given
// where this lane's rows live (LocateRows; unused for contiguous storage). Lane l copies 16-byte
// chunk (l & 15) of rows 2i + (l >> 4), i = 0..7, of K and V.
__device__ __forceinline__ void IssueTile(const AttentionParams& p, int32_t b, int32_t h_kv,
                                          int32_t key0, int32_t t_end, unsigned char* slot,
                                          int lane, const TileRows& rows) {
  const KvLayout& l = p.layout;
  const int c = lane & 15;
  const uint32_t k_dst = tc::SmemAddr(slot), v_dst = k_dst + kTileBytes;
  const __nv_bfloat16* kc = static_cast<const __nv_bfloat16*>(p.k_cache);
  const __nv_bfloat16* vc = static_cast<const __nv_bfloat16*>(p.v_cache);
#pragma unroll
  for (int i = 0; i < kKeys / 2; ++i) {
    const int r = 2 * i + (lane >> 4);
    const int32_t t = key0 + r;
    const uint32_t at = r * kRowBytes + c * 16;
    int64_t off = 0;  // keys past the range: a zero-byte copy
    if (t < t_end) {
      off = IsPaged(l) ? KvPagedRowOffset(l, rows.entry[i], h_kv, rows.in_block[i])
                       : KvRowOffset(l, nullptr, b, h_kv, t);
    }
    if (off < 0) {  // unaddressable row: NaN, visible in the output (as every path)
      const uint4 nan = make_uint4(tc::kFull, tc::kFull, tc::kFull, tc::kFull);
      *reinterpret_cast<uint4*>(slot + at) = nan;
      *reinterpret_cast<uint4*>(slot + kTileBytes + at) = nan;
    } else {
      const int bytes = t < t_end ? 16 : 0;  // keys past the range: zeros (masked below)
      tc::CpAsync16(k_dst + at, kc + off + c * 8, bytes);
      tc::CpAsync16(v_dst + at, vc + off + c * 8, bytes);
    }
  }
}

// grid = (splits, 1, B * H_kv); block = kWarps warps; dynamic smem = DecodeTcSmemBytes().
__global__ void __launch_bounds__(kWarps * 32, 2)
    DecodeTcKernel(AttentionParams p, int32_t num_splits) {
  extern __shared__ __align__(16) unsigned char smem[];
  const KvLayout& l = p.layout;
  const int32_t split = blockIdx.x;
  const int32_t b = blockIdx.z / l.num_kv_heads;
  const int32_t h_kv = blockIdx.z % l.num_kv_heads;
  const int32_t G = p.num_q_heads / l.num_kv_heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t kv_len = max(0, min(p.kv_len[b], p.max_kv_len));
  int32_t t_begin, t_end;
  SplitKeyRange(split, p.split_size, kv_len, &t_begin, &t_end);  // t_q == 1: limit = kv_len
  unsigned char* ring = smem + warp * kStages * kStageBytes;
  const int32_t my_tiles = DecodeTcWarpTiles(t_begin, t_end, warp);
  auto key0_of = [&](int32_t i) { return t_begin + (warp + i * kWarps) * kKeys; };

  // Start the ring first: the copies overlap the Q fragment loads.
  TileRows rows;  // where the next tile to copy lives
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < my_tiles) {
      LocateRows(p, b, key0_of(s), lane, &rows);
      IssueTile(p, b, h_kv, key0_of(s), t_end, ring + s * kStageBytes, lane, rows);
    }
    tc::CpAsyncCommit();
  }
  LocateRows(p, b, key0_of(kStages - 1), lane, &rows);

  // Q A-fragments (rows: the group's query heads; rows >= G are zeros), rounded to bf16.
  const int64_t q_row0 = static_cast<int64_t>(b) * p.num_q_heads + static_cast<int64_t>(h_kv) * G;
  uint32_t qa[kDSteps][4];
#pragma unroll
  for (int kk = 0; kk < kDSteps; ++kk) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int row = MmaARow(lane, 2 * j), col = kk * 16 + MmaACol(lane, 2 * j);
      float2 v = make_float2(0.0f, 0.0f);
      if (row < G) v = *reinterpret_cast<const float2*>(p.q + (q_row0 + row) * kD + col);
      qa[kk][j] = tc::PackBf16(v.x, v.y);
    }
  }
  float o[kDTiles][4];
#pragma unroll
  for (int dt = 0; dt < kDTiles; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const float scale_log2 = p.scale * tc::kLog2e;  // scores in the base-2 domain

  for (int32_t i = 0; i < my_tiles; ++i) {
    const int32_t ahead = i + kStages - 1;
    if (ahead < my_tiles)
      IssueTile(p, b, h_kv, key0_of(ahead), t_end, ring + (ahead % kStages) * kStageBytes, lane,
                rows);
    tc::CpAsyncCommit();
    LocateRows(p, b, key0_of(ahead + 1), lane, &rows);  // in flight during this tile's MMAs
    tc::CpAsyncWait<kStages - 1>();  // tile i's group has landed (this lane's copies)
    __syncwarp();                    // ... and every lane's, NaN rows included
    const unsigned char* slot = ring + (i % kStages) * kStageBytes;
    const uint32_t k_s = tc::SmemAddr(slot), v_s = k_s + kTileBytes;
    const int32_t key0 = key0_of(i);

    // S = Q K^T: n-tiles of keys 0-7 and 8-15.
    float s[2][4];
    tc::QkTile(s, qa, k_s, kRowBytes, lane);
    // Scale into the base-2 domain (the softmax uses exp2f); keys past the range are masked.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int32_t key = key0 + nt * 8 + MmaCCol(lane, e);
        s[nt][e] = key < t_end ? s[nt][e] * scale_log2 : -INFINITY;
      }
    }
    tc::OnlineSoftmaxStep(s, m_run, l_run, o);
    // O += P V: the tile is one k-step of 16 keys.
    tc::PvStep(o, s, 0, v_s, kRowBytes, lane);
    __syncwarp();  // every lane has read this slot before it is refilled
  }
  tc::CpAsyncWait<0>();
  __syncthreads();  // the ring is reused below

  // Combine the warps: red_acc[w][row][d], red_m/red_l[w][row] over the ring's memory.
  float* red_acc = reinterpret_cast<float*>(smem);
  float* red_m = red_acc + kWarps * kDecTcMaxGroup * kD;
  float* red_l = red_m + kWarps * kDecTcMaxGroup;
#pragma unroll
  for (int rh = 0; rh < 2; ++rh) {
    const int row = MmaCRow(lane, 2 * rh);
    if (row >= G) continue;
    float* acc = red_acc + (warp * kDecTcMaxGroup + row) * kD;
#pragma unroll
    for (int dt = 0; dt < kDTiles; ++dt) {
      acc[dt * 8 + MmaCCol(lane, 0)] = o[dt][2 * rh];
      acc[dt * 8 + MmaCCol(lane, 1)] = o[dt][2 * rh + 1];
    }
    if ((lane & 3) == 0) {
      red_m[warp * kDecTcMaxGroup + row] = m_run[rh];
      red_l[warp * kDecTcMaxGroup + row] = l_run[rh];
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < G * kD; e += kWarps * 32) {
    const int h = e / kD, d = e % kD;
    float big_m = -INFINITY;
    for (int w = 0; w < kWarps; ++w)
      if (red_l[w * kDecTcMaxGroup + h] > 0.0f) big_m = fmaxf(big_m, red_m[w * kDecTcMaxGroup + h]);
    float sum_l = 0.0f, sum_a = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      const float lw = red_l[w * kDecTcMaxGroup + h];
      if (!(lw > 0.0f)) continue;
      const float f = exp2f(red_m[w * kDecTcMaxGroup + h] - big_m);
      sum_l += f * lw;
      sum_a += f * red_acc[(w * kDecTcMaxGroup + h) * kD + d];
    }
    const int64_t ri = q_row0 + h;
    if (num_splits == 1) {
      p.out[ri * kD + d] = sum_l > 0.0f ? sum_a / sum_l : 0.0f;
    } else {
      float* ws = p.workspace + (ri * num_splits + split) * (kD + 2);
      ws[d] = sum_a;
      if (d == 0) {
        ws[kD] = big_m * kLn2;  // the combine's maxima are natural-log scores
        ws[kD + 1] = sum_l;
      }
    }
  }
}

}  // namespace

cudaError_t LaunchDecodeTc(const AttentionParams& p, int32_t num_splits, cudaStream_t stream) {
  const int smem = DecodeTcSmemBytes();
  cudaError_t e =
      cudaFuncSetAttribute(DecodeTcKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return e;
  const int64_t bh = static_cast<int64_t>(p.layout.batch) * p.layout.num_kv_heads;
  if (bh > 65535) return cudaErrorInvalidConfiguration;
  DecodeTcKernel<<<dim3(static_cast<unsigned>(num_splits), 1, static_cast<unsigned>(bh)),
                   kWarps * 32, smem, stream>>>(p, num_splits);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::internal
