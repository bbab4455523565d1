// Contiguous and paged storage: same rows, staged rows invisible to forks, copy-on-write.
#include "reference/model/kv_storage/kv_storage.h"

#include <gtest/gtest.h>

namespace kvc::model {
namespace {

constexpr KvShape kShape{2, 3};

void Append(KvStorage& s, uint64_t n, float base) {
  ASSERT_TRUE(s.Stage(n).ok());
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t pos = s.committed_length() + i;
    for (uint64_t l = 0; l < kShape.layers; ++l) {
      float k[3], v[3];
      for (int e = 0; e < 3; ++e) {
        k[e] = base + pos * 10 + l * 100 + e;
        v[e] = -k[e];
      }
      s.WriteRow(l, pos, k, v);
    }
  }
  s.Commit();
}

TEST(KvStorage, LayoutsHoldTheSameRows) {
  auto c = NewContiguousKvStorage(kShape);
  auto p = NewPagedKvStorage(kShape, 4);
  for (auto* s : {c.get(), p.get()}) {
    Append(*s, 5, 0);
    Append(*s, 1, 0);
    Append(*s, 7, 0);
  }
  ASSERT_EQ(c->committed_length(), 13u);
  ASSERT_EQ(p->committed_length(), 13u);
  for (uint64_t l = 0; l < 2; ++l)
    for (uint64_t pos = 0; pos < 13; ++pos)
      for (int e = 0; e < 3; ++e) {
        EXPECT_EQ(c->KeyRow(l, pos)[e], p->KeyRow(l, pos)[e]);
        EXPECT_EQ(c->ValueRow(l, pos)[e], p->ValueRow(l, pos)[e]);
      }
  EXPECT_EQ(p->ResidentBytes(), 4u * 2 * 2 * 4 * 3 * sizeof(float));  // 4 blocks of 4 positions
}

TEST(KvStorage, PagedForkSharesBlocksAndCopiesOnWrite) {
  auto parent = NewPagedKvStorage(kShape, 4);
  Append(*parent, 6, 0);  // blocks [0..3], [4..5 + 2 free slots]
  auto child = parent->Fork(6);
  ASSERT_TRUE(child.ok());
  EXPECT_EQ(SharedBlockCount(**child), 2u);
  const float before = parent->KeyRow(1, 5)[0];
  Append(**child, 1, 1000);  // writes slot 6 of the shared second block: copy-on-write
  EXPECT_EQ(SharedBlockCount(**child), 1u);  // first block still shared
  Append(*parent, 1, 2000);
  EXPECT_EQ((*child)->KeyRow(0, 6)[0], 1000 + 60);
  EXPECT_EQ(parent->KeyRow(0, 6)[0], 2000 + 60);
  EXPECT_EQ(parent->KeyRow(1, 5)[0], before);
  EXPECT_EQ((*child)->KeyRow(1, 5)[0], before);
}

TEST(KvStorage, AbortTruncateRelease) {
  std::unique_ptr<KvStorage> both[2] = {NewContiguousKvStorage(kShape),
                                        NewPagedKvStorage(kShape, 2)};
  for (auto& s : both) {
    Append(*s, 3, 0);
    ASSERT_TRUE(s->Stage(2).ok());
    EXPECT_FALSE(s->Stage(1).ok());  // one open interval at a time
    EXPECT_FALSE(s->Fork(4).ok());   // staged rows are not part of the prefix
    s->Abort();
    EXPECT_EQ(s->committed_length(), 3u);
    EXPECT_TRUE(s->Truncate(1).ok());
    EXPECT_FALSE(s->Truncate(2).ok());
    Append(*s, 1, 50);
    EXPECT_EQ(s->KeyRow(0, 1)[0], 50 + 10);
    s->Release();
    EXPECT_TRUE(s->released());
    EXPECT_EQ(s->ResidentBytes(), 0u);
    EXPECT_FALSE(s->Stage(1).ok());
  }
}

}  // namespace
}  // namespace kvc::model
