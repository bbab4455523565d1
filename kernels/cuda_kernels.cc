// Public CUDA launchers: validate with the CPU twin's checks, launch, map errors.
#include "kernels/cuda_kernels.h"

#include "kernels/cpu_twins.h"
#include "kernels/cuda_launch_internal.h"

namespace kvc::kernels {

Status CudaStatus(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::Ok();
  const StatusCode code = (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
                              ? StatusCode::kUnavailable
                              : StatusCode::kInternal;
  return Status(code, what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

bool CudaDeviceAvailable(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return false;
  }
  if (n <= 0) {
    if (why) *why = "cudaGetDeviceCount returned 0 devices";
    return false;
  }
  return true;
}

cudaError_t RmsNormCuda(const RmsNormParams& p, cudaStream_t stream) {
  if (!ValidateRmsNorm(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchRmsNorm(p, stream);
}
cudaError_t RopeCuda(const RopeParams& p, cudaStream_t stream) {
  if (!ValidateRope(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchRope(p, stream);
}
cudaError_t SwiGluCuda(const SwiGluParams& p, cudaStream_t stream) {
  if (!ValidateSwiGlu(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchSwiGlu(p, stream);
}
cudaError_t KvAppendCuda(const KvAppendParams& p, cudaStream_t stream) {
  if (!ValidateAppend(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchKvAppend(p, stream);
}
cudaError_t KvPublishCuda(const KvPublishParams& p, cudaStream_t stream) {
  if (!ValidatePublish(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchKvPublish(p, stream);
}
cudaError_t AttentionCuda(const AttentionParams& p, cudaStream_t stream) {
  if (!ValidateAttention(p).ok()) return cudaErrorInvalidValue;
  return internal::LaunchAttention(p, stream);
}

cudaError_t FillUniformCuda(void* dst, KvDtype dtype, int64_t n, uint64_t seed, float lo, float hi,
                            cudaStream_t stream) {
  if (dst == nullptr || n <= 0 || !(lo < hi)) return cudaErrorInvalidValue;
  return internal::LaunchFillUniform(dst, dtype, n, seed, lo, hi, stream);
}

cudaError_t MatmulCuda(const MatmulParams& p, cublasHandle_t handle, cudaStream_t stream,
                       cublasStatus_t* cublas_status) {
  if (!ValidateMatmul(p).ok() || handle == nullptr) return cudaErrorInvalidValue;
  cublasStatus_t s = cublasSetStream(handle, stream);
  if (s == CUBLAS_STATUS_SUCCESS) {
    // Row-major y[M,N] = x[M,K] w[N,K]^T  <=>  column-major y^T[N,M] = w^T(op T) x^T.
    const cudaDataType_t t = p.dtype == KvDtype::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
    const float alpha = 1.0f, beta = 0.0f;
    s = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, p.n, p.m, p.k, &alpha, p.w, t, p.k, p.x, t,
                     p.k, &beta, p.y, t, p.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  }
  if (cublas_status) *cublas_status = s;
  if (s != CUBLAS_STATUS_SUCCESS) return cudaErrorUnknown;
  return cudaGetLastError();
}

}  // namespace kvc::kernels
