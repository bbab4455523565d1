// Internal: small device kernels of the CUDA engine (cuda_engine_kernels.cu): embedding gather,
// head-major <-> token-major permutes, residual add and the row-invariant deterministic linear.
// Each returns the launch's cudaGetLastError(); shapes are validated by the caller.
#ifndef KVCONFORM_KERNELS_CUDA_ENGINE_KERNELS_H_
#define KVCONFORM_KERNELS_CUDA_ENGINE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace kvc::kernels::internal {

// h[r, :] = table[tokens[r], :] for r < rows; table [V, d]. Token ids are checked on the host.
cudaError_t EmbedGather(const float* table, const int32_t* tokens, float* h, int32_t rows,
                        int32_t d, cudaStream_t stream);
// to_head_major: out[h, t, e] = in[t, h, e]; else out[t, h, e] = in[h, t, e]. in != out.
cudaError_t PermuteHeads(const float* in, float* out, int32_t t, int32_t heads, int32_t d,
                         bool to_head_major, cudaStream_t stream);
// y[i] += x[i], n elements.
cudaError_t AddInPlace(float* y, const float* x, int64_t n, cudaStream_t stream);
// y[m, n] = sum_k x[m, k] w[n, k] with one warp per output: lane l sums k = l, l + 32, ... in
// order (fma), then a fixed xor-shuffle tree. The value of y[i, j] depends only on x[i, :],
// w[j, :] and k, never on m or on the launch shape.
cudaError_t DeterministicLinear(const float* x, const float* w, float* y, int32_t m, int32_t n,
                                int32_t k, cudaStream_t stream);

}  // namespace kvc::kernels::internal

#endif  // KVCONFORM_KERNELS_CUDA_ENGINE_KERNELS_H_
