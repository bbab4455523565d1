// The CUDA engine: lifecycle append transactions on the host, the Llama layer math on the GPU.
#include "kernels/cuda_engine.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu_twins.h"
#include "kernels/cuda_engine_kernels.h"
#include "kernels/cuda_kernels.h"
#include "reference/model/engine.h"

namespace kvc::kernels {
namespace {

cudaStream_t S(void* p) { return static_cast<cudaStream_t>(p); }
cublasHandle_t H(void* p) { return static_cast<cublasHandle_t>(p); }

Status CublasStatus(cublasStatus_t s, const std::string& what) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(what + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}

#define KVC_CUDA(expr, what) KVC_RETURN_IF_ERROR(CudaStatus((expr), (what)))

template <typename T>
StatusOr<T*> DeviceAlloc(size_t count, std::vector<void*>* owner, const std::string& what) {
  void* p = nullptr;
  KVC_CUDA(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)), "cudaMalloc " + what);
  owner->push_back(p);
  return static_cast<T*>(p);
}

StatusOr<float*> Upload(const std::vector<float>& v, std::vector<void*>* owner,
                        const std::string& what) {
  KVC_ASSIGN_OR_RETURN(float* d, DeviceAlloc<float>(v.size(), owner, what));
  if (!v.empty())
    KVC_CUDA(cudaMemcpy(d, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice),
             "upload " + what);
  return d;
}

void FreeAll(std::vector<void*>* v) {
  for (void* p : *v) cudaFree(p);
  v->clear();
}

frontier::AppendCall Call(frontier::AppendPurpose purpose, uint64_t rows,
                          std::optional<uint64_t> token = std::nullopt) {
  frontier::AppendCall c;
  c.purpose = purpose;
  c.rows = rows;
  c.input_token = token;
  return c;
}

}  // namespace

Status CheckCudaDevice() {
  std::string why;
  if (!CudaDeviceAvailable(&why)) return Unavailable("no usable CUDA device (" + why + ")");
  return Status::Ok();
}

// ---- CudaModel ----------------------------------------------------------------------------------

CudaModel::CudaModel(model::LlamaConfig c)
    : config_(c), checker_(model::LlamaWeights{c, {}, {}, {}, {}, {}}) {}

CudaModel::~CudaModel() { FreeAll(&allocations_); }

StatusOr<std::unique_ptr<CudaModel>> CudaModel::Upload(const model::LlamaWeights& w) {
  KVC_RETURN_IF_ERROR(CheckCudaDevice());
  const model::LlamaConfig& c = w.config;
  if (c.hidden_size > INT32_MAX || c.intermediate_size > INT32_MAX || c.vocab_size > INT32_MAX ||
      c.q_width() > INT32_MAX || c.head_dim > kAttnMaxHeadDim ||
      w.layers.size() != c.num_hidden_layers)
    return InvalidArgument("cuda model: shape outside the CUDA engine's int32 limits or d_h > " +
                           std::to_string(kAttnMaxHeadDim));
  std::unique_ptr<CudaModel> m(new CudaModel(c));
  auto* own = &m->allocations_;
  KVC_ASSIGN_OR_RETURN(m->embed_, kernels::Upload(w.embed_tokens, own, "embed_tokens"));
  KVC_ASSIGN_OR_RETURN(m->final_norm_, kernels::Upload(w.final_norm, own, "norm"));
  if (w.lm_head.empty()) {
    m->head_ = m->embed_;  // tied
  } else {
    KVC_ASSIGN_OR_RETURN(m->head_, kernels::Upload(w.lm_head, own, "lm_head"));
  }
  KVC_ASSIGN_OR_RETURN(m->inv_freq_,
                       kernels::Upload(model::RopeInverseFrequencies(c), own, "inv_freq"));
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const model::LayerWeights& lw = w.layers[l];
    const std::string n = "layers." + std::to_string(l) + ".";
    Layer d{};
    KVC_ASSIGN_OR_RETURN(d.input_norm, kernels::Upload(lw.input_norm, own, n + "input_norm"));
    KVC_ASSIGN_OR_RETURN(d.q, kernels::Upload(lw.q_proj, own, n + "q_proj"));
    KVC_ASSIGN_OR_RETURN(d.k, kernels::Upload(lw.k_proj, own, n + "k_proj"));
    KVC_ASSIGN_OR_RETURN(d.v, kernels::Upload(lw.v_proj, own, n + "v_proj"));
    KVC_ASSIGN_OR_RETURN(d.o, kernels::Upload(lw.o_proj, own, n + "o_proj"));
    KVC_ASSIGN_OR_RETURN(d.post_norm, kernels::Upload(lw.post_norm, own, n + "post_norm"));
    KVC_ASSIGN_OR_RETURN(d.gate, kernels::Upload(lw.gate_proj, own, n + "gate_proj"));
    KVC_ASSIGN_OR_RETURN(d.up, kernels::Upload(lw.up_proj, own, n + "up_proj"));
    KVC_ASSIGN_OR_RETURN(d.down, kernels::Upload(lw.down_proj, own, n + "down_proj"));
    m->layers_.push_back(d);
  }
  return m;
}

// ---- CudaEngine ---------------------------------------------------------------------------------

// One request: host block table + device K/V (contiguous: own per-layer buffers [H_kv, cap,
// d_h]; paged: the engine's pool) + the device's published state (visible_len, visible_table).
struct CudaEngine::Request {
  explicit Request(int32_t block_size, int32_t max_tokens) : table(block_size, max_tokens) {}
  ~Request() { FreeAll(&owned); }
  KvBlockTable table;
  std::optional<frontier::FrontierState> fs;
  std::vector<float*> k, v;  // per layer (contiguous only)
  int32_t* d_visible_len = nullptr;
  int32_t* d_visible_table = nullptr;  // [max_blocks] (paged)
  int32_t* d_staged_table = nullptr;   // [max_blocks] (paged)
  std::vector<void*> owned;
};

// Device scratch sized for `rows` rows of one call.
struct CudaEngine::Scratch {
  ~Scratch() { FreeAll(&owned); }
  int32_t rows = 0;
  int32_t *tokens = nullptr, *positions = nullptr;
  float *h = nullptr, *x = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *qh = nullptr,
        *kh = nullptr, *vh = nullptr, *attn_h = nullptr, *attn = nullptr, *o = nullptr,
        *gate = nullptr, *up = nullptr, *logits = nullptr, *workspace = nullptr;
  int64_t workspace_floats = 0;
  std::vector<void*> owned;
  // Fixed small buffers (allocated once): base_len, kv_len, error_flag, published.
  int32_t* ints = nullptr;
  std::vector<void*> fixed;
};

CudaEngine::CudaEngine(const CudaModel& m, CudaEngineOptions o)
    : m_(m),
      opts_(o),
      kv_(lifecycle::CacheAbi{model::EngineCacheAbiId(m.config()),
                              static_cast<uint32_t>(m.config().num_hidden_layers), "post_rope"}) {}

CudaEngine::~CudaEngine() {
  requests_.clear();
  if (s_) {
    FreeAll(&s_->fixed);
    s_.reset();
  }
  for (float* p : pool_k_) cudaFree(p);
  for (float* p : pool_v_) cudaFree(p);
  if (cublas_) cublasDestroy(H(cublas_));
  if (stream_) cudaStreamDestroy(S(stream_));
}

StatusOr<std::unique_ptr<CudaEngine>> CudaEngine::Create(const CudaModel& m, CudaEngineOptions o) {
  KVC_RETURN_IF_ERROR(CheckCudaDevice());
  if (o.paged && (o.block_size == 0 || o.block_size > 4096))
    return InvalidArgument("cuda engine: block size must be in [1, 4096]");
  std::unique_ptr<CudaEngine> e(new CudaEngine(m, o));
  KVC_RETURN_IF_ERROR(e->Init());
  return e;
}

Status CudaEngine::Init() {
  const model::LlamaConfig& c = m_.config();
  uint64_t mt =
      opts_.max_tokens ? opts_.max_tokens : std::min<uint64_t>(c.max_position_embeddings, 8192);
  if (mt == 0 || mt > (1u << 24)) return InvalidArgument("cuda engine: max_tokens out of range");
  max_tokens_ = static_cast<int32_t>(mt);
  cudaStream_t st = nullptr;
  KVC_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = st;
  cublasHandle_t hb = nullptr;
  KVC_RETURN_IF_ERROR(CublasStatus(cublasCreate(&hb), "cublasCreate"));
  cublas_ = hb;
  KVC_RETURN_IF_ERROR(
      CublasStatus(cublasSetMathMode(hb, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode"));
  s_ = std::make_unique<Scratch>();
  KVC_ASSIGN_OR_RETURN(s_->ints, DeviceAlloc<int32_t>(4, &s_->fixed, "engine ints"));
  if (opts_.paged) {
    const int32_t bs = static_cast<int32_t>(opts_.block_size);
    const int64_t per_req = (max_tokens_ + bs - 1) / bs;
    const int64_t blocks =
        per_req * static_cast<int64_t>(std::max<uint64_t>(opts_.max_requests, 1));
    if (blocks > INT32_MAX) return InvalidArgument("cuda engine: block pool too large");
    pool_ = std::make_unique<BlockPool>(static_cast<int32_t>(blocks));
    const size_t floats = static_cast<size_t>(blocks) * c.num_key_value_heads * bs * c.head_dim;
    for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
      void *pk = nullptr, *pv = nullptr;
      KVC_CUDA(cudaMalloc(&pk, floats * sizeof(float)), "cudaMalloc K pool");
      pool_k_.push_back(static_cast<float*>(pk));
      KVC_CUDA(cudaMalloc(&pv, floats * sizeof(float)), "cudaMalloc V pool");
      pool_v_.push_back(static_cast<float*>(pv));
      // Poison: a row read before it was written shows up as NaN logits.
      KVC_CUDA(cudaMemset(pk, 0xff, floats * sizeof(float)), "poison K pool");
      KVC_CUDA(cudaMemset(pv, 0xff, floats * sizeof(float)), "poison V pool");
    }
  }
  return Status::Ok();
}

Status CudaEngine::EnsureScratch(int32_t rows) {
  if (rows <= s_->rows) return Status::Ok();
  KVC_CUDA(cudaStreamSynchronize(S(stream_)), "sync before scratch growth");
  FreeAll(&s_->owned);
  const model::LlamaConfig& c = m_.config();
  const size_t R = static_cast<size_t>(rows);
  const size_t d = c.hidden_size, qw = c.q_width(), kvw = c.kv_width(), F = c.intermediate_size;
  auto* own = &s_->owned;
  KVC_ASSIGN_OR_RETURN(s_->tokens, DeviceAlloc<int32_t>(R, own, "tokens"));
  KVC_ASSIGN_OR_RETURN(s_->positions, DeviceAlloc<int32_t>(R, own, "positions"));
  KVC_ASSIGN_OR_RETURN(s_->h, DeviceAlloc<float>(R * d, own, "h"));
  KVC_ASSIGN_OR_RETURN(s_->x, DeviceAlloc<float>(R * d, own, "x"));
  KVC_ASSIGN_OR_RETURN(s_->q, DeviceAlloc<float>(R * qw, own, "q"));
  KVC_ASSIGN_OR_RETURN(s_->k, DeviceAlloc<float>(R * kvw, own, "k"));
  KVC_ASSIGN_OR_RETURN(s_->v, DeviceAlloc<float>(R * kvw, own, "v"));
  KVC_ASSIGN_OR_RETURN(s_->qh, DeviceAlloc<float>(R * qw, own, "qh"));
  KVC_ASSIGN_OR_RETURN(s_->kh, DeviceAlloc<float>(R * kvw, own, "kh"));
  KVC_ASSIGN_OR_RETURN(s_->vh, DeviceAlloc<float>(R * kvw, own, "vh"));
  KVC_ASSIGN_OR_RETURN(s_->attn_h, DeviceAlloc<float>(R * qw, own, "attn_h"));
  KVC_ASSIGN_OR_RETURN(s_->attn, DeviceAlloc<float>(R * qw, own, "attn"));
  KVC_ASSIGN_OR_RETURN(s_->o, DeviceAlloc<float>(R * d, own, "o"));
  KVC_ASSIGN_OR_RETURN(s_->gate, DeviceAlloc<float>(R * F, own, "gate"));
  KVC_ASSIGN_OR_RETURN(s_->up, DeviceAlloc<float>(R * F, own, "up"));
  KVC_ASSIGN_OR_RETURN(s_->logits, DeviceAlloc<float>(R * c.vocab_size, own, "logits"));
  s_->workspace = nullptr;
  s_->workspace_floats = 0;
  s_->rows = rows;
  return Status::Ok();
}

StatusOr<CudaEngine::Request*> CudaEngine::Get(const std::string& handle) {
  auto it = requests_.find(handle);
  if (it == requests_.end()) return InvalidArgument("cuda engine: unknown handle '" + handle + "'");
  return it->second.get();
}

const frontier::FrontierState* CudaEngine::frontier_state(const std::string& handle) const {
  auto it = requests_.find(handle);
  return it == requests_.end() || !it->second->fs ? nullptr : &*it->second->fs;
}

Status CudaEngine::NewRequest(const std::string& handle) {
  if (requests_.count(handle))
    return InvalidArgument("cuda engine: handle '" + handle + "' exists");
  const model::LlamaConfig& c = m_.config();
  auto r = std::make_unique<Request>(opts_.paged ? static_cast<int32_t>(opts_.block_size) : 0,
                                     max_tokens_);
  KVC_ASSIGN_OR_RETURN(r->d_visible_len, DeviceAlloc<int32_t>(1, &r->owned, "visible_len"));
  KVC_CUDA(cudaMemset(r->d_visible_len, 0, sizeof(int32_t)), "visible_len = 0");
  if (opts_.paged) {
    const size_t mb = static_cast<size_t>(r->table.max_blocks());
    KVC_ASSIGN_OR_RETURN(r->d_visible_table, DeviceAlloc<int32_t>(mb, &r->owned, "visible_table"));
    KVC_ASSIGN_OR_RETURN(r->d_staged_table, DeviceAlloc<int32_t>(mb, &r->owned, "staged_table"));
    KVC_CUDA(cudaMemset(r->d_visible_table, 0xff, mb * sizeof(int32_t)), "visible_table = -1");
  } else {
    const size_t floats = static_cast<size_t>(c.kv_width()) * max_tokens_;
    for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
      KVC_ASSIGN_OR_RETURN(float* k, DeviceAlloc<float>(floats, &r->owned, "K"));
      KVC_ASSIGN_OR_RETURN(float* v, DeviceAlloc<float>(floats, &r->owned, "V"));
      KVC_CUDA(cudaMemset(k, 0xff, floats * sizeof(float)), "poison K");
      KVC_CUDA(cudaMemset(v, 0xff, floats * sizeof(float)), "poison V");
      r->k.push_back(k);
      r->v.push_back(v);
    }
  }
  // The lifecycle object owns the handle's state; the device storage follows it.
  KVC_RETURN_IF_ERROR(kv_.Allocate(handle, handle).status());
  requests_[handle] = std::move(r);
  return Status::Ok();
}

Status CudaEngine::Linear(const float* x, const float* w, float* y, int32_t m, int32_t n,
                          int32_t k) {
  if (opts_.mode == model::ComputeMode::kDeterministic)
    return CudaStatus(internal::DeterministicLinear(x, w, y, m, n, k, S(stream_)),
                      "deterministic linear");
  MatmulParams p;
  p.dtype = KvDtype::kF32;
  p.x = x;
  p.w = w;
  p.y = y;
  p.m = m;
  p.n = n;
  p.k = k;
  cublasStatus_t cs = CUBLAS_STATUS_SUCCESS;
  const cudaError_t e = MatmulCuda(p, H(cublas_), S(stream_), &cs);
  KVC_RETURN_IF_ERROR(CublasStatus(cs, "cublasGemmEx"));
  return CudaStatus(e, "matmul");
}

Status CudaEngine::Forward(Request* r, std::span<const int64_t> tokens,
                           const std::function<Status(uint64_t)>& hook,
                           std::vector<float>* logits) {
  const model::LlamaConfig& c = m_.config();
  const int32_t T = static_cast<int32_t>(tokens.size());
  const int32_t t_past = r->table.committed_len();
  KVC_RETURN_IF_ERROR(EnsureScratch(T));
  cudaStream_t st = S(stream_);
  const int32_t d = static_cast<int32_t>(c.hidden_size),
                F = static_cast<int32_t>(c.intermediate_size);
  const int32_t dh = static_cast<int32_t>(c.head_dim),
                Hq = static_cast<int32_t>(c.num_attention_heads);
  const int32_t Hkv = static_cast<int32_t>(c.num_key_value_heads);
  const int32_t qw = Hq * dh, kvw = Hkv * dh, V = static_cast<int32_t>(c.vocab_size);

  // Host inputs of the call: token ids, positions and [base_len, kv_len, error_flag, published].
  std::vector<int32_t> tok(T), pos(T);
  for (int32_t i = 0; i < T; ++i) {
    tok[i] = static_cast<int32_t>(tokens[i]);
    pos[i] = t_past + i;
  }
  const int32_t ints[4] = {t_past, t_past + T, 0, 0};
  KVC_CUDA(cudaMemcpyAsync(s_->tokens, tok.data(), T * sizeof(int32_t), cudaMemcpyHostToDevice, st),
           "upload tokens");
  KVC_CUDA(
      cudaMemcpyAsync(s_->positions, pos.data(), T * sizeof(int32_t), cudaMemcpyHostToDevice, st),
      "upload positions");
  KVC_CUDA(cudaMemcpyAsync(s_->ints, ints, sizeof(ints), cudaMemcpyHostToDevice, st),
           "upload lengths");
  KvLayout lay;
  lay.dtype = KvDtype::kF32;
  lay.batch = 1;
  lay.num_kv_heads = Hkv;
  lay.head_dim = dh;
  if (opts_.paged) {
    lay.block_size = r->table.block_size();
    lay.num_blocks = pool_->num_blocks();
    lay.max_blocks_per_seq = r->table.max_blocks();
    KVC_CUDA(cudaMemcpyAsync(r->d_staged_table, r->table.staged_table().data(),
                             r->table.staged_table().size() * sizeof(int32_t),
                             cudaMemcpyHostToDevice, st),
             "upload staged block table");
  } else {
    lay.capacity = max_tokens_;
  }
  int32_t* base_len = s_->ints;
  int32_t* kv_len = s_->ints + 1;
  int32_t* error_flag = s_->ints + 2;

  // Attention configuration: deterministic = one unsplit SIMT path for decode and prefill.
  const bool det = opts_.mode == model::ComputeMode::kDeterministic;
  int32_t split = 0;
  if (!det && T == 1) {
    int dev = 0, sms = 0;
    KVC_CUDA(cudaGetDevice(&dev), "cudaGetDevice");
    KVC_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
    split = ChooseSplitSize(1, Hkv, t_past + T, sms);
  }
  AttentionParams ap;
  ap.layout = lay;
  ap.block_table = opts_.paged ? r->d_staged_table : nullptr;
  ap.kv_len = kv_len;
  ap.max_kv_len = t_past + T;
  ap.q = s_->qh;
  ap.out = s_->attn_h;
  ap.num_q_heads = Hq;
  ap.t_q = T;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(dh));
  ap.split_size = split;
  ap.simt_only = det;
  const int64_t ws = AttentionWorkspaceFloats(ap);
  if (ws > s_->workspace_floats) {
    KVC_CUDA(cudaStreamSynchronize(st), "sync before workspace growth");
    KVC_ASSIGN_OR_RETURN(s_->workspace, DeviceAlloc<float>(static_cast<size_t>(ws), &s_->owned,
                                                           "split-K workspace"));
    s_->workspace_floats = ws;
  }
  ap.workspace = ws > 0 ? s_->workspace : nullptr;

  KVC_CUDA(internal::EmbedGather(m_.embed(), s_->tokens, s_->h, T, d, st), "embedding gather");
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (uint64_t l = 0; l < c.num_hidden_layers; ++l) {
    const CudaModel::Layer& w = m_.layers()[l];
    float* kc = opts_.paged ? pool_k_[l] : r->k[l];
    float* vc = opts_.paged ? pool_v_[l] : r->v[l];
    KVC_CUDA(RmsNormCuda({s_->h, w.input_norm, s_->x, T, d, eps}, st), "input RMSNorm");
    KVC_RETURN_IF_ERROR(Linear(s_->x, w.q, s_->q, T, qw, d));
    KVC_RETURN_IF_ERROR(Linear(s_->x, w.k, s_->k, T, kvw, d));
    KVC_RETURN_IF_ERROR(Linear(s_->x, w.v, s_->v, T, kvw, d));
    // RoPE on token-major rows: [T, H, 1, d_h] is the [B, H, t, d_h] layout with B = T, t = 1.
    RopeParams rp;
    rp.q = s_->q;
    rp.k = s_->k;
    rp.positions = s_->positions;
    rp.batch = T;
    rp.num_q_heads = Hq;
    rp.num_kv_heads = Hkv;
    rp.t = 1;
    rp.head_dim = dh;
    rp.theta = static_cast<float>(c.rope_theta);
    rp.inv_freq = m_.inv_freq();
    KVC_CUDA(RopeCuda(rp, st), "RoPE");
    KVC_CUDA(internal::PermuteHeads(s_->k, s_->kh, T, Hkv, dh, true, st), "K to head-major");
    KVC_CUDA(internal::PermuteHeads(s_->v, s_->vh, T, Hkv, dh, true, st), "V to head-major");
    KvAppendParams kp;
    kp.layout = lay;
    kp.k_cache = kc;
    kp.v_cache = vc;
    kp.block_table = opts_.paged ? r->d_staged_table : nullptr;
    kp.base_len = base_len;
    kp.visible_len = r->d_visible_len;  // a stale base stages nothing and sets the error flag
    kp.k_new = s_->kh;
    kp.v_new = s_->vh;
    kp.t_new = T;
    kp.error_flag = error_flag;
    KVC_RETURN_IF_ERROR(ValidateAppend(kp));  // the reason; the launcher only says "invalid"
    KVC_CUDA(KvAppendCuda(kp, st), "KV append");
    // The layer's rows are staged in stream order before any reader below.
    if (hook) KVC_RETURN_IF_ERROR(hook(l));
    KVC_CUDA(internal::PermuteHeads(s_->q, s_->qh, T, Hq, dh, true, st), "Q to head-major");
    ap.k_cache = kc;
    ap.v_cache = vc;
    KVC_RETURN_IF_ERROR(ValidateAttention(ap));
    KVC_CUDA(AttentionCuda(ap, st), "attention");
    KVC_CUDA(internal::PermuteHeads(s_->attn_h, s_->attn, T, Hq, dh, false, st),
             "attention output to token-major");
    KVC_RETURN_IF_ERROR(Linear(s_->attn, w.o, s_->o, T, d, qw));
    KVC_CUDA(internal::AddInPlace(s_->h, s_->o, static_cast<int64_t>(T) * d, st), "residual");
    KVC_CUDA(RmsNormCuda({s_->h, w.post_norm, s_->x, T, d, eps}, st), "post-attention RMSNorm");
    KVC_RETURN_IF_ERROR(Linear(s_->x, w.gate, s_->gate, T, F, d));
    KVC_RETURN_IF_ERROR(Linear(s_->x, w.up, s_->up, T, F, d));
    KVC_CUDA(SwiGluCuda({s_->gate, s_->up, s_->gate, static_cast<int64_t>(T) * F}, st), "SwiGLU");
    KVC_RETURN_IF_ERROR(Linear(s_->gate, w.down, s_->o, T, d, F));
    KVC_CUDA(internal::AddInPlace(s_->h, s_->o, static_cast<int64_t>(T) * d, st), "residual");
  }
  // Final norm and LM head over the last row only (the engine's calls want [1, V]).
  KVC_CUDA(
      RmsNormCuda({s_->h + static_cast<int64_t>(T - 1) * d, m_.final_norm(), s_->x, 1, d, eps}, st),
      "final RMSNorm");
  KVC_RETURN_IF_ERROR(Linear(s_->x, m_.head(), s_->logits, 1, V, d));
  logits->assign(static_cast<size_t>(V), NAN);
  int32_t flag = 1;
  KVC_CUDA(cudaMemcpyAsync(logits->data(), s_->logits, static_cast<size_t>(V) * sizeof(float),
                           cudaMemcpyDeviceToHost, st),
           "download logits");
  KVC_CUDA(cudaMemcpyAsync(&flag, error_flag, sizeof(int32_t), cudaMemcpyDeviceToHost, st),
           "download append error flag");
  KVC_CUDA(cudaStreamSynchronize(st), "forward pass");
  if (flag != 0)
    return Internal(
        "cuda engine: KV append found an unaddressable row or a base length that is not the "
        "published one");
  return Status::Ok();
}

Status CudaEngine::RunAppend(const std::string& handle, std::span<const int64_t> tokens,
                             const frontier::AppendCall& call, std::vector<float>* logits) {
  if (tokens.empty()) return InvalidArgument("cuda engine: empty append");
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot snap, kv_.Read(handle));
  const uint64_t t = snap.committed_length, n = tokens.size();
  if (static_cast<uint64_t>(r->table.committed_len()) != t)
    return Internal("cuda engine: device storage length differs from the published snapshot of '" +
                    handle + "'");
  KVC_RETURN_IF_ERROR(m_.CheckInputs(tokens, t));
  if (!r->fs) r->fs.emplace(0);
  KVC_RETURN_IF_ERROR(r->fs->CheckAppend(call));
  lifecycle::BeginAppendRequest req;
  req.txn_id = handle + "/append-" + std::to_string(next_txn_++);
  req.idempotency_key = req.txn_id;
  req.handle_id = handle;
  req.base = snap.base();
  req.cache_abi = kv_.abi().id;
  req.interval = {t, n};
  req.binding = {t, n, t + n, "post_rope"};
  KVC_RETURN_IF_ERROR(kv_.BeginAppend(req).status());
  // The device's published state must be the snapshot this transaction builds on (checked once
  // the lifecycle accepted the transaction, so lifecycle errors keep their own codes).
  Status device_state = [&]() -> Status {
    int32_t visible = -1;
    std::vector<int32_t> table(r->table.max_blocks(), -2);
    KVC_CUDA(cudaMemcpy(&visible, r->d_visible_len, sizeof(int32_t), cudaMemcpyDeviceToHost),
             "download visible length");
    if (!table.empty())
      KVC_CUDA(cudaMemcpy(table.data(), r->d_visible_table, table.size() * sizeof(int32_t),
                          cudaMemcpyDeviceToHost),
               "download visible block table");
    const auto& committed = r->table.committed_table();
    for (size_t j = 0; j < table.size(); ++j) {
      // Entries past the published blocks are not part of the visible state.
      if (static_cast<int64_t>(j) * r->table.block_size() < static_cast<int64_t>(t) &&
          table[j] != committed[j])
        return Internal("cuda engine: device block table entry " + std::to_string(j) +
                        " differs from the committed table of '" + handle + "'");
    }
    if (visible < 0 || static_cast<uint64_t>(visible) != t)
      return Internal("cuda engine: device visible length " + std::to_string(visible) +
                      " differs from the published snapshot of '" + handle + "' (" +
                      std::to_string(t) + ")");
    return Status::Ok();
  }();
  if (!device_state.ok()) {
    (void)kv_.CancelTxn(req.txn_id);
    return device_state;
  }
  if (Status s =
          r->table.Stage(static_cast<int32_t>(std::min<uint64_t>(n, INT32_MAX)), pool_.get());
      !s.ok()) {
    (void)kv_.CancelTxn(req.txn_id);
    return s;
  }
  auto hook = [&](uint64_t layer) -> Status {
    return kv_.StageLayer({req.txn_id, static_cast<uint32_t>(layer), req.interval, true, true, ""})
        .status();
  };
  if (Status s = Forward(r, tokens, hook, logits); !s.ok()) {
    (void)kv_.CancelTxn(req.txn_id);
    (void)r->table.Abort(pool_.get());
    (void)cudaStreamSynchronize(S(stream_));
    return s;
  }
  auto receipt = kv_.Publish(req.txn_id);
  if (!receipt.ok() || receipt->replayed) {
    KVC_RETURN_IF_ERROR(r->table.Abort(pool_.get()));
    return receipt.ok() ? Status::Ok() : receipt.status();
  }
  // The visibility flip on the device, then read back and compared with the receipt.
  KvPublishParams pp;
  pp.layout.dtype = KvDtype::kF32;
  pp.layout.batch = 1;
  pp.layout.num_kv_heads = static_cast<int32_t>(m_.config().num_key_value_heads);
  pp.layout.head_dim = static_cast<int32_t>(m_.config().head_dim);
  if (opts_.paged) {
    pp.layout.block_size = r->table.block_size();
    pp.layout.num_blocks = pool_->num_blocks();
    pp.layout.max_blocks_per_seq = r->table.max_blocks();
    pp.staged_table = r->d_staged_table;
    pp.visible_table = r->d_visible_table;
  } else {
    pp.layout.capacity = max_tokens_;
  }
  pp.visible_len = r->d_visible_len;
  pp.base_len = s_->ints;
  pp.t_new = static_cast<int32_t>(n);
  pp.error_flag = s_->ints + 2;
  pp.published = s_->ints + 3;
  int32_t back[2] = {0, -1};
  cudaStream_t st = S(stream_);
  KVC_RETURN_IF_ERROR(ValidatePublish(pp));
  KVC_CUDA(KvPublishCuda(pp, st), "KV publish");
  KVC_CUDA(cudaMemcpyAsync(&back[0], s_->ints + 3, sizeof(int32_t), cudaMemcpyDeviceToHost, st),
           "download published flag");
  KVC_CUDA(cudaMemcpyAsync(&back[1], r->d_visible_len, sizeof(int32_t), cudaMemcpyDeviceToHost, st),
           "download visible length");
  KVC_CUDA(cudaStreamSynchronize(st), "KV publish");
  r->table.Commit();
  r->fs->ApplyPublished(call);
  if (back[0] != 1 || static_cast<uint64_t>(back[1]) != receipt->result.committed_length)
    return Internal("cuda engine: the device publication (published=" + std::to_string(back[0]) +
                    ", visible_len=" + std::to_string(back[1]) +
                    ") differs from the lifecycle receipt (committed_length=" +
                    std::to_string(receipt->result.committed_length) + ")");
  return Status::Ok();
}

Status CudaEngine::Prefill(const std::string& handle, std::span<const int64_t> prompt,
                           uint64_t chunk, std::vector<float>* logits) {
  if (prompt.empty()) return InvalidArgument("prefill: empty prompt");
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (!r->fs && r->table.committed_len() == 0) r->fs.emplace(prompt.size());
  const uint64_t step = chunk == 0 ? prompt.size() : chunk;
  for (uint64_t at = 0; at < prompt.size(); at += step) {
    const uint64_t n = std::min<uint64_t>(step, prompt.size() - at);
    KVC_RETURN_IF_ERROR(RunAppend(handle, prompt.subspan(at, n),
                                  Call(frontier::AppendPurpose::kPrefill, n), logits));
  }
  return Status::Ok();
}

Status CudaEngine::Emit(const std::string& handle, int64_t token) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  return model::EmitOnFrontier(handle, token, &r->fs);
}

Status CudaEngine::Decode(const std::string& handle, int64_t token, std::vector<float>* logits) {
  if (token < 0) {
    return ViolationStatus(
        ErrorCode::MODEL_TOKEN_OUT_OF_RANGE,
        "decode on '" + handle + "': token " + std::to_string(token) + " is negative");
  }
  return RunAppend(handle, std::span<const int64_t>(&token, 1),
                   Call(frontier::AppendPurpose::kDecode, 1, static_cast<uint64_t>(token)), logits);
}

Status CudaEngine::Finish(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  if (r->fs) KVC_RETURN_IF_ERROR(r->fs->CheckFinish());
  return kv_.Finish(handle).status();
}

Status CudaEngine::Cancel(const std::string& handle) {
  KVC_RETURN_IF_ERROR(Get(handle).status());
  return kv_.CancelRequest(handle).status();
}

Status CudaEngine::Release(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  KVC_RETURN_IF_ERROR(kv_.Release(handle).status());
  return r->table.Release(pool_.get());
}

StatusOr<int32_t> CudaEngine::DeviceVisibleLength(const std::string& handle) {
  KVC_ASSIGN_OR_RETURN(Request * r, Get(handle));
  int32_t v = -1;
  KVC_CUDA(cudaMemcpy(&v, r->d_visible_len, sizeof(int32_t), cudaMemcpyDeviceToHost),
           "download visible length");
  return v;
}

}  // namespace kvc::kernels
