// Kernel contract types shared by the CUDA kernels and their CPU twins: dtypes, K/V layouts,
// parameter structs and the host/device index arithmetic (block tables, splits, tiling).
//
// Everything here is plain data or an inline function usable from host and device code, so the
// CPU twins (kernels/cpu_twins.h) and the CUDA launchers (kernels/cuda_kernels.h) take the SAME
// parameter structs and compute the SAME addresses. Pointers in a params struct point into host
// memory for a CPU twin and into device memory for a launcher; the struct never owns them.
//
// Tensor conventions (M5.1 0x01, HF cache shapes):
//   per-layer K/V, logical:  [B, H_kv, T, d_h], K rows stored post-RoPE, V never rotated
//   queries / outputs:       [B, H_q, T_q, d_h], fp32
//   GQA: query head h_q reads K/V head h_q / (H_q / H_kv)
#ifndef KVCONFORM_KERNELS_KERNEL_TYPES_H_
#define KVCONFORM_KERNELS_KERNEL_TYPES_H_

#include <cstdint>

#if defined(__CUDACC__)
#define KVC_HD __host__ __device__ __forceinline__
#else
#define KVC_HD inline
#endif

namespace kvc::kernels {

// K/V storage element type. Activations (Q, staged rows, outputs) are always fp32.
enum class KvDtype : int32_t { kF32 = 0, kF16 = 1, kBF16 = 2 };

KVC_HD int32_t KvDtypeBytes(KvDtype d) { return d == KvDtype::kF32 ? 4 : 2; }

// Physical layout of ONE layer's K storage (V uses the same layout in its own buffer).
//   contiguous (block_size == 0): [batch, num_kv_heads, capacity, head_dim]
//   paged      (block_size  > 0): pool [num_blocks, num_kv_heads, block_size, head_dim];
//     token t of sequence b lives in block block_table[b * max_blocks_per_seq + t / block_size]
//     at slot t % block_size. The block table is shared by all layers (one per sequence).
struct KvLayout {
  KvDtype dtype = KvDtype::kF32;
  int32_t batch = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t capacity = 0;            // contiguous: token slots per sequence
  int32_t block_size = 0;          // paged: tokens per block; 0 selects contiguous
  int32_t num_blocks = 0;          // paged: blocks in the pool
  int32_t max_blocks_per_seq = 0;  // paged: row stride of the block table
};

KVC_HD bool IsPaged(const KvLayout& l) { return l.block_size > 0; }

// Token slots addressable for one sequence.
KVC_HD int64_t MaxTokensPerSeq(const KvLayout& l) {
  return IsPaged(l) ? static_cast<int64_t>(l.block_size) * l.max_blocks_per_seq : l.capacity;
}

// Element offset of the first channel of row (b, h, t) in the K (or V) buffer, or -1 when the
// row is not addressable: t outside [0, MaxTokensPerSeq) or a block id outside [0, num_blocks).
// `block_table` is ignored for a contiguous layout. Callers guarantee b, h in range.
// KvRowOffset in two steps, for a kernel that reads the block table ahead of the rows:
// KvBlockEntry reads the entry of (b, t) (paged, t addressable; 0 otherwise), and KvRowOffsetAt
// gives the offset of (b, h, t) from that entry, with KvRowOffset's -1 rules.
KVC_HD int32_t KvBlockEntry(const KvLayout& l, const int32_t* block_table, int32_t b, int32_t t) {
  if (!IsPaged(l) || t < 0 || t >= MaxTokensPerSeq(l)) return 0;
  return block_table[static_cast<int64_t>(b) * l.max_blocks_per_seq + t / l.block_size];
}
// Paged: the offset of head h's row `in_block` (t % block_size) of block-table entry `block`.
KVC_HD int64_t KvPagedRowOffset(const KvLayout& l, int32_t block, int32_t h, int32_t in_block) {
  if (block < 0 || block >= l.num_blocks) return -1;
  return ((static_cast<int64_t>(block) * l.num_kv_heads + h) * l.block_size + in_block) *
         l.head_dim;
}
KVC_HD int64_t KvRowOffsetAt(const KvLayout& l, int32_t block, int32_t b, int32_t h, int32_t t) {
  if (t < 0 || t >= MaxTokensPerSeq(l)) return -1;
  if (!IsPaged(l)) {
    return ((static_cast<int64_t>(b) * l.num_kv_heads + h) * l.capacity + t) * l.head_dim;
  }
  return KvPagedRowOffset(l, block, h, t % l.block_size);
}
KVC_HD int64_t KvRowOffset(const KvLayout& l, const int32_t* block_table, int32_t b, int32_t h,
                           int32_t t) {
  return KvRowOffsetAt(l, KvBlockEntry(l, block_table, b, t), b, h, t);
}

// ceil(a / b) for a >= 0 and b > 0, without forming a + b - 1 (probe 59's leftover: it wrapped
// within b of INT32_MAX, so NumSplits(INT32_MAX, 1000) was negative).
KVC_HD int32_t CeilDiv(int32_t a, int32_t b) { return a / b + (a % b > 0 ? 1 : 0); }

// Blocks a sequence of `tokens` tokens occupies (paged), 0 for a contiguous layout.
KVC_HD int32_t BlocksForTokens(const KvLayout& l, int32_t tokens) {
  return IsPaged(l) ? CeilDiv(tokens, l.block_size) : 0;
}

// GQA: the K/V head read by query head h_q (H_q a multiple of H_kv).
KVC_HD int32_t KvHeadOfQueryHead(int32_t h_q, int32_t num_q_heads, int32_t num_kv_heads) {
  return h_q / (num_q_heads / num_kv_heads);
}

// Causal, bottom-right aligned mask: with kv_len keys visible to this call (committed prefix
// plus this call's staged rows) and t_q query rows being the LAST t_q positions, query row qi
// sees keys [0, limit). Decode (t_q == 1) sees all kv_len keys; chunked prefill with T_past
// committed rows sees T_past + qi + 1 keys. Never negative.
KVC_HD int32_t CausalKeyLimit(int32_t kv_len, int32_t t_q, int32_t qi) {
  const int32_t lim = kv_len - t_q + qi + 1;
  return lim < 0 ? 0 : (lim > kv_len ? kv_len : lim);
}

// Split-K (flash-decoding): keys are cut into fixed chunks of `split_size` tokens (0 = one
// split). The split count depends only on max_kv_len and split_size, never on timing, and
// partials are combined in split order 0..n-1, so results are deterministic.
KVC_HD int32_t NumSplits(int32_t max_kv_len, int32_t split_size) {
  if (split_size <= 0 || max_kv_len <= 0) return 1;
  return CeilDiv(max_kv_len, split_size);
}
// Key range [*begin, *end) of split `s` for a row that sees `limit` keys (may be empty).
KVC_HD void SplitKeyRange(int32_t s, int32_t split_size, int32_t limit, int32_t* begin,
                          int32_t* end) {
  if (split_size <= 0) {
    *begin = 0;
    *end = limit;
    return;
  }
  const int32_t b = s * split_size;
  const int32_t e = b + split_size;
  *begin = b < limit ? b : limit;
  *end = e < limit ? e : limit;
}

// A split size for decode that fills the device: none (0) when B * H_kv blocks already give every
// SM two blocks or the context is at most 512 tokens (two 256-token splits at most), else ceil(2 *
// SMs / (B * H_kv)) splits of a multiple of 256 tokens: at least 2 blocks per SM, one wave as the
// decode kernels keep two blocks per SM resident, where B * H_kv is well below the SM count
// (measured on an H200, 2026-12-04, B 1, H_kv 8, ctx 32k, tensor-core decode: 1024-token splits
// (256 blocks) 49% of the copy bandwidth, 512 (512 blocks, the earlier 4-per-SM choice) 33%, 2048
// 43%). Between one and two blocks per SM the ceiling gives two splits, up to 4 blocks per SM (B
// 32, H_kv 8 on 132 SMs: 512 blocks, two waves): not measured (the kernel audit's D3). Pure
// function of the shape, so a given shape always splits the same way.
KVC_HD int32_t ChooseSplitSize(int32_t batch, int32_t num_kv_heads, int32_t max_kv_len,
                               int32_t num_sms) {
  const int64_t blocks = static_cast<int64_t>(batch) * num_kv_heads;
  if (blocks >= 2LL * num_sms || max_kv_len <= 512) return 0;
  const int64_t want_splits = (2LL * num_sms + blocks - 1) / blocks;
  int64_t size = (max_kv_len + want_splits - 1) / want_splits;
  size = ((size + 255) / 256) * 256;
  return size >= max_kv_len ? 0 : static_cast<int32_t>(size);
}

// Attention tiling: one thread block serves `rows` query rows that share one K/V head. Rows of
// a (b, h_kv) pair are numbered gr = qi * g + (h_q - h_kv * g), g = H_q / H_kv, so a K/V tile
// loaded once serves every query head of the group. Capped so rows * head_dim <= 8192 (the
// per-block accumulator budget: 128 threads x 64 registers).
inline constexpr int32_t kAttnMaxRowElems = 8192;
inline constexpr int32_t kAttnMaxRows = 64;
inline constexpr int32_t kAttnMaxHeadDim = 256;
KVC_HD int32_t AttentionRowsPerBlock(int32_t group, int32_t t_q, int32_t head_dim) {
  const int64_t r = static_cast<int64_t>(group) * t_q;
  int32_t cap = kAttnMaxRowElems / head_dim;
  if (cap > kAttnMaxRows) cap = kAttnMaxRows;
  return r < cap ? static_cast<int32_t>(r) : cap;
}

// ---------------------------------------------------------------------------------------------
// Parameter structs (one per kernel). Shapes are row-major; pointers are borrowed.

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight[:]; x, y: [rows, dim]; may alias.
struct RmsNormParams {
  const float* x = nullptr;
  const float* weight = nullptr;
  float* y = nullptr;
  int32_t rows = 0;
  int32_t dim = 0;
  float eps = 1e-6f;
};

// HF rotate_half RoPE, in place, on Q [B, H_q, T, d_h] and K [B, H_kv, T, d_h] with
// positions [B, T]: inv_freq[i] = theta^(-2i/d_h), angle = float(pos) * inv_freq[i],
// x'[i] = x[i] cos - x[i + d_h/2] sin, x'[i + d_h/2] = x[i + d_h/2] cos + x[i] sin.
// Applied before K rows are staged, so the cache stores post-RoPE keys. k may be null.
struct RopeParams {
  float* q = nullptr;
  float* k = nullptr;
  const int32_t* positions = nullptr;
  int32_t batch = 0;
  int32_t num_q_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t t = 0;
  int32_t head_dim = 0;  // even
  float theta = 10000.0f;
  // Optional [d_h / 2] inverse frequencies (e.g. the model's llama3-scaled ones); null = the
  // theta formula (RopeInvFreq).
  const float* inv_freq = nullptr;
};

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)); n elements.
struct SwiGluParams {
  const float* gate = nullptr;
  const float* up = nullptr;
  float* out = nullptr;
  int64_t n = 0;
};

// y[m, n] = sum_k x[m, k] * w[n, k] (nn.Linear, row-major, fp32 accumulation). x, w and y all
// have element type `dtype` (kF32 or kBF16; bf16 output is rounded to nearest even).
struct MatmulParams {
  KvDtype dtype = KvDtype::kF32;
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  int32_t m = 0;
  int32_t n = 0;
  int32_t k = 0;
};

// Stage the rows of ONE layer of one append transaction: for every sequence b, the T_new new
// rows k_new/v_new [B, H_kv, T_new, d_h] (fp32, K already post-RoPE) are converted to the
// storage dtype (round to nearest even) and written at positions [base_len[b], base_len[b] +
// T_new) through `block_table`, the transaction's table (committed entries plus the blocks
// allocated for this interval). Only positions at or past the published length are written, so
// nothing visible changes: readers bound by the published visible_len (the array publish
// updates) still see exactly the old rows. A sequence whose base_len[b] differs from
// visible_len[b] when the append runs (a stale transaction: its rows would land on published
// rows) or is negative, and any row that is not addressable, is not written and sets
// *error_flag = 1 (the transaction then cannot publish). At most one transaction per sequence
// may be staged at a time (appends and publishes of one sequence are ordered, e.g. one stream):
// two unpublished transactions on the same base would stage into the same slots.
// k_new, v_new and the caches must be 16-byte aligned (vectorized path when d_h % 4 == 0).
struct KvAppendParams {
  KvLayout layout;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  const int32_t* block_table = nullptr;  // [B, max_blocks_per_seq], transaction's table
  const int32_t* base_len = nullptr;     // [B], the committed length the transaction read
  const int32_t* visible_len = nullptr;  // [B], the published lengths (KvPublishParams's)
  const float* k_new = nullptr;          // [B, H_kv, T_new, d_h]
  const float* v_new = nullptr;          // [B, H_kv, T_new, d_h]
  int32_t t_new = 0;
  int32_t* error_flag = nullptr;  // one int32, shared by every layer of the transaction
};

// Persistent bytes one layer of an append transaction stages (K and V):
// B * T_new * H_kv * d_h * (b_K + b_V) (M5.1 0x01 "B_layer_append"). Depends on H_kv, never H_q.
KVC_HD int64_t KvAppendPayloadBytes(const KvLayout& l, int32_t t_new) {
  return static_cast<int64_t>(l.batch) * t_new * l.num_kv_heads * l.head_dim * 2 *
         KvDtypeBytes(l.dtype);
}

// Publication of one append transaction (after every layer was staged): for each sequence b,
// compare-and-publish. If *error_flag == 0, base_len[b] >= 0 and visible_len[b] == base_len[b]
// (the base the transaction read is still the published state), copy the staged table entries for
// the first BlocksForTokens(base_len[b] + t_new) blocks into visible_table, then set visible_len[b]
// = base_len[b] + t_new and published[b] = 1; otherwise change nothing and set published[b] = 0.
// This single step is the visibility flip: before it, attention over (visible_table,
// visible_len) reads exactly the old snapshot.
struct KvPublishParams {
  KvLayout layout;
  const int32_t* staged_table = nullptr;  // [B, max_blocks_per_seq] (paged only)
  int32_t* visible_table = nullptr;       // [B, max_blocks_per_seq] (paged only)
  int32_t* visible_len = nullptr;         // [B]
  const int32_t* base_len = nullptr;      // [B]
  int32_t t_new = 0;
  const int32_t* error_flag = nullptr;
  int32_t* published = nullptr;  // [B] out
};

// Attention of t_q query rows per (b, h_q) over the first kv_len[b] K/V rows with the causal,
// bottom-right aligned mask (CausalKeyLimit). Decode is t_q == 1; chunked prefill is t_q =
// T_new with kv_len = T_past + T_new (the current call's staged rows included: current-call use
// of pending rows is legal, M5.1 "Current-Call Use Is Not Next-Call Publication").
// out[b, h_q, qi, :] = softmax(scale * q K^T) V; a row with no visible key outputs zeros.
// q, out, k_cache and v_cache must be 16-byte aligned (cudaMalloc is): the decode fast path
// (t_q == 1, H_q == 8 H_kv, d_h == 128) reads them with vector loads.
// split_size > 0 selects split-K: per-split partials (m, l, acc) go to `workspace`
// (AttentionWorkspaceFloats floats) and are combined in split order.
struct AttentionParams {
  KvLayout layout;
  const void* k_cache = nullptr;
  const void* v_cache = nullptr;
  const int32_t* block_table = nullptr;  // paged only
  const int32_t* kv_len = nullptr;       // [B], each in [t_q, max_kv_len]
  int32_t max_kv_len = 0;                // bound on kv_len (sizes the split grid)
  const float* q = nullptr;              // [B, H_q, t_q, d_h]
  float* out = nullptr;                  // [B, H_q, t_q, d_h]
  int32_t num_q_heads = 0;
  int32_t t_q = 1;
  float scale = 0.0f;  // usually 1/sqrt(d_h)
  int32_t split_size = 0;
  float* workspace = nullptr;
  // Forces the tiled SIMT kernel for every shape (no decode fast path, no tensor-core prefill):
  // decode and prefill rows then share one arithmetic (the CUDA engine's deterministic mode).
  bool simt_only = false;
};

// CUDA grid limits of the attention launch, for the kernel the launcher picks, in 64-bit
// arithmetic: the tiled kernel's rows of one (b, h_kv) pair (group * t_q) fit int32 and its row
// tiles and B * H_kv fit gridDim.y / gridDim.z (65535); the tensor-core prefill's H_q and B fit
// gridDim.y / gridDim.z; split-K's combine (one block per query row) needs B * H_q * t_q <=
// INT32_MAX. Shapes outside are refused by ValidateAttention (twin and launcher alike).
inline constexpr int64_t kMaxGridYZ = 65535;
KVC_HD int64_t AttentionGroupRows(const AttentionParams& p) {
  return static_cast<int64_t>(p.num_q_heads / p.layout.num_kv_heads) * p.t_q;
}
KVC_HD int64_t AttentionRowTiles(const AttentionParams& p) {
  const int64_t rows = AttentionGroupRows(p);
  if (rows > INT32_MAX) return INT64_MAX;
  const int32_t per_block =
      AttentionRowsPerBlock(p.num_q_heads / p.layout.num_kv_heads, p.t_q, p.layout.head_dim);
  return (rows + per_block - 1) / per_block;
}

// Floats of split-K workspace: B * H_q * t_q * NumSplits * (d_h + 2); 0 when unsplit.
KVC_HD int64_t AttentionWorkspaceFloats(const AttentionParams& p) {
  const int32_t n = NumSplits(p.max_kv_len, p.split_size);
  if (n <= 1) return 0;
  return static_cast<int64_t>(p.layout.batch) * p.num_q_heads * p.t_q * n * (p.layout.head_dim + 2);
}

// ---------------------------------------------------------------------------------------------
// Decode fast path (cuda_kernels_impl.cu DecodeFastKernel<T, G, D>): t_q == 1, GQA group
// G in {1, 2, 4, 8}, head_dim D in {64, 128}. One block = 4 warps per (split, b, h_kv); lane l
// owns channels [l * D/32, (l + 1) * D/32) of every K/V row and of the G query heads; a warp
// walks chunks of kDecodeKeys keys. Per chunk each lane computes the N = kDecodeKeys * G partial
// dots (index idx = key * G + head) over its channels; a warp reduce-scatter (halving steps at
// lane offsets N/4, ..., 1) followed by butterfly adds at offsets N/2, ..., 16 leaves lane l with
// the complete dots of entries idx = 2 * (l & (N/2 - 1)) + j, j in {0, 1}.
inline constexpr int32_t kDecodeKeys = 8;
KVC_HD bool UseDecodeFastPath(const AttentionParams& p) {
  if (p.simt_only || p.t_q != 1 || p.layout.num_kv_heads <= 0) return false;
  if (p.num_q_heads % p.layout.num_kv_heads != 0) return false;
  const int32_t g = p.num_q_heads / p.layout.num_kv_heads;
  return (p.layout.head_dim == 64 || p.layout.head_dim == 128) &&
         (g == 1 || g == 2 || g == 4 || g == 8);
}
KVC_HD int32_t DecodeFastPartials(int32_t g) { return kDecodeKeys * g; }
// The (key in chunk, head in group) whose complete dot lane `lane` holds in slot j.
KVC_HD void DecodeFastEntry(int32_t g, int32_t lane, int32_t j, int32_t* key, int32_t* head) {
  const int32_t n = DecodeFastPartials(g);
  const int32_t idx = 2 * (lane & (n / 2 - 1)) + j;
  *key = idx / g;
  *head = idx % g;
}

// ---------------------------------------------------------------------------------------------
// Tensor-core causal prefill (kernels/attention_tc.cu): bf16 K/V, head_dim 128, t_q > 1,
// unsplit. One thread block = 4 warps = kTcBlockM query rows of one (b, h_q); each warp owns 16
// rows (one m16 MMA row tile). Keys stream through a kTcStages-deep cp.async ring in shared
// memory in tiles of kTcBlockN: K and V rows as stored ([key][d], bf16), padded to kTcQkStride so
// that each 8-row ldmatrix phase reads 8 distinct 16-byte bank groups; ldmatrix gives S = Q K^T's
// B fragments, ldmatrix.trans those of O += P V. The next tile's copy is issued before the
// current tile's MMAs. Both products are mma.sync.m16n8k16 (bf16 inputs, fp32 accumulation); Q
// is rounded to bf16 once, P (the exponentials, exp2f of base-2 scores) to bf16 for the P V
// product, the softmax state stays fp32.
inline constexpr int32_t kTcBlockM = 64;
inline constexpr int32_t kTcBlockN = 64;
inline constexpr int32_t kTcHeadDim = 128;
inline constexpr int32_t kTcWarps = 4;
inline constexpr int32_t kTcStages = 2;
inline constexpr int32_t kTcQkStride = kTcHeadDim + 8;  // bf16 per K/V smem row (272 bytes)

// Dynamic shared memory of one block: kTcStages x (K [64][136] + V [64][136]), bf16; three
// blocks fit an SM (Q's fragments are loaded from global memory straight into registers).
KVC_HD int32_t TcPrefillSmemBytes() { return 2 * kTcQkStride * kTcStages * 2 * kTcBlockN; }

// The attention launcher takes the tensor-core prefill for exactly these shapes.
KVC_HD bool UseTensorCorePrefill(const AttentionParams& p) {
  return !p.simt_only && p.layout.dtype == KvDtype::kBF16 && p.layout.head_dim == kTcHeadDim &&
         p.t_q > 1 && NumSplits(p.max_kv_len, p.split_size) == 1;
}

// ---------------------------------------------------------------------------------------------
// Tensor-core GQA decode (kernels/decode_tc.cu): bf16 K/V, head_dim 128, t_q == 1, group
// G = H_q / H_kv in [1, 16]. One block = kDecTcWarps warps per (split, b, h_kv). The G query
// heads are the rows of one m16 MMA row tile (rows >= G are zeros), so S = Q K^T and O += P V are
// mma.sync.m16n8k16 (bf16 inputs, fp32 accumulation) over tiles of kDecTcKeys keys: per tile 16
// MMAs for S and 16 for P V, where the SIMT decode fast path spends G * 256 FMAs per key. Warp w
// streams tiles w, w + kDecTcWarps, ... of the block's key range through its own
// kDecTcStages-deep cp.async ring in shared memory (K and V rows as stored, [key][d], padded to
// kDecTcRowStride so that ldmatrix reads 32 distinct banks; ldmatrix.trans gives P V's B
// fragments), keeps its own online softmax, and the warps are combined at the end like
// DecodeFastKernel's (same output and split-partial format, so AttentionCombineKernel serves both).
// Q is rounded to bf16 once and P to bf16 for P V, with exp2f of base-2 scores (the tensor-core
// prefill's arithmetic; tc_primitives.cuh OnlineSoftmaxStep serves both); keys past kv_len are
// zero-filled and masked, an unaddressable row reads as NaN (as every path).
inline constexpr int32_t kDecTcKeys = 16;
inline constexpr int32_t kDecTcStages = 3;
inline constexpr int32_t kDecTcWarps = 4;
inline constexpr int32_t kDecTcRowStride = kTcHeadDim + 8;  // bf16 per K/V smem row (272 bytes)
inline constexpr int32_t kDecTcMaxGroup = 16;

// Dynamic shared memory of one block: per warp kDecTcStages x (K + V) tiles of kDecTcKeys rows.
KVC_HD int32_t DecodeTcSmemBytes() {
  return kDecTcWarps * kDecTcStages * 2 * kDecTcKeys * kDecTcRowStride * 2;
}

// The attention launcher takes the tensor-core decode for exactly these shapes (before the SIMT
// decode fast path, which keeps fp32/fp16 storage and head_dim 64).
KVC_HD bool UseTensorCoreDecode(const AttentionParams& p) {
  if (p.simt_only || p.t_q != 1 || p.layout.dtype != KvDtype::kBF16 ||
      p.layout.head_dim != kTcHeadDim || p.layout.num_kv_heads <= 0 ||
      p.num_q_heads % p.layout.num_kv_heads != 0)
    return false;
  const int32_t g = p.num_q_heads / p.layout.num_kv_heads;
  return g >= 1 && g <= kDecTcMaxGroup;
}

// Tiles of kDecTcKeys keys in [t_begin, t_end) that warp `warp` of a decode block walks
// (tiles warp, warp + kDecTcWarps, ...).
KVC_HD int32_t DecodeTcWarpTiles(int32_t t_begin, int32_t t_end, int32_t warp) {
  const int32_t tiles = t_end > t_begin ? CeilDiv(t_end - t_begin, kDecTcKeys) : 0;
  return tiles > warp ? CeilDiv(tiles - warp, kDecTcWarps) : 0;
}

// Keys [0, end) the block whose first query row is m0 must visit: the widest (last valid) row's
// causal limit.
KVC_HD int32_t TcPrefillKeyEnd(int32_t kv_len, int32_t t_q, int32_t m0) {
  const int32_t last = (m0 + kTcBlockM < t_q ? m0 + kTcBlockM : t_q) - 1;
  return CausalKeyLimit(kv_len, t_q, last);
}

// Fragment maps of mma.sync.aligned.m16n8k16 with .bf16 inputs (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"): element i of lane `lane` in the A (16x16, row-major, 8 elements), B (16x8,
// "col", 4 elements: row = k, col = n) and C/D (16x8 fp32, 4 elements) fragments. Elements 2j
// and 2j+1 share one 32-bit register (low half = even element) and are adjacent in the column
// (A) or row (B) index, so one 32-bit shared-memory load fetches both.
KVC_HD int32_t MmaARow(int32_t lane, int32_t i) { return (lane >> 2) + 8 * ((i >> 1) & 1); }
KVC_HD int32_t MmaACol(int32_t lane, int32_t i) { return (lane & 3) * 2 + (i & 1) + 8 * (i >> 2); }
KVC_HD int32_t MmaBRow(int32_t lane, int32_t i) { return (lane & 3) * 2 + (i & 1) + 8 * (i >> 1); }
KVC_HD int32_t MmaBCol(int32_t lane, int32_t i) { return lane >> 2; }
KVC_HD int32_t MmaCRow(int32_t lane, int32_t i) { return (lane >> 2) + 8 * (i >> 1); }
KVC_HD int32_t MmaCCol(int32_t lane, int32_t i) { return (lane & 3) * 2 + (i & 1); }

// inv_freq[i] = theta^(-2i/d_h), computed in double and rounded once to float so host and
// device agree bit-for-bit.
KVC_HD float RopeInvFreq(int32_t i, int32_t head_dim, float theta);

}  // namespace kvc::kernels

#if defined(__CUDACC__)
#define KVC_POW ::pow
#else
#include <cmath>
#define KVC_POW std::pow
#endif

namespace kvc::kernels {
KVC_HD float RopeInvFreq(int32_t i, int32_t head_dim, float theta) {
  return static_cast<float>(
      KVC_POW(static_cast<double>(theta), -2.0 * static_cast<double>(i) / head_dim));
}
}  // namespace kvc::kernels
#undef KVC_POW

#endif  // KVCONFORM_KERNELS_KERNEL_TYPES_H_
