// Tests of StableStringMap: a seeded model check against std::unordered_map, address stability,
// backward-shift deletion at the index's wrap-around and in long collision runs, erasure without
// allocation.
#include "reference/base/stable_string_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference/testutil/testutil.h"

namespace kvc::base {
namespace {

// Every key has the same hash: one probe run holds every element.
struct ConstantHash {
  size_t operator()(std::string_view) const { return 0x1234567800000000ull; }
};
// Four distinct tags (the key's length mod 4): long runs that interleave.
struct FewTagsHash {
  size_t operator()(std::string_view s) const { return uint64_t{s.size() % 4} << 32 | 7; }
};
// "name@H" has tag H (its home slot is H & (capacity - 1)); lets a test place keys.
struct PlacedHash {
  size_t operator()(std::string_view s) const {
    const size_t at = s.rfind('@');
    return uint64_t{static_cast<uint32_t>(std::stoul(std::string(s.substr(at + 1))))} << 32;
  }
};

// A value that counts its live instances (leaks and double destruction show up).
struct Counted {
  static inline int live = 0;
  int v = 0;
  explicit Counted(int x = 0) : v(x) { ++live; }
  Counted(const Counted& o) : v(o.v) { ++live; }
  Counted& operator=(const Counted& o) = default;
  ~Counted() { --live; }
  friend bool operator==(const Counted& a, const Counted& b) { return a.v == b.v; }
};

std::string RandomKey(std::mt19937_64& rng) {
  // 60 keys, of lengths 0..59 (every branch of StringHash and SameBytes, and keys held inline in
  // their IdString as well as on the heap, beyond IdString::kInline = 47), so that operations hit
  // present and absent keys alike.
  const size_t len = static_cast<size_t>(rng() % 60);
  std::string k(len, 'a');
  for (size_t i = 0; i < len; ++i) k[i] = static_cast<char>('a' + (len * 7 + i * 3) % 26);
  return k;
}

template <typename Map>
void ExpectSameAsModel(const Map& m, const std::unordered_map<std::string, int>& model,
                       const std::map<std::string, const void*>& addr) {
  ASSERT_EQ(m.size(), model.size());
  ASSERT_EQ(m.empty(), model.empty());
  size_t seen = 0;
  for (const auto& [k, v] : m) {
    ++seen;
    auto it = model.find(k.str());
    ASSERT_TRUE(it != model.end()) << "iteration yields absent key '" << k << "'";
    ASSERT_EQ(v.v, it->second) << k;
  }
  ASSERT_EQ(seen, model.size());
  for (const auto& [k, v] : model) {
    auto it = m.find(k);
    ASSERT_TRUE(it != m.end()) << "lost key '" << k << "'";
    ASSERT_EQ(it->second.v, v);
    // The element has not moved since it was inserted.
    ASSERT_EQ(static_cast<const void*>(&*it), addr.at(k)) << k;
  }
}

template <typename H>
void RunModelCheck(uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) +
               " (reproduce: build/bin/reference_tests "
               "--gtest_filter='StableStringMapTest.MatchesUnorderedMapModel*')");
  std::mt19937_64 rng(seed);
  StableStringMap<Counted, H> a, b;
  std::unordered_map<std::string, int> ma, mb;
  std::map<std::string, const void*> aa, ab;  // address of each element when inserted
  for (int step = 0; step < 3000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::string k = RandomKey(rng);
    const int v = static_cast<int>(rng() % 1000);
    switch (rng() % 16) {
      case 0:
      case 1:
      case 2: {  // try_emplace
        auto [it, inserted] = a.try_emplace(k, v);
        auto [mit, minserted] = ma.try_emplace(k, v);
        ASSERT_EQ(inserted, minserted);
        ASSERT_EQ(it->first, k);
        ASSERT_EQ(it->second.v, mit->second);
        if (inserted) aa[k] = &*it;
        break;
      }
      case 3: {  // emplace (try_emplace semantics) from a string_view
        auto [it, inserted] = a.emplace(std::string_view(k), v);
        ASSERT_EQ(inserted, ma.emplace(k, v).second);
        if (inserted) aa[k] = &*it;
        break;
      }
      case 4: {  // operator[]
        const bool was = ma.count(k) > 0;
        a[k].v += 1;
        ma[k] += 1;
        if (!was) aa[k] = &*a.find(k);
        break;
      }
      case 5: {  // insert_or_assign keeps an existing element where it is
        auto [it, inserted] = a.insert_or_assign(k, Counted(v));
        ASSERT_EQ(inserted, ma.insert_or_assign(k, v).second);
        if (inserted) aa[k] = &*it;
        break;
      }
      case 6:
      case 7: {  // erase by key
        ASSERT_EQ(a.erase(k), ma.erase(k));
        aa.erase(k);
        break;
      }
      case 8: {  // erase by iterator returns the next element in iteration order
        auto it = a.find(k);
        ASSERT_EQ(it != a.end(), ma.count(k) > 0);
        if (it == a.end()) break;
        auto expected_next = std::next(it);
        const bool has_next = expected_next != a.end();
        const std::string next_key = has_next ? expected_next->first.str() : "";
        auto next = a.erase(it);
        ASSERT_EQ(next != a.end(), has_next);
        if (has_next) {
          ASSERT_EQ(next->first, next_key);
        }
        ma.erase(k);
        aa.erase(k);
        break;
      }
      case 9:
      case 10: {  // find, count, contains
        auto it = a.find(k);
        auto mit = ma.find(k);
        ASSERT_EQ(it == a.end(), mit == ma.end());
        ASSERT_EQ(a.count(k), ma.count(k));
        ASSERT_EQ(a.contains(k), ma.count(k) > 0);
        if (mit != ma.end()) {
          ASSERT_EQ(it->second.v, mit->second);
        }
        break;
      }
      case 11: {  // the second map: a few inserts
        auto [it, inserted] = b.try_emplace(k, v);
        ASSERT_EQ(inserted, mb.try_emplace(k, v).second);
        if (inserted) ab[k] = &*it;
        break;
      }
      case 12: {  // swap: the elements (and their addresses) go with the contents
        if (rng() % 4 != 0) break;
        a.swap(b);
        ma.swap(mb);
        aa.swap(ab);
        break;
      }
      case 13: {  // clear (rarely, so that maps grow large)
        if (rng() % 16 != 0) break;
        a.clear();
        ma.clear();
        aa.clear();
        break;
      }
      case 14: {  // copies are equal and independent; operator== ignores order
        StableStringMap<Counted, H> copy(a);
        ASSERT_TRUE(copy == a);
        if (!ma.empty()) {
          copy.begin()->second.v += 1;
          ASSERT_FALSE(copy == a);
        }
        copy = a;
        ASSERT_TRUE(copy == a);
        copy.erase(k);
        ASSERT_EQ(copy == a, ma.count(k) == 0);
        break;
      }
      case 15: {  // reserve keeps everything in place; the prefetch hints (of a key present
                  // or not) change nothing
        a.reserve(a.size() + rng() % 64);
        a.PrefetchSlot(k);
        a.Prefetch(k);
        b.PrefetchSlot(k);
        b.Prefetch(k);
        break;
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(a, ma, aa));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectSameAsModel(b, mb, ab));
}

TEST(StableStringMapTest, MatchesUnorderedMapModel) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    RunModelCheck<StringHash>(seed);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(StableStringMapTest, MatchesUnorderedMapModelWithCollidingHashes) {
  for (uint64_t seed = 101; seed <= 104; ++seed) {
    RunModelCheck<FewTagsHash>(seed);
    if (HasFatalFailure()) return;
    RunModelCheck<ConstantHash>(seed);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(Counted::live, 0);
}

TEST(StableStringMapTest, ElementsNeverMoveWhileOthersComeAndGo) {
  StableStringMap<int> m;
  std::vector<const int*> where;
  for (int i = 0; i < 20000; ++i)
    where.push_back(&m.try_emplace("id-" + std::to_string(i), i).first->second);
  for (int i = 0; i < 20000; i += 2) ASSERT_EQ(m.erase("id-" + std::to_string(i)), 1u);
  for (int i = 20000; i < 40000; ++i) m["id-" + std::to_string(i)] = i;  // reuses freed nodes
  for (int i = 1; i < 20000; i += 2) {
    auto it = m.find("id-" + std::to_string(i));
    ASSERT_TRUE(it != m.end());
    ASSERT_EQ(&it->second, where[static_cast<size_t>(i)]);
    ASSERT_EQ(it->second, i);
  }
  // A move takes the elements along.
  StableStringMap<int> moved(std::move(m));
  ASSERT_EQ(&moved.find("id-1")->second, where[1]);
  ASSERT_EQ(moved.size(), 30000u);
  EXPECT_TRUE(m.empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
}

TEST(StableStringMapTest, IterationIsNodeOrderAndReusesFreedNodesFirst) {
  StableStringMap<int> m;
  for (const char* k : {"a", "b", "c", "d"}) m[k] = 0;
  m.erase("b");
  m.erase("c");
  m["e"] = 0;  // takes c's node (the last freed), then b's
  m["f"] = 0;
  m["g"] = 0;
  std::string order;
  for (const auto& [k, v] : m) order += k;
  EXPECT_EQ(order, "afedg");
  const StableStringMap<int>& cm = m;
  order.clear();
  for (auto it = cm.begin(); it != cm.end(); ++it) order += it->first;
  EXPECT_EQ(order, "afedg");
  // A copy iterates in the same order.
  StableStringMap<int> copy(m);
  order.clear();
  for (const auto& [k, v] : copy) order += k;
  EXPECT_EQ(order, "afedg");
}

// An 8-slot index (the smallest; at most 4 elements): three keys with home slot 7 occupy
// slots 7, 0 and 1; a key with home 0 lands in 2. Every erasure must shift the run back across
// the end of the index without losing any key.
TEST(StableStringMapTest, BackwardShiftAcrossTheEndOfTheIndex) {
  const std::vector<std::string> keys = {"x@7", "y@7", "z@7", "w@0"};
  for (size_t erased = 0; erased < keys.size(); ++erased) {
    SCOPED_TRACE("erasing " + keys[erased]);
    StableStringMap<int, PlacedHash> m;
    for (size_t i = 0; i < keys.size(); ++i) m[keys[i]] = static_cast<int>(i);
    ASSERT_EQ(m.erase(keys[erased]), 1u);
    for (size_t i = 0; i < keys.size(); ++i) {
      auto it = m.find(keys[i]);
      if (i == erased) {
        EXPECT_TRUE(it == m.end());
      } else {
        ASSERT_TRUE(it != m.end()) << keys[i];
        EXPECT_EQ(it->second, static_cast<int>(i));
      }
    }
    // The freed slot is usable again and nothing else is disturbed.
    m["v@6"] = 9;
    m[keys[erased]] = 10;
    EXPECT_EQ(m.size(), 5u);
    for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(m.contains(keys[i])) << keys[i];
  }
  // Entries whose home is after the hole (key "a@1" sits at its home 1 behind a wrapped run)
  // must not move backwards past their home.
  StableStringMap<int, PlacedHash> m;
  m["p@7"] = 1;                   // slot 7
  m["q@0"] = 2;                   // slot 0
  m["r@7"] = 3;                   // slot 1 (wrapped run)
  m["s@2"] = 4;                   // slot 2
  ASSERT_EQ(m.erase("p@7"), 1u);  // r moves to 7; q stays at its home 0; s stays at 2
  EXPECT_EQ(m.find("q@0")->second, 2);
  EXPECT_EQ(m.find("r@7")->second, 3);
  EXPECT_EQ(m.find("s@2")->second, 4);
  ASSERT_EQ(m.erase("q@0"), 1u);
  EXPECT_EQ(m.find("r@7")->second, 3);
  EXPECT_EQ(m.find("s@2")->second, 4);
}

// A wrapped entry whose home lies after the hole stays put: "a@6" in slot 6, "b@7" in 7 and
// "c@7" wrapped to 0; erasing "a@6" must not pull "c@7" back to 6, before its home.
TEST(StableStringMapTest, BackwardShiftNeverMovesAWrappedEntryBeforeItsHome) {
  StableStringMap<int, PlacedHash> m;
  m["a@6"] = 1;
  m["b@7"] = 2;
  m["c@7"] = 3;
  ASSERT_EQ(m.erase("a@6"), 1u);
  ASSERT_TRUE(m.contains("b@7"));
  ASSERT_TRUE(m.contains("c@7"));
  EXPECT_EQ(m.find("b@7")->second, 2);
  EXPECT_EQ(m.find("c@7")->second, 3);
}

// One probe run of 1,500 keys: erase them in a random order, checking after every erasure
// that every remaining key is still found (a shift that skips one would strand it).
TEST(StableStringMapTest, LongCollisionRunsSurviveErasureInAnyOrder) {
  const uint64_t seed = 7;
  SCOPED_TRACE(
      "seed 7 (reproduce: build/bin/reference_tests "
      "--gtest_filter=StableStringMapTest.LongCollisionRunsSurviveErasureInAnyOrder)");
  StableStringMap<int, ConstantHash> m;
  std::vector<std::string> keys;
  for (int i = 0; i < 1500; ++i) keys.push_back("k" + std::to_string(i));
  for (size_t i = 0; i < keys.size(); ++i) m[keys[i]] = static_cast<int>(i);
  std::mt19937_64 rng(seed);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t e = 0; e < keys.size(); ++e) {
    ASSERT_EQ(m.erase(keys[e]), 1u);
    if (e % 50 != 0 && e + 20 < keys.size()) continue;  // a full check every 50 erasures
    for (size_t i = e + 1; i < keys.size(); ++i) ASSERT_TRUE(m.contains(keys[i])) << keys[i];
    ASSERT_FALSE(m.contains(keys[e]));
  }
  EXPECT_TRUE(m.empty());
}

// Every way of obtaining an iterator (find, const find, try_emplace of a present key, of a new
// key in a reused node, the const conversion, postfix ++) yields one that advances in node order
// and that erase() takes as its own element.
TEST(StableStringMapTest, IteratorsFromEveryLookupAdvanceInNodeOrder) {
  StableStringMap<int> m;
  for (const char* k : {"a", "b", "c", "d"}) m[k] = 0;
  const StableStringMap<int>& cm = m;
  EXPECT_TRUE(std::next(m.find("a")) == m.find("b"));
  EXPECT_TRUE(std::next(cm.find("a")) == cm.find("b"));
  EXPECT_TRUE(std::next(m.try_emplace("a", 1).first) == m.find("b"));
  StableStringMap<int>::const_iterator ci = m.find("b");
  EXPECT_TRUE(std::next(ci) == cm.find("c"));
  auto it = m.begin();
  EXPECT_TRUE(it++ == m.find("a"));
  EXPECT_TRUE(it == m.find("b"));
  m.erase("a");
  auto [z, inserted] = m.try_emplace("z", 0);  // node 0 again
  ASSERT_TRUE(inserted);
  EXPECT_TRUE(std::next(z) == m.find("b"));
  EXPECT_TRUE(m.erase(m.try_emplace("b", 0).first) == m.find("c"));
  EXPECT_TRUE(m.erase(z) == m.find("c"));
  EXPECT_FALSE(m.contains("b"));
  EXPECT_FALSE(m.contains("z"));
  EXPECT_TRUE(m.contains("c"));
  EXPECT_TRUE(m.contains("d"));
  EXPECT_EQ(m.size(), 2u);
}

// reserve() only grows: asking for room below the size keeps every element where it is.
TEST(StableStringMapTest, ReserveBelowTheSizeChangesNothing) {
  StableStringMap<int> m;
  for (int i = 0; i < 100; ++i) m[std::to_string(i)] = i;
  const int* where = &m.find("42")->second;
  m.reserve(0);
  m.reserve(10);
  ASSERT_EQ(m.size(), 100u);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(m.contains(std::to_string(i))) << i;
  EXPECT_EQ(&m.find("42")->second, where);
  EXPECT_FALSE(m.contains("100"));
  for (int i = 100; i < 200; ++i) m[std::to_string(i)] = i;
  EXPECT_EQ(m.size(), 200u);
}

// Move assignment, like move construction, takes the elements along (their addresses stay valid)
// and leaves the source empty; the target's old elements are gone.
TEST(StableStringMapTest, MoveAssignmentTakesTheElementsAlong) {
  StableStringMap<int> m, target;
  target["old"] = 1;
  m["id"] = 7;
  const int* where = &m.find("id")->second;
  target = std::move(m);
  ASSERT_TRUE(target.contains("id"));
  EXPECT_EQ(&target.find("id")->second, where);
  EXPECT_FALSE(target.contains("old"));
  EXPECT_EQ(target.size(), 1u);
  EXPECT_TRUE(m.empty());  // NOLINT(bugprone-use-after-move): a moved-from map is empty
}

TEST(StableStringMapTest, ElementsAreDestroyedExactlyOnce) {
  Counted::live = 0;
  {
    StableStringMap<Counted> m;
    for (int i = 0; i < 300; ++i) m.try_emplace(std::to_string(i), i);
    for (int i = 0; i < 300; i += 3) m.erase(std::to_string(i));
    StableStringMap<Counted> copy = m;
    EXPECT_EQ(Counted::live, 400);
    copy.clear();
    EXPECT_EQ(Counted::live, 200);
    m = StableStringMap<Counted>();
    EXPECT_EQ(Counted::live, 0);
    for (int i = 0; i < 10; ++i) m.try_emplace(std::to_string(i), i);
  }
  EXPECT_EQ(Counted::live, 0);
}

// Erasure never allocates (the free stack's room is reserved by the insertion that took the
// node): an erase at any load, of inline and heap keys, by key and by iterator, counts no
// operator new call; the insertions around them do (the counter is live).
TEST(StableStringMapTest, ErasureNeverAllocates) {
  if (!test::AllocationCount::available())
    GTEST_SKIP() << "a sanitizer runtime owns operator new in this build";
  StableStringMap<int> m;
  std::mt19937_64 rng(7);
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i)  // inline keys and keys past IdString's 47 inline bytes
    keys.push_back(std::string(i % 3 == 0 ? 60 : 8, 'k') + std::to_string(i));
  uint64_t erase_news = 0, insert_news = 0;
  size_t erased = 0;
  for (int round = 0; round < 4; ++round) {
    for (const std::string& k : keys) {
      test::AllocationCount c;
      m.try_emplace(k, round);
      insert_news += c.count();
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (rng() % 3 == 0) continue;  // some stay, so erasures happen at every load
      test::AllocationCount c;
      if (i % 2 == 0) {
        erased += m.erase(keys[i]);
      } else if (auto it = m.find(keys[i]); it != m.end()) {
        m.erase(it);
        ++erased;
      }
      erase_news += c.count();
    }
  }
  EXPECT_GT(erased, 4000u);
  EXPECT_EQ(erase_news, 0u);
  EXPECT_GT(insert_news, 0u);  // the hook counts: growth and heap keys allocate
}

}  // namespace
}  // namespace kvc::base
