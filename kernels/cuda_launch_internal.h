// Internal: raw kernel launches in cuda_kernels_impl.cu. Params are already validated by the
// public launchers (cuda_kernels.cc); each returns the launch's cudaGetLastError().
#ifndef KVCONFORM_KERNELS_CUDA_LAUNCH_INTERNAL_H_
#define KVCONFORM_KERNELS_CUDA_LAUNCH_INTERNAL_H_

#include <cuda_runtime.h>

#include "kernels/kernel_types.h"

namespace kvc::kernels::internal {

cudaError_t LaunchRmsNorm(const RmsNormParams& p, cudaStream_t stream);
cudaError_t LaunchRope(const RopeParams& p, cudaStream_t stream);
cudaError_t LaunchSwiGlu(const SwiGluParams& p, cudaStream_t stream);
cudaError_t LaunchKvAppend(const KvAppendParams& p, cudaStream_t stream);
cudaError_t LaunchKvPublish(const KvPublishParams& p, cudaStream_t stream);
cudaError_t LaunchAttention(const AttentionParams& p, cudaStream_t stream);
// Tensor-core prefill (attention_tc.cu); only for UseTensorCorePrefill(p) shapes.
cudaError_t LaunchAttentionTc(const AttentionParams& p, cudaStream_t stream);
// Tensor-core decode (decode_tc.cu); only for UseTensorCoreDecode(p) shapes. Writes the output
// (num_splits 1) or the split partials; the caller launches the combine.
cudaError_t LaunchDecodeTc(const AttentionParams& p, int32_t num_splits, cudaStream_t stream);
cudaError_t LaunchFillUniform(void* dst, KvDtype dtype, int64_t n, uint64_t seed, float lo,
                              float hi, cudaStream_t stream);

}  // namespace kvc::kernels::internal

#endif  // KVCONFORM_KERNELS_CUDA_LAUNCH_INTERNAL_H_
