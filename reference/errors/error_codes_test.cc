// The registry is well-formed and docs/error-codes.md is exactly its rendering.
#include "reference/errors/error_codes.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "reference/base/strict_json.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

// [A-Z][A-Z0-9_]+ (written out: std::regex under GCC 12's -fsanitize=address raises a
// -Wmaybe-uninitialized false positive inside libstdc++, which -Werror turned into a failed
// sanitizer build).
bool IsCodeIdentifier(std::string_view s) {
  if (s.size() < 2 || s[0] < 'A' || s[0] > 'Z') return false;
  for (char ch : s)
    if (!((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_')) return false;
  return true;
}

TEST(ErrorCodes, CodeIdentifierRuleMatchesItsPattern) {
  EXPECT_TRUE(IsCodeIdentifier("TRACE_LINE_MALFORMED"));
  EXPECT_TRUE(IsCodeIdentifier("A1"));
  EXPECT_FALSE(IsCodeIdentifier("A"));
  EXPECT_FALSE(IsCodeIdentifier("1A"));
  EXPECT_FALSE(IsCodeIdentifier("_A"));
  EXPECT_FALSE(IsCodeIdentifier("Trace_X"));
  EXPECT_FALSE(IsCodeIdentifier("TRACE-X"));
  EXPECT_FALSE(IsCodeIdentifier(""));
}

TEST(ErrorCodes, NamesAreUniqueStableIdentifiersWithMeaningAndSection) {
  std::set<std::string_view> names;
  for (const auto& e : AllErrorCodes()) {
    EXPECT_TRUE(names.insert(e.name).second) << "duplicate code " << e.name;
    EXPECT_TRUE(IsCodeIdentifier(e.name)) << e.name;
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

// The registry holds exactly the names of code_names.lock, the append-only list of every code
// name since the no-rename policy: a renamed or removed code (which a vendor's CI or a pinned
// invalid fixture still names) fails here, and so does a new code not yet appended to the lock.
TEST(ErrorCodes, RegistryKeepsEveryLockedName) {
  auto lock = ReadFileToString(test::SourcePath("reference/errors/code_names.lock"));
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  std::set<std::string> locked;
  size_t pos = 0;
  while (pos < lock->size()) {
    size_t end = lock->find('\n', pos);
    if (end == std::string::npos) end = lock->size();
    const std::string line = lock->substr(pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    EXPECT_TRUE(IsCodeIdentifier(line)) << "code_names.lock: \"" << line << "\"";
    EXPECT_TRUE(locked.insert(line).second) << "code_names.lock lists " << line << " twice";
    EXPECT_TRUE(ErrorCodeFromName(line).has_value())
        << line << " is in reference/errors/code_names.lock but not in the registry: codes are "
        << "never renamed or removed (retire one in place, its meaning starting \"RETIRED:\")";
  }
  for (const auto& e : AllErrorCodes())
    EXPECT_TRUE(locked.count(std::string(e.name)))
        << e.name << " is not in reference/errors/code_names.lock: append it there";
  EXPECT_EQ(locked.size(), AllErrorCodes().size());
}

// ErrorCodeFromName matches whole names only: a prefix of a code names nothing.
TEST(ErrorCodes, FromNameRejectsAPrefixOfACode) {
  EXPECT_TRUE(ErrorCodeFromName("INPUT_FIELD_MISSING").has_value());
  EXPECT_FALSE(ErrorCodeFromName("INPUT_FIELD").has_value());
}

}  // namespace
}  // namespace kvc
