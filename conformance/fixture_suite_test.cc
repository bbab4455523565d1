// The data-driven fixture suite: one test case per file under fixtures/ (must pass) and
// invalid_fixtures/ (must raise exactly its declared code). The case name is the file's
// path with separators as '_', so --gtest_filter='*zero_layers*' reruns one case.
#include <gtest/gtest.h>

#include "reference/testutil/testutil.h"
#include "reference/validate/fixtures.h"

namespace kvc {
namespace {

class FixtureSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureSuite, Conforms) {
  const std::string root = test::SourcePath("");
  FixtureOutcome o = RunFixtureFile(GetParam(), root);
  ASSERT_TRUE(o.error.ok()) << o.error.ToString();
  if (o.invalid) {
    EXPECT_TRUE(o.passed) << o.case_name << ": " << o.detail << "\n" << test::Describe(o.violations);
  } else {
    EXPECT_TRUE(o.passed) << o.case_name << ":\n" << test::Describe(o.violations);
  }
}

std::vector<std::string> AllFixtures() { return ListFixtureFiles(test::SourcePath("")); }

INSTANTIATE_TEST_SUITE_P(Files, FixtureSuite, ::testing::ValuesIn(AllFixtures()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return SanitizeCaseName(CaseName(info.param, test::SourcePath("")));
                         });

// Guards the suite itself: the bundled tree must hold cases of both polarities.
TEST(FixtureSuiteInventory, HasValidAndInvalidCases) {
  size_t valid = 0, invalid = 0;
  for (const auto& f : AllFixtures()) (f.find("/invalid_fixtures/") != std::string::npos ? invalid : valid)++;
  EXPECT_GE(valid, 1u);
  EXPECT_GE(invalid, 18u) << "the seed lists eighteen negative manifest cases alone";
}

}  // namespace
}  // namespace kvc
