// Unit tests of the host/device index arithmetic in kernel_types.h (run on the CPU in CI).
#include "kernels/kernel_types.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

namespace kvc::kernels {
namespace {

TEST(KvRowOffset, ContiguousIsRowMajorBHTD) {
  KvLayout l{KvDtype::kBF16, /*batch=*/2, /*heads=*/3, /*d_h=*/4, /*capacity=*/5};
  EXPECT_EQ(KvRowOffset(l, nullptr, 0, 0, 0), 0);
  EXPECT_EQ(KvRowOffset(l, nullptr, 0, 0, 1), 4);
  EXPECT_EQ(KvRowOffset(l, nullptr, 0, 1, 0), 5 * 4);
  EXPECT_EQ(KvRowOffset(l, nullptr, 1, 2, 4), ((1 * 3 + 2) * 5 + 4) * 4);
  EXPECT_EQ(KvRowOffset(l, nullptr, 1, 2, 5), -1);  // beyond capacity
  EXPECT_EQ(KvRowOffset(l, nullptr, 0, 0, -1), -1);
}

TEST(KvRowOffset, PagedFollowsBlockTable) {
  // 2 sequences, block_size 4, 3 blocks per sequence, pool of 8 blocks, 2 heads, d_h 2.
  KvLayout l{KvDtype::kF32, 2, 2, 2, 0, /*block_size=*/4, /*num_blocks=*/8, /*max_blocks=*/3};
  const std::vector<int32_t> table = {5, 1, 7, /*seq 1:*/ 0, 6, -1};
  // seq 0, token 6 -> block table[0][1] = 1, slot 2.
  EXPECT_EQ(KvRowOffset(l, table.data(), 0, 1, 6), ((1 * 2 + 1) * 4 + 2) * 2);
  // seq 1, token 3 -> block 0, slot 3.
  EXPECT_EQ(KvRowOffset(l, table.data(), 1, 0, 3), (0 * 4 + 3) * 2);
  // seq 1, token 8 -> table entry -1: not addressable.
  EXPECT_EQ(KvRowOffset(l, table.data(), 1, 0, 8), -1);
  // token 12 is past max_blocks_per_seq * block_size.
  EXPECT_EQ(KvRowOffset(l, table.data(), 0, 0, 12), -1);
  const std::vector<int32_t> bad = {8, 0, 0, 0, 0, 0};  // block id == num_blocks
  EXPECT_EQ(KvRowOffset(l, bad.data(), 0, 0, 0), -1);
}

TEST(KvRowOffset, PagedRowsNeverOverlapAcrossSequencesHeadsTokens) {
  KvLayout l{KvDtype::kF16, 3, 2, 8, 0, 4, 12, 4};
  std::vector<int32_t> table(12);
  for (int i = 0; i < 12; ++i) table[i] = (i * 5) % 12;  // a permutation of the pool
  std::set<int64_t> seen;
  for (int b = 0; b < 3; ++b)
    for (int h = 0; h < 2; ++h)
      for (int t = 0; t < 16; ++t) {
        const int64_t off = KvRowOffset(l, table.data(), b, h, t);
        ASSERT_GE(off, 0);
        ASSERT_EQ(off % 8, 0);
        ASSERT_LT(off, int64_t{12} * 2 * 4 * 8);
        ASSERT_TRUE(seen.insert(off).second) << b << " " << h << " " << t;
      }
}

TEST(Gqa, QueryHeadGroups) {
  // H_q = 8, H_kv = 2: heads 0..3 read kv head 0, 4..7 read kv head 1.
  for (int h = 0; h < 8; ++h) EXPECT_EQ(KvHeadOfQueryHead(h, 8, 2), h / 4);
  for (int h = 0; h < 4; ++h) EXPECT_EQ(KvHeadOfQueryHead(h, 4, 4), h);  // MHA
  for (int h = 0; h < 4; ++h) EXPECT_EQ(KvHeadOfQueryHead(h, 4, 1), 0);  // MQA
}

TEST(CausalKeyLimit, BottomRightAligned) {
  // Decode: one query sees everything visible to the call (committed + its own row).
  EXPECT_EQ(CausalKeyLimit(5, 1, 0), 5);
  // Chunked prefill, T_past = 4, T_new = 3 (kv_len 7): rows see 5, 6, 7 keys.
  EXPECT_EQ(CausalKeyLimit(7, 3, 0), 5);
  EXPECT_EQ(CausalKeyLimit(7, 3, 1), 6);
  EXPECT_EQ(CausalKeyLimit(7, 3, 2), 7);
  // First prefill, T_past = 0: the triangular mask.
  for (int qi = 0; qi < 4; ++qi) EXPECT_EQ(CausalKeyLimit(4, 4, qi), qi + 1);
  EXPECT_EQ(CausalKeyLimit(2, 4, 0), 0);  // never negative
}

TEST(Splits, FixedSizeCoversEveryKeyOnce) {
  for (int split_size : {0, 1, 7, 32, 512}) {
    for (int limit : {1, 2, 31, 32, 33, 1000}) {
      const int n = NumSplits(1000, split_size);
      std::vector<int> hits(limit, 0);
      int prev_end = 0;
      for (int s = 0; s < n; ++s) {
        int b, e;
        SplitKeyRange(s, split_size, limit, &b, &e);
        ASSERT_LE(b, e);
        ASSERT_EQ(b, std::min(prev_end, limit)) << "splits must be contiguous and ordered";
        for (int t = b; t < e; ++t) ++hits[t];
        prev_end = e;
      }
      for (int t = 0; t < limit; ++t) ASSERT_EQ(hits[t], 1) << split_size << " " << limit;
    }
  }
  EXPECT_EQ(NumSplits(32768, 512), 64);
  EXPECT_EQ(NumSplits(100, 0), 1);
}

// The tensor-core decode takes bf16 K/V, head_dim 128, t_q 1 and G in [1, 16], unless the
// caller forces the SIMT path; the launcher asks for it before the SIMT decode fast path.
TEST(DecodeTc, SelectsExactlyItsShapes) {
  AttentionParams p;
  p.layout = KvLayout{KvDtype::kBF16, 64, 8, 128, 4096};
  p.num_q_heads = 64;
  p.t_q = 1;
  EXPECT_TRUE(UseTensorCoreDecode(p));
  EXPECT_TRUE(UseDecodeFastPath(p))
      << "the fast path would take it too: the launcher asks TC first";
  for (int32_t hq : {8, 16, 40, 128}) {
    p.num_q_heads = hq;
    EXPECT_TRUE(UseTensorCoreDecode(p)) << hq;
  }
  p.num_q_heads = 136;  // G 17: more heads than the m16 row tile
  EXPECT_FALSE(UseTensorCoreDecode(p));
  p.num_q_heads = 12;  // not a multiple of H_kv
  EXPECT_FALSE(UseTensorCoreDecode(p));
  p.num_q_heads = 64;
  AttentionParams q = p;
  q.t_q = 2;
  EXPECT_FALSE(UseTensorCoreDecode(q));
  q = p;
  q.simt_only = true;
  EXPECT_FALSE(UseTensorCoreDecode(q));
  for (KvDtype dt : {KvDtype::kF32, KvDtype::kF16}) {
    q = p;
    q.layout.dtype = dt;
    EXPECT_FALSE(UseTensorCoreDecode(q));
  }
  q = p;
  q.layout.head_dim = 64;
  EXPECT_FALSE(UseTensorCoreDecode(q));
  // Two blocks of the ring per SM (the launch bounds' occupancy) fit the H200's 228 KB.
  EXPECT_LE(2 * (DecodeTcSmemBytes() + 1024), 228 * 1024);
}

// Warp w walks tiles w, w + 4, ...: over any key range the warps visit every tile exactly once.
TEST(DecodeTc, WarpTilesCoverTheRangeOnce) {
  for (int32_t begin : {0, 5, 512})
    for (int32_t len = 0; len <= 300; ++len) {
      int32_t total = 0;
      for (int32_t w = 0; w < kDecTcWarps; ++w) {
        const int32_t n = DecodeTcWarpTiles(begin, begin + len, w);
        total += n;
        if (n > 0) {
          EXPECT_LT((w + (n - 1) * kDecTcWarps) * kDecTcKeys, len) << "last tile starts inside";
        }
        EXPECT_GE((w + n * kDecTcWarps) * kDecTcKeys, len) << "no tile left for this warp";
      }
      EXPECT_EQ(total, CeilDiv(len, kDecTcKeys)) << begin << " " << len;
    }
}

TEST(Splits, ChooseSplitSizeFillsTheDeviceDeterministically) {
  EXPECT_EQ(ChooseSplitSize(64, 8, 32768, 132), 0);  // 512 blocks: no split needed
  const int s = ChooseSplitSize(1, 8, 32768, 132);   // 8 blocks: split
  EXPECT_GT(s, 0);
  EXPECT_EQ(s % 256, 0);
  EXPECT_GE(8 * NumSplits(32768, s), 2 * 132 * 9 / 10);  // about two blocks per SM ...
  EXPECT_LE(8 * NumSplits(32768, s), 2 * 132);           // ... in one wave
  EXPECT_EQ(s, ChooseSplitSize(1, 8, 32768, 132));
  EXPECT_EQ(ChooseSplitSize(1, 8, 300, 132), 0);  // short contexts stay unsplit
  EXPECT_EQ(ChooseSplitSize(1, 8, 512, 132), 0);  // up to 512 tokens, as documented
  EXPECT_EQ(ChooseSplitSize(1, 8, 513, 132), 256);
}

TEST(Tiling, RowsPerBlockRespectsAccumulatorBudget) {
  EXPECT_EQ(AttentionRowsPerBlock(8, 1, 128), 8);     // decode, GQA 8:1
  EXPECT_EQ(AttentionRowsPerBlock(8, 100, 128), 64);  // prefill: capped at 64 rows
  EXPECT_EQ(AttentionRowsPerBlock(4, 100, 256), 32);  // 32 * 256 = 8192
  for (int d : {16, 64, 128, 256})
    for (int g : {1, 4, 8})
      for (int t : {1, 3, 1000}) EXPECT_LE(AttentionRowsPerBlock(g, t, d) * d, kAttnMaxRowElems);
  // group * t_q past int32 (2^32 wrapped to 0 before probe 59) still gets the capped row count.
  EXPECT_EQ(AttentionRowsPerBlock(1 << 16, 1 << 16, 128), 64);
}

// The launcher's row tiles in 64-bit (probe 59: CeilDiv(g * t_q, rows) wrapped to 1 tile for
// g * t_q = 2^32 + 64, and the launch covered 64 of those rows).
TEST(Tiling, RowTilesAre64Bit) {
  AttentionParams p;
  p.layout = KvLayout{KvDtype::kF32, 1, 1, 1, (1 << 26) + 1};
  p.num_q_heads = 64;
  p.t_q = (1 << 26) + 1;
  EXPECT_EQ(AttentionGroupRows(p), int64_t{64} * ((1 << 26) + 1));
  EXPECT_GT(AttentionRowTiles(p), kMaxGridYZ);
  p.layout.head_dim = 128;
  p.num_q_heads = 1;
  p.t_q = 65535 * 64;
  EXPECT_EQ(AttentionRowTiles(p), 65535);
  p.t_q += 1;
  EXPECT_EQ(AttentionRowTiles(p), 65536);
}

// CeilDiv near INT32_MAX (a leftover of the kernel probe: (a + b - 1) / b wrapped, so a split
// count or a block count of a length within b of 2^31 came out negative).
TEST(Tiling, CeilDivDoesNotWrapNearInt32Max) {
  const int32_t max = 2147483647;
  EXPECT_EQ(CeilDiv(max, 1000), 2147484);
  EXPECT_EQ(NumSplits(max, 1000), 2147484);
  EXPECT_EQ(CeilDiv(max, max), 1);
  EXPECT_EQ(CeilDiv(max - 1, max), 1);
  EXPECT_EQ(CeilDiv(0, 7), 0);
  for (int32_t a = 0; a < 50; ++a)
    for (int32_t b = 1; b < 9; ++b) EXPECT_EQ(CeilDiv(a, b), (a + b - 1) / b) << a << "/" << b;
}

TEST(Workspace, SizeMatchesSplitLayout) {
  AttentionParams p;
  p.layout = KvLayout{KvDtype::kBF16, 2, 2, 128, 4096};
  p.num_q_heads = 16;
  p.t_q = 1;
  p.max_kv_len = 1000;
  p.split_size = 256;  // 4 splits
  EXPECT_EQ(AttentionWorkspaceFloats(p), int64_t{2} * 16 * 1 * 4 * 130);
  p.split_size = 0;
  EXPECT_EQ(AttentionWorkspaceFloats(p), 0);
}

TEST(Rope, InvFreqMatchesDefinition) {
  EXPECT_EQ(RopeInvFreq(0, 128, 10000.0f), 1.0f);
  EXPECT_FLOAT_EQ(RopeInvFreq(16, 128, 10000.0f), 0.1f);   // 10000^(-0.25)
  EXPECT_FLOAT_EQ(RopeInvFreq(32, 128, 10000.0f), 0.01f);  // 10000^(-0.5)
  EXPECT_FLOAT_EQ(RopeInvFreq(1, 4, 10000.0f), 0.01f);     // 10000^(-2/4)
}

}  // namespace
}  // namespace kvc::kernels

namespace kvc::kernels {
namespace {

// Host transcription of DecodeFastKernel's warp reduction (ReduceScatterStep / ReduceScatterAll
// in cuda_kernels_impl.cu): every lane reads its xor partner's pre-step registers.
void HostReduceScatterAll(std::vector<std::vector<double>>& s, int n) {
  for (int half = n / 2; half >= 2; half /= 2) {
    const int o = half / 2;
    const auto old = s;
    for (int lane = 0; lane < 32; ++lane) {
      const int partner = lane ^ o;
      const bool upper = (lane & o) != 0, partner_upper = !upper;
      for (int i = 0; i < half; ++i) {
        const double keep = upper ? old[lane][i + half] : old[lane][i];
        const double recv = partner_upper ? old[partner][i] : old[partner][i + half];
        s[lane][i] = keep + recv;
      }
    }
  }
  for (int o = n / 2; o < 32; o <<= 1) {
    const auto old = s;
    for (int lane = 0; lane < 32; ++lane)
      for (int j = 0; j < 2; ++j) s[lane][j] = old[lane][j] + old[lane ^ o][j];
  }
}

TEST(DecodeFastPath, ReductionLeavesTheMappedEntriesOnEachLane) {
  std::mt19937_64 rng(5);
  for (int g : {1, 2, 4, 8}) {
    const int n = DecodeFastPartials(g);
    std::vector<std::vector<double>> s(32, std::vector<double>(n));
    std::vector<double> total(n, 0.0);
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < n; ++i) total[i] += (s[lane][i] = double(rng() % 1000));  // exact sums
    HostReduceScatterAll(s, n);
    const int head_bits = g == 8 ? 2 : (g == 4 ? 1 : 0);  // the kernel's kHeadBits
    for (int lane = 0; lane < 32; ++lane) {
      int key[2], head[2];
      for (int j = 0; j < 2; ++j) {
        DecodeFastEntry(g, lane, j, &key[j], &head[j]);
        ASSERT_LT(key[j], kDecodeKeys);
        ASSERT_LT(head[j], g);
        EXPECT_EQ(s[lane][j], total[key[j] * g + head[j]]) << "g=" << g << " lane=" << lane;
      }
      if (g >= 2) {  // one key, heads h0 (even) and h0 + 1; key_of_lane as in the kernel
        EXPECT_EQ(key[0], key[1]);
        EXPECT_EQ(head[0] % 2, 0);
        EXPECT_EQ(head[1], head[0] + 1);
        EXPECT_EQ(key[0], (lane >> head_bits) & (kDecodeKeys - 1));
      } else {  // two keys of the one head; key_of_lane = 2 (lane & 3)
        EXPECT_EQ(key[0], 2 * (lane & 3));
        EXPECT_EQ(key[1], key[0] + 1);
      }
    }
    // The kernel's broadcast sources: weight of (kk, h) from lane (kk << head_bits) | (h >> 1),
    // slot h & 1 (G == 1: lane kk >> 1, slot kk & 1); correction of head h from lane h >> 1.
    for (int kk = 0; kk < kDecodeKeys; ++kk)
      for (int h = 0; h < g; ++h) {
        const int src = g >= 2 ? ((kk << head_bits) | (h >> 1)) : (kk >> 1);
        const int slot = g >= 2 ? (h & 1) : (kk & 1);
        int key, head;
        DecodeFastEntry(g, src, slot, &key, &head);
        EXPECT_EQ(key, kk);
        EXPECT_EQ(head, h);
      }
    // The max/sum offsets (G/2, G, 2G for G >= 2; 1, 2 for G == 1) visit each key once.
    for (int lane = 0; lane < 32; ++lane) {
      std::set<int> keys;
      const std::vector<int> offs =
          g >= 2 ? std::vector<int>{g / 2, g, 2 * g} : std::vector<int>{1, 2};
      for (int mask = 0; mask < (1 << offs.size()); ++mask) {
        int other = lane;
        for (size_t b = 0; b < offs.size(); ++b)
          if (mask & (1 << b)) other ^= offs[b];
        for (int j = 0; j < (g >= 2 ? 1 : 2); ++j) {
          int key, head, my_key, my_head;
          DecodeFastEntry(g, other, j, &key, &head);
          DecodeFastEntry(g, lane, j, &my_key, &my_head);
          EXPECT_EQ(head, my_head) << "a reduction partner holds another head";
          EXPECT_TRUE(keys.insert(key).second) << "g=" << g << " key " << key << " twice";
        }
      }
      EXPECT_EQ(keys.size(), size_t(kDecodeKeys)) << "g=" << g;
    }
  }
}

TEST(DecodeFastPath, Selection) {
  AttentionParams p;
  p.layout.num_kv_heads = 4;
  p.layout.head_dim = 128;
  p.t_q = 1;
  for (int g : {1, 2, 4, 8}) {
    p.num_q_heads = 4 * g;
    EXPECT_TRUE(UseDecodeFastPath(p)) << g;
  }
  p.num_q_heads = 4 * 16;
  EXPECT_FALSE(UseDecodeFastPath(p));  // group 16: tiled kernel
  p.num_q_heads = 4 * 3;
  EXPECT_FALSE(UseDecodeFastPath(p));
  p.num_q_heads = 8;
  p.layout.head_dim = 64;
  EXPECT_TRUE(UseDecodeFastPath(p));
  p.layout.head_dim = 256;
  EXPECT_FALSE(UseDecodeFastPath(p));
  p.layout.head_dim = 128;
  p.t_q = 2;
  EXPECT_FALSE(UseDecodeFastPath(p));
  p.t_q = 1;
  p.simt_only = true;
  EXPECT_FALSE(UseDecodeFastPath(p));
}

}  // namespace
}  // namespace kvc::kernels

namespace kvc::kernels {
namespace {

// DecodeFastKernel<float, G, D> for one (b, h_kv) and one key range, transcribed lane by lane
// (warps, 8-key chunks, the reduction of HostReduceScatterAll, the G >= 2 and G == 1 softmax
// branches, the shuffled corrections/weights and the fixed-order warp merge). Returns
// out[G][D]. Shuffles read the pre-step values of the partner lane.
std::vector<double> EmulateDecodeFast(int G, int D, const std::vector<float>& K,
                                      const std::vector<float>& V, const std::vector<float>& Q,
                                      int t_begin, int t_end, float scale) {
  const int C = D / 32, N = kDecodeKeys * G;
  const int head_bits = G == 8 ? 2 : (G == 4 ? 1 : 0);
  constexpr int kWarps = 4;
  std::vector<double> wm(kWarps * G), wl(kWarps * G), wacc(size_t(kWarps) * G * D);
  using Lanes = std::array<double, 32>;
  auto xor_max = [](Lanes v, int o) {
    Lanes r;
    for (int l = 0; l < 32; ++l) r[l] = std::max(v[l], v[l ^ o]);
    return r;
  };
  auto xor_add = [](Lanes v, int o) {
    Lanes r;
    for (int l = 0; l < 32; ++l) r[l] = v[l] + v[l ^ o];
    return r;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (int w = 0; w < kWarps; ++w) {
    std::vector<std::vector<double>> acc(32, std::vector<double>(size_t(G) * C, 0.0));
    Lanes m0, m1, l0, l1;
    m0.fill(-inf), m1.fill(-inf), l0.fill(0), l1.fill(0);
    for (int c0 = t_begin + w * kDecodeKeys; c0 < t_end; c0 += kWarps * kDecodeKeys) {
      std::vector<std::vector<double>> s(32, std::vector<double>(N, 0.0));
      for (int lane = 0; lane < 32; ++lane)
        for (int kk = 0; kk < kDecodeKeys; ++kk)
          for (int h = 0; h < G; ++h) {
            double a = 0;
            if (c0 + kk < t_end)
              for (int c = 0; c < C; ++c)
                a += double(Q[h * D + lane * C + c]) * scale * K[(c0 + kk) * D + lane * C + c];
            s[lane][kk * G + h] = a;
          }
      HostReduceScatterAll(s, N);
      auto v_at = [&](int kk, int lane, int c) {
        return c0 + kk < t_end ? double(V[(c0 + kk) * D + lane * C + c]) : 0.0;
      };
      if (G >= 2) {
        Lanes sc0, sc1;
        for (int l = 0; l < 32; ++l) {
          const bool valid = c0 + ((l >> head_bits) & (kDecodeKeys - 1)) < t_end;
          sc0[l] = valid ? s[l][0] : -inf;
          sc1[l] = valid ? s[l][1] : -inf;
        }
        Lanes mx0 = sc0, mx1 = sc1;
        for (int o = G / 2; o < 4 * G; o <<= 1) mx0 = xor_max(mx0, o), mx1 = xor_max(mx1, o);
        Lanes c0v, c1v, p0, p1;
        for (int l = 0; l < 32; ++l) {
          const double mn0 = std::max(m0[l], mx0[l]), mn1 = std::max(m1[l], mx1[l]);
          c0v[l] = mn0 == -inf ? 1.0 : std::exp(m0[l] - mn0);
          c1v[l] = mn1 == -inf ? 1.0 : std::exp(m1[l] - mn1);
          p0[l] = sc0[l] == -inf ? 0.0 : std::exp(sc0[l] - mn0);
          p1[l] = sc1[l] == -inf ? 0.0 : std::exp(sc1[l] - mn1);
          m0[l] = mn0, m1[l] = mn1;
        }
        Lanes ps0 = p0, ps1 = p1;
        for (int o = G / 2; o < 4 * G; o <<= 1) ps0 = xor_add(ps0, o), ps1 = xor_add(ps1, o);
        for (int l = 0; l < 32; ++l) {
          l0[l] = l0[l] * c0v[l] + ps0[l];
          l1[l] = l1[l] * c1v[l] + ps1[l];
        }
        for (int l = 0; l < 32; ++l)
          for (int h = 0; h < G; ++h) {
            const double corr = (h & 1) ? c1v[h >> 1] : c0v[h >> 1];
            for (int e = 0; e < C; ++e) acc[l][h * C + e] *= corr;
            for (int kk = 0; kk < kDecodeKeys; ++kk) {
              const int src = (kk << head_bits) | (h >> 1);
              const double wgt = (h & 1) ? p1[src] : p0[src];
              for (int e = 0; e < C; ++e) acc[l][h * C + e] += wgt * v_at(kk, l, e);
            }
          }
      } else {
        Lanes sc0, sc1;
        for (int l = 0; l < 32; ++l) {
          const int key = 2 * (l & 3);
          sc0[l] = c0 + key < t_end ? s[l][0] : -inf;
          sc1[l] = c0 + key + 1 < t_end ? s[l][1] : -inf;
        }
        Lanes mx;
        for (int l = 0; l < 32; ++l) mx[l] = std::max(sc0[l], sc1[l]);
        mx = xor_max(xor_max(mx, 1), 2);
        Lanes corr, p0, p1, ps;
        for (int l = 0; l < 32; ++l) {
          const double mn = std::max(m0[l], mx[l]);
          corr[l] = mn == -inf ? 1.0 : std::exp(m0[l] - mn);
          p0[l] = sc0[l] == -inf ? 0.0 : std::exp(sc0[l] - mn);
          p1[l] = sc1[l] == -inf ? 0.0 : std::exp(sc1[l] - mn);
          ps[l] = p0[l] + p1[l];
          m0[l] = mn;
        }
        ps = xor_add(xor_add(ps, 1), 2);
        for (int l = 0; l < 32; ++l) {
          l0[l] = l0[l] * corr[l] + ps[l];
          for (int e = 0; e < C; ++e) {
            acc[l][e] *= corr[l];
            for (int kk = 0; kk < kDecodeKeys; ++kk)
              acc[l][e] += ((kk & 1) ? p1[kk >> 1] : p0[kk >> 1]) * v_at(kk, l, e);
          }
        }
      }
    }
    for (int h = 0; h < G; ++h) {
      // red_m/red_l from lane h >> 1 (G >= 2: slot h & 1) or lane 0 (G == 1).
      const int src = G >= 2 ? (h >> 1) : 0;
      wm[w * G + h] = (G >= 2 && (h & 1)) ? m1[src] : m0[src];
      wl[w * G + h] = (G >= 2 && (h & 1)) ? l1[src] : l0[src];
      for (int lane = 0; lane < 32; ++lane)
        for (int c = 0; c < C; ++c)
          wacc[(size_t(w) * G + h) * D + lane * C + c] = acc[lane][h * C + c];
    }
  }
  std::vector<double> out(size_t(G) * D);
  for (int h = 0; h < G; ++h)
    for (int d = 0; d < D; ++d) {
      double big_m = -inf, sum_l = 0, sum_a = 0;
      for (int w = 0; w < kWarps; ++w)
        if (wl[w * G + h] > 0) big_m = std::max(big_m, wm[w * G + h]);
      for (int w = 0; w < kWarps; ++w) {
        if (!(wl[w * G + h] > 0)) continue;
        const double f = std::exp(wm[w * G + h] - big_m);
        sum_l += f * wl[w * G + h];
        sum_a += f * wacc[(size_t(w) * G + h) * D + d];
      }
      out[h * D + d] = sum_l > 0 ? sum_a / sum_l : 0.0;
    }
  return out;
}

TEST(DecodeFastPath, LaneLevelEmulationMatchesSoftmaxAttention) {
  std::mt19937_64 rng(77);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int G : {1, 2, 4, 8})
    for (int D : {64, 128})
      for (int len : {1, 5, 8, 33, 100}) {
        std::vector<float> K(size_t(len) * D), V(size_t(len) * D), Q(size_t(G) * D);
        for (auto* v : {&K, &V, &Q})
          for (auto& x : *v) x = u(rng);
        const float scale = 1.0f / std::sqrt(float(D));
        const auto got = EmulateDecodeFast(G, D, K, V, Q, 0, len, scale);
        double num = 0, den = 0;
        for (int h = 0; h < G; ++h) {
          std::vector<double> sc(len);
          double mx = -1e300, sum = 0;
          for (int t = 0; t < len; ++t) {
            double a = 0;
            for (int d = 0; d < D; ++d) a += double(Q[h * D + d]) * K[t * D + d];
            sc[t] = a * scale;
            mx = std::max(mx, sc[t]);
          }
          for (int t = 0; t < len; ++t) sum += (sc[t] = std::exp(sc[t] - mx));
          for (int d = 0; d < D; ++d) {
            double ref = 0;
            for (int t = 0; t < len; ++t) ref += sc[t] * V[t * D + d];
            ref /= sum;
            num += (got[h * D + d] - ref) * (got[h * D + d] - ref);
            den += ref * ref;
          }
        }
        EXPECT_LE(num / den, 1e-20) << "G=" << G << " D=" << D << " len=" << len;
      }
}

}  // namespace
}  // namespace kvc::kernels

namespace kvc::kernels {
namespace {

// Storage element sizes: f32 4 bytes, f16 and bf16 2 (b_K and b_V of the append payload).
TEST(KvDtype, BytesPerElement) {
  EXPECT_EQ(KvDtypeBytes(KvDtype::kF32), 4);
  EXPECT_EQ(KvDtypeBytes(KvDtype::kF16), 2);
  EXPECT_EQ(KvDtypeBytes(KvDtype::kBF16), 2);
  const KvLayout l{KvDtype::kBF16, /*batch=*/1, /*heads=*/2, /*d_h=*/4, /*capacity=*/8};
  EXPECT_EQ(KvAppendPayloadBytes(l, 3), int64_t{1} * 3 * 2 * 4 * (2 + 2));
}

// KvBlockEntry reads the table only for an addressable paged position: t == MaxTokensPerSeq
// (one past the sequence's table row) and t < 0 give 0, not the next sequence's first entry.
TEST(KvRowOffset, BlockEntryReadsOnlyAddressablePositions) {
  KvLayout l{KvDtype::kF32, 2, 1, 2, 0, /*block_size=*/4, /*num_blocks=*/8, /*max_blocks=*/2};
  const std::vector<int32_t> table = {3, 5, /*seq 1:*/ 7, 6};
  EXPECT_EQ(KvBlockEntry(l, table.data(), 0, 7), 5);
  EXPECT_EQ(KvBlockEntry(l, table.data(), 1, 4), 6);
  EXPECT_EQ(KvBlockEntry(l, table.data(), 0, 8), 0);
  EXPECT_EQ(KvBlockEntry(l, table.data(), 0, -1), 0);
}

// Paged: a sequence of n tokens occupies ceil(n / block_size) blocks (the entries publish
// copies); a contiguous layout has none.
TEST(BlocksForTokens, CeilOfTokensOverBlockSize) {
  const KvLayout paged{KvDtype::kF32, 1, 1, 1, 0, /*block_size=*/4, 8, 4};
  EXPECT_EQ(BlocksForTokens(paged, 0), 0);
  EXPECT_EQ(BlocksForTokens(paged, 1), 1);
  EXPECT_EQ(BlocksForTokens(paged, 4), 1);
  EXPECT_EQ(BlocksForTokens(paged, 5), 2);
  EXPECT_EQ(BlocksForTokens(paged, 16), 4);
  const KvLayout contiguous{KvDtype::kF32, 1, 1, 1, /*capacity=*/16};
  EXPECT_EQ(BlocksForTokens(contiguous, 5), 0);
}

// A chosen split size is a multiple of 256 tokens, also where rounding the even share up to a
// multiple of 128 would give a smaller size (10000 / 33 splits = 304 -> 512, not 384).
TEST(Splits, ChooseSplitSizeIsAMultipleOf256) {
  EXPECT_EQ(ChooseSplitSize(1, 8, 10000, 132), 512);
  for (int32_t len : {1000, 3000, 10000, 100000}) {
    const int32_t s = ChooseSplitSize(1, 4, len, 132);
    EXPECT_GT(s, 0) << len;
    EXPECT_EQ(s % 256, 0) << len;
  }
}

// Row blocks hold at most kAttnMaxRows (64) rows, also when head_dim leaves accumulator budget
// for more (d_h 64: 128 rows would fit 8192 elements; d_h 16: 512).
TEST(Tiling, RowsPerBlockNeverExceed64) {
  EXPECT_EQ(AttentionRowsPerBlock(8, 100, 64), 64);
  EXPECT_EQ(AttentionRowsPerBlock(16, 100, 16), 64);
  EXPECT_EQ(AttentionRowsPerBlock(4, 10, 16), 40);
}

// The rows of one (b, h_kv) pair are the GQA group's (H_q / H_kv) times t_q, not H_q * t_q.
TEST(Tiling, GroupRowsAreGroupTimesTq) {
  AttentionParams p;
  p.layout = KvLayout{KvDtype::kF32, 1, /*heads=*/4, /*d_h=*/128, 4096};
  p.num_q_heads = 32;
  p.t_q = 100;
  EXPECT_EQ(AttentionGroupRows(p), 8 * 100);
  EXPECT_EQ(AttentionRowTiles(p), CeilDiv(800, 64));
}

// The decode fast path needs H_q a multiple of H_kv (H_q 12 over H_kv 8 is no group of 1).
TEST(DecodeFastPath, RefusesQueryHeadsNotAMultipleOfKvHeads) {
  AttentionParams p;
  p.layout.num_kv_heads = 8;
  p.layout.head_dim = 128;
  p.t_q = 1;
  p.num_q_heads = 8;
  EXPECT_TRUE(UseDecodeFastPath(p));
  p.num_q_heads = 12;
  EXPECT_FALSE(UseDecodeFastPath(p));
}

// RopeInvFreq is theta^(-2i/d_h) evaluated in double (exponent included) and rounded once to
// float, so host and device get the same bits; head_dims whose 2i/d_h is inexact in float too.
TEST(Rope, InvFreqIsTheDoubleFormulaRoundedOnce) {
  for (float theta : {10000.0f, 500000.0f})
    for (int32_t d : {6, 80, 96, 112, 128})
      for (int32_t i = 0; i < d / 2; ++i) {
        const float want = static_cast<float>(std::pow(static_cast<double>(theta), -2.0 * i / d));
        EXPECT_EQ(RopeInvFreq(i, d, theta), want) << theta << " " << d << " " << i;
      }
}

}  // namespace
}  // namespace kvc::kernels
