// The fixture runner's rules: what makes an invalid fixture pass, what makes one malformed,
// and how files are named, found and read.
#include "reference/validate/fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>

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

}  // namespace
}  // namespace kvc
