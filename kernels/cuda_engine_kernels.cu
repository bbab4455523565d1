// Device kernels used only by the CUDA engine (gather, permute, residual, deterministic linear).
#include <cstdint>

#include "kernels/cuda_engine_kernels.h"

namespace kvc::kernels::internal {
namespace {

int Grid(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65536 * 16 ? b : 65536 * 16);
}

__global__ void EmbedGatherKernel(const float* table, const int32_t* tokens, float* h, int32_t rows,
                                  int32_t d) {
  const int64_t n = static_cast<int64_t>(rows) * d;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / d;
    h[i] = table[static_cast<int64_t>(tokens[r]) * d + i % d];
  }
}

__global__ void PermuteHeadsKernel(const float* in, float* out, int32_t t, int32_t heads, int32_t d,
                                   bool to_head_major) {
  const int64_t n = static_cast<int64_t>(t) * heads * d;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // i indexes the token-major tensor [t, heads, d].
    const int64_t e = i % d;
    const int64_t h = (i / d) % heads;
    const int64_t ti = i / (static_cast<int64_t>(d) * heads);
    const int64_t hm = (h * t + ti) * d + e;  // head-major [heads, t, d]
    if (to_head_major) {
      out[hm] = in[i];
    } else {
      out[i] = in[hm];
    }
  }
}

__global__ void AddInPlaceKernel(float* y, const float* x, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

constexpr int kLinWarps = 8;

__global__ void __launch_bounds__(kLinWarps * 32)
    DeterministicLinearKernel(const float* x, const float* w, float* y, int32_t m, int32_t n,
                              int32_t k) {
  const int lane = threadIdx.x & 31;
  const int64_t total = static_cast<int64_t>(m) * n;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kLinWarps;
  for (int64_t o = blockIdx.x * static_cast<int64_t>(kLinWarps) + (threadIdx.x >> 5); o < total;
       o += warps) {
    const float* xr = x + (o / n) * k;
    const float* wr = w + (o % n) * k;
    float acc = 0.0f;
    for (int32_t i = lane; i < k; i += 32) acc = fmaf(xr[i], wr[i], acc);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) y[o] = acc;
  }
}

}  // namespace

cudaError_t EmbedGather(const float* table, const int32_t* tokens, float* h, int32_t rows,
                        int32_t d, cudaStream_t stream) {
  EmbedGatherKernel<<<Grid(static_cast<int64_t>(rows) * d, 256), 256, 0, stream>>>(table, tokens, h,
                                                                                   rows, d);
  return cudaGetLastError();
}

cudaError_t PermuteHeads(const float* in, float* out, int32_t t, int32_t heads, int32_t d,
                         bool to_head_major, cudaStream_t stream) {
  PermuteHeadsKernel<<<Grid(static_cast<int64_t>(t) * heads * d, 256), 256, 0, stream>>>(
      in, out, t, heads, d, to_head_major);
  return cudaGetLastError();
}

cudaError_t AddInPlace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  AddInPlaceKernel<<<Grid(n, 256), 256, 0, stream>>>(y, x, n);
  return cudaGetLastError();
}

cudaError_t DeterministicLinear(const float* x, const float* w, float* y, int32_t m, int32_t n,
                                int32_t k, cudaStream_t stream) {
  const int64_t outputs = static_cast<int64_t>(m) * n;
  DeterministicLinearKernel<<<Grid(outputs, kLinWarps), kLinWarps * 32, 0, stream>>>(x, w, y, m, n,
                                                                                     k);
  return cudaGetLastError();
}

}  // namespace kvc::kernels::internal
