// Tests of EventIndex: a request's indexed events by id, against a std::map model.
#include "reference/trace/event_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "reference/testutil/testutil.h"
#include "reference/trace/checker.h"  // LineHash, the hash the checker passes

namespace kvc::trace {
namespace {

EventInfo Info(uint64_t n) { return EventInfo{"append_publish", n, n + 1, n + 2}; }

void ExpectSame(const EventInfo* got, const EventInfo& want) {
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got->type, want.type);
  EXPECT_EQ(got->content_hash, want.content_hash);
  EXPECT_EQ(got->committed_length, want.committed_length);
  EXPECT_EQ(got->handle_generation, want.handle_generation);
}

TEST(EventIndex, InsertsFindsAndKeepsTheFirstEntryOfAnId) {
  EventIndex x;
  EXPECT_EQ(x.Find("e1", LineHash("e1")), nullptr);
  EXPECT_TRUE(x.Insert("e1", LineHash("e1"), Info(1)));
  EXPECT_FALSE(x.Insert("e1", LineHash("e1"), Info(99)));  // present: unchanged
  ExpectSame(x.Find("e1", LineHash("e1")), Info(1));
  EXPECT_EQ(x.Find("e2", LineHash("e2")), nullptr);
  EXPECT_EQ(x.size(), 1u);
}

// Ids around the inline limit, the empty id, and ids that share a prefix.
TEST(EventIndex, InlineAndLongIdsCompareByEveryByte) {
  const std::string at_limit(EventIndex::kInlineId, 'a');
  const std::string past_limit(EventIndex::kInlineId + 1, 'a');
  const std::string long_id = "cmpl-e9b316290724ba1bc7ab56057c8da907-0.publish.17";
  const std::vector<std::string> ids = {"",      "a",           at_limit,        past_limit,
                                        long_id, long_id + "x", past_limit + "b"};
  EventIndex x;
  for (size_t i = 0; i < ids.size(); ++i)
    ASSERT_TRUE(x.Insert(ids[i], LineHash(ids[i]), Info(i))) << "id #" << i;
  for (size_t i = 0; i < ids.size(); ++i) ExpectSame(x.Find(ids[i], LineHash(ids[i])), Info(i));
  std::vector<std::string> seen;
  x.ForEach([&](std::string_view id, const EventInfo&) { seen.emplace_back(id); });
  EXPECT_EQ(seen, ids);  // insertion order, bytes intact
}

// Every id under one hash: lookups must probe past the other ids and compare bytes.
TEST(EventIndex, CollidingHashesAreResolvedByBytes) {
  EventIndex x;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(x.Insert("id" + std::to_string(i), 7, Info(i)));
  for (int i = 0; i < 100; ++i) ExpectSame(x.Find("id" + std::to_string(i), 7), Info(i));
  EXPECT_EQ(x.Find("id100", 7), nullptr);
  EXPECT_FALSE(x.Insert("id42", 7, Info(0)));
}

// Random inserts, lookups of present and absent ids, and KeepIf, against a std::map model.
// Lookups between inserts exercise the lazily updated table at every size.
TEST(EventIndex, AgreesWithAMapModel) {
  std::mt19937_64 rng(test::AnnounceSeed(20261202));
  EventIndex x;
  std::map<std::string, uint64_t> model;
  std::vector<std::string> order;
  auto id_of = [](uint64_t k) {
    return (k % 3 == 0) ? "e" + std::to_string(k)
                        : "cmpl-" + std::to_string(k * 2654435761u) + "-0.publish";
  };
  for (int step = 0; step < 20000; ++step) {
    const uint64_t k = rng() % 3000;
    const std::string id = id_of(k);
    const int what = static_cast<int>(rng() % 10);
    if (what < 5) {
      const bool fresh = model.emplace(id, k).second;
      ASSERT_EQ(x.Insert(id, LineHash(id), Info(k)), fresh) << "step " << step << " id " << id;
      if (fresh) order.push_back(id);
    } else if (what < 9) {
      const EventInfo* got = x.Find(id, LineHash(id));
      auto it = model.find(id);
      if (it == model.end()) {
        ASSERT_EQ(got, nullptr) << "step " << step << " id " << id;
      } else {
        ExpectSame(got, Info(it->second));
      }
    } else if (step % 50 == 0) {  // now and then, keep the ids with an even number
      x.KeepIf([](std::string_view, const EventInfo& info) { return info.content_hash % 2 == 0; });
      std::vector<std::string> kept;
      for (const std::string& o : order)
        if (model[o] % 2 == 0)
          kept.push_back(o);
        else
          model.erase(o);
      order = kept;
    }
    ASSERT_EQ(x.size(), model.size()) << "step " << step;
  }
  std::vector<std::string> seen;
  x.ForEach([&](std::string_view id, const EventInfo&) { seen.emplace_back(id); });
  EXPECT_EQ(seen, order);
}

TEST(EventIndex, KeepIfAndClearForgetTheDroppedIds) {
  EventIndex x;
  const std::string long_id(40, 'z');
  ASSERT_TRUE(x.Insert("e1", LineHash("e1"), EventInfo{"append_publish", 1, 0, 0}));
  ASSERT_TRUE(x.Insert(long_id, LineHash(long_id), EventInfo{"finish", 2, 0, 0}));
  ASSERT_TRUE(x.Insert("e3", LineHash("e3"), EventInfo{"append_publish", 3, 0, 0}));
  ASSERT_NE(x.Find("e3", LineHash("e3")), nullptr);  // builds the table before KeepIf
  x.KeepIf([](std::string_view, const EventInfo& i) { return i.type == "finish"; });
  EXPECT_EQ(x.size(), 1u);
  EXPECT_EQ(x.Find("e1", LineHash("e1")), nullptr);
  EXPECT_EQ(x.Find("e3", LineHash("e3")), nullptr);
  ASSERT_NE(x.Find(long_id, LineHash(long_id)), nullptr);
  EXPECT_EQ(x.Find(long_id, LineHash(long_id))->content_hash, 2u);
  EXPECT_TRUE(x.Insert("e1", LineHash("e1"), Info(5)));  // a dropped id may be added again
  x.Clear();
  EXPECT_TRUE(x.empty());
  EXPECT_FALSE(x.MayHave(LineHash("e1")));
  EXPECT_EQ(x.Find(long_id, LineHash(long_id)), nullptr);
}

}  // namespace
}  // namespace kvc::trace
