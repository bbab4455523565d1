// Device primitives shared by the tensor-core attention kernels (attention_tc.cu, decode_tc.cu):
// bf16 packing, asynchronous global -> shared copies, ldmatrix fragment loads and the
// mma.sync.m16n8k16 bf16 product. Fragment maps: kernel_types.h (Mma* functions). Include from
// .cu files only.
#ifndef KVCONFORM_KERNELS_TC_PRIMITIVES_CUH_
#define KVCONFORM_KERNELS_TC_PRIMITIVES_CUH_

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>

namespace kvc::kernels::internal::tc {

inline constexpr unsigned kFull = 0xffffffffu;

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x (low half) = lo
  return *reinterpret_cast<const uint32_t*>(&v);
}

__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous; `bytes` 0 writes zeros (src is not read).
__device__ __forceinline__ void CpAsync16(uint32_t dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Four 8x8 b16 matrices; lane l supplies the address of row (l & 7) of matrix l >> 3. Rows of
// [n][k] storage give the B fragments of m16n8k16 (non-transposed), rows of [k][n] storage
// give them through .trans.
__device__ __forceinline__ void LdMatrixX4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// d[0..3] += A[16x16] * B[16x8] (bf16 inputs, fp32 accumulation).
__device__ __forceinline__ void Mma(float* d, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// S = Q K^T over kNTiles n-tiles of 8 keys for one m16 row tile: qa holds Q's A fragments for
// kDSteps k-steps of 16 channels; k_tile is the shared-memory address of the first key's row,
// rows of row_bytes bytes ([key][d], bf16). One ldmatrix.x4 gives two k-steps' B fragments.
template <int kNTiles, int kDSteps>
__device__ __forceinline__ void QkTile(float (&s)[kNTiles][4], const uint32_t (&qa)[kDSteps][4],
                                       uint32_t k_tile, int row_bytes, int lane) {
  const int mi = lane >> 3, mr = lane & 7;  // ldmatrix: row mr of matrix mi
#pragma unroll
  for (int nt = 0; nt < kNTiles; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kDSteps; kk += 2) {
      uint32_t r[4];
      LdMatrixX4(r,
                 k_tile + (nt * 8 + mr) * row_bytes + ((kk + (mi >> 1)) * 16 + (mi & 1) * 8) * 2);
      Mma(s[nt], qa[kk], r[0], r[1]);
      Mma(s[nt], qa[kk + 1], r[2], r[3]);
    }
  }
}

// O += P V for k-step kk (keys 16 kk .. 16 kk + 15) of an m16 row tile: P's A fragment is S's
// accumulators (after OnlineSoftmaxStep) of n-tiles 2 kk and 2 kk + 1, rounded to bf16; v_tile
// is the shared-memory address of the tile's first V row ([key][d], row_bytes bytes), and
// ldmatrix.trans gives the B fragments of two of o's kDTiles n-tiles at a time.
template <int kNTiles, int kDTiles>
__device__ __forceinline__ void PvStep(float (&o)[kDTiles][4], const float (&s)[kNTiles][4], int kk,
                                       uint32_t v_tile, int row_bytes, int lane) {
  const int mi = lane >> 3, mr = lane & 7;
  const uint32_t pa[4] = {
      PackBf16(s[2 * kk][0], s[2 * kk][1]), PackBf16(s[2 * kk][2], s[2 * kk][3]),
      PackBf16(s[2 * kk + 1][0], s[2 * kk + 1][1]), PackBf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
  for (int dt = 0; dt < kDTiles; dt += 2) {
    uint32_t r[4];
    LdMatrixX4Trans(r, v_tile + (kk * 16 + (mi & 1) * 8 + mr) * row_bytes + (dt + (mi >> 1)) * 16);
    Mma(o[dt], pa, r[0], r[1]);
    Mma(o[dt + 1], pa, r[2], r[3]);
  }
}

// log2(e): scores are scaled by scale * kLog2e so that the softmax's exponentials are exp2f.
inline constexpr float kLog2e = 1.4426950408889634f;

// One online-softmax step of an m16 row tile over kNTiles n-tiles of scores s, already in the
// base-2 domain (masked entries -inf), for this thread's two rows (C fragment rows g and g + 8;
// the four lanes of a quad share a row): the running maximum m_run and sum l_run advance, the
// kDTiles n-tiles of the output accumulator o are rescaled by exp2(m_old - m_new), and s is
// replaced by its exponentials exp2(s - m_new) (0 for masked entries; a row with no key yet
// keeps m_run = -inf and l_run = 0).
template <int kNTiles, int kDTiles>
__device__ __forceinline__ void OnlineSoftmaxStep(float (&s)[kNTiles][4], float (&m_run)[2],
                                                  float (&l_run)[2], float (&o)[kDTiles][4]) {
#pragma unroll
  for (int rh = 0; rh < 2; ++rh) {
    float mx = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * rh], s[nt][2 * rh + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, 2));
    const float m_new = fmaxf(m_run[rh], mx);
    const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet
    const float corr = exp2f(m_run[rh] - m_use);            // 0 when m_run was -inf
    float sum = 0.0f;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
#pragma unroll
      for (int c = 2 * rh; c < 2 * rh + 2; ++c) {
        const float e = exp2f(s[nt][c] - m_use);  // 0 for masked keys
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
}

}  // namespace kvc::kernels::internal::tc

#endif  // KVCONFORM_KERNELS_TC_PRIMITIVES_CUH_
