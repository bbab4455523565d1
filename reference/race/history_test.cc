// Tests of the JSON Lines history format: round trip and malformed/truncated input.
#include "reference/race/history.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "reference/testutil/testutil.h"

namespace kvc::race {
namespace {

History Sample() {
  HistoryRecorder rec(Json{{"model", "toy"}});
  uint64_t a = rec.Invoke(0, "p0", "write", {{"v", 1}});
  uint64_t b = rec.Invoke(1, "p0", "read", Json::object());
  rec.Complete(a, Outcome::kOk, Json::object());
  rec.Complete(b, Outcome::kError, {{"code", "LIFECYCLE_STALE_BASE"}});
  uint64_t c = rec.Invoke(1, "p1", "read", Json::object());
  rec.CompleteUnknown(c);
  return rec.Take();
}

TEST(History, RoundTrip) {
  History h = Sample();
  std::string text = WriteHistoryJsonl(h);
  auto back = ParseHistoryJsonl(text, "mem");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->ops.size(), 3u);
  EXPECT_EQ(back->header["model"], "toy");
  EXPECT_EQ(back->ops[1].outcome, Outcome::kError);
  EXPECT_EQ(back->ops[2].outcome, Outcome::kUnknown);
  EXPECT_FALSE(back->ops[2].return_ns.has_value());
  EXPECT_LE(back->ops[0].invoke_ns, *back->ops[0].return_ns);
  EXPECT_EQ(WriteHistoryJsonl(*back), text);
}

void ExpectParseError(const std::string& text, const std::string& needle) {
  auto r = ParseHistoryJsonl(text, "h.jsonl");
  ASSERT_FALSE(r.ok()) << "accepted: " << text;
  EXPECT_EQ(r.status().code(), StatusCode::kParseError);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(History, TruncatedOrMalformedInputIsAClearError) {
  std::string text = WriteHistoryJsonl(Sample());
  // Drop the end line: truncated.
  std::string no_end = text.substr(0, text.rfind("{\"end\""));
  ExpectParseError(no_end, "truncated");
  // Cut in the middle of a line.
  ExpectParseError(text.substr(0, text.size() / 2), "h.jsonl:");
  ExpectParseError("", "empty history");
  ExpectParseError("{\"kind\":\"other\"}\n", "kind");
  std::string header = "{\"kind\":\"kvconform.race_history/1\"}\n";
  ExpectParseError(header + "{\"end\":true,\"ops\":1}\n", "lost events");
  ExpectParseError(header + "[1]\n", "expected a JSON object");
  const std::string good =
      R"({"id":0,"thread":0,"partition":"p","op":"read","args":{},"invoke_ns":5,"return_ns":9,"outcome":"ok","result":{}})";
  auto with = [&](std::string from, std::string to) {
    std::string l = good;
    l.replace(l.find(from), from.size(), to);
    return header + l + "\n{\"end\":true,\"ops\":1}\n";
  };
  ASSERT_TRUE(ParseHistoryJsonl(header + good + "\n{\"end\":true,\"ops\":1}\n", "h").ok());
  ExpectParseError(with("\"return_ns\":9", "\"return_ns\":4"), "return_ns: precedes");
  ExpectParseError(with("\"outcome\":\"ok\"", "\"outcome\":\"maybe\""), "outcome");
  ExpectParseError(with("\"outcome\":\"ok\"", "\"outcome\":\"error\""), "result.code");
  ExpectParseError(with("\"id\":0", "\"id\":-1"), "id: expected a non-negative integer");
  // A value of another type is named clipped (2026-12-07: a 10 KB string was quoted whole).
  ExpectParseError(
      with("\"id\":0", "\"id\":\"" + std::string(10000, 'i') + "\""),
      "id: expected a non-negative integer, got \"" + std::string(80, 'i') + "...\" (10000 bytes)");
  ExpectParseError(with("\"partition\":\"p\"", "\"partition\":\"\""), "partition");
  ExpectParseError(with("\"args\":{}", "\"args\":{},\"extra\":1"), "extra: unknown field");
  ExpectParseError(header + good + "\n" + good + "\n{\"end\":true,\"ops\":2}\n", "duplicate operation id");
  ExpectParseError(header + good + "\n{\"end\":true,\"ops\":1}\n" + good + "\n", "after the end line");
}

// The header, and one operation line of the reader's test, with `from` replaced by `to`.
std::string OneOp(const std::string& from = "", const std::string& to = "",
                  const std::string& end = "{\"end\":true,\"ops\":1}\n") {
  std::string l =
      R"({"id":0,"thread":0,"partition":"p","op":"read","args":{},"invoke_ns":5,"return_ns":9,"outcome":"ok","result":{}})";
  if (!from.empty()) l.replace(l.find(from), from.size(), to);
  return "{\"kind\":\"kvconform.race_history/1\"}\n" + l + "\n" + end;
}

// thread < 2^32, invoke_ns and return_ns < 2^63 (one monotonic clock in int64 nanoseconds).
TEST(History, RejectsOutOfRangeThreadAndTimes) {
  ASSERT_TRUE(ParseHistoryJsonl(OneOp(), "h").ok());
  ExpectParseError(OneOp("\"thread\":0", "\"thread\":4294967296"),
                   "thread: expected a value < 2^32");
  ExpectParseError(OneOp("\"invoke_ns\":5", "\"invoke_ns\":9223372036854775808"),
                   "invoke_ns: expected a value < 2^63");
  ExpectParseError(OneOp("\"return_ns\":9", "\"return_ns\":9223372036854775808"),
                   "return_ns: expected a value < 2^63");
}

// An unknown outcome has return_ns and result null (the call never returned).
TEST(History, UnknownOutcomeHasNullReturnAndResult) {
  ASSERT_TRUE(ParseHistoryJsonl(OneOp("\"return_ns\":9,\"outcome\":\"ok\",\"result\":{}",
                                      "\"return_ns\":null,\"outcome\":\"unknown\",\"result\":null"),
                                "h")
                  .ok());
  ExpectParseError(
      OneOp("\"outcome\":\"ok\",\"result\":{}", "\"outcome\":\"unknown\",\"result\":null"),
      "return_ns: expected null for an unknown outcome");
  ExpectParseError(
      OneOp("\"return_ns\":9,\"outcome\":\"ok\"", "\"return_ns\":null,\"outcome\":\"unknown\""),
      "result: expected null for an unknown outcome");
}

// The end line is exactly {"end": true, "ops": N} and is newline-terminated.
TEST(History, EndLineIsExactAndNewlineTerminated) {
  ExpectParseError(OneOp("", "", "{\"end\":true,\"ops\":1,\"extra\":0}\n"),
                   "end: the end line is exactly");
  ExpectParseError(OneOp("", "", "{\"end\":true,\"ops\":1}"), "end line is not newline-terminated");
}

// A duplicate key inside args (or result) is an error, as in the kit's strict reader.
TEST(History, RejectsDuplicateKeysInArgs) {
  ExpectParseError(OneOp("\"args\":{}", "\"args\":{\"v\":1,\"v\":2}"), "args.v: duplicate key");
}

// Ids are unique, also on an operation line that mentions "end" in a value (read by the
// sequential reader, not the parallel one).
TEST(History, DuplicateIdOnALineMentioningEndIsRejected) {
  std::string l =
      R"({"id":0,"thread":0,"partition":"p","op":"read","args":{"x":"end"},"invoke_ns":5,"return_ns":9,"outcome":"ok","result":{}})";
  std::string header = "{\"kind\":\"kvconform.race_history/1\"}\n";
  ASSERT_TRUE(ParseHistoryJsonl(header + l + "\n{\"end\":true,\"ops\":1}\n", "h").ok());
  ExpectParseError(header + l + "\n" + l + "\n{\"end\":true,\"ops\":2}\n",
                   "duplicate operation id 0");
}

// Large histories are read by several workers in line chunks: the result is the sequential
// reader's (ops in line order; the first error in the file is the one reported).
TEST(History, ParallelReaderKeepsLineOrderAndFirstError) {
  HistoryRecorder rec(Json{{"model", "toy"}});
  for (int i = 0; i < 50'000; ++i) {
    uint64_t id = rec.Invoke(static_cast<uint32_t>(i % 7), "p" + std::to_string(i % 13), "read",
                             Json::object());
    rec.Complete(id, Outcome::kOk, {{"v", i}});
  }
  std::string text = WriteHistoryJsonl(rec.Take());
  auto back = ParseHistoryJsonl(text, "big.jsonl");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->ops.size(), 50'000u);
  for (size_t i = 0; i < back->ops.size(); ++i) {
    ASSERT_EQ(back->ops[i].id, i);
    ASSERT_EQ(back->ops[i].line, i + 2);
  }
  // Break line 40,002 (late chunk) and line 30,002: the earlier one is reported.
  auto break_line = [&](std::string t, size_t line_no) {
    size_t pos = 0;
    for (size_t l = 1; l < line_no; ++l) pos = t.find('\n', pos) + 1;
    t.replace(pos, 1, "[");
    return t;
  };
  std::string bad = break_line(break_line(text, 40'002), 30'002);
  ExpectParseError(bad, "h.jsonl:30002: not JSON");
}

// Mutation audit 4: a history file is read up to kMaxHistoryFileBytes (the cap of every document
// kvconform reads), not ReadFileToString's own 1 GiB: a file one byte longer is refused by its
// size, unread (a sparse file; before ReadFileToString stat'ed a regular file, 2026-12-07, the test
// read the 256 MiB the cap admits: ~1.7 s and ~512 MB).
TEST(History, AFileLongerThanTheCapIsRefusedBySize) {
  test::TempDir dir;
  const std::string path = dir.Write("big.jsonl", "");
  std::filesystem::resize_file(path, kMaxHistoryFileBytes + 1);
  const auto h = ReadHistoryFile(path);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("file is larger than " +
                                      std::to_string(kMaxHistoryFileBytes) + " bytes"),
            std::string::npos)
      << h.status().ToString();
}

}  // namespace
}  // namespace kvc::race
