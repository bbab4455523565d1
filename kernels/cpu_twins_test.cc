// Tests of the CPU twins (run on the CPU in CI): conversions, elementwise kernels against
// float64 formulas, the append/publish visibility contract, paged vs contiguous bit-exactness,
// split-K vs unsplit, chunked prefill vs decode, and the bf16 tolerance formula.
#include "kernels/cpu_twins.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace kvc::kernels {
namespace {

using test::HostCache;
using test::LogicalKv;
using test::MakeCache;
using test::Nmse;
using test::RandomFloats;
using test::RandomKv;
using test::RopeOn;
using test::TestSeed;

AttentionParams AttnOn(const HostCache& c, const std::vector<int32_t>& len,
                       const std::vector<float>& q, std::vector<float>& out, int h_q, int t_q,
                       int max_kv_len) {
  AttentionParams p;
  test::PointAtCache(p, c);
  p.kv_len = len.data();
  p.max_kv_len = max_kv_len;
  p.q = q.data();
  p.out = out.data();
  p.num_q_heads = h_q;
  p.t_q = t_q;
  p.scale = 1.0f / std::sqrt(static_cast<float>(c.layout.head_dim));
  return p;
}

TEST(Conversions, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16Bits(1.0f + 0x1p-8f), 0x3f80);             // tie -> even (down)
  EXPECT_EQ(FloatToBf16Bits(1.0f + 3 * 0x1p-8f), 0x3f82);         // tie -> even (up)
  EXPECT_EQ(FloatToBf16Bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above tie
  EXPECT_EQ(FloatToBf16Bits(-2.0f), 0xc000);
  EXPECT_EQ(FloatToBf16Bits(3.4e38f), 0x7f80);  // rounds up to +inf
  EXPECT_TRUE(std::isnan(Bf16BitsToFloat(FloatToBf16Bits(NAN))));
  EXPECT_EQ(Bf16BitsToFloat(0x3f81), 1.0f + 0x1p-7f);
}

TEST(Conversions, HalfRoundsToNearestEvenWithSubnormalsAndOverflow) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7c00);         // halfway to the next binade -> inf
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);         // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);         // tie -> even (zero)
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1p-11f), 0x3c00);  // tie -> even
  EXPECT_EQ(HalfBitsToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(FloatToHalfBits(NAN))));
}

// Compiler-independent: every half decodes exactly and encodes back to itself; between every
// two adjacent finite halves the float midpoint goes to the even one and its neighbours to the
// nearer one (round to nearest even, subnormals, the normal/subnormal seam, overflow to inf).
TEST(Conversions, HalfRoundTripsAndRoundsEveryMidpointToEven) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = HalfBitsToFloat(h);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(FloatToHalfBits(f)))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(FloatToHalfBits(f), h) << std::hex << b;
  }
  for (uint16_t h = 0; h < 0x7c00; ++h) {  // non-negative finite h and its successor
    const float lo = HalfBitsToFloat(h);
    const float hi = h + 1 == 0x7c00 ? 65536.0f : HalfBitsToFloat(static_cast<uint16_t>(h + 1));
    const float mid = (lo + hi) / 2;  // exact: halves carry 11 significant bits
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : h;
    ASSERT_EQ(FloatToHalfBits(mid), even) << std::hex << h;
    ASSERT_EQ(FloatToHalfBits(-mid), even | 0x8000) << std::hex << h;
    ASSERT_EQ(FloatToHalfBits(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(FloatToHalfBits(std::nextafter(mid, INFINITY)), h + 1) << std::hex << h;
  }
  EXPECT_EQ(FloatToHalfBits(INFINITY), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-INFINITY), 0xfc00);
  EXPECT_EQ(FloatToHalfBits(3.4e38f), 0x7c00);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(0x1p-26f), 0x0000);
}

#ifdef __FLT16_MANT_DIG__
// Where the compiler has _Float16 (GCC on x86-64: libgcc's conversions), the same bits as it on
// a sweep of float bit patterns (every 4093rd, NaN payloads included) and on every half.
// (All 2^32 floats and all 65536 halves matched when the bit version was written.)
TEST(Conversions, HalfMatchesTheCompilersFloat16) {
  uint32_t u = 0;
  for (uint64_t i = 0; i <= 0xffffffffull; i += 4093, u += 4093) {
    float f;
    std::memcpy(&f, &u, 4);
    const _Float16 c = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &c, 2);
    ASSERT_EQ(FloatToHalfBits(f), want) << std::hex << u;
  }
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    _Float16 c;
    std::memcpy(&c, &h, 2);
    const float want = static_cast<float>(c), got = HalfBitsToFloat(h);
    ASSERT_EQ(std::memcmp(&want, &got, 4), 0) << std::hex << b;
  }
}
#endif

TEST(RmsNormCpu, MatchesFloat64Formula) {
  std::mt19937_64 rng(TestSeed(11, "RmsNormCpu"));
  const int rows = 7, dim = 96;
  auto x = RandomFloats(rows * dim, rng), w = RandomFloats(dim, rng);
  std::vector<float> y(rows * dim, NAN), ref(rows * dim);
  ASSERT_TRUE(RmsNormCpu({x.data(), w.data(), y.data(), rows, dim, 1e-5f}).ok());
  for (int r = 0; r < rows; ++r) {
    double ss = 0;
    for (int i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int i = 0; i < dim; ++i) ref[r * dim + i] = float(x[r * dim + i] * inv * w[i]);
  }
  EXPECT_LE(Nmse(y, ref), 1e-12);
  EXPECT_FALSE(RmsNormCpu({x.data(), w.data(), y.data(), 0, dim, 1e-5f}).ok());
}

// The optional inv_freq table replaces the theta formula: the formula's own values give the
// same bits, and halved frequencies at position 2p equal the formula at position p (exact
// power-of-two scaling).
TEST(RopeCpu, InverseFrequencyTable) {
  std::mt19937_64 rng(TestSeed(14, "RopeCpuInvFreq"));
  const int d = 16;
  auto x0 = RandomFloats(d, rng);
  std::vector<float> f(d / 2), half_f(d / 2);
  for (int i = 0; i < d / 2; ++i) {
    f[i] = RopeInvFreq(i, d, 10000.0f);
    half_f[i] = f[i] * 0.5f;
  }
  auto rope_at = [&](std::vector<float> x, int pos, const float* table) {
    RopeParams p = RopeOn(x.data(), nullptr, &pos, 1, 1, 0, 1, d);
    p.inv_freq = table;
    EXPECT_TRUE(RopeCpu(p).ok());
    return x;
  };
  EXPECT_EQ(rope_at(x0, 41, f.data()), rope_at(x0, 41, nullptr));
  EXPECT_EQ(rope_at(x0, 82, half_f.data()), rope_at(x0, 41, nullptr));
  EXPECT_NE(rope_at(x0, 41, half_f.data()), rope_at(x0, 41, nullptr));
}

TEST(RopeCpu, RotateHalfFormulaAndRelativePosition) {
  std::mt19937_64 rng(TestSeed(12, "RopeCpu"));
  const int d = 64;
  auto q0 = RandomFloats(d, rng), k0 = RandomFloats(d, rng);
  auto rope_at = [&](std::vector<float> x, int pos) {
    EXPECT_TRUE(RopeCpu(RopeOn(x.data(), nullptr, &pos, 1, 1, 0, 1, d)).ok());
    return x;
  };
  // Position 0 is the identity.
  EXPECT_EQ(rope_at(q0, 0), q0);
  // Float64 formula at position 37.
  auto r = rope_at(q0, 37);
  std::vector<float> ref(d);
  for (int i = 0; i < d / 2; ++i) {
    const double a = 37.0 * std::pow(10000.0, -2.0 * i / d);
    ref[i] = float(q0[i] * std::cos(a) - q0[i + d / 2] * std::sin(a));
    ref[i + d / 2] = float(q0[i + d / 2] * std::cos(a) + q0[i] * std::sin(a));
  }
  EXPECT_LE(Nmse(r, ref), 1e-10);
  // <rope(q, m), rope(k, n)> depends only on m - n.
  auto dot = [&](const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(a[i]) * b[i];
    return s;
  };
  EXPECT_NEAR(dot(rope_at(q0, 10), rope_at(k0, 3)), dot(rope_at(q0, 107), rope_at(k0, 100)), 1e-4);
  int pos = 0;
  EXPECT_FALSE(RopeCpu(RopeOn(q0.data(), nullptr, &pos, 1, 1, 0, 1, /*head_dim=*/5)).ok());
}

TEST(SwiGluCpu, MatchesFloat64Formula) {
  std::mt19937_64 rng(TestSeed(13, "SwiGluCpu"));
  auto g = RandomFloats(1000, rng, -6, 6), u = RandomFloats(1000, rng);
  std::vector<float> out(1000, NAN), ref(1000);
  ASSERT_TRUE(SwiGluCpu({g.data(), u.data(), out.data(), 1000}).ok());
  for (int i = 0; i < 1000; ++i) ref[i] = float(g[i] / (1.0 + std::exp(-double(g[i]))) * u[i]);
  EXPECT_LE(Nmse(out, ref), 1e-12);
}

TEST(MatmulCpu, LinearLayerF32AndBf16) {
  std::mt19937_64 rng(TestSeed(14, "MatmulCpu"));
  const int m = 5, n = 7, k = 33;
  auto x = RandomFloats(m * k, rng), w = RandomFloats(n * k, rng);
  std::vector<float> y(m * n, NAN), ref(m * n);
  ASSERT_TRUE(MatmulCpu({KvDtype::kF32, x.data(), w.data(), y.data(), m, n, k}).ok());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int kk = 0; kk < k; ++kk) s += double(x[i * k + kk]) * w[j * k + kk];
      ref[i * n + j] = float(s);
    }
  EXPECT_LE(Nmse(y, ref), 1e-12);
  std::vector<uint16_t> xb(m * k), wb(n * k), yb(m * n);
  for (int i = 0; i < m * k; ++i) xb[i] = FloatToBf16Bits(x[i]);
  for (int i = 0; i < n * k; ++i) wb[i] = FloatToBf16Bits(w[i]);
  ASSERT_TRUE(MatmulCpu({KvDtype::kBF16, xb.data(), wb.data(), yb.data(), m, n, k}).ok());
  std::vector<float> yf(m * n);
  for (int i = 0; i < m * n; ++i) yf[i] = Bf16BitsToFloat(yb[i]);
  EXPECT_LE(Nmse(yf, ref), 1e-4);  // bf16 operands: relative error ~2^-8
  EXPECT_FALSE(MatmulCpu({KvDtype::kF16, xb.data(), wb.data(), yb.data(), m, n, k}).ok());
}

// Paged and contiguous twins read the same logical rows through different addressing and must
// agree bit-for-bit, for decode, split-K and chunked prefill, in every storage dtype.
TEST(AttentionCpu, PagedEqualsContiguousBitExact) {
  std::mt19937_64 rng(TestSeed(21, "PagedEqualsContiguousBitExact"));
  const int B = 3, Hkv = 2, Hq = 8, d = 32, T = 45;
  auto kv = RandomKv(B, Hkv, T, d, rng);
  const std::vector<int32_t> len = {45, 17, 33};
  for (KvDtype dt : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16}) {
    HostCache contig = MakeCache(kv, dt, 48, 0, rng);
    HostCache paged = MakeCache(kv, dt, 48, 16, rng);
    for (int t_q : {1, 5}) {
      for (int split : {0, 16}) {
        auto q = RandomFloats(size_t(B) * Hq * t_q * d, rng);
        std::vector<float> a(q.size(), NAN), b(q.size(), NAN);
        std::vector<float> ws(1 << 16);
        auto pa = AttnOn(contig, len, q, a, Hq, t_q, 45);
        auto pb = AttnOn(paged, len, q, b, Hq, t_q, 45);
        pa.split_size = pb.split_size = split;
        pa.workspace = pb.workspace = ws.data();
        ASSERT_TRUE(AttentionCpu(pa).ok());
        ASSERT_TRUE(AttentionCpu(pb).ok());
        ASSERT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4))
            << "dtype " << int(dt) << " t_q " << t_q << " split " << split;
        // And both compute attention: float64 reference on the stored (rounded) values.
        EXPECT_LE(Nmse(a, test::ReferenceAttention(kv, len, q, Hq, t_q, pa.scale, dt)), 1e-10);
      }
    }
  }
}

// Split-K combines per-split partials in split order; against the unsplit twin the stated
// tolerance is NMSE <= 1e-10 (fp32 re-association only).
TEST(AttentionCpu, SplitKMatchesUnsplitWithinTolerance) {
  std::mt19937_64 rng(TestSeed(22, "SplitKMatchesUnsplitWithinTolerance"));
  const int B = 2, Hkv = 2, Hq = 4, d = 16, T = 300;
  auto kv = RandomKv(B, Hkv, T, d, rng);
  const std::vector<int32_t> len = {300, 129};
  HostCache c = MakeCache(kv, KvDtype::kBF16, 300, 0, rng);
  auto q = RandomFloats(size_t(B) * Hq * d, rng, -3, 3);
  std::vector<float> un(q.size(), NAN), sp(q.size(), NAN);
  ASSERT_TRUE(AttentionCpu(AttnOn(c, len, q, un, Hq, 1, 300)).ok());
  for (int split : {1, 7, 64, 128, 299, 300}) {
    auto p = AttnOn(c, len, q, sp, Hq, 1, 300);
    p.split_size = split;
    std::vector<float> ws(AttentionWorkspaceFloats(p), NAN);
    p.workspace = ws.data();
    ASSERT_TRUE(AttentionCpu(p).ok());
    EXPECT_LE(Nmse(sp, un), 1e-10) << "split " << split;
  }
  auto p = AttnOn(c, len, q, sp, Hq, 1, 300);
  p.split_size = 64;  // split-K without a workspace is a usage error
  EXPECT_EQ(AttentionCpu(p).code(), StatusCode::kInvalidArgument);
}

// Bottom-right causal mask: chunked prefill row qi equals a decode call that sees
// T_past + qi + 1 keys (bit-exact in the twin).
TEST(AttentionCpu, ChunkedPrefillEqualsRowByRowDecode) {
  std::mt19937_64 rng(TestSeed(23, "ChunkedPrefillEqualsRowByRowDecode"));
  const int Hkv = 2, Hq = 4, d = 8, T_past = 6, T_new = 5;
  auto kv = RandomKv(1, Hkv, T_past + T_new, d, rng);
  HostCache c = MakeCache(kv, KvDtype::kF16, 16, 4, rng);
  auto q = RandomFloats(size_t(Hq) * T_new * d, rng);
  std::vector<float> pre(q.size(), NAN);
  const std::vector<int32_t> len = {T_past + T_new};
  ASSERT_TRUE(AttentionCpu(AttnOn(c, len, q, pre, Hq, T_new, T_past + T_new)).ok());
  for (int qi = 0; qi < T_new; ++qi) {
    std::vector<float> q1(Hq * d), o1(Hq * d, NAN);
    for (int h = 0; h < Hq; ++h)
      std::copy_n(q.begin() + (h * T_new + qi) * d, d, q1.begin() + h * d);
    const std::vector<int32_t> len1 = {T_past + qi + 1};
    ASSERT_TRUE(AttentionCpu(AttnOn(c, len1, q1, o1, Hq, 1, T_past + T_new)).ok());
    for (int h = 0; h < Hq; ++h)
      for (int dd = 0; dd < d; ++dd)
        ASSERT_EQ(o1[h * d + dd], pre[(h * T_new + qi) * d + dd]) << qi << " " << h;
  }
}

// The stated bf16 tolerance formula, checked on the twin: against float64 attention over the
// UNROUNDED fp32 K/V, NMSE <= 5e-4 and error <= 2x the naive bf16 reference's error.
TEST(AttentionCpu, Bf16StorageWithinStatedTolerance) {
  std::mt19937_64 rng(TestSeed(24, "Bf16StorageWithinStatedTolerance"));
  const int B = 2, Hkv = 2, Hq = 8, d = 64, T = 200;
  auto kv = RandomKv(B, Hkv, T, d, rng);
  const std::vector<int32_t> len = {200, 77};
  HostCache c = MakeCache(kv, KvDtype::kBF16, 200, 16, rng);
  auto q = RandomFloats(size_t(B) * Hq * d, rng, -2, 2);
  std::vector<float> out(q.size(), NAN);
  auto p = AttnOn(c, len, q, out, Hq, 1, 200);
  ASSERT_TRUE(AttentionCpu(p).ok());
  const auto ref = test::ReferenceAttention(kv, len, q, Hq, 1, p.scale);
  const auto naive = test::NaiveDtypeAttention(kv, len, q, Hq, 1, p.scale, KvDtype::kBF16);
  const double err = Nmse(out, ref), naive_err = Nmse(naive, ref);
  std::printf("bf16 twin NMSE %.3e, naive bf16 NMSE %.3e\n", err, naive_err);
  EXPECT_LE(err, 5e-4);
  EXPECT_LE(err, 2.0 * naive_err);
}

TEST(AttentionCpu, RejectsBadLengthsAndBlockIds) {
  std::mt19937_64 rng(TestSeed(25, "RejectsBadLengthsAndBlockIds"));
  auto kv = RandomKv(1, 1, 8, 4, rng);
  HostCache c = MakeCache(kv, KvDtype::kF32, 8, 4, rng);
  auto q = RandomFloats(4, rng);
  std::vector<float> out(4, NAN);
  std::vector<int32_t> len = {9};
  EXPECT_EQ(AttentionCpu(AttnOn(c, len, q, out, 1, 1, 8)).code(), StatusCode::kOutOfRange);
  len = {8};
  c.table[1] = c.layout.num_blocks;  // corrupt block id
  EXPECT_EQ(AttentionCpu(AttnOn(c, len, q, out, 1, 1, 8)).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(std::isnan(out[0])) << "a rejected call writes nothing";
  len = {4};  // rows beyond the corrupt block are not read
  EXPECT_TRUE(AttentionCpu(AttnOn(c, len, q, out, 1, 1, 8)).ok());
  auto bad_heads = AttnOn(c, len, q, out, 3, 1, 8);
  bad_heads.layout.num_kv_heads = 2;
  EXPECT_EQ(AttentionCpu(bad_heads).code(), StatusCode::kInvalidArgument);
}

// Probe 59: shapes whose launch the CUDA grid cannot cover (group * t_q past int32, more than
// 65535 row tiles or B * H_kv, split-K over more than INT32_MAX query rows) are refused by the
// shared validation, so the twin and the launcher (cudaErrorInvalidValue) agree. Only the
// shape is judged: the buffers are never read.
TEST(AttentionCpu, RefusesShapesTheLaunchGridCannotCover) {
  auto base = [] { return test::ShapeOnlyAttention(); };
  AttentionParams p = base();  // probe 59's reproducer: 2^32 + 64 rows wrapped to one tile
  p.num_q_heads = 64;
  p.t_q = (1 << 26) + 1;
  p.max_kv_len = p.t_q;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(AttentionCpu(p).code(), StatusCode::kOutOfRange);
  p = base();  // 65536 row tiles of 64 rows (head_dim 128)
  p.layout.head_dim = 128;
  p.t_q = 65536 * 64;
  p.max_kv_len = p.t_q;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kOutOfRange);
  p.t_q = 65535 * 64;  // the largest that fits
  EXPECT_TRUE(ValidateAttention(p).ok()) << ValidateAttention(p).ToString();
  p.layout.dtype = KvDtype::kBF16;  // the tensor-core prefill tiles t_q on gridDim.x
  p.t_q = 65536 * 64;
  ASSERT_TRUE(UseTensorCorePrefill(p));
  EXPECT_TRUE(ValidateAttention(p).ok()) << ValidateAttention(p).ToString();
  p = base();  // B * H_kv = 65536 blocks on gridDim.z
  p.layout.batch = 65536;
  p.layout.capacity = 4;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kOutOfRange);
  p.layout.batch = 65535;
  EXPECT_TRUE(ValidateAttention(p).ok());
  p = base();  // split-K combine: one block per query row, 2^31 rows
  static float ws[1];
  p.layout = KvLayout{KvDtype::kF32, 1024, 1, 1, 1 << 15};
  p.num_q_heads = 64;
  p.t_q = 1 << 15;
  p.max_kv_len = 1 << 15;
  p.split_size = 1 << 14;
  p.workspace = ws;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kOutOfRange);
  p.split_size = 0;  // unsplit: no combine
  EXPECT_TRUE(ValidateAttention(p).ok()) << ValidateAttention(p).ToString();
}

// --- Append transaction: staged rows are invisible until publication ---------------------

struct AppendFixture {
  LogicalKv kv;         // committed rows [0, T_past) + this call's rows [T_past, T)
  HostCache committed;  // storage holding only the committed rows; NaN elsewhere
  std::vector<int32_t> visible_len, visible_table, staged_table, base_len;
  std::vector<float> k_new, v_new;  // [B, H_kv, T_new, d_h]
  int32_t t_new = 0, error = 0;

  AppendFixture(int B, int Hkv, int d, int T_past, int T_new, KvDtype dt, int block_size,
                std::mt19937_64& rng) {
    kv = RandomKv(B, Hkv, T_past + T_new, d, rng);
    LogicalKv past{B, Hkv, T_past, d, {}, {}};
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < Hkv; ++h)
        for (int t = 0; t < T_past; ++t)
          for (int dd = 0; dd < d; ++dd) {
            past.k.push_back(kv.K(b, h, t, dd));
            past.v.push_back(kv.V(b, h, t, dd));
          }
    committed = MakeCache(past, dt, T_past + T_new + 8, block_size, rng);
    staged_table = committed.table;
    // Publication flips the table: the visible table knows only the committed blocks.
    visible_table = committed.table;
    if (block_size > 0) {
      const int committed_blocks = CeilDiv(T_past, block_size);
      for (int b = 0; b < B; ++b)
        for (int j = committed_blocks; j < committed.layout.max_blocks_per_seq; ++j)
          visible_table[b * committed.layout.max_blocks_per_seq + j] = -1;
    }
    visible_len.assign(B, T_past);
    base_len.assign(B, T_past);
    t_new = T_new;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < Hkv; ++h)
        for (int i = 0; i < T_new; ++i)
          for (int dd = 0; dd < d; ++dd) {
            k_new.push_back(kv.K(b, h, T_past + i, dd));
            v_new.push_back(kv.V(b, h, T_past + i, dd));
          }
  }
  KvAppendParams Append(HostCache& c) {
    KvAppendParams p;
    p.layout = c.layout;
    p.k_cache = c.k.data();
    p.v_cache = c.v.data();
    p.block_table = staged_table.empty() ? nullptr : staged_table.data();
    p.base_len = base_len.data();
    p.visible_len = visible_len.data();
    p.k_new = k_new.data();
    p.v_new = v_new.data();
    p.t_new = t_new;
    p.error_flag = &error;
    return p;
  }
  KvPublishParams Publish(std::vector<int32_t>& published) {
    KvPublishParams p;
    p.layout = committed.layout;
    p.staged_table = staged_table.empty() ? nullptr : staged_table.data();
    p.visible_table = visible_table.empty() ? nullptr : visible_table.data();
    p.visible_len = visible_len.data();
    p.base_len = base_len.data();
    p.t_new = t_new;
    p.error_flag = &error;
    p.published = published.data();
    return p;
  }
};

// Attention of a later, independent call: reads (visible_table, visible_len) only.
std::vector<float> ReadVisible(const AppendFixture& f, const HostCache& c,
                               const std::vector<float>& q, int Hq) {
  HostCache view = c;
  if (!f.visible_table.empty()) view.table = f.visible_table;
  std::vector<float> out(q.size(), NAN);
  EXPECT_TRUE(AttentionCpu(AttnOn(view, f.visible_len, q, out, Hq, 1, f.visible_len[0])).ok());
  return out;
}

TEST(KvAppendCpu, StagedRowsBecomeVisibleOnlyAtPublication) {
  std::mt19937_64 rng(TestSeed(31, "StagedRowsBecomeVisibleOnlyAtPublication"));
  for (int block_size : {0, 4}) {
    for (KvDtype dt : {KvDtype::kF32, KvDtype::kF16, KvDtype::kBF16}) {
      const int B = 2, Hkv = 2, Hq = 4, d = 8, T_past = 6, T_new = 3;
      AppendFixture f(B, Hkv, d, T_past, T_new, dt, block_size, rng);
      HostCache layer0 = f.committed, layer1 = f.committed;  // two cache-producing layers
      auto q = RandomFloats(size_t(B) * Hq * d, rng);
      const auto before = ReadVisible(f, layer0, q, Hq);

      ASSERT_TRUE(KvAppendCpu(f.Append(layer0)).ok());
      // Staged but unpublished: a later call sees exactly the old snapshot.
      EXPECT_EQ(0, std::memcmp(before.data(), ReadVisible(f, layer0, q, Hq).data(), q.size() * 4));
      // Current-call use: the transaction's own view (staged table, base + T_new) sees them.
      {
        HostCache txn_view = layer0;
        txn_view.table = f.staged_table;
        std::vector<int32_t> txn_len(B, T_past + T_new);
        std::vector<float> got(q.size(), NAN);
        ASSERT_TRUE(AttentionCpu(AttnOn(txn_view, txn_len, q, got, Hq, 1, T_past + T_new)).ok());
        EXPECT_LE(Nmse(got, test::ReferenceAttention(f.kv, txn_len, q, Hq, 1,
                                                     1.0f / std::sqrt(float(d)), dt)),
                  1e-10);
      }
      ASSERT_TRUE(KvAppendCpu(f.Append(layer1)).ok());
      std::vector<int32_t> published(B, -1);
      ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
      EXPECT_EQ(published, std::vector<int32_t>(B, 1));
      EXPECT_EQ(f.visible_len, std::vector<int32_t>(B, T_past + T_new));
      // After publication a later call sees all rows, equal to a cache built with all of them.
      HostCache full = MakeCache(f.kv, dt, T_past + T_new + 8, 0, rng);
      std::vector<float> want(q.size(), NAN);
      ASSERT_TRUE(AttentionCpu(AttnOn(full, f.visible_len, q, want, Hq, 1, T_past + T_new)).ok());
      EXPECT_EQ(0, std::memcmp(want.data(), ReadVisible(f, layer1, q, Hq).data(), q.size() * 4))
          << "block_size " << block_size << " dtype " << int(dt);
      // A second publish of the same transaction is a stale base: rejected, nothing changes.
      ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
      EXPECT_EQ(published, std::vector<int32_t>(B, 0));
      EXPECT_EQ(f.visible_len, std::vector<int32_t>(B, T_past + T_new));
    }
  }
}

TEST(KvAppendCpu, WritesExactlyTheStagedSlotsBitExact) {
  std::mt19937_64 rng(TestSeed(32, "WritesExactlyTheStagedSlotsBitExact"));
  AppendFixture f(2, 3, 8, 5, 4, KvDtype::kBF16, 4, rng);
  HostCache c = f.committed;
  const auto k_before = c.k;
  ASSERT_TRUE(KvAppendCpu(f.Append(c)).ok());
  // Expected bytes: the old buffer with exactly the staged rows replaced by RNE(bf16) values.
  auto expect = k_before;
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 3; ++h)
      for (int i = 0; i < 4; ++i) {
        const int64_t off = KvRowOffset(c.layout, f.staged_table.data(), b, h, 5 + i);
        for (int d = 0; d < 8; ++d) {
          const uint16_t bits = FloatToBf16Bits(f.kv.K(b, h, 5 + i, d));
          std::memcpy(expect.data() + (off + d) * 2, &bits, 2);
        }
      }
  EXPECT_EQ(c.k, expect);
  EXPECT_EQ(f.error, 0);
}

TEST(KvAppendCpu, UnaddressableRowFailsWholeTransactionAndBlocksPublication) {
  std::mt19937_64 rng(TestSeed(33, "UnaddressableRowFailsWholeTransaction"));
  AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF16, 4, rng);
  f.staged_table[1 * f.committed.layout.max_blocks_per_seq + 1] = -1;  // seq 1 lost its block
  HostCache c = f.committed;
  const auto before = c.k;
  EXPECT_EQ(KvAppendCpu(f.Append(c)).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(f.error, 1);
  EXPECT_EQ(c.k, before) << "a failing append writes nothing";
  std::vector<int32_t> published(2, -1);
  ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
  EXPECT_EQ(published, std::vector<int32_t>({0, 0}));
  EXPECT_EQ(f.visible_len, std::vector<int32_t>({3, 3}));
  // Capacity overflow on a contiguous layout is the same failure.
  AppendFixture g(1, 1, 4, 3, 2, KvDtype::kF32, 0, rng);
  g.base_len[0] = g.visible_len[0] = g.committed.layout.capacity - 1;
  HostCache gc = g.committed;
  EXPECT_EQ(KvAppendCpu(g.Append(gc)).code(), StatusCode::kOutOfRange);
  // A negative length (base == visible) is never addressable.
  g.base_len[0] = g.visible_len[0] = -3;
  g.error = 0;
  EXPECT_EQ(KvAppendCpu(g.Append(gc)).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(g.error, 1);
}

// Probe 59: a transaction that read an old length (base_len < visible_len) staged its rows over
// PUBLISHED rows (contiguous: rows [base, visible); paged: inside the shared last committed
// block) before publish refused it, so a later reader of the unchanged snapshot saw other
// values. Append must refuse the stale sequence before writing anything.
TEST(KvAppendCpu, StaleBaseWritesNothingAndPublishedRowsStay) {
  std::mt19937_64 rng(TestSeed(36, "StaleBaseWritesNothingAndPublishedRowsStay"));
  for (int block_size : {0, 4}) {
    SCOPED_TRACE("block_size " + std::to_string(block_size));
    const int B = 2, Hkv = 2, Hq = 4, d = 8;
    AppendFixture f(B, Hkv, d, 6, 3, KvDtype::kF32, block_size, rng);
    HostCache c = f.committed;
    // Another transaction published row 6 of sequence 1 after this one read length 5.
    f.base_len[1] = 5;
    f.visible_len[1] = 6;
    f.visible_len[0] = 6;
    auto q = RandomFloats(size_t(B) * Hq * d, rng);
    const auto before = ReadVisible(f, c, q, Hq);
    const auto k0 = c.k, v0 = c.v;
    const Status s = KvAppendCpu(f.Append(c));
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_EQ(f.error, 1);
    EXPECT_TRUE(c.k == k0 && c.v == v0) << "a stale append writes nothing";
    EXPECT_EQ(0, std::memcmp(before.data(), ReadVisible(f, c, q, Hq).data(), q.size() * 4))
        << "the published snapshot reads the same";
    std::vector<int32_t> published(B, -1);
    ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
    EXPECT_EQ(published, std::vector<int32_t>({0, 0}));
    EXPECT_EQ(f.visible_len, std::vector<int32_t>({6, 6}));
  }
}

TEST(KvAppendCpu, NeedsThePublishedLengths) {
  std::mt19937_64 rng(TestSeed(37, "NeedsThePublishedLengths"));
  AppendFixture f(1, 1, 4, 3, 2, KvDtype::kF32, 0, rng);
  HostCache c = f.committed;
  auto p = f.Append(c);
  p.visible_len = nullptr;
  EXPECT_EQ(KvAppendCpu(p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.error, 0);
}

TEST(KvPublishCpu, StaleBaseIsRejectedPerSequence) {
  std::mt19937_64 rng(TestSeed(34, "StaleBaseIsRejectedPerSequence"));
  AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF32, 4, rng);
  HostCache c = f.committed;
  ASSERT_TRUE(KvAppendCpu(f.Append(c)).ok());
  f.visible_len[1] = 4;  // another publication advanced sequence 1 after this txn read it
  const auto table_before = f.visible_table;
  std::vector<int32_t> published(2, -1);
  ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
  EXPECT_EQ(published, std::vector<int32_t>({1, 0}));
  EXPECT_EQ(f.visible_len, std::vector<int32_t>({5, 4}));
  const int mb = f.committed.layout.max_blocks_per_seq;
  for (int j = 0; j < mb; ++j) EXPECT_EQ(f.visible_table[mb + j], table_before[mb + j]);
}

// Probe 59: base_len == visible_len < 0 published a negative length.
TEST(KvPublishCpu, NegativeLengthIsNeverPublished) {
  std::mt19937_64 rng(TestSeed(38, "NegativeLengthIsNeverPublished"));
  for (int block_size : {0, 4}) {
    AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF32, block_size, rng);
    f.base_len[0] = f.visible_len[0] = -5;
    const auto table_before = f.visible_table;
    std::vector<int32_t> published(2, -1);
    ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
    EXPECT_EQ(published, std::vector<int32_t>({0, 1}));
    EXPECT_EQ(f.visible_len, std::vector<int32_t>({-5, 5}));
    const int mb = f.committed.layout.max_blocks_per_seq;
    for (int j = 0; j < mb && block_size > 0; ++j) EXPECT_EQ(f.visible_table[j], table_before[j]);
  }
}

// M5.1 0x01 worked two-layer decode trace: B=1, L=2, H_q=4, H_kv=2, d_h=4, T_past=4, T_new=1,
// fp16 K/V. The layer-local view has 5 keys (scores [1,4,1,5]) while the handle stays at 4
// until publication; pending bytes are 32 per layer and 64 for both, unchanged when H_q=8.
TEST(KvAppendCpu, M51WorkedTwoLayerDecodeTrace) {
  std::mt19937_64 rng(TestSeed(35, "M51WorkedTwoLayerDecodeTrace"));
  const int L = 2, Hq = 4, Hkv = 2, d = 4, T_past = 4, T_new = 1;
  AppendFixture f(1, Hkv, d, T_past, T_new, KvDtype::kF16, 0, rng);
  std::vector<HostCache> layers(L, f.committed);
  int64_t pending = 0;
  for (int l = 0; l < L; ++l) {
    auto p = f.Append(layers[l]);
    ASSERT_TRUE(KvAppendCpu(p).ok());
    EXPECT_EQ(KvAppendPayloadBytes(p.layout, p.t_new), 32);
    pending += KvAppendPayloadBytes(p.layout, p.t_new);
    // Layer-local current-call attention over T_past + T_new = 5 keys for 4 query heads.
    auto q = RandomFloats(Hq * d, rng);
    std::vector<float> out(Hq * d, NAN);
    const std::vector<int32_t> txn_len = {T_past + T_new};
    ASSERT_TRUE(AttentionCpu(AttnOn(layers[l], txn_len, q, out, Hq, 1, 5)).ok());
    EXPECT_LE(Nmse(out, test::ReferenceAttention(f.kv, txn_len, q, Hq, 1, 0.5f, KvDtype::kF16)),
              1e-10);
    EXPECT_EQ(f.visible_len[0], 4) << "handle stays at the committed length during the call";
  }
  EXPECT_EQ(pending, 64);
  // Changing H_q does not enter the persistent payload.
  EXPECT_EQ(KvAppendPayloadBytes(f.committed.layout, 1) * L, 64);
  std::vector<int32_t> published(1, -1);
  ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
  EXPECT_EQ(f.visible_len[0], 5);
}

}  // namespace
}  // namespace kvc::kernels

namespace kvc::kernels {
namespace {

// RoPE -> stage -> attend, all through the twins, for positions shifted by `delta`. With
// rope_k == false the K rows are staged pre-RoPE (a different cache ABI, M5.1 0x01).
std::vector<float> RopeAppendAttend(int delta, bool rope_k, const std::vector<float>& q_raw,
                                    const std::vector<float>& k_raw,
                                    const std::vector<float>& v_raw, int Hq, int Hkv, int d, int T,
                                    int t_q) {
  std::vector<float> q = q_raw, k = k_raw;
  std::vector<int32_t> pos_k(T), pos_q(t_q);
  for (int t = 0; t < T; ++t) pos_k[t] = t + delta;
  for (int i = 0; i < t_q; ++i) pos_q[i] = T - t_q + i + delta;
  RopeParams rq = RopeOn(q.data(), nullptr, pos_q.data(), 1, Hq, 0, t_q, d);
  EXPECT_TRUE(RopeCpu(rq).ok());
  if (rope_k) {
    RopeParams rk = rq;
    rk.q = k.data();
    rk.positions = pos_k.data();
    rk.num_q_heads = Hkv;
    rk.t = T;
    EXPECT_TRUE(RopeCpu(rk).ok());
  }
  KvLayout l{KvDtype::kF32, 1, Hkv, d, T};
  std::vector<float> kc(size_t(Hkv) * T * d, NAN), vc(kc.size(), NAN);
  int32_t base = 0, err = 0;
  KvAppendParams ap;
  ap.layout = l;
  ap.k_cache = kc.data();
  ap.v_cache = vc.data();
  ap.base_len = &base;
  ap.visible_len = &base;
  ap.k_new = k.data();
  ap.v_new = v_raw.data();
  ap.t_new = T;
  ap.error_flag = &err;
  EXPECT_TRUE(KvAppendCpu(ap).ok());
  std::vector<float> out(q.size(), NAN);
  const int32_t len = T;
  AttentionParams p;
  p.layout = l;
  p.k_cache = kc.data();
  p.v_cache = vc.data();
  p.kv_len = &len;
  p.max_kv_len = T;
  p.q = q.data();
  p.out = out.data();
  p.num_q_heads = Hq;
  p.t_q = t_q;
  p.scale = 1.0f / std::sqrt(float(d));
  EXPECT_TRUE(AttentionCpu(p).ok());
  return out;
}

// K rows are staged post-RoPE: attention then depends only on relative positions, so shifting
// every position by 1000 leaves the output unchanged (to float rounding of the angles), while
// staging pre-RoPE keys breaks that invariance (the test can fail).
TEST(PipelineCpu, RopeBeforeStagingIsShiftInvariant) {
  std::mt19937_64 rng(TestSeed(41, "RopeBeforeStagingIsShiftInvariant"));
  const int Hq = 4, Hkv = 2, d = 16, T = 10, t_q = 3;
  auto q = RandomFloats(size_t(Hq) * t_q * d, rng, -2, 2);
  auto k = RandomFloats(size_t(Hkv) * T * d, rng, -2, 2);
  auto v = RandomFloats(size_t(Hkv) * T * d, rng);
  const auto a = RopeAppendAttend(0, true, q, k, v, Hq, Hkv, d, T, t_q);
  const auto b = RopeAppendAttend(1000, true, q, k, v, Hq, Hkv, d, T, t_q);
  EXPECT_LE(Nmse(b, a), 1e-8);
  const auto c = RopeAppendAttend(0, false, q, k, v, Hq, Hkv, d, T, t_q);
  const auto e = RopeAppendAttend(1000, false, q, k, v, Hq, Hkv, d, T, t_q);
  EXPECT_GT(Nmse(e, c), 1e-4) << "pre-RoPE keys must not look shift invariant";
}

}  // namespace
}  // namespace kvc::kernels

namespace kvc::kernels {
namespace {

// bf16 conversion keeps every NaN a NaN with its sign, also one whose payload lies only in the
// low 16 bits that bf16 drops (unquieted it reads as inf; rounded like a number, inf or -0).
TEST(Conversions, Bf16KeepsEveryNanANan) {
  for (uint32_t u :
       {0x7f800001u, 0x7f808000u, 0x7fc00000u, 0x7fffffffu, 0xff800001u, 0xffffffffu}) {
    float f;
    std::memcpy(&f, &u, 4);
    const uint16_t h = FloatToBf16Bits(f);
    EXPECT_TRUE(std::isnan(Bf16BitsToFloat(h))) << std::hex << u << " -> " << h;
    EXPECT_EQ(h & 0x8000u, (u >> 16) & 0x8000u) << std::hex << u;
  }
}

// ValidateLayout refuses (kInvalidArgument) a dtype other than f32, f16, bf16, a batch, head
// count or head_dim of 0, a negative block_size and a contiguous capacity of 0.
TEST(ValidateLayout, RefusesInvalidFields) {
  const KvLayout ok{KvDtype::kF16, /*batch=*/2, /*heads=*/2, /*d_h=*/8, /*capacity=*/16};
  ASSERT_TRUE(ValidateLayout(ok).ok());
  KvLayout l = ok;
  l.dtype = static_cast<KvDtype>(3);
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
  l = ok;
  l.batch = 0;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
  l = ok;
  l.num_kv_heads = 0;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
  l = ok;
  l.block_size = -1;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
  l = ok;
  l.capacity = 0;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
}

// head_dim is accepted up to kAttnMaxHeadDim (256) inclusive and refused above it.
TEST(ValidateLayout, HeadDimUpTo256) {
  KvLayout l{KvDtype::kBF16, 1, 1, kAttnMaxHeadDim, 4};
  EXPECT_TRUE(ValidateLayout(l).ok()) << ValidateLayout(l).ToString();
  l.head_dim = kAttnMaxHeadDim + 1;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
}

// Paged: num_blocks > 0 (kInvalidArgument); block_size * max_blocks_per_seq positions fit int32
// and the pool's element count fits the int64 offsets (kOutOfRange).
TEST(ValidateLayout, PagedNeedsBlocksInt32PositionsAndAddressablePool) {
  const KvLayout ok{KvDtype::kF32, 1, 1, 1, 0, /*block_size=*/4, /*num_blocks=*/8, /*max=*/2};
  ASSERT_TRUE(ValidateLayout(ok).ok());
  KvLayout l = ok;
  l.num_blocks = 0;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kInvalidArgument);
  l = ok;  // 2^16 * 2^16 positions: 2^32, past int32
  l.block_size = 1 << 16;
  l.max_blocks_per_seq = 1 << 16;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kOutOfRange);
  l = ok;  // (2^31 - 1)^2 * 4 * 256 elements in the pool: past int64
  l.num_blocks = std::numeric_limits<int32_t>::max();
  l.num_kv_heads = std::numeric_limits<int32_t>::max();
  l.head_dim = 256;
  EXPECT_EQ(ValidateLayout(l).code(), StatusCode::kOutOfRange);
}

// ValidateAttention refuses (kInvalidArgument) a null kv_len and a paged layout without a
// block table; judged on the shape alone (nothing is read).
TEST(ValidateAttention, RefusesMissingLengthsAndBlockTable) {
  AttentionParams p = test::ShapeOnlyAttention();
  ASSERT_TRUE(ValidateAttention(p).ok());
  p.kv_len = nullptr;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kInvalidArgument);
  p = test::ShapeOnlyAttention();
  p.layout = KvLayout{KvDtype::kF32, 1, 1, 1, 0, /*block_size=*/4, /*num_blocks=*/2, /*max=*/1};
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kInvalidArgument);
}

// ValidateAttention refuses (kInvalidArgument) t_q 0, a scale that is not finite and > 0, and a
// negative split_size.
TEST(ValidateAttention, RefusesBadTqScaleAndSplitSize) {
  AttentionParams p = test::ShapeOnlyAttention();
  p.t_q = 0;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kInvalidArgument);
  for (float scale : {0.0f, -1.0f, NAN, INFINITY}) {
    p = test::ShapeOnlyAttention();
    p.scale = scale;
    EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kInvalidArgument) << scale;
  }
  p = test::ShapeOnlyAttention();
  p.split_size = -1;
  EXPECT_EQ(ValidateAttention(p).code(), StatusCode::kInvalidArgument);
}

// ValidateAppend: t_new in [1, MaxTokensPerSeq] (kOutOfRange), k_new and a paged layout's block
// table set (kInvalidArgument).
TEST(ValidateAppend, RefusesBadTnewAndMissingInputs) {
  std::mt19937_64 rng(TestSeed(39, "ValidateAppendRefuses"));
  AppendFixture f(1, 1, 4, 3, 2, KvDtype::kF32, 4, rng);
  HostCache c = f.committed;
  ASSERT_TRUE(ValidateAppend(f.Append(c)).ok());
  auto p = f.Append(c);
  p.t_new = 0;
  EXPECT_EQ(ValidateAppend(p).code(), StatusCode::kOutOfRange);
  p.t_new = static_cast<int32_t>(MaxTokensPerSeq(p.layout)) + 1;
  EXPECT_EQ(ValidateAppend(p).code(), StatusCode::kOutOfRange);
  p = f.Append(c);
  p.k_new = nullptr;
  EXPECT_EQ(ValidateAppend(p).code(), StatusCode::kInvalidArgument);
  p = f.Append(c);
  p.block_table = nullptr;
  EXPECT_EQ(ValidateAppend(p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.error, 0) << "a refused shape sets no error flag";
}

// ValidatePublish: t_new >= 1 (kOutOfRange) and, paged, both tables set (kInvalidArgument).
TEST(ValidatePublish, RefusesZeroTnewAndMissingTables) {
  std::mt19937_64 rng(TestSeed(40, "ValidatePublishRefuses"));
  AppendFixture f(1, 1, 4, 3, 2, KvDtype::kF32, 4, rng);
  std::vector<int32_t> published(1, -1);
  ASSERT_TRUE(ValidatePublish(f.Publish(published)).ok());
  auto p = f.Publish(published);
  p.t_new = 0;
  EXPECT_EQ(ValidatePublish(p).code(), StatusCode::kOutOfRange);
  p = f.Publish(published);
  p.staged_table = nullptr;
  EXPECT_EQ(ValidatePublish(p).code(), StatusCode::kInvalidArgument);
  p = f.Publish(published);
  p.visible_table = nullptr;
  EXPECT_EQ(ValidatePublish(p).code(), StatusCode::kInvalidArgument);
}

// RMSNorm's eps may be 0 (eps >= 0): x / sqrt(mean(x^2)) * w; x = (3, 4): rms = sqrt(12.5).
TEST(RmsNormCpu, AcceptsZeroEps) {
  const std::vector<float> x = {3.0f, 4.0f}, w = {1.0f, 2.0f};
  std::vector<float> y(2, NAN);
  ASSERT_TRUE(RmsNormCpu({x.data(), w.data(), y.data(), 1, 2, 0.0f}).ok());
  EXPECT_FLOAT_EQ(y[0], 3.0f / std::sqrt(12.5f));
  EXPECT_FLOAT_EQ(y[1], 8.0f / std::sqrt(12.5f));
  EXPECT_EQ(RmsNormCpu({x.data(), w.data(), y.data(), 1, 2, -1e-6f}).code(),
            StatusCode::kInvalidArgument);
}

// RoPE refuses (kInvalidArgument) a theta that is not finite and > 1, and a k without K/V
// heads.
TEST(RopeCpu, RefusesBadThetaAndKWithoutKvHeads) {
  std::vector<float> q(8, 1.0f), k(8, 1.0f);
  int32_t pos = 3;
  const RopeParams p = RopeOn(q.data(), nullptr, &pos, 1, 1, 0, 1, 8);
  ASSERT_TRUE(ValidateRope(p).ok());
  for (float theta : {1.0f, 0.5f, NAN, INFINITY}) {
    RopeParams r = p;
    r.theta = theta;
    EXPECT_EQ(ValidateRope(r).code(), StatusCode::kInvalidArgument) << theta;
  }
  RopeParams r = p;
  r.k = k.data();
  r.num_kv_heads = 0;
  EXPECT_EQ(ValidateRope(r).code(), StatusCode::kInvalidArgument);
}

// A q-only call (k null) ignores num_kv_heads: the audit's D2, where a negative unused value
// made a valid call "q element count overflows int64", and q and K/V heads summing past
// INT32_MAX were added in int32. With k set, the rows of both count, in int64.
TEST(RopeCpu, RegressionAQOnlyCallIgnoresNumKvHeads) {
  std::vector<float> q(8, 1.0f), k(8, 1.0f);
  int32_t pos = 3;
  const RopeParams p = RopeOn(q.data(), nullptr, &pos, 1, 1, 0, 1, 8);
  for (int32_t kv : {-2, std::numeric_limits<int32_t>::max()}) {
    RopeParams r = p;
    r.num_kv_heads = kv;
    EXPECT_TRUE(ValidateRope(r).ok()) << kv;
  }
  // 2 x 2^29 q heads x 2^30 = 2^60 elements fit (the bound is 2^61 - 1); K's rows as many
  // again do not.
  RopeParams r = p;
  r.batch = 2;
  r.num_q_heads = r.num_kv_heads = 1 << 29;
  r.head_dim = 1 << 30;
  EXPECT_TRUE(ValidateRope(r).ok());
  r.k = k.data();
  EXPECT_EQ(ValidateRope(r).code(), StatusCode::kOutOfRange);
}

// SwiGLU refuses (kInvalidArgument) n == 0 (n must be > 0).
TEST(SwiGluCpu, RefusesZeroLength) {
  const float g = 1.0f, u = 1.0f;
  float out = NAN;
  ASSERT_TRUE(ValidateSwiGlu({&g, &u, &out, 1}).ok());
  EXPECT_EQ(ValidateSwiGlu({&g, &u, &out, 0}).code(), StatusCode::kInvalidArgument);
}

// Positions are [B, T]: sequence b's rows rotate by its own positions (bit-exact with a
// one-sequence call at those positions).
TEST(RopeCpu, EachSequenceUsesItsOwnPositions) {
  std::mt19937_64 rng(TestSeed(15, "RopeCpuBatchPositions"));
  const int d = 8, T = 2;
  auto q = RandomFloats(2 * T * d, rng);
  const std::vector<int32_t> pos = {5, 6, /*seq 1:*/ 40, 41};
  std::vector<float> both = q;
  RopeParams p = RopeOn(both.data(), nullptr, pos.data(), 2, 1, 0, T, d);
  ASSERT_TRUE(RopeCpu(p).ok());
  std::vector<float> seq1(q.begin() + T * d, q.end());
  p.q = seq1.data();
  p.positions = pos.data() + T;
  p.batch = 1;
  ASSERT_TRUE(RopeCpu(p).ok());
  EXPECT_EQ(std::vector<float>(both.begin() + T * d, both.end()), seq1);
}

// With k set, RoPE rotates K [B, H_kv, T, d_h] in the same call, exactly as a separate call
// over K's own heads would.
TEST(RopeCpu, RotatesKWithItsOwnHeads) {
  std::mt19937_64 rng(TestSeed(16, "RopeCpuRotatesK"));
  const int B = 2, Hq = 4, Hkv = 2, T = 3, d = 8;
  const auto q0 = RandomFloats(size_t(B) * Hq * T * d, rng);
  const auto k0 = RandomFloats(size_t(B) * Hkv * T * d, rng);
  const std::vector<int32_t> pos = {7, 8, 9, /*seq 1:*/ 20, 21, 22};
  std::vector<float> q = q0, k = k0;
  const RopeParams p = RopeOn(q.data(), k.data(), pos.data(), B, Hq, Hkv, T, d);
  ASSERT_TRUE(RopeCpu(p).ok());
  std::vector<float> k_alone = k0;
  RopeParams pk = p;
  pk.q = k_alone.data();
  pk.k = nullptr;
  pk.num_q_heads = Hkv;
  pk.num_kv_heads = 0;
  ASSERT_TRUE(RopeCpu(pk).ok());
  EXPECT_NE(k_alone, k0);
  EXPECT_EQ(k, k_alone);
}

// A transaction whose base_len is AHEAD of the published length is stale too (base_len !=
// visible_len): refused with kFailedPrecondition, error flag set, nothing written.
TEST(KvAppendCpu, BaseAheadOfPublishedLengthIsStale) {
  std::mt19937_64 rng(TestSeed(42, "BaseAheadOfPublishedLengthIsStale"));
  AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF32, 0, rng);
  f.base_len[1] = 4;  // published length of sequence 1 is still 3
  HostCache c = f.committed;
  const auto k0 = c.k, v0 = c.v;
  EXPECT_EQ(KvAppendCpu(f.Append(c)).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(f.error, 1);
  EXPECT_TRUE(c.k == k0 && c.v == v0) << "a stale append writes nothing";
}

// Publish never publishes a length past the addressable tokens (base_len + t_new >
// MaxTokensPerSeq): that sequence gets published 0 and keeps its length; the others publish.
TEST(KvPublishCpu, LengthPastCapacityIsNotPublished) {
  std::mt19937_64 rng(TestSeed(43, "LengthPastCapacityIsNotPublished"));
  for (int block_size : {0, 4}) {
    SCOPED_TRACE("block_size " + std::to_string(block_size));
    AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF32, block_size, rng);
    const int32_t max_tokens = static_cast<int32_t>(MaxTokensPerSeq(f.committed.layout));
    f.base_len[0] = f.visible_len[0] = max_tokens - 1;  // + t_new 2: one past the end
    std::vector<int32_t> published(2, -1);
    ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
    EXPECT_EQ(published, std::vector<int32_t>({0, 1}));
    EXPECT_EQ(f.visible_len, std::vector<int32_t>({max_tokens - 1, 5}));
  }
}

// Publication copies exactly the first BlocksForTokens(base_len + t_new) staged entries; the
// visible table's later entries stay as they were (-1 here).
TEST(KvPublishCpu, CopiesOnlyTheBlocksOfTheNewLength) {
  std::mt19937_64 rng(TestSeed(44, "CopiesOnlyTheBlocksOfTheNewLength"));
  AppendFixture f(2, 1, 4, 3, 2, KvDtype::kF32, 4, rng);  // new length 5: 2 of 4 blocks
  const int mb = f.committed.layout.max_blocks_per_seq;
  ASSERT_EQ(mb, 4);
  std::vector<int32_t> published(2, -1);
  ASSERT_TRUE(KvPublishCpu(f.Publish(published)).ok());
  ASSERT_EQ(published, std::vector<int32_t>({1, 1}));
  for (int b = 0; b < 2; ++b) {
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(f.visible_table[b * mb + j], f.staged_table[b * mb + j]) << b << " " << j;
    for (int j = 2; j < mb; ++j) EXPECT_EQ(f.visible_table[b * mb + j], -1) << b << " " << j;
  }
}

// AttentionCpu refuses (kOutOfRange, nothing written) kv_len[b] below t_q and above
// max_kv_len, also where the rows past max_kv_len are addressable.
TEST(AttentionCpu, RejectsKvLenOutsideTqToMaxKvLen) {
  std::mt19937_64 rng(TestSeed(26, "RejectsKvLenOutsideTqToMaxKvLen"));
  auto kv = RandomKv(1, 1, 8, 4, rng);
  HostCache c = MakeCache(kv, KvDtype::kF32, 8, 0, rng);
  auto q = RandomFloats(2 * 4, rng);
  std::vector<float> out(q.size(), NAN);
  std::vector<int32_t> len = {1};  // t_q 2
  EXPECT_EQ(AttentionCpu(AttnOn(c, len, q, out, 1, 2, 8)).code(), StatusCode::kOutOfRange);
  len = {6};  // max_kv_len 5, capacity 8
  EXPECT_EQ(AttentionCpu(AttnOn(c, len, q, out, 1, 2, 5)).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(std::isnan(out[0])) << "a rejected call writes nothing";
  len = {5};
  EXPECT_TRUE(AttentionCpu(AttnOn(c, len, q, out, 1, 2, 5)).ok());
}

// Every block id the call reads is checked, including the block that holds only the last
// visible row (kv_len 5, block_size 4: row 4 alone in the second block).
TEST(AttentionCpu, RejectsBadBlockOfTheLastVisibleRow) {
  std::mt19937_64 rng(TestSeed(27, "RejectsBadBlockOfTheLastVisibleRow"));
  auto kv = RandomKv(1, 1, 8, 4, rng);
  HostCache c = MakeCache(kv, KvDtype::kF32, 8, 4, rng);
  auto q = RandomFloats(4, rng);
  std::vector<float> out(4, NAN);
  const std::vector<int32_t> len = {5};
  c.table[1] = c.layout.num_blocks;
  EXPECT_EQ(AttentionCpu(AttnOn(c, len, q, out, 1, 1, 8)).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE(std::isnan(out[0])) << "a rejected call writes nothing";
}

// Softmax subtracts the row's max score: scores near -120 (exp underflows fp32 without the
// shift) still give the weighted average. Tolerance: each score carries ~ulp(120) = 7.6e-6 of
// rounding, a relative weight error <= 2e-5, so NMSE <= ~1e-9 (measured 9e-13 to 1.7e-10 over
// nine seeds); the bound is 1e-8 (a lost shift gives zeros: NMSE 1).
TEST(AttentionCpu, VeryNegativeScoresStillAverageTheValues) {
  std::mt19937_64 rng(TestSeed(28, "VeryNegativeScoresStillAverageTheValues"));
  const int T = 6, d = 4;
  LogicalKv kv = RandomKv(1, 1, T, d, rng);
  for (int t = 0; t < T; ++t) kv.k[kv.Idx(0, 0, t, 0)] = 8.0f;  // q . k = -240 + ...
  HostCache c = MakeCache(kv, KvDtype::kF32, T, 0, rng);
  std::vector<float> q = {-30.0f, 1.0f, -0.5f, 0.25f}, out(d, NAN);
  const std::vector<int32_t> len = {T};
  auto p = AttnOn(c, len, q, out, 1, 1, T);  // scale 1/2: scores -120 +- 1
  ASSERT_TRUE(AttentionCpu(p).ok());
  EXPECT_LE(Nmse(out, test::ReferenceAttention(kv, len, q, 1, 1, p.scale)), 1e-8);
}

// Split-K partials go to the workspace as [row][split][acc (d_h), m, l] (the device combine's
// input format), and the output is their combination in split order 0..n-1 with the combine's
// formula: recombining the workspace gives the output bit-for-bit.
TEST(AttentionCpu, SplitKOutputIsTheInOrderCombinationOfTheWorkspace) {
  std::mt19937_64 rng(TestSeed(29, "SplitKOutputIsTheInOrderCombinationOfTheWorkspace"));
  const int B = 2, Hkv = 1, Hq = 2, d = 8, T = 300, t_q = 2;
  auto kv = RandomKv(B, Hkv, T, d, rng);
  const std::vector<int32_t> len = {300, 130};
  HostCache c = MakeCache(kv, KvDtype::kF32, T, 0, rng);
  auto q = RandomFloats(size_t(B) * Hq * t_q * d, rng, -3, 3);
  std::vector<float> out(q.size(), NAN);
  auto p = AttnOn(c, len, q, out, Hq, t_q, T);
  p.split_size = 7;
  const int n = NumSplits(T, p.split_size);
  std::vector<float> ws(AttentionWorkspaceFloats(p), NAN);
  p.workspace = ws.data();
  ASSERT_TRUE(AttentionCpu(p).ok());
  for (int64_t row = 0; row < int64_t{B} * Hq * t_q; ++row) {
    const float* part = ws.data() + row * n * (d + 2);
    float big_m = -INFINITY;
    for (int s = 0; s < n; ++s)
      if (part[s * (d + 2) + d + 1] > 0.0f) big_m = std::max(big_m, part[s * (d + 2) + d]);
    float denom = 0.0f;
    std::vector<float> acc(d, 0.0f);
    for (int s = 0; s < n; ++s) {
      const float* ps = part + s * (d + 2);
      if (!(ps[d + 1] > 0.0f)) continue;
      const float w = std::exp(ps[d] - big_m);
      denom += w * ps[d + 1];
      for (int dd = 0; dd < d; ++dd) acc[dd] += w * ps[dd];
    }
    for (int dd = 0; dd < d; ++dd) {
      const float want = acc[dd] / denom;
      ASSERT_EQ(std::memcmp(&want, &out[row * d + dd], 4), 0) << row << " " << dd;
    }
  }
}

}  // namespace
}  // namespace kvc::kernels
