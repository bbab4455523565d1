// The fixture runner's rules: what makes an invalid fixture pass, what makes one malformed,
// and how files are named, found and read.
#include "reference/validate/fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "reference/testutil/testutil.h"
#include "reference/validate/kinds.h"

namespace kvc {
namespace {

using test::TempDir;

namespace fs = std::filesystem;

const char* const kManifest = "fixtures/m5_1/manifest/request_cache_manifest.json";

// An invalid fixture applying `patch` to `base` (an absolute path; the bundled manifest by
// default) and expecting `code`.
std::string InvalidFixture(const Json& patch, const std::string& code,
                           const std::string& base = test::SourcePath(kManifest)) {
  return Json{{"kind", kInvalidFixtureKind},
              {"case", "f"},
              {"seed_ref", "s"},
              {"base", base},
              {"patch", patch},
              {"expected_code", code}}
      .dump();
}

const Json kReplaceReserved = Json::array(
    {{{"op", "replace"}, {"path", "/state_snapshot/reserved_token_capacity"}, {"value", 3}}});

// An invalid fixture passes only when its document raises exactly the declared code: one
// more code beside it fails the case.
TEST(FixtureRunner, AnInvalidFixtureRaisingAnotherCodeTooFails) {
  TempDir t;
  // One operation raising one code passes; one operation raising two codes does not.
  const std::string one =
      t.Write("one.json", InvalidFixture(kReplaceReserved, "MANIFEST_RESERVATION_BELOW_COMMIT"));
  FixtureOutcome o = RunFixtureFile(one);
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  EXPECT_TRUE(o.passed) << o.detail;
  Json state = test::LoadJson(kManifest)["state_snapshot"];
  state["reserved_token_capacity"] = 3;
  state["next_cache_position"] = 5;
  const std::string two =
      t.Write("two.json",
              InvalidFixture(
                  Json::array({{{"op", "replace"}, {"path", "/state_snapshot"}, {"value", state}}}),
                  "MANIFEST_RESERVATION_BELOW_COMMIT"));
  o = RunFixtureFile(two);
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  EXPECT_FALSE(o.passed);
  EXPECT_EQ(o.detail.rfind("expected only MANIFEST_RESERVATION_BELOW_COMMIT, got:", 0), 0u)
      << o.detail;
}

// An invalid fixture is malformed (INPUT_FIXTURE_MALFORMED) when its expected code is not in
// the registry, when its patch holds more than one operation, or when its JSON Lines base is
// empty or patched into something that is not an array of lines.
TEST(FixtureRunner, MalformedInvalidFixturesAreInputErrors) {
  TempDir t;
  const std::string empty_base = t.Write("empty.jsonl", "");
  const std::string trace = "fixtures/m5_6/trace/transfer_protocol.jsonl";
  const std::string cases[] = {
      InvalidFixture(kReplaceReserved, "MANIFEST_NOT_A_CODE"),
      InvalidFixture(Json::array({kReplaceReserved[0], kReplaceReserved[0]}),
                     "MANIFEST_RESERVATION_BELOW_COMMIT"),
      InvalidFixture(Json::array({{{"op", "add"}, {"path", "/0"}, {"value", 1}}}),
                     "INPUT_UNKNOWN_KIND", empty_base),
      InvalidFixture(Json::array({{{"op", "replace"}, {"path", ""}, {"value", {{"a", 1}}}}}),
                     "INPUT_UNKNOWN_KIND", test::SourcePath(trace)),
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    FixtureOutcome o = RunFixtureFile(t.Write("case" + std::to_string(i) + ".json", cases[i]));
    EXPECT_EQ(o.error.error(), ErrorCode::INPUT_FIXTURE_MALFORMED)
        << "case " << i << ": " << o.error.ToString() << " " << o.detail;
    EXPECT_FALSE(o.passed) << "case " << i;
  }
}

// MaterializeInvalidFixture yields the base with exactly the fixture's one operation applied:
// the JSON Patch from the base to the document is the fixture's patch, and the document's text
// reads back as the document.
TEST(FixtureMaterializer, TheDocumentIsTheBaseWithTheOnePatchApplied) {
  TempDir t;
  const std::string path =
      t.Write("f.json", InvalidFixture(kReplaceReserved, "MANIFEST_RESERVATION_BELOW_COMMIT"));
  auto m = MaterializeInvalidFixture(path, ReadJsonFileStrict(path)->value);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_FALSE(m->jsonl);
  EXPECT_EQ(m->expected_code, "MANIFEST_RESERVATION_BELOW_COMMIT");
  EXPECT_EQ(m->base, fs::path(test::SourcePath(kManifest)).lexically_normal().string());
  EXPECT_EQ(Json::diff(test::LoadJson(kManifest), m->document), kReplaceReserved);
  EXPECT_EQ(Json::parse(m->Text()), m->document);
}

// A JSON Lines base is patched as the array of its lines, and its text is one line per element:
// only the patched line differs from the base's.
TEST(FixtureMaterializer, AJsonLinesBaseChangesOnlyThePatchedLine) {
  TempDir t;
  const std::string trace = "fixtures/m5_1/frontier/ordinary_stop_repair.jsonl";
  const Json patch =
      Json::array({{{"op", "replace"}, {"path", "/2/monotonic_ns"}, {"value", 123456789}}});
  const std::string path =
      t.Write("t.json", InvalidFixture(patch, "TRACE_CLOCK_REGRESSION", test::SourcePath(trace)));
  auto m = MaterializeInvalidFixture(path, ReadJsonFileStrict(path)->value);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_TRUE(m->jsonl);
  std::vector<Json> base_lines, lines;
  for (const std::string& l : test::SourceLines(trace)) base_lines.push_back(Json::parse(l));
  std::istringstream in(m->Text());
  for (std::string l; std::getline(in, l);) lines.push_back(Json::parse(l));
  ASSERT_EQ(lines.size(), base_lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 2)
      EXPECT_EQ(
          Json::diff(base_lines[i], lines[i]),
          Json::array({{{"op", "replace"}, {"path", "/monotonic_ns"}, {"value", 123456789}}}));
    else
      EXPECT_EQ(lines[i], base_lines[i]) << "line " << i + 1;
  }
}

// Regression: an invalid fixture's refusal quoted its expected code, its patch's operation or
// path (inside the JSON library's message) and its base whole, so a 10 KB value made a 10 KB
// error line in validate, suite and fixture materialize (2026-12-07); names are clipped at 80
// bytes, paths and the library's message at 512, each counted.
TEST(FixtureMaterializer, RegressionARefusalQuotesALongValueClipped) {
  TempDir t;
  const std::string long_value(10000, 'v');
  const Json long_op =
      Json::array({{{"op", long_value}, {"path", "/state_snapshot"}, {"value", 3}}});
  const Json long_path =
      Json::array({{{"op", "replace"}, {"path", "/state_snapshot/" + long_value}, {"value", 3}}});
  for (const std::string& text : {InvalidFixture(kReplaceReserved, long_value),
                                  InvalidFixture(long_op, "INPUT_VALUE_INVALID"),
                                  InvalidFixture(long_path, "INPUT_VALUE_INVALID"),
                                  InvalidFixture(kReplaceReserved, "INPUT_VALUE_INVALID",
                                                 test::SourcePath(kManifest) + long_value)}) {
    const std::string path = t.Write("f.json", text);
    auto m = MaterializeInvalidFixture(path, ReadJsonFileStrict(path)->value);
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().error(), ErrorCode::INPUT_FIXTURE_MALFORMED);
    EXPECT_LT(m.status().message().size(), 1400u) << m.status().message().substr(0, 300);
    EXPECT_NE(m.status().message().find(" bytes)"), std::string::npos)
        << m.status().message().substr(0, 300);
  }
}

// A refused fixture still names its declared code once its members are read (the runner's
// reports show what the case expected).
TEST(FixtureMaterializer, ARefusalStillNamesTheDeclaredCode) {
  TempDir t;
  const std::string path =
      t.Write("f.json", InvalidFixture(kReplaceReserved, "MANIFEST_NOT_A_CODE"));
  std::string code;
  auto m = MaterializeInvalidFixture(path, ReadJsonFileStrict(path)->value, "", &code);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().error(), ErrorCode::INPUT_FIXTURE_MALFORMED);
  EXPECT_EQ(code, "MANIFEST_NOT_A_CODE");
  EXPECT_NE(m.status().message().find("not in the error registry"), std::string::npos)
      << m.status().ToString();
}

// A case's name is its path relative to the suite root without .json or .jsonl; a path
// outside the root keeps its own path.
TEST(FixtureNames, CaseNameIsTheRelativePathWithoutExtension) {
  EXPECT_EQ(CaseName("/r/fixtures/m/a.json", "/r"), "fixtures/m/a");
  EXPECT_EQ(CaseName("/r/fixtures/m/t.jsonl", "/r"), "fixtures/m/t");
  EXPECT_EQ(CaseName("/elsewhere/x.json", "/r"), "/elsewhere/x");
  EXPECT_EQ(SanitizeCaseName("fixtures/m-1/a.b"), "fixtures_m_1_a_b");
  EXPECT_TRUE(IsDataDirectoryName("models"));
  EXPECT_TRUE(IsDataDirectoryName("_data"));
  EXPECT_FALSE(IsDataDirectoryName("manifest"));
}

// Kinds are matched exactly, version included.
TEST(FixtureNames, KindsMatchExactlyWithTheirVersion) {
  EXPECT_NE(FindKind("kvconform.request_cache_manifest/1"), nullptr);
  EXPECT_EQ(FindKind("kvconform.request_cache_manifest/2"), nullptr);
  EXPECT_EQ(FindKind(""), nullptr);
}

// A document with no kind is INPUT_UNKNOWN_KIND at the document itself (pointer ""), with the
// line of each violation filled in; an empty .jsonl file cannot be read (an error, no kind).
TEST(FixtureRunner, ValidateFileLocatesViolations) {
  TempDir t;
  FixtureOutcome o = ValidateFile(t.Write("nokind.json", "{\"a\": 1}"));
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  ASSERT_EQ(test::CodeNames(o.violations), std::vector<std::string>{"INPUT_UNKNOWN_KIND"});
  EXPECT_EQ(o.violations[0].pointer, "");
  Json m = test::LoadJson(kManifest);
  m["state_snapshot"]["reserved_token_capacity"] = 3;
  o = ValidateFile(t.Write("m.json", m.dump(2)));
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  ASSERT_FALSE(o.violations.empty());
  EXPECT_GT(o.violations[0].line, 1u) << test::Describe(o.violations);
  o = ValidateFile(t.Write("empty.jsonl", ""));
  EXPECT_EQ(o.error.code(), StatusCode::kParseError) << o.error.ToString();
}

// In a suite an invalid fixture's `case` is its path, or a suffix of it at a '/' boundary.
TEST(FixtureRunner, CaseMustNameTheFilesPath) {
  TempDir t;
  const std::string ok =
      t.Write("root/invalid_fixtures/m/f.json",
              InvalidFixture(kReplaceReserved, "MANIFEST_RESERVATION_BELOW_COMMIT"));
  const std::string root = fs::path(ok).parent_path().parent_path().parent_path().string();
  FixtureOutcome o = RunFixtureFile(ok, root);
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  EXPECT_TRUE(o.passed) << o.detail;
  const std::string other =
      t.Write("root/invalid_fixtures/m/xf.json",
              InvalidFixture(kReplaceReserved, "MANIFEST_RESERVATION_BELOW_COMMIT"));
  o = RunFixtureFile(other, root);  // "f" is a suffix of ".../xf" but not at a '/' boundary
  EXPECT_EQ(o.error.error(), ErrorCode::INPUT_FIXTURE_MALFORMED) << o.error.ToString();
}

// Mutation audit 4: in a suite a file's directory is its role even when the file cannot be
// parsed: one under invalid_fixtures/ is an invalid case that failed (probe 84: the summary
// counted it as a valid case).
TEST(FixtureRunner, RegressionAnUnparsableFileUnderInvalidFixturesIsAnInvalidCase) {
  TempDir t;
  const std::string bad = t.Write("root/invalid_fixtures/m/bad.json", "{not json");
  const std::string root = fs::path(bad).parent_path().parent_path().parent_path().string();
  const FixtureOutcome o = RunFixtureFile(bad, root);
  EXPECT_FALSE(o.error.ok());
  EXPECT_FALSE(o.passed);
  EXPECT_TRUE(o.invalid);
  const std::string valid_role = t.Write("root/fixtures/m/bad.json", "{not json");
  EXPECT_FALSE(RunFixtureFile(valid_role, root).invalid);
  // Outside a suite a directory names no role: an unreadable file under a relative
  // invalid_fixtures/ (here one that does not exist) is no invalid case.
  const FixtureOutcome lone = RunFixtureFile("invalid_fixtures/m5_1/no_such_case.json");
  EXPECT_FALSE(lone.error.ok());
  EXPECT_FALSE(lone.invalid);
}

// Mutation audit 4: a base that is not a regular file is refused before it is opened (probe 87: a
// FIFO base no process wrote hung validate); a directory stands in for one here, since under the
// check skipped a FIFO would hang the test rather than fail it.
TEST(FixtureRunner, RegressionABaseThatIsNotARegularFileIsRefusedUnread) {
  TempDir t;
  const std::string dir_base = fs::path(t.Write("dir/x", "")).parent_path().string();
  const FixtureOutcome o = RunFixtureFile(t.Write(
      "f.json", InvalidFixture(kReplaceReserved, "MANIFEST_RESERVATION_BELOW_COMMIT", dir_base)));
  EXPECT_EQ(o.error.error(), ErrorCode::INPUT_FIXTURE_MALFORMED) << o.error.ToString();
  EXPECT_NE(o.error.message().find("is not a regular file"), std::string::npos)
      << o.error.ToString();
}

// Mutation audit 4: a document outside a suite is a vendor's own, not a fixture (probe 85: its
// violation read "valid fixture raised"); in a suite's fixtures/ it is a valid fixture that raised.
TEST(FixtureRunner, RegressionOnlyASuitesDocumentIsCalledAValidFixture) {
  TempDir t;
  Json doc = test::LoadJson(kManifest);
  doc["state_snapshot"]["reserved_token_capacity"] = 3;
  const std::string own = t.Write("own.json", doc.dump());
  FixtureOutcome o = RunFixtureFile(own);
  EXPECT_EQ(o.detail.rfind("raised MANIFEST_RESERVATION_BELOW_COMMIT at ", 0), 0u) << o.detail;
  const std::string in_suite = t.Write("root/fixtures/m/doc.json", doc.dump());
  const std::string root = fs::path(in_suite).parent_path().parent_path().parent_path().string();
  o = RunFixtureFile(in_suite, root);
  EXPECT_EQ(o.detail.rfind("valid fixture raised MANIFEST_RESERVATION_BELOW_COMMIT at ", 0), 0u)
      << o.detail;
}

// The pointers of a document's string values (`strings`) and of its members (`members`).
void Pointers(const Json& v, const Json::json_pointer& at, std::vector<Json::json_pointer>* strings,
              std::vector<Json::json_pointer>* members) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      members->push_back(at / it.key());
      Pointers(*it, at / it.key(), strings, members);
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) Pointers(v[i], at / i, strings, members);
  } else if (v.is_string()) {
    strings->push_back(at);
  }
}

// Every string value and every member name of every JSON fixture, lengthened past the message limit
// one at a time, is reported with at most kMaxReportedPointerBytes of a pointer (ClipForReport)
// and a message of at most 1,000 bytes: the validators quote a value clipped at 80 bytes (512 for
// a path or a list). Before 2026-12-07, 322 messages of the 18 fixtures quoted such a value whole
// (unknown kinds, view drifts, sweep controls, release transitions, request ids), and a pointer
// held a member name whole; later that day 3,321 messages still reached the 4096-byte report
// limit (ForReport.ClipsAPointerAndAMessagePastTheReportLimits tests that limit alone).
TEST(FixtureRunner, RegressionNoReportQuotesALongValueWhole) {
  TempDir t;
  const std::string tail(kMaxReportedMessageBytes + 100, 'x');
  size_t documents = 0, clipped_messages = 0, clipped_pointers = 0;
  auto check = [&](const std::string& path, const Json::json_pointer& at, const Json& doc) {
    const FixtureOutcome o = ValidateFile(t.Write("long.json", doc.dump()));
    ++documents;
    EXPECT_TRUE(o.error.ok()) << path << " " << at.to_string() << ": " << o.error.ToString();
    for (const Violation& v : o.violations) {
      EXPECT_LE(v.pointer.size(), kMaxReportedPointerBytes + 32) << path << " " << at.to_string();
      EXPECT_LE(v.message.size(), 1000u)
          << path << " " << at.to_string() << ": " << v.message.substr(0, 160);
      clipped_pointers += v.pointer.size() > kMaxReportedPointerBytes;
      clipped_messages += v.message.find(" bytes)") != std::string::npos;
    }
  };
  for (const std::string& path : ListDocumentFiles(test::SourcePath("fixtures"))) {
    if (!path.ends_with(".json")) continue;
    auto parsed = ReadJsonFileStrict(path);
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    std::vector<Json::json_pointer> strings, members;
    Pointers(parsed->value, Json::json_pointer(), &strings, &members);
    for (const Json::json_pointer& at : strings) {
      Json doc = parsed->value;
      doc[at] = doc[at].get<std::string>() + tail;
      check(path, at, doc);
    }
    for (const Json::json_pointer& at : members) {
      Json doc = parsed->value;
      Json& parent = doc[at.parent_pointer()];
      const std::string key = at.back();
      Json value = std::move(parent[key]);
      parent.erase(key);
      parent[key + tail] = std::move(value);
      check(path, at, doc);
    }
  }
  EXPECT_GT(documents, 2000u);
  // Values were clipped and pointers reached their limit, so a value quoted whole or an unclipped
  // pointer would have been seen.
  EXPECT_GT(clipped_messages, 1000u);
  EXPECT_GT(clipped_pointers, 0u);
  std::cout << documents << " documents; " << clipped_messages
            << " messages quote a clipped value, " << clipped_pointers
            << " pointers are clipped to the report limit\n";
}

}  // namespace
}  // namespace kvc
