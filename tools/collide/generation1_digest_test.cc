// The lane-parallel generation-1 digest equals the library's, and the library's is KvObject's.
#include "tools/collide/generation1_digest.h"

#include <gtest/gtest.h>

namespace kvc::collide {
namespace {

TEST(Generation1DigestTest, LanesEqualTheLibraryChain) {
  for (Mode m : {Mode::kCounts, Mode::kLineage}) {
    for (uint64_t i = 0; i < 200; ++i) {
      uint64_t in[kLanes], out[kLanes];
      for (size_t l = 0; l < kLanes; ++l) in[l] = SplitMix64(i * kLanes + l);
      in[0] = i;                        // small inputs too
      const size_t n = 1 + i % kLanes;  // partial batches
      EvaluateLanes(m, in, out, n);
      for (size_t l = 0; l < n; ++l)
        ASSERT_EQ(out[l], Evaluate(m, in[l])) << "mode " << int(m) << " input " << in[l];
    }
  }
}

// Generation1Digest is the digest a KvObject gives generation 1 of that history.
TEST(Generation1DigestTest, IsTheKvObjectDigest) {
  const lifecycle::CacheAbi abi{"abi", 2, "post_rope"};
  for (uint64_t incarnation : {0u, 1u, 7u}) {
    for (uint64_t rows : {1u, 3u, 1000u}) {
      lifecycle::KvObject o(abi);
      const std::string lineage = LittleEndianBytes(SplitMix64(rows + incarnation));
      auto p = PublishGeneration1(o, lineage, incarnation, rows);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      EXPECT_EQ(p->generation, 1u);
      EXPECT_EQ(p->digest, Generation1Digest(lineage, incarnation, rows));
    }
  }
}

}  // namespace
}  // namespace kvc::collide
