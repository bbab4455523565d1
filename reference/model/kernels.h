// CPU kernels of the reference engine, in two modes.
//
// Deterministic mode: every reduction runs in one fixed order that depends only on the
// reduction length, never on how many rows a call carries, how a prompt was chunked, the
// batch, or the storage layout: Dot() sums 8 interleaved lanes in index order and combines
// them in a fixed tree, then adds the tail; each output element of Linear() is bit-identical
// to one Dot() (Linear() computes blocks of outputs at once with SIMD registers, AVX when the
// CPU has it, each output keeping Dot()'s exact order; kernels_test.cc checks this). Fast mode:
// matrix products go through OpenBLAS sgemm when built with KVCONFORM_HAVE_OPENBLAS
// (blocking depends on the shape, so results match deterministic mode only within a
// declared tolerance); otherwise fast mode uses the deterministic kernels.
// Stateless and thread-safe.
#ifndef KVCONFORM_REFERENCE_MODEL_KERNELS_H_
#define KVCONFORM_REFERENCE_MODEL_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kvc::model {

enum class ComputeMode : uint8_t { kDeterministic, kFast };
std::string_view ComputeModeName(ComputeMode m);  // "deterministic" | "fast"
bool FastModeUsesBlas();                          // true when OpenBLAS is linked

// sum_k a[k] * b[k] in the fixed order described above.
float Dot(const float* a, const float* b, size_t n);

// y[M, N] = x[M, K] * W[N, K]^T (a PyTorch Linear without bias).
void Linear(const float* x, const float* w, float* y, size_t m, size_t n, size_t k,
            ComputeMode mode);

// y[M, K] = x[M, K] / sqrt(mean(x^2) + eps) * weight[K] (HF LlamaRMSNorm, fp32).
void RmsNorm(const float* x, const float* weight, float* y, size_t m, size_t k, float eps);

// Sets the thread count OpenBLAS uses (no-op without OpenBLAS).
void SetBlasThreads(int n);

}  // namespace kvc::model

#endif  // KVCONFORM_REFERENCE_MODEL_KERNELS_H_
