// Tests of the shared identifier and date forms and the clipped quote (text_forms.h).
#include "reference/base/text_forms.h"

#include <gtest/gtest.h>

#include <string>

namespace kvc::base {
namespace {

// Exactly n lowercase hex digits: no other length, no uppercase, no other letter.
TEST(TextForms, LowerHexIsExactlyNLowercaseDigits) {
  EXPECT_TRUE(IsLowerHex("0123456789abcdef", 16));
  EXPECT_FALSE(IsLowerHex("0123456789abcdef", 15));
  EXPECT_FALSE(IsLowerHex("0123456789abcdef", 17));
  EXPECT_FALSE(IsLowerHex("0123456789abcdeF", 16));
  EXPECT_FALSE(IsLowerHex("0123456789abcdeg", 16));
  EXPECT_TRUE(IsLowerHex("", 0));
}

// YYYY-MM-DD with digits in every place but the dashes, month 01-12, day 01-31.
TEST(TextForms, IsoDateIsDigitsDashesAndCalendarRanges) {
  for (const char* ok : {"2026-12-05", "0000-01-01", "9999-12-31", "2026-02-31"})
    EXPECT_TRUE(IsIsoDate(ok)) << ok;
  for (const char* bad :
       {"YYYY-MM-DD", "2026-12-0x", "2026-1a-05", "20a6-12-05", "2026-00-05", "2026-13-05",
        "2026-12-00", "2026-12-32", "2026/12/05", "2026-12-5", "2026-12-05 ", "27-07-2026", ""})
    EXPECT_FALSE(IsIsoDate(bad)) << bad;
}

// Each dash and each digit place is checked on its own: one wrong character anywhere refuses the
// date, even where the month or day it spells would be in range (':' reads as ten, '/' as -1).
TEST(TextForms, IsoDateRefusesOneWrongCharacterInAnyPlace) {
  for (const char* bad : {"2026x12-05", "2026-12x05", "x026-12-05", "2x26-12-05", "202x-12-05",
                          "2026-0:-05", "2026-1/-05", "2026-12-0:", "2026-12-1/"})
    EXPECT_FALSE(IsIsoDate(bad)) << bad;
}

// A clip never ends inside a UTF-8 sequence: it stops before the character the limit cuts, and
// keeps a character that ends exactly at the limit. Regression: the 80-byte clips of a malformed
// bindings pin, a runtime release's cache_abi_sha256 and a capability's ABI cut "é" in half.
TEST(TextForms, RegressionClipUtf8StopsBeforeACharacterTheLimitCuts) {
  const std::string a79(79, 'a');
  EXPECT_EQ(ClipUtf8(a79 + "\xC3\xA9x", 80), a79);               // 2-byte "é" at 79..80
  EXPECT_EQ(ClipUtf8(a79 + "\xC3\xA9x", 81), a79 + "\xC3\xA9");  // ends at the limit
  EXPECT_EQ(ClipUtf8("ab\xE2\x82\xAC", 4), "ab");                // 3-byte "€" cut after 2
  EXPECT_EQ(ClipUtf8("ab\xF0\x9F\x98\x80z", 5), "ab");           // 4-byte cut after 3
  EXPECT_EQ(ClipUtf8("ab\xF0\x9F\x98\x80z", 6), "ab\xF0\x9F\x98\x80");
  EXPECT_EQ(ClipUtf8("\xC3\xA9", 1), "");
  EXPECT_EQ(ClipUtf8("short", 80), "short");
  EXPECT_EQ(ClipUtf8("abcdef", 3), "abc");
  EXPECT_EQ(ClipUtf8("", 0), "");
}

// A quoted value is whole up to the limit; past it, a clipped prefix, "..." and its length.
TEST(TextForms, QuoteClippedQuotesWholeOrClipsAndCounts) {
  EXPECT_EQ(QuoteClipped("abc"), "\"abc\"");
  EXPECT_EQ(QuoteClipped(std::string(80, 'x')), "\"" + std::string(80, 'x') + "\"");
  EXPECT_EQ(QuoteClipped(std::string(81, 'x')), "\"" + std::string(80, 'x') + "...\" (81 bytes)");
  EXPECT_EQ(QuoteClipped("ab\xC3\xA9", 3), "\"ab...\" (4 bytes)");
}

// An unquoted value is whole up to the limit; past it, a clipped prefix, "..." and its length.
TEST(TextForms, ClippedNamesWholeOrClipsAndCounts) {
  EXPECT_EQ(Clipped("abc"), "abc");
  EXPECT_EQ(Clipped(std::string(80, 'x')), std::string(80, 'x'));
  // The expected text is built in a named string: GCC 12's -Warray-bounds misjudges the inlined
  // operator+ on a temporary here (a false positive that failed the -Werror CI build).
  std::string clipped_81(80, 'x');
  clipped_81.append("... (81 bytes)");
  EXPECT_EQ(Clipped(std::string(81, 'x')), clipped_81);
  EXPECT_EQ(Clipped("ab\xC3\xA9", 3), "ab... (4 bytes)");
}

// A string's JSON text keeps both quotes, clipped or not, with its length after the closing one;
// other values' texts (numbers, arrays, objects) are clipped unquoted.
TEST(TextForms, ClippedJsonTextKeepsAStringsClosingQuote) {
  EXPECT_EQ(ClippedJsonText("\"abc\""), "\"abc\"");
  const std::string long_text = "\"" + std::string(100, 's') + "\"";
  std::string clipped_string = "\"" + std::string(80, 's');
  clipped_string.append("...\" (100 bytes)");
  EXPECT_EQ(ClippedJsonText(long_text), clipped_string);
  EXPECT_EQ(ClippedJsonText("12345"), "12345");
  EXPECT_EQ(ClippedJsonText("\""), "\"");  // one quote is not a string's text
  const std::string long_array = "[\"" + std::string(100, 's') + "\"]";
  EXPECT_EQ(ClippedJsonText(long_array), Clipped(long_array));
}

// A list is whole up to its limit of elements; past it, its first elements, "..." and its length.
TEST(TextForms, ClippedListShowsItsFirstElementsAndItsLength) {
  EXPECT_EQ(ClippedList({}), "[]");
  EXPECT_EQ(ClippedList({1, 2, 3}), "[1, 2, 3]");
  EXPECT_EQ(ClippedList({1, 2, 3}, ","), "[1,2,3]");
  EXPECT_EQ(ClippedList({1, 2, 3}, ", ", 3), "[1, 2, 3]");
  EXPECT_EQ(ClippedList({1, 2, 3, 4}, ", ", 3), "[1, 2, 3, ...] (4 elements)");
  EXPECT_EQ(ClippedList({18446744073709551615u}), "[18446744073709551615]");
}

}  // namespace
}  // namespace kvc::base
