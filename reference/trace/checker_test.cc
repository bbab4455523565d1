// Tests of the streaming trace checker: stream-level errors, gating and dispatch.
#include "reference/trace/checker.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "reference/testutil/testutil.h"

namespace kvc::trace {
namespace {

const char* kHeader =
    R"({"kind":"kvconform.trace/1","schema_version":1,"producer":{"name":"t","revision":"1"},)"
    R"("cache_abi":{"id":"abi","num_layers":1,"position_stage":"post_rope","bytes_per_token":8},)"
    R"("sources":[{"source_instance":"e","source_component":"semantic"}],"audit":"complete"})";

// One semantic event from source "e" with sequence `seq`.
std::string Ev(int seq, const std::string& type, const std::string& rest) {
  return R"({"event_id":"e)" + std::to_string(seq) + R"(","source_instance":"e",)" +
         R"("source_component":"semantic","local_sequence":)" + std::to_string(seq) +
         R"(,"monotonic_ns":)" + std::to_string(100 + seq) + R"(,"event_type":")" + type + "\"," +
         rest + "}";
}

// Feeds `c` one semantic event after another (numbered from 0, on the lines after the header),
// each naming request `id` at handle generation 0; `rest` is the event's remaining members.
struct RequestEventFeeder {
  TraceChecker& c;
  int seq = 0;
  void operator()(const std::string& type, const std::string& id, const std::string& rest) {
    c.Feed(Ev(seq, type, R"("request_id":")" + id + R"(","handle_generation":0,)" + rest),
           static_cast<uint32_t>(seq + 2));
    ++seq;
  }
};

std::string Alloc(int seq) {
  return Ev(seq, "request_allocate",
            R"("request_id":"R","handle_generation":0,"payload":{"prompt_length":2})");
}
std::string Start(int seq) {
  return Ev(seq, "append_start",
            R"("request_id":"R","handle_generation":0,"operation_id":"p","base_snapshot":0,)"
            R"("payload":{"interval":[0,2],"cache_position":[0,2],"mask_key_length":2,)"
            R"("position_stage":"post_rope","purpose":"prefill"})");
}
std::string Stage(int seq) {
  return Ev(seq, "append_stage_layer",
            R"("request_id":"R","handle_generation":0,"operation_id":"p",)"
            R"("payload":{"layer":0,"interval":[0,2]})");
}
std::string Publish(int seq) {
  return Ev(seq, "append_publish",
            R"("request_id":"R","handle_generation":0,"operation_id":"p","base_snapshot":0,)"
            R"("result_snapshot":1,"payload":{"committed_length":2})");
}

// `line` with its first `from` replaced by `to` (the one-field mutation of a test).
std::string Mutate(std::string line, const std::string& from, const std::string& to) {
  line.replace(line.find(from), from.size(), to);
  return line;
}

std::vector<std::string> Codes(const std::string& text) {
  return test::CodeNames(ValidateTraceJsonl(text, "t.jsonl"));
}

// kHeader's ABI at 16 bytes per token, with a second source, "r", on the residency plane.
const char* kHeaderWithResidency =
    R"({"kind":"kvconform.trace/1","schema_version":1,"producer":{"name":"t","revision":"1"},)"
    R"("cache_abi":{"id":"abi","num_layers":1,"position_stage":"post_rope","bytes_per_token":16},)"
    R"("sources":[{"source_instance":"e","source_component":"semantic"},)"
    R"({"source_instance":"r","source_component":"residency"}],"audit":"complete"})";

// A residency observation (source "r", sequence 0) of request "R" at handle generation
// `generation`: `bytes` resident in HBM, caused by event `cause`.
std::string Residency(const std::string& cause, uint64_t bytes, int generation = 0) {
  return R"({"event_id":"r0","source_instance":"r","source_component":"residency",)"
         R"("local_sequence":0,"monotonic_ns":1,"event_type":"residency_observation",)"
         R"("request_id":"R","handle_generation":)" +
         std::to_string(generation) + R"(,"payload":{"caused_by_event_id":")" + cause +
         R"(","tier":"hbm","resident_payload_bytes":)" + std::to_string(bytes) + "}}";
}

TEST(TraceCheckerTest, MinimalTracePasses) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                  "\n" + Publish(3) + "\n";
  Violations v = ValidateTraceJsonl(t, "t.jsonl");
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

TEST(TraceCheckerTest, TraceEndingMidTransactionIsReported) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n";
  Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OPERATION_UNTERMINATED"});
  EXPECT_EQ(v[0].line, 3u);  // the append_start line
}

// Mutation audit 4: the violation of an operation left open names the event that started it and
// its request (its context), not the trace's last event.
TEST(TraceCheckerTest, RegressionAnUnterminatedOperationIsNamedByItsStartEvent) {
  TraceChecker c("t.jsonl");
  FeedTraceText(&c,
                std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
                    Ev(3, "request_allocate",
                       R"("request_id":"S","handle_generation":0,"payload":{"prompt_length":2})") +
                    "\n");
  ASSERT_EQ(test::CodeNames(c.violations()),
            std::vector<std::string>{"TRACE_OPERATION_UNTERMINATED"});
  ASSERT_EQ(c.contexts().size(), 1u);
  EXPECT_EQ(c.contexts()[0].event_id, "e1");
  EXPECT_EQ(c.contexts()[0].request_id, "R");
}

TEST(TraceCheckerTest, TraceEndingMidLineIsReported) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1).substr(0, 40);
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"TRACE_TRUNCATED"}));
}

// The end record (trace-format.md "End record"): the trace's last line counts the event lines
// before it; a header with end_record: true requires it, so that a stream cut between two lines
// is reported (before, it read as a shorter trace and could pass). Both envelope readers.
std::vector<std::string> CodesBothReaders(const std::string& text) {
  std::vector<std::string> codes[2];
  for (const bool fast : {true, false}) {
    CheckerOptions opt;
    opt.fast_readers = fast;
    TraceChecker c("t.jsonl", opt);
    codes[fast] = test::CodeNames(FeedTraceText(&c, text));
  }
  EXPECT_EQ(codes[0], codes[1]) << text;
  return codes[1];
}

TEST(TraceEndRecordTest, ARequiredEndRecordThatCountsTheEventLinesPasses) {
  const std::string head =
      Mutate(kHeader, R"("audit":"complete")", R"("audit":"complete","end_record":true)");
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  EXPECT_TRUE(CodesBothReaders(head + "\n" + events +
                               R"({"kind":"kvconform.trace_end/1","events":4})" + "\n")
                  .empty());
  TraceChecker c("t.jsonl");
  FeedTraceText(&c, head + "\n" + events + R"({"kind":"kvconform.trace_end/1","events":4})" + "\n");
  EXPECT_EQ(c.events(), 4u);  // the end record is not an event
  // Optional without the header's member; an empty trace's record counts 0.
  EXPECT_TRUE(CodesBothReaders(std::string(kHeader) + "\n" + events +
                               R"({"kind":"kvconform.trace_end/1","events":4})" + "\n")
                  .empty());
  EXPECT_TRUE(
      CodesBothReaders(head + "\n" + R"({"kind":"kvconform.trace_end/1","events":0})" + "\n")
          .empty());
}

TEST(TraceEndRecordTest, AStreamCutBetweenLinesIsReportedWhenTheHeaderRequiresAnEndRecord) {
  const std::string head =
      Mutate(kHeader, R"("audit":"complete")", R"("audit":"complete","end_record":true)");
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  const Violations v = ValidateTraceJsonl(head + "\n" + events, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_END_MISSING"});
  EXPECT_EQ(v[0].line, 6u);  // the line after the last
  EXPECT_NE(v[0].message.find("after 4 event lines"), std::string::npos) << v[0].message;
  EXPECT_EQ(CodesBothReaders(head + "\n" + events), std::vector<std::string>{"TRACE_END_MISSING"});
  // Not required: the same lines pass (the format's default; trace-format.md says what a cut
  // then reads as).
  EXPECT_TRUE(CodesBothReaders(std::string(kHeader) + "\n" + events).empty());
  EXPECT_TRUE(CodesBothReaders(Mutate(kHeader, R"("audit":"complete")",
                                      R"("audit":"complete","end_record":false)") +
                               "\n" + events)
                  .empty());
  // A cut inside the end record's line is the cut line's code alone.
  EXPECT_EQ(CodesBothReaders(head + "\n" + events + R"({"kind":"kvconform.trace_end/1","ev)"),
            std::vector<std::string>{"TRACE_TRUNCATED"});
  // A cut that leaves an operation open: both (the cut, and what it left open).
  EXPECT_EQ(CodesBothReaders(head + "\n" + Alloc(0) + "\n" + Start(1) + "\n"),
            (std::vector<std::string>{"TRACE_END_MISSING", "TRACE_OPERATION_UNTERMINATED"}));
}

TEST(TraceEndRecordTest, ACountThatDiffersFromTheLinesBeforeItIsReported) {
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  for (const int n : {3, 5, 0}) {
    const std::string end =
        R"({"kind":"kvconform.trace_end/1","events":)" + std::to_string(n) + "}\n";
    const Violations v = ValidateTraceJsonl(std::string(kHeader) + "\n" + events + end, "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_END_MISMATCH"}) << n;
    EXPECT_EQ(v[0].line, 6u);
    EXPECT_EQ(v[0].pointer, "/5/events");
    EXPECT_NE(v[0].message.find("the trace holds 4 between its header and this record (lines 2-5)"),
              std::string::npos)
        << v[0].message;
  }
  // A malformed line still holds its place in the count (it is reported for itself).
  EXPECT_EQ(CodesBothReaders(std::string(kHeader) + "\n" + events + "{oops\n" +
                             R"({"kind":"kvconform.trace_end/1","events":5})" + "\n"),
            std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  // The record's own members: exactly kind and events, events an unsigned integer.
  EXPECT_EQ(CodesBothReaders(std::string(kHeader) + "\n" + events +
                             R"({"kind":"kvconform.trace_end/1","events":4,"x":1})" + "\n"),
            std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
  EXPECT_EQ(CodesBothReaders(std::string(kHeader) + "\n" + events +
                             R"({"kind":"kvconform.trace_end/1"})" + "\n"),
            std::vector<std::string>{"INPUT_FIELD_MISSING"});
  EXPECT_EQ(CodesBothReaders(std::string(kHeader) + "\n" + events +
                             R"({"kind":"kvconform.trace_end/1","events":-1})" + "\n"),
            std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  // The header's member is a boolean (an unusable header stops the replay).
  EXPECT_EQ(CodesBothReaders(Mutate(kHeader, R"("audit":"complete")",
                                    R"("audit":"complete","end_record":"yes")") +
                             "\n" + events),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
}

// Review of the end record (2026-12-05): an event line carrying a stray kind of the end record
// ended the replay (24 lines unreplayed, 14 codes); a last line that could not be read (a BOM,
// not JSON, a count beyond 64 bits, another record version) also raised TRACE_END_MISSING, whose
// message said the stream was cut.
TEST(TraceEndRecordTest, RegressionOnlyALineWithoutAnEventIdIsTheEndRecord) {
  const std::string head =
      Mutate(kHeader, R"("audit":"complete")", R"("audit":"complete","end_record":true)");
  const std::string stray =
      Mutate(Start(1), R"("event_id":"e1",)", R"("event_id":"e1","kind":"kvconform.trace_end/1",)");
  const std::string end = R"({"kind":"kvconform.trace_end/1","events":4})" + std::string("\n");
  const Violations v = ValidateTraceJsonl(
      head + "\n" + Alloc(0) + "\n" + stray + "\n" + Stage(2) + "\n" + Publish(3) + "\n" + end,
      "t.jsonl");
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_FIELD_UNKNOWN", "/2/kind"));
}

TEST(TraceEndRecordTest, RegressionAnUnreadableLastLineIsNotAlsoAMissingEndRecord) {
  const std::string head =
      Mutate(kHeader, R"("audit":"complete")", R"("audit":"complete","end_record":true)");
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  for (const std::string& last :
       {std::string("\xEF\xBB\xBF") + R"({"kind":"kvconform.trace_end/1","events":4})",
        std::string(R"({"kind":"kvconform.trace_end/1","events":4)"),
        std::string(R"({"kind":"kvconform.trace_end/1","events":18446744073709551616})"),
        std::string(R"({"kind":"kvconform.trace_end/2","events":4})"), std::string("[4]")}) {
    const std::vector<std::string> codes = CodesBothReaders(head + "\n" + events + last + "\n");
    ASSERT_EQ(codes.size(), 1u) << last;
    EXPECT_NE(codes[0], "TRACE_END_MISSING") << last;
  }
  const Violations v = ValidateTraceJsonl(
      head + "\n" + events + R"({"kind":"kvconform.trace_end/2","events":4})" + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  EXPECT_NE(v[0].message.find("an end record of kind \"kvconform.trace_end/2\"; this checker "
                              "reads kvconform.trace_end/1"),
            std::string::npos)
      << v[0].message;
  // A readable event as the last line: the stream was cut after it.
  EXPECT_EQ(CodesBothReaders(head + "\n" + events), std::vector<std::string>{"TRACE_END_MISSING"});
}

TEST(TraceEndRecordTest, LinesAfterTheEndRecordAreReportedOnceAndNotReplayed) {
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  const std::string end = R"({"kind":"kvconform.trace_end/1","events":4})" + std::string("\n");
  // Two more lines: a second end record and an event that would be a sequence gap; neither is
  // replayed, one code names both lines.
  const Violations v = ValidateTraceJsonl(std::string(kHeader) + "\n" + events + end + end +
                                              Ev(9, "read", R"("request_id":"R")") + "\n",
                                          "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_END_MISMATCH"})
      << test::Describe(v);
  EXPECT_EQ(v[0].line, 7u);
  EXPECT_NE(v[0].message.find("2 lines (lines 7-8) follow the end record of line 6"),
            std::string::npos)
      << v[0].message;
  // A blank line after the record (an editor's) says it is empty.
  const Violations blank =
      ValidateTraceJsonl(std::string(kHeader) + "\n" + events + end + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(blank), std::vector<std::string>{"TRACE_END_MISMATCH"});
  EXPECT_NE(blank[0].message.find("1 line (line 7) follows the end record of line 6"),
            std::string::npos)
      << blank[0].message;
  EXPECT_NE(blank[0].message.find("(empty: a trace has no blank lines"), std::string::npos)
      << blank[0].message;
  // Two traces concatenated: the second header follows the first trace's end record.
  EXPECT_EQ(
      CodesBothReaders(std::string(kHeader) + "\n" + events + end + kHeader + "\n" + events + end),
      std::vector<std::string>{"TRACE_END_MISMATCH"});
}

// A base the handle never reached is named as the event named it (an audit, 2026-12-03: the
// message gave only the replay's internal generation, "generation 3", for a base of 9).
TEST(TraceCheckerTest, UnknownBaseMessageNamesTheEventsVersion) {
  const Violations v = ValidateTraceJsonl(
      std::string(kHeader) + "\n" + Alloc(0) + "\n" +
          Mutate(Start(1), R"("base_snapshot":0)", R"("base_snapshot":9)") + "\n",
      "t.jsonl");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].code, ErrorCode::LIFECYCLE_UNKNOWN_SNAPSHOT) << test::Describe(v);
  EXPECT_NE(v[0].message.find("the event names base snapshot 9; request \"R\" is at snapshot 0"),
            std::string::npos)
      << v[0].message;
}

// Regression (an adversarial probe, 2026-12-03): a header without its final newline raised
// TRACE_TRUNCATED and TRACE_HEADER_INVALID "empty trace; expected a header line", although the
// header was there. One code now, saying the header line was cut.
TEST(TraceCheckerTest, RegressionACutHeaderLineIsOneTruncation) {
  const Violations v = ValidateTraceJsonl(kHeader, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_TRUNCATED"});
  EXPECT_NE(v[0].message.find("in the middle of its header line"), std::string::npos)
      << v[0].message;
  EXPECT_EQ(Codes(""), std::vector<std::string>{"TRACE_HEADER_INVALID"});  // empty: no header
}

TEST(TraceCheckerTest, MalformedAndEmptyLinesAreViolationsNotCrashes) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n{not json\n\n[1,2]\n";
  Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(v.size(), 3u) << test::Describe(v);
  for (const auto& x : v) EXPECT_EQ(x.code, ErrorCode::TRACE_LINE_MALFORMED);
  EXPECT_EQ(v[0].line, 3u);
  EXPECT_EQ(v[2].line, 5u);
}

TEST(TraceCheckerTest, EmptyTraceAndBadHeader) {
  EXPECT_EQ(Codes(""), (std::vector<std::string>{"TRACE_HEADER_INVALID"}));
  EXPECT_EQ(Codes("{\"kind\":\"other/1\"}\n"), (std::vector<std::string>{"TRACE_HEADER_INVALID"}));
}

// CheckerOptions::max_violations bounds what is kept (an adversarial probe, 2026-12-04: 10
// million bad lines kept 3.4 GB of violations and aborted under a memory limit); the rest are
// counted, and a violation beyond the limit still counts as one of the replay's (so expected
// final states are not judged after it).
TEST(TraceCheckerTest, ViolationsBeyondTheLimitAreCountedNotKept) {
  std::string t = std::string(kHeader) + "\n";
  for (int i = 0; i < 5; ++i) t += "x\n";
  CheckerOptions opt;
  opt.max_violations = 2;
  TraceChecker limited("t.jsonl", opt);
  const Violations& v = FeedTraceText(&limited, t);
  ASSERT_EQ(v.size(), 2u) << test::Describe(v);
  EXPECT_EQ(v[1].line, 3u);
  EXPECT_EQ(limited.omitted_violations(), 3u);
  EXPECT_EQ(limited.contexts().size(), 2u);
  TraceChecker all("t.jsonl");
  EXPECT_EQ(FeedTraceText(&all, t).size(), 5u);
  EXPECT_EQ(all.omitted_violations(), 0u);
}

TEST(TraceCheckerTest, DuplicateKeysAreRejected) {
  std::string a = Alloc(0);
  a.insert(a.size() - 1, R"(,"event_type":"read")");
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + a + "\n"),
            (std::vector<std::string>{"TRACE_LINE_MALFORMED"}));
  // In the header (line 1), at any depth, the code is the header's (an adversarial probe,
  // 2026-12-04: TRACE_LINE_MALFORMED, and nothing said the trace was not replayed).
  for (const std::string& dup : {std::string(R"(,"audit":"complete"})"),
                                 std::string(R"(,"audit":"complete","cache_abi":{"id":"x"}})")}) {
    std::string h = kHeader;
    h.replace(h.size() - 1, 1, dup);
    const Violations v = ValidateTraceJsonl(h + "\n" + Alloc(0) + "\n", "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_HEADER_INVALID"})
        << test::Describe(v);
    EXPECT_NE(v[0].message.find("the trace is not replayed"), std::string::npos) << v[0].message;
  }
  std::string nested = kHeader;
  nested.replace(nested.find(R"("num_layers":1)"), 14, R"("num_layers":1,"num_layers":1)");
  EXPECT_EQ(Codes(nested + "\n"), (std::vector<std::string>{"TRACE_HEADER_INVALID"}));
  // In producer the first stands and the replay goes on (probe 28 finding 02: the message said
  // the trace was not replayed): the event's own violation is reported.
  std::string in_producer = kHeader;
  in_producer.replace(in_producer.find(R"("revision":"1")"), 14,
                      R"("revision":"1","revision":"2")");
  const Violations v = ValidateTraceJsonl(
      in_producer + "\n" +
          Ev(0, "finish", R"("request_id":"Q","handle_generation":0,"payload":{})") + "\n",
      "t.jsonl");
  ASSERT_EQ(test::CodeNames(v),
            (std::vector<std::string>{"TRACE_HEADER_INVALID", "LIFECYCLE_UNKNOWN_HANDLE"}))
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("in the header (the first stands)"), std::string::npos)
      << v[0].message;
}

// Member lookup compares a key tag (length, first and last byte) before the bytes and starts
// after the previous hit: order must not matter, and tag-equal keys must stay distinct.
TEST(TraceCheckerTest, MemberLookupIgnoresOrderAndTagCollisions) {
  const std::string reversed =
      R"({"payload":{"prompt_length":2},"handle_generation":0,"request_id":"R",)"
      R"("event_type":"request_allocate","monotonic_ns":100,"local_sequence":0,)"
      R"("source_component":"semantic","source_instance":"e","event_id":"e0"})";
  Violations v = ValidateTraceJsonl(std::string(kHeader) + "\n" + reversed + "\n", "t.jsonl");
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  // "e_ent_id" has the tag of "event_id"; "event_id" is still found and "e_ent_id" is unknown.
  std::string a = Alloc(0);
  a.insert(1, R"("e_ent_id":"x",)");
  v = ValidateTraceJsonl(std::string(kHeader) + "\n" + a + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
  EXPECT_EQ(v[0].pointer, "/1/e_ent_id");
}

TEST(TraceCheckerTest, ByteEquivalentRedeliveryIsDeduplicated) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Alloc(0) + "\n";
  Violations v = ValidateTraceJsonl(t, "t.jsonl");
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

// The source window recognizes a redelivery by the bytes of its line: the same id and sequence
// with other bytes is a conflict, not a duplicate. A line over TraceChecker::kWindowLineLimit
// bytes is remembered by its hash instead; both forms judge alike.
TEST(TraceCheckerTest, RedeliveryWithinTheSourceWindowIsComparedByBytes) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n";
  auto with_trace_id = [](std::string line, size_t n) {
    return line.replace(line.find(R"("event_type")"), 0,
                        R"("trace_id":")" + std::string(n, 'a') + R"(",)");
  };
  auto later_clock = [](std::string line) {  // the same id and sequence, other bytes
    return line.replace(line.find(R"("monotonic_ns":102)"), 18, R"("monotonic_ns":103)");
  };
  auto has = [](const std::vector<std::string>& v, const char* code) {
    return std::find(v.begin(), v.end(), code) != v.end();
  };
  for (size_t n : {size_t{0}, size_t{5000}}) {  // a short line, and one over kWindowLineLimit
    SCOPED_TRACE("trace_id of " + std::to_string(n) + " bytes");
    const std::string stage = n ? with_trace_id(Stage(2), n) : Stage(2);
    ASSERT_EQ(stage.size() > TraceChecker::kWindowLineLimit, n > 0);
    // Byte-identical: deduplicated (replaying it would stage the layer twice).
    EXPECT_TRUE(Codes(head + stage + "\n" + stage + "\n" + Publish(3) + "\n").empty());
    // Other bytes under the same id and sequence: a conflict, and never deduplicated.
    EXPECT_TRUE(has(Codes(head + stage + "\n" + later_clock(stage) + "\n" + Publish(3) + "\n"),
                    "TRACE_EVENT_ID_CONFLICT"));
  }
  // A long line remembered by its hash against a short redelivery of the same id: a conflict.
  EXPECT_TRUE(has(Codes(head + with_trace_id(Stage(2), 5000) + "\n" + Stage(2) + "\n" +
                        Publish(3) + "\n"),
                  "TRACE_EVENT_ID_CONFLICT"));
}

TEST(TraceCheckerTest, OrphanPublicationIsTxnUnknown) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Publish(1) + "\n";
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"LIFECYCLE_TXN_UNKNOWN"}));
}

TEST(TraceCheckerTest, HugeNumbersAndNegativeValuesAreInputErrors) {
  std::string a = Alloc(0);
  a.replace(a.find("\"prompt_length\":2"), 17, "\"prompt_length\":-1");
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + a + "\n"),
            (std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"}));
  std::string b = Alloc(0);
  b.replace(b.find("\"prompt_length\":2"), 17, "\"prompt_length\":1e400");
  // Valid JSON beyond 64 bits (TRACE_LINE_MALFORMED before 2026-12-03).
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + b + "\n"),
            (std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"}));
}

// Regression: resident bytes were compared with committed rows x B_token computed without an
// overflow check, so 2^60 rows x 16 B (wrapping to 0) matched a claim of 0 resident bytes.
TEST(TraceCheckerTest, ResidencyProductThatWouldWrapIsInconsistent) {
  const std::string header = kHeaderWithResidency;
  const std::string n = std::to_string(uint64_t{1} << 60);
  auto big = [&](std::string line) {
    for (size_t at; (at = line.find("\"prompt_length\":2")) != std::string::npos;)
      line.replace(at, 17, "\"prompt_length\":" + n);
    for (const char* k : {"[0,2]", "\"mask_key_length\":2", "\"committed_length\":2"}) {
      std::string key(k);
      size_t at = line.find(key);
      if (at == std::string::npos) continue;
      std::string repl = key == "[0,2]" ? "[0," + n + "]" : key.substr(0, key.size() - 1) + n;
      for (; at != std::string::npos; at = line.find(key)) line.replace(at, key.size(), repl);
    }
    return line;
  };
  auto residency = [](uint64_t bytes) { return Residency("e3", bytes); };
  std::string t = header + "\n" + big(Alloc(0)) + "\n" + big(Start(1)) + "\n" + big(Stage(2)) +
                  "\n" + big(Publish(3)) + "\n";
  ASSERT_TRUE(Codes(t).empty()) << test::Describe(ValidateTraceJsonl(t, "t.jsonl"));
  EXPECT_EQ(Codes(t + residency(0) + "\n"),
            (std::vector<std::string>{"TRACE_OBSERVATION_INCONSISTENT"}));
  // The same rule on a small trace: the exact product passes, anything else does not.
  std::string small =
      header + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  EXPECT_TRUE(Codes(small + residency(32) + "\n").empty());
  EXPECT_EQ(Codes(small + residency(0) + "\n"),
            (std::vector<std::string>{"TRACE_OBSERVATION_INCONSISTENT"}));
}

// Regression: an allocator/residency observation's handle_generation was never compared, so an
// observation naming the right cause under another incarnation of the request was accepted.
TEST(TraceCheckerTest, RegressionObservationHandleGenerationMustMatchItsCause) {
  const std::string header = kHeaderWithResidency;
  auto residency = [](int generation) { return Residency("e3", 32, generation); };
  std::string t =
      header + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  EXPECT_TRUE(Codes(t + residency(0) + "\n").empty());
  EXPECT_EQ(Codes(t + residency(1) + "\n"),
            (std::vector<std::string>{"TRACE_HANDLE_GENERATION_MISMATCH"}));
}

// Regression: a result_snapshot on an event that produces no snapshot, and a stage event's
// base_snapshot that is not its operation's base, were accepted silently.
TEST(TraceCheckerTest, SnapshotClaimsOnNonProducingEventsAreChecked) {
  auto with = [](std::string line, const std::string& field) {
    line.insert(line.find("\"payload\""), field + ",");
    return line;
  };
  const std::string pre = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  auto trace = [&](const std::string& start, const std::string& stage) {
    return pre + start + "\n" + stage + "\n" + Publish(3) + "\n";
  };
  ASSERT_TRUE(Codes(trace(Start(1), Stage(2))).empty());
  EXPECT_TRUE(Codes(trace(Start(1), with(Stage(2), R"("base_snapshot":0)"))).empty());
  EXPECT_EQ(Codes(trace(Start(1), with(Stage(2), R"("base_snapshot":1)"))),
            (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
  EXPECT_EQ(Codes(trace(Start(1), with(Stage(2), R"("result_snapshot":1)"))),
            (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
  EXPECT_EQ(Codes(trace(with(Start(1), R"("result_snapshot":1)"), Stage(2))),
            (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
  const std::string emit = Ev(
      4, "output_emit",
      R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{"output_index":0,"token":7})");
  EXPECT_TRUE(Codes(trace(Start(1), Stage(2)) + emit + "\n").empty());
  // A publication that lost its compare-and-publish (reported as rejected) names no result.
  auto as_q = [](std::string line) {
    line.replace(line.find(R"("operation_id":"p")"), 18, R"("operation_id":"q")");
    return line;
  };
  const std::string lost_race = pre + Start(1) + "\n" + Stage(2) + "\n" + as_q(Start(3)) + "\n" +
                                as_q(Stage(4)) + "\n" + Publish(5) + "\n";
  std::string lost = as_q(Publish(6));
  lost.replace(lost.find(R"("result_snapshot":1,)"), 20, R"("outcome":"rejected",)");
  ASSERT_TRUE(Codes(lost_race + lost + "\n").empty()) << lost;
  lost.insert(lost.find("\"payload\""), R"("result_snapshot":2,)");
  EXPECT_EQ(Codes(lost_race + lost + "\n"), (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
  EXPECT_EQ(Codes(trace(Start(1), Stage(2)) + with(emit, R"("result_snapshot":2)") + "\n"),
            (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
}

TEST(TraceCheckerTest, EventTypeTableRejectsDuplicateRegistration) {
  EventTypeSpec dup = *FindEventType("fork");
  EXPECT_FALSE(RegisterEventType(dup).ok());
  EXPECT_NE(FindEventType("residency_observation"), nullptr);
}

TEST(TraceCheckerTest, ReleasedRequestsDropTheirOperationRecords) {
  // Memory follows live handles: a long stream of allocate/prefill/finish/release cycles
  // leaves no growing per-operation state behind (checked through the public verdict and a
  // bounded number of transaction records in the object).
  TraceChecker c("gen.jsonl", CheckerOptions{.receipt_window = 0});
  c.Feed(kHeader, 1);
  uint32_t line = 2;
  int seq = 0;
  for (int r = 0; r < 50; ++r) {
    std::string id = "R" + std::to_string(r);
    auto ev = [&](const std::string& type, const std::string& rest) {
      std::string s = Ev(seq++, type, R"("request_id":")" + id + R"(","handle_generation":0,)" + rest);
      c.Feed(s, line++);
    };
    ev("request_allocate", R"("payload":{"prompt_length":2})");
    ev("append_start", R"("operation_id":")" + id + R"(.p","base_snapshot":0,"payload":{"interval":[0,2],"cache_position":[0,2],"mask_key_length":2,"position_stage":"post_rope","purpose":"prefill"})");
    ev("append_stage_layer", R"("operation_id":")" + id + R"(.p","payload":{"layer":0,"interval":[0,2]})");
    ev("append_publish", R"("operation_id":")" + id + R"(.p","payload":{})");
    ev("output_emit", R"("payload":{"output_index":0,"token":5})");
    ev("finish", R"("payload":{})");
    ev("release", R"("payload":{})");
  }
  const Violations& v = c.Finish(false);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  EXPECT_EQ(c.events(), 350u);
  EXPECT_EQ(c.kv().txn_count(), 0u);
}

// The one-pass envelope reader takes only conforming envelopes; anything unusual goes through
// the general reader, which reports exactly the one problem (and nulls of optional members are
// absent members on both paths).
TEST(TraceCheckerTest, EnvelopeFastPathFallsBackOnAnythingUnusual) {
  auto codes = [](const std::string& alloc_line) {
    return Codes(std::string(kHeader) + "\n" + alloc_line + "\n");
  };
  auto with = [](const std::string& from, const std::string& to) {
    std::string l = Alloc(0);
    size_t at = l.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return l.replace(at, from.size(), to);
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(codes(Alloc(0)), V{});
  EXPECT_EQ(codes(with(R"("payload")", R"("outcome":null,"trace_id":null,"operation_id":null,)"
                                       R"("base_snapshot":null,"payload")")),
            V{});
  EXPECT_EQ(codes(with(R"("event_id")", R"("\u0065vent_id")")), V{});  // the key unescapes
  EXPECT_EQ(codes(with(R"("payload")", R"("event_id":"x","payload")")), V{"TRACE_LINE_MALFORMED"});
  EXPECT_EQ(codes(with(R"("payload":{"prompt_length":2})", R"("payload":null)")),
            V{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(codes(with(R"("local_sequence":0)", R"("local_sequence":-1)")),
            V{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_EQ(codes(with(R"("local_sequence":0)", R"("local_sequence":null)")),
            V{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(codes(with(R"("payload")", R"("zzz":1,"payload")")), V{"INPUT_FIELD_UNKNOWN"});
  EXPECT_EQ(codes(with(R"("payload")", R"("blocks":1,"payload")")), V{"TRACE_PLANE_MIXED"});
  EXPECT_EQ(codes(with(R"("payload")", R"("outcome":"maybe","payload")")),
            V{"INPUT_VALUE_INVALID"});
  EXPECT_EQ(codes(with(R"("request_id":"R")", R"("request_id":7)")), V{"INPUT_FIELD_TYPE"});
}

// An event id reused beyond the source's 32-event duplicate window is still found through the
// request's indexed events (behind the per-request Bloom filter): a different event is a
// conflict, a byte-identical redelivery is not replayed twice.
TEST(TraceCheckerTest, EventIdReuseBeyondTheSourceWindowIsFound) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                  "\n" + Publish(3) + "\n";
  int seq = 4;
  for (int i = 0; i < 40; ++i, ++seq)  // reads of R push publish "e3" out of the window
    t += Ev(seq, "read", R"("request_id":"R","handle_generation":0,"payload":{"committed_length":2})") +
         "\n";
  std::string reused = Publish(3);  // same id "e3", new sequence: a different event
  reused.replace(reused.find(R"("local_sequence":3)"), 18, "\"local_sequence\":" + std::to_string(seq));
  auto has = [](const std::vector<std::string>& v, const char* code) {
    return std::find(v.begin(), v.end(), code) != v.end();
  };
  EXPECT_TRUE(has(Codes(t + reused + "\n"), "TRACE_EVENT_ID_CONFLICT"));
  // A byte-identical redelivery that old is a sequence regression and is not replayed again
  // (replaying it would add TRACE_OUTCOME_INVALID: a second first publication).
  EXPECT_EQ(Codes(t + Publish(3) + "\n"), std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"});
  std::string allocate_again = Alloc(0);  // "e0" (the allocation) after 40 more events
  allocate_again.replace(allocate_again.find(R"("local_sequence":0)"), 18,
                         "\"local_sequence\":" + std::to_string(seq));
  EXPECT_TRUE(has(Codes(t + allocate_again + "\n"), "TRACE_EVENT_ID_CONFLICT"));
}

// A lifecycle refusal names the member it is about (file, line and field), not just the event.
TEST(TraceCheckerTest, LifecycleRefusalsNameTheirField) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  struct Case {
    std::string trace, code, pointer;
  };
  const std::vector<Case> cases = {
      {head + Mutate(Start(1), R"("interval":[0,2])", R"("interval":[1,3])") + "\n",
       "LIFECYCLE_APPEND_HOLE", "/2/payload/interval"},
      {head + Mutate(Start(1), R"("mask_key_length":2)", R"("mask_key_length":3)") + "\n",
       "LIFECYCLE_MASK_LENGTH_MISMATCH", "/2/payload/mask_key_length"},
      {head + Start(1) + "\n" + Mutate(Stage(2), R"("layer":0)", R"("layer":4)") + "\n",
       "LIFECYCLE_LAYER_OUT_OF_RANGE", "/3/payload/layer"},
      {head + Start(1) + "\n" + Publish(2) + "\n", "LIFECYCLE_LAYER_INCOMPLETE", "/3/operation_id"},
      {head + Ev(1, "release", R"("request_id":"R","handle_generation":0,"payload":{})") + "\n",
       "LIFECYCLE_RELEASE_LIVE", "/2/request_id"},
  };
  for (const Case& c : cases) {
    const Violations v = ValidateTraceJsonl(c.trace, "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{c.code}) << test::Describe(v);
    EXPECT_EQ(v[0].pointer, c.pointer) << c.code;
  }
}

// Regression: an event delivered again with other bytes (one field changed, or the same
// content re-serialized) raised TRACE_EVENT_ID_CONFLICT, then TRACE_SEQUENCE_REGRESSION for its
// number and TRACE_OUTCOME_INVALID for a second publication: the copy was replayed as a new
// event (found by a vendor's cold read of the docs). The original stands; the copy is one code.
TEST(TraceCheckerTest, RegressionChangedRedeliveryRaisesOneCode) {
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                        "\n" + Publish(3) + "\n";
  using V = std::vector<std::string>;
  const std::string changed =
      Mutate(Publish(3), R"("committed_length":2)", R"("committed_length":3)");
  const std::string reserialized = Mutate(Publish(3), R"("payload":{)", R"("payload": {)");
  for (const std::string& copy : {changed, reserialized}) {
    EXPECT_EQ(Codes(t + copy + "\n"), V{"TRACE_EVENT_ID_CONFLICT"}) << copy;
    // Right after the original and after the next event of the source alike.
    const std::string read =
        Ev(4, "read", R"("request_id":"R","handle_generation":0,"payload":{"committed_length":2})");
    EXPECT_EQ(Codes(t + read + "\n" + copy + "\n"), V{"TRACE_EVENT_ID_CONFLICT"}) << copy;
  }
  EXPECT_TRUE(Codes(t + Publish(3) + "\n").empty());  // byte for byte: deduplicated
}

// Regression (probe 88, F1): an event of another source reusing a recent event_id passed: only
// the event's own source's window and its request's indexed events were searched, so a stage
// event of the worker reusing the engine's append_start id on the line before, and a residency
// observation reusing an allocator observation's id, passed. Different content under one id is
// corruption (M5.1 0x07), and a redelivery repeats its source: one TRACE_EVENT_ID_CONFLICT at
// the reuse, the event replayed (both envelope readers).
TEST(TraceCheckerTest, RegressionAnEventIdReusedByAnotherSourcePassed) {
  using V = std::vector<std::string>;
  const std::string two_sources =
      Mutate(kHeader, R"({"source_instance":"e","source_component":"semantic"}])",
             R"({"source_instance":"e","source_component":"semantic"},)"
             R"({"source_instance":"w","source_component":"semantic"},)"
             R"({"source_instance":"a","source_component":"allocator"},)"
             R"({"source_instance":"r","source_component":"residency"}])");
  // The worker's stage of operation p, as event `id` (its source's sequence 0).
  auto worker_stage = [](const std::string& id) {
    return R"({"event_id":")" + id +
           R"(","source_instance":"w","source_component":"semantic","local_sequence":0,)"
           R"("monotonic_ns":1,"event_type":"append_stage_layer","request_id":"R",)"
           R"("handle_generation":0,"operation_id":"p","payload":{"layer":0,"interval":[0,2]}})";
  };
  const std::string t = two_sources + "\n" + Alloc(0) + "\n" + Start(1) + "\n";
  EXPECT_TRUE(CodesBothReaders(t + worker_stage("w0") + "\n" + Publish(2) + "\n").empty());
  const V conflict{"TRACE_EVENT_ID_CONFLICT"};
  // The append_start's id, on the next line; the id of the allocation, two lines later.
  EXPECT_EQ(CodesBothReaders(t + worker_stage("e1") + "\n" + Publish(2) + "\n"), conflict);
  EXPECT_EQ(CodesBothReaders(t + worker_stage("e0") + "\n" + Publish(2) + "\n"), conflict);
  // The other way round: the engine reuses the worker's id.
  EXPECT_EQ(CodesBothReaders(t + worker_stage("w0") + "\n" +
                             Mutate(Publish(2), R"("event_id":"e2")", R"("event_id":"w0")") + "\n"),
            conflict);
  // Observations of two planes: the residency observation reuses the allocator's id.
  const std::string alloc_obs =
      R"({"event_id":"obs1","source_instance":"a","source_component":"allocator",)"
      R"("local_sequence":0,"monotonic_ns":1,"event_type":"allocator_observation",)"
      R"("request_id":"R","handle_generation":0,"payload":{"caused_by_event_id":"e2",)"
      R"("blocks":1,"slots":4,"used_slots":2}})";
  const std::string done = t + worker_stage("w0") + "\n" + Publish(2) + "\n" + alloc_obs + "\n";
  // (16 bytes: kHeader's 8 bytes per token, 2 rows.)
  const std::string res_obs =
      Mutate(Residency("e2", 16), R"("event_id":"r0")", R"("event_id":"obs1")");
  EXPECT_TRUE(CodesBothReaders(done).empty()) << done;
  EXPECT_EQ(CodesBothReaders(done + res_obs + "\n"), conflict);
  // The message names the source and line that hold the id (mutation audit 4).
  const Violations named =
      ValidateTraceJsonl(t + worker_stage("e1") + "\n" + Publish(2) + "\n", "t.jsonl");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_NE(named[0].message.find(R"(of source "e" on line 3; source "w" reuses it)"),
            std::string::npos)
      << named[0].message;
}

// Regression (probe 88, F3, F5): empty identity and provenance strings passed (producer name
// and revision, event_id, a declared source_instance), and an empty request_id was a request
// named "": the allocation refused, then the request it meant raised LIFECYCLE_UNKNOWN_HANDLE
// too. Each is one INPUT_VALUE_INVALID; an empty request_id is read as an unreadable one
// (gated alike), an empty id drops its event (its request gated).
TEST(TraceCheckerTest, RegressionEmptyIdentityStringsPassed) {
  using V = std::vector<std::string>;
  const std::string events =
      Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  const V invalid{"INPUT_VALUE_INVALID"};
  EXPECT_EQ(CodesBothReaders(Mutate(kHeader, R"("name":"t")", R"("name":"")") + "\n" + events),
            invalid);
  EXPECT_EQ(
      CodesBothReaders(Mutate(kHeader, R"("revision":"1")", R"("revision":"")") + "\n" + events),
      invalid);
  EXPECT_EQ(CodesBothReaders(
                Mutate(kHeader, R"("semantic"}])",
                       R"("semantic"},{"source_instance":"","source_component":"semantic"}])") +
                "\n" + events),
            invalid);
  const std::string head = std::string(kHeader) + "\n";
  for (const std::string& alloc :
       {Mutate(Alloc(0), R"("event_id":"e0")", R"("event_id":"")"),
        Mutate(Alloc(0), R"("request_id":"R")", R"("request_id":"")"),
        Mutate(Alloc(0), R"("source_instance":"e")", R"("source_instance":"")")})
    EXPECT_EQ(CodesBothReaders(head + alloc + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
                               Publish(3) + "\n"),
              invalid)
        << alloc;
  EXPECT_EQ(CodesBothReaders(head + Alloc(0) + "\n" +
                             Mutate(Start(1), R"("operation_id":"p")", R"("operation_id":"")") +
                             "\n" + Stage(2) + "\n" + Publish(3) + "\n"),
            invalid);
}

// The request's event index (event_index.h) past its first lookups: a request with 40
// publications (41 indexed events, the index's table grown several times by lookups) still
// finds each of them as a cause and as an earlier delivery, and does not find a non-indexed
// event (an append_start) as a cause.
TEST(TraceCheckerTest, IndexedEventsOfALongRequestAreFoundAsCausesAndRedeliveries) {
  const std::string rg = R"("request_id":"R","handle_generation":0,)";
  std::string t = std::string(kHeaderWithResidency) + "\n" +
                  Ev(0, "request_allocate", rg + R"("payload":{"prompt_length":80})") + "\n";
  std::vector<std::string> publish;  // publication k is event "e<3k+3>"
  for (int k = 0; k < 40; ++k) {
    const std::string op = R"("operation_id":"p)" + std::to_string(k) + "\",";
    const std::string iv = "[" + std::to_string(2 * k) + "," + std::to_string(2 * k + 2) + "]";
    t +=
        Ev(3 * k + 1, "append_start",
           rg + op + R"("base_snapshot":)" + std::to_string(k) + R"(,"payload":{"interval":)" + iv +
               R"(,"cache_position":)" + iv + R"(,"mask_key_length":)" + std::to_string(2 * k + 2) +
               R"(,"position_stage":"post_rope","purpose":"prefill"})") +
        "\n";
    t += Ev(3 * k + 2, "append_stage_layer",
            rg + op + R"("payload":{"layer":0,"interval":)" + iv + "}") +
         "\n";
    publish.push_back(Ev(3 * k + 3, "append_publish",
                         rg + op + R"("base_snapshot":)" + std::to_string(k) +
                             R"(,"result_snapshot":)" + std::to_string(k + 1) +
                             R"(,"payload":{"committed_length":)" + std::to_string(2 * k + 2) +
                             "}"));
    t += publish.back() + "\n";
  }
  for (const std::string& code : Codes(t)) ADD_FAILURE() << "the base trace reports " << code;
  using V = std::vector<std::string>;
  // Publication 29 ("e90") left 60 rows: 60 x 16 bytes resident.
  EXPECT_TRUE(Codes(t + Residency("e90", 960) + "\n").empty());
  EXPECT_TRUE(Codes(t + Residency("e3", 32) + "\n").empty());  // the first publication
  // A start (still in its source's window: the trace holds it, so it is the wrong kind of
  // cause, not an unknown one; since 2026-12-05, probe 41).
  EXPECT_EQ(Codes(t + Residency("e91", 960) + "\n"), V{"TRACE_CAUSE_WRONG_EVENT"});
  // Publication 4 ("e15") delivered again, byte for byte, 100 events later: not replayed.
  EXPECT_EQ(Codes(t + publish[4] + "\n"), V{"TRACE_SEQUENCE_REGRESSION"});
  // Its id on another event: a conflict.
  std::string other = Ev(121, "read", rg + R"("payload":{"committed_length":80})");
  other.replace(other.find(R"("event_id":"e121")"), 17, R"("event_id":"e15")");
  const V got = Codes(t + other + "\n");
  EXPECT_NE(std::find(got.begin(), got.end(), "TRACE_EVENT_ID_CONFLICT"), got.end());
}

// A published operation's op record is dropped (memory per append); a retry of it still
// compares against the base its append_start read, now taken from the publication.
TEST(TraceCheckerTest, RetryAfterPublicationStillComparesItsOriginalBase) {
  auto retry = [](int seq, int base) {
    return Ev(seq, "append_start",
              R"("request_id":"R","handle_generation":0,"operation_id":"p","base_snapshot":)" +
                  std::to_string(base) +
                  R"(,"payload":{"interval":[0,2],"cache_position":[0,2],"mask_key_length":2,)"
                  R"("position_stage":"post_rope","purpose":"prefill"})");
  };
  auto replayed = [](int seq, int base) {
    return Ev(seq, "append_publish",
              R"("request_id":"R","handle_generation":0,"operation_id":"p","base_snapshot":)" +
                  std::to_string(base) +
                  R"(,"result_snapshot":1,"outcome":"replayed","payload":{"committed_length":2})");
  };
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           Stage(2) + "\n" + Publish(3) + "\n";
  using V = std::vector<std::string>;
  EXPECT_EQ(Codes(head + retry(4, 0) + "\n" + replayed(5, 0) + "\n"), V{});
  EXPECT_EQ(Codes(head + retry(4, 1) + "\n"), V{"LIFECYCLE_RETRY_CONFLICT"});
  EXPECT_EQ(Codes(head + replayed(4, 1) + "\n"), V{"TRACE_SNAPSHOT_MISMATCH"});
}

// A legal operation reported as refused is undone exactly (KvObject::Save/Restore, no copy of
// the whole object any more): the replay goes on from the state the runtime claims.
TEST(TraceCheckerTest, RegressionLegalOperationReportedRejectedIsUndone) {
  std::string rejected_alloc = Alloc(0);
  rejected_alloc.replace(rejected_alloc.find(R"("payload")"), 9, R"("outcome":"rejected","payload")");
  // The refused allocation is undone (and its request gated: whether the runtime applied it is
  // unknown, so R's later events are not replayed).
  {
    TraceChecker c("t.jsonl");
    c.Feed(kHeader, 1);
    c.Feed(rejected_alloc, 2);
    EXPECT_EQ(c.kv().Find("R"), nullptr);
    c.Feed(Start(1), 3);  // gated: no LIFECYCLE_UNKNOWN_HANDLE
    EXPECT_EQ(test::CodeNames(c.Finish(false)), std::vector<std::string>{"TRACE_OUTCOME_INVALID"});
  }
  // A refused first append (legal on the replayed state) leaves no transaction behind and the
  // handle as it was.
  std::string start = Start(1);
  start.replace(start.find(R"("payload")"), 9, R"("outcome":"rejected","payload")");
  TraceChecker c("t.jsonl");
  c.Feed(kHeader, 1);
  c.Feed(Alloc(0), 2);
  const lifecycle::HandleRecord before = *c.kv().Find("R");
  c.Feed(start, 3);
  EXPECT_EQ(c.kv().FindTxn("p"), nullptr);
  EXPECT_TRUE(*c.kv().Find("R") == before);
  EXPECT_TRUE(c.kv().Find("R")->txn_ids.empty());
  EXPECT_EQ(test::CodeNames(c.Finish(false)), std::vector<std::string>{"TRACE_OUTCOME_INVALID"});
}

// Regression (adversarial probe 8, 2026-12-04): an append_start reported `rejected` that the
// contract refuses too (here a stale base, and a request that does not exist) gated its
// operation: one poisoned id per refusal and no violation, so the gates grew with the trace's
// length; and a later start of the same operation id was replayed while its stages and its
// publication were not (the request stayed behind the runtime). Such a refusal opens nothing and
// gates nothing now.
TEST(TraceCheckerTest, RegressionRefusedAppendStartsGateNothing) {
  auto prefill = [](int seq, const std::string& request, const std::string& op, int base, int from,
                    const std::string& outcome) {
    const std::string to = std::to_string(from + 2);
    return Ev(seq, "append_start",
              R"("request_id":")" + request + R"(","handle_generation":0,"operation_id":")" + op +
                  R"(","base_snapshot":)" + std::to_string(base) + R"(,"outcome":")" + outcome +
                  R"(","payload":{"interval":[)" + std::to_string(from) + "," + to +
                  R"(],"cache_position":[)" + std::to_string(from) + "," + to +
                  R"(],"mask_key_length":)" + to +
                  R"(,"position_stage":"post_rope","purpose":"prefill"})");
  };
  TraceChecker c("t.jsonl");
  uint32_t line = 1;
  int seq = 0;
  auto feed = [&](const std::string& l) { c.Feed(l, line++); };
  feed(kHeader);
  feed(Mutate(Alloc(seq++), R"("prompt_length":2)", R"("prompt_length":4)"));
  feed(Start(seq++));
  feed(Stage(seq++));
  feed(Publish(seq++));  // R at snapshot 1, [0, 2) committed
  for (int i = 0; i < 100; ++i) {
    feed(prefill(seq++, "R", "x" + std::to_string(i), 0, 2, "rejected"));  // stale base 0
    feed(prefill(seq++, "U", "u" + std::to_string(i), 0, 0, "rejected"));  // no request U
  }
  EXPECT_EQ(c.poisoned_count(), 0u);
  // A later start of a refused operation's id is a first start, replayed with its stages and
  // its publication.
  feed(prefill(seq++, "R", "x0", 1, 2, "success"));
  feed(Ev(seq++, "append_stage_layer",
          R"("request_id":"R","handle_generation":0,"operation_id":"x0",)"
          R"("payload":{"layer":0,"interval":[2,4]})"));
  feed(Ev(seq++, "append_publish",
          R"("request_id":"R","handle_generation":0,"operation_id":"x0","base_snapshot":1,)"
          R"("result_snapshot":2,"payload":{"committed_length":4})"));
  const Violations& v = c.Finish(false);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  ASSERT_NE(c.kv().Find("R"), nullptr);
  EXPECT_EQ(c.kv().Find("R")->current.committed_length, 4u);
  EXPECT_EQ(c.poisoned_count(), 0u);
}

// The hand-rolled byte comparisons of the hot path agree with std::string_view equality for
// every length up to 40 and a difference at every position.
TEST(TraceCheckerTest, SameBytesAndKeyEqualsAgreeWithStringViewEquality) {
  for (size_t n = 0; n <= 40; ++n) {
    std::string a(n, 'x');
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<char>('a' + (i * 7) % 26);
    EXPECT_TRUE(SameBytes(a, std::string(a))) << n;
    EXPECT_FALSE(SameBytes(a, a + "y")) << n;
    for (size_t i = 0; i < n; ++i) {
      std::string b = a;
      b[i] = static_cast<char>(b[i] ^ 0x20);
      EXPECT_EQ(SameBytes(a, b), std::string_view(a) == std::string_view(b)) << n << " " << i;
      EXPECT_FALSE(SameBytes(a, b)) << n << " " << i;
    }
  }
  EXPECT_TRUE(KeyEquals("interval", "interval"));
  EXPECT_FALSE(KeyEquals("intervaL", "interval"));
  EXPECT_FALSE(KeyEquals("Interval", "interval"));
  EXPECT_FALSE(KeyEquals("interva", "interval"));
  EXPECT_TRUE(KeyEquals("observed_wall_time", "observed_wall_time"));  // 18 bytes: 3 loads
  EXPECT_FALSE(KeyEquals("observed_wall_tXme", "observed_wall_time"));
  EXPECT_FALSE(KeyEquals("observed_Wall_time", "observed_wall_time"));
  EXPECT_TRUE(KeyEquals("k", "k"));
  EXPECT_FALSE(KeyEquals("v", "k"));
  EXPECT_TRUE(KeyEquals("layer", "layer"));
  EXPECT_FALSE(KeyEquals("lAyer", "layer"));
}

// Regression (probe 32): after a request's tombstone was forgotten (the released window), a
// refused operation naming a base it had reached was judged as one of a request never created.
// Such an id is not judged (MayBeForgotten); an id never seen still is.
TEST(TraceCheckerTest, RegressionARefusalOfAForgottenRequestIsNotJudgedAsNeverCreated) {
  CheckerOptions opt;
  opt.released_window = 1;
  opt.receipt_window = 1;
  auto life = [](int seq, const std::string& id) {
    const std::string r = R"("request_id":")" + id + R"(","handle_generation":0,)";
    return Ev(seq, "request_allocate", r + R"("payload":{"prompt_length":2})") + "\n" +
           Ev(seq + 1, "cancel_request", r + R"("base_snapshot":0,"payload":{})") + "\n" +
           Ev(seq + 2, "release", r + R"("payload":{"result_handle_generation":1})") + "\n";
  };
  auto refused_fork = [](int seq, const std::string& id) {
    return Ev(seq, "fork",
              R"("request_id":")" + id +
                  R"(","handle_generation":1,"base_snapshot":1,)"
                  R"("outcome":"rejected","payload":{"prefix_length":0,"children":[{"request_id":")" +
                  id + R"(c"}]})") +
           "\n";
  };
  auto check = [&](const std::string& text) {
    TraceChecker c("t.jsonl", opt);
    uint32_t n = 0;
    size_t at = 0;
    while (at < text.size()) {
      const size_t end = text.find('\n', at);
      c.Feed(text.substr(at, end - at), ++n);
      at = end + 1;
    }
    return test::CodeNames(c.Finish(false));
  };
  const std::string forgotten = std::string(kHeader) + "\n" + life(0, "A") + life(3, "B");
  EXPECT_EQ(check(forgotten + refused_fork(6, "A")), std::vector<std::string>{});
  EXPECT_EQ(check(forgotten + refused_fork(6, "Z")),
            std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
}

// Regression (probe 29 finding 05): another request starting an operation id an aborted
// operation of request A holds was LIFECYCLE_RETRY_CONFLICT naming the purpose (decode vs
// prefill), not the handle and interval that differ.
TEST(TraceCheckerTest, RegressionAnotherRequestsReuseOfAnOperationIdNamesTheHandle) {
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "probe29_another_requests_reuse_of_an_aborted_operation_id_named_the_purpose.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("handle 'B'"), std::string::npos) << v[0].message;
  EXPECT_EQ(v[0].message.find("purpose"), std::string::npos) << v[0].message;
}

// Regression (probe 28 finding 06): a second header line (two traces concatenated) raised one
// INPUT_FIELD_MISSING per envelope member it lacks and one INPUT_FIELD_UNKNOWN per header member.
TEST(TraceCheckerTest, RegressionASecondHeaderLineRaisesOneCode) {
  const Violations v =
      ValidateTraceJsonl(std::string(kHeader) + "\n" + kHeader + "\n" + Alloc(0) + "\n" + Start(1) +
                             "\n" + Stage(2) + "\n" + Publish(3) + "\n",
                         "t.jsonl");
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].code, ErrorCode::TRACE_LINE_MALFORMED);
  EXPECT_EQ(v[0].line, 2u);
  EXPECT_NE(v[0].message.find("only line 1 is the header"), std::string::npos) << v[0].message;
}

// Regression (probe 28 finding 01): a violation of the envelope (an unknown member, a mistyped
// one, a number beyond 64 bits) named neither the event nor its request, though both ids were
// readable. An id that is itself unreadable is not named.
TEST(TraceCheckerTest, RegressionAnEnvelopeViolationNamesTheEventAndItsRequest) {
  struct Case {
    std::string line;
    ErrorCode code;
    std::string event_id, request_id;
  };
  const std::string alloc = Alloc(0);
  const std::vector<Case> cases = {
      {Mutate(alloc, R"("payload")", R"("zzz":1,"payload")"), ErrorCode::INPUT_FIELD_UNKNOWN, "e0",
       "R"},
      {Mutate(alloc, R"("monotonic_ns":100)", R"("monotonic_ns":"100")"),
       ErrorCode::INPUT_FIELD_TYPE, "e0", "R"},
      {Mutate(alloc, R"("prompt_length":2)", R"("prompt_length":18446744073709551616)"),
       ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "e0", "R"},
      {Mutate(alloc, R"("request_id":"R")", "\"request_id\":\"R\xFF\""),
       ErrorCode::TRACE_LINE_MALFORMED, "e0", ""},
  };
  for (const Case& k : cases) {
    TraceChecker c("t.jsonl");
    c.Feed(kHeader, 1);
    c.Feed(k.line, 2);
    c.Finish(false);
    ASSERT_EQ(c.violations().size(), 1u) << k.line << "\n" << test::Describe(c.violations());
    EXPECT_EQ(c.violations()[0].code, k.code) << k.line;
    EXPECT_EQ(c.contexts()[0].event_id, k.event_id) << k.line;
    EXPECT_EQ(c.contexts()[0].request_id, k.request_id) << k.line;
  }
}

// Regression (probe 28 finding 04): a line nesting deeper than the parser's 1,024 levels named
// the strict reader's 128-level limit at a wrong column, and its request's next event raised a
// code of its own. Now: the parser's limit, the event and request named, the request gated.
TEST(TraceCheckerTest, RegressionALineNestedTooDeepNamesTheParsersLimitAndGatesItsRequest) {
  const std::string deep =
      Mutate(Alloc(0), R"("prompt_length":2)",
             R"("prompt_length":2,"x":)" + std::string(1100, '[') + std::string(1100, ']'));
  TraceChecker c("t.jsonl");
  c.Feed(kHeader, 1);
  c.Feed(deep, 2);
  c.Feed(Start(1), 3);  // R's append: not judged (R was never allocated by the replay)
  c.Finish(false);
  ASSERT_EQ(c.violations().size(), 1u) << test::Describe(c.violations());
  EXPECT_EQ(c.violations()[0].code, ErrorCode::TRACE_LINE_MALFORMED);
  EXPECT_NE(c.violations()[0].message.find("nests deeper than 1024 levels"), std::string::npos)
      << c.violations()[0].message;
  EXPECT_EQ(c.contexts()[0].event_id, "e0");
  EXPECT_EQ(c.contexts()[0].request_id, "R");
}

// Regression (probe 77): a byte-order mark before an event named nothing and gated nothing, so one
// defect raised two codes (the request's publish: LIFECYCLE_LAYER_INCOMPLETE for the layer the
// unread line staged). The event is named and its request gated, as for the other lines read but
// not replayed; a mark before a line that is no event object still names nothing.
TEST(TraceCheckerTest, RegressionAByteOrderMarkBeforeAnEventGatesItsRequest) {
  const std::string bom = "\xEF\xBB\xBF";
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + bom +
                        Stage(2) + "\n" + Publish(3) + "\n";
  EXPECT_EQ(CodesBothReaders(t), std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  TraceChecker c("t.jsonl");
  FeedTraceText(&c, t);
  ASSERT_EQ(c.violations().size(), 1u) << test::Describe(c.violations());
  EXPECT_EQ(c.violations()[0].line, 4u);
  EXPECT_NE(c.violations()[0].message.find("byte-order mark"), std::string::npos);
  EXPECT_EQ(c.contexts()[0].event_id, "e2");
  EXPECT_EQ(c.contexts()[0].request_id, "R");
  for (const std::string& rest : {std::string("[1]"), std::string("{\"event_id\":")}) {
    TraceChecker d("t.jsonl");
    FeedTraceText(&d, std::string(kHeader) + "\n" + Alloc(0) + "\n" + bom + rest + "\n");
    ASSERT_EQ(test::CodeNames(d.violations()), std::vector<std::string>{"TRACE_LINE_MALFORMED"})
        << rest;
    EXPECT_EQ(d.contexts()[0].request_id, "") << rest;
  }
}

// A line longer than CheckerOptions::max_line_bytes is read through, not held (before, the block
// reader grew its buffer to the longest line, and a line needs about 22 times its length while
// parsed: a hostile multi-gigabyte line took memory without bound). One TRACE_LINE_TOO_LONG,
// the event named from the line's first bytes and its request gated; the same from a file (the
// line spanning several 1 MiB blocks) and from text; in the header, TRACE_HEADER_INVALID alone.
TEST(TraceCheckerTest, ALineLongerThanTheLimitIsOneCodeNamedAndGated) {
  CheckerOptions opt;
  opt.max_line_bytes = 1000;
  for (const size_t pad : {size_t{2000}, size_t{3} << 20}) {
    const std::string long_stage = Mutate(Stage(2), "}}", "}" + std::string(pad, ' ') + "}");
    const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                          long_stage + "\n" + Publish(3) + "\n";
    test::TempDir dir;
    const std::string path = dir.Write("long.jsonl", t);
    TraceChecker from_file(path, opt), from_text(path, opt);
    ASSERT_TRUE(CheckTraceFile(path, &from_file).ok());
    FeedTraceText(&from_text, t);
    for (TraceChecker* c : {&from_file, &from_text}) {
      ASSERT_EQ(test::CodeNames(c->violations()), std::vector<std::string>{"TRACE_LINE_TOO_LONG"})
          << pad << test::Describe(c->violations());
      EXPECT_EQ(c->violations()[0].line, 4u);
      EXPECT_NE(c->violations()[0].message.find(std::to_string(long_stage.size()) + " bytes long"),
                std::string::npos)
          << c->violations()[0].message;
      EXPECT_EQ(c->contexts()[0].event_id, "e2");
      EXPECT_EQ(c->contexts()[0].request_id, "R");
    }
    TraceChecker unlimited(path);  // the default limit holds the line: the trace conforms
    ASSERT_TRUE(CheckTraceFile(path, &unlimited).ok());
    EXPECT_TRUE(unlimited.violations().empty()) << test::Describe(unlimited.violations());
  }
  const std::string long_header =
      Mutate(kHeader, R"("audit")", std::string(1200, ' ') + R"("audit")");
  TraceChecker header("t.jsonl", opt);
  FeedTraceText(&header, long_header + "\n" + Alloc(0) + "\n");
  EXPECT_EQ(test::CodeNames(header.violations()), std::vector<std::string>{"TRACE_HEADER_INVALID"});
}

// An overlong line is named only from top-level members that are plain strings in its first
// bytes: a request_id nested in the payload is not the event's, an escaped id is not guessed.
TEST(TraceCheckerTest, AnOverlongLineIsNamedOnlyByItsOwnTopLevelIds) {
  CheckerOptions opt;
  opt.max_line_bytes = 100;
  struct Case {
    std::string line, event_id, request_id;
  } cases[] = {
      {R"({"payload":{"request_id":"X","s":"\"request_id\":\"Y\""},"request_id" : "R","event_id":"e9"})",
       "e9", "R"},
      // A nested member after a comma is still nested: a key there is not the event's.
      {R"({"payload":{"a":1,"request_id":"X"},"request_id":"R","event_id":"e9"})", "e9", "R"},
      {R"({"event_id":"e\u0031","request_id":"R)" + std::string(200, 'x') + R"("})", "",
       "R" + std::string(200, 'x')},
      {R"(["request_id","R",)" + std::string(200, '0') + "]", "", ""},
  };
  for (const Case& k : cases) {
    TraceChecker c("t.jsonl", opt);
    c.Feed(kHeader, 1);  // Feed itself is not limited; the limit is the readers'
    c.FeedOverlongLine(2, k.line.size(), k.line);
    c.Finish(false);
    ASSERT_EQ(test::CodeNames(c.violations()), std::vector<std::string>{"TRACE_LINE_TOO_LONG"})
        << k.line;
    EXPECT_EQ(c.contexts()[0].event_id, k.event_id) << k.line;
    EXPECT_EQ(c.contexts()[0].request_id, k.request_id) << k.line;
  }
}

// The limit is inclusive: a line of exactly max_line_bytes bytes is held and replayed, one byte
// more is TRACE_LINE_TOO_LONG, from a file and from text alike (mutation audit 4: either reader
// off by one passed every other test, whose lines are far past the limit).
TEST(TraceCheckerTest, ALineOfExactlyTheLimitIsHeldAndOneByteMoreIsTooLong) {
  const std::string stage = Mutate(Stage(2), "}}", "}" + std::string(500, ' ') + "}");
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + stage +
                        "\n" + Publish(3) + "\n";
  test::TempDir dir;
  const std::string path = dir.Write("edge.jsonl", t);
  for (const uint64_t limit : {uint64_t{stage.size()}, uint64_t{stage.size() - 1}}) {
    CheckerOptions opt;
    opt.max_line_bytes = limit;
    TraceChecker from_file(path, opt), from_text(path, opt);
    ASSERT_TRUE(CheckTraceFile(path, &from_file).ok());
    FeedTraceText(&from_text, t);
    for (TraceChecker* c : {&from_file, &from_text}) {
      if (limit == stage.size()) {
        EXPECT_TRUE(c->violations().empty()) << limit << test::Describe(c->violations());
      } else {
        ASSERT_EQ(test::CodeNames(c->violations()), std::vector<std::string>{"TRACE_LINE_TOO_LONG"})
            << limit << test::Describe(c->violations());
        EXPECT_EQ(c->violations()[0].line, 4u);
      }
    }
  }
}

// Mutation audit 4: an overlong line is named from its first kOverlongPrefixBytes bytes only, from
// text as from a file (FeedTraceText holds the whole line; the file reader keeps that prefix):
// ids past it name nothing on either path. And an overlong last line may have been the end
// record: a header requiring one raises no TRACE_END_MISSING beside TRACE_LINE_TOO_LONG.
TEST(TraceCheckerTest, AnOverlongLineIsNamedFromItsPrefixOnBothPathsAndMayBeTheEnd) {
  CheckerOptions opt;
  opt.max_line_bytes = 1000;
  const std::string late_ids =
      "{" + std::string(TraceChecker::kOverlongPrefixBytes, ' ') + Stage(2).substr(1);
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + late_ids +
                        "\n" + Publish(3) + "\n";
  test::TempDir dir;
  const std::string path = dir.Write("late.jsonl", t);
  TraceChecker from_file(path, opt), from_text(path, opt);
  ASSERT_TRUE(CheckTraceFile(path, &from_file).ok());
  FeedTraceText(&from_text, t);
  for (TraceChecker* c : {&from_file, &from_text}) {
    ASSERT_FALSE(c->violations().empty());
    EXPECT_EQ(c->violations()[0].code, ErrorCode::TRACE_LINE_TOO_LONG);
    EXPECT_EQ(c->contexts()[0].event_id, "");
    EXPECT_EQ(c->contexts()[0].request_id, "");
  }
  EXPECT_EQ(test::CodeNames(from_file.violations()), test::CodeNames(from_text.violations()));
  const std::string head =
      Mutate(kHeader, R"("audit":"complete")", R"("audit":"complete","end_record":true)");
  const std::string long_end =
      R"({"kind":"kvconform.trace_end/1","events":4)" + std::string(2000, ' ') + "}";
  TraceChecker end("t.jsonl", opt);
  FeedTraceText(&end, head + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
                          Publish(3) + "\n" + long_end + "\n");
  EXPECT_EQ(test::CodeNames(end.violations()), std::vector<std::string>{"TRACE_LINE_TOO_LONG"})
      << test::Describe(end.violations());
}

// Mutation audit 4: a layer's staged payload is rows * B_token / L, and the message says so with
// the divided figure (2 rows x 16 B/token over 2 layers: 16 bytes a layer, not the 32 of both).
TEST(TraceCheckerTest, AStagedPayloadMismatchStatesOneLayersFigure) {
  const std::string header = Mutate(Mutate(kHeader, R"("num_layers":1)", R"("num_layers":2)"),
                                    R"("bytes_per_token":8)", R"("bytes_per_token":16)");
  const std::string stage =
      Mutate(Stage(2), R"("interval":[0,2]})", R"("interval":[0,2],"staged_payload_bytes":5})");
  const Violations v = ValidateTraceJsonl(
      header + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + stage + "\n", "t.jsonl");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].code, ErrorCode::TRACE_SNAPSHOT_MISMATCH) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/3/payload/staged_payload_bytes");
  EXPECT_NE(v[0].message.find("2 rows x 16 B/token / 2 layers = 16 (one layer's"),
            std::string::npos)
      << v[0].message;
}

// Mutation audit 4: the parse-only pass (check --parse-only, the benchmark's baseline) counts an
// overlong line as the check reads it: counted, not parsed.
TEST(TraceCheckerTest, TheParseOnlyPassCountsAnOverlongLine) {
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" +
                        Mutate(Start(1), "}}", "}" + std::string(2000, ' ') + "}") + "\n" +
                        Stage(2) + "\n";
  test::TempDir dir;
  const std::string path = dir.Write("p.jsonl", t);
  uint64_t lines = 0;
  ASSERT_TRUE(ParseOnlyFile(path, &lines, 1000).ok());
  EXPECT_EQ(lines, 4u);
}

// Mutation audit 4: a reorder's envelope names no request, "" included: a reorder naming request
// "" is reported there and still replayed, so its rows are judged (probe 90's trace with the
// empty id moved from operation_id to request_id; dropped, the split state went unjudged).
TEST(TraceCheckerTest, RegressionAReorderNamingAnEmptyRequestIsStillReplayed) {
  std::string t;
  for (const std::string& line : test::SourceLines(
           "reference/trace/testdata/semantic/"
           "probe90_an_empty_operation_id_dropped_a_reorder_and_its_rows_went_unjudged.jsonl"))
    t += line + "\n";
  t = Mutate(t, R"("event_type":"reorder","operation_id":"")",
             R"("event_type":"reorder","request_id":"")");
  EXPECT_EQ(CodesBothReaders(t),
            (std::vector<std::string>{"INPUT_VALUE_INVALID", "LIFECYCLE_REORDER_SPLIT_STATE"}));
}

// Regression (probe 90): an overlong line whose first read held fewer bytes than its ids' offset
// (the line straddling the reader's 1 MiB block) kept only those bytes as its prefix: its event
// was not named nor its request gated, and the request's next event raised a second code. The
// prefix is the line's first 64 KiB however the reads split.
TEST(TraceCheckerTest, RegressionAnOverlongLineAcrossTheReadBlockIsStillNamed) {
  CheckerOptions opt;
  opt.max_line_bytes = 1000;
  // Identical redeliveries of the allocation fill the first block up to 2,000 bytes before its
  // end, where the overlong stage line starts; its ids come after 3,000 bytes of whitespace.
  // (The header takes the remainder as whitespace after its '{'.)
  const size_t at = (size_t{1} << 20) - 2000;
  const std::string filler = Alloc(0) + "\n";
  std::string body = Start(1) + "\n";
  while (std::string(kHeader).size() + 1 + filler.size() + body.size() + filler.size() <= at)
    body.insert(0, filler);
  body.insert(0, filler);
  const size_t pad = at - (std::string(kHeader).size() + 1 + body.size());
  std::string t = "{" + std::string(pad, ' ') + std::string(kHeader).substr(1) + "\n" + body;
  const std::string stage = "{" + std::string(3000, ' ') + Stage(2).substr(1);
  ASSERT_EQ(t.size(), at);
  t += stage + "\n" + Publish(3) + "\n";
  test::TempDir dir;
  const std::string path = dir.Write("straddle.jsonl", t);
  TraceChecker c(path, opt);
  ASSERT_TRUE(CheckTraceFile(path, &c).ok());
  ASSERT_EQ(test::CodeNames(c.violations()), std::vector<std::string>{"TRACE_LINE_TOO_LONG"})
      << test::Describe(c.violations());
  EXPECT_EQ(c.contexts()[0].event_id, "e2");
  EXPECT_EQ(c.contexts()[0].request_id, "R");
}

// Regression (probe 90): the in-memory path (FeedTraceText: validate, the tests) did not name a
// cut line's CR bytes, which the file path names: CR-only line ends read as one cut line.
TEST(TraceCheckerTest, RegressionACutLineWithCrBytesIsNamedOnBothPaths) {
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\r" + Start(1) + "\r";
  test::TempDir dir;
  const std::string path = dir.Write("cr.jsonl", t);
  TraceChecker from_file(path), from_text(path);
  ASSERT_TRUE(CheckTraceFile(path, &from_file).ok());
  FeedTraceText(&from_text, t);
  for (TraceChecker* c : {&from_file, &from_text}) {
    ASSERT_EQ(test::CodeNames(c->violations()), std::vector<std::string>{"TRACE_TRUNCATED"});
    EXPECT_NE(c->violations()[0].message.find("the cut line holds CR bytes"), std::string::npos)
        << c->violations()[0].message;
  }
}

// A line longer than the limit that the input cuts (no final newline) is the cut line it is:
// TRACE_TRUNCATED alone, with the CR hint when it holds one.
TEST(TraceCheckerTest, AnOverlongCutLastLineIsOneTruncation) {
  CheckerOptions opt;
  opt.max_line_bytes = 1000;
  for (const std::string& tail : {std::string(3 << 20, ' '), std::string(3 << 20, ' ') + "\r "}) {
    test::TempDir dir;
    const std::string path =
        dir.Write("cut.jsonl", std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + tail);
    TraceChecker c(path, opt);
    ASSERT_TRUE(CheckTraceFile(path, &c).ok());
    ASSERT_EQ(test::CodeNames(c.violations()), std::vector<std::string>{"TRACE_TRUNCATED"});
    EXPECT_EQ(c.violations()[0].line, 3u);
    EXPECT_EQ(c.violations()[0].message.find("CR bytes") != std::string::npos,
              tail.find('\r') != std::string::npos);
  }
}

// The envelope's strings are overwritten in place when their length repeats: every event's
// reported context must still carry its own id and type, for every id length up to 40.
TEST(TraceCheckerTest, EnvelopeStringsOfEachEventStayExact) {
  TraceChecker c("t.jsonl");
  c.Feed(kHeader, 1);
  std::vector<std::string> ids, types;
  uint32_t line = 1;
  for (size_t n = 1; n <= 40; ++n)
    for (char fill : {'a', 'b'}) {
      std::string id(n, fill);
      id[n / 2] = static_cast<char>('0' + n % 10);
      ids.push_back(id);
      std::string type = "no_such_type_" + std::string(n % 7, fill);
      types.push_back(type);
      c.Feed(R"({"event_id":")" + id + R"(","source_instance":"e","source_component":"semantic",)"
             R"("local_sequence":)" + std::to_string(ids.size()) + R"(,"monotonic_ns":1,)"
             R"("event_type":")" + type + R"(","payload":{}})",
             ++line);
    }
  c.Finish(false);
  ASSERT_EQ(c.contexts().size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(c.contexts()[i].event_id, ids[i]) << i;
    EXPECT_EQ(c.violations()[i].code, ErrorCode::TRACE_EVENT_TYPE_UNKNOWN) << i;
    EXPECT_NE(c.violations()[i].message.find("\"" + types[i] + "\""), std::string::npos)
        << c.violations()[i].message;
  }
}

// LineHash is the duplicate-delivery identity of lines and ids: equal bytes hash equal wherever
// they lie in memory (its tail loads stay inside the input), and a change of any one byte, at
// any position, of inputs of every length up to 100 changes the hash.
TEST(TraceCheckerTest, LineHashSeesEveryByteAndOnlyTheInput) {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  std::string a(300, '\0'), b(300, '\0');
  for (size_t n = 0; n <= 100; ++n) {
    std::string in(n, '\0');
    for (char& ch : in) ch = static_cast<char>(next());
    for (char& ch : a) ch = static_cast<char>(next());
    for (char& ch : b) ch = static_cast<char>(next());
    a.replace(7, n, in);
    b.replace(100, n, in);
    const uint64_t h = LineHash(in);
    EXPECT_EQ(LineHash(std::string_view(a).substr(7, n)), h) << n;
    EXPECT_EQ(LineHash(std::string_view(b).substr(100, n)), h) << n;
    for (size_t i = 0; i < n; ++i) {
      std::string m = in;
      m[i] = static_cast<char>(m[i] ^ (1 + next() % 255));
      EXPECT_NE(LineHash(m), h) << "length " << n << ", byte " << i;
    }
    if (n) {
      EXPECT_NE(LineHash(std::string_view(in).substr(0, n - 1)), h) << n;
    }
  }
}

// CheckTraceFile parses lines in batches (FeedPaddedBatch) from a block reader; the result must
// be FeedPadded's, line by line (ValidateTraceJsonl), with batches that cross block refills,
// lines longer than kMaxBatchLine, malformed, empty and duplicate lines, an unusable header and
// a last line without '\n'.
TEST(TraceCheckerTest, BatchedFileCheckEqualsLineByLineReplay) {
  int seq = 0;
  auto ev = [&](const std::string& req, const std::string& type, const std::string& rest) {
    return Ev(seq++, type, R"("request_id":")" + req + R"(","handle_generation":0,)" + rest) + "\n";
  };
  std::string body;
  for (int r = 0; r < 2500; ++r) {
    const std::string req = "R" + std::to_string(r), op = "\"operation_id\":\"p" + std::to_string(r) + "\",";
    body += ev(req, "request_allocate", R"("payload":{"prompt_length":2})");
    body += ev(req, "append_start", op + R"("base_snapshot":0,"payload":{"interval":[0,2],)"
                                         R"("cache_position":[0,2],"mask_key_length":2,)"
                                         R"("position_stage":"post_rope","purpose":"prefill"})");
    if (r % 97 == 5) body += "{not json\n";
    if (r % 211 == 7) body += "\n";
    std::string stage = ev(req, "append_stage_layer", op + R"("payload":{"layer":0,"interval":[0,2]})");
    body += stage;
    if (r % 101 == 9) body += stage;  // a byte-equivalent redelivery
    if (r % 503 == 11)  // a line longer than kMaxBatchLine (an unknown member)
      body += ev(req, "append_stage_layer",
                 op + R"("payload":{"layer":0,"interval":[0,2],"x":")" +
                     std::string(TraceChecker::kMaxBatchLine + 100, 'x') + "\"}}");
    body += ev(req, "append_publish", op + R"("base_snapshot":0,"result_snapshot":1,)"
                                           R"("payload":{"committed_length":2})");
  }
  ASSERT_GT(body.size(), size_t{2} << 20);  // several 1 MiB block refills
  const std::string dir = ::testing::TempDir();
  int variant = 0;
  for (const std::string& text :
       {std::string(kHeader) + "\n" + body, std::string(kHeader) + "\n" + body + "{\"partial\":",
        std::string("{\"kind\":\"other\"}\n") + body}) {
    const std::string path = dir + "/batched_" + std::to_string(variant++) + ".jsonl";
    {
      FILE* f = std::fopen(path.c_str(), "wb");
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(std::fwrite(text.data(), 1, text.size(), f), text.size());
      std::fclose(f);
    }
    TraceChecker batched(path);
    ASSERT_TRUE(CheckTraceFile(path, &batched).ok());
    const Violations want = ValidateTraceJsonl(text, path);
    const Violations& got = batched.violations();
    ASSERT_EQ(got.size(), want.size()) << "variant " << variant;
    if (variant < 3)
      EXPECT_GT(got.size(), 30u);  // the injected defects
    else
      EXPECT_EQ(got.size(), 1u);  // the header alone: nothing after it is replayed
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].code, want[i].code) << i;
      EXPECT_EQ(got[i].line, want[i].line) << i;
      EXPECT_EQ(got[i].pointer, want[i].pointer) << i;
      EXPECT_EQ(got[i].message, want[i].message) << i;
    }
    std::remove(path.c_str());
  }
}

// The batched file check's prefetch of cold records (CheckerOptions::prefetch_from_live_requests)
// is a hint: in a continuous-batching engine's order, where it runs, the check reports exactly
// what it reports without it, planted defects included.
TEST(TraceCheckerTest, PrefetchingColdRecordsChangesNoResult) {
  int seq = 0;
  auto ev = [&](int r, const std::string& type, const std::string& rest) {
    return Ev(seq++, type,
              R"("request_id":"R)" + std::to_string(r) + R"(","handle_generation":0,)" + rest) +
           "\n";
  };
  auto op = [](int r) { return "\"operation_id\":\"p" + std::to_string(r) + "\","; };
  // One engine iteration at a time, phase by phase: consecutive events name other requests.
  constexpr int kRequests = 600;
  std::string body;
  for (int r = 0; r < kRequests; ++r)
    body += ev(r, "request_allocate", R"("payload":{"prompt_length":2})");
  for (int r = 0; r < kRequests; ++r)
    body += ev(r, "append_start",
               op(r) + R"("base_snapshot":0,"payload":{"interval":[0,2],)"
                       R"("cache_position":[0,2],"mask_key_length":2,)"
                       R"("position_stage":"post_rope","purpose":"prefill"})");
  for (int r = 0; r < kRequests; ++r) {
    body += ev(r, "append_stage_layer", op(r) + R"("payload":{"layer":0,"interval":[0,2]})");
    if (r % 97 == 5) body += "{not json\n";
  }
  for (int r = 0; r < kRequests; ++r)
    body += ev(r, "append_publish",
               op(r) + (r % 89 == 3 ? R"("base_snapshot":1,)" : R"("base_snapshot":0,)") +
                   R"("result_snapshot":1,"payload":{"committed_length":2})");
  test::TempDir dir;
  const std::string path =
      dir.Write("prefetch_step_order.jsonl", std::string(kHeader) + "\n" + body);
  CheckerOptions with, without;
  with.prefetch_from_live_requests = 0;
  without.prefetch_from_live_requests = SIZE_MAX;
  TraceChecker a(path, with), b(path, without);
  ASSERT_TRUE(CheckTraceFile(path, &a).ok());
  ASSERT_TRUE(CheckTraceFile(path, &b).ok());
  EXPECT_GT(a.prefetched_batches(), 100u);  // it ran: most batches of this order
  EXPECT_EQ(b.prefetched_batches(), 0u);
  EXPECT_GE(a.violations().size(), 12u);  // the malformed lines and the wrong bases
  EXPECT_EQ(test::RenderTraceViolations(a.violations(), a.contexts()),
            test::RenderTraceViolations(b.violations(), b.contexts()));
}

// Line numbers are 32-bit: the readers stop at kMaxTraceLines instead of wrapping (a trace
// piped from a runtime through "-" has no size known in advance).
TEST(TraceCheckerTest, LineNumbersStopAtTheirLimitInsteadOfWrapping) {
  uint32_t after = 7;
  EXPECT_TRUE(AdvanceLineNumber(0, 16, &after));
  EXPECT_EQ(after, 16u);
  EXPECT_TRUE(AdvanceLineNumber(kMaxTraceLines - 16, 16, &after));
  EXPECT_EQ(after, kMaxTraceLines);
  after = 7;
  EXPECT_FALSE(AdvanceLineNumber(kMaxTraceLines - 15, 16, &after));
  EXPECT_FALSE(AdvanceLineNumber(kMaxTraceLines, 1, &after));
  EXPECT_FALSE(AdvanceLineNumber(0, size_t{1} << 32, &after));
  EXPECT_EQ(after, 7u);  // unchanged when refused
}

// A dropped event (its envelope was reported) still takes its place in its source's sequence:
// the next event of the source raised a second, cascading TRACE_SEQUENCE_GAP before.
TEST(TraceCheckerTest, RegressionEnvelopeErrorDoesNotCascadeIntoSequenceGap) {
  std::string bad = Ev(1, "read", R"("request_id":"R","handle_generation":0,"bogus":1,)"
                                  R"("payload":{"committed_length":0})");
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + bad + "\n" + Start(2) + "\n" +
                  Stage(3) + "\n" + Publish(4) + "\n";
  EXPECT_EQ(Codes(t), std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
  // A dropped event that names no usable sequence leaves the gap to be reported.
  std::string no_seq = bad;
  no_seq.replace(no_seq.find(R"("local_sequence":1)"), 18, R"("local_sequence":"1")");
  t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + no_seq + "\n" + Start(2) + "\n" +
      Stage(3) + "\n" + Publish(4) + "\n";
  // Since 2026-12-03 its hole is explained too (an event dropped without a usable number).
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"INPUT_FIELD_TYPE", "INPUT_FIELD_UNKNOWN"}));
}

// A source that restarts its numbering (a worker restarted under the same source_instance) is
// TRACE_SEQUENCE_REGRESSION once, at the event that restarts it (dropped: it lies before the
// window); from the next event that continues the new numbering the source is followed again, so
// its later events are checked, not each reported as another regression.
TEST(TraceCheckerTest, SourceThatRestartsItsNumberingIsReportedOnceAndFollowed) {
  auto ev_for = [](int seq, const std::string& req, const std::string& type,
                   const std::string& rest) {
    // Appended piecewise: GCC 12 warns (-Warray-bounds, a false positive) on the chained
    // operator+ of a literal, a string and a literal here, and CI builds with -Werror.
    std::string envelope = R"("request_id":")";
    envelope += req;
    envelope += R"(","handle_generation":0,)";
    envelope += rest;
    return Ev(seq, type, envelope);
  };
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                  "\n" + Publish(3) + "\n";
  for (int seq = 4; seq < 44; ++seq)
    t += ev_for(seq, "R", "read", R"("base_snapshot":1,"payload":{"committed_length":2})") + "\n";
  // The restart: numbering from 0 again, then a read of T claiming a length T does not have.
  t += ev_for(0, "S", "request_allocate", R"("payload":{"prompt_length":2})") + "\n";
  t += ev_for(1, "T", "request_allocate", R"("payload":{"prompt_length":2})") + "\n";
  t += ev_for(2, "T", "read", R"("base_snapshot":0,"payload":{"committed_length":5})") + "\n";
  t += ev_for(3, "T", "read", R"("base_snapshot":0,"payload":{"committed_length":0})") + "\n";
  const Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(v.size(), 2u) << test::Describe(v);
  EXPECT_EQ(ErrorCodeName(v[0].code), "TRACE_SEQUENCE_REGRESSION");
  EXPECT_EQ(v[0].line, 46u);
  EXPECT_EQ(v[1].line, 48u) << test::Describe(v);  // the wrong read of T is judged
}

// A source's clock going backwards is TRACE_CLOCK_REGRESSION, judged against the source's
// previous event. Regression (envelope sweep, 2026-12-03): judged against the source's highest
// clock, one event with a clock far ahead (a spike) raised the code at every later event of the
// source.
TEST(TraceCheckerTest, ClockRegressionIsReportedOncePerBackwardStep) {
  auto with_ns = [](const std::string& ev, int seq, uint64_t ns) {
    return Mutate(ev, R"("monotonic_ns":)" + std::to_string(100 + seq),
                  R"("monotonic_ns":)" + std::to_string(ns));
  };
  const std::string spike = std::string(kHeader) + "\n" + Alloc(0) + "\n" +
                            with_ns(Start(1), 1, 1000000000000) + "\n" + Stage(2) + "\n" +
                            Publish(3) + "\n";
  const Violations v = ValidateTraceJsonl(spike, "t.jsonl");
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(ErrorCodeName(v[0].code), "TRACE_CLOCK_REGRESSION");
  EXPECT_EQ(v[0].line, 4u);  // the stage, the first event after the spike
  // Two backward steps are two regressions; equal clocks are not one.
  const std::string steps = std::string(kHeader) + "\n" + with_ns(Alloc(0), 0, 50) + "\n" +
                            with_ns(Start(1), 1, 40) + "\n" + with_ns(Stage(2), 2, 60) + "\n" +
                            with_ns(Publish(3), 3, 55) + "\n";
  const Violations w = ValidateTraceJsonl(steps, "t.jsonl");
  ASSERT_EQ(w.size(), 2u) << test::Describe(w);
  EXPECT_EQ(w[0].line, 3u);
  EXPECT_EQ(w[1].line, 5u);
  const std::string equal = std::string(kHeader) + "\n" + with_ns(Alloc(0), 0, 50) + "\n" +
                            with_ns(Start(1), 1, 50) + "\n" + with_ns(Stage(2), 2, 50) + "\n" +
                            with_ns(Publish(3), 3, 50) + "\n";
  EXPECT_TRUE(ValidateTraceJsonl(equal, "t.jsonl").empty());
}

// Regression (envelope sweep, 2026-12-03): an envelope member retyped or left out raised a
// second code. An event dropped without a usable local_sequence or source_instance, or a line
// that is not an event object, left a TRACE_SEQUENCE_GAP at its source's next event; an event
// without the request_id, handle_generation or operation_id its type needs (or an append_start
// without its base_snapshot) was skipped without gating, so its transaction's later events raised
// lifecycle codes; an event whose request_id was unreadable gated nothing.
TEST(TraceGatingTest, RegressionUnusableEnvelopeMemberRaisesOneCode) {
  auto trace = [](const std::vector<std::string>& events) {
    std::string t = std::string(kHeader) + "\n";
    for (const auto& ev : events) t += ev + "\n";
    return t;
  };
  const std::string read1 = Ev(1, "read",
                               R"("request_id":"R","handle_generation":0,)"
                               R"("base_snapshot":0,"payload":{"committed_length":0})");
  // The read's number unreadable, or its source: its hole is not also a gap.
  EXPECT_EQ(
      Codes(trace({Alloc(0), Mutate(read1, R"("local_sequence":1)", R"("local_sequence":"1")"),
                   Start(2), Stage(3), Publish(4)})),
      std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(
      Codes(trace({Alloc(0), Mutate(read1, R"("source_instance":"e")", R"("source_instance":7)"),
                   Start(2), Stage(3), Publish(4)})),
      std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(Codes(trace({Alloc(0), "{not json", Start(2), Stage(3), Publish(4)})),
            std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  // A hole larger than what was dropped is still a gap.
  EXPECT_EQ(Codes(trace({Alloc(0), "{not json", Start(3), Stage(4), Publish(5)})),
            (std::vector<std::string>{"TRACE_LINE_MALFORMED", "TRACE_SEQUENCE_GAP"}));
  // An append_start without what its type needs: dropped, its transaction gated.
  for (const auto& [from, to] :
       std::vector<std::pair<std::string, std::string>>{{R"("handle_generation":0,)", ""},
                                                        {R"("operation_id":"p",)", ""},
                                                        {R"("base_snapshot":0,)", ""}})
    EXPECT_EQ(Codes(trace({Alloc(0), Mutate(Start(1), from, to), Stage(2), Publish(3)})),
              std::vector<std::string>{"INPUT_FIELD_MISSING"})
        << from;
  // A stage whose request is unreadable gates its operation's request (the output sampled from
  // the publication it would have completed included).
  const std::string output4 = Ev(4, "output_emit",
                                 R"("request_id":"R","handle_generation":0,)"
                                 R"("base_snapshot":1,)"
                                 R"("payload":{"output_index":0,"token":5})");
  EXPECT_EQ(Codes(trace({Alloc(0), Start(1), Stage(2), Publish(3), output4})),
            std::vector<std::string>{});
  EXPECT_EQ(
      Codes(trace({Alloc(0), Start(1), Mutate(Stage(2), R"("request_id":"R")", R"("request_id":7)"),
                   Publish(3), output4})),
      std::vector<std::string>{"INPUT_FIELD_TYPE"});
  // An append_start whose request is unreadable opens an operation the replay does not know:
  // the request its next event names is gated.
  EXPECT_EQ(Codes(trace({Alloc(0), Mutate(Start(1), R"("request_id":"R")", R"("request_id":7)"),
                         Stage(2), Publish(3), output4})),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  // An allocation without its request: the requests not yet known are gated.
  EXPECT_EQ(
      Codes(trace({Mutate(Alloc(0), R"("request_id":"R",)", ""), Start(1), Stage(2), Publish(3)})),
      std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

// The one-pass payload readers of the hot event types must give exactly the general reader's
// verdicts (codes, lines, pointers, messages): conforming payloads, and every kind of unusual
// payload they hand back to the general reader.
TEST(TraceCheckerTest, PayloadFastReadersAgreeWithTheGeneralReaders) {
  const std::string start =
      Ev(1, "append_start",
         R"("request_id":"R","handle_generation":0,"operation_id":"p","base_snapshot":0,)"
         R"("payload":{"interval":[0,2],"cache_position":[0,2],"mask_key_length":2,)"
         R"("position_stage":"post_rope","purpose":"prefill","idempotency_key":"k",)"
         R"("cache_abi":"abi","pending_payload_bytes":16})");
  const std::string stage = Ev(2, "append_stage_layer",
                               R"("request_id":"R","handle_generation":0,"operation_id":"p",)"
                               R"("payload":{"layer":0,"interval":[0,2],"k":true,"v":true})");
  const std::string out = Ev(4, "output_emit",
                             R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                             R"("payload":{"output_index":0,"token":7,"from":"target_logits"})");
  const std::string base = std::string(kHeader) + "\n" + Alloc(0) + "\n" + start + "\n" + stage +
                           "\n" + Publish(3) + "\n" + out + "\n";
  auto run = [](const std::string& text, bool fast, uint64_t* fast_count) {
    CheckerOptions opt;
    opt.fast_readers = fast;
    TraceChecker c("t.jsonl", opt);
    Violations v = FeedTraceText(&c, text);
    if (fast_count) *fast_count = c.fast_payloads();
    return v;
  };
  uint64_t fast_count = 0;
  EXPECT_TRUE(run(base, true, &fast_count).empty());
  EXPECT_EQ(fast_count, 4u);  // all four hot payloads took the one-pass readers
  const std::vector<std::pair<std::string, std::string>> edits = {
      {R"("purpose":"prefill")", R"("purpose":"bogus")"},
      {R"("purpose":"prefill")", R"("purpose":null)"},
      {R"("purpose":"prefill")", R"("purpose":"prefill","purpose":"decode")"},
      {R"("purpose":"prefill")", R"("purpose":"repair")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":[2,0],"cache_position")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":[0],"cache_position")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":[0,2,3],"cache_position")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":[0,-1],"cache_position")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":[0,2.5],"cache_position")"},
      {R"("interval":[0,2],"cache_position")", R"("interval":{},"cache_position")"},
      {R"("mask_key_length":2)", R"("mask_key_length":"2")"},
      {R"("mask_key_length":2)", R"("mask_key_length":3)"},
      {R"("mask_key_length":2,)", ""},
      {R"("idempotency_key":"k")", R"("idempotency_key":null)"},
      {R"("idempotency_key":"k")", R"("idempotency_key":7)"},
      {R"("cache_abi":"abi",)", R"("cache_abi":"other",)"},
      {R"("pending_payload_bytes":16)", R"("pending_payload_bytes":17)"},
      {R"("pending_payload_bytes":16)", R"("pending_payload_bytes":16,"zzz":1)"},
      {R"("pending_payload_bytes":16)", R"("pending_payload_bytes":16,"blocks":[1])"},
      {R"("pending_payload_bytes":16)", R"("pending_payload_bytes":16,"input_token":null)"},
      {R"("pending_payload_bytes":16)",
       R"("pending_payload_bytes":16,"draft_tokens":[1,2],"accepted_count":1)"},
      {R"("layer":0)", R"("layer":4294967296)"},
      {R"("layer":0)", R"("layer":1)"},
      {R"("layer":0)", R"("layer":-1)"},
      {R"("k":true,"v":true)", R"("k":true,"v":false)"},
      {R"("k":true,"v":true)", R"("k":1)"},
      {R"("k":true,"v":true)", R"("k":true,"k":true)"},
      {R"("k":true,"v":true)", R"("cache_abi":"other")"},
      {R"("layer":0,"interval":[0,2])", R"("layer":0,"interval":[0,3])"},
      {R"("committed_length":2)", R"("committed_length":3)"},
      {R"("committed_length":2)", R"("committed_length":null)"},
      {R"("committed_length":2)", R"("committed_length":"2")"},
      {R"("committed_length":2)", R"("committed_length":2,"committed_length":2)"},
      {R"("committed_length":2)", ""},
      {R"("from":"target_logits")", R"("from":"repair_logits")"},
      {R"("from":"target_logits")", R"("from":"elsewhere")"},
      {R"("from":"target_logits")", R"("from":null)"},
      {R"("token":7)", R"("token":-7)"},
      {R"("output_index":0)", R"("output_index":1)"},
      {R"("output_index":0,)", ""},
  };
  for (const auto& [from, to] : edits) {
    std::string t = base;
    size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    Violations fast = run(t, true, nullptr), general = run(t, false, nullptr);
    ASSERT_EQ(fast.size(), general.size()) << to << "\nfast: " << test::Describe(fast)
                                           << "\ngeneral: " << test::Describe(general);
    for (size_t i = 0; i < fast.size(); ++i) {
      EXPECT_EQ(fast[i].code, general[i].code) << to;
      EXPECT_EQ(fast[i].pointer, general[i].pointer) << to;
      EXPECT_EQ(fast[i].message, general[i].message) << to;
      EXPECT_EQ(fast[i].line, general[i].line) << to;
    }
  }
}

// Regression (probe 86, 2026-12-06): a request listed in expected_final_states and released
// more than released_window releases before the end was reported "never allocated or forked"
// (every trace of more than 4,096 releases failed the check it lists). Its final snapshot is kept
// when its tombstone is forgotten, and still judged.
TEST(TraceCheckerTest, RegressionAnExpectedFinalStateOfAForgottenRequestIsJudged) {
  for (const uint64_t want_length : {uint64_t{0}, uint64_t{1}}) {
    std::string header(kHeader);
    header.pop_back();
    header += R"(,"expected_final_states":[)";
    for (int r = 0; r < 3; ++r)
      header += std::string(r ? "," : "") + R"({"request_id":"R)" + std::to_string(r) +
                R"(","handle_generation":1,"snapshot":1,"committed_length":)" +
                std::to_string(r == 0 ? want_length : 0) + R"(,"phase":"RELEASED"})";
    header += "]}";
    TraceChecker c("gen.jsonl", CheckerOptions{.receipt_window = 0, .released_window = 1});
    c.Feed(header, 1);
    uint32_t line = 2;
    int seq = 0;
    for (int r = 0; r < 3; ++r) {
      const std::string id =
          R"("request_id":"R)" + std::to_string(r) + R"(","handle_generation":0,)";
      c.Feed(Ev(seq++, "request_allocate", id + R"("payload":{"prompt_length":0})"), line++);
      c.Feed(Ev(seq++, "cancel_request", id + R"("payload":{})"), line++);
      c.Feed(Ev(seq++, "release", id + R"("payload":{})"), line++);
    }
    ASSERT_EQ(c.kv().handle_count(), 1u);  // R0 and R1 forgotten
    const Violations& v = c.Finish(false);
    if (want_length == 0) {
      EXPECT_TRUE(v.empty()) << test::Describe(v);
    } else {
      EXPECT_TRUE(test::OnlyViolationAt(v, "TRACE_EXPECTED_RESULT_MISMATCH",
                                        "/0/expected_final_states/0/committed_length"))
          << test::Describe(v);
    }
  }
}

// Memory follows live requests: beyond released_window releases a request's tombstone is
// forgotten (an event naming it is then an unknown handle), within the window it still fences.
TEST(TraceCheckerTest, ReleasedRequestsBeyondTheWindowAreForgotten) {
  TraceChecker c("gen.jsonl", CheckerOptions{.receipt_window = 0, .released_window = 2});
  c.Feed(kHeader, 1);
  uint32_t line = 2;
  int seq = 0;
  auto ev = [&](const std::string& id, const std::string& type, const std::string& rest) {
    c.Feed(Ev(seq++, type, R"("request_id":")" + id + R"(","handle_generation":0,)" + rest),
           line++);
  };
  for (int r = 0; r < 3; ++r) {
    std::string id = "R" + std::to_string(r);
    ev(id, "request_allocate", R"("payload":{"prompt_length":0})");
    ev(id, "cancel_request", R"("payload":{})");
    ev(id, "release", R"("payload":{})");
  }
  EXPECT_EQ(c.kv().handle_count(), 2u);  // R1 and R2 remain as tombstones
  ev("R0", "output_emit", R"("payload":{"output_index":0,"token":1})");
  ev("R2", "output_emit", R"("payload":{"output_index":0,"token":1})");
  const Violations& v = c.Finish(false);
  EXPECT_EQ(test::CodeNames(v),
            (std::vector<std::string>{"LIFECYCLE_UNKNOWN_HANDLE", "LIFECYCLE_HANDLE_RELEASED"}))
      << test::Describe(v);
}

// Regression: a released request's receipts were pruned in batches every 64 releases, so whether
// a late retry of its append still got its receipt depended on how many unrelated requests had
// been released before it (a vendor's cold read of the docs found the verdict on a recycled id's
// reused operation id flip between 62 and 63 earlier releases). The window now counts from the
// request's own release; a retry after release gets the original receipt (M5.1 0x01).
TEST(TraceCheckerTest, RegressionReceiptWindowCountsFromTheRequestsOwnRelease) {
  constexpr size_t kWindow = 3;
  for (int before = 0; before < 5; ++before) {
    for (int after = 0; after < 6; ++after) {
      SCOPED_TRACE("releases before " + std::to_string(before) + ", after " +
                   std::to_string(after));
      std::string t = kHeader;  // (not kHeader + "\n": GCC 12 -Warray-bounds false positive)
      t += "\n";
      int seq = 0;
      auto ev = [&](const std::string& id, const std::string& type, const std::string& rest) {
        t +=
            Ev(seq++, type, R"("request_id":")" + id + R"(","handle_generation":0,)" + rest) + "\n";
      };
      auto start = [&](const std::string& id, const std::string& outcome) {
        ev(id, "append_start",
           R"("operation_id":")" + id + R"(.p","base_snapshot":0,)" + outcome +
               R"("payload":{"interval":[0,2],"cache_position":[0,2],"mask_key_length":2,)"
               R"("position_stage":"post_rope","purpose":"prefill"})");
      };
      auto publish = [&](const std::string& id, const std::string& outcome) {
        ev(id, "append_publish",
           R"("operation_id":")" + id + R"(.p","base_snapshot":0,"result_snapshot":1,)" + outcome +
               R"("payload":{"committed_length":2})");
      };
      auto cycle = [&](const std::string& id) {
        ev(id, "request_allocate", R"("payload":{"prompt_length":2})");
        start(id, "");
        ev(id, "append_stage_layer",
           R"("operation_id":")" + id + R"(.p","payload":{"layer":0,"interval":[0,2]})");
        publish(id, "");
        ev(id, "output_emit", R"("payload":{"output_index":0,"token":5})");
        ev(id, "finish", R"("payload":{})");
        ev(id, "release", R"("payload":{})");
      };
      for (int i = 0; i < before; ++i) cycle("B" + std::to_string(i));
      cycle("A");
      for (int i = 0; i < after; ++i) cycle("C" + std::to_string(i));
      start("A", R"("outcome":"replayed",)");  // the retry of A's released append
      publish("A", R"("outcome":"replayed",)");
      TraceChecker c("t.jsonl", CheckerOptions{.receipt_window = kWindow});
      uint32_t line = 1;
      for (size_t at = 0, end; (end = t.find('\n', at)) != std::string::npos; at = end + 1)
        c.Feed(std::string_view(t).substr(at, end - at), line++);
      const Violations& v = c.Finish(false);
      if (static_cast<size_t>(after) < kWindow) {
        EXPECT_TRUE(v.empty()) << test::Describe(v);
      } else {
        ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OUTCOME_INVALID"})
            << test::Describe(v);
        EXPECT_NE(v[0].message.find("receipts are no longer kept"), std::string::npos)
            << v[0].message;
      }
    }
  }
}

// Every declared source held a 32-event duplicate-delivery window (~2.4 KB) from the header on:
// a header of 80,000 short source declarations (4.7 MB) peaked at 214 MB (probe 8). A window is
// now allocated at the source's first kept event, and redeliveries are still recognized.
TEST(TraceCheckerTest, RegressionDeclaredSourcesHoldNoWindowUntilTheyEmit) {
  std::string header = kHeader;
  std::string more;
  for (int i = 0; i < 1000; ++i)
    more += R"(,{"source_instance":"s)" + std::to_string(i) + R"(","source_component":"semantic"})";
  header = Mutate(header, R"("source_component":"semantic"}])",
                  R"("source_component":"semantic"})" + more + "]");
  TraceChecker c("t.jsonl", CheckerOptions{});
  c.Feed(header, 1);
  EXPECT_EQ(c.source_windows(), 0u);
  c.Feed(Alloc(0), 2);
  c.Feed(Alloc(0), 3);  // a byte-equal redelivery: deduplicated
  EXPECT_EQ(c.source_windows(), 1u);
  const Violations& v = c.Finish(false);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

// A recycled request id (released, then allocated again under the next handle generation,
// before its receipt window ends) kept the records of every incarnation: a pool of recycled ids
// grew with the trace's length (probe 8: 440k events 44.9 MB, 1.76M events 139.6 MB). Each
// incarnation's receipts now end with its own release's window, whatever the id did since;
// and the open transactions of an incarnation end with its tombstone's window.
TEST(TraceCheckerTest, RegressionRecycledIdKeepsOnlyTheWindowsIncarnationsRecords) {
  constexpr size_t kWindow = 3, kReleased = 5, kIncarnations = 40;
  TraceChecker c("t.jsonl",
                 CheckerOptions{.receipt_window = kWindow, .released_window = kReleased});
  int seq = 0;
  uint32_t line = 1;
  c.Feed(kHeader, line++);
  auto ev = [&](int gen, const std::string& type, const std::string& rest) {
    c.Feed(Ev(seq++, type,
              R"("request_id":"A","handle_generation":)" + std::to_string(gen) + "," + rest),
           line++);
  };
  for (int gen = 0; gen < static_cast<int>(kIncarnations); ++gen) {
    const std::string op = R"("operation_id":"A.p)" + std::to_string(gen) + R"(",)";
    ev(gen, "request_allocate", R"("payload":{"prompt_length":2})");
    ev(gen, "append_start",
       op + R"("base_snapshot":0,"payload":{"interval":[0,2],"cache_position":[0,2],)"
            R"("mask_key_length":2,"position_stage":"post_rope","purpose":"prefill"})");
    ev(gen, "append_stage_layer", op + R"("payload":{"layer":0,"interval":[0,2]})");
    ev(gen, "append_publish",
       op + R"("base_snapshot":0,"result_snapshot":1,"payload":{"committed_length":2})");
    ev(gen, "output_emit", R"("payload":{"output_index":0,"token":5})");
    // An append left open at finish: its record stays on the tombstone until the id is
    // allocated again (a late completion may still be refused, the seed's ABA case); the last
    // incarnation's, never closed, is unterminated at the end (since 2026-12-05, probe 43: the
    // release ended open operations silently).
    ev(gen, "append_start",
       R"("operation_id":"A.q)" + std::to_string(gen) +
           R"(","base_snapshot":1,"payload":{"interval":[2,3],"cache_position":[2,3],)"
           R"("mask_key_length":3,"position_stage":"post_rope","purpose":"decode",)"
           R"("input_token":5})");
    ev(gen, "finish", R"("payload":{})");
    ev(gen, "release", R"("payload":{})");
    // The published receipt of each of the last kWindow incarnations and the open append of
    // the last kReleased; never the whole history.
    ASSERT_LE(c.transaction_records(), kWindow + kReleased) << "incarnation " << gen;
  }
  EXPECT_GE(c.transaction_records(), kWindow + kReleased) << "the windows' records are kept";
  const Violations& v = c.Finish(false);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OPERATION_UNTERMINATED"})
      << test::Describe(v);
}

}  // namespace
}  // namespace kvc::trace

namespace kvc::trace {
namespace {

// docs/schemas/trace-v1.schema.json lists exactly the event types of the dispatch table.
TEST(TraceSchemaTest, SchemaEventTypesMatchTheDispatchTable) {
  Json schema = test::LoadJson("docs/schemas/trace-v1.schema.json");
  std::set<std::string> in_schema, in_table;
  for (const auto& t : schema["$defs"]["event"]["properties"]["event_type"]["enum"])
    in_schema.insert(t.get<std::string>());
  for (const auto& spec : EventTypes()) in_table.insert(std::string(spec.name));
  EXPECT_EQ(in_schema, in_table);
}

// The schema's outcome enum of each event type is the dispatch table's outcome set (null, an
// absent outcome, standing for success).
TEST(TraceSchemaTest, SchemaOutcomesMatchTheDispatchTable) {
  Json schema = test::LoadJson("docs/schemas/trace-v1.schema.json");
  size_t compared = 0;
  for (const auto& rule : schema["$defs"]["event"]["allOf"]) {
    const std::string type = rule["if"]["properties"]["event_type"]["const"].get<std::string>();
    const EventTypeSpec* spec = FindEventType(type);
    ASSERT_NE(spec, nullptr) << type;
    ASSERT_TRUE(rule["then"]["properties"].contains("outcome")) << type;
    uint8_t in_schema = 0;
    for (const auto& o : rule["then"]["properties"]["outcome"]["enum"])
      in_schema |= o.is_null() ? uint8_t{kOutcomeSuccess} : OutcomeBitOf(o.get<std::string>());
    EXPECT_EQ(int{in_schema}, int{spec->outcomes}) << type;
    ++compared;
  }
  EXPECT_EQ(compared, EventTypes().size());
}

}  // namespace
}  // namespace kvc::trace

namespace kvc::trace {
namespace {

// The prefill of a 2-token prompt on request R (snapshot 0 -> 1, T = 2), after Alloc(0).
std::string PrefillLines() { return Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n"; }

// Probe 11 (2026-12-04): a retry (outcome replayed) of a released incarnation's append, with its
// original handle_generation, got its receipt only until the id was allocated again; then the
// handle generation fence raised TRACE_HANDLE_GENERATION_MISMATCH on the start and on the
// publication. M5.1 0x01: "an old receipt can still be returned after the live handle has
// advanced or been released"; the receipt is kept within the receipt window (docs "Memory").
TEST(TraceGatingTest, RegressionARetryOfAKeptReceiptPassesAfterTheIdIsAllocatedAgain) {
  const std::string head =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
      Ev(4, "output_emit",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
         R"("payload":{"output_index":0,"token":7})") +
      "\n" +
      Ev(5, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{})") +
      "\n" + Ev(6, "release", R"("request_id":"R","handle_generation":0,"payload":{})") + "\n" +
      Ev(7, "request_allocate",
         R"("request_id":"R","handle_generation":1,"payload":{"prompt_length":2})") +
      "\n";
  const std::string replayed = R"(,"outcome":"replayed"})";
  auto retry = [&](const std::string& start) {
    return head + Mutate(start, "}}", "}" + replayed) + "\n" +
           Mutate(Publish(9), "}}", "}" + replayed) + "\n";
  };
  EXPECT_EQ(Codes(retry(Start(8))), std::vector<std::string>{});
  // Another interval under the same operation id is a conflict, not a retry.
  EXPECT_EQ(Codes(retry(Mutate(Mutate(Mutate(Start(8), "[0,2]", "[0,1]"), "[0,2]", "[0,1]"),
                               R"("mask_key_length":2)", R"("mask_key_length":1)"))),
            std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"});
  // Not a retry (outcome success): a completion of the earlier incarnation, fenced.
  EXPECT_EQ(Codes(head + Start(8) + "\n"),
            std::vector<std::string>{"TRACE_HANDLE_GENERATION_MISMATCH"});
}

// Regression: an early finish used to stop before the lifecycle replay, so the release that
// followed was reported as LIFECYCLE_RELEASE_LIVE too (two codes for one root cause).
TEST(TraceGatingTest, EarlyFinishRaisesOneCodeAndTheReleaseStillReplays) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
                  Ev(4, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{})") +
                  "\n" +
                  Ev(5, "release", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"result_snapshot":2,"payload":{})") +
                  "\n";
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"SERVICE_PHASE_EARLY_FINISH"}));
}

// A refused request-level transition (here a growing truncate) leaves the request in a state
// the runtime did not report: its later events are not replayed, so one code is raised.
TEST(TraceGatingTest, RefusedTruncateSkipsTheRequestsLaterEvents) {
  const std::string emit =
      Ev(4, "output_emit", R"("request_id":"R","handle_generation":0,"payload":{"output_index":0,"token":7})");
  const std::string cut = Ev(5, "truncate", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"result_snapshot":2,"payload":{"new_length":3})");
  const std::string fin = Ev(6, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":2,"payload":{})");
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + emit + "\n" +
                  cut + "\n" + fin + "\n";
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"LIFECYCLE_TRUNCATE_GROWTH"}));
  // The legal truncate (to 1) replays the same finish without a violation.
  std::string ok = t;
  ok.replace(ok.find("\"new_length\":3"), 14, "\"new_length\":1");
  EXPECT_EQ(Codes(ok), (std::vector<std::string>{}));
}

// A read of request `id` that names snapshot `snapshot` and committed length `length`.
std::string Read(int seq, const std::string& id, int snapshot, int length) {
  return Ev(seq, "read",
            R"("request_id":")" + id + R"(","handle_generation":0,"base_snapshot":)" +
                std::to_string(snapshot) + R"(,"payload":{"committed_length":)" +
                std::to_string(length) + "}");
}

// Header, Alloc(0), the prefill's start, stage and publish (PrefillLines() with the start and
// the stage passed in, so that a test can mutate them), then `after` (whole lines, each ending
// in a newline).
std::string PrefillTrace(const std::string& start, const std::string& stage,
                         const std::string& after) {
  return std::string(kHeader) + "\n" + Alloc(0) + "\n" + start + "\n" + stage + "\n" +
         Publish(3) + "\n" + after;
}

// Regression: a refused append_start gated its operation only, so every later event of the
// request was judged against the snapshot the refused append never produced (a read of
// snapshot 1 raised two TRACE_SNAPSHOT_MISMATCH).
TEST(TraceGatingTest, RegressionRefusedAppendGatesItsRequest) {
  const std::string t = PrefillTrace(Mutate(Start(1), "post_rope", "pre_rope"), Stage(2),
                                     Read(4, "R", 1, 2) + "\n");
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"LIFECYCLE_POSITION_STAGE_MISMATCH"}));
}

// Regression: an append_start whose event_type was misspelled raised TRACE_SEQUENCE_GAP on the
// next line (it took no place in its source's sequence) and LIFECYCLE_TXN_UNKNOWN for its
// layers and publication.
TEST(TraceGatingTest, RegressionUnknownEventTypeRaisesOneCode) {
  const std::string t = PrefillTrace(Mutate(Start(1), "append_start", "append_strat"), Stage(2),
                                     Read(4, "R", 1, 2) + "\n");
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"TRACE_EVENT_TYPE_UNKNOWN"}));
}

// Regression: an append_start dropped for its envelope (an unknown member) gated nothing, so its
// layers and publication raised LIFECYCLE_TXN_UNKNOWN.
TEST(TraceGatingTest, RegressionUnusableEnvelopeRaisesOneCode) {
  const std::string t =
      PrefillTrace(Mutate(Start(1), R"("operation_id")", R"("bogus":1,"operation_id")"), Stage(2),
                   Read(4, "R", 1, 2) + "\n");
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"INPUT_FIELD_UNKNOWN"}));
}

// Regression: a stage whose payload could not be read was dropped without gating, so the
// publication raised LIFECYCLE_LAYER_INCOMPLETE and the read TRACE_SNAPSHOT_MISMATCH.
TEST(TraceGatingTest, RegressionUnreadablePayloadRaisesOneCode) {
  const std::string read = Read(4, "R", 1, 2) + "\n";
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"("layer":0)", R"("layer":"0")"), read)),
            (std::vector<std::string>{"INPUT_FIELD_TYPE"}));
  // A payload that is not an object at all: the same.
  EXPECT_EQ(
      Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"({"layer":0,"interval":[0,2]})", "[]"), read)),
      (std::vector<std::string>{"INPUT_FIELD_TYPE"}));
}

// A fork of a gated request is not replayed, so its children are gated with it: their events
// do not raise LIFECYCLE_UNKNOWN_HANDLE.
TEST(TraceGatingTest, ForkOfAGatedRequestGatesItsChildren) {
  const std::string fork =
      Ev(4, "fork", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                    R"("payload":{"prefix_length":2,"children":[{"request_id":"C"}]})");
  const std::string t = PrefillTrace(Mutate(Start(1), "post_rope", "pre_rope"), Stage(2),
                                     fork + "\n" + Read(5, "C", 0, 2) + "\n");
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"LIFECYCLE_POSITION_STAGE_MISMATCH"}));
  // Without the refusal the same fork and read replay cleanly.
  const std::string ok = PrefillTrace(Start(1), Stage(2), fork + "\n" + Read(5, "C", 0, 2) + "\n");
  EXPECT_EQ(Codes(ok), (std::vector<std::string>{}));
}

// Regression (gating sweep, 2026-12-02): a retry's position binding was not judged (the
// fingerprint that matches a retry does not cover it), so a retry with another key-side mask
// length passed.
TEST(TraceGatingTest, RegressionRetryWithAnotherMaskLengthIsRefused) {
  const std::string read = Read(5, "R", 1, 2) + "\n";
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), Start(4) + "\n" + read)),
            (std::vector<std::string>{}));
  const std::string retry = Mutate(Start(4), R"("mask_key_length":2)", R"("mask_key_length":3)");
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), retry + "\n" + read)),
            (std::vector<std::string>{"LIFECYCLE_MASK_LENGTH_MISMATCH"}));
}

// Regression: a fork dropped for its envelope gated its request only, so its children's events
// raised LIFECYCLE_UNKNOWN_HANDLE.
TEST(TraceGatingTest, RegressionForkDroppedForItsEnvelopeGatesItsChildren) {
  const std::string fork =
      Ev(4, "fork", R"("bogus":1,"request_id":"R","handle_generation":0,"base_snapshot":1,)"
                    R"("payload":{"prefix_length":2,"children":[{"request_id":"C"}]})");
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), fork + "\n" + Read(5, "C", 0, 2) + "\n")),
            (std::vector<std::string>{"INPUT_FIELD_UNKNOWN"}));
}

// A fork whose children cannot be read gates the requests that do not exist yet (whichever it
// meant to create); the requests that exist are still checked.
TEST(TraceGatingTest, ForkWithUnreadableChildrenGatesRequestsNotYetCreated) {
  const std::string alloc_s =
      Ev(4, "request_allocate", R"("request_id":"S","handle_generation":0,"payload":{"prompt_length":2})");
  const std::string fork =
      Ev(5, "fork", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                    R"("payload":{"prefix_length":2,"children":[{"request_id":5}]})");
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2),
                               alloc_s + "\n" + fork + "\n" + Read(6, "C", 0, 2) + "\n" +
                                   Read(7, "S", 1, 0) + "\n")),
            (std::vector<std::string>{"INPUT_FIELD_TYPE", "TRACE_SNAPSHOT_MISMATCH"}));
}

// Gating is per request: a refusal on R does not hide a violation of another request S.
TEST(TraceGatingTest, GatingOneRequestStillChecksTheOthers) {
  const std::string alloc_s =
      Ev(4, "request_allocate", R"("request_id":"S","handle_generation":0,"payload":{"prompt_length":2})");
  const std::string t = PrefillTrace(Mutate(Start(1), "post_rope", "pre_rope"), Stage(2),
                                     alloc_s + "\n" + Read(5, "S", 1, 0) + "\n");
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"LIFECYCLE_POSITION_STAGE_MISMATCH",
                                                "TRACE_SNAPSHOT_MISMATCH"}));
}

// Regression (gating sweep, 2026-12-03): the base_snapshot of an event that closes a
// transaction without publishing it (append_failure, cancel_txn, a refused append_publish) went
// unchecked. It names the snapshot the transaction's append_start read.
TEST(TraceGatingTest, RegressionClosingEventsNameTheirTransactionsBase) {
  // "q" starts on snapshot 0 beside "p"; p publishes snapshot 1 first.
  const std::string start_q = Mutate(Start(2), R"("operation_id":"p")", R"("operation_id":"q")");
  const std::string stage_q = Mutate(Stage(5), R"("operation_id":"p")", R"("operation_id":"q")");
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           start_q + "\n" + Stage(3) + "\n" + Publish(4) + "\n" + stage_q + "\n";
  const std::string lost =
      Ev(6, "append_publish", R"("request_id":"R","handle_generation":0,"operation_id":"q",)"
                              R"("base_snapshot":0,"outcome":"rejected","payload":{})");
  const std::string failure =
      Ev(6, "append_failure", R"("request_id":"R","handle_generation":0,"operation_id":"q",)"
                              R"("base_snapshot":0,"outcome":"failure","payload":{})");
  const std::string cancel =
      Ev(6, "cancel_txn", R"("request_id":"R","handle_generation":0,"operation_id":"q",)"
                          R"("base_snapshot":0,"payload":{})");
  for (const std::string& closing : {lost, failure, cancel}) {
    SCOPED_TRACE(closing);
    EXPECT_EQ(Codes(head + closing + "\n"), (std::vector<std::string>{}));
    EXPECT_EQ(Codes(head + Mutate(closing, R"("base_snapshot":0)", R"("base_snapshot":1)") + "\n"),
              (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
  }
}

// A refused operation may name a stale base (why it was refused) but not a snapshot its
// handle has not reached (regression, gating sweep 2026-12-03: a refused release naming a later
// snapshot passed, since the refusal was expected either way).
TEST(TraceGatingTest, RefusedOperationMayNameAStaleBaseButNotALaterOne) {
  // R is live at snapshot 1 (not finished), so its release is refused whatever the base.
  auto release = [](int base) {
    return Ev(4, "release", R"("request_id":"R","handle_generation":0,"base_snapshot":)" +
                                std::to_string(base) + R"(,"outcome":"rejected","payload":{})") +
           "\n";
  };
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), release(0))), (std::vector<std::string>{}));
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), release(1))), (std::vector<std::string>{}));
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), release(2))),
            (std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"}));
}

// Each event type admits a fixed set of outcomes (EventTypeSpec::outcomes); another is
// TRACE_OUTCOME_INVALID and the event is dropped, so its operation's later events raise nothing
// more. (Regression, gating sweep 2026-12-03: a stage reported "failure" was replayed as a
// success, and an observation's outcome was ignored.)
TEST(TraceGatingTest, RegressionOutcomeOutsideTheTypesSetIsRefusedAndGated) {
  const std::string read = Read(4, "R", 1, 2) + "\n";
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"("payload")", R"("outcome":"failure","payload")"), read)),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"("payload")", R"("outcome":"cancelled","payload")"), read)),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
  // Every type admits success; only a retried start may say replayed.
  for (const EventTypeSpec& spec : EventTypes())
    EXPECT_TRUE((spec.outcomes & kOutcomeSuccess) || spec.name == "append_failure") << spec.name;
  EXPECT_FALSE(FindEventType("append_failure")->outcomes & kOutcomeSuccess);
  EXPECT_EQ(Codes(PrefillTrace(Mutate(Start(1), R"("payload")", R"("outcome":"replayed","payload")"), Stage(2), read)),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
  const std::string retry = Mutate(Start(4), R"("payload")", R"("outcome":"replayed","payload")");
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Stage(2), retry + "\n" + Read(5, "R", 1, 2) + "\n")),
            (std::vector<std::string>{}));
}

// A legal stage reported rejected and a stage under a stale handle generation are each one
// code: the operation they belong to is gated (regression: the publication raised
// LIFECYCLE_LAYER_INCOMPLETE too).
TEST(TraceGatingTest, RegressionRefusedOrFencedStageGatesItsOperation) {
  const std::string read = Read(4, "R", 1, 2) + "\n";
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"("payload")", R"("outcome":"rejected","payload")"), read)),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
  EXPECT_EQ(Codes(PrefillTrace(Start(1), Mutate(Stage(2), R"("handle_generation":0)", R"("handle_generation":1)"), read)),
            (std::vector<std::string>{"TRACE_HANDLE_GENERATION_MISMATCH"}));
  // A legal publication reported rejected: its outcome is the one code (its result_snapshot
  // is not judged as well; it raised TRACE_OUTCOME_INVALID twice before 2026-12-03).
  const std::string refused_publish =
      Mutate(Publish(3), R"("payload")", R"("outcome":"rejected","payload")");
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
                  refused_publish + "\n" + read),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID"}));
}

// An event aimed at an older incarnation (a stale completion after the id was recycled) is
// skipped without gating the live one, whose violations are still reported.
TEST(TraceGatingTest, StaleIncarnationEventDoesNotGateTheLiveOne) {
  const std::string fin = Ev(4, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{})");
  const std::string emit0 = Ev(4, "output_emit", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                                 R"("payload":{"output_index":0,"token":7})");
  const std::string rel = Ev(6, "release", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                           R"("result_snapshot":2,"payload":{})");
  const std::string realloc =
      Ev(7, "request_allocate", R"("request_id":"R","handle_generation":1,"payload":{"prompt_length":2})");
  const std::string stale = Ev(8, "read", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                          R"("payload":{"committed_length":2})");
  const std::string wrong = Ev(9, "read", R"("request_id":"R","handle_generation":1,"base_snapshot":0,)"
                                          R"("payload":{"committed_length":5})");
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + emit0 + "\n" +
                        Mutate(Mutate(fin, R"("event_id":"e4")", R"("event_id":"e5")"),
                               R"("local_sequence":4,"monotonic_ns":104)", R"("local_sequence":5,"monotonic_ns":105)") +
                        "\n" + rel + "\n" + realloc + "\n" + stale + "\n" + wrong + "\n";
  EXPECT_EQ(Codes(t), (std::vector<std::string>{"TRACE_HANDLE_GENERATION_MISMATCH", "TRACE_SNAPSHOT_MISMATCH"}));
  // Generation 0 below R's first generation (R allocated at 1): an incarnation that never
  // existed, so the event mislabels the live one and gates it (regression, gating sweep
  // 2026-12-03: the Loop 8 allocation at generation 8 made each later event of R raise a code).
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Mutate(Alloc(0), R"("handle_generation":0)", R"("handle_generation":1)") +
                  "\n" + PrefillLines()),
            (std::vector<std::string>{"TRACE_HANDLE_GENERATION_MISMATCH"}));
}

// Regression (nested-field sweep, 2026-12-03): an append whose interval end is one too far
// breaks its position binding and its row count; the output frontier judged it before the
// lifecycle object, so it raised FRONTIER_CACHE_OVERCOMMIT and LIFECYCLE_POSITION_MISMATCH.
TEST(TraceGatingTest, RegressionAppendRefusedByTheLifecycleIsNotJudgedByTheFrontier) {
  const std::string emit0 = Ev(4, "output_emit", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                                 R"("payload":{"output_index":0,"token":7})");
  const std::string decode =
      Ev(5, "append_start", R"("request_id":"R","handle_generation":0,"operation_id":"d","base_snapshot":1,)"
                            R"("payload":{"interval":[2,4],"cache_position":[2,3],"mask_key_length":3,)"
                            R"("position_stage":"post_rope","purpose":"decode","input_token":7})");
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + emit0 + "\n" + decode + "\n"),
            (std::vector<std::string>{"LIFECYCLE_POSITION_MISMATCH"}));
}

// An event of an append operation names the request whose append_start opened it (regression,
// gating sweep 2026-12-03: a stage naming another request, or none that exists, passed).
TEST(TraceGatingTest, RegressionOperationEventNamingAnotherRequest) {
  const std::string alloc_s =
      Ev(1, "request_allocate", R"("request_id":"S","handle_generation":0,"payload":{"prompt_length":2})");
  // R allocates (seq 0), S allocates (seq 1), then R's prefill "p" (start, stage, publish) with
  // its stage naming `stage_request`.
  auto trace = [&](const std::string& stage_request) {
    const std::string start = Start(2);
    const std::string stage =
        Mutate(Stage(3), R"("request_id":"R")", R"("request_id":")" + stage_request + "\"");
    return std::string(kHeader) + "\n" + Alloc(0) + "\n" + alloc_s + "\n" + start + "\n" + stage +
           "\n" + Publish(4) + "\n";
  };
  EXPECT_EQ(Codes(trace("R")), (std::vector<std::string>{}));
  EXPECT_EQ(Codes(trace("S")), (std::vector<std::string>{"TRACE_OPERATION_REQUEST_MISMATCH"}));
  EXPECT_EQ(Codes(trace("Q")), (std::vector<std::string>{"LIFECYCLE_UNKNOWN_HANDLE"}));
}

// Regression (duplicate-delivery sweep, 2026-12-03): an event numbered before its source's window
// that is not a known redelivery was replayed. Here R's allocation and prefill start are
// delivered again after R's release and beyond the source window (32 events), when the checker
// no longer holds R's events: LIFECYCLE_HANDLE_EXISTS or LIFECYCLE_RETRY_CONFLICT followed the
// regression.
TEST(TraceGatingTest, RegressionLateRedeliveryIsNotReplayed) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
                  Ev(4, "output_emit", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                       R"("payload":{"output_index":0,"token":7})") + "\n" +
                  Ev(5, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{})") +
                  "\n" +
                  Ev(6, "release", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                                   R"("result_snapshot":2,"payload":{})") + "\n" +
                  Ev(7, "request_allocate", R"("request_id":"S","handle_generation":0,"payload":{"prompt_length":2})") +
                  "\n";
  for (int seq = 8; seq < 48; ++seq) t += Read(seq, "S", 0, 0) + "\n";
  EXPECT_EQ(Codes(t), (std::vector<std::string>{}));
  EXPECT_EQ(Codes(t + Alloc(0) + "\n"), (std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"}));
  EXPECT_EQ(Codes(t + Start(1) + "\n"), (std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"}));
  // Within the window the same redelivery is recognized byte for byte and raises nothing.
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + Alloc(0) + "\n"),
            (std::vector<std::string>{}));
  // A new event numbered back within the window (the stage numbered 1, like the start) is
  // replayed: its publication does not raise LIFECYCLE_LAYER_INCOMPLETE.
  const std::string misnumbered =
      Mutate(Mutate(Stage(2), R"("event_id":"e2")", R"("event_id":"e2x")"), R"("local_sequence":2)",
             R"("local_sequence":1)");
  // One event numbered too low: one code (the hole of one its true number leaves before the
  // next event was a second code, TRACE_SEQUENCE_GAP, until 2026-12-04).
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + misnumbered +
                  "\n" + Publish(3) + "\n"),
            (std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"}));
}

// Regression (an adversarial probe, 2026-12-04): one event's local_sequence + 1 raised a gap at
// it and a regression at the next event, numbered right. One mis-numbered event is one code.
// Events delivered in swapped order (the later number first) stay a gap and a regression, as
// documented: the second event is the one the gap missed.
TEST(TraceGatingTest, RegressionOneMisnumberedEventIsOneCode) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n";
  auto renumbered = [](const std::string& line, int from, int to) {
    return Mutate(line, R"("local_sequence":)" + std::to_string(from),
                  R"("local_sequence":)" + std::to_string(to));
  };
  for (int high : {3, 4}) {
    const Violations v = ValidateTraceJsonl(
        head + renumbered(Stage(2), 2, high) + "\n" + Publish(3) + "\n", "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SEQUENCE_GAP"}) << high;
    EXPECT_EQ(v.size(), 1u) << test::Describe(v);
    EXPECT_EQ(v[0].line, 4u);
  }
  // The source goes on from the event numbered right: a later gap is still a gap.
  EXPECT_EQ(Codes(head + renumbered(Stage(2), 2, 3) + "\n" + Publish(3) + "\n" +
                  Read(5, "R", 1, 2) + "\n"),
            (std::vector<std::string>{"TRACE_SEQUENCE_GAP"}));
  const Violations twice = ValidateTraceJsonl(
      head + renumbered(Stage(2), 2, 3) + "\n" + Publish(3) + "\n" + Read(5, "R", 1, 2) + "\n",
      "t.jsonl");
  EXPECT_EQ(twice.size(), 2u) << test::Describe(twice);
  // Swapped delivery: the stage (2) after the publication (3).
  EXPECT_EQ(Codes(head + Publish(3) + "\n" + Stage(2) + "\n"),
            (std::vector<std::string>{"TRACE_SEQUENCE_GAP", "LIFECYCLE_LAYER_INCOMPLETE",
                                      "TRACE_SEQUENCE_REGRESSION"}));
}

// Regression (a vendor's probe, 2026-12-04): a worker restarted within its source's first 32
// events (numbering from 0 again) raised TRACE_SEQUENCE_REGRESSION at every event until its
// numbering passed the old one; a restart after 32 events was one code. A restart is one
// regression wherever it happens: the next event continuing the new number is followed.
TEST(TraceGatingTest, RegressionASourceRestartedEarlyIsOneRegression) {
  auto fresh = [](std::string line, int seq) {  // the restarted worker's events: new ids
    return Mutate(std::move(line), "\"event_id\":\"e" + std::to_string(seq) + "\"",
                  "\"event_id\":\"x" + std::to_string(seq) + "\"");
  };
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                        "\n" + Publish(3) + "\n" + Read(4, "R", 1, 2) + "\n" + Read(5, "R", 1, 2) +
                        "\n" + fresh(Read(0, "R", 1, 2), 0) + "\n" + fresh(Read(1, "R", 1, 2), 1) +
                        "\n" + fresh(Read(2, "R", 1, 2), 2) + "\n";
  const Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"});
  EXPECT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].line, 8u);
  // A later hole in the new numbering is still a gap.
  EXPECT_EQ(Codes(t + fresh(Read(4, "R", 1, 2), 4) + "\n"),
            (std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION", "TRACE_SEQUENCE_GAP"}));
}

// Regression (an adversarial probe, 2026-12-04): gates were keyed by a bare operation id next
// to "request:" + a request id, so a dropped event whose operation_id was "request:R" gated
// request R, and R's own violations were lost.
TEST(TraceGatingTest, RegressionAnOperationIdNamedLikeARequestGateGatesOnlyItsOperation) {
  const std::string dropped =
      Ev(1, "append_start",
         R"("request_id":"X","handle_generation":0,"operation_id":"request:R","base_snapshot":0,)"
         R"("outcome":"cancelled","payload":{"interval":[0,2],"cache_position":[0,2],)"
         R"("mask_key_length":2,"position_stage":"post_rope","purpose":"prefill"})");
  const std::string t = std::string(kHeader) + "\n" + Mutate(Alloc(0), "\"R\"", "\"X\"") + "\n" +
                        dropped + "\n" + Alloc(2) + "\n" +
                        Mutate(Start(3), "\"base_snapshot\":0", "\"base_snapshot\":5") + "\n";
  EXPECT_EQ(Codes(t),
            (std::vector<std::string>{"TRACE_OUTCOME_INVALID", "LIFECYCLE_UNKNOWN_SNAPSHOT"}));
}

// Regression (a vendor's probe, 2026-12-04): a fork child declared at a handle generation other
// than 0 was TRACE_SNAPSHOT_MISMATCH at the fork, then TRACE_HANDLE_GENERATION_MISMATCH at each
// of the child's events naming the generation the runtime gave it (one root cause, two codes).
TEST(TraceGatingTest, RegressionAForkChildsWrongGenerationIsOneCode) {
  const std::string fork =
      Ev(4, "fork",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
         R"("payload":{"prefix_length":2,"children":[{"request_id":"C","handle_generation":7}]})");
  const std::string t =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
      Publish(3) + "\n" + fork + "\n" +
      Mutate(Read(5, "C", 0, 2), "\"handle_generation\":0", "\"handle_generation\":7") + "\n";
  const Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
  EXPECT_EQ(v.size(), 1u) << test::Describe(v);
  // The parent is judged as before: a read of a length it does not have is a second violation.
  const Violations parent = ValidateTraceJsonl(t + Read(6, "R", 1, 3) + "\n", "t.jsonl");
  ASSERT_EQ(parent.size(), 2u) << test::Describe(parent);
  EXPECT_EQ(parent[1].line, 8u);
}

// Regression (gating sweep, 2026-12-03): a retry's input_token was not compared with the
// original's. A retry of the request's latest publication, or of an operation still open, claims
// the token the original processed; a retry that states none is not compared.
TEST(TraceGatingTest, RegressionRetryClaimsTheOriginalsToken) {
  const std::string emit =
      Ev(4, "output_emit", R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                           R"("payload":{"output_index":0,"token":7})");
  auto decode = [](int seq, const std::string& token) {
    return Ev(seq, "append_start",
              R"("request_id":"R","handle_generation":0,"operation_id":"d","base_snapshot":1,)"
              R"("payload":{"interval":[2,3],"cache_position":[2,3],"mask_key_length":3,)"
              R"("position_stage":"post_rope","purpose":"decode")" +
                  (token.empty() ? "" : R"(,"input_token":)" + token) + "}") +
           "\n";
  };
  const std::string stage = Ev(6, "append_stage_layer",
                               R"("request_id":"R","handle_generation":0,"operation_id":"d",)"
                               R"("payload":{"layer":0,"interval":[2,3]})") + "\n";
  const std::string publish = Ev(7, "append_publish",
                                 R"("request_id":"R","handle_generation":0,"operation_id":"d",)"
                                 R"("base_snapshot":1,"result_snapshot":2,"payload":{})") + "\n";
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + emit +
                           "\n" + decode(5, "7");
  using V = std::vector<std::string>;
  // Retried while open (then staged and published), and after its publication.
  const std::string late_stage_publish =
      Mutate(Mutate(stage, R"("event_id":"e6")", R"("event_id":"e7")"), R"("local_sequence":6,"monotonic_ns":106)",
             R"("local_sequence":7,"monotonic_ns":107)") +
      Mutate(Mutate(publish, R"("event_id":"e7")", R"("event_id":"e8")"), R"("local_sequence":7,"monotonic_ns":107)",
             R"("local_sequence":8,"monotonic_ns":108)");
  EXPECT_EQ(Codes(head + decode(6, "7") + late_stage_publish), V{});
  EXPECT_EQ(Codes(head + decode(6, "8") + late_stage_publish), V{"FRONTIER_TOKEN_MISMATCH"});
  EXPECT_EQ(Codes(head + stage + publish + decode(8, "7")), V{});
  EXPECT_EQ(Codes(head + stage + publish + decode(8, "8")), V{"FRONTIER_TOKEN_MISMATCH"});
  EXPECT_EQ(Codes(head + stage + publish + decode(8, "")), V{});
}

// Regressions (event-order sweep, 2026-12-03: each pair of adjacent events emitted in the other
// order). An event that names a request before its request_allocate, or a fork child before the
// fork, raised LIFECYCLE_UNKNOWN_HANDLE and was skipped without gating: the allocation then
// created the request and each later event raised a code of its own (4 to 7 codes). It is now
// dropped: the request id is gated, its allocation included.
TEST(TraceGatingTest, RegressionEventBeforeItsRequestsAllocationRaisesOneCode) {
  using V = std::vector<std::string>;
  const std::string emit = Ev(4, "output_emit",
                              R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                              R"("payload":{"output_index":0,"token":7})") +
                           "\n";
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + emit), V{});
  // The prefill's append_start emitted before the allocation (sequence numbers follow the new
  // order).
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Start(0) + "\n" + Alloc(1) + "\n" + Stage(2) +
                  "\n" + Publish(3) + "\n" + emit),
            V{"LIFECYCLE_UNKNOWN_HANDLE"});
  // A fork child truncated before the fork that creates it: the child is gated, the parent is
  // still checked (its read below is judged).
  const std::string fork = Ev(5, "fork",
                              R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                              R"("payload":{"prefix_length":2,"children":[{"request_id":"C"}]})") +
                           "\n";
  const std::string cut = Ev(4, "truncate",
                             R"("request_id":"C","handle_generation":0,)"
                             R"("base_snapshot":0,"result_snapshot":1,)"
                             R"("payload":{"new_length":1})") +
                          "\n";
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines();
  EXPECT_EQ(Codes(head + cut + fork + Read(6, "C", 1, 1) + "\n" + Read(7, "R", 1, 2) + "\n"),
            V{"LIFECYCLE_UNKNOWN_HANDLE"});
  EXPECT_EQ(Codes(head + cut + fork + Read(6, "C", 1, 1) + "\n" + Read(7, "R", 1, 3) + "\n"),
            (V{"LIFECYCLE_UNKNOWN_HANDLE", "TRACE_SNAPSHOT_MISMATCH"}));
  // A fork of a request that does not exist creates no children: theirs are gated too.
  const std::string orphan_fork =
      Ev(4, "fork",
         R"("request_id":"Q","handle_generation":0,"base_snapshot":1,)"
         R"("payload":{"prefix_length":2,"children":[{"request_id":"C"}]})") +
      "\n";
  EXPECT_EQ(Codes(head + orphan_fork + Read(5, "C", 0, 2) + "\n"), V{"LIFECYCLE_UNKNOWN_HANDLE"});
  // Reported rejected, an operation on a request that does not exist is the refusal the contract
  // expects (as a read's is): no violation, unless it names an expected base, a snapshot the
  // request never reached (probe 27: any base passed; a refused read naming one did not).
  const std::string refused_orphan_fork =
      Mutate(orphan_fork, R"("payload")", R"("outcome":"rejected","payload")");
  EXPECT_EQ(Codes(head + Mutate(refused_orphan_fork, R"("base_snapshot":1,)", "")), V{});
  EXPECT_EQ(Codes(head + refused_orphan_fork), V{"TRACE_SNAPSHOT_MISMATCH"});
  for (const char* type : {"truncate", "finish", "release", "cancel_request"}) {
    const std::string payload =
        std::string(type) == "truncate" ? R"({"new_length":0})" : std::string("{}");
    const std::string refused = Ev(4, type,
                                   R"("request_id":"Q","handle_generation":0,)"
                                   R"("outcome":"rejected","payload":)" +
                                       payload) +
                                "\n";
    EXPECT_EQ(Codes(head + refused), V{}) << type;
    EXPECT_EQ(Codes(head + Mutate(refused, R"("outcome")", R"("base_snapshot":0,"outcome")")),
              V{"TRACE_SNAPSHOT_MISMATCH"})
        << type;
  }
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" +
                  Mutate(Start(0), R"("payload")", R"("outcome":"rejected","payload")") + "\n"),
            V{});
}

// Regression (event-order sweep, 2026-12-03): an output emitted before the publication that
// produced its logits raised TRACE_SNAPSHOT_MISMATCH (its base_snapshot named the snapshot not
// yet published) and the frontier's FRONTIER_OUTPUT_BEFORE_LOGITS. The frontier judges first;
// an output it refuses is not judged on its snapshot claim as well. An output whose snapshot
// claim alone is wrong stops the request's frontier checks (the runtime's frontier is unknown).
TEST(TraceGatingTest, RegressionOutputBeforeItsPublicationRaisesOneCode) {
  using V = std::vector<std::string>;
  auto emit = [](int seq, int snapshot, int index, int token) {
    return Ev(seq, "output_emit",
              R"("request_id":"R","handle_generation":0,"base_snapshot":)" +
                  std::to_string(snapshot) + R"(,"payload":{"output_index":)" +
                  std::to_string(index) + R"(,"token":)" + std::to_string(token) + "}") +
           "\n";
  };
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  EXPECT_EQ(Codes(head + PrefillLines() + emit(4, 1, 0, 7)), V{});
  EXPECT_EQ(Codes(head + Start(1) + "\n" + Stage(2) + "\n" + emit(3, 1, 0, 7) + Publish(4) + "\n"),
            V{"FRONTIER_OUTPUT_BEFORE_LOGITS"});
  // A wrong snapshot claim on an output the frontier admits: one code, and the frontier stops
  // following the request (the skipped output index 1 is not judged).
  EXPECT_EQ(Codes(head + PrefillLines() + emit(4, 2, 0, 7) + emit(5, 1, 2, 8)),
            V{"TRACE_SNAPSHOT_MISMATCH"});
  EXPECT_EQ(Codes(head + PrefillLines() + emit(4, 1, 0, 7) + emit(5, 1, 2, 8)),
            V{"FRONTIER_OUTPUT_INDEX_GAP"});
}

// Regression: a fork was indexed only under its parent, so a child's residency observation
// naming the fork as its cause raised TRACE_CAUSE_UNKNOWN and gated the child (found by a
// vendor's cold read of the docs: "held storage follows allocate, publish, fork or truncate").
TEST(TraceCheckerTest, RegressionForkIsTheCauseOfItsChildrensStorage) {
  const std::string t = std::string(kHeaderWithResidency) + "\n" + Alloc(0) + "\n" + Start(1) +
                        "\n" + Stage(2) + "\n" + Publish(3) + "\n" +
                        Ev(4, "fork",
                           R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
                           R"("result_snapshot":0,"payload":{"prefix_length":1,)"
                           R"("children":[{"request_id":"C"}]})") +
                        "\n";
  auto child = [](uint64_t bytes, int generation) {
    return Mutate(Residency("e4", bytes, generation), R"("request_id":"R")", R"("request_id":"C")");
  };
  using V = std::vector<std::string>;
  EXPECT_TRUE(Codes(t + child(16, 0) + "\n").empty());  // the child's prefix: 1 row x 16 B
  EXPECT_EQ(Codes(t + child(32, 0) + "\n"), V{"TRACE_OBSERVATION_INCONSISTENT"});
  EXPECT_EQ(Codes(t + child(16, 1) + "\n"), V{"TRACE_HANDLE_GENERATION_MISMATCH"});
  EXPECT_TRUE(Codes(t + Residency("e4", 32) + "\n").empty());  // the parent keeps its 2 rows
}

// An allocator observation (source "a", sequence 0) of request "R": `blocks` blocks of 4 slots,
// `used` of them used, caused by event `cause`.
std::string Allocator(const std::string& cause, int blocks, int used) {
  return R"({"event_id":"a0","source_instance":"a","source_component":"allocator",)"
         R"("local_sequence":0,"monotonic_ns":1,"event_type":"allocator_observation",)"
         R"("request_id":"R","handle_generation":0,"payload":{"caused_by_event_id":")" +
         cause + R"(","blocks":)" + std::to_string(blocks) + R"(,"slots":)" +
         std::to_string(4 * blocks) + R"(,"used_slots":)" + std::to_string(used) + "}}";
}

// kHeader with a second source, "a", on the allocator plane.
std::string HeaderWithAllocator() {
  return Mutate(
      kHeader, R"("source_component":"semantic"})",
      R"("source_component":"semantic"},{"source_instance":"a","source_component":"allocator"})");
}

// HeaderWithAllocator(), then request "R" allocated and its 2-row prefill published (events
// e0..e3, one line each).
std::string PublishedWithAllocator() {
  return HeaderWithAllocator() + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
         Publish(3) + "\n";
}

// Regression (a vendor's cold read, noticed 2026-12-03): an allocator that reserves nothing
// until prefill reported an all-zero observation caused by request_allocate and got
// TRACE_CAUSE_WRONG_EVENT ("only release closes ownership (finish is not a physical free)").
// Arrival creates no K/V (M5.1 0x02), so nothing held after request_allocate is admitted; after
// a publication it is still the wrong cause, and the message names finish only for finish.
TEST(TraceCheckerTest, RegressionNothingHeldAfterArrivalIsAdmitted) {
  const std::string t = HeaderWithAllocator() + "\n" + Alloc(0) + "\n";
  const std::string published = PublishedWithAllocator();
  using V = std::vector<std::string>;
  EXPECT_EQ(Codes(t + Allocator("e0", 0, 0) + "\n"), V{});
  EXPECT_EQ(Codes(t + Allocator("e0", 1, 0) + "\n"), V{});  // reserved at arrival
  EXPECT_EQ(Codes(published + Allocator("e3", 1, 2) + "\n"), V{});
  const Violations v = ValidateTraceJsonl(published + Allocator("e3", 0, 0) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), V{"TRACE_CAUSE_WRONG_EVENT"});
  EXPECT_EQ(v[0].message.find("finish"), std::string::npos) << v[0].message;
  const std::string finished =
      published +
      Ev(4, "output_emit",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{"output_index":0,"token":7})") +
      "\n" +
      Ev(5, "finish",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,"result_snapshot":1,"payload":{"emitted_outputs":1})") +
      "\n";
  const Violations f = ValidateTraceJsonl(finished + Allocator("e5", 0, 0) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(f), V{"TRACE_CAUSE_WRONG_EVENT"}) << test::Describe(f);
  EXPECT_NE(f[0].message.find("finish is not a physical free"), std::string::npos) << f[0].message;
}

// Regression (probe 9, 2026-12-04): storage observed held after a finish (FINISHED retains its
// rows: M5.1 0x07 "finish: make output terminal while ownership may remain") or after a release
// (an allocator's delayed free: "release: close logical ownership and fence the generation;
// immediate device free is a separate observation") was TRACE_CAUSE_WRONG_EVENT ("finish is not
// a physical free"). Both are admitted; a free caused by finish, bytes resident after release,
// and used slots after release under an allocator model stay violations. An observation after
// the release naming an earlier event (dropped at the release) says so and does not gate.
TEST(TraceCheckerTest, RegressionStorageHeldAfterFinishOrReleaseIsAdmitted) {
  const std::string header = Mutate(
      kHeaderWithResidency, R"("source_component":"residency"})",
      R"("source_component":"residency"},{"source_instance":"a","source_component":"allocator"})");
  const std::string rg = R"("request_id":"R","handle_generation":0,)";
  const std::string finished =
      header + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n" +
      Ev(4, "output_emit", rg + R"("base_snapshot":1,"payload":{"output_index":0,"token":7})") +
      "\n" + Ev(5, "finish", rg + R"("base_snapshot":1,"payload":{"emitted_outputs":1})") + "\n";
  const std::string released =
      finished + Ev(6, "release", rg + R"("base_snapshot":1,"payload":{})") + "\n";
  using V = std::vector<std::string>;
  // After finish: the 2 retained rows (16 B/token), held blocks.
  EXPECT_EQ(Codes(finished + Residency("e5", 32) + "\n"), V{});
  EXPECT_EQ(Codes(finished + Allocator("e5", 1, 2) + "\n"), V{});
  EXPECT_EQ(Codes(finished + Residency("e5", 16) + "\n"), V{"TRACE_OBSERVATION_INCONSISTENT"});
  EXPECT_EQ(Codes(finished + Allocator("e5", 0, 0) + "\n"), V{"TRACE_CAUSE_WRONG_EVENT"});
  EXPECT_EQ(Codes(finished + Residency("e5", 0) + "\n"), V{"TRACE_CAUSE_WRONG_EVENT"});
  // After release: blocks still held (a delayed free), then freed; no bytes resident.
  EXPECT_EQ(Codes(released + Allocator("e6", 1, 0) + "\n"), V{});
  EXPECT_EQ(Codes(released + Allocator("e6", 0, 0) + "\n"), V{});
  EXPECT_EQ(Codes(released + Residency("e6", 32) + "\n"), V{"TRACE_OBSERVATION_INCONSISTENT"});
  const std::string model = Mutate(released, R"("audit":"complete")",
                                   R"("audit":"complete","allocator_model":{"slots_per_block":4,)"
                                   R"("used_slots":"committed_rows"})");
  EXPECT_EQ(Codes(model + Allocator("e6", 1, 0) + "\n"), V{});
  EXPECT_EQ(Codes(model + Allocator("e6", 1, 2) + "\n"), V{"TRACE_OBSERVATION_INCONSISTENT"});
  // After release, naming the publication (dropped at the release): the message says so, and
  // the request is not gated (the output emitted before any logits of the re-allocated id is
  // still judged).
  const std::string again =
      Ev(7, "request_allocate",
         R"("request_id":"R","handle_generation":1,"payload":{"prompt_length":2})") +
      "\n" +
      Ev(8, "output_emit",
         R"("request_id":"R","handle_generation":1,"base_snapshot":0,"payload":{"output_index":0,"token":7})") +
      "\n";
  const Violations v =
      ValidateTraceJsonl(released + Allocator("e3", 1, 2) + "\n" + again, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), (V{"TRACE_CAUSE_UNKNOWN", "FRONTIER_OUTPUT_BEFORE_LOGITS"}))
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("is caused by \"e3\", which is not among the events request \"R\" "
                              "keeps after its release"),
            std::string::npos)
      << v[0].message;
  EXPECT_EQ(v[0].message.find("no earlier event"), std::string::npos) << v[0].message;
}

// Regression (2026-12-07): the cause an observation names was quoted with its clipped length
// inside the quotes ("exxx... (301 bytes)"), not in the form every other quoted value of the
// checker's messages takes ("exxx..." (301 bytes)). A cause no event has, and a cause that is an
// event of another kind, both named by a 301-byte id.
TEST(TraceCheckerTest, RegressionALongCauseIdIsQuotedClippedLikeEveryOtherValue) {
  const std::string published = PublishedWithAllocator();
  const std::string long_id = "e" + std::string(300, 'x');
  const std::string quoted = "is caused by \"e" + std::string(79, 'x') + "...\" (301 bytes), ";
  using V = std::vector<std::string>;
  const Violations unknown =
      ValidateTraceJsonl(published + Allocator(long_id, 1, 2) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(unknown), V{"TRACE_CAUSE_UNKNOWN"}) << test::Describe(unknown);
  EXPECT_NE(unknown[0].message.find(quoted + "which is no earlier event"), std::string::npos)
      << unknown[0].message;
  const std::string renamed =
      Mutate(published, R"("event_id":"e1")", R"("event_id":")" + long_id + "\"");
  const Violations wrong = ValidateTraceJsonl(renamed + Allocator(long_id, 1, 2) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(wrong), V{"TRACE_CAUSE_WRONG_EVENT"}) << test::Describe(wrong);
  EXPECT_NE(wrong[0].message.find(quoted + "an event of this trace"), std::string::npos)
      << wrong[0].message;
}

// Regression (2026-12-07): a retried verification stating other drafts named both draft lists
// whole, so 5,000 drafts made a 25 KB LIFECYCLE_RETRY_CONFLICT message (cut at the report
// limit); each list is clipped after 16 tokens, with its length.
TEST(TraceCheckerTest, RegressionARetriedVerificationsDraftsAreNamedClipped) {
  const std::vector<std::string> lines =
      test::SourceLines("fixtures/m5_1/frontier/speculative_frontier_verify.jsonl");
  ASSERT_GE(lines.size(), 11u);
  std::string t;
  for (size_t i = 0; i < 11; ++i) t += lines[i] + "\n";  // the header, then through the publish
  // The verification's append_start re-sent after its publication, with 5,000 other drafts.
  std::string retry = lines[7];
  const size_t at = retry.find("\"draft_tokens\":[");
  ASSERT_NE(at, std::string::npos) << retry;
  const size_t end = retry.find(']', at);
  std::string drafts = "\"draft_tokens\":[9";
  for (int i = 1; i < 5000; ++i) drafts += ",9";
  retry.replace(at, end + 1 - at, drafts + "]");
  retry = Mutate(Mutate(Mutate(retry, R"("event_id":"engine-0:6")", R"("event_id":"engine-0:10")"),
                        R"("local_sequence":6)", R"("local_sequence":10)"),
                 R"("monotonic_ns":1006007)", R"("monotonic_ns":1010011)");
  const Violations v = ValidateTraceJsonl(t + retry + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"})
      << test::Describe(v);
  std::string clipped = "verifies drafts [9";
  for (int i = 1; i < 16; ++i) clipped += ",9";
  clipped += ",...] (5000 elements); the original verified [";
  EXPECT_NE(v[0].message.find(clipped), std::string::npos) << v[0].message.substr(0, 400);
  EXPECT_LT(v[0].message.size(), 1000u);
}

// Regression (a vendor's probe, 2026-12-04): a truncate to 0 rows (vLLM's preemption by
// recompute) leaves the handle holding nothing, and an allocator that frees its blocks then
// reported all zero; that was TRACE_CAUSE_WRONG_EVENT ("no storage follows release or
// request_allocate only") while the residency plane's 0 bytes after the same truncate passed.
TEST(TraceCheckerTest, RegressionNoBlocksHeldAfterATruncateToZeroRows) {
  const std::string published = PublishedWithAllocator();
  auto truncated = [&](int length) {
    return published +
           Ev(4, "truncate",
              R"("request_id":"R","handle_generation":0,"base_snapshot":1,"result_snapshot":2,)"
              R"("payload":{"new_length":)" +
                  std::to_string(length) + "}") +
           "\n";
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(Codes(truncated(0) + Allocator("e4", 0, 0) + "\n"), V{});
  EXPECT_EQ(Codes(truncated(0) + Allocator("e4", 1, 0) + "\n"), V{});  // blocks kept
  // One row left is storage held: all zero after it is still the wrong cause.
  const Violations v = ValidateTraceJsonl(truncated(1) + Allocator("e4", 0, 0) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), V{"TRACE_CAUSE_WRONG_EVENT"}) << test::Describe(v);
  EXPECT_NE(v[0].message.find("after a truncate event"), std::string::npos) << v[0].message;
  const Violations p = ValidateTraceJsonl(published + Allocator("e3", 0, 0) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(p), V{"TRACE_CAUSE_WRONG_EVENT"});
  EXPECT_NE(p[0].message.find("after an append_publish event"), std::string::npos) << p[0].message;
}

// A prefix-cache hit (a vendor's probe, 2026-12-04): a new request whose prompt starts with rows
// another request committed is a fork child with a prompt of its own. Without prompt_length the
// child continued the parent's prompt (complete), so its own prompt rows were
// SERVICE_PHASE_PROMPT_OVERRUN.
TEST(TraceCheckerTest, ForkChildWithItsOwnPromptIsAPrefixCacheHit) {
  auto fork = [](const std::string& child) {
    return Ev(4, "fork",
              R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
              R"("payload":{"prefix_length":2,"children":[)" +
                  child + "]}");
  };
  const std::string c = R"("request_id":"C","handle_generation":0,)";
  const std::string prefill =
      Ev(5, "append_start",
         c + R"("operation_id":"c","base_snapshot":0,"payload":{"interval":[2,5],)"
             R"("cache_position":[2,5],"mask_key_length":5,"position_stage":"post_rope",)"
             R"("purpose":"prefill"})") +
      "\n" +
      Ev(6, "append_stage_layer",
         c + R"("operation_id":"c","payload":{"layer":0,"interval":[2,5]})") +
      "\n" +
      Ev(7, "append_publish",
         c + R"("operation_id":"c","base_snapshot":0,"result_snapshot":1,)"
             R"("payload":{"committed_length":5})") +
      "\n";
  const std::string emit =
      Ev(8, "output_emit", c + R"("base_snapshot":1,"payload":{"output_index":0,"token":9})") +
      "\n";
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           Stage(2) + "\n" + Publish(3) + "\n";
  using V = std::vector<std::string>;
  const std::string own = R"({"request_id":"C","prompt_length":5})";
  EXPECT_EQ(Codes(head + fork(own) + "\n" + prefill + emit), V{});
  // Without its own prompt the child continues the parent's, which is complete.
  EXPECT_EQ(Codes(head + fork(R"({"request_id":"C"})") + "\n" + prefill),
            V{"SERVICE_PHASE_PROMPT_OVERRUN"});
  // The hit brings no logits: output 0 waits for the rest of the prompt.
  EXPECT_EQ(
      Codes(head + fork(own) + "\n" + Mutate(emit, "\"local_sequence\":8", "\"local_sequence\":5")),
      V{"FRONTIER_OUTPUT_BEFORE_LOGITS"});
  // A shared prefix longer than the child's prompt: one code; the child's events are gated.
  const Violations v = ValidateTraceJsonl(
      head + fork(R"({"request_id":"C","prompt_length":1})") + "\n" + prefill + emit, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), V{"INPUT_VALUE_OUT_OF_RANGE"}) << test::Describe(v);
  EXPECT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/5/payload/children/0/prompt_length");
}

// trace-format.md "Emitting from an engine": a decode worker continues the first token the
// prefill worker sampled by forking the prefill request at S after its output 0; the child
// processes output 0 in its first decode and emits from output 1.
TEST(TraceCheckerTest, DecodeWorkerContinuesThePrefillsFirstTokenAsAFork) {
  const std::string d = R"("request_id":"D","handle_generation":0,)";
  const std::string r = R"("request_id":"R","handle_generation":0,)";
  const std::string t =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
      Publish(3) + "\n" +
      Ev(4, "output_emit", r + R"("base_snapshot":1,"payload":{"output_index":0,"token":7})") +
      "\n" +
      Ev(5, "fork",
         r + R"("base_snapshot":1,"payload":{"prefix_length":2,"children":[{"request_id":"D"}]})") +
      "\n" +
      Ev(6, "finish",
         r + R"("base_snapshot":1,"result_snapshot":1,"payload":{"emitted_outputs":1})") +
      "\n" +
      Ev(7, "release",
         r + R"("base_snapshot":1,"result_snapshot":2,"payload":{"result_handle_generation":1})") +
      "\n" +
      Ev(8, "append_start",
         d + R"("operation_id":"dd","base_snapshot":0,"payload":{"interval":[2,3],)"
             R"("cache_position":[2,3],"mask_key_length":3,"position_stage":"post_rope",)"
             R"("purpose":"decode","input_token":7})") +
      "\n" +
      Ev(9, "append_stage_layer",
         d + R"("operation_id":"dd","payload":{"layer":0,"interval":[2,3]})") +
      "\n" +
      Ev(10, "append_publish",
         d + R"("operation_id":"dd","base_snapshot":0,"result_snapshot":1,"payload":{"committed_length":3})") +
      "\n";
  const std::string emit1 =
      Ev(11, "output_emit", d + R"("base_snapshot":1,"payload":{"output_index":1,"token":8})") +
      "\n";
  EXPECT_EQ(Codes(t + emit1), std::vector<std::string>{});
  // Output 0 is the prefill worker's: emitting it again on the decode side is a duplicate.
  EXPECT_EQ(Codes(t + Mutate(emit1, "\"output_index\":1", "\"output_index\":0")),
            std::vector<std::string>{"FRONTIER_OUTPUT_INDEX_GAP"});
}

// Regression (an adversarial probe, 2026-12-03): a number beyond 64 bits (valid JSON) was
// "not JSON: Problem while parsing a number" with no member named, and the request of the line
// (its allocation here) then cascaded into LIFECYCLE_UNKNOWN_HANDLE. Now it is
// INPUT_VALUE_OUT_OF_RANGE at the member, and the line's request is gated; a syntax error names
// its column.
// Regression (probe 23 finding 01c): a raw byte that is not UTF-8 in a string made the line
// "not JSON", naming nothing. It is reported once at its column and byte, well-formed UTF-8
// beside it is not flagged, and a header holding one is read with '?' in its place, so the
// replay goes on.
TEST(TraceCheckerTest, RegressionAByteNotUtf8IsReportedAtItsColumnAndTheReplayGoesOn) {
  using V = std::vector<std::string>;
  const std::string unknown_finish =
      Ev(1, "finish", R"("request_id":"Q","handle_generation":0,"payload":{})");
  std::string header = kHeader;
  header.replace(header.find(R"("name":"t")"), 10, "\"name\":\"t\xFF\"");
  Violations r = ValidateTraceJsonl(header + "\n" + unknown_finish + "\n", "t.jsonl");
  EXPECT_EQ(test::CodeNames(r), (V{"TRACE_HEADER_INVALID", "LIFECYCLE_UNKNOWN_HANDLE"}));
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].message.find(":1:" + std::to_string(header.find('\xFF') + 1) +
                              ": byte 0xFF in a string is not UTF-8"),
            std::string::npos)
      << r[0].message;
  // Well-formed UTF-8 (2- and 4-byte sequences) beside a lone surrogate escape: only the escape.
  const std::string mixed =
      Ev(0, "request_allocate",
         "\"request_id\":\"R\",\"handle_generation\":0,\"payload\":"
         "{\"prompt_length\":1,\"lineage_id\":\"\xC3\xA9\xF0\x9F\x98\x80\\ud800\"}");
  r = ValidateTraceJsonl(std::string(kHeader) + "\n" + mixed + "\n", "t.jsonl");
  EXPECT_EQ(test::CodeNames(r), V{"TRACE_LINE_MALFORMED"});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].message.find("\"\\ud800\" is a lone UTF-16 surrogate escape:"), std::string::npos)
      << r[0].message;
  // An overlong encoding (C0 80) and a cut sequence (E2 82 then '"'): every byte of each.
  const std::string broken = Ev(0, "request_allocate",
                                "\"request_id\":\"R\",\"handle_generation\":0,\"payload\":"
                                "{\"prompt_length\":1,\"lineage_id\":\"\xC0\x80\xE2\x82\"}");
  r = ValidateTraceJsonl(
      std::string(kHeader) + "\n" + broken + "\n" +
          Ev(1, "finish", R"("request_id":"R","handle_generation":0,"payload":{})") + "\n",
      "t.jsonl");
  EXPECT_EQ(test::CodeNames(r), V{"TRACE_LINE_MALFORMED"});  // R is gated: its finish is not judged
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].message.find("byte 0xC0 in a string is not UTF-8 (and 3 more)"), std::string::npos)
      << r[0].message;
}

TEST(TraceCheckerTest, RegressionANumberBeyond64BitsNamesItsMember) {
  const std::string rest = Start(1) + "\n" + Stage(2) + "\n" + Publish(3) + "\n";
  for (const std::string big : {"18446744073709551616", "1e400", "-9223372036854775809"}) {
    const Violations v = ValidateTraceJsonl(
        std::string(kHeader) + "\n" +
            Mutate(Alloc(0), R"("monotonic_ns":100)", R"("monotonic_ns":)" + big) + "\n" + rest,
        "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"})
        << big << "\n"
        << test::Describe(v);
    EXPECT_EQ(v[0].pointer, "/1/monotonic_ns");
    EXPECT_NE(v[0].message.find("t.jsonl:2:"), std::string::npos) << v[0].message;
  }
  // Two numbers beyond a double on one line (an adversarial probe, 2026-12-04: "not JSON", and
  // the request cascaded): the first is named, at its column in the line as written.
  const std::string two =
      Mutate(Mutate(Alloc(0), R"("local_sequence":0)", R"("local_sequence":1e400)"),
             R"("monotonic_ns":100)", R"("monotonic_ns":-1e999)");
  const Violations both =
      ValidateTraceJsonl(std::string(kHeader) + "\n" + two + "\n" + rest, "t.jsonl");
  ASSERT_EQ(test::CodeNames(both), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"})
      << test::Describe(both);
  EXPECT_EQ(both[0].pointer, "/1/local_sequence");
  const size_t column = two.find("1e400") + 1;
  EXPECT_NE(both[0].message.find("t.jsonl:2:" + std::to_string(column) + ":"), std::string::npos)
      << both[0].message;
  // A line that is not JSON after such a number: its column in the line as written.
  const std::string bad = R"({"a":[1e400,2e400,tru]})";
  const Violations nj = ValidateTraceJsonl(std::string(kHeader) + "\n" + bad + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(nj), std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  EXPECT_NE(nj[0].message.find("t.jsonl:2:" + std::to_string(bad.find("tru") + 1) + ":"),
            std::string::npos)
      << nj[0].message;
  // Many such numbers (each would cost a reading of the line): the first one's column alone.
  std::string many = R"({"a":[)";
  for (int i = 0; i < 1000; ++i) many += (i ? ",1e400" : "1e400");
  many += "]}";
  const Violations m = ValidateTraceJsonl(std::string(kHeader) + "\n" + many + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(m), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_NE(m[0].message.find("t.jsonl:2:7: more than 16 numbers beyond 64 bits"),
            std::string::npos)
      << m[0].message;
  const Violations v = ValidateTraceJsonl(
      std::string(kHeader) + "\n" +
          Mutate(Alloc(0), R"("monotonic_ns":100)", R"("monotonic_ns":1x)") + "\n",
      "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_LINE_MALFORMED"});
  EXPECT_NE(v[0].message.find("(not JSON)"), std::string::npos) << v[0].message;
}

// Messages of the observation causes say what was observed and which causes are kept (an
// adversarial probe, 2026-12-03: a residency of 0 bytes after finish "observes storage held";
// a cause naming an output_emit was "no earlier semantic event", though it was one).
TEST(TraceCheckerTest, ObservationCauseMessagesSayWhatWasObserved) {
  const std::string t =
      std::string(kHeaderWithResidency) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
      "\n" + Publish(3) + "\n" +
      Ev(4, "output_emit",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{"output_index":0,"token":7})") +
      "\n" +
      Ev(5, "finish",
         R"("request_id":"R","handle_generation":0,"base_snapshot":1,"payload":{"emitted_outputs":1})") +
      "\n";
  Violations v = ValidateTraceJsonl(t + Residency("e5", 0) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_CAUSE_WRONG_EVENT"});
  EXPECT_NE(v[0].message.find("observes no storage after a finish event"), std::string::npos)
      << v[0].message;
  // An output_emit the trace holds is the wrong kind of cause (since 2026-12-05, probe 41: it was
  // TRACE_CAUSE_UNKNOWN, and the request was gated); an id the trace does not hold is unknown.
  v = ValidateTraceJsonl(t + Residency("e4", 32) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_CAUSE_WRONG_EVENT"});
  EXPECT_NE(v[0].message.find("an event of this trace but not one that can cause request \"R\"'s "
                              "observations (its request_allocate"),
            std::string::npos)
      << v[0].message;
  v = ValidateTraceJsonl(t + Residency("e404", 32) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_CAUSE_UNKNOWN"});
  EXPECT_NE(v[0].message.find("that can cause an observation (request_allocate"), std::string::npos)
      << v[0].message;
}

// Regression (an adversarial probe, 2026-12-03): a late closing event of an operation whose
// records were released with its handle passed with any base_snapshot (2^64 - 1 included),
// although the docs compare it with the released handle's version. Now a base the handle never
// had readable is TRACE_SNAPSHOT_MISMATCH: the synthetic lifecycle's delayed publication of "H"
// read snapshot 2; "H" was released at snapshot 3.
TEST(TraceCheckerTest, RegressionALateCompletionsBaseIsComparedAfterRelease) {
  std::ifstream in(test::SourcePath("fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string late = R"("operation_id":"x-delayed","base_snapshot":2,)";
  ASSERT_NE(text.find(late), std::string::npos);
  ASSERT_EQ(Codes(text), std::vector<std::string>{});
  for (const std::string base : {"1", "3", "100", "18446744073709551615"}) {
    // (Since 2026-12-05 the operation's record outlives the release, so its start's base, 2, is
    // known: 1 is a mismatch too; before, a stale 1 was possible and not judged.)
    const std::vector<std::string> want{"TRACE_SNAPSHOT_MISMATCH"};
    std::string t = text;  // the publication: the last event naming the operation
    t.replace(t.rfind(late), late.size(),
              R"("operation_id":"x-delayed","base_snapshot":)" + base + ",");
    EXPECT_EQ(Codes(t), want) << base;
  }
}

// Regression: a truncate stopped the request's frontier checks, so after it a decode could
// process a token that was never emitted, and outputs could skip indices (found by a vendor's
// cold read of the docs). A truncate now rolls the outputs back with the rows their logits came
// from (FrontierState::Truncate) and the frontier goes on judging.
TEST(TraceCheckerTest, RegressionDecodeAfterTruncateIsJudgedByTheFrontier) {
  const std::string rg = R"("request_id":"R","handle_generation":0,)";
  int seq = 0;
  auto ev = [&](const std::string& type, const std::string& rest) {
    return Ev(seq++, type, rg + rest) + "\n";
  };
  auto append = [&](const std::string& op, int base, int from, const std::string& purpose,
                    const std::string& token) {
    const std::string iv = "[" + std::to_string(from) + "," + std::to_string(from + 1) + "]";
    const std::string o = R"("operation_id":")" + op + "\",";
    // One statement per event: the events are numbered in the order they are written.
    std::string x =
        ev("append_start",
           o + R"("base_snapshot":)" + std::to_string(base) + R"(,"payload":{"interval":)" + iv +
               R"(,"cache_position":)" + iv + R"(,"mask_key_length":)" + std::to_string(from + 1) +
               R"(,"position_stage":"post_rope","purpose":")" + purpose + "\"" + token + "}");
    x += ev("append_stage_layer", o + R"("payload":{"layer":0,"interval":)" + iv + "}");
    x += ev("append_publish", o + R"("base_snapshot":)" + std::to_string(base) +
                                  R"(,"result_snapshot":)" + std::to_string(base + 1) +
                                  R"(,"payload":{})");
    return x;
  };
  auto emit = [&](int index, int token) {
    return ev("output_emit", R"("payload":{"output_index":)" + std::to_string(index) +
                                 R"(,"token":)" + std::to_string(token) + "}");
  };
  // Prompt of 1 row; outputs 0, 1, 2 (tokens 5, 6, 7), the first two processed: K_c = 3.
  std::string t =
      std::string(kHeader) + "\n" + ev("request_allocate", R"("payload":{"prompt_length":1})");
  t += append("p0", 0, 0, "prefill", "");
  t += emit(0, 5);
  t += append("p1", 1, 1, "decode", R"(,"input_token":5)");
  t += emit(1, 6);
  t += append("p2", 2, 2, "decode", R"(,"input_token":6)");
  t += emit(2, 7);
  // Truncate to 2 rows: output 2 (from row 2's logits) is rolled back; output 1 is again the
  // unprocessed frontier token.
  t += ev("truncate", R"("base_snapshot":3,"result_snapshot":4,"payload":{"new_length":2})");
  const int after = seq;
  using V = std::vector<std::string>;
  auto tail = [&](const std::string& token, int index) {
    seq = after;
    std::string x = append("p3", 4, 2, "decode", R"(,"input_token":)" + token);
    return x + emit(index, 8);
  };
  EXPECT_TRUE(Codes(t + tail("6", 2)).empty()) << t + tail("6", 2);
  EXPECT_EQ(Codes(t + tail("7", 2)), V{"FRONTIER_TOKEN_MISMATCH"});     // the rolled-back output
  EXPECT_EQ(Codes(t + tail("4242", 2)), V{"FRONTIER_TOKEN_MISMATCH"});  // never emitted
  EXPECT_EQ(Codes(t + tail("6", 3)), V{"FRONTIER_OUTPUT_INDEX_GAP"});
  // A finish counting the rolled-back output says so.
  std::string finished = t + tail("6", 2);
  finished +=
      ev("finish", R"("base_snapshot":5,"result_snapshot":5,"payload":{"emitted_outputs":4})");
  const Violations v = ValidateTraceJsonl(finished, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), V{"TRACE_SNAPSHOT_MISMATCH"}) << test::Describe(v);
  EXPECT_NE(v[0].message.find("1 more were rolled back by a truncate"), std::string::npos)
      << v[0].message;
}

// Regression (probe 9, 2026-12-04): a rollback into the prompt, by a fork whose prefix is shorter
// than the parent's prompt (the child names no prompt of its own) or by a truncate, stopped the
// request's frontier checks, so the child or the request could emit output 0 or decode with
// prompt rows missing, and pass. It is now a request with the first prefix_length (new_length)
// prompt rows committed and no logits ready, as a child naming its own prompt_length is.
TEST(TraceCheckerTest, RegressionARollbackIntoThePromptIsJudgedByTheFrontier) {
  const std::string r = R"("request_id":"R","handle_generation":0,)";
  const std::string c = R"("request_id":"C","handle_generation":0,)";
  int seq = 0;
  auto ev = [&](const std::string& type, const std::string& who, const std::string& rest) {
    return Ev(seq++, type, who + rest) + "\n";
  };
  // One append of rows [from, to) on `who`'s snapshot `base`.
  auto append = [&](const std::string& who, const std::string& op, int base, int from, int to,
                    const std::string& purpose, const std::string& token) {
    const std::string iv = "[" + std::to_string(from) + "," + std::to_string(to) + "]";
    const std::string o = R"("operation_id":")" + op + "\",";
    std::string x =
        ev("append_start", who,
           o + R"("base_snapshot":)" + std::to_string(base) + R"(,"payload":{"interval":)" + iv +
               R"(,"cache_position":)" + iv + R"(,"mask_key_length":)" + std::to_string(to) +
               R"(,"position_stage":"post_rope","purpose":")" + purpose + "\"" + token + "}");
    x += ev("append_stage_layer", who, o + R"("payload":{"layer":0,"interval":)" + iv + "}");
    x += ev("append_publish", who,
            o + R"("base_snapshot":)" + std::to_string(base) + R"(,"result_snapshot":)" +
                std::to_string(base + 1) + R"(,"payload":{})");
    return x;
  };
  auto emit = [&](const std::string& who, int base, int index, int token) {
    return ev("output_emit", who,
              R"("base_snapshot":)" + std::to_string(base) + R"(,"payload":{"output_index":)" +
                  std::to_string(index) + R"(,"token":)" + std::to_string(token) + "}");
  };
  // R: a prompt of 4 rows, prefilled; output 0 (token 5) emitted.
  std::string head =
      std::string(kHeader) + "\n" + ev("request_allocate", r, R"("payload":{"prompt_length":4})");
  head += append(r, "p", 0, 0, 4, "prefill", "");
  head += emit(r, 1, 0, 5);
  const int after = seq;
  using V = std::vector<std::string>;
  auto fork = [&](const std::string& child) {
    seq = after;
    return ev("fork", r,
              R"("base_snapshot":1,"payload":{"prefix_length":2,"children":[)" + child + "]}");
  };
  for (const std::string child :
       {R"({"request_id":"C"})", R"({"request_id":"C","prompt_length":4})"}) {
    SCOPED_TRACE(child);
    const std::string f = head + fork(child);
    const int at = seq;
    // Output 0 with 2 of 4 prompt rows (old code: passed without the explicit prompt_length).
    const Violations v = ValidateTraceJsonl(f + emit(c, 0, 0, 9), "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), V{"FRONTIER_OUTPUT_BEFORE_LOGITS"}) << test::Describe(v);
    EXPECT_NE(v[0].message.find("(2 of 4 prompt rows committed"), std::string::npos)
        << v[0].message;
    // A decode over the missing prompt rows, processing the parent's output 0.
    seq = at;
    EXPECT_EQ(Codes(f + append(c, "d", 0, 2, 3, "decode", R"(,"input_token":5)")),
              V{"SERVICE_PHASE_DECODE_BEFORE_PREFILL"});
    // The rest of the prompt prefilled again: output 0 and a decode conform.
    seq = at;
    std::string ok = f + append(c, "c", 0, 2, 4, "prefill", "");
    ok += emit(c, 1, 0, 9);
    ok += append(c, "d", 1, 4, 5, "decode", R"(,"input_token":9)");
    EXPECT_EQ(Codes(ok), V{}) << ok;
  }
  // A truncate into the prompt, then output 0 (old code: passed).
  seq = after;
  std::string t = head + ev("truncate", r,
                            R"("base_snapshot":1,"result_snapshot":2,)"
                            R"("payload":{"new_length":2})");
  const int truncated = seq;
  EXPECT_EQ(Codes(t + emit(r, 2, 0, 9)), V{"FRONTIER_OUTPUT_BEFORE_LOGITS"});
  // ... or a finish without prefilling again (M5.1's Loop 8 trace finishes such a branch).
  seq = truncated;
  EXPECT_EQ(Codes(t + ev("finish", r,
                         R"("base_snapshot":2,"result_snapshot":2,)"
                         R"("payload":{"committed_length":2,"emitted_outputs":0})")),
            V{});
}

// Regression (probe 9, 2026-12-04): a publication of a transaction opened before its handle was
// finished and released, reported as a success after the id was allocated again and relabelled
// to the new handle generation, was LIFECYCLE_UNKNOWN_SNAPSHOT "no such snapshot was ever
// published ... (the event names base snapshot 1; request "R" is at snapshot 1)": versions of
// two incarnations compared. It fails on generation, as without the re-allocation (M5.1 0x01
// "The delayed publication fails even if an observed physical address is again 17. The
// generation namespace must itself be non-reused"), and the message names the released
// incarnation.
TEST(TraceCheckerTest, RegressionALateCompletionOfAReleasedIncarnationIsStale) {
  auto g = [](int generation) {
    return R"("request_id":"R","handle_generation":)" + std::to_string(generation) + ",";
  };
  auto prefill = [&](int seq, int generation, const std::string& op) {
    const std::string o = R"("operation_id":")" + op + "\",";
    return Ev(seq, "append_start",
              g(generation) + o +
                  R"("base_snapshot":0,"payload":{"interval":[0,2],"cache_position":[0,2],)"
                  R"("mask_key_length":2,"position_stage":"post_rope","purpose":"prefill"})") +
           "\n" +
           Ev(seq + 1, "append_stage_layer",
              g(generation) + o + R"("payload":{"layer":0,"interval":[0,2]})") +
           "\n" +
           Ev(seq + 2, "append_publish",
              g(generation) + o + R"("base_snapshot":0,"result_snapshot":1,"payload":{})") +
           "\n";
  };
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + prefill(1, 0, "p");
  t += Ev(4, "output_emit", g(0) + R"("base_snapshot":1,"payload":{"output_index":0,"token":7})") +
       "\n";
  // Decode x is prepared on generation 0, snapshot 1; the request then finishes and is released.
  t += Ev(5, "append_start",
          g(0) + R"("operation_id":"x","base_snapshot":1,"payload":{"interval":[2,3],)"
                 R"("cache_position":[2,3],"mask_key_length":3,"position_stage":"post_rope",)"
                 R"("purpose":"decode","input_token":7})") +
       "\n";
  t += Ev(6, "append_stage_layer",
          g(0) + R"("operation_id":"x","payload":{"layer":0,"interval":[2,3]})") +
       "\n";
  t += Ev(7, "finish", g(0) + R"("base_snapshot":1,"payload":{})") + "\n";
  t += Ev(8, "release", g(0) + R"("base_snapshot":1,"payload":{"result_handle_generation":1})") +
       "\n";
  // The id is allocated again (generation 1) and prefilled: snapshot 1 of the new incarnation.
  t += Ev(9, "request_allocate", g(1) + R"("payload":{"prompt_length":2})") + "\n";
  t += prefill(10, 1, "p1");
  const std::string late =
      Ev(13, "append_publish", g(1) + R"("operation_id":"x","base_snapshot":1,"payload":{})");
  const Violations v = ValidateTraceJsonl(t + late + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_STALE_BASE"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("its transaction was opened on handle generation 0 of \"R\" (base "
                              "snapshot 1), which was released; the id now names handle "
                              "generation 1, at snapshot 1"),
            std::string::npos)
      << v[0].message;
  EXPECT_EQ(v[0].message.find("never published"), std::string::npos) << v[0].message;
  // The runtime's refusal conforms.
  EXPECT_EQ(
      Codes(t + Mutate(late, R"("payload":{})", R"("outcome":"rejected","payload":{})") + "\n"),
      std::vector<std::string>{});
}

// Regression (probe 9, 2026-12-04): a read's length mismatch always said "(pending rows are not
// readable)", also after a truncate or when a fork child read its parent's later rows. The
// reason now names what the replay knows: pending rows of an open operation, the truncate, the
// fork parent's growth, or committed rows the reader missed.
TEST(TraceCheckerTest, RegressionAReadMismatchNamesItsReason) {
  const std::string r = R"("request_id":"R","handle_generation":0,)";
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           Stage(2) + "\n" + Publish(3) + "\n";  // R: 2 rows, snapshot 1
  auto read = [](int seq, const std::string& who, int base, int len) {
    return Ev(seq, "read",
              who + R"("base_snapshot":)" + std::to_string(base) +
                  R"(,"payload":{"committed_length":)" + std::to_string(len) + "}") +
           "\n";
  };
  auto message = [](const std::string& t) {
    const Violations v = ValidateTraceJsonl(t, "t.jsonl");
    return v.empty() ? std::string("(none)") : test::Describe(v);
  };
  auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  // Pending rows of an open operation.
  const std::string emit =
      Ev(4, "output_emit", r + R"("base_snapshot":1,"payload":{"output_index":0,"token":7})") +
      "\n";
  const std::string decode =
      Ev(5, "append_start",
         r + R"("operation_id":"d","base_snapshot":1,"payload":{"interval":[2,3],)"
             R"("cache_position":[2,3],"mask_key_length":3,"position_stage":"post_rope",)"
             R"("purpose":"decode","input_token":7})") +
      "\n" +
      Ev(6, "append_stage_layer",
         r + R"("operation_id":"d","payload":{"layer":0,"interval":[2,3]})") +
      "\n";
  std::string m = message(
      head + emit + decode + read(7, r, 1, 3) +
      Ev(8, "append_publish", r + R"("operation_id":"d","base_snapshot":1,"payload":{})") + "\n");
  EXPECT_TRUE(has(m,
                  "rows [2, 3) are pending in operation \"d\", not published: pending rows are "
                  "not readable"))
      << m;
  // A truncate.
  m = message(head + Ev(4, "truncate", r + R"("base_snapshot":1,"payload":{"new_length":1})") +
              "\n" + read(5, r, 2, 2));
  EXPECT_TRUE(has(m,
                  "a truncate shortened the snapshot from 2 to 1 rows: the truncated suffix is "
                  "unreachable"))
      << m;
  EXPECT_FALSE(has(m, "pending")) << m;
  // A fork child reading its parent's later rows.
  const std::string c = R"("request_id":"C","handle_generation":0,)";
  m = message(
      head + emit +
      Ev(5, "fork",
         r + R"("base_snapshot":1,"payload":{"prefix_length":2,"children":[{"request_id":"C"}]})") +
      "\n" +
      Mutate(Mutate(Mutate(decode, "\"local_sequence\":6", "\"local_sequence\":7"),
                    "\"local_sequence\":5", "\"local_sequence\":6"),
             "\"event_id\":\"e6\"", "\"event_id\":\"e7\"") +
      Ev(8, "append_publish", r + R"("operation_id":"d","base_snapshot":1,"payload":{})") + "\n" +
      read(9, c, 0, 3));
  EXPECT_TRUE(has(m, "the fork parent \"R\" has 3 rows; a child's snapshot is its own")) << m;
  // Fewer rows than committed.
  m = message(head + read(4, r, 1, 1));
  EXPECT_TRUE(has(m, "readers resolve the whole all-layer snapshot: rows [1, 2) are committed"))
      << m;
  // More rows than anything the replay knows of.
  m = message(head + read(4, r, 1, 3));
  EXPECT_TRUE(has(m, "(no publication committed rows beyond 2)")) << m;
}

// Regressions (omission sweep, 2026-12-03: each event left out, the source's later events
// renumbered). A lost publication raised a code at each later event that depended on it: the
// observation naming it as a cause, the output selected from its snapshot, the next append on
// its base (two to six codes). The first of them now gates the request: an observation whose
// cause the trace lacks, and an output or a read naming a snapshot the handle has not reached,
// show that the replay's state of the request is not the runtime's.
TEST(TraceGatingTest, RegressionLostPublicationRaisesOneCode) {
  using V = std::vector<std::string>;
  auto emit = [](int seq) {
    return Ev(seq, "output_emit",
              R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
              R"("payload":{"output_index":0,"token":7})") +
           "\n";
  };
  // The decode d (start, stage, publish) that processes `token`.
  auto decode = [](int seq, int token) {
    return Ev(seq, "append_start",
              R"("request_id":"R","handle_generation":0,"operation_id":"d",)"
              R"("base_snapshot":1,"payload":{"interval":[2,3],"cache_position":[2,3],)"
              R"("mask_key_length":3,"position_stage":"post_rope","purpose":"decode",)"
              R"("input_token":)" +
                  std::to_string(token) + "}") +
           "\n" +
           Ev(seq + 1, "append_stage_layer",
              R"("request_id":"R","handle_generation":0,)"
              R"("operation_id":"d","payload":{"layer":0,"interval":[2,3]})") +
           "\n" +
           Ev(seq + 2, "append_publish",
              R"("request_id":"R","handle_generation":0,"operation_id":"d",)"
              R"("base_snapshot":1,"result_snapshot":2,"payload":{})") +
           "\n";
  };
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           Stage(2) + "\n";  // then Publish(3), lost below
  EXPECT_EQ(Codes(head + Publish(3) + "\n" + emit(4) + decode(5, 7)), V{});
  EXPECT_EQ(Codes(head + emit(3) + decode(4, 7)), V{"FRONTIER_OUTPUT_BEFORE_LOGITS"});
  EXPECT_EQ(Codes(head + Read(3, "R", 1, 2) + "\n" + decode(4, 7)), V{"TRACE_SNAPSHOT_MISMATCH"});
  EXPECT_EQ(Codes(head + decode(3, 7)), V{"LIFECYCLE_UNKNOWN_SNAPSHOT"});
  // An observation naming the lost publication (event e3) as its cause comes first.
  const std::string t = std::string(kHeaderWithResidency) + "\n" + Alloc(0) + "\n" + Start(1) +
                        "\n" + Stage(2) + "\n";
  EXPECT_EQ(Codes(t + Residency("e3", 32) + "\n" + emit(3) + decode(4, 7)),
            V{"TRACE_CAUSE_UNKNOWN"});
  // A read of a stale snapshot raises one code (its length is that snapshot's) and does not gate
  // the request: a decode that processes the wrong token after it is judged.
  EXPECT_EQ(Codes(head + Publish(3) + "\n" + Read(4, "R", 0, 0) + "\n" + emit(5) + decode(6, 7)),
            V{"TRACE_SNAPSHOT_MISMATCH"});
  EXPECT_EQ(Codes(head + Publish(3) + "\n" + Read(4, "R", 0, 0) + "\n" + emit(5) + decode(6, 8)),
            (V{"TRACE_SNAPSHOT_MISMATCH", "FRONTIER_TOKEN_MISMATCH"}));
}

// Regression (omission sweep, 2026-12-03): a lost output made the finish's emitted_outputs claim
// and the repair append after it each raise a code. The claim's code now stops the request's
// frontier checks.
TEST(TraceGatingTest, RegressionLostOutputRaisesOneCode) {
  using V = std::vector<std::string>;
  auto line = [](int seq, const std::string& type, const std::string& rest) {
    return Ev(seq, type, R"("request_id":"R","handle_generation":0,)" + rest) + "\n";
  };
  auto append = [&](int seq, const std::string& op, int base, int from, const std::string& purpose,
                    int token) {
    const std::string iv = "[" + std::to_string(from) + "," + std::to_string(from + 1) + "]";
    return line(seq, "append_start",
                R"("operation_id":")" + op + R"(","base_snapshot":)" + std::to_string(base) +
                    R"(,"payload":{"interval":)" + iv + R"(,"cache_position":)" + iv +
                    R"(,"mask_key_length":)" + std::to_string(from + 1) +
                    R"(,"position_stage":"post_rope","purpose":")" + purpose +
                    R"(","input_token":)" + std::to_string(token) + "}") +
           line(seq + 1, "append_stage_layer",
                R"("operation_id":")" + op + R"(","payload":{"layer":0,"interval":)" + iv + "}") +
           line(seq + 2, "append_publish",
                R"("operation_id":")" + op + R"(","base_snapshot":)" + std::to_string(base) +
                    R"(,"result_snapshot":)" + std::to_string(base + 1) + R"(,"payload":{})");
  };
  auto emit = [&](int seq, int snapshot, int index, int token) {
    return line(seq, "output_emit",
                R"("base_snapshot":)" + std::to_string(snapshot) +
                    R"(,"payload":{"output_index":)" + std::to_string(index) + R"(,"token":)" +
                    std::to_string(token) + "}");
  };
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
                           emit(4, 1, 0, 7) + append(5, "d", 1, 2, "decode", 7);
  auto tail = [&](int seq) {
    return line(seq, "finish", R"("base_snapshot":2,"payload":{"emitted_outputs":2})") +
           append(seq + 1, "repair", 2, 3, "repair", 8);
  };
  EXPECT_EQ(Codes(head + emit(8, 2, 1, 8) + tail(9)), V{});
  EXPECT_EQ(Codes(head + tail(8)), V{"TRACE_SNAPSHOT_MISMATCH"});  // output 1 is lost
}

// Regressions (header sweep, 2026-12-03: each header field changed). A header that declares a
// source under another name made every event of the source raise TRACE_SOURCE_UNDECLARED and
// go unreplayed, so the requests it served raised lifecycle codes of their own (2 distinct
// codes, up to 37 violations). The first event of an undeclared source is reported; the source
// is then adopted with the event's component and its events are replayed, up to
// kMaxUndeclaredSources sources (memory stays bounded on untrusted input).
TEST(TraceGatingTest, RegressionUndeclaredSourceIsReportedOnceAndReplayed) {
  auto from = [](const std::string& source, std::string line) {
    return Mutate(std::move(line), R"("source_instance":"e")",
                  R"("source_instance":")" + source + "\"") +
           "\n";
  };
  auto trace = [&](int read_length) {
    return std::string(kHeader) + "\n" + from("e2", Alloc(0)) + from("e2", Start(1)) +
           from("e2", Stage(2)) + from("e2", Publish(3)) + from("e2", Read(4, "R", 1, read_length));
  };
  const Violations v = ValidateTraceJsonl(trace(2), "t.jsonl");
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SOURCE_UNDECLARED"});
  EXPECT_EQ(v[0].line, 2u);
  // Its events are judged: a wrong read is still found.
  EXPECT_EQ(Codes(trace(3)),
            (std::vector<std::string>{"TRACE_SOURCE_UNDECLARED", "TRACE_SNAPSHOT_MISMATCH"}));
  // Beyond 64 adopted sources each event is reported and not replayed.
  TraceChecker c("t.jsonl");
  c.Feed(kHeader, 1);
  for (int i = 0; i < 70; ++i) {
    std::string alloc = Ev(0, "request_allocate",
                           R"("request_id":"R)" + std::to_string(i) +
                               R"(","handle_generation":0,"payload":{"prompt_length":2})");
    alloc = Mutate(alloc, R"("source_instance":"e")",
                   R"("source_instance":"s)" + std::to_string(i) + "\"");
    // (One id per event: an id of another source's recent event is a conflict, probe 88.)
    alloc = Mutate(alloc, R"("event_id":"e0")", R"("event_id":"s)" + std::to_string(i) + "\"");
    c.Feed(alloc, static_cast<uint32_t>(i + 2));
    EXPECT_EQ(c.kv().Find("R" + std::to_string(i)) != nullptr, i < 64) << i;
  }
  EXPECT_EQ(c.Finish(false).size(), 70u);
}

// Regression (envelope source sweep, 2026-12-03): an event whose source_component contradicts
// the header was reported and skipped without gating or taking its place in the source's
// sequence: the next event raised TRACE_SEQUENCE_GAP and the requests it served lifecycle codes
// (3 distinct codes for a stage). It is dropped like any event with an unusable envelope.
TEST(TraceGatingTest, RegressionEventFromTheWrongComponentRaisesOneCode) {
  const std::string stage =
      Mutate(Stage(2), R"("source_component":"semantic")", R"("source_component":"allocator")");
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + stage + "\n" +
                  Publish(3) + "\n" + Read(4, "R", 1, 2) + "\n"),
            std::vector<std::string>{"TRACE_SOURCE_UNDECLARED"});
}

// Regression (header sweep, 2026-12-03): a cache ABI whose position_stage is neither post_rope
// nor pre_rope was accepted, and every append then raised LIFECYCLE_POSITION_STAGE_MISMATCH. It
// is INPUT_VALUE_INVALID, and a header whose cache ABI is unusable replays nothing.
TEST(TraceGatingTest, RegressionHeaderPositionStageIsAnEnum) {
  const std::string bad =
      Mutate(kHeader, R"("position_stage":"post_rope")", R"("position_stage":"post-rope")");
  EXPECT_EQ(Codes(bad + "\n" + Alloc(0) + "\n" + PrefillLines()),
            std::vector<std::string>{"INPUT_VALUE_INVALID"});
  EXPECT_EQ(Codes(std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines()),
            std::vector<std::string>{});
}

// ---- Regressions found by an adversarial probe of the lifecycle and frontier (2026-12-03).

// `lines` (header first) as one trace whose events are renumbered by position (local_sequence,
// monotonic_ns and an "engine-0:N" event_id), so that an inserted event keeps the source in
// order.
std::string Renumbered(const std::vector<std::string>& lines) {
  std::string out = lines.at(0) + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string n = std::to_string(i);
    std::string l = std::regex_replace(lines[i], std::regex(R"("local_sequence":\d+)"),
                                       "\"local_sequence\":" + n);
    l = std::regex_replace(l, std::regex(R"("monotonic_ns":\d+)"), "\"monotonic_ns\":" + n + "000");
    l = std::regex_replace(l, std::regex(R"("event_id":"engine-0:\d+")"),
                           "\"event_id\":\"engine-0:" + n + "\"");
    out += l + "\n";
  }
  return out;
}

// `lines` as one trace, unchanged.
std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// M5.1 0x09's speculative trace (base 100, two accepted drafts, correction -> 102, repair ->
// 103): line 11 starts the verification, line 18 the correction token's append.
constexpr const char* kSpeculative = "fixtures/m5_1/frontier/speculative_correction.jsonl";

// A runtime that refuses what the output frontier forbids, and says so, conforms: before, only
// the lifecycle object was asked, and the refusal was TRACE_OUTCOME_INVALID.
TEST(TraceCheckerTest, RegressionARefusalTheFrontierRequiresConforms) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  const std::string finish =
      Ev(1, "finish", R"("request_id":"R","handle_generation":0,"base_snapshot":0,"payload":{})");
  const std::string rejected = R"("outcome":"rejected","payload")";
  EXPECT_EQ(Codes(head + finish + "\n"), std::vector<std::string>{"SERVICE_PHASE_EARLY_FINISH"});
  EXPECT_EQ(Codes(head + Mutate(finish, R"("payload")", rejected) + "\n"),
            std::vector<std::string>{});
  // A decode with an empty output frontier (nothing emitted after the prefill).
  const std::string decode =
      Ev(4, "append_start",
         R"("request_id":"R","handle_generation":0,"operation_id":"d","base_snapshot":1,)"
         R"("payload":{"interval":[2,3],"cache_position":[2,3],"mask_key_length":3,)"
         R"("position_stage":"post_rope","purpose":"decode","input_token":7})");
  const std::string prefilled = head + PrefillLines();
  EXPECT_EQ(Codes(prefilled + decode + "\n").at(0), "FRONTIER_CACHE_OVERCOMMIT");
  EXPECT_EQ(Codes(prefilled + Mutate(decode, R"("payload")", rejected) + "\n"),
            std::vector<std::string>{});
  // A verification committing a rejected draft's row.
  std::vector<std::string> l = test::SourceLines(kSpeculative);
  std::string over = Mutate(Mutate(l[11], "[100,102]", "[100,103]"), "[100,102]", "[100,103]");
  over = Mutate(over, R"("mask_key_length":102)", R"("mask_key_length":103)");
  over = Mutate(Mutate(over, R"("operation_id":"verify")", R"("operation_id":"verify-3")"),
                R"("payload")", rejected);
  l.insert(l.begin() + 11, over);
  EXPECT_EQ(Codes(Renumbered(l)), std::vector<std::string>{});
}

// A retry re-sends the same call: its drafts, accepted count and pending bytes are judged too
// (before, a verification retried with other drafts or another count passed).
TEST(TraceCheckerTest, RegressionARetriedVerificationRepeatsItsCall) {
  const std::vector<std::string> l = test::SourceLines(kSpeculative);
  auto with_retry = [&](const std::string& retry) {
    std::vector<std::string> t = l;
    t.insert(t.begin() + 12, retry);
    return Codes(Renumbered(t));
  };
  EXPECT_EQ(with_retry(l[11]), std::vector<std::string>{});
  EXPECT_EQ(with_retry(Mutate(l[11], "[801,802,803,804]", "[801,809,803,804]")),
            std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"});
  EXPECT_EQ(with_retry(Mutate(l[11], R"("accepted_count":2)", R"("accepted_count":1)")),
            std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"});
  EXPECT_EQ(with_retry(Mutate(l[11], R"("accepted_count":2)",
                              R"("accepted_count":2,"pending_payload_bytes":128)")),
            std::vector<std::string>{});
  EXPECT_EQ(with_retry(Mutate(l[11], R"("accepted_count":2)",
                              R"("accepted_count":2,"pending_payload_bytes":999)")),
            std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
  // A verification states its accepted count (a missing one was read as 0).
  std::vector<std::string> t = l;
  t[11] = Mutate(t[11], R"(,"accepted_count":2)", "");
  EXPECT_EQ(Codes(Renumbered(t)), std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

// A replayed receipt is the original's, committed length included (before, any length passed).
TEST(TraceCheckerTest, RegressionAReplayedReceiptRepeatsItsCommittedLength) {
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines();
  const std::string replay =
      Mutate(Publish(4), R"("result_snapshot":1,)", R"("result_snapshot":1,"outcome":"replayed",)");
  EXPECT_EQ(Codes(t + replay + "\n"), std::vector<std::string>{});
  EXPECT_EQ(Codes(t + Mutate(replay, R"("committed_length":2)", R"("committed_length":3)") + "\n"),
            std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
}

// A reused draft row relabels whatever the purpose (before, only a repair's was judged), and
// the message names a draft that does not exist as such.
TEST(TraceCheckerTest, RegressionAReusedDraftRowIsARelabelOnADecodeToo) {
  std::vector<std::string> l = test::SourceLines(kSpeculative);
  l[18] = Mutate(l[18], R"("purpose":"repair")", R"("purpose":"decode")");
  EXPECT_EQ(Codes(Renumbered(l)), std::vector<std::string>{});
  l[18] = Mutate(l[18], R"("input_token":902)", R"("input_token":902,"reused_draft_index":2)");
  EXPECT_EQ(Codes(Renumbered(l)), std::vector<std::string>{"FRONTIER_REJECTED_ROW_RELABELED"});
  l[18] = Mutate(l[18], R"("reused_draft_index":2)", R"("reused_draft_index":7)");
  const Violations v = ValidateTraceJsonl(Renumbered(l), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"FRONTIER_REJECTED_ROW_RELABELED"});
  EXPECT_NE(v[0].message.find("draft 7, which the last verification did not have"),
            std::string::npos)
      << v[0].message;
}

// A fork the contract refuses, reported as done, gates the children it names that exist here
// (before, the next append of a child named onto a released id raised a second code).
TEST(TraceCheckerTest, RegressionARefusedForkGatesAChildNamedOntoAReleasedId) {
  auto on = [](const std::string& request, int seq, const std::string& type,
               const std::string& rest) {
    return Ev(seq, type, R"("request_id":")" + request + R"(","handle_generation":0,)" + rest) +
           "\n";
  };
  const std::string prefill = R"("payload":{"interval":[0,2],"cache_position":[0,2],)"
                              R"("mask_key_length":2,"position_stage":"post_rope",)"
                              R"("purpose":"prefill"})";
  const std::string t =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
      on("R", 4, "output_emit", R"("base_snapshot":1,"payload":{"output_index":0,"token":5})") +
      on("R", 5, "finish", R"("payload":{})") +
      on("R", 6, "release", R"("payload":{"result_handle_generation":1})") +
      on("P", 7, "request_allocate", R"("payload":{"prompt_length":2})") +
      on("P", 8, "append_start", R"("operation_id":"pp","base_snapshot":0,)" + prefill) +
      on("P", 9, "append_stage_layer",
         R"("operation_id":"pp","payload":{"layer":0,"interval":[0,2]})") +
      on("P", 10, "append_publish", R"("operation_id":"pp","base_snapshot":0,"payload":{})") +
      on("P", 11, "fork",
         R"("base_snapshot":1,"payload":{"prefix_length":2,"children":[{"request_id":"R"}]})") +
      on("R", 12, "append_start", R"("operation_id":"r1","base_snapshot":0,)" + prefill);
  EXPECT_EQ(Codes(t), std::vector<std::string>{"LIFECYCLE_HANDLE_EXISTS"});
}

// Messages name the event the trace holds, not the lifecycle operation it maps to.
TEST(TraceCheckerTest, RegressionMessagesNameTheTracesEvent) {
  const std::string failure =
      Ev(4, "append_failure",
         R"("request_id":"R","handle_generation":0,"operation_id":"zz","base_snapshot":1,)"
         R"("outcome":"failure","payload":{})");
  const Violations v = ValidateTraceJsonl(
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() + failure + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_TXN_UNKNOWN"});
  EXPECT_EQ(v[0].message.rfind("append_failure: ", 0), 0u) << v[0].message;
}

// Probe 9 (2026-12-04): docs/trace-format.md said "each row is one live request", and live
// elsewhere means not yet released, while a FINISHED row was LIFECYCLE_HANDLE_TERMINAL. The
// seed's reorder permutes LiveSequenceRow values, each with the next_position its next row takes;
// a finished or cancelled request takes no next row (M5.1 0x01 "Finish is a generation decision:
// no later append should begin"), so the code stays, and the docs, the registry text and the
// message now say why.
TEST(TraceCheckerTest, RegressionAReorderRowIsADecodeReadyRequest) {
  auto r = [](int seq, const std::string& who, const std::string& type, const std::string& rest) {
    return Ev(seq, type, R"("request_id":")" + who + R"(","handle_generation":0,)" + rest) + "\n";
  };
  const std::string forked =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
      r(4, "R", "output_emit", R"("base_snapshot":1,"payload":{"output_index":0,"token":5})") +
      r(5, "R", "fork",
        R"("base_snapshot":1,"payload":{"prefix_length":2,"children":[{"request_id":"A"},)"
        R"({"request_id":"B"}]})");
  auto reorder = [](int seq) {
    auto row = [](const std::string& id) {
      return R"({"request_id":")" + id + R"(","token_state":"t)" + id +
             R"(","next_position":2,"sampler_state":"s)" + id + R"("})";
    };
    return Ev(seq, "reorder",
              R"("payload":{"rows_before":[)" + row("A") + "," + row("B") +
                  R"(],"parent_index":[1,0],"rows_after":[)" + row("B") + "," + row("A") + "]}") +
           "\n";
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(Codes(forked + reorder(6)), V{});
  for (const char* stop : {"finish", "cancel_request"}) {
    SCOPED_TRACE(stop);
    const Violations v = ValidateTraceJsonl(
        forked + r(6, "B", stop, R"("base_snapshot":0,"payload":{})") + reorder(7), "t.jsonl");
    ASSERT_EQ(test::CodeNames(v), V{"LIFECYCLE_HANDLE_TERMINAL"}) << test::Describe(v);
    EXPECT_NE(v[0].message.find("a reorder permutes live sequences, each of which takes its next "
                                "row at next_position"),
              std::string::npos)
        << v[0].message;
  }
}

// A reorder row whose next_position is beyond the replay's committed length shows rows the
// replay lacks: its request is gated (before, the synthetic trace with a fork prefix one row
// shorter raised three codes: the reorder's, an output before logits and an append hole).
TEST(TraceCheckerTest, RegressionAReorderRowAheadOfTheReplayGatesItsRequest) {
  std::vector<std::string> l =
      test::SourceLines("fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl");
  ASSERT_EQ(Codes(Joined(l)), std::vector<std::string>{});
  size_t fork = 0;
  for (size_t i = 1; i < l.size() && !fork; ++i)
    if (l[i].find(R"("event_type":"fork")") != std::string::npos) fork = i;
  ASSERT_NE(fork, 0u);
  l[fork] = Mutate(l[fork], R"("prefix_length":5)", R"("prefix_length":4)");
  const Violations v = ValidateTraceJsonl(Joined(l), "t.jsonl");
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"})
      << test::Describe(v);
  EXPECT_EQ(v.size(), 1u) << test::Describe(v);
}

// Stop is final: an output after the finish (one that left O = G_in, which is not judged) or
// after a cancel is LIFECYCLE_HANDLE_TERMINAL (an adversarial probe found it passed).
TEST(TraceCheckerTest, RegressionNoOutputAfterTheRequestStops) {
  auto r = [](int seq, const std::string& type, const std::string& rest) {
    return Ev(seq, type, R"("request_id":"R","handle_generation":0,)" + rest) + "\n";
  };
  const std::string decoded =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
      r(4, "output_emit", R"("base_snapshot":1,"payload":{"output_index":0,"token":5})") +
      r(5, "append_start",
        R"("operation_id":"d","base_snapshot":1,"payload":{"interval":[2,3],)"
        R"("cache_position":[2,3],"mask_key_length":3,"position_stage":"post_rope",)"
        R"("purpose":"decode","input_token":5})") +
      r(6, "append_stage_layer", R"("operation_id":"d","payload":{"layer":0,"interval":[2,3]})") +
      r(7, "append_publish", R"("operation_id":"d","base_snapshot":1,"payload":{})");
  const std::string output1 =
      r(9, "output_emit", R"("base_snapshot":2,"payload":{"output_index":1,"token":6})");
  EXPECT_EQ(Codes(decoded + Mutate(Mutate(output1, R"("e9")", R"("e8")"), R"("local_sequence":9)",
                                   R"("local_sequence":8)")),
            std::vector<std::string>{});
  EXPECT_EQ(Codes(decoded + r(8, "finish", R"("payload":{})")), std::vector<std::string>{});
  EXPECT_EQ(Codes(decoded + r(8, "finish", R"("payload":{})") + output1),
            std::vector<std::string>{"LIFECYCLE_HANDLE_TERMINAL"});
  EXPECT_EQ(Codes(decoded + r(8, "cancel_request", R"("payload":{})") + output1),
            std::vector<std::string>{"LIFECYCLE_HANDLE_TERMINAL"});
}

// ---- Regressions found by an adversarial probe of the transfer plane, the lifecycle's other
// operations and the header (2026-12-04).

// A publish refused because layers are missing leaves its transaction OPEN (M5.1 0x01
// publish_append asserts PREPARED before its compare-and-publish); only a refused
// compare-and-publish closes it (REJECTED). The trace format said every refused publish closed
// its transaction; the checker followed the seed, and the document now does too.
TEST(TraceCheckerTest, RegressionAPublishRefusedForMissingLayersLeavesItsTransactionOpen) {
  auto r = [](int seq, const std::string& type, const std::string& rest) {
    return Ev(seq, type, R"("request_id":"R","handle_generation":0,)" + rest) + "\n";
  };
  const std::string refused = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                              r(2, "append_publish",
                                R"("operation_id":"p","base_snapshot":0,"outcome":"rejected",)"
                                R"("payload":{})");
  EXPECT_EQ(Codes(refused), std::vector<std::string>{"TRACE_OPERATION_UNTERMINATED"});
  // Still OPEN: its layer and its publication may follow.
  EXPECT_EQ(Codes(refused + Stage(3) + "\n" + Publish(4) + "\n"), std::vector<std::string>{});
  EXPECT_EQ(Codes(refused + r(3, "cancel_txn", R"("operation_id":"p","payload":{})")),
            std::vector<std::string>{});
}

// finish changes the snapshot (its phase), so an append opened before it cannot publish after
// it: LIFECYCLE_STALE_BASE, whose message named the lifecycle object's internal generations
// only ("generation 3 vs 4") beside two equal snapshot versions. It now says what moved.
TEST(TraceCheckerTest, RegressionARepairOpenedBeforeTheFinishCannotPublishAfterIt) {
  auto r = [](int seq, const std::string& type, const std::string& rest) {
    return Ev(seq, type, R"("request_id":"R","handle_generation":0,)" + rest) + "\n";
  };
  const std::string repair_start =
      r(5, "append_start",
        R"("operation_id":"x","base_snapshot":1,"payload":{"interval":[2,3],)"
        R"("cache_position":[2,3],"mask_key_length":3,"position_stage":"post_rope",)"
        R"("purpose":"repair","input_token":5})") +
      r(6, "append_stage_layer", R"("operation_id":"x","payload":{"layer":0,"interval":[2,3]})");
  const std::string head =
      std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
      r(4, "output_emit", R"("base_snapshot":1,"payload":{"output_index":0,"token":5})");
  auto publish = [&](int seq) {
    return r(seq, "append_publish", R"("operation_id":"x","base_snapshot":1,"payload":{})");
  };
  // On one side of the finish: both conform.
  EXPECT_EQ(Codes(head + repair_start + publish(7) + r(8, "finish", R"("payload":{})")),
            std::vector<std::string>{});
  // Opened before it, published after it.
  const Violations v = ValidateTraceJsonl(
      head + repair_start + r(7, "finish", R"("payload":{})") + publish(8), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_STALE_BASE"});
  EXPECT_NE(v[0].message.find("is at snapshot 1, now FINISHED: the stop changed the snapshot"),
            std::string::npos)
      << v[0].message;
}

// Messages name the trace's event: a cancel_txn's refusal said "append_failure:".
TEST(TraceCheckerTest, RegressionACancelTxnRefusalIsNamedCancelTxn) {
  const std::string trace = std::string(kHeader) + "\n" + Alloc(0) + "\n" + PrefillLines() +
                            Ev(4, "cancel_txn",
                               R"("request_id":"R","handle_generation":0,"operation_id":"p",)"
                               R"("payload":{})") +
                            "\n";
  const Violations v = ValidateTraceJsonl(trace, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_TXN_FINAL"});
  EXPECT_EQ(v[0].message.rfind("cancel_txn: txn 'p' is already PUBLISHED", 0), 0u) << v[0].message;
}

// A second declaration of a source with another component replaced the first: every event of
// the source then raised TRACE_SOURCE_UNDECLARED (18 codes for one header line). The first
// declaration stands.
TEST(TraceCheckerTest, RegressionASourceDeclaredTwiceKeepsItsFirstDeclaration) {
  const std::string header = Mutate(
      kHeader, R"("source_component":"semantic"}])",
      R"("source_component":"semantic"},{"source_instance":"e","source_component":"allocator"}])");
  const Violations v =
      ValidateTraceJsonl(header + "\n" + Alloc(0) + "\n" + PrefillLines(), "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_VALUE_INVALID"});
  EXPECT_EQ(v[0].pointer, "/0/sources/1");
}

// Probe 94: the header's bindings were read and never judged: a malformed pin passed, and so did
// a cache_abi_sha256 other than the cache_abi.id the events are bound to. Each is one code on
// line 1, and the replay goes on.
TEST(TraceCheckerTest, RegressionTheHeaderBindingsArePinsOfTheTracesAbi) {
  const std::string sha(64, 'a'), other(64, 'b');
  auto with = [&](const std::string& id, const std::string& bindings) {
    return Mutate(Mutate(kHeader, R"("id":"abi")", R"("id":")" + id + "\""),
                  R"("audit":"complete")", R"("audit":"complete","bindings":)" + bindings) +
           "\n" + Alloc(0) + "\n" + PrefillLines();
  };
  EXPECT_EQ(Codes(with(sha, R"({"cache_abi_sha256":")" + sha + R"(","manifest_sha256":")" + other +
                                "\"}")),
            std::vector<std::string>{});
  const Violations mismatch =
      ValidateTraceJsonl(with(sha, R"({"cache_abi_sha256":")" + other + "\"}"), "t.jsonl");
  EXPECT_TRUE(test::OnlyViolationAt(mismatch, "LIFECYCLE_CACHE_ABI_MISMATCH",
                                    "/0/bindings/cache_abi_sha256"))
      << test::Describe(mismatch);
  // Probe 95: an id that is a label (the kit's own traces name their ABI so) names the ABI the
  // pin digests, which the trace cannot check: not compared; an id in upper case is the digest.
  EXPECT_EQ(Codes(with("abi-loop2", R"({"cache_abi_sha256":")" + other + "\"}")),
            std::vector<std::string>{});
  std::string upper = sha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_EQ(Codes(with(upper, R"({"cache_abi_sha256":")" + sha + "\"}")),
            std::vector<std::string>{});
  for (const char* key : {"cache_abi_sha256", "manifest_sha256"}) {
    SCOPED_TRACE(key);
    const Violations malformed =
        ValidateTraceJsonl(with(sha, std::string(R"({")") + key + R"(":"XYZ"})"), "t.jsonl");
    EXPECT_TRUE(
        test::OnlyViolationAt(malformed, "INPUT_VALUE_INVALID", std::string("/0/bindings/") + key))
        << test::Describe(malformed);
  }
}

// A malformed pin longer than the quote limit is quoted clipped at a character boundary, with
// its length. Regression: the message cut the pin at byte 80, inside a 2-byte character, and the
// text report carried its stray lead byte (JSON showed U+FFFD in its place).
TEST(TraceCheckerTest, RegressionALongMalformedPinIsQuotedWithoutSplittingACharacter) {
  const std::string pin = std::string(79, 'a') + "\xC3\xA9" + "x";  // "é" at bytes 79-80
  const std::string trace =
      Mutate(kHeader, R"("audit":"complete")",
             R"("audit":"complete","bindings":{"manifest_sha256":")" + pin + "\"}") +
      "\n" + Alloc(0) + "\n" + PrefillLines();
  const Violations v = ValidateTraceJsonl(trace, "t.jsonl");
  ASSERT_TRUE(test::OnlyViolationAt(v, "INPUT_VALUE_INVALID", "/0/bindings/manifest_sha256"))
      << test::Describe(v);
  EXPECT_EQ(v[0].message, "expected a 64-character lowercase hex SHA-256, got \"" +
                              std::string(79, 'a') + "...\" (82 bytes)");
}

// Each variant of `doc` with one string value or member name lengthened by `extra` bytes.
void LengthenedVariants(const Json& doc, const std::string& extra, std::vector<Json>* out,
                        Json* root = nullptr, Json* at = nullptr) {
  if (root == nullptr) {
    Json copy = doc;
    LengthenedVariants(doc, extra, out, &copy, &copy);
    return;
  }
  if (at->is_string()) {
    const std::string was = at->get<std::string>();
    *at = was + extra;
    out->push_back(*root);
    *at = was;
  } else if (at->is_array()) {
    for (auto& element : *at) LengthenedVariants(doc, extra, out, root, &element);
  } else if (at->is_object()) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : at->items()) keys.push_back(key);
    for (const std::string& key : keys) {
      Json value = (*at)[key];
      at->erase(key);
      (*at)[key + extra] = value;
      out->push_back(*root);
      at->erase(key + extra);
      (*at)[key] = value;
      LengthenedVariants(doc, extra, out, root, &(*at)[key]);
    }
  }
}

// Regression: the trace checker quoted ids, member names, kinds, source names and digests whole,
// up to its report limit of 4096 bytes, so a 10 KB value made a 4 KB message of it (2026-12-07).
// Each bundled lifecycle trace with one string value or member name lengthened by 10 KB: no
// message is longer than 1,000 bytes (values are clipped at 80 or 128 bytes and counted).
TEST(TraceCheckerTest, RegressionALongValueIsQuotedClippedInEveryMessage) {
  const std::string extra(10000, 'x');
  size_t traces = 0, violations = 0;
  for (const char* fixture : {"fixtures/m5_1/lifecycle/cancel_before_first_output.jsonl",
                              "fixtures/m5_1/lifecycle/doc_example_two_requests.jsonl",
                              "fixtures/m5_1/lifecycle/synthetic_lifecycle.jsonl",
                              "fixtures/m5_1/lifecycle/two_layer_decode.jsonl"}) {
    const std::vector<std::string> lines = test::SourceLines(fixture);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::vector<Json> variants;
      LengthenedVariants(Json::parse(lines[i]), extra, &variants);
      for (const Json& variant : variants) {
        std::string trace;
        for (size_t j = 0; j < lines.size(); ++j)
          trace += (j == i ? variant.dump() : lines[j]) + "\n";
        ++traces;
        for (const Violation& v : ValidateTraceJsonl(trace, "t.jsonl")) {
          ++violations;
          EXPECT_LE(v.message.size(), 1000u)
              << fixture << " line " << i + 1 << ": " << ErrorCodeName(v.code) << " "
              << v.message.substr(0, 160);
        }
      }
    }
  }
  EXPECT_GT(traces, 2000u);
  EXPECT_GT(violations, traces);
}

// Mutation audit 4: an id that is a digest in upper case is compared as that digest, so a pin of
// another digest is LIFECYCLE_CACHE_ABI_MISMATCH (not only the equal pin passing); and a pin is
// compared only with a usable cache_abi: beside a cache_abi that is itself reported (bytes per
// token not a multiple of its layers) the pin is no second code.
TEST(TraceCheckerTest, RegressionAnUpperCaseDigestIdIsComparedAndAnUnusableAbiIsNotCompared) {
  const std::string sha(64, 'a'), other(64, 'b'), upper(64, 'A');
  auto with = [&](const std::string& header, const std::string& id, const std::string& pin) {
    return Mutate(Mutate(header, R"("id":"abi")", R"("id":")" + id + "\""), R"("audit":"complete")",
                  R"("audit":"complete","bindings":{"cache_abi_sha256":")" + pin + "\"}") +
           "\n" + Alloc(0) + "\n" + PrefillLines();
  };
  const Violations mismatch = ValidateTraceJsonl(with(kHeader, upper, other), "t.jsonl");
  EXPECT_TRUE(test::OnlyViolationAt(mismatch, "LIFECYCLE_CACHE_ABI_MISMATCH",
                                    "/0/bindings/cache_abi_sha256"))
      << test::Describe(mismatch);
  const std::string three_layers = Mutate(kHeader, R"("num_layers":1)", R"("num_layers":3)");
  const Violations unusable = ValidateTraceJsonl(with(three_layers, sha, other), "t.jsonl");
  EXPECT_TRUE(
      test::OnlyViolationAt(unusable, "INPUT_VALUE_OUT_OF_RANGE", "/0/cache_abi/bytes_per_token"))
      << test::Describe(unusable);
}

// Mutation audit 4: an empty operation_id is reported where it is, on an event that takes no
// operation too (there no later reader refuses it: with the envelope's check skipped, an
// allocation naming operation "" passed).
TEST(TraceCheckerTest, RegressionAnEmptyOperationIdIsReportedAtTheEnvelope) {
  const std::string head = std::string(kHeader) + "\n";
  const std::string alloc =
      Mutate(Alloc(0), R"("handle_generation":0,)", R"("handle_generation":0,"operation_id":"",)");
  const std::string start = Mutate(Start(1), R"("operation_id":"p")", R"("operation_id":"")");
  for (const bool fast : {true, false}) {
    CheckerOptions opt;
    opt.fast_readers = fast;
    TraceChecker a("t.jsonl", opt), b("t.jsonl", opt);
    const Violations on_alloc = FeedTraceText(&a, head + alloc + "\n" + PrefillLines());
    EXPECT_TRUE(test::OnlyViolationAt(on_alloc, "INPUT_VALUE_INVALID", "/1/operation_id"))
        << fast << test::Describe(on_alloc);
    const Violations on_start = FeedTraceText(
        &b, head + Alloc(0) + "\n" + start + "\n" + Stage(2) + "\n" + Publish(3) + "\n");
    EXPECT_TRUE(test::OnlyViolationAt(on_start, "INPUT_VALUE_INVALID", "/2/operation_id"))
        << fast << test::Describe(on_start);
  }
}

// Mutation audit 4: a hole that the lines dropped without a number explain is theirs once: the
// source's next hole, with no line dropped since, is TRACE_SEQUENCE_GAP.
TEST(TraceCheckerTest, RegressionUnnumberedDropsExplainOneHoleOnly) {
  const std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\nnot json\n" + Start(2) + "\n" +
                        Stage(3) + "\n" + Publish(5) + "\n";
  const Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v),
            (std::vector<std::string>{"TRACE_LINE_MALFORMED", "TRACE_SEQUENCE_GAP"}))
      << test::Describe(v);
  EXPECT_EQ(v[1].line, 6u);
}

// Mutation audit 4: every raw control byte in a string is named as one, 0x1F (the last below
// 0x20) as 0x01 is: probe 86's trace with its event_id's 0x01 replaced by 0x1F is one
// TRACE_LINE_MALFORMED, the line named and its request gated.
TEST(TraceCheckerTest, RegressionTheLastControlByteIsNamedLikeTheFirst) {
  std::string t;
  for (const std::string& line :
       test::SourceLines("reference/trace/testdata/semantic/"
                         "probe86_a_raw_control_byte_in_an_event_id_raised_a_second_code.jsonl"))
    t += line + "\n";
  ASSERT_EQ(std::count(t.begin(), t.end(), '\x01'), 1);
  std::replace(t.begin(), t.end(), '\x01', '\x1f');
  const Violations v = ValidateTraceJsonl(t, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_LINE_MALFORMED"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("byte 0x1F in a string is a control character"), std::string::npos)
      << v[0].message;
}

// B_token = L * H_kv * d_h * (b_K + b_V) has no zero factor: bytes_per_token 0 passed.
TEST(TraceCheckerTest, RegressionZeroBytesPerTokenIsOutOfRange) {
  const Violations v = ValidateTraceJsonl(
      Mutate(kHeader, R"("bytes_per_token":8)", R"("bytes_per_token":0)") + "\n" + Alloc(0) + "\n",
      "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_EQ(v[0].pointer, "/0/cache_abi/bytes_per_token");
  // Nor is it below L: each layer stores at least a byte of a token (probe 30: 1 B for 2 layers
  // passed). L bytes is the least (a sub-byte dtype on one head of one dimension).
  auto with = [](int layers, int bytes) {
    return Mutate(Mutate(kHeader, R"("num_layers":1)", R"("num_layers":)" + std::to_string(layers)),
                  R"("bytes_per_token":8)", R"("bytes_per_token":)" + std::to_string(bytes)) +
           "\n";
  };
  EXPECT_EQ(Codes(with(2, 1)), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_EQ(Codes(with(2, 2)), std::vector<std::string>{});
  EXPECT_EQ(Codes(with(32, 31)), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  // Probe 91: nor is it a fraction of a byte per layer (64 B over 3 layers passed; with staged
  // payload bytes each stage then reported "256/3").
  EXPECT_EQ(Codes(with(3, 64)), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_EQ(Codes(with(3, 66)), std::vector<std::string>{});
  EXPECT_EQ(Codes(with(32, 33)), std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
}

// M5.1 0x07: residency "may include copies or omit non-resident logical payload" and planes are
// compared only under a conversion model. Every observation was compared with committed rows x
// B_token, so a payload split over HBM and host was two violations. The default stays the seed's
// Loop 8 observer (one copy); a header's "residency_model": "tiered" lifts the comparison.
TEST(TraceCheckerTest, RegressionATieredResidencyIsNotComparedWithCommittedRows) {
  const std::string events = Alloc(0) + "\n" + PrefillLines();  // 2 rows x 16 B committed by e3
  auto host = [](uint64_t bytes) {
    return Mutate(Mutate(Mutate(Residency("e3", bytes), R"("event_id":"r0")", R"("event_id":"r1")"),
                         R"("local_sequence":0)", R"("local_sequence":1)"),
                  R"("tier":"hbm")", R"("tier":"host")");
  };
  const std::string split = Residency("e3", 16) + "\n" + host(16) + "\n";
  const Violations one_copy_split =
      ValidateTraceJsonl(std::string(kHeaderWithResidency) + "\n" + events + split, "t.jsonl");
  EXPECT_EQ(test::CodeNames(one_copy_split),
            std::vector<std::string>{"TRACE_OBSERVATION_INCONSISTENT"});
  EXPECT_EQ(one_copy_split.size(), 2u) << test::Describe(one_copy_split);  // one per tier
  const std::string tiered = Mutate(kHeaderWithResidency, R"("audit":"complete")",
                                    R"("audit":"complete","residency_model":"tiered")");
  EXPECT_EQ(Codes(tiered + "\n" + events + split), std::vector<std::string>{});
  // A copy in each tier (replication) and an empty tier are tiered residency too.
  EXPECT_EQ(Codes(tiered + "\n" + events + Residency("e3", 32) + "\n" + host(0) + "\n"),
            std::vector<std::string>{});
  const std::string one_copy = Mutate(kHeaderWithResidency, R"("audit":"complete")",
                                      R"("audit":"complete","residency_model":"one_copy")");
  EXPECT_EQ(Codes(one_copy + "\n" + events + Residency("e3", 32) + "\n"),
            std::vector<std::string>{});
  EXPECT_EQ(Codes(Mutate(kHeaderWithResidency, R"("audit":"complete")",
                         R"("audit":"complete","residency_model":"sampled")") +
                  "\n" + events),
            std::vector<std::string>{"INPUT_VALUE_INVALID"});
}

// Probes 16 and 18-22 (2026-12-04): small traces of the semantic plane, each replayed whole
// with the fast and the general readers; a reproducer's name says what went wrong before its fix.
// `want` is the distinct codes raised (test::CodeNames).
// Probe 47: a listed violation kept every byte of the ids it quoted, so 20,000 events naming
// 10 KB request ids never allocated held 525 MB (1.7 GB with --format json) under the default
// --max-violations. Its message, pointer and context ids are clipped now.
TEST(TraceCheckerTest, RegressionAListedViolationKeepsBoundedBytes) {
  const std::string id(10'000, 'x');
  TraceChecker c("t.jsonl");
  c.Feed(kHeader, 1);
  c.Feed(Ev(0, "output_emit",
            R"("request_id":")" + id +
                R"(","handle_generation":0,"payload":{"output_index":0,"token":1})"),
         2);
  const Violations& v = c.Finish(false);
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_UNKNOWN_HANDLE"});
  EXPECT_LE(v[0].message.size(), kMaxReportedMessageBytes + 32);
  EXPECT_LE(c.contexts()[0].request_id.size(), kMaxReportedIdBytes + 32);
  EXPECT_NE(c.contexts()[0].request_id.find("(10000 bytes)"), std::string::npos);
}

TEST(TraceCheckerTest, SemanticProbeRegressionsRaiseTheirRootCauseOnly) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      // A refused release freed nothing, yet observations of 0 bytes passed and the true bytes
      // were "owned by no one".
      {"probe16_refused_release_observed_as_free", {"TRACE_CAUSE_WRONG_EVENT"}},
      {"probe16_refused_release_keeps_its_rows", {}},
      // A second verification replaced the first's unemitted accepted draft: the wrong draft
      // passed at output 1 and the right one failed.
      {"probe16_second_verify_replaced_pending_drafts", {"FRONTIER_TOKEN_MISMATCH"}},
      {"probe16_second_verify_queues_after_pending_drafts", {}},
      // A delayed free of a released incarnation, observed after the id was allocated again,
      // named its release yet was TRACE_CAUSE_UNKNOWN and gated the new incarnation, hiding its
      // own violation.
      {"probe16_delayed_free_after_reallocation_gated_the_new_incarnation",
       {"LIFECYCLE_RELEASE_LIVE"}},
      {"probe16_delayed_allocator_free_after_reallocation_hid_a_gap",
       {"FRONTIER_OUTPUT_INDEX_GAP"}},
      // After a frontier breach stopped the request's frontier checks, a refusal the frontier
      // requires was TRACE_OUTCOME_INVALID ("the contract admits it") and gated the request.
      {"probe16_refusal_after_a_frontier_breach_was_outcome_invalid",
       {"FRONTIER_OUTPUT_INDEX_GAP", "LIFECYCLE_RELEASE_LIVE"}},
      {"probe16_refused_repair_after_a_finish_claim_mismatch_was_outcome_invalid",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      // A truncate while an accepted draft was still to be emitted stopped the frontier checks:
      // an output index gap, a decode of a token never emitted and a wrong finish claim passed.
      {"probe16_truncate_of_unemitted_draft_rows_stopped_the_frontier",
       {"FRONTIER_OUTPUT_INDEX_GAP"}},
      // A read showing that the replay's committed length is not the runtime's (a misreported
      // fork prefix) left the request judged: its next append raised LIFECYCLE_APPEND_HOLE too.
      // A residency observation showing it does not gate (trace-format.md: another plane's
      // witness), so there both codes stay.
      {"probe16_read_showing_a_longer_fork_prefix_then_append_hole", {"TRACE_SNAPSHOT_MISMATCH"}},
      // A second failure record of one append passed (an append has exactly one publication or
      // failure record); a refused repeat conforms, and cancel_request's abort leaves the
      // append's own failure record the first.
      {"probe16_two_failure_records_for_one_append_passed", {"TRACE_OUTCOME_INVALID"}},
      {"probe16_a_refused_second_cancel_conforms", {}},
      {"probe16_failure_record_after_cancel_request_is_the_first", {}},
      // Probe 18: a fork refused as the contract expects gated the ids it named, so a request
      // later allocated under one (or never created) went unjudged.
      {"probe18_refused_fork_gated_the_child_it_named", {"FRONTIER_OUTPUT_INDEX_GAP"}},
      {"probe18_refused_fork_child_never_created_went_unjudged", {"LIFECYCLE_UNKNOWN_HANDLE"}},
      // A verification with no input token, judged at its start only: outputs emitted before
      // its publication (the previous verification's correction) left a token its rows did not
      // process, and its draft row took that token's place.
      {"probe18_verify_published_after_its_logits_were_used_passed", {"FRONTIER_TOKEN_MISMATCH"}},
      // A publication refused as a lost compare-and-publish closes its append (REJECTED): a
      // failure record after it passed.
      {"probe18_failure_record_after_a_lost_publication_passed", {"TRACE_OUTCOME_INVALID"}},
      // A request gated in one incarnation stayed gated in the next, whose own violation went
      // unreported.
      {"probe18_a_gate_hid_the_next_incarnation",
       {"TRACE_SNAPSHOT_MISMATCH", "FRONTIER_OUTPUT_INDEX_GAP"}},
      // Probe 19: the gate lifting raised codes of its own (a refused allocation lifted it; late
      // events of the retired incarnation were judged); a refused fork of a gated parent still
      // gated its child; a second failure record after the release passed (its operation was
      // dropped at the release).
      {"probe19_a_refused_allocation_lifted_a_gate", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe19_an_observation_of_a_retired_incarnation_after_the_lift",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe19_a_late_retry_of_a_retired_incarnation_after_the_lift", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe19_a_refused_fork_of_a_gated_parent_gated_its_child",
       {"TRACE_SNAPSHOT_MISMATCH", "FRONTIER_OUTPUT_INDEX_GAP"}},
      {"probe19_a_second_failure_record_after_the_release_passed", {"TRACE_OUTCOME_INVALID"}},
      // Probe 20: the lift's skip covered transfer events (whose generation is the transfer's)
      // and generations that never existed, a second lift forgot the first, and a semantic
      // allocation lifted a gate the transfer plane set; closing records: one before the
      // release and one after passed, the first after the receipt window was LIFECYCLE_TXN_UNKNOWN,
      // a refused publication after cancel_request did not close.
      {"probe20_a_lift_skipped_transfer_events_of_the_request",
       {"TRACE_SNAPSHOT_MISMATCH", "HANDOFF_PRODUCER_GATE"}},
      {"probe20_a_lift_skipped_a_valid_plan", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe20_a_lift_skipped_a_generation_that_never_existed",
       {"TRACE_SNAPSHOT_MISMATCH", "TRACE_HANDLE_GENERATION_MISMATCH"}},
      {"probe20_an_observation_misnaming_the_retired_generation_was_skipped",
       {"TRACE_SNAPSHOT_MISMATCH", "TRACE_HANDLE_GENERATION_MISMATCH"}},
      {"probe20_a_second_lift_unretired_the_first_incarnation", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe20_an_allocation_lifted_a_transfer_plane_gate", {"HANDOFF_RESERVATION_TOO_SMALL"}},
      {"probe20_a_second_record_after_the_release_passed_when_the_first_preceded_it",
       {"TRACE_OUTCOME_INVALID"}},
      {"probe20_a_first_failure_record_after_the_receipt_window_was_txn_unknown", {}},
      {"probe20_a_refused_publication_after_cancel_request_did_not_close",
       {"TRACE_OUTCOME_INVALID"}},
      // Probe 21: a lift after the release retired the new incarnation's own generation; after
      // the receipt window a refused publication did not close its kept operation, and a kept
      // operation's record could name any request; records of an old incarnation's operation
      // labelled with the new generation passed (or raised two codes); a publication refused as
      // the frontier's re-check requires was TRACE_OUTCOME_INVALID.
      {"probe21_a_lift_after_the_release_skipped_the_new_incarnation",
       {"INPUT_FIELD_TYPE", "TRACE_SNAPSHOT_MISMATCH"}},
      {"probe21_a_refused_publication_after_the_receipt_window_did_not_close",
       {"TRACE_OUTCOME_INVALID"}},
      {"probe21_a_kept_operation_record_named_another_request",
       {"TRACE_OPERATION_REQUEST_MISMATCH"}},
      {"probe21_old_incarnation_records_labelled_with_the_new_generation_passed",
       {"TRACE_HANDLE_GENERATION_MISMATCH"}},
      {"probe21_an_old_published_operation_record_raised_two_codes",
       {"TRACE_HANDLE_GENERATION_MISMATCH"}},
      // Probe 22: a publication refused as the frontier's re-check requires closes its append
      // (it was TRACE_OPERATION_UNTERMINATED alone, and records after it passed); a late failure
      // record naming the tombstone's generation conforms; an operation id started again by
      // another request was erased by the old owner's re-allocation, or kept its closing record.
      {"probe22_a_publication_refused_by_the_frontier_recheck_closes_its_append", {}},
      {"probe22_a_second_record_after_a_frontier_refused_publication_passed",
       {"TRACE_OUTCOME_INVALID"}},
      {"probe22_a_failure_record_naming_the_tombstone_generation_conforms", {}},
      {"probe22_a_reused_operation_id_was_erased_by_its_old_owner", {}},
      {"probe22_a_reused_operation_id_kept_its_old_closing_record", {"TRACE_OUTCOME_INVALID"}},
      // After the receipt window, a failure record of the released incarnation's operation,
      // labelled with the re-allocated id's generation, also raised TRACE_SNAPSHOT_MISMATCH (its
      // base compared with the new incarnation's snapshot, as for a late completion).
      {"probe22_an_unknown_operation_on_a_reallocated_id_raised_two_codes",
       {"LIFECYCLE_TXN_UNKNOWN"}},
      // Snapshot claims where the format admits none passed with any number: on a reorder and
      // on an allocator observation (null and null), a result on a refused release (a refusal
      // changes no snapshot), a base on a refused read beyond the handle's version.
      {"probe23_a_reorder_claiming_snapshots_passed", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe23_an_observation_claiming_snapshots_passed", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe23_a_refused_release_claiming_a_result_passed", {"TRACE_OUTCOME_INVALID"}},
      {"probe23_a_refused_read_named_a_snapshot_never_reached", {"TRACE_SNAPSHOT_MISMATCH"}},
      // A fork with "children": [] was refused, and the child it meant to create raised
      // LIFECYCLE_UNKNOWN_HANDLE at its first event.
      {"probe23_a_fork_naming_no_children_left_them_ungated", {"INPUT_VALUE_INVALID"}},
      // A lone surrogate escape ("\ud800", JSON by RFC 8259's grammar) was "not JSON" and its
      // request was not gated: the next observation of the request raised TRACE_CAUSE_UNKNOWN.
      {"probe23_a_lone_surrogate_escape_left_its_request_ungated", {"TRACE_LINE_MALFORMED"}},
      // A header declaring the wrong component for a source raised TRACE_SOURCE_UNDECLARED at
      // every event, each dropped, so nothing of the source's plane was judged.
      {"probe23_a_misdeclared_source_component_dropped_every_event", {"TRACE_SOURCE_UNDECLARED"}},
      // "k": null on a stage (an optional member, null = absent) was INPUT_FIELD_TYPE.
      {"probe23_a_null_k_on_a_stage_was_a_type_error", {}},
      // A cold transfer plan moving 16 tokens with reserved_blocks 0 passed.
      {"probe24_a_plan_reserving_no_blocks_for_its_tokens_passed",
       {"HANDOFF_RESERVATION_TOO_SMALL"}},
      // A refusal of a request never created conforms, yet it may not claim a result (or, for
      // a read, a base): these passed.
      {"probe26_a_refused_finish_of_a_request_never_created_claimed_a_result",
       {"TRACE_OUTCOME_INVALID"}},
      {"probe26_a_refused_fork_of_a_request_never_created_claimed_result_0",
       {"TRACE_OUTCOME_INVALID"}},
      {"probe26_a_refused_read_of_a_request_never_created_named_a_base",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      // An undeclared source whose first event stated another plane's component was adopted with
      // it: that event and the source's next, correct one raised two more codes.
      {"probe26_an_undeclared_source_first_stating_another_plane_raised_three_codes",
       {"TRACE_SOURCE_UNDECLARED"}},
      // The wildcard gate of a fork naming no children did not cover observations: one of the
      // child it meant to create raised TRACE_CAUSE_UNKNOWN.
      {"probe26_an_observation_of_a_child_of_a_fork_naming_none_was_judged",
       {"INPUT_VALUE_INVALID"}},
      // A reorder naming a gated request had its snapshot claim judged (an observation's is not).
      {"probe26_a_reorder_naming_a_gated_request_was_judged", {"INPUT_FIELD_TYPE"}},
      // A lone surrogate in the request_id itself, or in a fork child's id, gated nothing (the
      // id with U+FFFD in its place named no request): the next event raised a second code.
      {"probe26_a_lone_surrogate_in_a_request_id_gated_nothing", {"TRACE_LINE_MALFORMED"}},
      {"probe26_a_lone_surrogate_in_a_fork_childs_id_gated_nothing", {"TRACE_LINE_MALFORMED"}},
      // A lone surrogate in the header's producer.name made the header unusable: nothing was
      // replayed, so the trace's real violation (line 15) went unreported.
      {"probe27_a_lone_surrogate_in_the_headers_producer_name_stopped_the_replay",
       {"TRACE_HEADER_INVALID", "TRACE_OBSERVATION_INCONSISTENT"}},
      // A raw byte not UTF-8 in a string made the line "not JSON", naming nothing: the next
      // event of its request (or, in the request_id itself, of a request not yet created)
      // raised LIFECYCLE_UNKNOWN_HANDLE too. Gated as for a lone surrogate escape.
      {"probe23_a_byte_not_utf8_in_a_string_gated_nothing", {"TRACE_LINE_MALFORMED"}},
      {"probe23_a_byte_not_utf8_in_a_request_id_gated_nothing", {"TRACE_LINE_MALFORMED"}},
      // Probe 28: a pending_payload_bytes claim where d * B_token overflows 64 bits was
      // TRACE_SNAPSHOT_MISMATCH (the claim equalled the product modulo 2^64). The trace ends
      // after that append_start: since a wrong byte claim gates nothing (audit7 below), its
      // operation is reported unterminated too.
      {"probe28_pending_payload_bytes_beyond_64_bits_was_a_snapshot_mismatch",
       {"INPUT_ARITHMETIC_OVERFLOW", "TRACE_OPERATION_UNTERMINATED"}},
      // Probe 32: a bad byte on a line that also repeats a key, or nests deeper than 128
      // levels, was "not JSON" at that, and the request cascaded; an event with an extra kind
      // member was taken for a second header, and its request cascaded.
      {"probe32_a_byte_not_utf8_beside_a_repeated_key_was_not_json", {"TRACE_LINE_MALFORMED"}},
      {"probe32_a_byte_not_utf8_in_a_line_deeper_than_128_levels_was_not_json",
       {"TRACE_LINE_MALFORMED"}},
      {"probe32_an_event_with_a_kind_member_was_taken_for_a_header", {"INPUT_FIELD_UNKNOWN"}},
      // A request_id given twice with two values gated the first only: the second's request
      // (whose cancel the dropped line may have been) raised LIFECYCLE_RELEASE_LIVE next.
      {"probe32_a_request_id_given_twice_gated_only_its_first_value", {"TRACE_LINE_MALFORMED"}},
      // Probe 30: after H was released and allocated again, the delayed publication of the
      // earlier incarnation, refused and labelled with its true generation 0, was
      // TRACE_HANDLE_GENERATION_MISMATCH (relabelled with the live generation it passed).
      {"probe30_a_refused_stale_completion_with_its_true_generation_after_reallocation_failed", {}},
      // Probe 32. The same refusal labelled with a generation the re-allocation skipped (H
      // released at 0, allocated again at 3: no incarnation ever had 2) conformed as a stale
      // completion of an incarnation that existed.
      {"probe32_a_refused_event_at_a_generation_a_reallocation_skipped_conformed",
       {"TRACE_HANDLE_GENERATION_MISMATCH"}},
      // Probe 32. A byte not UTF-8 in a header member's name (cache_abi.num_lay\xffers) also
      // raised INPUT_FIELD_UNKNOWN for the repaired name and INPUT_FIELD_MISSING for num_layers;
      // in an enum value (position_stage) INPUT_VALUE_INVALID for the repaired value.
      {"probe32_a_byte_not_utf8_in_a_header_member_name_raised_three_codes",
       {"TRACE_HEADER_INVALID"}},
      {"probe32_a_byte_not_utf8_in_a_header_enum_value_raised_two_codes", {"TRACE_HEADER_INVALID"}},
      // A dropped transfer_plan named "prefill" gated request H's append "prefill" (another
      // plane's operation of the same name) and hid its wrong publication (a carried finding).
      {"opid_a_dropped_transfer_plan_named_like_an_append_hid_its_violation",
       {"INPUT_FIELD_MISSING", "TRACE_SNAPSHOT_MISMATCH"}},
      // Probe 29. After the id was allocated again, a refused publication of the earlier
      // incarnation's operation (labelled with the new generation) had its base compared with the
      // new incarnation's versions: the base it read failed, another passed.
      {"probe29_a_refused_late_publication_after_reallocation_was_judged_on_the_new_versions", {}},
      // After release, a retry of the latest publication stating another token passed (before
      // release it was caught): release stopped following the frontier.
      {"probe29_a_retry_after_release_with_another_token_passed", {"FRONTIER_TOKEN_MISMATCH"}},
      // A refused cancel_txn of a transaction cancel_request had aborted (no transition left)
      // was TRACE_OUTCOME_INVALID, "the contract admits it", with or without a release between.
      {"probe29_a_refused_cancel_of_an_aborted_transaction_after_release_was_outcome_invalid", {}},
      {"probe29_a_refused_cancel_of_an_aborted_transaction_was_outcome_invalid", {}},
      // The replayed receipt of the earlier incarnation's prefill, labelled with the re-allocated
      // generation, passed (a failure record labelled so was the ABA case).
      {"probe29_a_receipt_labelled_with_the_reallocated_generation_passed",
       {"TRACE_HANDLE_GENERATION_MISMATCH"}},
      // Another request starting an aborted operation's id within the receipt window: the code
      // was right, but the message named the purpose (the test below checks it).
      {"probe29_another_requests_reuse_of_an_aborted_operation_id_named_the_purpose",
       {"LIFECYCLE_RETRY_CONFLICT"}},
      // A refused truncate, finish, release, cancel_request or fork of a request never created
      // naming a base passed (a refused read naming one did not): each line raises the code.
      {"probe27_a_refused_operation_of_a_request_never_created_named_a_base",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      {"probe16_residency_showing_a_longer_fork_prefix_then_append_hole",
       {"TRACE_OBSERVATION_INCONSISTENT", "LIFECYCLE_APPEND_HOLE"}},
      // Probe 39. A fork naming an existing child (live, or released) at handle generation 1
      // raised TRACE_SNAPSHOT_MISMATCH for the generation besides LIFECYCLE_HANDLE_EXISTS.
      {"probe39_a_fork_child_that_exists_named_generation_1_raised_two_codes",
       {"LIFECYCLE_HANDLE_EXISTS"}},
      {"probe39_a_fork_into_a_released_id_at_generation_1_raised_two_codes",
       {"LIFECYCLE_HANDLE_EXISTS"}},
      // Probe 41. An observation naming an append_start the trace holds was TRACE_CAUSE_UNKNOWN,
      // and gated its request: a later truncate growth went unreported.
      {"probe41_an_observation_caused_by_an_append_start_gated_its_request",
       {"TRACE_CAUSE_WRONG_EVENT", "LIFECYCLE_TRUNCATE_GROWTH"}},
      // Observation fields in a semantic event: one code per field (five on one line), and
      // slot_ids was INPUT_FIELD_UNKNOWN.
      {"probe41_five_observation_fields_in_a_publish_raised_five_codes", {"TRACE_PLANE_MIXED"}},
      {"probe41_slot_ids_in_a_publish_was_an_unknown_field", {"TRACE_PLANE_MIXED"}},
      // Probe 45. A stage of A's operation naming request B (at another live generation) was
      // TRACE_HANDLE_GENERATION_MISMATCH: the generation fence blamed the one correct field.
      {"probe45_a_stage_naming_another_request_blamed_its_correct_generation",
       {"TRACE_OPERATION_REQUEST_MISMATCH"}},
      // A fork reported a success naming a child id already held: LIFECYCLE_HANDLE_EXISTS, and
      // the first event of the child the runtime created raised LIFECYCLE_UNKNOWN_HANDLE.
      {"probe45_a_fork_naming_a_held_child_id_left_the_meant_child_unknown",
       {"LIFECYCLE_HANDLE_EXISTS"}},
      // An event under a misspelled source_instance: TRACE_SOURCE_UNDECLARED, and the hole it
      // left in its real source's numbering was TRACE_SEQUENCE_GAP too.
      {"probe45_a_misnamed_source_left_a_gap_in_its_real_source", {"TRACE_SOURCE_UNDECLARED"}},
      // Probe 47. A bad member of a sources entry, and null optional header members, stopped the
      // replay (the trace's later violation, a wrong result_snapshot, was not found).
      {"probe47_a_bad_sources_member_stopped_the_replay",
       {"INPUT_FIELD_TYPE", "TRACE_SNAPSHOT_MISMATCH"}},
      {"probe47_null_optional_header_members_stopped_the_replay", {"TRACE_SNAPSHOT_MISMATCH"}},
      // Probe 100. An unknown or mistyped residency_model stopped the replay (a later append
      // after release went unreported), where a bad allocator_model is reported and the replay
      // goes on; now it is reported, and residency bytes are not compared, as under tiered
      // (two observations of half the payload each, which one_copy refuses twice: review R1).
      {"probe100_an_unknown_residency_model_stopped_the_replay",
       {"INPUT_VALUE_INVALID", "LIFECYCLE_HANDLE_RELEASED"}},
      {"probe100_a_mistyped_residency_model_stopped_the_replay",
       {"INPUT_FIELD_TYPE", "LIFECYCLE_HANDLE_RELEASED"}},
      // An observation of fork child lmc:h0-h1 naming the fork that created its sibling lmc:h0:
      // the code was right, but the message listed "fork" among the causes allowed (the test
      // below checks it).
      {"probe100_an_observation_naming_a_siblings_fork_listed_fork_as_a_cause",
       {"TRACE_CAUSE_WRONG_EVENT"}},
      // A residency tier "" names no part of the partition: the observation is refused.
      {"probe100_an_empty_residency_tier_passed", {"INPUT_VALUE_INVALID"}},
      // expected_final_states numbers were capped at 2^53.
      {"probe47_expected_final_states_above_2_53_were_out_of_range", {}},
      // A failure counter's denominator declared twice: the duplicate and a missing denominator.
      {"probe47_a_metric_family_declared_twice_raised_two_codes", {"INPUT_VALUE_INVALID"}},
      // A reorder's envelope naming a request never allocated passed.
      {"probe47_a_reorder_naming_an_unknown_request_passed", {"INPUT_VALUE_INVALID"}},
      // Probe 53 (a documented encoding, held passing): a prefix-cache entry that outlives the
      // request that computed it is a cache-owned fork child; a later hit forks from it, and
      // eviction cancels and releases it.
      {"probe53_a_prefix_cache_entry_outlives_its_request_as_its_own_handle", {}},
      // Probe 54. A stop inside the accepted drafts finished with the drafts past the stop
      // committed and never emitted (O < G_in); truncating them first conforms.
      {"probe54_a_finish_past_unemitted_accepted_drafts_passed", {"FRONTIER_ROWS_PAST_OUTPUT"}},
      {"probe54_a_stop_inside_accepted_drafts_truncates_before_finish", {}},
      // Under the tiered residency model, 0 bytes in HBM beside the payload in host memory after
      // a finish was judged a free caused by the finish.
      {"probe41_a_tiered_swap_to_host_after_finish_was_a_free", {}},
      // Probe 40. A prefix declared at two destinations was remembered at the last one only: a
      // warm plan to the first was HANDOFF_COVERAGE_MISMATCH.
      {"probe40_a_prefix_cached_at_two_destinations_failed_a_warm_plan_to_the_first", {}},
      // A transfer id "visible-prefix:pfx" collided with prefix pfx's publishing transaction
      // (LIFECYCLE_RETRY_CONFLICT naming a handle the transfer never named): reserved now.
      {"probe40_a_transfer_id_named_like_a_prefix_transaction_collided", {"INPUT_VALUE_INVALID"}},
      // A transfer validated under destination epoch 19 published after another validated under
      // epoch 20 (the fence was checked at validation only), and the runtime's refusal of that
      // publication was TRACE_OUTCOME_INVALID.
      {"probe40_a_stale_epoch_transfer_published_after_a_newer_validation",
       {"HANDOFF_IDENTITY_MISMATCH"}},
      {"probe40_refusing_a_stale_epoch_publication_was_outcome_invalid", {}},
      // A destination that fences a superseded attempt's validation or chunk (refused, then the
      // attempt aborted) was TRACE_OUTCOME_INVALID: only running it to a stale publication was
      // admitted.
      {"probe40_refusing_a_superseded_attempts_validation_was_outcome_invalid", {}},
      {"probe40_refusing_a_superseded_attempts_chunk_was_outcome_invalid", {}},
      // After attempt 1 published [0, 16), attempt 2 published [0, 8) and decode was admitted.
      {"probe40_a_later_attempt_shrank_the_published_prompt", {"HANDOFF_IDENTITY_MISMATCH"}},
      // A source that observed a release's free (0 bytes, 0 blocks) later saw the rows held again
      // (naming the finish, or the release itself) and passed.
      {"probe41_resident_bytes_came_back_after_the_same_source_saw_the_free",
       {"TRACE_OBSERVATION_INCONSISTENT"}},
      {"probe41_allocator_blocks_regrew_after_the_same_source_saw_the_free",
       {"TRACE_OBSERVATION_INCONSISTENT"}},
      // Probe 43. A decode append left open, then finish and release: passed (the release
      // dropped open operations). Its record may follow the release: a failure, or the late
      // completion refused.
      {"probe43_an_append_left_open_passed_once_its_request_was_released",
       {"TRACE_OPERATION_UNTERMINATED"}},
      {"probe43_a_refused_late_completion_after_release_closes_an_open_append", {}},
      {"probe43_a_failure_record_after_release_closes_an_open_append", {}},
      // A header repaired for a lone surrogate lost the pointer and message of its other
      // violations (a self-move; the test below checks the message).
      {"probe43_a_repaired_header_emptied_its_other_violations",
       {"TRACE_HEADER_INVALID", "INPUT_VALUE_INVALID"}},
      // A required field among the members past the 32-member limit was INPUT_FIELD_MISSING
      // beside the limit's INPUT_FIELD_UNKNOWN; a key repeated four times raised three codes.
      {"probe43_a_required_field_past_32_members_was_also_absent", {"INPUT_FIELD_UNKNOWN"}},
      {"probe43_a_key_repeated_four_times_raised_three_codes", {"TRACE_LINE_MALFORMED"}},
      // The conflict's message showed two equal base generations (the test below checks it).
      {"probe39_a_retry_conflict_across_incarnations_named_no_difference",
       {"LIFECYCLE_RETRY_CONFLICT"}},
      // A receipt replayed for an OPEN transaction (no layer staged) raised the lifecycle's
      // LIFECYCLE_LAYER_INCOMPLETE, where a PREPARED one raised TRACE_OUTCOME_INVALID.
      {"probe72_a_replayed_receipt_of_an_open_transaction_named_its_missing_layers",
       {"TRACE_OUTCOME_INVALID"}},
      // Request C's own stage labelled with A's operation: the operation refused it (its
      // interval), a second code beside the mismatch.
      {"probe75_a_stage_naming_another_requests_operation_raised_two_codes",
       {"TRACE_OPERATION_REQUEST_MISMATCH"}},
      // Probe 80: probe 75's fix hid every refusal after a mislabel, also one the label does not
      // explain (a layer beyond the ABI); and a refused publication that the named operation
      // would admit was TRACE_OUTCOME_INVALID beside the mismatch.
      {"probe80_a_mislabelled_stage_beyond_the_abi_hid_its_own_code",
       {"TRACE_OPERATION_REQUEST_MISMATCH", "LIFECYCLE_LAYER_OUT_OF_RANGE"}},
      {"probe80_a_refused_mislabelled_publication_raised_two_codes",
       {"TRACE_OPERATION_REQUEST_MISMATCH"}},
      // Probe 81: C's publication labelled with A's published operation replayed A's receipt,
      // and its claims were judged against it (TRACE_OUTCOME_INVALID, TRACE_SNAPSHOT_MISMATCH);
      // C's own operation is left unterminated (what gating cannot attribute).
      {"probe81_a_mislabelled_replay_of_a_published_operation_raised_three_codes",
       {"TRACE_OPERATION_REQUEST_MISMATCH", "TRACE_OPERATION_UNTERMINATED"}},
      // A mutation audit of the checker (2026-12-05, helper 95: 83 single-point mutants of
      // event_types.cc, checker.cc and transfer_events.cc; 17 survived every test and the
      // suite, 13 of them real gaps). Each trace below kills one survivor, named by its number:
      // the rule it pins raised no code, or a second one, under the mutant.
      // A late failure after the release names base 1, past the last readable snapshot 0. Two
      // codes: the operation was never started (its records are unknown), and the base is
      // judged against the release (an operation that was started is judged against its start's
      // base instead, a rule of its own).
      {"mut4_a_late_record_after_release_names_a_base_past_the_last_readable_snapshot",
       {"TRACE_SNAPSHOT_MISMATCH", "LIFECYCLE_TXN_UNKNOWN"}},
      // A refused legal cancel_request that also claims a result: one root cause, one code.
      {"mut7_a_rejected_cancel_request_claiming_a_result_raised_two_outcome_codes",
       {"TRACE_OUTCOME_INVALID"}},
      {"mut9_an_allocation_claiming_a_result_snapshot_other_than_0", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"mut48_a_fork_claiming_a_result_snapshot_other_than_0", {"TRACE_SNAPSHOT_MISMATCH"}},
      {"mut12_a_retried_start_that_changes_its_reused_draft_index", {"LIFECYCLE_RETRY_CONFLICT"}},
      // A K-only then a V-only stage of one layer, the second claiming the V rows' bytes (32 of
      // the token's 64): each stage's staged_payload_bytes counts the halves it stages.
      {"mut16_k_only_and_v_only_stages_of_one_layer_count_their_own_bytes", {}},
      // A torn read gates its request: a later read's claim is not a second code.
      {"mut27_a_torn_read_gates_its_request", {"LIFECYCLE_TORN_READ"}},
      // A live gated request allocated again at its own generation stays gated (it is not
      // retired: its next event is not LIFECYCLE_HANDLE_RELEASED).
      {"mut104_reallocating_a_live_gated_request_at_its_generation_keeps_it_gated",
       {"TRACE_SNAPSHOT_MISMATCH"}},
      // The release keeps the request's cancel_request in its event index: an observation after
      // the release may name it as its cause.
      {"mut112_an_observation_caused_by_a_released_requests_cancel_request", {}},
      // local_sequence 1 after 33 is one past the 32-event duplicate window: dropped, not
      // replayed (its claim is not judged).
      {"mut120_a_regression_one_past_the_duplicate_window_is_dropped",
       {"TRACE_SEQUENCE_REGRESSION"}},
      // An event naming a generation the id never had (3, between 0 and the live 5) is dropped
      // and gates the request.
      {"mut125_an_event_naming_a_generation_the_id_never_had_gates_it",
       {"TRACE_HANDLE_GENERATION_MISMATCH"}},
      // The lifecycle object's audit (helper 94) through the checker: under each mutant the rule
      // raised no code, and the open operation was TRACE_OPERATION_UNTERMINATED or the trace
      // passed.
      {"mutK07_v_rows_staged_twice_by_v_only_stages", {"LIFECYCLE_LAYER_DUPLICATE"}},
      {"mutK27_a_stage_under_another_cache_abi", {"LIFECYCLE_CACHE_ABI_MISMATCH"}},
      {"mutK37_a_truncate_naming_a_stale_base", {"LIFECYCLE_STALE_BASE"}},
      {"mutK38_a_release_naming_a_stale_base", {"LIFECYCLE_STALE_BASE"}},
      // A second mutation audit of the checker (2026-12-06: 156 single-point mutants of the same
      // three files, away from the first audit's places). Each trace below kills one survivor,
      // named by its number (mut3_<N>): under the mutant the rule it pins raised no code, another
      // code, or a second one.
      // An allocator observation naming a result snapshot (and no base) is a claim with no right
      // value.
      {"mut3_10_an_observation_claiming_only_a_result_snapshot", {"TRACE_SNAPSHOT_MISMATCH"}},
      // A decode append processing another token than the frontier's: one code (its publication is
      // not judged again).
      {"mut3_20_a_frontier_breach_at_an_appends_start_is_not_judged_again",
       {"FRONTIER_TOKEN_MISMATCH"}},
      // B (generation 5) names A's open operation: a mislabel, not an earlier incarnation of B.
      {"mut3_24_a_failure_record_naming_another_requests_operation_at_its_own_generation",
       {"TRACE_OPERATION_REQUEST_MISMATCH"}},
      // A replayed publication names snapshot 2; the original receipt created 1.
      {"mut3_26_a_replayed_receipt_naming_another_result_snapshot", {"TRACE_SNAPSHOT_MISMATCH"}},
      // probe22's publication refused by the frontier recheck, claiming result snapshot 3.
      {"mut3_29_a_frontier_refused_publication_claiming_a_result", {"TRACE_OUTCOME_INVALID"}},
      // probe18 with a finish claiming 5 outputs: after the breach at the publication the frontier
      // is no longer followed.
      {"mut3_32_a_finish_after_a_publication_time_frontier_breach_is_not_judged",
       {"FRONTIER_TOKEN_MISMATCH"}},
      // A read reported rejected on a live request.
      {"mut3_40_a_refused_read_of_a_readable_request", {"TRACE_OUTCOME_INVALID"}},
      // A reorder whose envelope names operation_id.
      {"mut3_52_a_reorder_naming_an_operation", {"INPUT_VALUE_INVALID"}},
      // cancel_request keeps the version: result snapshot 1 after 0.
      {"mut3_55_a_cancel_request_claiming_another_result_snapshot", {"TRACE_SNAPSHOT_MISMATCH"}},
      // A refused finish of a request whose frontier is no longer followed is not judged.
      {"mut3_56_a_refused_finish_after_a_frontier_breach_conforms", {"FRONTIER_TOKEN_MISMATCH"}},
      // After an early finish (reported) the frontier is not followed: a later output is not also
      // LIFECYCLE_HANDLE_TERMINAL.
      {"mut3_58_an_output_after_an_early_finish_is_not_judged", {"SERVICE_PHASE_EARLY_FINISH"}},
      // A delayed free of generation 0 seen after A is allocated again (generation 1) is not a free
      // of the new incarnation.
      {"mut3_67_a_free_seen_for_the_released_incarnation_after_reallocation", {}},
      // A refused release changes nothing; A holds 0 rows, so an allocator showing nothing is
      // storage held, of 0 rows.
      {"mut3_68_no_storage_after_a_refused_release_of_an_empty_request", {}},
      // An allocator observation of 1 block and 0 slots.
      {"mut3_69_slots_without_blocks", {"TRACE_OBSERVATION_INCONSISTENT"}},
      // An allocator_model stating slots_per_block only: used_slots is not compared with the
      // committed rows.
      {"mut3_78_used_slots_not_compared_without_the_committed_rows_model", {}},
      // The allocation of B stated as an allocator event by an undeclared source is dropped: B's
      // later read is gated.
      {"mut3_80_an_undeclared_sources_first_event_on_another_plane_is_not_replayed",
       {"TRACE_SOURCE_UNDECLARED"}},
      // trace_identity required, trace_id "" (the general reader too).
      {"mut3_81_an_empty_trace_id_where_identity_is_required", {"TRACE_IDENTITY_MISSING"}},
      // Held storage after generation 0's finish, observed after A is allocated again: the
      // finish is kept.
      {"mut3_108_an_observation_naming_the_released_incarnations_finish_after_reallocation", {}},
      // An event under the name of a declared source of another plane that has sent events of
      // its own plane is another source's (a relabel): one code, not numbered there, and its own
      // source's hole is not a gap (probe 83: a regression and a gap beside it; an output_emit
      // under the residency source's name raised two gaps and a regression). It is replayed:
      // its request is not gated, so the finish's wrong output count is reported.
      {"probe83_a_residency_observation_under_the_semantic_sources_name_raised_three_codes",
       {"TRACE_SOURCE_UNDECLARED"}},
      {"probe83_an_output_under_the_residency_sources_name_raised_four_codes",
       {"TRACE_SOURCE_UNDECLARED"}},
      {"probe83_an_output_under_another_planes_source_name_is_replayed_so_its_request_is_judged",
       {"TRACE_SOURCE_UNDECLARED", "TRACE_SNAPSHOT_MISMATCH"}},
      // A raw control byte (0x01) in an event_id: the line is named and its request gated, as
      // for a byte that is not UTF-8 (probe 86: "not JSON", and the request's next decode raised
      // FRONTIER_CACHE_OVERCOMMIT).
      {"probe86_a_raw_control_byte_in_an_event_id_raised_a_second_code", {"TRACE_LINE_MALFORMED"}},
      // An empty operation_id on a reorder dropped the event (an empty id names nothing), so its
      // rows went unjudged: a reorder's envelope names no operation, "" included, and it is
      // replayed as with any other value there (probe 90).
      {"probe90_an_empty_operation_id_dropped_a_reorder_and_its_rows_went_unjudged",
       {"INPUT_VALUE_INVALID", "LIFECYCLE_REORDER_SPLIT_STATE"}},
      // An event whose id conflicts (another source's recent event holds it, or an earlier event
      // of its own source) is replayed but did not enter its source's window, so its byte-identical
      // redelivery was replayed again: a sequence regression and an output index gap (probe 90).
      {"probe90_a_redelivery_of_an_event_whose_id_another_source_held_was_replayed_twice",
       {"TRACE_EVENT_ID_CONFLICT"}},
      {"probe90_a_redelivery_of_an_event_whose_id_its_source_reused_was_replayed_twice",
       {"TRACE_EVENT_ID_CONFLICT"}},
      // A wrong byte claim dropped its event and gated the request, so a later decode of a token
      // never emitted and an append left open passed (the doc audit of 2026-12-07, D3): the
      // claim is reported once per request, and the replay goes on.
      {"audit7_a_wrong_pending_byte_claim_gated_its_request",
       {"TRACE_SNAPSHOT_MISMATCH", "FRONTIER_TOKEN_MISMATCH", "TRACE_OPERATION_UNTERMINATED"}},
      {"audit7_a_wrong_staged_byte_claim_gated_its_request",
       {"TRACE_SNAPSHOT_MISMATCH", "FRONTIER_TOKEN_MISMATCH"}},
      {"audit7_every_wrong_byte_claim_of_a_request_is_one_code", {"TRACE_SNAPSHOT_MISMATCH"}},
  };
  // Each listed code is raised once, except in these traces, where several events (or several
  // members of one event) each break the rule: the count of all violations. Without the count a
  // rule judged a second time went unseen (mutation audit 3: survivor 20 raised a second
  // FRONTIER_TOKEN_MISMATCH at a later event of a trace the table held).
  const std::map<std::string, size_t> repeated = {
      {"probe16_refused_release_observed_as_free", 2},               // two observations
      {"probe20_a_second_lift_unretired_the_first_incarnation", 2},  // two reads
      {"probe21_old_incarnation_records_labelled_with_the_new_generation_passed", 2},  // records
      {"opid_a_dropped_transfer_plan_named_like_an_append_hid_its_violation", 9},      // 8 members
      {"probe27_a_refused_operation_of_a_request_never_created_named_a_base", 5},      // 5 events
      {"probe43_a_required_field_past_32_members_was_also_absent", 33},  // 33 unknown members
  };
  for (const bool fast : {true, false}) {
    for (const auto& [name, want] : cases) {
      CheckerOptions opt;
      opt.fast_readers = fast;
      const Violations v =
          test::CheckSourceTrace("reference/trace/testdata/semantic/" + name + ".jsonl", opt);
      const auto it = repeated.find(name);
      EXPECT_EQ(test::CodeNames(v), want) << name << (fast ? " (fast readers)" : "") << "\n"
                                          << test::Describe(v);
      EXPECT_EQ(v.size(), it == repeated.end() ? want.size() : it->second)
          << name << (fast ? " (fast readers)" : "") << "\n"
          << test::Describe(v);
    }
  }
}

// Mutation audit 4: a refused publication claiming a result snapshot is told why with its own
// outcome (it was "a failure" for every outcome).
TEST(TraceCheckerTest, RegressionAResultClaimOfARefusedEventNamesItsOutcome) {
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "mut3_29_a_frontier_refused_publication_claiming_a_result.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OUTCOME_INVALID"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find(R"(an event with outcome "rejected" leaves its base snapshot)"),
            std::string::npos)
      << v[0].message;
}

// Mutation audit, survivor 24: the first record of an operation whose transaction the receipt
// window forgot closes it, so a second record is TRACE_OUTCOME_INVALID (at a receipt window of 1,
// the release of another request forgets A's receipts; at the default 64 it takes 64 releases).
TEST(TraceCheckerTest, MutantASecondRecordOfAForgottenOperationIsReported) {
  for (const size_t window : {size_t{1}, size_t{64}}) {
    CheckerOptions opt;
    opt.receipt_window = window;
    const Violations v = test::CheckSourceTrace(
        "reference/trace/testdata/semantic/"
        "mut24_a_second_record_of_an_operation_whose_receipt_was_forgotten.jsonl",
        opt);
    ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_OUTCOME_INVALID"})
        << window << "\n"
        << test::Describe(v);
    EXPECT_EQ(v[0].line, 10u);
  }
}

// Probe 100: which forks can cause a request's observations (a fork of it, the fork that created
// it), so that one naming the fork that created a sibling says why it is refused.
TEST(TraceCheckerTest, RegressionAnObservationNamingASiblingsForkSaysWhichForksCount) {
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "probe100_an_observation_naming_a_siblings_fork_listed_fork_as_a_cause.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_CAUSE_WRONG_EVENT"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("a fork of it, or the fork that created it: not a fork that "
                              "created another child"),
            std::string::npos)
      << v[0].message;
}

// Second mutation audit, survivor 34: a refused cancel_txn of an operation whose transaction the
// receipt window forgot (at a receipt window of 1, B's release forgets A's) closes nothing, so the
// worker's append_failure after it is the operation's first record and conforms.
TEST(TraceCheckerTest, MutantARefusedCancelOfAForgottenOperationClosesNothing) {
  CheckerOptions opt;
  opt.receipt_window = 1;
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "mut3_34_a_refused_cancel_of_a_forgotten_operation_closes_nothing.jsonl",
      opt);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
}

// Second mutation audit, survivor 111: a release of a gated request naming another generation than
// the live one (3, A is at 0) is skipped and retires nothing; A stays live and gated, so once
// another request's release has filled the released window (1), A's next read is still skipped
// (not LIFECYCLE_UNKNOWN_HANDLE for a request forgotten with a tombstone it never had).
TEST(TraceCheckerTest, MutantASkippedReleaseNamingAnotherGenerationRetiresNothing) {
  CheckerOptions opt;
  opt.released_window = 1;
  opt.receipt_window = 1;
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "mut3_111_a_skipped_release_naming_another_generation_retires_nothing.jsonl",
      opt);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"})
      << test::Describe(v);
}

// Second mutation audit, survivor 20: a decode append whose token breaches the output frontier at
// its start raises one violation; the request's frontier is no longer followed, so its publication
// is not judged again (the table above now counts violations too; this test also pins where).
TEST(TraceCheckerTest, MutantAFrontierBreachAtAnAppendsStartIsOneViolation) {
  for (const bool fast : {true, false}) {
    CheckerOptions opt;
    opt.fast_readers = fast;
    const Violations v = test::CheckSourceTrace(
        "reference/trace/testdata/semantic/"
        "mut3_20_a_frontier_breach_at_an_appends_start_is_not_judged_again.jsonl",
        opt);
    EXPECT_TRUE(test::OnlyViolationAt(v, "FRONTIER_TOKEN_MISMATCH", "/6/payload")) << fast;
  }
}

// Mutation audit 4: the filter of forgotten ids (MayBeForgotten) errs only towards not judging,
// at a rate that stays negligible well past 20,000 forgotten ids (4 probes into 2^25 bits: about
// 80,000 bits set, so a fresh id is mistaken with probability (80,000 / 2^25)^4 ~ 3e-11; with one
// probe it would be ~2e-3, some 50 of 20,000). A refused finish naming a base of a request never
// created is TRACE_SNAPSHOT_MISMATCH unless the filter says the request may be a forgotten one:
// every one of 20,000 fresh ids is judged.
TEST(TraceCheckerTest, RegressionTheForgottenIdsFilterMistakesNoFreshIdAt20000Forgotten) {
  CheckerOptions opt;
  opt.released_window = 1;
  opt.receipt_window = 1;
  TraceChecker c("t.jsonl", opt);
  c.Feed(kHeader, 1);
  RequestEventFeeder feed{c};
  constexpr int kIds = 20000;
  for (int i = 0; i < kIds; ++i) {
    const std::string id = "forgotten-" + std::to_string(i);
    feed("request_allocate", id, R"("payload":{"prompt_length":2})");
    feed("cancel_request", id, R"("payload":{})");
    feed("release", id, R"("payload":{})");
  }
  ASSERT_EQ(c.violations().size(), 0u) << test::Describe(c.violations());
  for (int i = 0; i < kIds; ++i)
    feed("finish", "fresh-" + std::to_string(i),
         R"("base_snapshot":1,"outcome":"rejected","payload":{})");
  c.Finish(false);
  EXPECT_EQ(c.violations().size() + c.omitted_violations(), static_cast<size_t>(kIds));
  EXPECT_EQ(test::CodeNames(c.violations()), std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
}

// Probe 43: gates follow violations; a trace of many requests never allocated grew them with its
// length. Their memory stays within CheckerOptions::gate_bytes, and the rest are counted.
TEST(TraceCheckerTest, RegressionGatesOfManyBrokenRequestsStayWithinTheirBudget) {
  CheckerOptions opt;
  opt.gate_bytes = 256 << 10;
  opt.max_violations = 10;
  TraceChecker c("t.jsonl", opt);
  c.Feed(kHeader, 1);
  const std::string pad(4000, 'x');  // 4 KB request ids
  for (int i = 0; i < 500; ++i)
    c.Feed(Ev(i, "finish",
              R"("request_id":"r)" + std::to_string(i) + pad +
                  R"(","handle_generation":0,"base_snapshot":1,"payload":{})"),
           static_cast<uint32_t>(i + 2));
  c.Finish(false);
  EXPECT_EQ(c.violations().size() + c.omitted_violations(), 500u);
  EXPECT_LE(c.poisoned_count() * (4000 + 96), opt.gate_bytes);
  EXPECT_GT(c.gates_not_kept(), 0u);
  EXPECT_EQ(c.poisoned_count() + c.gates_not_kept(), 500u);
}

// Probe 76: a request gated by a violation (here a truncate that grows) had its cancel_request and
// release skipped, so its records were never freed: 160,000 such requests, never more than one
// live, held 290 MB. Its skipped release retires it (RetireGated), so it is forgotten with the
// released window, its gate with it; an id allocated again afterwards is judged afresh.
TEST(TraceCheckerTest, RegressionAGatedRequestsSkippedReleaseFreesItWithTheWindow) {
  CheckerOptions opt;
  opt.released_window = 8;
  opt.max_violations = 10;
  TraceChecker c("t.jsonl", opt);
  c.Feed(kHeader, 1);
  RequestEventFeeder feed{c};
  constexpr int kRequests = 100;
  for (int i = 0; i < kRequests; ++i) {
    const std::string id = "r" + std::to_string(i);
    feed("request_allocate", id, R"("payload":{"prompt_length":2})");
    feed("truncate", id, R"("payload":{"new_length":5})");  // grows: reported, gated
    feed("cancel_request", id, R"("payload":{})");
    feed("release", id, R"("payload":{})");
  }
  EXPECT_LE(c.kv().handle_count(), opt.released_window + 1);
  EXPECT_LE(c.poisoned_count(), opt.released_window + 1);
  // The last one, within the window, is still gated: its late events are skipped ...
  feed("finish", "r99", R"("payload":{})");
  // ... and one forgotten is judged afresh when allocated again (a truncate that grows, again).
  feed("request_allocate", "r0", R"("payload":{"prompt_length":2})");
  feed("truncate", "r0", R"("payload":{"new_length":5})");
  c.Finish(false);
  EXPECT_EQ(c.violations().size() + c.omitted_violations(), kRequests + 1u);
}

// Probe 79: a signal caught by a handler (UCX catches SIGHUP as its debug signal) while `check -`
// waited for a pipe's next bytes made the read fail with EINTR, which ended the input as a read
// error (exit 2) once the writer closed. An interrupted read is retried.
TEST(TraceCheckerTest, RegressionAReadInterruptedByACaughtSignalIsRetried) {
  struct sigaction caught {
  }, old{};
  caught.sa_handler = [](int) {};
  caught.sa_flags = 0;  // no SA_RESTART: the blocked read returns EINTR
  ASSERT_EQ(sigaction(SIGUSR1, &caught, &old), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string text = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  const pthread_t reader = pthread_self();
  std::thread writer([&] {
    ASSERT_EQ(write(fds[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    // The reader has consumed the lines and blocks on the pipe: interrupt it, then end the input.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pthread_kill(reader, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    close(fds[1]);
  });
  TraceChecker c("-", {});
  const Status s = CheckTraceFile("/dev/fd/" + std::to_string(fds[0]), &c);
  writer.join();
  close(fds[0]);
  sigaction(SIGUSR1, &old, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.events(), 1u);
}

// Probe 60: an event dropped without a request, naming an operation the replay did not know,
// kept the operation's id (so that its next event's request is gated) outside the gates'
// budget: 400,000 such events of 1 KB ids held 490 MB. They are gates of the budget: past it
// one is not kept and is counted.
TEST(TraceCheckerTest, RegressionDroppedUnknownOperationsStayWithinTheGatesBudget) {
  CheckerOptions opt;
  opt.gate_bytes = 256 << 10;
  opt.max_violations = 10;
  TraceChecker c("t.jsonl", opt);
  c.Feed(kHeader, 1);
  const std::string pad(1000, 'x');
  constexpr int kEvents = 2000;
  for (int i = 0; i < kEvents; ++i)
    c.Feed(Ev(i, "append_stage_layer",
              R"("request_id":null,"handle_generation":0,"operation_id":")" + pad +
                  std::to_string(i) + R"(","payload":{"layer":0,"interval":[0,4]})"),
           static_cast<uint32_t>(i + 2));
  c.Finish(false);
  // Each event gates its operation ("op:" + id) and keeps the id: two budgeted records of
  // ~1.1 KB (GateCost: the key and 96 B).
  EXPECT_LE((c.poisoned_count() + c.dropped_operations()) * (1000 + 96), opt.gate_bytes);
  EXPECT_GT(c.dropped_operations(), 0u);
  EXPECT_GE(c.gates_not_kept(), static_cast<uint64_t>(kEvents));
}

// Probe 60: a request id gated and allocated again kept every retired generation, so one id
// gated and re-allocated 1,000,000 times grew by 24 MB while one request was live. The last
// Request::kMaxRetired are kept; the latest retired incarnation's late event is still skipped.
TEST(TraceCheckerTest, RegressionRetiredIncarnationsOfOneIdAreBounded) {
  TraceChecker c("t.jsonl", CheckerOptions{.max_violations = 10});
  c.Feed(kHeader, 1);
  uint32_t line = 2;
  int seq = 0;
  constexpr int kCycles = 200;
  for (int g = 0; g < kCycles; ++g) {
    const std::string id = R"("request_id":"R","handle_generation":)" + std::to_string(g) + ",";
    c.Feed(
        Ev(seq++, "request_allocate", id + R"("result_snapshot":0,"payload":{"prompt_length":4})"),
        line++);
    c.Feed(
        Ev(seq++, "output_emit",
           id + R"("base_snapshot":0,"outcome":"failure","payload":{"output_index":0,"token":1})"),
        line++);
  }
  // A late event of the last retired incarnation (kCycles - 2) is skipped without a code.
  c.Feed(Ev(seq++, "output_emit",
            R"("request_id":"R","handle_generation":)" + std::to_string(kCycles - 2) +
                R"(,"base_snapshot":0,"payload":{"output_index":0,"token":1})"),
         line++);
  c.Finish(false);
  const TraceChecker::Request* r = c.FindRequest("R");
  ASSERT_NE(r, nullptr);
  EXPECT_LE(r->retired.size(), TraceChecker::Request::kMaxRetired);
  EXPECT_EQ(r->retired.count(kCycles - 2), 1u);
  // One TRACE_OUTCOME_INVALID per incarnation, nothing for the late event.
  EXPECT_EQ(c.violations().size() + c.omitted_violations(), static_cast<uint64_t>(kCycles))
      << test::Describe(c.violations());
}

// Probe 43: the header's other violations keep their pointer and message after the repair.
TEST(TraceCheckerTest, RegressionARepairedHeaderKeepsItsOtherViolationsMessages) {
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "probe43_a_repaired_header_emptied_its_other_violations.jsonl");
  ASSERT_EQ(v.size(), 2u) << test::Describe(v);
  EXPECT_EQ(v[1].pointer, "/0/sources/2");
  EXPECT_NE(v[1].message.find("declared twice"), std::string::npos) << v[1].message;
}

// Probe 39: messages name what differs and what the contract admits.
TEST(TraceCheckerTest, RegressionMessagesNameTheIncarnationAndTheAdmittedPhases) {
  const Violations v = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "probe39_a_retry_conflict_across_incarnations_named_no_difference.jsonl");
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_NE(v[0].message.find("another incarnation: the original was opened on handle "
                              "generation 0"),
            std::string::npos)
      << v[0].message;
  const Violations f = test::CheckSourceTrace(
      "reference/trace/testdata/semantic/"
      "probe39_a_fork_into_a_released_id_at_generation_1_raised_two_codes.jsonl");
  ASSERT_EQ(f.size(), 1u) << test::Describe(f);
  EXPECT_NE(f[0].message.find("released: a fork child needs an id never used"), std::string::npos)
      << f[0].message;
}

// R prefilled (2 rows, snapshot 1) with output 0 (token 7) emitted, and a decode append_start
// of operation "d" on base `base` at row `from` processing `token` (the probe 68 regressions).
std::string PrefilledWithOutput0() {
  return std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) + "\n" +
         Publish(3) + "\n" +
         Ev(4, "output_emit",
            R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
            R"("payload":{"output_index":0,"token":7})") +
         "\n";
}
std::string DecodeStart(int seq, int base, int from, int token) {
  const std::string iv = "[" + std::to_string(from) + "," + std::to_string(from + 1) + "]";
  return Ev(seq, "append_start",
            R"("request_id":"R","handle_generation":0,"operation_id":"d","base_snapshot":)" +
                std::to_string(base) + R"(,"payload":{"interval":)" + iv + R"(,"cache_position":)" +
                iv + R"(,"mask_key_length":)" + std::to_string(from + 1) +
                R"(,"position_stage":"post_rope","purpose":"decode","input_token":)" +
                std::to_string(token) + "}") +
         "\n";
}

// `trace` raises exactly one LIFECYCLE_RETRY_CONFLICT, whose message names the re-sent event's
// base snapshot and the original's.
void ExpectOneRetryConflictNaming(const std::string& trace, int named, int original) {
  const Violations v = ValidateTraceJsonl(trace, "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"LIFECYCLE_RETRY_CONFLICT"})
      << test::Describe(v);
  EXPECT_NE(
      v[0].message.find("this event names base snapshot " + std::to_string(named) +
                        "; the original was opened on base snapshot " + std::to_string(original)),
      std::string::npos)
      << v[0].message;
}

// Regression (probe 68, a vendor's cold read): an operation id re-sent for the next decode step
// (another base, interval and token) raised FRONTIER_TOKEN_MISMATCH before the fingerprint
// conflict: one root cause, one code, the lifecycle's. A retry on the same fingerprint with
// another token still raises the frontier's code.
TEST(TraceCheckerTest, RegressionAnOperationIdReusedForTheNextStepIsOneConflict) {
  const std::string r = R"("request_id":"R","handle_generation":0,)";
  const std::string step1 =
      PrefilledWithOutput0() + DecodeStart(5, 1, 2, 7) +
      Ev(6, "append_stage_layer",
         r + R"("operation_id":"d","payload":{"layer":0,"interval":[2,3]})") +
      "\n" + Ev(7, "append_publish", r + R"("operation_id":"d","base_snapshot":1,"payload":{})") +
      "\n" +
      Ev(8, "output_emit", r + R"("base_snapshot":2,"payload":{"output_index":1,"token":8})") +
      "\n";
  ASSERT_EQ(Codes(step1), std::vector<std::string>{}) << step1;
  ExpectOneRetryConflictNaming(step1 + DecodeStart(9, 2, 3, 8), 2, 1);
  // The same call re-sent with another token: the frontier's code.
  EXPECT_EQ(Codes(step1 + DecodeStart(9, 1, 2, 8)),
            std::vector<std::string>{"FRONTIER_TOKEN_MISMATCH"});
}

// Regression (probe 68): a retry naming an older base_snapshot than its original was reported
// as "base generation 1 (another snapshot digest); the original has ... base generation 1":
// the lifecycle object's stand-in for a stale version. The message names both versions now.
TEST(TraceCheckerTest, RegressionARetryOnAnotherBaseNamesBothVersions) {
  ExpectOneRetryConflictNaming(
      PrefilledWithOutput0() + DecodeStart(5, 1, 2, 7) + DecodeStart(6, 0, 2, 7), 0, 1);
}

// Regression (probe 68): TRACE_TRUNCATED, an empty line's TRACE_LINE_MALFORMED and an empty
// trace's TRACE_HEADER_INVALID repeated the file and line in their messages, which every report
// prints beside them ("t.jsonl:16: TRACE_TRUNCATED at '/15': t.jsonl:16: the trace ends ...").
TEST(TraceCheckerTest, RegressionLineMessagesDoNotRepeatTheFileAndLine) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n";
  for (const std::string& t : {head + Start(1).substr(0, 40), head + "\n", std::string()}) {
    const Violations v = ValidateTraceJsonl(t, "t.jsonl");
    ASSERT_EQ(v.size(), 1u) << test::Describe(v);
    EXPECT_EQ(v[0].message.find("t.jsonl"), std::string::npos) << v[0].message;
  }
}

// Regression (probe 68): a byte-identical redelivery older than its source's 32-event window
// was reported as a bare "local_sequence 3 after 40"; the message now says what the checker
// cannot tell apart. A regression within the window keeps the short message.
TEST(TraceCheckerTest, RegressionARegressionBeforeTheWindowSaysWhatItMayBe) {
  std::string t = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" + Stage(2) +
                  "\n" + Publish(3) + "\n";
  for (int seq = 4; seq <= 40; ++seq)
    t += Ev(seq, "read",
            R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
            R"("payload":{"committed_length":2})") +
         "\n";
  Violations v = ValidateTraceJsonl(t + Publish(3) + "\n", "t.jsonl");
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"TRACE_SEQUENCE_REGRESSION"})
      << test::Describe(v);
  EXPECT_NE(v[0].message.find("older than the source's duplicate window of the last 32 events"),
            std::string::npos)
      << v[0].message;
  v = ValidateTraceJsonl(
      t + Mutate(Publish(3), R"("local_sequence":3)", R"("local_sequence":39)") + "\n", "t.jsonl");
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].message.find("duplicate window"), std::string::npos) << v[0].message;
}

// Probe 72 (the seed's prose against the checker): the generation fence of a released id, and
// its receipts, last as long as the checker's windows, which stand for the seed's "maximum
// stale-work lifetime" (M5.1 0x01); `kvconform check --released-window / --receipt-window` set
// them. Within them the slot-17 re-allocation at a reused generation and the old receipt are
// judged as the seed says; past them they are forgotten (documented, docs/trace-format.md
// "Memory").
TEST(TraceCheckerTest, TheReleaseWindowsAreTheStaleWorkLifetime) {
  const std::string dir = "reference/trace/testdata/semantic/";
  const std::string reuse = dir + "probe72_a_generation_reused_10_releases_after_its_release.jsonl";
  const std::string receipt =
      dir + "probe72_a_receipt_replayed_65_releases_after_its_release.jsonl";
  CheckerOptions opt;
  EXPECT_EQ(test::CodeNames(test::CheckSourceTrace(reuse, opt)),
            std::vector<std::string>{"LIFECYCLE_HANDLE_EXISTS"});
  EXPECT_EQ(test::CodeNames(test::CheckSourceTrace(receipt, opt)),
            std::vector<std::string>{"TRACE_OUTCOME_INVALID"});
  opt.released_window = 8;  // shorter than the 10 releases: the fence is forgotten
  EXPECT_EQ(test::CodeNames(test::CheckSourceTrace(reuse, opt)), std::vector<std::string>{});
  opt = CheckerOptions{};
  opt.receipt_window = 100;  // longer than the 65 releases: the receipt is returned
  EXPECT_EQ(test::CodeNames(test::CheckSourceTrace(receipt, opt)), std::vector<std::string>{});
}

// Probe 72: a read may state the length it saw in each layer (M5.1 0x01: "neither legal read can
// see layer 0 at T_g+Delta and layer L-1 at T_g"). kHeader's ABI has one layer, so the torn
// case is the invalid fixture m5_1/lifecycle/torn_read (two layers); here the other rules.
TEST(TraceCheckerTest, AReadsLayerLengthsAreOneLengthTheCommittedOne) {
  const std::string head = std::string(kHeader) + "\n" + Alloc(0) + "\n" + Start(1) + "\n" +
                           Stage(2) + "\n" + Publish(3) + "\n";  // R: 2 rows, snapshot 1
  auto read = [](const std::string& lengths) {
    return Ev(4, "read",
              R"("request_id":"R","handle_generation":0,"base_snapshot":1,)"
              R"("payload":{"committed_length":2,"layer_lengths":)" +
                  lengths + "}") +
           "\n";
  };
  EXPECT_EQ(Codes(head + read("[2]")), std::vector<std::string>{});
  EXPECT_EQ(Codes(head + read("[1]")), std::vector<std::string>{"TRACE_SNAPSHOT_MISMATCH"});
  EXPECT_EQ(Codes(head + read("[2,2]")), std::vector<std::string>{"INPUT_VALUE_INVALID"});
  EXPECT_EQ(Codes(head + read("[]")), std::vector<std::string>{"INPUT_VALUE_INVALID"});
}

// A check frees every block it allocates: every trace fixture and semantic regression trace,
// with the default windows and with windows of one release (so released requests, their
// receipts and their event ids are forgotten mid-trace), with the kit's ids and with every
// request and event id lengthened past IdString's inline limit (held on the heap). The plain
// build's counting operator new and delete see a leak that only LeakSanitizer saw before (no
// gate runs one): mutation audit 4's IdString mutants leaked this way.
TEST(TraceCheckerTest, ACheckFreesEveryBlockItAllocates) {
  if (!test::AllocationCount::available())
    GTEST_SKIP() << "the sanitizer's runtime owns operator new";
  std::vector<std::string> texts;
  for (const char* dir : {"reference/trace/testdata/semantic", "fixtures/m5_1", "fixtures/m5_6"})
    for (const auto& f : std::filesystem::recursive_directory_iterator(test::SourcePath(dir)))
      if (f.path().extension() == ".jsonl") {
        std::ifstream in(f.path(), std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (text.find("kvconform.trace/1") == std::string::npos) continue;  // other kinds
        const std::string pad(base::IdString::kInline, 'x');
        std::string long_ids = text;
        for (const std::string key : {"\"request_id\":\"", "\"event_id\":\""})
          for (size_t at = long_ids.find(key); at != std::string::npos;
               at = long_ids.find(key, at + key.size() + pad.size()))
            long_ids.insert(at + key.size(), pad);
        texts.push_back(std::move(text));
        texts.push_back(std::move(long_ids));
      }
  ASSERT_GT(texts.size(), 100u);
  CheckerOptions tight;
  tight.released_window = 1;
  tight.receipt_window = 0;
  // Every check once outside the count: a path's function-local statics, allocated at its first
  // use and kept for the process (the id maps' hash keys, among 9 blocks), are not a check's.
  for (const CheckerOptions& opt : {CheckerOptions{}, tight})
    for (const std::string& text : texts) {
      TraceChecker warm("t.jsonl", opt);
      FeedTraceText(&warm, text);
    }
  uint64_t news = 0, frees = 0, violations = 0;
  {
    test::AllocationCount c;
    for (const CheckerOptions& opt : {CheckerOptions{}, tight})
      for (const std::string& text : texts) {
        TraceChecker checker("t.jsonl", opt);
        violations += FeedTraceText(&checker, text).size();
      }
    news = c.count();
    frees = c.frees();
  }
  EXPECT_GT(violations, 0u);  // the lengthened ids break fork children's names: violation paths
  EXPECT_GT(news, texts.size());
  EXPECT_EQ(news, frees) << "blocks allocated by a check and not freed";
}

}  // namespace
}  // namespace kvc::trace
