// The registry is well-formed and docs/error-codes.md is exactly its rendering.
#include "reference/errors/error_codes.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "reference/base/strict_json.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

TEST(ErrorCodes, NamesAreUniqueStableIdentifiersWithMeaningAndSection) {
  std::set<std::string_view> names;
  const std::regex ident("^[A-Z][A-Z0-9_]+$");
  for (const auto& e : AllErrorCodes()) {
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate code " << e.name;
    EXPECT_TRUE(std::regex_match(std::string(e.name), ident)) << e.name;
    EXPECT_FALSE(e.meaning.empty()) << e.name;
    EXPECT_FALSE(e.section.empty()) << e.name;
    EXPECT_EQ(ErrorCodeFromName(e.name), e.code);
    EXPECT_EQ(ErrorCodeName(e.code), e.name);
  }
  EXPECT_FALSE(ErrorCodeFromName("NO_SUCH_CODE").has_value());
  EXPECT_EQ(ErrorCodeName(ErrorCode::kNone), "NONE");
}

TEST(ErrorCodes, DocsPageIsInSyncWithTheRegistry) {
  auto page = ReadFileToString(test::SourcePath("docs/error-codes.md"));
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(*page, RenderErrorCodesMarkdown())
      << "docs/error-codes.md is stale: regenerate with\n"
         "  build/bin/kvconform errors --format markdown > docs/error-codes.md";
}

}  // namespace
}  // namespace kvc
