// FieldReader: each schema-level fault is its own INPUT_* code at its member.
#include "reference/validate/violation.h"

#include <gtest/gtest.h>

#include <functional>

#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

// The codes a FieldReader over `doc` records while `read` runs.
std::vector<std::string> CodesOf(const Json& doc, const std::function<void(FieldReader&)>& read) {
  Violations v;
  FieldReader r(&doc, "", &v);
  read(r);
  return test::CodeNames(v);
}

// Int reads a 64-bit signed integer: an unsigned value above INT64_MAX, or a fraction, is out
// of range; a non-number is a type error.
TEST(FieldReaderTest, IntIsASigned64BitInteger) {
  const Json doc = {{"big", uint64_t{1} << 63}, {"frac", 1.5}, {"str", "1"}, {"neg", -3}};
  std::optional<int64_t> neg;
  EXPECT_EQ(CodesOf(doc,
                    [&](FieldReader& r) {
                      EXPECT_FALSE(r.Int("big").has_value());
                      EXPECT_FALSE(r.Int("frac").has_value());
                      neg = r.Int("neg");
                    }),
            std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  EXPECT_EQ(neg, -3);
  EXPECT_EQ(CodesOf(doc, [](FieldReader& r) { EXPECT_FALSE(r.Int("str").has_value()); }),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
}

// Regression (2026-12-07): Int named a value of another type by its whole JSON text, so a
// 10 KB string made a 10 KB message; it is clipped inside its quotes, with its length.
TEST(FieldReaderTest, RegressionIntClipsTheValueItRefuses) {
  const Json doc = {{"str", std::string(10000, 's')}};
  Violations v;
  FieldReader r(&doc, "", &v);
  EXPECT_FALSE(r.Int("str").has_value());
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(v[0].message, "expected a 64-bit signed integer, got \"" + std::string(80, 's') +
                              "...\" (10000 bytes)");
}

// Number, Bool and Array refuse a value of another JSON type with INPUT_FIELD_TYPE.
TEST(FieldReaderTest, NumberBoolAndArrayRefuseOtherTypes) {
  const Json doc = {{"n", "1"}, {"b", 1}, {"a", {{"k", 1}}}};
  EXPECT_EQ(CodesOf(doc, [](FieldReader& r) { EXPECT_FALSE(r.Number("n").has_value()); }),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(CodesOf(doc, [](FieldReader& r) { EXPECT_FALSE(r.Bool("b").has_value()); }),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
  EXPECT_EQ(CodesOf(doc, [](FieldReader& r) { EXPECT_EQ(r.Array("a"), nullptr); }),
            std::vector<std::string>{"INPUT_FIELD_TYPE"});
}

// OptUint bounds a present value by its max (inclusive); an absent one is no violation.
TEST(FieldReaderTest, OptUintIsBoundedWhenPresent) {
  const Json doc = {{"at", 10}, {"over", 11}};
  EXPECT_EQ(CodesOf(doc,
                    [](FieldReader& r) {
                      EXPECT_EQ(r.OptUint("at", 10), 10u);
                      EXPECT_FALSE(r.OptUint("absent", 10).has_value());
                      EXPECT_FALSE(r.OptUint("over", 10).has_value());
                    }),
            std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
}

// Every member the schema does not define is INPUT_FIELD_UNKNOWN, whatever its name.
TEST(FieldReaderTest, EveryUndefinedMemberIsUnknown) {
  const Json doc = {{"known", 1}, {"x_extension", 2}, {"Known", 3}};
  Violations v;
  FieldReader r(&doc, "/o", &v);
  r.Uint("known");
  r.RejectUnknownFields();
  ASSERT_EQ(test::CodeNames(v), std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
  ASSERT_EQ(v.size(), 2u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/o/Known");
  EXPECT_EQ(v[1].pointer, "/o/x_extension");
}

// A report keeps 512 bytes of a pointer and 4096 of a message, each cut at a character and
// followed by its length; shorter ones whole.
TEST(ForReport, ClipsAPointerAndAMessagePastTheReportLimits) {
  const Violation whole = ForReport({ErrorCode::INPUT_VALUE_INVALID, "/a", "short", 7});
  EXPECT_EQ(whole.pointer, "/a");
  EXPECT_EQ(whole.message, "short");
  EXPECT_EQ(whole.line, 7u);
  // Texts are built in named strings: GCC 12's -Warray-bounds misjudges inlined operator+ on
  // temporaries here (a false positive that failed the -Werror CI build).
  std::string long_pointer = "/";
  long_pointer.append(600, 'p');
  std::string long_message(4095, 'm');
  long_message.append("\xC3\xA9");
  std::string clipped_pointer = "/";
  clipped_pointer.append(511, 'p').append("... (601 bytes)");
  std::string clipped_message(4095, 'm');
  clipped_message.append("... (4097 bytes)");
  Violation input;
  input.code = ErrorCode::INPUT_VALUE_INVALID;
  input.pointer = long_pointer;
  input.message = long_message;
  input.line = 7;
  const Violation cut = ForReport(input);
  EXPECT_EQ(cut.pointer, clipped_pointer);
  EXPECT_EQ(cut.message, clipped_message);
  EXPECT_EQ(cut.code, ErrorCode::INPUT_VALUE_INVALID);
}

}  // namespace
}  // namespace kvc
