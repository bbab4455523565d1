// The kind registry's lookups: a document's kind is its string "kind" member, nothing else.
#include "reference/validate/kinds.h"

#include <gtest/gtest.h>

namespace kvc {
namespace {

// Mutation audit 4: a "kind" that is not a string names no kind (the runner then says the document
// has no string kind, at the document), rather than its JSON text naming an unknown one.
TEST(Kinds, OnlyAStringKindMemberNamesAKind) {
  EXPECT_EQ(KindOf(Json{{"kind", "kvconform.trace/1"}}), "kvconform.trace/1");
  for (const Json& doc :
       {Json{{"kind", 5}}, Json{{"kind", Json::array({"x"})}}, Json{{"kind", nullptr}},
        Json{{"other", "x"}}, Json::array({"kind"}), Json("kind")})
    EXPECT_EQ(KindOf(doc), "") << doc.dump();
}

}  // namespace
}  // namespace kvc
