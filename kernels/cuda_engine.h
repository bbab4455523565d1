// The CUDA backend of the reference engine: the same Llama model and the SAME contract
// transactions as reference/model/engine.h, with the layer math on the GPU.
//
// Contract side (host, one copy of the rules): every model call is one append transaction of
// the lifecycle KvObject (reference/lifecycle/kv_object): BeginAppend on the handle's published
// snapshot, StageLayer after each layer's K/V rows were written into the device storage's
// staged interval, then the all-layer Publish; the frontier (reference/frontier FrontierState)
// checks and records each call's purpose exactly as Engine does. Only a non-replayed receipt
// makes the rows visible on the device: KvPublishCuda flips (visible_table, visible_len) from
// the transaction's staged table, and the engine reads the flip back and checks it against the
// receipt. Any failure before publication drops the staged interval (paged blocks return to
// the pool); the device's visible state never changed. Each append also checks, once the
// lifecycle accepted it, that the device's published (visible_len, visible_table) is the
// snapshot the transaction builds on (kInternal otherwise).
//
// Device side (per call of T tokens at positions [T_past, T_past + T)):
//   embeddings (gather) -> per layer: RMSNorm -> Q/K/V projections -> RoPE (config's inverse
//   frequencies, positions of the call) -> KV append of K/V into the staged interval
//   (KvAppendCuda, contiguous or paged storage, fp32) -> attention over T_past + T keys with the
//   bottom-right causal mask (AttentionCuda; decode is t_q = 1) -> o_proj -> residual ->
//   RMSNorm -> gate/up -> SwiGLU -> down -> residual; final RMSNorm and the LM head.
// Matrix products: fast mode uses cuBLAS (MatmulCuda: fp32 GemmEx, CUBLAS_GEMM_DEFAULT, default
// math = no TF32). Deterministic mode uses DeterministicLinear (cuda_engine_kernels.cu): one warp
// per output element with a fixed lane-strided order and a fixed shuffle tree, so a row's result
// does not depend on how many rows the call carries; cuBLAS picks its kernel (and so its
// reduction order) by the shape, which would make cache vs no-cache and chunked vs unchunked
// differ. Deterministic mode also disables split-K and the decode fast path, so decode and
// prefill rows go through the same attention arithmetic; the GPU pairs of
// kvconform parity are then bit-identical (cuda_parity.h).
//
// Ownership: a CudaModel owns the device copy of the weights; a CudaEngine borrows the model
// (must outlive it) and owns its device K/V storage, block pool and scratch buffers.
// Thread safety: none; one engine per thread; all work is on one stream the engine owns.
#ifndef KVCONFORM_KERNELS_CUDA_ENGINE_H_
#define KVCONFORM_KERNELS_CUDA_ENGINE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/device_kv_table.h"
#include "reference/base/status.h"
#include "reference/frontier/frontier.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/model/kernels.h"
#include "reference/model/llama.h"
#include "reference/model/weights.h"

namespace kvc::kernels {

// OK when a CUDA device is usable; else kUnavailable naming the driver's answer. Callers turn
// this into the CLI's "device unavailable" exit code.
Status CheckCudaDevice();

class CudaModel {
 public:
  // Uploads the weights (fp32). kUnavailable without a device; kInternal on CUDA errors.
  static StatusOr<std::unique_ptr<CudaModel>> Upload(const model::LlamaWeights& w);
  ~CudaModel();
  CudaModel(const CudaModel&) = delete;
  CudaModel& operator=(const CudaModel&) = delete;

  const model::LlamaConfig& config() const { return config_; }
  // Token/position checks of the CPU model (same code: LlamaModel::CheckInputs).
  Status CheckInputs(std::span<const int64_t> tokens, uint64_t t_past) const {
    return checker_.CheckInputs(tokens, t_past);
  }

  struct Layer {
    float *input_norm, *q, *k, *v, *o, *post_norm, *gate, *up, *down;
  };
  const std::vector<Layer>& layers() const { return layers_; }
  const float* embed() const { return embed_; }
  const float* final_norm() const { return final_norm_; }
  const float* head() const { return head_; }
  const float* inv_freq() const { return inv_freq_; }

 private:
  CudaModel(model::LlamaConfig c);
  model::LlamaConfig config_;
  model::LlamaModel checker_;  // config only (no weights): reuses CheckInputs
  std::vector<void*> allocations_;
  std::vector<Layer> layers_;
  float *embed_ = nullptr, *final_norm_ = nullptr, *head_ = nullptr, *inv_freq_ = nullptr;
  friend class CudaEngine;
};

struct CudaEngineOptions {
  model::ComputeMode mode = model::ComputeMode::kDeterministic;
  bool paged = false;
  uint64_t block_size = 16;   // paged block size in positions (>= 1)
  uint64_t max_tokens = 0;    // per request; 0 = min(max_position_embeddings, 8192)
  uint64_t max_requests = 4;  // paged: the pool holds max_requests * blocks(max_tokens)
};

class CudaEngine {
 public:
  // kUnavailable without a device, kInvalidArgument for bad options.
  static StatusOr<std::unique_ptr<CudaEngine>> Create(const CudaModel& m, CudaEngineOptions o);
  ~CudaEngine();
  CudaEngine(const CudaEngine&) = delete;
  CudaEngine& operator=(const CudaEngine&) = delete;

  const CudaEngineOptions& options() const { return opts_; }
  Status NewRequest(const std::string& handle);
  // Same contracts as Engine::Prefill / Emit / Decode / Release (reference/model/engine.h).
  Status Prefill(const std::string& handle, std::span<const int64_t> prompt, uint64_t chunk,
                 std::vector<float>* logits);
  Status Emit(const std::string& handle, int64_t token);
  Status Decode(const std::string& handle, int64_t token, std::vector<float>* logits);
  Status Finish(const std::string& handle);   // SERVICE_PHASE_EARLY_FINISH as Engine::Finish
  Status Cancel(const std::string& handle);   // CANCELLED; open transactions aborted
  Status Release(const std::string& handle);  // from FINISHED or CANCELLED; returns its blocks
  StatusOr<lifecycle::Snapshot> Read(const std::string& handle) const { return kv_.Read(handle); }
  const frontier::FrontierState* frontier_state(const std::string& handle) const;
  // The device's published length of `handle` (read back from the device): equals the
  // snapshot's committed_length after every call.
  StatusOr<int32_t> DeviceVisibleLength(const std::string& handle);

 private:
  struct Request;
  struct Scratch;
  CudaEngine(const CudaModel& m, CudaEngineOptions o);
  Status Init();
  StatusOr<Request*> Get(const std::string& handle);
  Status RunAppend(const std::string& handle, std::span<const int64_t> tokens,
                   const frontier::AppendCall& call, std::vector<float>* logits);
  // The forward pass of one call; `hook(layer)` runs after the layer's rows were staged.
  Status Forward(Request* r, std::span<const int64_t> tokens,
                 const std::function<Status(uint64_t)>& hook, std::vector<float>* logits);
  Status Linear(const float* x, const float* w, float* y, int32_t m, int32_t n, int32_t k);
  Status EnsureScratch(int32_t rows);

  const CudaModel& m_;
  CudaEngineOptions opts_;
  lifecycle::KvObject kv_;
  std::map<std::string, std::unique_ptr<Request>> requests_;
  uint64_t next_txn_ = 0;
  int32_t max_tokens_ = 0;
  std::unique_ptr<BlockPool> pool_;
  // Paged: the engine-wide pool per layer ([num_blocks, H_kv, block_size, d_h] fp32, K and V).
  std::vector<float*> pool_k_, pool_v_;
  std::unique_ptr<Scratch> s_;
  void* stream_ = nullptr;  // cudaStream_t
  void* cublas_ = nullptr;  // cublasHandle_t
};

}  // namespace kvc::kernels

#endif  // KVCONFORM_KERNELS_CUDA_ENGINE_H_
