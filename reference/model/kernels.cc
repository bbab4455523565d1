// Deterministic and BLAS-backed CPU kernels.
#include "reference/model/kernels.h"

#include <cmath>

#ifdef KVCONFORM_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace kvc::model {

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
  // Rows in blocks of 16 so each weight row is reused from cache; the order of the
  // reduction inside each output element is Dot()'s and nothing else.
  for (size_t r0 = 0; r0 < m; r0 += 16) {
    const size_t r1 = r0 + 16 < m ? r0 + 16 : m;
    for (size_t o = 0; o < n; ++o) {
      const float* wr = w + o * k;
      for (size_t r = r0; r < r1; ++r) y[r * n + o] = Dot(x + r * k, wr, k);
    }
  }
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
