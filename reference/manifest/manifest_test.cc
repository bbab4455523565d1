// validate_manifest: the seed's worked snapshot, digest derivations and gating rules.
// (The eighteen+ one-field negative cases are data under invalid_fixtures/m5_1/manifest.)
#include "reference/manifest/manifest.h"

#include <gtest/gtest.h>

#include "reference/base/canonical_json.h"
#include "reference/testutil/testutil.h"

namespace kvc {
namespace {

const char* kFixture = "fixtures/m5_1/manifest/request_cache_manifest.json";

TEST(Manifest, WorkedSnapshotIsValidWithTheSeedLedger) {
  Json m = test::LoadJson(kFixture);
  Violations v = ValidateManifest(m);
  EXPECT_TRUE(v.empty()) << test::Describe(v);
  EXPECT_EQ(m["analytical_ledger"]["bytes_per_token"], 64);
  EXPECT_EQ(m["analytical_ledger"]["committed_logical_bytes"], 256);
  EXPECT_EQ(m["analytical_ledger"]["reserved_nominal_bytes"], 512);
  EXPECT_EQ(m["input_identity"]["prompt_token_ids_sha256"],
            "683127e375b8e34a047aabc88d39e6a2d41051d7fa21b304a769ace7cef5b727");
}

TEST(Manifest, CacheAbiDigestIsTheDigestOfTheCanonicalProjection) {
  Json m = test::LoadJson(kFixture);
  auto canon = CanonicalJson(Json{{"artifact_identity", m["artifact_identity"]},
                                  {"cache_schema", m["cache_schema"]},
                                  {"position_contract", m["position_contract"]}});
  ASSERT_TRUE(canon.ok());
  // The projection's canonical text starts with the artifact identity (sorted members).
  EXPECT_EQ(canon->rfind("{\"artifact_identity\":{\"adapter_set\":[{\"adapter_id\":", 0), 0u);
  EXPECT_EQ(m["digests"]["cache_abi_sha256"], Sha256Hex(*canon));
}

TEST(Manifest, RequestIdIsNotPartOfThePrefixIdentity) {
  Json m = test::LoadJson(kFixture);
  m["request_identity"]["request_id"] = "req-9999";
  m["request_identity"]["attempt"] = 3;
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
}

TEST(Manifest, AdapterAndSideInputIdentityAreInThePrefixIdentity) {
  Json base = test::LoadJson(kFixture);
  Json m = base;
  m["artifact_identity"]["adapter_set"][0]["sha256"] = Sha256Hex("another adapter");
  ASSERT_TRUE(SealManifest(m).ok());
  EXPECT_NE(m["digests"]["cache_abi_sha256"], base["digests"]["cache_abi_sha256"]);
  EXPECT_NE(m["digests"]["prefix_identity_sha256"], base["digests"]["prefix_identity_sha256"]);
  Json s = base;
  s["input_identity"]["input_side_data_sha256"] = Sha256Hex("an image");
  ASSERT_TRUE(SealManifest(s).ok());
  EXPECT_EQ(s["digests"]["cache_abi_sha256"], base["digests"]["cache_abi_sha256"]);
  EXPECT_NE(s["digests"]["prefix_identity_sha256"], base["digests"]["prefix_identity_sha256"]);
}

TEST(Manifest, ResealingTheFixtureIsAFixedPoint) {
  Json m = test::LoadJson(kFixture);
  Json sealed = m;
  ASSERT_TRUE(SealManifest(sealed).ok());
  EXPECT_EQ(sealed, m) << "fixture is stale: run kvconform manifest seal --in-place " << kFixture;
}

TEST(Manifest, SchemaErrorsStopValidationWithInputCodes) {
  Json m = test::LoadJson(kFixture);
  m["cache_schema"].erase("head_dim");
  m["state_snapshot"]["generation"] = -1;
  m["request_policy"]["priority"] = 7;  // a policy field the schema does not define
  EXPECT_EQ(test::CodeNames(ValidateManifest(m)),
            (std::vector<std::string>{"INPUT_FIELD_MISSING", "INPUT_FIELD_UNKNOWN",
                                      "INPUT_VALUE_OUT_OF_RANGE"}))
      << test::Describe(ValidateManifest(m));
}

TEST(Manifest, ViolationsComeInDeterministicCheckOrder) {
  Json m = test::LoadJson(kFixture);
  m["input_identity"]["prompt_token_count"] = 9;
  m["state_snapshot"]["reclaimable_bytes"]["gpu"] = 1000;
  m["artifact_identity"]["model_config_sha256"] = "zz";
  auto v = ValidateManifest(m);
  EXPECT_EQ(test::CodeNames(v),
            (std::vector<std::string>{"MANIFEST_DIGEST_MALFORMED", "MANIFEST_PROMPT_COUNT_MISMATCH",
                                      "MANIFEST_RECLAIMABLE_EXCEEDS_RESIDENT"}))
      << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/artifact_identity/model_config_sha256");
}

// The states the phase rule admits: the allocation's snapshot as NEW, and a release that
// commits no rows (MANIFEST_PHASE_STATE_MISMATCH's negatives are the two invalid fixtures).
TEST(Manifest, PhaseNewAndReleasedConformInTheirOwnStates) {
  Json m = test::LoadJson(kFixture);
  Json& ss = m["state_snapshot"];
  ss["phase"] = "NEW";
  ss["generation"] = 0;
  ss["committed_cache_length"] = 0;
  ss["logical_token_count"] = m["input_identity"]["prompt_token_count"];
  ss["next_cache_position"] = 0;
  ss["visible_positions"] = {{"start", 0}, {"end", 0}};
  ASSERT_TRUE(SealManifest(m).ok());
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
  ss["phase"] = "RELEASED";
  ss["generation"] = 3;
  ASSERT_TRUE(SealManifest(m).ok());
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
  // NEW after a publication (generation 1) with no rows is still not the allocation's snapshot.
  ss["phase"] = "NEW";
  ss["generation"] = 1;
  ASSERT_TRUE(SealManifest(m).ok());
  EXPECT_EQ(test::CodeNames(ValidateManifest(m)),
            std::vector<std::string>{"MANIFEST_PHASE_STATE_MISMATCH"});
}

TEST(Manifest, HugeDeclaredSizesDoNotOverflow) {
  Json m = test::LoadJson(kFixture);
  m["cache_schema"]["head_dim"] = uint64_t{1} << 53;
  m["cache_schema"]["num_cache_layers"] = uint64_t{1} << 53;
  // 2^53 * 2^53 * ... overflows: reported as a violation, not wrapped or crashed.
  auto v = ValidateManifest(m);
  auto names = test::CodeNames(v);
  EXPECT_NE(std::find(names.begin(), names.end(), "INPUT_ARITHMETIC_OVERFLOW"), names.end())
      << test::Describe(v);
}

}  // namespace
}  // namespace kvc
