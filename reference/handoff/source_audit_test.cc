// Tests of the runtime release's source audit: pins, audited paths and claim/evidence labels.
#include "reference/handoff/source_audit.h"

#include <gtest/gtest.h>

#include "reference/handoff/runtime_release.h"
#include "reference/testutil/testutil.h"

namespace kvc::handoff {
namespace {

constexpr const char* kRelease = "fixtures/m5_6/runtime/runtime_release.json";

SourceAudit Read(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  SourceAudit a = ReadSourceAudit(top, &v);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  return a;
}

// The seed's 0x0FH shape: four immutable pins, seventeen audited paths, eleven claims.
TEST(SourceAudit, ReleaseFixtureHasTheSeedsShapeAndReconciles) {
  Json doc = test::LoadJson(kRelease);
  SourceAudit a = Read(doc);
  EXPECT_EQ(a.pins.size(), 4u);
  EXPECT_EQ(a.paths.size(), 17u);
  EXPECT_EQ(a.claims.size(), 11u);
  EXPECT_TRUE(CheckSourceAudit(a).empty()) << test::Describe(CheckSourceAudit(a));
  EXPECT_TRUE(ValidateRuntimeRelease(doc).empty());
}

TEST(SourceAudit, CitedPathMustBeAuditedAtThatPin) {
  SourceAudit a = Read(test::LoadJson(kRelease));
  a.claims[5].evidence[0].path = "examples/disagg_prefill/1p1d/disagg_proxy_server.py";
  EXPECT_EQ(test::CodeNames(CheckSourceAudit(a)),
            std::vector<std::string>{"HANDOFF_CLAIM_PATH_UNAUDITED"});
}

TEST(SourceAudit, PathFormsAndPinImmutability) {
  SourceAudit base = Read(test::LoadJson(kRelease));
  for (const char* p : {"", "/abs.py", "a//b.py", "a/./b.py", "a/../b.py", "dir/", "a\\b.py"}) {
    SourceAudit a = base;
    a.paths.push_back({"nixl", p, std::string(40, 'a')});
    EXPECT_EQ(test::CodeNames(CheckSourceAudit(a)),
              std::vector<std::string>{"HANDOFF_AUDITED_PATH_INVALID"})
        << p;
  }
  SourceAudit a = base;
  a.pins[0].commit = std::string(40, 'A');  // uppercase is not the canonical form
  EXPECT_EQ(test::CodeNames(CheckSourceAudit(a)),
            std::vector<std::string>{"HANDOFF_SOURCE_PIN_INVALID"});
  a = base;
  a.pins[0].observed = "2026-13-03";
  EXPECT_EQ(test::CodeNames(CheckSourceAudit(a)),
            std::vector<std::string>{"HANDOFF_SOURCE_PIN_INVALID"});
}

TEST(SourceAudit, EveryLabelNeedsItsEvidenceKind) {
  SourceAudit base = Read(test::LoadJson(kRelease));
  for (const char* label : kEvidenceLabels) {
    SourceAudit a = base;
    // Claim C08 cites a publication: only source_reported accepts it.
    a.claims[7].label = label;
    bool ok = std::string(label) == "source_reported";
    EXPECT_EQ(CheckSourceAudit(a).empty(), ok) << label;
  }
}

}  // namespace
}  // namespace kvc::handoff
