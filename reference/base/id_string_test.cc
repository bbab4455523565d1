// Tests of IdString: inline and heap ids, copies, moves, self-assignment and comparisons.
#include "reference/base/id_string.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "reference/testutil/testutil.h"

namespace kvc::base {
namespace {

// Ids of every length around the inline limit, and a runtime-length one of each kind.
std::vector<std::string> Ids() {
  std::vector<std::string> ids;
  for (size_t n = 0; n <= IdString::kInline + 2; ++n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + (i * 7 + n) % 26));
    ids.push_back(s);
  }
  ids.push_back("cmpl-0123456789abcdef0123456789abcdef-0");        // 38 bytes: inline
  ids.push_back("cmpl-0123456789abcdef0123456789abcdef-0.t1234");  // 45 bytes: inline
  ids.push_back(std::string(1000, 'x'));                           // heap
  ids.push_back(std::string("a\0b", 3));                           // a NUL byte is a byte
  return ids;
}

TEST(IdString, HoldsEveryIdByteForByteInlineUpToTheLimit) {
  for (const std::string& s : Ids()) {
    const IdString id(s);
    EXPECT_EQ(id.view(), s);
    EXPECT_EQ(id.size(), s.size());
    EXPECT_EQ(id.empty(), s.empty());
    EXPECT_EQ(id.str(), s);
    EXPECT_EQ(id.on_heap(), s.size() > IdString::kInline) << s.size();
  }
  EXPECT_TRUE(IdString().empty());
  EXPECT_EQ(sizeof(IdString), 48u);
}

TEST(IdString, CopiesAreIndependentAndMovesEmptyTheSource) {
  for (const std::string& s : Ids()) {
    IdString a(s);
    IdString b(a);
    EXPECT_EQ(b, a);
    if (!s.empty()) {
      EXPECT_NE(a.data(), b.data());
    }
    a = "changed";
    EXPECT_EQ(b.view(), s);
    IdString c(std::move(b));
    EXPECT_EQ(c.view(), s);
    EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): the documented moved-from state
    IdString d;
    d = std::move(c);
    EXPECT_EQ(d.view(), s);
    EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move)
    IdString e("old value longer than the inline limit of forty-seven bytes, on the heap");
    e = d;
    EXPECT_EQ(e.view(), s);
    e.clear();
    EXPECT_TRUE(e.empty());
    EXPECT_EQ(d.view(), s);
  }
}

// Assigning a view of an IdString's own bytes (a suffix, say) must not read freed or
// overwritten bytes.
TEST(IdString, AssigningAViewOfItselfKeepsTheBytes) {
  for (const std::string& s : Ids()) {
    IdString a(s);
    a = a.view();
    EXPECT_EQ(a.view(), s);
    if (s.size() > 1) {
      a = a.view().substr(1);
      EXPECT_EQ(a.view(), s.substr(1));
    }
    IdString b(s);
    const IdString& same = b;
    b = same;
    EXPECT_EQ(b.view(), s);
    IdString& alias = b;  // a self-move through another name (compilers warn on the direct one)
    b = std::move(alias);
    EXPECT_EQ(b.view(), s);
  }
}

TEST(IdString, ComparesByBytesWithEveryStringType) {
  const IdString a("req-1"), b("req-2");
  EXPECT_TRUE(a == "req-1");
  EXPECT_TRUE(a == std::string("req-1"));
  EXPECT_TRUE(a == std::string_view("req-1"));
  EXPECT_TRUE(std::string_view("req-1") == a);
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a < std::string_view("req-2"));
  EXPECT_FALSE(IdString("req-1x") == a);  // a prefix is not equal
  // Unequal bytes are unequal with every string type (mutation audit 4: the std::string overload
  // comparing less than the whole id passed).
  for (const char* other : {"req-2", "req-1x", "req-", "x"}) {
    EXPECT_FALSE(a == other) << other;
    EXPECT_FALSE(a == std::string(other)) << other;
    EXPECT_FALSE(a == std::string_view(other)) << other;
  }
  EXPECT_EQ(std::string("p:") + a, "p:req-1");
  EXPECT_EQ("p:" + a, "p:req-1");
  EXPECT_EQ(a + ".t1", "req-1.t1");
}

// A seeded model check: random copies, moves, assignments (from another slot's bytes, a suffix
// of its own, a fresh string) and clears over slots of IdStrings, against the same operations
// on std::strings; lengths straddle the inline limit so values move between inline and heap.
TEST(IdString, MatchesStdStringModel) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) +
                 " (reproduce: build/bin/reference_tests "
                 "--gtest_filter='IdString.MatchesStdStringModel')");
    std::mt19937_64 rng(seed);
    constexpr size_t kSlots = 6;
    std::vector<IdString> ids(kSlots);
    std::vector<std::string> model(kSlots);
    auto fresh = [&rng] {
      std::string s(rng() % (IdString::kInline + 12), 'a');
      for (char& c : s) c = static_cast<char>('a' + rng() % 26);
      return s;
    };
    for (int step = 0; step < 4000; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const size_t i = rng() % kSlots, j = rng() % kSlots;
      switch (rng() % 7) {
        case 0: {
          const std::string s = fresh();
          ids[i] = s;
          model[i] = s;
          break;
        }
        case 1:
          ids[i] = ids[j];
          model[i] = model[j];
          break;
        case 2:  // a view of another slot's bytes, or of its own (i == j)
          ids[i] = ids[j].view();
          model[i] = std::string(model[j]);
          break;
        case 3: {  // a suffix of its own bytes
          const size_t cut = model[i].empty() ? 0 : rng() % model[i].size();
          ids[i] = ids[i].view().substr(cut);
          model[i] = model[i].substr(cut);
          break;
        }
        case 4:
          if (i != j) {
            ids[i] = std::move(ids[j]);
            model[i] = std::move(model[j]);
            model[j].clear();  // IdString's documented moved-from state
          }
          break;
        case 5: {
          IdString moved(std::move(ids[i]));
          ids[i] = IdString(moved);
          break;
        }
        case 6:
          ids[i].clear();
          model[i].clear();
          break;
      }
      for (size_t k = 0; k < kSlots; ++k) {
        ASSERT_EQ(ids[k].view(), model[k]) << "slot " << k;
        ASSERT_EQ(ids[k].on_heap(), model[k].size() > IdString::kInline) << "slot " << k;
      }
    }
  }
}

// Every heap block an id takes is freed, whichever way the id ends: destroyed, moved from,
// moved over, copied over or assigned a view. Regression of mutation audit 4: Free() left out of
// the destructor or of the move-assignment leaked every heap id and passed every test (only
// LeakSanitizer saw it, and no gate runs one); here the counting operator new and delete see it.
TEST(IdString, RegressionEveryHeapBlockIsFreed) {
  if (!test::AllocationCount::available())
    GTEST_SKIP() << "the sanitizer's runtime owns operator new";
  const std::string long_a(IdString::kInline + 1, 'a'), long_b(300, 'b');
  uint64_t news = 0, frees = 0;
  {
    test::AllocationCount c;
    {
      IdString a(long_a), b(long_b), s("short");
      IdString copy = a;                 // a second heap block
      IdString moved = std::move(copy);  // takes copy's block
      moved = std::move(b);              // frees a's copy, takes b's block
      moved = a;                         // frees b's block (copy-assignment through a move)
      s = long_b;                        // a long string over an inline id: heap now
      s = std::string_view("x");         // frees it
      a = moved.view();                  // a view of another id's bytes
      std::vector<IdString> v(8, a);     // a vector of heap ids, grown and destroyed
      v.emplace_back(long_b);
    }
    news = c.count();
    frees = c.frees();
  }
  EXPECT_GE(news, 6u);
  EXPECT_EQ(news, frees) << "heap blocks allocated and not freed";
}

}  // namespace
}  // namespace kvc::base
