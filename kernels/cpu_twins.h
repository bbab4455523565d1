// CPU twins of the CUDA kernels: plain, obviously-right C++ with the same parameter structs as
// the launchers in kernels/cuda_kernels.h (the "plain reference next to the fast version").
//
// Contract: each twin validates its params (shapes, nulls, overflow of sizes) and returns a
// non-OK Status before touching any output; pointers are host pointers borrowed for the call.
// Thread safety: twins are pure functions of their inputs (no global state).
// Arithmetic: fp32 with a fixed summation order; exp/sin/cos from <cmath>. The CUDA kernels
// agree within the tolerances stated in kernels/cuda_kernels_test.cc, not bit-for-bit (except
// KV append and publish, which are exact).
#ifndef KVCONFORM_KERNELS_CPU_TWINS_H_
#define KVCONFORM_KERNELS_CPU_TWINS_H_

#include <cstdint>

#include "kernels/kernel_types.h"
#include "reference/base/status.h"

namespace kvc::kernels {

// Storage conversions, bit-exact with the device intrinsics __float2half_rn,
// __float2bfloat16_rn, __half2float and __bfloat162float (IEEE round to nearest even) for every
// value but NaN, which stays a NaN (its bits follow libgcc's conversions, not the device's).
uint16_t FloatToHalfBits(float f);
float HalfBitsToFloat(uint16_t h);
uint16_t FloatToBf16Bits(float f);
float Bf16BitsToFloat(uint16_t b);
// Rounds f through the storage dtype (identity for kF32).
float RoundToDtype(float f, KvDtype d);
// Element `i` of a storage buffer of dtype `d`, as float.
float LoadKv(const void* base, KvDtype d, int64_t i);
void StoreKv(void* base, KvDtype d, int64_t i, float v);

// Shape checks shared by twins and launchers (launchers map a failure to
// cudaErrorInvalidValue; a caller that wants the reason calls these first and returns their
// Status, as kernels/cuda_engine.cc does). Device-resident contents (block ids, lengths) are
// checked where they are read: by the twin before writing, by the kernel per row (error flag /
// clamping).
Status ValidateLayout(const KvLayout& l);
Status ValidateAttention(const AttentionParams& p);
Status ValidateAppend(const KvAppendParams& p);
Status ValidatePublish(const KvPublishParams& p);
Status ValidateRmsNorm(const RmsNormParams& p);
Status ValidateRope(const RopeParams& p);
Status ValidateSwiGlu(const SwiGluParams& p);
Status ValidateMatmul(const MatmulParams& p);

Status RmsNormCpu(const RmsNormParams& p);
Status RopeCpu(const RopeParams& p);
Status SwiGluCpu(const SwiGluParams& p);
Status MatmulCpu(const MatmulParams& p);
// Also checks every sequence's base_len against visible_len and every row's block id BEFORE
// writing anything: a stale sequence (base_len != visible_len) sets *error_flag = 1 and returns
// kFailedPrecondition, an unaddressable row sets *error_flag = 1 and returns kOutOfRange; either
// way no byte is written (the CUDA kernel writes nothing of the failing sequence or row).
Status KvAppendCpu(const KvAppendParams& p);
Status KvPublishCpu(const KvPublishParams& p);
// Also checks kv_len[b] in [t_q, max_kv_len] and every block id it reads.
Status AttentionCpu(const AttentionParams& p);

}  // namespace kvc::kernels

#endif  // KVCONFORM_KERNELS_CPU_TWINS_H_
