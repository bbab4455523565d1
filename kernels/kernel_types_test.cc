// Unit tests of the host/device index arithmetic in kernel_types.h (run on the CPU in CI).
#include "kernels/kernel_types.h"

#include <gtest/gtest.h>

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

TEST(Splits, ChooseSplitSizeFillsTheDeviceDeterministically) {
  EXPECT_EQ(ChooseSplitSize(64, 8, 32768, 132), 0);  // 512 blocks: no split needed
  const int s = ChooseSplitSize(1, 8, 32768, 132);   // 8 blocks: split
  EXPECT_GT(s, 0);
  EXPECT_EQ(s % 256, 0);
  EXPECT_GE(8 * NumSplits(32768, s), 4 * 132 * 9 / 10);
  EXPECT_EQ(s, ChooseSplitSize(1, 8, 32768, 132));
  EXPECT_EQ(ChooseSplitSize(1, 8, 300, 132), 0);  // short contexts stay unsplit
}

TEST(Tiling, RowsPerBlockRespectsAccumulatorBudget) {
  EXPECT_EQ(AttentionRowsPerBlock(8, 1, 128), 8);     // decode, GQA 8:1
  EXPECT_EQ(AttentionRowsPerBlock(8, 100, 128), 64);  // prefill: capped at 64 rows
  EXPECT_EQ(AttentionRowsPerBlock(4, 100, 256), 32);  // 32 * 256 = 8192
  for (int d : {16, 64, 128, 256})
    for (int g : {1, 4, 8})
      for (int t : {1, 3, 1000}) EXPECT_LE(AttentionRowsPerBlock(g, t, d) * d, kAttnMaxRowElems);
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
