// validate_manifest: the seed's worked snapshot, digest derivations and gating rules.
// (The eighteen+ one-field negative cases are data under invalid_fixtures/m5_1/manifest.)
#include "reference/manifest/manifest.h"

#include <gtest/gtest.h>

#include <functional>

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
  // (The ABI digest of the new geometry: a stale one gates the ledger, since probe 94.)
  auto abi = CacheAbiSha256(m["artifact_identity"], m["cache_schema"], m["position_contract"]);
  ASSERT_TRUE(abi.ok());
  m["digests"]["cache_abi_sha256"] = *abi;
  // 2^53 * 2^53 * ... overflows: reported as a violation, not wrapped or crashed.
  auto v = ValidateManifest(m);
  auto names = test::CodeNames(v);
  EXPECT_NE(std::find(names.begin(), names.end(), "INPUT_ARITHMETIC_OVERFLOW"), names.end())
      << test::Describe(v);
}

// The worked fixture after `edit`, with every derived field (digests, prompt count, ledger)
// recomputed: a document whose only fault is the rule `edit` breaks.
Json Resealed(const std::function<void(Json&)>& edit) {
  Json m = test::LoadJson(kFixture);
  edit(m);
  Status s = SealManifest(m);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return m;
}

// Expects exactly one violation, of `code` at `pointer`.
void ExpectOnly(const Json& m, const std::string& code, const std::string& pointer) {
  EXPECT_TRUE(test::OnlyViolationAt(ValidateManifest(m), code, pointer));
}

// Schema (check 1): each member's type and range is its own INPUT_* violation at that member.
TEST(Manifest, SchemaTypesAndRangesRaiseTheirInputCode) {
  const struct {
    const char* pointer;
    Json value;
    const char* code;
  } kCases[] = {
      {"/request_identity/parent_request_id", 7, "INPUT_FIELD_TYPE"},
      {"/artifact_identity/max_position_embeddings", 0, "INPUT_VALUE_OUT_OF_RANGE"},
      {"/input_identity/prompt_token_ids/0", uint64_t{1} << 32, "INPUT_VALUE_OUT_OF_RANGE"},
      {"/cache_schema/key_dtype/bytes_per_scalar", 65, "INPUT_VALUE_OUT_OF_RANGE"},
      {"/cache_schema/logical_axes/0", 1, "INPUT_FIELD_TYPE"},
      {"/cache_schema/parallel_shard/tp_size", 0, "INPUT_VALUE_OUT_OF_RANGE"},
      {"/position_contract/rope/scaling", 3, "INPUT_FIELD_TYPE"},
      {"/request_policy/max_context_tokens", 0, "INPUT_VALUE_OUT_OF_RANGE"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.pointer);
    Json m = test::LoadJson(kFixture);
    m[Json::json_pointer(c.pointer)] = c.value;
    ExpectOnly(m, c.code, c.pointer);
  }
}

// Identity well-formedness (check 2): every declared digest, the adapter and tokenizer ones
// included, is a SHA-256, and a malformed input digest gates the digest derived from it.
TEST(Manifest, EveryDeclaredDigestIsFormatCheckedAndGatesItsDerivedDigest) {
  for (const char* pointer :
       {"/artifact_identity/adapter_set/0/sha256", "/input_identity/tokenizer_sha256",
        "/input_identity/chat_template_sha256", "/input_identity/input_side_data_sha256"}) {
    SCOPED_TRACE(pointer);
    Json m = test::LoadJson(kFixture);
    m[Json::json_pointer(pointer)] = "zz";
    ExpectOnly(m, "MANIFEST_DIGEST_MALFORMED", pointer);
  }
}

// Zero extents (check 2): a zero head count is MANIFEST_SCHEMA_ZERO_EXTENT alone, not the
// shard or head-geometry rules it would also break.
TEST(Manifest, ZeroHeadCountsAreZeroExtents) {
  for (const char* key : {"num_query_heads", "kv_heads_per_rank"}) {
    Json m = test::LoadJson(kFixture);
    m["cache_schema"][key] = 0;
    ExpectOnly(m, "MANIFEST_SCHEMA_ZERO_EXTENT", std::string("/cache_schema/") + key);
  }
}

// Dtype widths (check 2): an unknown dtype name, and a value dtype whose width contradicts its
// name, are MANIFEST_DTYPE_WIDTH_INVALID.
TEST(Manifest, DtypeNamesAreKnownAndValueWidthsMatchThem) {
  Json m = test::LoadJson(kFixture);
  m["cache_schema"]["key_dtype"]["name"] = "float7";
  ExpectOnly(m, "MANIFEST_DTYPE_WIDTH_INVALID", "/cache_schema/key_dtype/name");
  m = test::LoadJson(kFixture);
  m["cache_schema"]["value_dtype"]["bytes_per_scalar"] = 4;  // float16 is 2 bytes
  ExpectOnly(m, "MANIFEST_DTYPE_WIDTH_INVALID", "/cache_schema/value_dtype/bytes_per_scalar");
}

// Probe 98: seal refused a zero extent or a zero width as INPUT_ARITHMETIC_OVERFLOW (from the
// B_token product) where validate reports MANIFEST_SCHEMA_ZERO_EXTENT or
// MANIFEST_DTYPE_WIDTH_INVALID at the member; seal now says what validate says.
TEST(Manifest, RegressionSealRefusesAZeroExtentOrWidthWithValidatesCode) {
  struct Case {
    const char* pointer;
    const char* code;
  };
  for (const Case& c :
       {Case{"/cache_schema/head_dim", "MANIFEST_SCHEMA_ZERO_EXTENT"},
        Case{"/cache_schema/value_dtype/bytes_per_scalar", "MANIFEST_DTYPE_WIDTH_INVALID"}}) {
    SCOPED_TRACE(c.pointer);
    Json m = test::LoadJson(kFixture);
    m[Json::json_pointer(c.pointer)] = 0;
    ASSERT_FALSE(ValidateManifest(m).empty());
    EXPECT_EQ(ErrorCodeName(ValidateManifest(m).front().code), std::string(c.code));
    const Status sealed = SealManifest(m);
    EXPECT_EQ(ErrorCodeName(sealed.error()), std::string(c.code)) << sealed.ToString();
    EXPECT_NE(sealed.ToString().find(c.pointer), std::string::npos) << sealed.ToString();
  }
}

// Shard partition (check 2): tp_rank < tp_size and kv_head_offset == tp_rank * kv_heads_per_rank.
TEST(Manifest, ShardRankIsBelowSizeAndOffsetIsRankTimesLocalHeads) {
  Json m = test::LoadJson(kFixture);
  m["cache_schema"]["parallel_shard"] = {{"tp_rank", 1}, {"tp_size", 1}, {"kv_head_offset", 2}};
  ExpectOnly(m, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
  m = test::LoadJson(kFixture);
  m["cache_schema"]["parallel_shard"]["kv_head_offset"] = 1;
  ExpectOnly(m, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
}

// Probe 91: tensor parallelism wider than the K/V heads (8 K/V heads at TP 16, each rank one
// head, each head on two ranks) had no encoding: kv_heads_per_rank * tp_size had to equal the
// head count, so the copies could only be smuggled into H_kv,local (M5.1 0x02). A declared
// kv_head_replication is that second multiplicity; B_token stays the local shard's.
TEST(Manifest, RegressionReplicatedKvHeadsAreDeclaredNotFoldedIntoLocalHeads) {
  const Json base = test::LoadJson(kFixture);
  const uint64_t total = base["cache_schema"]["num_kv_heads_total"].get<uint64_t>();
  ASSERT_EQ(base["cache_schema"]["kv_heads_per_rank"].get<uint64_t>(), total);
  for (uint64_t rank : {uint64_t{0}, uint64_t{1}, 2 * total - 1}) {
    SCOPED_TRACE(rank);
    Json m = Resealed([&](Json& j) {
      j["cache_schema"]["kv_heads_per_rank"] = 1;
      j["cache_schema"]["parallel_shard"] = {{"tp_rank", rank},
                                             {"tp_size", 2 * total},
                                             {"kv_head_offset", rank / 2},
                                             {"kv_head_replication", 2}};
    });
    EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
    // Without the declaration the same layout is a shard mismatch, and so is each one-field
    // change of it.
    Json undeclared = m;
    undeclared["cache_schema"]["parallel_shard"].erase("kv_head_replication");
    ExpectOnly(undeclared, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
    Json offset = m;
    offset["cache_schema"]["parallel_shard"]["kv_head_offset"] = rank / 2 + 1;
    ExpectOnly(offset, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
    Json copies = m;
    copies["cache_schema"]["parallel_shard"]["kv_head_replication"] = 3;
    ExpectOnly(copies, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
  }
  // Replicated heads are one per rank: two local heads copied twice is not a layout.
  Json two = Resealed([&](Json& j) {
    j["cache_schema"]["kv_heads_per_rank"] = 2;
    j["cache_schema"]["parallel_shard"] = {
        {"tp_rank", 0}, {"tp_size", total}, {"kv_head_offset", 0}, {"kv_head_replication", 2}};
  });
  ExpectOnly(two, "MANIFEST_SHARD_MISMATCH", "/cache_schema/kv_heads_per_rank");
  // A replication of 0 is a range error, read before any rule.
  Json zero = base;
  zero["cache_schema"]["parallel_shard"]["kv_head_replication"] = 0;
  ExpectOnly(zero, "INPUT_VALUE_OUT_OF_RANGE", "/cache_schema/parallel_shard/kv_head_replication");
}

// Probe 94: one contract, one digest. The same two adapters listed in the other order gave
// another ABI digest, and a repeated adapter passed: the active adapters are a set, listed in
// ascending adapter_id order, each once. An explicit kv_head_replication of 1 gave another digest
// than its absence: 1 is written by leaving it out.
TEST(Manifest, RegressionOneContractHasOneEncoding) {
  const Json base = test::LoadJson(kFixture);
  const Json adapter = base["artifact_identity"]["adapter_set"][0];
  Json second = adapter;
  second["adapter_id"] = adapter["adapter_id"].get<std::string>() + "-b";
  Json sorted = Resealed([&](Json& j) {
    j["artifact_identity"]["adapter_set"] = Json::array({adapter, second});
  });
  EXPECT_TRUE(ValidateManifest(sorted).empty()) << test::Describe(ValidateManifest(sorted));
  Json swapped = sorted;
  swapped["artifact_identity"]["adapter_set"] = Json::array({second, adapter});
  ExpectOnly(swapped, "INPUT_VALUE_INVALID", "/artifact_identity/adapter_set/1/adapter_id");
  Json repeated = sorted;
  repeated["artifact_identity"]["adapter_set"][1] = adapter;
  ExpectOnly(repeated, "INPUT_VALUE_INVALID", "/artifact_identity/adapter_set/1/adapter_id");
  // Each adapter follows the one before it, not only the first (mutation audit 4): "-c" then "-b"
  // is out of order though both follow the first.
  Json third = adapter;
  third["adapter_id"] = adapter["adapter_id"].get<std::string>() + "-c";
  Json unsorted_tail = sorted;
  unsorted_tail["artifact_identity"]["adapter_set"] = Json::array({adapter, third, second});
  ExpectOnly(unsorted_tail, "INPUT_VALUE_INVALID", "/artifact_identity/adapter_set/2/adapter_id");
  Json explicit_one = base;
  explicit_one["cache_schema"]["parallel_shard"]["kv_head_replication"] = 1;
  ExpectOnly(explicit_one, "INPUT_VALUE_OUT_OF_RANGE",
             "/cache_schema/parallel_shard/kv_head_replication");
}

// Probe 94: a rope theta of 2^53 + 1 (an integer the ABI digest cannot canonicalize) was
// reported at /digests/cache_abi_sha256, and seal failed naming nothing; it is out of range where
// it is, and seal says so with the code.
TEST(Manifest, RegressionAHashedIntegerBeyondIJsonIsReportedWhereItIs) {
  for (const char* pointer : {"/position_contract/rope/theta", "/position_contract/rope/scaling"}) {
    SCOPED_TRACE(pointer);
    Json m = test::LoadJson(kFixture);
    const Json big = (uint64_t{1} << 53) + 1;
    const std::string at =
        std::string(pointer) + (std::string(pointer).ends_with("scaling") ? "/factor" : "");
    if (at != pointer)
      m[Json::json_pointer(pointer)] = {{"factor", big}};
    else
      m[Json::json_pointer(pointer)] = big;
    ExpectOnly(m, "INPUT_VALUE_OUT_OF_RANGE", at);
    const Status sealed = SealManifest(m);
    EXPECT_EQ(sealed.error(), ErrorCode::INPUT_VALUE_OUT_OF_RANGE) << sealed.ToString();
    EXPECT_NE(sealed.ToString().find(at), std::string::npos) << sealed.ToString();
  }
}

// Probe 94: a rope theta of 0 or below validated (RoPE's frequencies theta^(-2i/d_h) are
// undefined there); any positive base, fractional included, is a RoPE base.
TEST(Manifest, RegressionARopeThetaAtOrBelowZeroIsOutOfRange) {
  for (double theta : {0.0, -10000.0}) {
    SCOPED_TRACE(theta);
    Json m = test::LoadJson(kFixture);
    m["position_contract"]["rope"]["theta"] = theta;
    ExpectOnly(m, "INPUT_VALUE_OUT_OF_RANGE", "/position_contract/rope/theta");
  }
  Json m = Resealed([](Json& j) { j["position_contract"]["rope"]["theta"] = 0.5; });
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
  // `type: none` rotates nothing: its theta is not a base, and 0 is what one writes there
  // (review R4).
  Json none = Resealed([](Json& j) {
    j["position_contract"]["rope"]["type"] = "none";
    j["position_contract"]["rope"]["theta"] = 0;
  });
  EXPECT_TRUE(ValidateManifest(none).empty()) << test::Describe(ValidateManifest(none));
}

// Probe 94: seal wrote an analytical ledger beyond 2^53 (num_cache_layers 2^53: B_token 2^58)
// that validate refused; declared byte quantities are read up to 2^64 - 1.
TEST(Manifest, RegressionASealedLedgerBeyond2To53Validates) {
  Json m = Resealed([](Json& j) { j["cache_schema"]["num_cache_layers"] = uint64_t{1} << 53; });
  ASSERT_GT(m["analytical_ledger"]["bytes_per_token"].get<uint64_t>(), uint64_t{1} << 53);
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
}

// Mutation audit 4: the declared byte totals are read up to 2^64 - 1 inclusive; one of 2^64 - 1
// is then a figure like any other, judged against T * B_token (drift here), not a range error.
TEST(Manifest, RegressionADeclaredByteTotalOf2To64Minus1IsReadAndJudged) {
  for (const char* field : {"committed_logical_bytes", "reserved_nominal_bytes"}) {
    SCOPED_TRACE(field);
    Json m = test::LoadJson(kFixture);
    m["analytical_ledger"][field] = UINT64_MAX;
    ExpectOnly(m, "MANIFEST_LEDGER_DRIFT", std::string("/analytical_ledger/") + field);
  }
}

// Mutation audit 4: the position origin is re-derived from the positions only under a stale ABI
// digest (below). Under a fresh one the declared origin is the contract the digest covers, and
// positions measured from another origin are judged against it.
TEST(Manifest, RegressionPositionsFromAnotherOriginUnderAFreshAbiDigestAreJudged) {
  const Json m = Resealed([](Json& j) { j["position_contract"]["position_origin"] = 1; });
  ASSERT_EQ(m["state_snapshot"]["next_cache_position"],
            m["state_snapshot"]["committed_cache_length"]);  // origin 0's positions
  EXPECT_EQ(
      test::CodeNames(ValidateManifest(m)),
      (std::vector<std::string>{"MANIFEST_POSITION_GAP", "MANIFEST_VISIBILITY_BEYOND_COMMIT"}))
      << test::Describe(ValidateManifest(m));
}

// Probe 94: a stale ABI digest is the root cause of what the ABI sizes and places: a one-field
// change of num_cache_layers or head_dim also raised three MANIFEST_LEDGER_DRIFT, one of
// position_origin a position gap and a visibility code.
TEST(Manifest, RegressionAStaleAbiDigestGatesTheLedgerAndThePositions) {
  const std::function<void(Json&)> kEdits[] = {
      [](Json& m) { m["cache_schema"]["num_cache_layers"] = 3; },
      [](Json& m) { m["cache_schema"]["head_dim"] = 8; },
      [](Json& m) { m["position_contract"]["position_origin"] = 1; },
  };
  for (size_t i = 0; i < std::size(kEdits); ++i) {
    SCOPED_TRACE(i);
    Json m = test::LoadJson(kFixture);
    kEdits[i](m);
    ExpectOnly(m, "MANIFEST_ABI_DIGEST_MISMATCH", "/digests/cache_abi_sha256");
  }
  // Probe 95: and only that. Beside a stale digest (an adapter's digest changed, which sizes and
  // places nothing), a fault of its own is still reported: visible positions backwards, a next
  // position off the committed length, a committed byte total off the declared B_token.
  const struct {
    std::function<void(Json&)> edit;
    const char* code;
    const char* pointer;
  } kFaults[] = {
      {[](Json& m) {
         m["state_snapshot"]["visible_positions"] = {{"start", 3}, {"end", 2}};
       },
       "MANIFEST_VISIBILITY_BEYOND_COMMIT", "/state_snapshot/visible_positions"},
      {[](Json& m) { m["state_snapshot"]["next_cache_position"] = 7; }, "MANIFEST_POSITION_GAP",
       "/state_snapshot/next_cache_position"},
      {[](Json& m) { m["analytical_ledger"]["committed_logical_bytes"] = 255; },
       "MANIFEST_LEDGER_DRIFT", "/analytical_ledger/committed_logical_bytes"},
  };
  for (const auto& f : kFaults) {
    SCOPED_TRACE(f.code);
    // (The ledger is written by seal: its fault comes after it.)
    const bool ledger = std::string(f.code) == "MANIFEST_LEDGER_DRIFT";
    Json m = Resealed(ledger ? [](Json&) {} : f.edit);
    if (ledger) f.edit(m);
    m["artifact_identity"]["adapter_set"][0]["sha256"] = std::string(64, 'e');
    const Violations v = ValidateManifest(m);
    auto names = test::CodeNames(v);
    std::sort(names.begin(), names.end());
    std::vector<std::string> want = {"MANIFEST_ABI_DIGEST_MISMATCH", f.code};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(names, want) << test::Describe(v);
  }
}

// Mutation audit 4: under a stale ABI digest the origin is re-derived only from positions that all
// agree with it; visible positions backwards agree with no origin, so the declared (moved) origin
// stands and the next position off it is a gap too.
TEST(Manifest, RegressionBackwardsVisiblePositionsDoNotReDeriveTheOrigin) {
  Json m = test::LoadJson(kFixture);
  m["position_contract"]["position_origin"] = 1;  // stale: the digest covers origin 0
  m["state_snapshot"]["visible_positions"] = {{"start", 3}, {"end", 2}};
  EXPECT_EQ(test::CodeNames(ValidateManifest(m)),
            (std::vector<std::string>{"MANIFEST_ABI_DIGEST_MISMATCH", "MANIFEST_POSITION_GAP",
                                      "MANIFEST_VISIBILITY_BEYOND_COMMIT"}))
      << test::Describe(ValidateManifest(m));
  // The visibility message says which way the interval fails.
  const Violations v = ValidateManifest(m);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[2].message.find("(start after end)"), std::string::npos) << v[2].message;
}

// Prompt count (check 3): a count below the ids is a mismatch too, not only one above them.
TEST(Manifest, PromptCountBelowTheIdsIsAMismatch) {
  Json m = test::LoadJson(kFixture);
  m["input_identity"]["prompt_token_count"] = 3;
  ExpectOnly(m, "MANIFEST_PROMPT_COUNT_MISMATCH", "/input_identity/prompt_token_count");
}

// Semantic state (check 4), the bounds themselves conform: committed == logical,
// logical == prompt + max_new_tokens, reserved == committed, max_context ==
// max_position_embeddings, reclaimable == resident.
TEST(Manifest, StateBoundsAreInclusive) {
  const std::function<void(Json&)> kEdits[] = {
      [](Json& m) { m["state_snapshot"]["logical_token_count"] = 4; },
      [](Json& m) { m["state_snapshot"]["logical_token_count"] = 12; },
      [](Json& m) { m["state_snapshot"]["reserved_token_capacity"] = 4; },
      [](Json& m) { m["request_policy"]["max_context_tokens"] = 2048; },
      [](Json& m) { m["state_snapshot"]["reclaimable_bytes"]["gpu"] = 256; },
  };
  for (size_t i = 0; i < std::size(kEdits); ++i) {
    Json m = Resealed(kEdits[i]);
    EXPECT_TRUE(ValidateManifest(m).empty())
        << "edit " << i << ": " << test::Describe(ValidateManifest(m));
  }
}

// Logical count (check 4): logical <= max_context_tokens even while max_new_tokens allows more.
TEST(Manifest, LogicalCountIsBoundedByTheContextLimit) {
  Json m = Resealed([](Json& m) {
    m["request_policy"]["max_context_tokens"] = 10;
    m["state_snapshot"]["logical_token_count"] = 11;  // prompt 4 + 7 outputs <= 4 + 8
  });
  ExpectOnly(m, "MANIFEST_LOGICAL_COUNT_INVALID", "/state_snapshot/logical_token_count");
}

// Phase NEW (check 4): its logical sequence is the prompt; an inconsistent logical count is
// judged by its own rule alone (one root cause, one code).
TEST(Manifest, PhaseNewHoldsExactlyThePromptAndDefersToTheLogicalRule) {
  auto fresh = [](uint64_t logical) {
    return Resealed([logical](Json& m) {
      Json& ss = m["state_snapshot"];
      ss["phase"] = "NEW";
      ss["generation"] = 0;
      ss["committed_cache_length"] = 0;
      ss["next_cache_position"] = 0;
      ss["visible_positions"] = {{"start", 0}, {"end", 0}};
      ss["logical_token_count"] = logical;
    });
  };
  ExpectOnly(fresh(5), "MANIFEST_PHASE_STATE_MISMATCH", "/state_snapshot/phase");
  ExpectOnly(fresh(3), "MANIFEST_LOGICAL_COUNT_INVALID", "/state_snapshot/logical_token_count");
}

// Positions (check 4): next_cache_position = position_origin + committed, and the visible
// interval lies in [origin, origin + committed) with start <= end.
TEST(Manifest, PositionsAreMeasuredFromTheOrigin) {
  auto at_origin_2 = [](uint64_t start, uint64_t end) {
    return Resealed([start, end](Json& m) {
      m["position_contract"]["position_origin"] = 2;
      m["state_snapshot"]["next_cache_position"] = 6;
      m["state_snapshot"]["visible_positions"] = {{"start", start}, {"end", end}};
    });
  };
  Json ok = at_origin_2(2, 6);
  EXPECT_TRUE(ValidateManifest(ok).empty()) << test::Describe(ValidateManifest(ok));
  ExpectOnly(at_origin_2(1, 5), "MANIFEST_VISIBILITY_BEYOND_COMMIT",
             "/state_snapshot/visible_positions");
  ExpectOnly(at_origin_2(4, 3), "MANIFEST_VISIBILITY_BEYOND_COMMIT",
             "/state_snapshot/visible_positions");
}

// Request limits (check 4): max_context_tokens holds the committed state.
TEST(Manifest, ContextLimitHoldsTheCommittedState) {
  Json m = Resealed([](Json& m) {
    Json& ss = m["state_snapshot"];
    ss["committed_cache_length"] = 6;
    ss["logical_token_count"] = 6;
    ss["next_cache_position"] = 6;
    ss["visible_positions"]["end"] = 6;
    m["request_policy"]["max_context_tokens"] = 5;  // holds the prompt (4), not the 6 rows
  });
  ExpectOnly(m, "MANIFEST_LIMITS_IMPOSSIBLE", "/request_policy/max_context_tokens");
}

// Sealing recomputes prompt_token_count from the ids.
TEST(Manifest, SealRecomputesThePromptCount) {
  Json m = Resealed([](Json& m) { m["input_identity"]["prompt_token_ids"].push_back(55); });
  EXPECT_EQ(m["input_identity"]["prompt_token_count"], 5);
  EXPECT_TRUE(ValidateManifest(m).empty()) << test::Describe(ValidateManifest(m));
}

// Sealing refuses a ledger whose products overflow 64 bits with INPUT_ARITHMETIC_OVERFLOW,
// naming the member (B_token itself, or T_reserved * B_token).
TEST(Manifest, SealRefusesLedgerOverflowWithItsCode) {
  Json m = test::LoadJson(kFixture);
  m["cache_schema"]["head_dim"] = uint64_t{1} << 53;
  m["cache_schema"]["num_cache_layers"] = uint64_t{1} << 53;
  Status s = SealManifest(m);
  EXPECT_EQ(s.error(), ErrorCode::INPUT_ARITHMETIC_OVERFLOW) << s.ToString();
  m = test::LoadJson(kFixture);
  m["cache_schema"]["head_dim"] = uint64_t{1} << 40;  // B_token = 2^44: 4 rows fit
  m["state_snapshot"]["reserved_token_capacity"] = uint64_t{1} << 21;
  s = SealManifest(m);
  EXPECT_EQ(s.error(), ErrorCode::INPUT_ARITHMETIC_OVERFLOW) << s.ToString();
  EXPECT_NE(s.message().find("reserved_token_capacity"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kvc
