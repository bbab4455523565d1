// Deterministic and BLAS-backed CPU kernels.
#include "reference/model/kernels.h"

#include <cmath>
#include <cstring>

#ifdef KVCONFORM_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace kvc::model {

namespace {

// Four float lanes as one GCC/Clang vector value (one SSE/NEON register): element-wise IEEE
// multiply and add, the same operations Dot() performs lane by lane. Dot()'s eight lanes are
// held as two of these (lanes 0-3 and 4-7); lanes never mix until Dot()'s final fixed tree.
typedef float Lanes4 __attribute__((vector_size(16)));

// Unaligned load of p[0..4).
inline void Load4(Lanes4* v, const float* p) { std::memcpy(v, p, sizeof(*v)); }

// y[r0+i, o0+j] for i < R, j < C, each exactly Dot(x row, w row, k): lane L of the eight
// accumulates a[kk + L] * b[kk + L] for kk = 0, 8, 16, ... in index order, then the lanes are
// combined in Dot()'s tree and the tail (summed in index order from 0) is added last. Computing
// R x C outputs at once only reuses loaded x and w vectors; no element's order changes.
// x: [*, k] row-major, w: [*, k] row-major, y: [*, n] row-major.
template <size_t R, size_t C>
void LinearBlock(const float* x, const float* w, float* y, size_t n, size_t k, size_t r0,
                 size_t o0) {
  Lanes4 lo[R][C] = {}, hi[R][C] = {};  // lanes 0-3 and 4-7 of each output's accumulator
  size_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    Lanes4 wlo[C], whi[C];
#pragma GCC unroll 8
    for (size_t j = 0; j < C; ++j) {
      Load4(&wlo[j], w + (o0 + j) * k + kk);
      Load4(&whi[j], w + (o0 + j) * k + kk + 4);
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < R; ++i) {
      Lanes4 xlo, xhi;
      Load4(&xlo, x + (r0 + i) * k + kk);
      Load4(&xhi, x + (r0 + i) * k + kk + 4);
#pragma GCC unroll 8
      for (size_t j = 0; j < C; ++j) {
        lo[i][j] += xlo * wlo[j];
        hi[i][j] += xhi * whi[j];
      }
    }
  }
  for (size_t i = 0; i < R; ++i) {
    for (size_t j = 0; j < C; ++j) {
      const float* a = x + (r0 + i) * k;
      const float* b = w + (o0 + j) * k;
      float tail = 0;
      for (size_t t = kk; t < k; ++t) tail += a[t] * b[t];
      const Lanes4& l = lo[i][j];
      const Lanes4& h = hi[i][j];
      y[(r0 + i) * n + o0 + j] =
          (((l[0] + l[1]) + (l[2] + l[3])) + ((h[0] + h[1]) + (h[2] + h[3]))) + tail;
    }
  }
}

#if defined(__GNUC__) && defined(__x86_64__)
#define KVC_HAVE_AVX_LINEAR 1
// Eight float lanes in one AVX register: Dot()'s eight accumulator lanes exactly, with
// separate IEEE multiply and add (the "avx" target has no FMA, so nothing is contracted).
typedef float Lanes8 __attribute__((vector_size(32)));

// Same contract and per-element order as LinearBlock, for CPUs with AVX (checked at run time).
template <size_t R, size_t C>
__attribute__((target("avx"))) void LinearBlockAvx(const float* x, const float* w, float* y,
                                                   size_t n, size_t k, size_t r0, size_t o0) {
  Lanes8 acc[R][C] = {};
  size_t kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    Lanes8 wv[C];
#pragma GCC unroll 8
    for (size_t j = 0; j < C; ++j) std::memcpy(&wv[j], w + (o0 + j) * k + kk, sizeof(Lanes8));
#pragma GCC unroll 8
    for (size_t i = 0; i < R; ++i) {
      Lanes8 xv;
      std::memcpy(&xv, x + (r0 + i) * k + kk, sizeof(Lanes8));
#pragma GCC unroll 8
      for (size_t j = 0; j < C; ++j) acc[i][j] += xv * wv[j];
    }
  }
  for (size_t i = 0; i < R; ++i) {
    for (size_t j = 0; j < C; ++j) {
      const float* a = x + (r0 + i) * k;
      const float* b = w + (o0 + j) * k;
      float tail = 0;
      for (size_t t = kk; t < k; ++t) tail += a[t] * b[t];
      const Lanes8& c = acc[i][j];
      y[(r0 + i) * n + o0 + j] =
          (((c[0] + c[1]) + (c[2] + c[3])) + ((c[4] + c[5]) + (c[6] + c[7]))) + tail;
    }
  }
}
#endif

constexpr size_t kBlockRows = 2;     // x rows per register block (portable path)
constexpr size_t kBlockCols = 2;     // weight rows (output columns) per register block
constexpr size_t kAvxBlockRows = 4;  // the same for the AVX path (8 accumulator registers)
constexpr size_t kAvxBlockCols = 2;
constexpr size_t kTileRows = 32;  // x rows kept hot in cache while all weights stream by

// Deterministic y = x W^T: every element equals Dot(x row, w row, k) bit for bit (see
// LinearBlock); blocking only decides which elements are computed together, so the result
// does not depend on m or on the tiling.
void LinearDeterministic(const float* x, const float* w, float* y, size_t m, size_t n, size_t k) {
#ifdef KVC_HAVE_AVX_LINEAR
  static const bool use_avx = __builtin_cpu_supports("avx");
#endif
  for (size_t t0 = 0; t0 < m; t0 += kTileRows) {
    const size_t t1 = t0 + kTileRows < m ? t0 + kTileRows : m;
    // Rows [t0, full) go in register blocks; the leftover rows [full, t1) (all of a decode
    // step's single row) go one output at a time: two weight rows streamed side by side for
    // one x row measured 2x slower than one.
    size_t full = t0;
#ifdef KVC_HAVE_AVX_LINEAR
    if (use_avx) {
      full = t0 + (t1 - t0) / kAvxBlockRows * kAvxBlockRows;
      size_t o = 0;
      for (; o + kAvxBlockCols <= n; o += kAvxBlockCols) {
        for (size_t r = t0; r < full; r += kAvxBlockRows)
          LinearBlockAvx<kAvxBlockRows, kAvxBlockCols>(x, w, y, n, k, r, o);
      }
      for (; o < n; ++o) {
        for (size_t r = t0; r < full; ++r) LinearBlockAvx<1, 1>(x, w, y, n, k, r, o);
      }
    }
#endif
    if (full == t0) {
      full = t0 + (t1 - t0) / kBlockRows * kBlockRows;
      size_t o = 0;
      for (; o + kBlockCols <= n; o += kBlockCols) {
        for (size_t r = t0; r < full; r += kBlockRows)
          LinearBlock<kBlockRows, kBlockCols>(x, w, y, n, k, r, o);
      }
      for (; o < n; ++o) {
        for (size_t r = t0; r < full; ++r) LinearBlock<1, 1>(x, w, y, n, k, r, o);
      }
    }
    for (size_t r = full; r < t1; ++r) {
      for (size_t o = 0; o < n; ++o) LinearBlock<1, 1>(x, w, y, n, k, r, o);
    }
  }
}

}  // namespace

std::string_view ComputeModeName(ComputeMode m) {
  return m == ComputeMode::kDeterministic ? "deterministic" : "fast";
}

bool FastModeUsesBlas() {
#ifdef KVCONFORM_HAVE_OPENBLAS
  return true;
#else
  return false;
#endif
}

float Dot(const float* a, const float* b, size_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t k = 0;
  for (; k + 8 <= n; k += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[k + j] * b[k + j];
  }
  float tail = 0;
  for (; k < n; ++k) tail += a[k] * b[k];
  return (((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) + tail;
}

void Linear(const float* x, const float* w, float* y, size_t m, size_t n, size_t k,
            ComputeMode mode) {
#ifdef KVCONFORM_HAVE_OPENBLAS
  if (mode == ComputeMode::kFast && m == 1) {  // one row: y = W x
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), 1.0f, w,
                static_cast<int>(k), x, 1, 0.0f, y, 1);
    return;
  }
  if (mode == ComputeMode::kFast) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), 0.0f, y,
                static_cast<int>(n));
    return;
  }
#endif
  LinearDeterministic(x, w, y, m, n, k);
}

void RmsNorm(const float* x, const float* weight, float* y, size_t m, size_t k, float eps) {
  for (size_t r = 0; r < m; ++r) {
    const float* xr = x + r * k;
    float ss = 0;
    for (size_t i = 0; i < k; ++i) ss += xr[i] * xr[i];
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(k) + eps);
    for (size_t i = 0; i < k; ++i) y[r * k + i] = weight[i] * (xr[i] * inv);
  }
}

void SetBlasThreads(int n) {
#ifdef KVCONFORM_HAVE_OPENBLAS
  openblas_set_num_threads(n);
#else
  (void)n;
#endif
}

}  // namespace kvc::model
