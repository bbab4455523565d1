// Strict JSON reader: every kind of bad input gets a located, specific error.
#include "reference/base/strict_json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "reference/testutil/testutil.h"

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

// A number below the smallest double reads as a zero of its sign (RFC 8259 section 6 lets a
// reader approximate); only overflow is refused (the base audit's finding: from_chars reports
// both as out of range, and "1e-400" was refused as "out of the range of a double").
TEST(StrictJson, RegressionAnUnderflowingNumberReadsAsZero) {
  for (const char* text : {"1e-400", "2e-324", "0.0000001e-320", "123e-999999999999999999999",
                           "-1e-400", "-0.5E-400"}) {
    auto r = ParseJsonStrict(text, "t");
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    ASSERT_TRUE(r->value.is_number_float()) << text;
    const double d = r->value.get<double>();
    EXPECT_EQ(d, 0.0) << text;
    EXPECT_EQ(std::signbit(d), text[0] == '-') << text;
  }
  auto subnormal = ParseJsonStrict("1e-320", "t");
  ASSERT_TRUE(subnormal.ok());
  EXPECT_GT(subnormal->value.get<double>(), 0.0);
  // Overflow stays an error, however the digits are written.
  for (const char* text : {"1e400", "-1e309", "0.1e310", "10000e305", "1e99999999999999999999"})
    EXPECT_NE(ErrorOf(text).find("out of the range of a double"), std::string::npos) << text;
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

// RFC 8259 section 2: a horizontal tab is insignificant whitespace.
TEST(StrictJson, AcceptsTabAsWhitespace) {
  auto r = ParseJsonStrict("[1,\t2]", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value.size(), 2u);
}

// RFC 8259 section 2: a form feed is not whitespace.
TEST(StrictJson, RejectsFormFeedAsWhitespace) {
  EXPECT_NE(ErrorOf("[1,\f2]").find("unexpected byte 0x0C; expected a JSON value"),
            std::string::npos);
}

// JsonLimits::max_bytes: a document of exactly max_bytes is read, one byte more is refused.
TEST(StrictJson, MaxBytesAdmitsADocumentOfExactlyThatSize) {
  JsonLimits limits;
  limits.max_bytes = 4;
  EXPECT_TRUE(ParseJsonStrict("[12]", "t", false, limits).ok());
  EXPECT_NE(ErrorOf("[123]", limits).find("5 bytes, over the limit of 4"), std::string::npos);
}

// RFC 8259 section 5: no trailing comma in an array.
TEST(StrictJson, RejectsTrailingCommaInArray) {
  EXPECT_NE(ErrorOf("[1,]").find("unexpected ']'; expected a JSON value"), std::string::npos);
}

// RFC 8259 section 7: every two-character escape decodes to its character.
TEST(StrictJson, DecodesEveryShortEscape) {
  auto r = ParseJsonStrict(R"("\"\\\/\b\f\n\r\t")", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value.get<std::string>(), "\"\\/\b\f\n\r\t");
}

// RFC 8259 section 7: the four hex digits of a \u escape are case-insensitive.
TEST(StrictJson, UnicodeEscapeHexDigitsAreCaseInsensitive) {
  auto r = ParseJsonStrict(R"("\u00E9\u00e9\uD83D\uDE00")", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value.get<std::string>(), "\xc3\xa9\xc3\xa9\xf0\x9f\x98\x80");
}

// A \u escape takes hex digits only.
TEST(StrictJson, RejectsNonHexDigitInUnicodeEscape) {
  EXPECT_NE(ErrorOf(R"("\u00g0")").find("invalid hex digit 'g'"), std::string::npos);
}

// A high surrogate escape must be followed by a low surrogate escape, not any \u escape.
TEST(StrictJson, RejectsHighSurrogateFollowedByANonLowSurrogate) {
  EXPECT_NE(ErrorOf(R"("\ud800\u0041")").find("in.json:1:8: expected a low surrogate"),
            std::string::npos);
}

// \uDBFF is the last high surrogate: \uDBFF\uDFFF is U+10FFFF.
TEST(StrictJson, DecodesTheLastSurrogatePair) {
  auto r = ParseJsonStrict(R"("\udbff\udfff")", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value.get<std::string>(), "\xf4\x8f\xbf\xbf");
}

// RFC 8259 section 7: every byte below 0x20, U+001F included, must be escaped.
TEST(StrictJson, RejectsUnescapedUnitSeparator) {
  EXPECT_NE(ErrorOf("\"\x1f\"").find("unescaped control character byte 0x1F"), std::string::npos);
}

// RFC 8259 section 7: DEL (0x7F) is not a control character JSON requires escaped.
TEST(StrictJson, AcceptsUnescapedDelete) {
  auto r = ParseJsonStrict("\"\x7f\"", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->value.get<std::string>(), "\x7f");
}

// UTF-8 stops at U+10FFFF (RFC 3629): F4 90 80 80 (U+110000) is refused, F4 8F BF BF read.
TEST(StrictJson, RejectsUtf8BeyondU10FFFF) {
  EXPECT_NE(ErrorOf("\"\xf4\x90\x80\x80\"").find("beyond U+10FFFF"), std::string::npos);
  EXPECT_TRUE(ParseJsonStrict("\"\xf4\x8f\xbf\xbf\"", "t").ok());
}

// A \u escape cut short by the end of input is reported as such (nothing past the input is read).
TEST(StrictJson, ReportsUnicodeEscapeCutShortByEndOfInput) {
  EXPECT_NE(ErrorOf("\"\\u123").find("in.json:1:4: unexpected end of input in \\u escape"),
            std::string::npos);
}

// A multi-byte UTF-8 sequence cut short by the end of input is reported as truncated (nothing past
// the input is read).
TEST(StrictJson, ReportsUtf8SequenceCutShortByEndOfInput) {
  EXPECT_NE(ErrorOf("\"\xe2\x82").find("truncated UTF-8 sequence"), std::string::npos);
}

// RFC 8259 section 6: an exponent may carry a minus sign.
TEST(StrictJson, AcceptsNegativeExponent) {
  auto r = ParseJsonStrict("1e-2", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->value.get<double>(), 0.01);
}

// RFC 8259 section 6: a number has no leading plus sign.
TEST(StrictJson, RejectsLeadingPlusSign) {
  EXPECT_NE(ErrorOf("+1").find("unexpected '+'; expected a JSON value"), std::string::npos);
}

// Numbers that fit are kept as integers: negative ones too, down to INT64_MIN.
TEST(StrictJson, NegativeIntegersStayIntegers) {
  auto r = ParseJsonStrict("[-2, -9223372036854775808]", "t");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->value[0].is_number_integer());
  EXPECT_TRUE(r->value[1].is_number_integer());
  EXPECT_EQ(r->value[1].get<int64_t>(), INT64_MIN);
}

// JsonLimits::first_of_duplicates: a dropped repeated value records no locations.
TEST(StrictJson, FirstOfDuplicatesRecordsNoLocationsInsideADroppedValue) {
  JsonLimits limits;
  limits.first_of_duplicates = true;
  auto r = ParseJsonStrict("{\"a\": 1,\n \"a\": [3]}", "in.json", true, limits);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->locations.count("/a/0"), 0u);
  EXPECT_EQ(r->LineOf("/a/0"), 1u);
}

// A file is read up to the cap: a regular file one byte past it is refused by its size before
// it is read, a device by what it gave (/dev/zero never ends); both name the cap.
TEST(ReadFileToString, RefusesAFileOrAStreamPastTheCap) {
  test::TempDir dir;
  const std::string path = dir.Write("ten.txt", "0123456789");
  auto whole = ReadFileToString(path, 10);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(*whole, "0123456789");
  auto over = ReadFileToString(path, 9);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(), path + ": file is larger than 9 bytes");
  auto stream = ReadFileToString("/dev/zero", 1000);
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.status().message(), "/dev/zero: file is larger than 1000 bytes");
}

// A document file past the limit is refused by the reader with the limit itself, at one byte
// past it and at many (it named the limit plus one past one byte, where the parser took over:
// "file is larger than 268435457 bytes" for a 300 MB file, "document is 268435457 bytes, over the
// limit of 268435456" for one byte over).
TEST(ReadJsonFileStrict, RegressionAFilePastTheLimitIsRefusedNamingTheLimit) {
  test::TempDir dir;
  JsonLimits limits;
  limits.max_bytes = 4;
  auto at = ReadJsonFileStrict(dir.Write("at.json", "[12]"), false, limits);
  ASSERT_TRUE(at.ok()) << at.status().ToString();
  for (const char* text : {"[123]", "[1234567]"}) {
    const std::string path = dir.Write("over.json", text);
    auto over = ReadJsonFileStrict(path, false, limits);
    ASSERT_FALSE(over.ok()) << text;
    EXPECT_EQ(over.status().message(), path + ": file is larger than 4 bytes") << text;
  }
}

}  // namespace
}  // namespace kvc
