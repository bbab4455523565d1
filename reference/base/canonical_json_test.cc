// RFC 8785 canonicalization vectors and SHA-256 known answers.
#include "reference/base/canonical_json.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvc {
namespace {

std::string Canon(std::string_view text) {
  auto p = ParseJsonStrict(text, "t");
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  auto c = CanonicalJson(p->value);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : "";
}

TEST(CanonicalJson, SortsMembersByUtf16CodeUnits) {
  // RFC 8785 section 3.2.3 sorting example (keys given as escapes).
  EXPECT_EQ(Canon(R"({"\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis"})"),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

TEST(CanonicalJson, RendersNumbersAsEcmaScript) {
  // RFC 8785 section 3.2.2.3 / appendix B samples.
  EXPECT_EQ(FormatEcmaScriptNumber(333333333.33333329), "333333333.3333333");
  EXPECT_EQ(FormatEcmaScriptNumber(1e30), "1e+30");
  EXPECT_EQ(FormatEcmaScriptNumber(4.50), "4.5");
  EXPECT_EQ(FormatEcmaScriptNumber(2e-3), "0.002");
  EXPECT_EQ(FormatEcmaScriptNumber(0.000000000000000000000000001), "1e-27");
  EXPECT_EQ(FormatEcmaScriptNumber(-0.0), "0");
  EXPECT_EQ(FormatEcmaScriptNumber(1e21), "1e+21");
  EXPECT_EQ(FormatEcmaScriptNumber(1e20), "100000000000000000000");
  EXPECT_EQ(FormatEcmaScriptNumber(1e-7), "1e-7");
  EXPECT_EQ(FormatEcmaScriptNumber(0.000001), "0.000001");
  EXPECT_EQ(FormatEcmaScriptNumber(5e-324), "5e-324");
  EXPECT_EQ(FormatEcmaScriptNumber(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(FormatEcmaScriptNumber(-1.5), "-1.5");
  EXPECT_EQ(Canon("[56, 1.0, 10000.0, -0.0]"), "[56,1,10000,0]");
}

TEST(CanonicalJson, EscapesOnlyWhatJcsRequires) {
  EXPECT_EQ(Canon(R"("\u0001\"\\/\u00e9\n")"), "\"\\u0001\\\"\\\\/\xc3\xa9\\n\"");
  EXPECT_EQ(Canon(R"({"b":[],"a":{"d":null,"c":true}})"), R"({"a":{"c":true,"d":null},"b":[]})");
}

TEST(CanonicalJson, RejectsNonIJsonIntegers) {
  EXPECT_FALSE(CanonicalJson(Json(uint64_t{1} << 60)).ok());
  EXPECT_TRUE(CanonicalJson(Json(uint64_t{1} << 53)).ok());
  EXPECT_FALSE(CanonicalJson(Json(-(int64_t{1} << 54))).ok());
}

TEST(Sha256, KnownAnswers) {
  // FIPS 180-2 "abc" and the empty string.
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // `printf '[11,22,33,44]' | sha256sum`: the manifest fixture's prompt digest.
  auto d = CanonicalSha256(Json::array({11, 22, 33, 44}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d, "683127e375b8e34a047aabc88d39e6a2d41051d7fa21b304a769ace7cef5b727");
  EXPECT_TRUE(IsSha256Hex(*d));
  EXPECT_FALSE(IsSha256Hex("ABC"));
}

// RFC 8785 section 3.2.3: a non-BMP key sorts by its surrogates (U+1F600 is D83D DE00, before
// U+E000), not by its code point.
TEST(CanonicalJson, SortsNonBmpKeysBySurrogateCodeUnits) {
  EXPECT_EQ(Canon(R"({"\ue000": 1, "\ud83d\ude00": 2})"),
            "{\"\xf0\x9f\x98\x80\":2,\"\xee\x80\x80\":1}");
}

// RFC 8785 section 3.2.3: two keys with the same high surrogate sort by the low one
// (U+1F401 is D83D DC01, before U+1F600's D83D DE00).
TEST(CanonicalJson, SortsKeysSharingAHighSurrogateByTheLowSurrogate) {
  EXPECT_EQ(Canon(R"({"\ud83d\ude00": 1, "\ud83d\udc01": 2})"),
            "{\"\xf0\x9f\x90\x81\":2,\"\xf0\x9f\x98\x80\":1}");
}

// RFC 8785 section 3.2.2.2: \b \f \n \r \t are written as their two-character escapes.
TEST(CanonicalJson, WritesShortEscapesForTheirControlCharacters) {
  EXPECT_EQ(Canon(R"("\b\f\n\r\t")"), R"("\b\f\n\r\t")");
}

// RFC 8785 section 3.2.2.2: other control characters are \u00xx with lowercase hex.
TEST(CanonicalJson, WritesOtherControlCharactersWithLowercaseHex) {
  EXPECT_EQ(Canon(R"("\u001F")"), R"("\u001f")");
}

// RFC 8785 section 3.2.2.2: DEL (0x7F) is not escaped.
TEST(CanonicalJson, WritesDeleteUnescaped) { EXPECT_EQ(Canon(R"("\u007f")"), "\"\x7f\""); }

// I-JSON: -2^53 is the most negative integer that canonicalizes.
TEST(CanonicalJson, AcceptsMinusTwoToThe53) {
  auto c = CanonicalJson(Json(-(int64_t{1} << 53)));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, "-9007199254740992");
}

// I-JSON: 2^53 + 1 is refused (it has no exact double).
TEST(CanonicalJson, RejectsTwoToThe53PlusOne) {
  auto c = CanonicalJson(Json((uint64_t{1} << 53) + 1));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kOutOfRange);
}

// Non-finite numbers are rejected rather than written.
TEST(CanonicalJson, RejectsNonFiniteNumbers) {
  for (double d : {HUGE_VAL, -HUGE_VAL, std::nan("")}) {
    auto c = CanonicalJson(Json::array({d}));
    ASSERT_FALSE(c.ok()) << d;
    EXPECT_EQ(c.status().code(), StatusCode::kOutOfRange) << d;
  }
}

// A binary value has no JSON text: refused, not written.
TEST(CanonicalJson, RejectsBinaryValues) {
  auto c = CanonicalJson(Json::object({{"b", Json::binary({1, 2})}}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvc
