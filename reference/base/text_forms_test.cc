// Tests of the shared identifier and date forms (text_forms.h).
#include "reference/base/text_forms.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kvc::base
