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

// A hand-built valid history of lineage h0 (header, allocate on worker 0, two reads on workers 0
// and 1, end line): exact times and partitions, unlike a recorded run's.
Json Snap(const std::string& handle) {
  return {{"handle", handle}, {"generation", 0},         {"version", 0},
          {"length", 0},      {"phase", "DECODE_READY"}, {"digest", "63ce68b09a2cdef5"}};
}
Json OpLine(uint64_t id, uint32_t thread, const std::string& partition, const std::string& op,
            Json args, int64_t invoke, int64_t ret, Json result) {
  return {{"id", id},         {"thread", thread}, {"partition", partition},
          {"op", op},         {"args", args},     {"invoke_ns", invoke},
          {"return_ns", ret}, {"outcome", "ok"},  {"result", result}};
}
Json ReadLine(uint64_t id, uint32_t thread, int64_t invoke, int64_t ret) {
  Json r = Snap("h0");
  r["layers"] = {0, 0};
  return OpLine(id, thread, "h0", "read", {{"handle", "h0"}}, invoke, ret, r);
}
std::vector<Json> Handmade() {
  return {{{"kind", "kvconform.race_history/1"},
           {"model", "kv_lineage/1"},
           {"cache_abi", "race-abi-L2"},
           {"num_layers", 2},
           {"digests", "checked"}},
          OpLine(0, 0, "h0", "allocate", {{"handle", "h0"}}, 10, 20, Snap("h0")),
          ReadLine(1, 0, 30, 40),
          ReadLine(2, 1, 35, 45),
          {{"end", true}, {"ops", 3}}};
}
// Appends `ops` before the end line and fixes its count.
std::string With(std::vector<Json> lines, const std::vector<Json>& ops) {
  lines.insert(lines.end() - 1, ops.begin(), ops.end());
  lines.back()["ops"] = lines.size() - 2;
  return Text(lines);
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

TEST(HistoryValidate, HandmadeHistoryIsValid) {
  EXPECT_EQ(Codes(Text(Handmade())), std::set<std::string>{});
}

// return_ns >= invoke_ns: an operation may return at the instant it was invoked.
TEST(HistoryValidate, AcceptsReturnAtInvokeTime) {
  std::vector<Json> l = Handmade();
  l[2]["return_ns"] = l[2]["invoke_ns"];
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{});
}

// One clock per worker: a worker may invoke its next operation at the instant the previous one
// returned (the ops touch, they do not overlap).
TEST(HistoryValidate, AcceptsWorkerOpInvokedWhenPreviousReturns) {
  EXPECT_EQ(Codes(With(Handmade(), {ReadLine(3, 0, 40, 50)})), std::set<std::string>{});
}

// Overlap is judged against the worker's op that runs longest so far, not its latest: an op
// inside a long one overlaps it even after a short op in between.
TEST(HistoryValidate, ThreadOverlapIsJudgedAgainstTheLongestRunningOp) {
  std::string text = With(
      Handmade(), {ReadLine(3, 2, 100, 500), ReadLine(4, 2, 200, 210), ReadLine(5, 2, 300, 310)});
  std::vector<uint32_t> lines;
  for (const auto& v : ValidateHistoryJsonl(text, "h.jsonl")) {
    EXPECT_EQ(v.code, ErrorCode::RACE_HISTORY_THREAD_OVERLAP) << v.message;
    lines.push_back(v.line);
  }
  EXPECT_EQ(lines, (std::vector<uint32_t>{6, 7}));
}

// The end line is newline-terminated (a stream cut right after it is truncated).
TEST(HistoryValidate, RejectsEndLineWithoutNewline) {
  std::string text = Text(Handmade());
  text.pop_back();
  EXPECT_EQ(Codes(text), std::set<std::string>{"RACE_HISTORY_TRUNCATED"});
}

// The end line is {"end": true, ...}: "end": false is an invalid value.
TEST(HistoryValidate, RejectsEndFalse) {
  std::vector<Json> l = Handmade();
  l.back()["end"] = false;
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{"INPUT_VALUE_INVALID"});
}

// partition is a non-empty string.
TEST(HistoryValidate, RejectsEmptyPartition) {
  std::vector<Json> l = Handmade();
  l[2]["partition"] = "";
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{"INPUT_VALUE_INVALID"});
}

// An unknown outcome has return_ns and result null (the call never returned).
TEST(HistoryValidate, RejectsUnknownOutcomeWithReturnTimeOrResult) {
  std::vector<Json> l = Handmade();
  l[2]["outcome"] = "unknown";
  l[2]["result"] = nullptr;  // return_ns kept
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{"RACE_HISTORY_OUTCOME_INCONSISTENT"});
  l[2]["return_ns"] = nullptr;
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{});
  l[2]["result"] = Json::object();
  EXPECT_EQ(Codes(Text(l)), std::set<std::string>{"RACE_HISTORY_OUTCOME_INCONSISTENT"});
}

// A fork's children and group, and a transaction, keep the partition of the line that first
// named them.
TEST(HistoryValidate, ForkChildrenGroupsAndTxnsKeepTheirLineagesPartition) {
  Json kids = {{"children", {Snap("c0"), Snap("c1")}}};
  const std::vector<Json> fork = {
      OpLine(3, 0, "h0", "fork",
             {{"handle", "h0"}, {"prefix", 0}, {"children", {"c0", "c1"}}, {"group", "g0"}}, 50, 60,
             kids),
      OpLine(4, 0, "h0", "begin_append",
             {{"txn", "t0"},
              {"key", "k"},
              {"handle", "h0"},
              {"base_generation", 0},
              {"base_digest", "63ce68b09a2cdef5"},
              {"start", 0},
              {"count", 1}},
             70, 80, {{"txn", "t0"}, {"state", "OPEN"}}),
      OpLine(5, 1, "h1", "allocate", {{"handle", "h1"}}, 70, 80, Snap("h1"))};
  EXPECT_EQ(Codes(With(Handmade(), fork)), std::set<std::string>{});
  auto relabelled = [&](Json op) {
    std::vector<Json> ops = fork;
    ops.push_back(std::move(op));
    return Codes(With(Handmade(), ops));
  };
  const std::set<std::string> mismatch = {"RACE_HISTORY_PARTITION_MISMATCH"};
  Json c0 = Snap("c0");
  c0["layers"] = {0, 0};
  EXPECT_EQ(relabelled(OpLine(6, 0, "c0", "read", {{"handle", "c0"}}, 90, 95, c0)), mismatch);
  EXPECT_EQ(relabelled(OpLine(6, 0, "h1", "reorder", {{"group", "g0"}, {"perm", {1, 0}}}, 90, 95,
                              Json::object())),
            mismatch);
  EXPECT_EQ(relabelled(OpLine(6, 0, "h1", "cancel_txn", {{"txn", "t0"}}, 90, 95, Json::object())),
            mismatch);
}

// An allocation of a handle no line named before starts the lineage named after it, even
// when nothing else names the handle.
TEST(HistoryValidate, AllocationStartsTheLineageNamedAfterItsHandle) {
  EXPECT_EQ(Codes(With(Handmade(),
                       {OpLine(3, 1, "h1", "allocate", {{"handle", "h1"}}, 50, 60, Snap("h1"))})),
            std::set<std::string>{});
  EXPECT_EQ(Codes(With(Handmade(),
                       {OpLine(3, 1, "x", "allocate", {{"handle", "h1"}}, 50, 60, Snap("h1"))})),
            std::set<std::string>{"RACE_HISTORY_PARTITION_MISMATCH"});
}

// A non-JSON line between header and end line stands for one operation line: only it is
// reported (the end line's count still matches).
TEST(HistoryValidate, NonJsonOperationLineIsOneMalformedLine) {
  std::vector<Json> l = Handmade();
  std::string text = Text(l);
  const size_t third = text.find('\n', text.find('\n', text.find('\n') + 1) + 1);  // end of line 3
  const size_t second = text.find('\n', text.find('\n') + 1) + 1;
  text = text.substr(0, second) + "{not json" + text.substr(third);
  EXPECT_EQ(Codes(text), std::set<std::string>{"RACE_HISTORY_LINE_MALFORMED"});
}

}  // namespace
}  // namespace kvc::race
