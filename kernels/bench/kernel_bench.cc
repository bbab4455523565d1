// kvconform_kernel_bench: measures the device ceilings (D2D copy bandwidth, bf16 cuBLAS GEMM
// rate) and then the kernels against them in the same run, printing one table.
//
// Usage: kvconform_kernel_bench [--quick] [--csv PATH] [--only decode|append|prefill]
//   --quick  smaller shapes and fewer repetitions (a smoke run, a few seconds)
//   --csv    also write every row as CSV
//   --only   the ceilings and then one group (e.g. under a profiler, with fewer launches to skip)
// Timing: CUDA events around each repetition after warm-up; the median is reported. Inputs are
// seeded random (FillUniformCuda), never zeros. Bytes are the fewest a kernel must move (each
// input read once, each output written once); the copy ceiling counts bytes read + written.
// Nothing here is a pass/fail test: targets are printed next to the measured ratio.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda_kernels.h"
#include "kernels/kernel_types.h"

namespace kvc::kernels {
namespace {

#define BENCH_CHECK(expr)                                                       \
  do {                                                                          \
    const cudaError_t _e = (expr);                                              \
    if (_e != cudaSuccess) {                                                    \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #expr, \
                   cudaGetErrorString(_e));                                     \
      std::exit(2);                                                             \
    }                                                                           \
  } while (0)

struct Row {
  std::string group, name, shape;
  double ms = 0, rate = 0;  // rate: GB/s or TFLOP/s
  std::string unit;
  double pct = -1;  // % of the same-run ceiling, -1 if none
  std::string target;
};
std::vector<Row> g_rows;

void Emit(Row r) {
  std::printf(
      "%-9s %-34s %-30s %10.4f ms %9.1f %-7s %6s  %s\n", r.group.c_str(), r.name.c_str(),
      r.shape.c_str(), r.ms, r.rate, r.unit.c_str(),
      r.pct >= 0 ? (std::to_string(static_cast<int>(std::lround(r.pct))) + "%").c_str() : "-",
      r.target.c_str());
  std::fflush(stdout);
  g_rows.push_back(std::move(r));
}

// Median milliseconds of `reps` timed calls after `warmup` untimed ones.
double TimeMs(const std::function<void()>& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  BENCH_CHECK(cudaDeviceSynchronize());
  cudaEvent_t a, b;
  BENCH_CHECK(cudaEventCreate(&a));
  BENCH_CHECK(cudaEventCreate(&b));
  std::vector<float> ms(reps);
  for (int i = 0; i < reps; ++i) {
    BENCH_CHECK(cudaEventRecord(a));
    fn();
    BENCH_CHECK(cudaEventRecord(b));
    BENCH_CHECK(cudaEventSynchronize(b));
    BENCH_CHECK(cudaEventElapsedTime(&ms[i], a, b));
  }
  BENCH_CHECK(cudaEventDestroy(a));
  BENCH_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[reps / 2];
}

void* Malloc(size_t bytes) {
  void* p = nullptr;
  BENCH_CHECK(cudaMalloc(&p, bytes));
  return p;
}

std::string Shape(std::initializer_list<std::pair<const char*, long long>> kv) {
  std::string s;
  for (auto& [k, v] : kv) {
    if (!s.empty()) s += ",";
    s += k;
    s += "=";
    s += v >= 1024 && v % 1024 == 0 ? std::to_string(v / 1024) + "k" : std::to_string(v);
  }
  return s;
}

int Run(bool quick, const char* csv, const std::string& only) {
  auto want = [&](const char* group) { return only.empty() || only == group; };
  std::string why;
  if (!CudaDeviceAvailable(&why)) {
    std::fprintf(stderr, "kvconform_kernel_bench: no CUDA device (%s)\n", why.c_str());
    return 3;
  }
  cudaDeviceProp prop;
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  std::printf("device: %s, %d SMs, %.1f GiB, L2 %.0f MB%s\n", prop.name, sms,
              prop.totalGlobalMem / 1073741824.0, prop.l2CacheSize / 1e6,
              quick ? " (quick mode: smoke shapes, not for reporting)" : "");
  std::printf("%-9s %-34s %-30s %13s %9s %-7s %6s  %s\n", "group", "case", "shape", "median",
              "rate", "unit", "ceil%", "target");
  const int reps = quick ? 3 : 10;
  uint64_t seed = 20261129;

  // --- Ceilings ------------------------------------------------------------------------------
  double copy_gbs = 0, gemm_tflops = 0;
  {
    const size_t bytes = quick ? (256ull << 20) : (4ull << 30);
    void* a = Malloc(bytes);
    void* b = Malloc(bytes);
    BENCH_CHECK(FillUniformCuda(a, KvDtype::kF32, bytes / 4, seed++, -1, 1, 0));
    const double ms = TimeMs(
        [&] { BENCH_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }, 2, reps);
    copy_gbs = 2.0 * bytes / (ms * 1e6);
    Emit({"ceiling", "d2d copy (read+write)", Shape({{"MiB", (long long)(bytes >> 20)}}), ms,
          copy_gbs, "GB/s", -1, "datasheet 4800 GB/s"});
    BENCH_CHECK(cudaFree(a));
    BENCH_CHECK(cudaFree(b));
  }
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 2;
  }
  {
    const int n = quick ? 2048 : 8192;
    void* x = Malloc(size_t(n) * n * 2);
    void* w = Malloc(size_t(n) * n * 2);
    void* y = Malloc(size_t(n) * n * 2);
    BENCH_CHECK(FillUniformCuda(x, KvDtype::kBF16, int64_t(n) * n, seed++, -1, 1, 0));
    BENCH_CHECK(FillUniformCuda(w, KvDtype::kBF16, int64_t(n) * n, seed++, -1, 1, 0));
    MatmulParams p{KvDtype::kBF16, x, w, y, n, n, n};
    const double ms = TimeMs([&] { BENCH_CHECK(MatmulCuda(p, handle, 0)); }, 3, reps);
    gemm_tflops = 2.0 * n * n * double(n) / (ms * 1e9);
    Emit({"ceiling", "cuBLAS bf16 GEMM (fp32 acc)", Shape({{"M=N=K", n}}), ms, gemm_tflops,
          "TFLOP/s", -1, "datasheet ~990 dense"});
    BENCH_CHECK(cudaFree(x));
    BENCH_CHECK(cudaFree(w));
    BENCH_CHECK(cudaFree(y));
  }

  // --- Decode attention: bf16 K/V, d_h 128, GQA 8:1 --------------------------------------------
  const int Hkv = 8, Hq = 64, d = 128, block = 16;
  const int max_ctx = quick ? 4096 : 32768;
  const int B = quick ? 8 : 64;
  std::vector<int> contexts;
  for (int c = 1024; c <= max_ctx; c *= 2) contexts.push_back(c);
  // Storage: contiguous [B, H_kv, max_ctx, d] and a paged pool with a shuffled block table.
  KvLayout contig{KvDtype::kBF16, B, Hkv, d, max_ctx};
  KvLayout paged{KvDtype::kBF16, B, Hkv, d, 0, block, B * (max_ctx / block), max_ctx / block};
  const size_t kv_elems = size_t(B) * Hkv * max_ctx * d;
  void* kc = Malloc(kv_elems * 2);
  void* vc = Malloc(kv_elems * 2);
  void* kp = Malloc(kv_elems * 2);
  void* vp = Malloc(kv_elems * 2);
  for (void* p : {kc, vc, kp, vp})
    BENCH_CHECK(FillUniformCuda(p, KvDtype::kBF16, int64_t(kv_elems), seed++, -1, 1, 0));
  std::vector<int32_t> table(size_t(B) * paged.max_blocks_per_seq);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(seed++));
  int32_t* d_table = static_cast<int32_t*>(Malloc(table.size() * 4));
  BENCH_CHECK(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  float* q = static_cast<float*>(Malloc(size_t(B) * Hq * d * 4));
  float* out = static_cast<float*>(Malloc(size_t(B) * Hq * d * 4));
  BENCH_CHECK(FillUniformCuda(q, KvDtype::kF32, int64_t(B) * Hq * d, seed++, -1, 1, 0));
  int32_t* d_len = static_cast<int32_t*>(Malloc(B * 4));
  float* ws = static_cast<float*>(Malloc(size_t(B) * Hq * 256 * (d + 2) * 4));  // <= 256 splits

  // hq / hd: query heads and head_dim (the storage is reinterpreted: [B, H_kv, max_ctx, hd]).
  auto decode_gd = [&](int batch, int ctx, bool use_paged, int split, int hq, int hd) {
    std::vector<int32_t> len(batch, ctx);
    BENCH_CHECK(cudaMemcpy(d_len, len.data(), batch * 4, cudaMemcpyHostToDevice));
    AttentionParams p;
    p.layout = use_paged ? paged : contig;
    p.layout.batch = batch;
    p.layout.head_dim = hd;
    p.k_cache = use_paged ? kp : kc;
    p.v_cache = use_paged ? vp : vc;
    p.block_table = use_paged ? d_table : nullptr;
    p.kv_len = d_len;
    p.max_kv_len = ctx;
    p.q = q;
    p.out = out;
    p.num_q_heads = hq;
    p.t_q = 1;
    p.scale = 1.0f / std::sqrt(float(hd));
    p.split_size = split;
    p.workspace = ws;
    if (NumSplits(ctx, split) > 256) {
      std::fprintf(stderr, "split workspace too small\n");
      std::exit(2);
    }
    const double ms = TimeMs([&] { BENCH_CHECK(AttentionCuda(p, 0)); }, 3, reps);
    const double bytes = 2.0 * batch * Hkv * double(ctx) * hd * 2 + 2.0 * batch * hq * hd * 4;
    return std::pair<double, double>(ms, bytes / (ms * 1e6));
  };
  auto decode = [&](int batch, int ctx, bool use_paged, int split) {
    return decode_gd(batch, ctx, use_paged, split, Hq, d);
  };
  if (want("decode")) {
    for (int ctx : contexts) {
      const int split = ChooseSplitSize(B, Hkv, ctx, sms);
      auto [ms_c, gbs_c] = decode(B, ctx, false, split);
      Emit({"decode", "contiguous bf16 GQA8:1", Shape({{"B", B}, {"ctx", ctx}, {"split", split}}),
            ms_c, gbs_c, "GB/s", 100 * gbs_c / copy_gbs, ctx >= 8192 ? ">=85% (large reads)" : ""});
      auto [ms_p, gbs_p] = decode(B, ctx, true, split);
      Emit({"decode", "paged16 bf16 GQA8:1", Shape({{"B", B}, {"ctx", ctx}, {"split", split}}),
            ms_p, gbs_p, "GB/s", 100 * gbs_p / copy_gbs,
            "paged/contig time " + std::to_string(ms_p / ms_c).substr(0, 5) + " (<=1.05)"});
    }
    // The decode fast path's other instantiations (GQA 1/2/4 at d_h 128, GQA 8/1 at d_h 64).
    {
      const int ctx = quick ? 4096 : 8192;
      const int split = ChooseSplitSize(B, Hkv, ctx, sms);
      for (auto [g, hd] :
           std::vector<std::pair<int, int>>{{1, 128}, {2, 128}, {4, 128}, {8, 64}, {1, 64}}) {
        auto [ms_g, gbs_g] = decode_gd(B, ctx, false, split, Hkv * g, hd);
        Emit({"decode", "contiguous bf16 GQA" + std::to_string(g) + ":1 d" + std::to_string(hd),
              Shape({{"B", B}, {"ctx", ctx}, {"split", split}}), ms_g, gbs_g, "GB/s",
              100 * gbs_g / copy_gbs, ""});
      }
    }
    {
      const int ctx = max_ctx;
      auto [ms0, gbs0] = decode(1, ctx, false, 0);
      Emit({"decode", "contiguous B=1 unsplit", Shape({{"B", 1}, {"ctx", ctx}}), ms0, gbs0, "GB/s",
            100 * gbs0 / copy_gbs, "(reference for split-K)"});
      const int split = ChooseSplitSize(1, Hkv, ctx, sms);
      auto [ms1, gbs1] = decode(1, ctx, false, split);
      Emit({"decode", "contiguous B=1 split-K", Shape({{"B", 1}, {"ctx", ctx}, {"split", split}}),
            ms1, gbs1, "GB/s", 100 * gbs1 / copy_gbs, ">=70%"});
      auto [ms2, gbs2] = decode(1, ctx, true, split);
      Emit({"decode", "paged16 B=1 split-K", Shape({{"B", 1}, {"ctx", ctx}, {"split", split}}), ms2,
            gbs2, "GB/s", 100 * gbs2 / copy_gbs, ">=70%"});
      // The split size against the one ChooseSplitSize picks (a sweep, for tuning it).
      for (int sweep : {256, 1024, 2048}) {
        auto [ms3, gbs3] = decode(1, ctx, false, sweep);
        Emit({"decode", "contiguous B=1 split sweep",
              Shape({{"B", 1}, {"ctx", ctx}, {"split", sweep}}), ms3, gbs3, "GB/s",
              100 * gbs3 / copy_gbs, ""});
      }
    }

  }  // decode
  // --- KV append (one layer of an append transaction): fp32 staged rows -> bf16 storage ------
  if (want("append")) {
    for (int t_new : {quick ? 64 : 256, quick ? 128 : 1024}) {
      float* kn = static_cast<float*>(Malloc(size_t(B) * Hkv * t_new * d * 4));
      float* vn = static_cast<float*>(Malloc(size_t(B) * Hkv * t_new * d * 4));
      BENCH_CHECK(
          FillUniformCuda(kn, KvDtype::kF32, int64_t(B) * Hkv * t_new * d, seed++, -1, 1, 0));
      BENCH_CHECK(
          FillUniformCuda(vn, KvDtype::kF32, int64_t(B) * Hkv * t_new * d, seed++, -1, 1, 0));
      std::vector<int32_t> base(B, 1000);
      int32_t* d_base = static_cast<int32_t*>(Malloc(B * 4));
      int32_t* d_err = static_cast<int32_t*>(Malloc(4));
      BENCH_CHECK(cudaMemcpy(d_base, base.data(), B * 4, cudaMemcpyHostToDevice));
      BENCH_CHECK(cudaMemset(d_err, 0, 4));
      for (bool use_paged : {false, true}) {
        KvAppendParams p;
        p.layout = use_paged ? paged : contig;
        p.k_cache = use_paged ? kp : kc;
        p.v_cache = use_paged ? vp : vc;
        p.block_table = use_paged ? d_table : nullptr;
        p.base_len = d_base;
        p.visible_len = d_base;  // the published length is the base: a fresh transaction
        p.k_new = kn;
        p.v_new = vn;
        p.t_new = t_new;
        p.error_flag = d_err;
        const double ms = TimeMs([&] { BENCH_CHECK(KvAppendCuda(p, 0)); }, 3, reps);
        const double bytes = 2.0 * B * Hkv * double(t_new) * d * (4 + 2);
        const double gbs = bytes / (ms * 1e6);
        Emit({"append", use_paged ? "paged16 f32->bf16" : "contiguous f32->bf16",
              Shape({{"B", B}, {"T_new", t_new}, {"MB", (long long)(bytes / 1e6)}}), ms, gbs,
              "GB/s", 100 * gbs / copy_gbs, bytes >= 64e6 ? ">=80% (>=64 MB/step)" : ""});
      }
      int32_t err = -1;
      BENCH_CHECK(cudaMemcpy(&err, d_err, 4, cudaMemcpyDeviceToHost));
      if (err != 0) std::printf("append error flag set: the benchmark shape is wrong\n");
      for (void* p : {static_cast<void*>(kn), static_cast<void*>(vn), static_cast<void*>(d_base),
                      static_cast<void*>(d_err)})
        BENCH_CHECK(cudaFree(p));
    }
  }  // append
  for (void* p : {kc, vc, kp, vp, static_cast<void*>(d_table), static_cast<void*>(q),
                  static_cast<void*>(out), static_cast<void*>(d_len), static_cast<void*>(ws)})
    BENCH_CHECK(cudaFree(p));

  // --- Prefill attention: bf16 K/V, causal, d_h 128, H_q 32 / H_kv 8, T_past 0 ---------------
  if (want("prefill")) {
    const int pHq = 32, pHkv = 8;
    std::vector<int> lens = quick ? std::vector<int>{1024} : std::vector<int>{4096, 8192, 16384};
    for (int T : lens) {
      KvLayout l{KvDtype::kBF16, 1, pHkv, d, T};
      const size_t e = size_t(pHkv) * T * d;
      void* k = Malloc(e * 2);
      void* v = Malloc(e * 2);
      float* pq = static_cast<float*>(Malloc(size_t(pHq) * T * d * 4));
      float* po = static_cast<float*>(Malloc(size_t(pHq) * T * d * 4));
      int32_t* plen = static_cast<int32_t*>(Malloc(4));
      BENCH_CHECK(FillUniformCuda(k, KvDtype::kBF16, int64_t(e), seed++, -1, 1, 0));
      BENCH_CHECK(FillUniformCuda(v, KvDtype::kBF16, int64_t(e), seed++, -1, 1, 0));
      BENCH_CHECK(FillUniformCuda(pq, KvDtype::kF32, int64_t(pHq) * T * d, seed++, -1, 1, 0));
      BENCH_CHECK(cudaMemcpy(plen, &T, 4, cudaMemcpyHostToDevice));
      AttentionParams p;
      p.layout = l;
      p.k_cache = k;
      p.v_cache = v;
      p.kv_len = plen;
      p.max_kv_len = T;
      p.q = pq;
      p.out = po;
      p.num_q_heads = pHq;
      p.t_q = T;
      p.scale = 1.0f / std::sqrt(float(d));
      // Causal FLOPs: QK^T and PV, 2 FLOPs per MAC, over the T(T+1)/2 visible (q, k) pairs.
      const double flops = 4.0 * pHq * d * (double(T) * (T + 1) / 2);
      // The SIMT reference path (simt_only) and the tensor-core kernel (selected for this shape).
      for (bool simt : {true, false}) {
        p.simt_only = simt;
        const double ms = TimeMs([&] { BENCH_CHECK(AttentionCuda(p, 0)); }, 1, quick ? 2 : 3);
        const double tflops = flops / (ms * 1e9);
        Emit({"prefill",
              simt ? "causal bf16 K/V (SIMT fp32 math)" : "causal bf16 K/V (tensor-core mma.sync)",
              Shape({{"Hq", pHq}, {"Hkv", pHkv}, {"T", T}}), ms, tflops, "TFLOP/s",
              100 * tflops / gemm_tflops, "350 TFLOP/s"});
      }
      for (void* ptr :
           {k, v, static_cast<void*>(pq), static_cast<void*>(po), static_cast<void*>(plen)})
        BENCH_CHECK(cudaFree(ptr));
    }
  }
  cublasDestroy(handle);

  if (csv) {
    FILE* f = std::fopen(csv, "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", csv);
      return 2;
    }
    std::fprintf(f, "group,case,shape,median_ms,rate,unit,pct_of_ceiling,target\n");
    for (const Row& r : g_rows)
      std::fprintf(f, "%s,%s,\"%s\",%.5f,%.2f,%s,%.1f,\"%s\"\n", r.group.c_str(), r.name.c_str(),
                   r.shape.c_str(), r.ms, r.rate, r.unit.c_str(), r.pct, r.target.c_str());
    std::fclose(f);
  }
  return 0;
}

}  // namespace
}  // namespace kvc::kernels

int main(int argc, char** argv) {
  bool quick = false;
  const char* csv = nullptr;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
    } else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) {
      csv = argv[++i];
    } else if (!std::strcmp(argv[i], "--only") && i + 1 < argc &&
               (!std::strcmp(argv[i + 1], "decode") || !std::strcmp(argv[i + 1], "append") ||
                !std::strcmp(argv[i + 1], "prefill"))) {
      only = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--csv PATH] [--only decode|append|prefill]\n",
                   argv[0]);
      return 64;
    }
  }
  return kvc::kernels::Run(quick, csv, only);
}
