// Tests of the race history document validator: a recorded history is valid; one-field
// mutations raise exactly their root-cause code.
#include <gtest/gtest.h>

#include <set>

#include "reference/race/fuzzer.h"
#include "reference/race/history.h"

namespace kvc::race {
namespace {

std::vector<Json> Lines(const History& h) {
  std::vector<Json> out;
  std::string text = WriteHistoryJsonl(h);
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    out.push_back(Json::parse(text.substr(pos, nl - pos)));
    pos = nl + 1;
  }
  return out;
}

std::string Text(const std::vector<Json>& lines) {
  std::string t;
  for (const auto& l : lines) t += l.dump() + "\n";
  return t;
}

std::set<std::string> Codes(const std::string& text) {
  std::set<std::string> c;
  for (const auto& v : ValidateHistoryJsonl(text, "h.jsonl"))
    c.insert(std::string(ErrorCodeName(v.code)));
  return c;
}

History Recorded() {
  StoreTarget target(RaceAbi(2), Mutant::kNone);
  return RunProgram(GenerateProgram({3, 2, 60, 2}, 9), target, 9);
}

TEST(HistoryValidate, RecordedHistoryIsValid) {
  Violations v = ValidateHistoryJsonl(WriteHistoryJsonl(Recorded()), "h.jsonl");
  for (const auto& x : v)
    ADD_FAILURE() << ErrorCodeName(x.code) << " " << x.pointer << " " << x.message;
}

TEST(HistoryValidate, OneFieldMutationsRaiseTheirCode) {
  const History h = Recorded();
  const std::vector<Json> base = Lines(h);
  ASSERT_GT(base.size(), 5u);
  auto with = [&](auto edit) {
    std::vector<Json> l = base;
    edit(l);
    return Codes(Text(l));
  };
  using S = std::set<std::string>;
  // Line 3 is op id 1 (ops are written in id order after the header).
  EXPECT_EQ(with([](auto& l) { l[2]["id"] = 0; }), S{"RACE_HISTORY_ID_DUPLICATE"});
  EXPECT_EQ(with([](auto& l) { l[2].erase("thread"); }), S{"INPUT_FIELD_MISSING"});
  EXPECT_EQ(with([](auto& l) { l[2]["extra"] = 1; }), S{"INPUT_FIELD_UNKNOWN"});
  EXPECT_EQ(with([](auto& l) { l[2]["op"] = "teleport"; }), S{"RACE_HISTORY_OP_INVALID"});
  EXPECT_EQ(with([](auto& l) { l[0]["digests"] = "maybe"; }), S{"RACE_HISTORY_HEADER_INVALID"});
  EXPECT_EQ(with([](auto& l) { l.pop_back(); }), S{"RACE_HISTORY_TRUNCATED"});
  EXPECT_EQ(with([](auto& l) { l.erase(l.begin() + 3); }), S{"RACE_HISTORY_TRUNCATED"});
  EXPECT_EQ(with([](auto& l) { l[2] = "garbage"; }), S{"RACE_HISTORY_LINE_MALFORMED"});
  EXPECT_EQ(
      with([](auto& l) { l[2]["return_ns"] = l[2]["invoke_ns"].template get<int64_t>() - 1; }),
      S{"RACE_HISTORY_TIME_ORDER"});
  EXPECT_EQ(with([](auto& l) { l[2]["return_ns"] = nullptr; }),
            S{"RACE_HISTORY_OUTCOME_INCONSISTENT"});
  EXPECT_EQ(with([](auto& l) {
              l[2]["outcome"] = "error";
              l[2]["result"] = {{"code", "NOT_A_CODE"}};
            }),
            S{"RACE_HISTORY_OUTCOME_INCONSISTENT"});
  // One clock per worker: move a worker's second op to start inside its first.
  std::map<uint32_t, std::vector<size_t>> by_thread;
  for (size_t i = 1; i + 1 < base.size(); ++i)
    by_thread[base[i]["thread"].get<uint32_t>()].push_back(i);
  for (const auto& entry : by_thread) {
    const std::vector<size_t>& idx = entry.second;  // a lambda below captures it (no binding)
    if (idx.size() < 2 || base[idx[0]]["return_ns"].is_null()) continue;
    int64_t inside = base[idx[0]]["invoke_ns"].get<int64_t>() + 0;
    if (base[idx[0]]["return_ns"].get<int64_t>() <= inside) continue;
    EXPECT_EQ(with([&](auto& l) {
                l[idx[1]]["invoke_ns"] = inside;
                if (!l[idx[1]]["return_ns"].is_null() &&
                    l[idx[1]]["return_ns"].template get<int64_t>() < inside)
                  l[idx[1]]["return_ns"] = inside;
              }),
              S{"RACE_HISTORY_THREAD_OVERLAP"});
    break;
  }
  // A cut-off last line.
  std::string text = WriteHistoryJsonl(h);
  EXPECT_EQ(Codes(text.substr(0, text.size() - 5)), S{"RACE_HISTORY_TRUNCATED"});

  // Regressions (probe 34). An empty line, inserted or in place of an operation line, is one
  // code (an inserted one also raised RACE_HISTORY_TRUNCATED through the end line's count).
  const size_t second = text.find('\n', text.find('\n') + 1) + 1;  // after line 2
  EXPECT_EQ(Codes(text.substr(0, second) + "\n" + text.substr(second)),
            S{"RACE_HISTORY_LINE_MALFORMED"});
  EXPECT_EQ(Codes(text.substr(0, second) + text.substr(text.find('\n', second))),
            S{"RACE_HISTORY_LINE_MALFORMED"});
  // The root allocation (line 2) relabelled: the lineage is searched under another partition.
  ASSERT_EQ(base[1]["op"], "allocate");
  EXPECT_EQ(with([](auto& l) { l[1]["partition"] = "elsewhere"; }),
            S{"RACE_HISTORY_PARTITION_MISMATCH"});
  // A result with a member its op does not return (a driver's answer is read the same way).
  EXPECT_EQ(with([](auto& l) { l[1]["result"]["bogus"] = true; }),
            S{"RACE_HISTORY_RESULT_INVALID"});
  EXPECT_EQ(with([](auto& l) { l[1]["result"]["version"] = -1; }),
            S{"RACE_HISTORY_RESULT_INVALID"});
}

}  // namespace
}  // namespace kvc::race
