// CUDA launchers for the kvconform kernels; each mirrors its CPU twin in kernels/cpu_twins.h
// (same params struct, device pointers) and returns cudaError_t, FlashInfer style: the caller
// turns it into a Status (CudaStatus below). A params struct that fails the twin's Validate*
// check returns cudaErrorInvalidValue before any launch (CudaStatus maps that to kInternal; a
// caller that wants the reason calls the Validate* function of kernels/cpu_twins.h first and
// returns its Status). Every launch is checked (cudaGetLastError). Launchers are asynchronous on
// `stream`; they never synchronize.
// Thread safety: launchers keep no host state, but the attention launchers set a kernel's
// maximum dynamic shared memory (cudaFuncSetAttribute, a per-process attribute of the kernel)
// right before each launch that needs it. Calls from one host thread, on any streams, are fine;
// from several host threads, an attention launch may find the attribute lowered by another
// thread's smaller shape and fail with a launch error (never a silent wrong result).
#ifndef KVCONFORM_KERNELS_CUDA_KERNELS_H_
#define KVCONFORM_KERNELS_CUDA_KERNELS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "kernels/kernel_types.h"
#include "reference/base/status.h"

namespace kvc::kernels {

cudaError_t RmsNormCuda(const RmsNormParams& p, cudaStream_t stream);
cudaError_t RopeCuda(const RopeParams& p, cudaStream_t stream);
cudaError_t SwiGluCuda(const SwiGluParams& p, cudaStream_t stream);
cudaError_t KvAppendCuda(const KvAppendParams& p, cudaStream_t stream);
cudaError_t KvPublishCuda(const KvPublishParams& p, cudaStream_t stream);
cudaError_t AttentionCuda(const AttentionParams& p, cudaStream_t stream);
// cuBLAS GEMM (cublasGemmEx, CUBLAS_COMPUTE_32F, default math: no TF32). `handle` must be
// bound to `stream` by the caller or is bound here (cublasSetStream). A cuBLAS failure maps to
// cudaErrorUnknown (the cublasStatus_t is written to *cublas_status when non-null).
cudaError_t MatmulCuda(const MatmulParams& p, cublasHandle_t handle, cudaStream_t stream,
                       cublasStatus_t* cublas_status = nullptr);

// Fills n elements of `dtype` at dst with seeded uniform values in [lo, hi), never exactly 0
// (benchmark and test inputs; never time or test on zeros). Not a library kernel: it has no CPU
// twin.
cudaError_t FillUniformCuda(void* dst, KvDtype dtype, int64_t n, uint64_t seed, float lo, float hi,
                            cudaStream_t stream);

// OK for cudaSuccess, else kUnavailable/kInternal with "<what>: <cudaGetErrorString>".
Status CudaStatus(cudaError_t e, const std::string& what);

// True when a CUDA device is usable; otherwise *why says what cudaGetDeviceCount returned
// (e.g. "CUDA driver version is insufficient" on a machine without a GPU).
bool CudaDeviceAvailable(std::string* why);

}  // namespace kvc::kernels

#endif  // KVCONFORM_KERNELS_CUDA_KERNELS_H_
