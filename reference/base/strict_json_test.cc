// Strict JSON reader: every kind of bad input gets a located, specific error.
#include "reference/base/strict_json.h"

#include <gtest/gtest.h>

namespace kvc {
namespace {

std::string ErrorOf(std::string_view text, const JsonLimits& limits = {}) {
  auto r = ParseJsonStrict(text, "in.json", false, limits);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  return r.ok() ? "" : r.status().message();
}

TEST(StrictJson, ParsesValuesAndKeepsIntegersExact) {
  auto r = ParseJsonStrict(R"({"a": [1, -2, 3.5, true, null, "x\u00e9\ud83d\ude00"], "big": 9007199254740993})", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value["a"][0].get<uint64_t>(), 1u);
  EXPECT_EQ(r->value["a"][1].get<int64_t>(), -2);
  EXPECT_EQ(r->value["a"][5].get<std::string>(), "x\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(r->value["big"].get<uint64_t>(), 9007199254740993u);
}

TEST(StrictJson, EmptyInputIsAnError) {
  EXPECT_NE(ErrorOf("").find("in.json:1:1: input is empty"), std::string::npos);
  EXPECT_NE(ErrorOf("  \n ").find("input is empty"), std::string::npos);
}

TEST(StrictJson, ReportsLineAndColumn) {
  std::string e = ErrorOf("{\n  \"a\": 1,\n  \"b\" 2\n}");
  EXPECT_NE(e.find("in.json:3:7: unexpected '2'; expected ':'"), std::string::npos) << e;
}

TEST(StrictJson, RejectsDuplicateKeysAtTheSecondOccurrence) {
  std::string e = ErrorOf("{\"a\": 1,\n \"a\": 2}");
  EXPECT_NE(e.find("in.json:2:2: duplicate key \"a\""), std::string::npos) << e;
}

// JsonLimits::first_of_duplicates: the first value stands, with its location; a repeated
// value is still read for syntax.
TEST(StrictJson, FirstOfDuplicatesKeepsTheFirstValue) {
  JsonLimits limits;
  limits.first_of_duplicates = true;
  auto r = ParseJsonStrict("{\"a\": 1, \"b\": {\"c\": 2}, \"a\": [3]}", "in.json",
                           /*record_locations=*/true, limits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value["a"], 1);
  EXPECT_EQ(r->value["b"]["c"], 2);
  EXPECT_EQ(r->locations.at("/a").column, 7u);
  EXPECT_FALSE(ParseJsonStrict("{\"a\": 1, \"a\": [3}", "in.json", false, limits).ok());
}

TEST(StrictJson, RejectsDeepNestingWithoutRecursingForever) {
  std::string deep(100000, '[');
  EXPECT_NE(ErrorOf(deep).find("nesting deeper than 128"), std::string::npos);
  JsonLimits small;
  small.max_depth = 3;
  EXPECT_NE(ErrorOf("[[[[1]]]]", small).find("nesting deeper than 3"), std::string::npos);
  EXPECT_TRUE(ParseJsonStrict("[[[1]]]", "t", false, small).ok());
}

TEST(StrictJson, RejectsInvalidUtf8) {
  EXPECT_NE(ErrorOf("\"\xff\"").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(ErrorOf("\"\xc0\xaf\"").find("overlong"), std::string::npos);            // overlong '/'
  EXPECT_NE(ErrorOf("\"\xed\xa0\x80\"").find("surrogate"), std::string::npos);       // UTF-8 surrogate
  EXPECT_NE(ErrorOf("\"\xe2\x82\"").find("UTF-8"), std::string::npos);               // truncated
  EXPECT_NE(ErrorOf("\"\\ud800\"").find("high surrogate"), std::string::npos);       // lone escape
  EXPECT_NE(ErrorOf("\"\\udc00\"").find("lone low surrogate"), std::string::npos);
  EXPECT_NE(ErrorOf("\xef\xbb\xbf{}").find("byte-order mark"), std::string::npos);
}

TEST(StrictJson, RejectsMalformedNumbersAndLiterals) {
  EXPECT_NE(ErrorOf("01").find("leading zeros"), std::string::npos);
  EXPECT_NE(ErrorOf("1.").find("after the decimal point"), std::string::npos);
  EXPECT_NE(ErrorOf("1e").find("exponent"), std::string::npos);
  EXPECT_NE(ErrorOf("1e400").find("out of the range"), std::string::npos);
  EXPECT_NE(ErrorOf("tru").find("expected 'true'"), std::string::npos);
  EXPECT_NE(ErrorOf("NaN").find("expected a JSON value"), std::string::npos);
}

TEST(StrictJson, HugeIntegersBecomeDoublesForRangeChecksDownstream) {
  auto r = ParseJsonStrict("123456789012345678901234567890", "t");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->value.is_number_float());
}

TEST(StrictJson, RejectsTrailingBytesAndControlCharacters) {
  EXPECT_NE(ErrorOf("{} x").find("after the JSON value"), std::string::npos);
  EXPECT_NE(ErrorOf("\"a\tb\"").find("control character"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"a\":1,}").find("expected '\"' to start a key"), std::string::npos);
  EXPECT_NE(ErrorOf("[1 2]").find("expected ',' or ']'"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"a\":1").find("unexpected end of input"), std::string::npos);
}

TEST(StrictJson, RecordsLocationsByPointer) {
  auto r = ParseJsonStrict("{\n \"a\": {\n  \"b/c\": [0,\n 7]\n }\n}", "t", true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->LineOf("/a"), 2u);
  EXPECT_EQ(r->LineOf("/a/b~1c/1"), 4u);
  EXPECT_EQ(r->LineOf("/a/b~1c/9/x"), 3u);  // nearest recorded ancestor
}

TEST(StrictJson, UnreadableFileIsAnIoError) {
  auto r = ReadJsonFileStrict("/nonexistent/kvconform.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("/nonexistent/kvconform.json"), std::string::npos);
}

}  // namespace
}  // namespace kvc
