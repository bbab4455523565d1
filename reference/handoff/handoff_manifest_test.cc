// The handoff manifest's model and transfer namespaces (M5.6 0x01A): what the model identity
// digest seals, and how the expected chunk manifest must cover X = U \ V_D.
#include "reference/handoff/handoff_manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "reference/base/canonical_json.h"
#include "reference/testutil/testutil.h"

namespace kvc::handoff {
namespace {

constexpr uint64_t kBytesPerBlock = 1024;  // B_block * L * 2 * H_kv * d_h * b of the fixture
constexpr uint64_t kRowBytes = 64;         // 2 * H_kv * d_h * b

Json Fixture() { return test::LoadJson("fixtures/m5_6/handoff/handoff_manifest.json"); }

void Reseal(Json* m) { (*m)["model_identity_sha256"] = *CanonicalSha256((*m)["model_identity"]); }

// Makes `visible` the decode destination's V_D and rewrites everything X decides (the transfer
// set, the logical ledger, the physical ledger's payload and total); leaves the chunks alone.
void SetVisible(Json* m, const std::vector<std::string>& visible) {
  Json& b = (*m)["blocks"];
  b["visible_at_decode"] = visible;
  Json x = Json::array();
  for (const auto& u : b["universe"])
    if (std::find(visible.begin(), visible.end(), u.get<std::string>()) == visible.end())
      x.push_back(u);
  b["transfer_set"] = x;
  const uint64_t bytes = x.size() * kBytesPerBlock;
  (*m)["logical_ledger"]["transfer_blocks"] = x.size();
  (*m)["logical_ledger"]["transfer_logical_bytes"] = bytes;
  Json& p = (*m)["physical_ledger"];
  const uint64_t others =
      p["total_bytes"].get<uint64_t>() - p["logical_payload_bytes"].get<uint64_t>();
  p["logical_payload_bytes"] = bytes;
  p["total_bytes"] = others + bytes;
}

// The one finding `m` raises is `code` at `pointer`.
testing::AssertionResult OneFinding(const Json& m, ErrorCode code, const std::string& pointer) {
  const Violations v = ValidateHandoffManifest(m);
  if (v.size() == 1 && v[0].code == code && v[0].pointer == pointer)
    return testing::AssertionSuccess();
  return testing::AssertionFailure() << "expected only " << ErrorCodeName(code) << " at " << pointer
                                     << ", got " << test::Describe(v);
}

Json Chunk(const std::string& id, uint64_t layer, uint64_t start, uint64_t count) {
  return Json{{"chunk_id", id},
              {"layer", layer},
              {"token_start", start},
              {"token_count", count},
              {"bytes", count * kRowBytes},
              {"checksum", std::string(64, 'a')}};
}

TEST(HandoffManifest, TheBundledManifestPasses) {
  const Json m = Fixture();
  EXPECT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
}

// Every member of the model namespace is under its digest: changing any one without resealing
// is the digest's code, and resealing makes the same change acceptable.
TEST(HandoffManifest, TheModelDigestSealsCheckpointTokenizerAdaptersPositionAndMask) {
  const std::string other(64, 'e');
  const std::vector<std::pair<std::string, Json>> changes = {
      {"/artifact_identity/model_artifact_sha256", other},
      {"/artifact_identity/model_config_sha256", other},
      {"/artifact_identity/max_position_embeddings", 8192},
      {"/artifact_identity/adapter_set/0/adapter_id", "lora-support-v2"},
      {"/artifact_identity/adapter_set/0/sha256", other},
      {"/artifact_identity/weight_transforms",
       Json::array({Json{{"name", "awq"}, {"sha256", other}}})},
      {"/tokenizer_sha256", other},
      {"/position_contract/position_origin", 1},
      {"/position_contract/rope/type", "llama3"},
      {"/position_contract/rope/theta", 500000},
      {"/position_stage", "pre_rope"},
  };
  for (const auto& [ptr, value] : changes) {
    Json m = Fixture();
    m["model_identity"][Json::json_pointer(ptr)] = value;
    EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
              std::vector<std::string>{"HANDOFF_MODEL_IDENTITY_DIGEST_MISMATCH"})
        << ptr;
    Reseal(&m);
    EXPECT_TRUE(ValidateHandoffManifest(m).empty())
        << ptr << ": " << test::Describe(ValidateHandoffManifest(m));
  }
}

TEST(HandoffManifest, AMalformedModelDigestIsItsOwnCodeOnly) {
  Json m = Fixture();
  m["model_identity_sha256"] = "c0ffee";
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_DIGEST_MALFORMED, "/model_identity_sha256"));
  m = Fixture();
  m["model_identity"]["artifact_identity"]["adapter_set"][0]["sha256"] = "C0FFEE";
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_DIGEST_MALFORMED,
                         "/model_identity/artifact_identity/adapter_set/0/sha256"));
}

// The model namespace is read by M5.1's rule: the same members, the same enumerations.
TEST(HandoffManifest, TheModelNamespaceIsReadByTheLoop2Rule) {
  Json m = Fixture();
  m["model_identity"]["position_contract"]["rope"]["kind"] = "default";
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"INPUT_FIELD_UNKNOWN"});
  m = Fixture();
  m["model_identity"]["artifact_identity"]["max_position_embeddings"] = 0;
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"INPUT_VALUE_OUT_OF_RANGE"});
  m = Fixture();
  m["model_identity"]["position_stage"] = "mid_rope";
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"INPUT_VALUE_INVALID"});
}

// A cold destination (V_D empty) receives all of U: chunks starting at b1 leave [0, 4) of every
// layer uncovered; adding them makes the plan whole.
TEST(HandoffManifest, AColdDestinationsChunksStartAtTokenZero) {
  Json m = Fixture();
  SetVisible(&m, {});
  Violations v = ValidateHandoffManifest(m);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_COVERAGE_MISMATCH"});
  EXPECT_EQ(v[0].pointer.rfind("/transfer/expected_chunks", 0), 0u) << test::Describe(v);
  for (uint64_t l = 0; l < 4; ++l)
    m["transfer"]["expected_chunks"].push_back(Chunk("head" + std::to_string(l), l, 0, 4));
  EXPECT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
}

// V_D = {b3}: X = U \ V_D is two intervals, which no transfer onto an exact visible prefix moves.
TEST(HandoffManifest, AVisibleSetThatIsNotAPrefixIsRefusedAtIt) {
  Json m = Fixture();
  SetVisible(&m, {"b3"});
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/blocks/visible_at_decode"));
}

// V_D = U: X is empty and so is the chunk manifest; a chunk left over moves tokens D already has.
TEST(HandoffManifest, EverythingVisibleNeedsNoChunk) {
  Json m = Fixture();
  std::vector<std::string> all;
  for (const auto& u : m["blocks"]["universe"]) all.push_back(u.get<std::string>());
  SetVisible(&m, all);
  Violations v = ValidateHandoffManifest(m);
  EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{"HANDOFF_COVERAGE_MISMATCH"})
      << test::Describe(v);
  m["transfer"]["expected_chunks"] = Json::array();
  EXPECT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
}

// A warm destination seeing b0..b2: the chunks must start at token 12; the bundled ones (from
// token 4) reach into V_D.
TEST(HandoffManifest, AWarmDestinationsChunksStartAfterItsVisiblePrefix) {
  Json m = Fixture();
  SetVisible(&m, {"b0", "b1", "b2"});
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"HANDOFF_COVERAGE_MISMATCH"});
  Json chunks = Json::array();
  for (uint64_t l = 0; l < 4; ++l) chunks.push_back(Chunk("w" + std::to_string(l), l, 12, 20));
  m["transfer"]["expected_chunks"] = chunks;
  EXPECT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
}

TEST(HandoffManifest, ChunkFindingsNameTheirChunkAndTheTransferId) {
  Json m = Fixture();
  m["transfer"]["expected_chunks"][5]["bytes"] = 1;
  EXPECT_TRUE(
      OneFinding(m, ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH, "/transfer/expected_chunks/5"));
  m = Fixture();
  m["transfer"]["transfer_id"] = "";
  EXPECT_TRUE(OneFinding(m, ErrorCode::INPUT_VALUE_INVALID, "/transfer/transfer_id"));
}

// The reservation is judged once, against U (the plan's own at-least-one-block rule would be a
// second code for the same field).
TEST(HandoffManifest, AnEmptyReservationIsOneCode) {
  Json m = Fixture();
  m["destination_reservation"]["blocks"] = 0;
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"HANDOFF_RESERVATION_TOO_SMALL"});
  EXPECT_EQ(ValidateHandoffManifest(m).size(), 1u);
}

// Every identity digest of the model namespace is format-checked at its own member (a malformed
// one is that code alone: the seal is not judged over it).
TEST(HandoffManifest, EveryModelIdentityDigestIsFormatCheckedAtItsMember) {
  for (const char* ptr :
       {"/artifact_identity/model_artifact_sha256", "/artifact_identity/model_config_sha256",
        "/artifact_identity/adapter_set/0/sha256", "/artifact_identity/weight_transforms/0/sha256",
        "/tokenizer_sha256"}) {
    Json m = Fixture();
    m["model_identity"]["artifact_identity"]["weight_transforms"] =
        Json::array({Json{{"name", "awq"}, {"sha256", std::string(64, 'e')}}});
    Reseal(&m);
    ASSERT_TRUE(ValidateHandoffManifest(m).empty()) << test::Describe(ValidateHandoffManifest(m));
    m["model_identity"][Json::json_pointer(ptr)] = "C0FFEE";
    EXPECT_TRUE(
        OneFinding(m, ErrorCode::HANDOFF_DIGEST_MALFORMED, "/model_identity" + std::string(ptr)))
        << ptr;
  }
}

// Each object of the model and transfer namespaces takes only its own members.
TEST(HandoffManifest, EveryNamespaceObjectRejectsAnUnknownMember) {
  for (const char* ptr :
       {"/model_identity", "/model_identity/artifact_identity",
        "/model_identity/artifact_identity/adapter_set/0", "/model_identity/position_contract",
        "/model_identity/position_contract/rope", "/transfer", "/transfer/expected_chunks/0"}) {
    Json m = Fixture();
    m[Json::json_pointer(ptr)]["extra"] = 1;
    EXPECT_TRUE(OneFinding(m, ErrorCode::INPUT_FIELD_UNKNOWN, std::string(ptr) + "/extra")) << ptr;
  }
}

// An expected chunk's schema and checksum findings point into /transfer/expected_chunks.
TEST(HandoffManifest, ChunkSchemaAndChecksumFindingsPointIntoTheTransferNamespace) {
  Json m = Fixture();
  m["transfer"]["expected_chunks"][2].erase("chunk_id");
  EXPECT_TRUE(
      OneFinding(m, ErrorCode::INPUT_FIELD_MISSING, "/transfer/expected_chunks/2/chunk_id"));
  m = Fixture();
  m["transfer"]["expected_chunks"][3]["checksum"] = "not-a-digest";
  EXPECT_TRUE(
      OneFinding(m, ErrorCode::HANDOFF_DIGEST_MALFORMED, "/transfer/expected_chunks/3/checksum"));
}

// A chunk finding about the first chunk names chunk 0 (not the whole manifest).
TEST(HandoffManifest, AFindingAboutTheFirstChunkNamesChunkZero) {
  Json m = Fixture();
  m["transfer"]["expected_chunks"][0]["bytes"] = 1;
  EXPECT_TRUE(
      OneFinding(m, ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH, "/transfer/expected_chunks/0"));
}

// A malformed chunk checksum is judged before the chunk plan: the plan is not judged over it
// (as the seal is not judged over a malformed digest), so a drifted chunk beside it is not a
// second code.
TEST(HandoffManifest, AMalformedChunkChecksumHoldsBackThePlanCheck) {
  Json m = Fixture();
  m["transfer"]["expected_chunks"][3]["checksum"] = "not-a-digest";
  m["transfer"]["expected_chunks"][5]["bytes"] = 1;
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"HANDOFF_DIGEST_MALFORMED"})
      << test::Describe(ValidateHandoffManifest(m));
}

// The input interval is the whole prompt universe: it starts at token 0, so even token 1 is off.
TEST(HandoffManifest, AnInputIntervalStartingAtTokenOneIsRefused) {
  Json m = Fixture();
  m["input"]["token_start"] = 1;
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/input/token_start"));
}

// ABI rules, each on a resealed ABI (so the seal is not what refuses it): every extent is
// positive, the coordinates are the six in order, and the head offset is tp_rank * kv_heads.
TEST(HandoffManifest, EachTensorAbiRuleRefusesAResealedAbi) {
  const std::vector<std::pair<std::string, Json>> changes = {
      {"/num_layers", 0},
      {"/kv_heads", 0},
      {"/head_dim", 0},
      {"/tokens_per_block", 0},
      {"/coordinates", Json::array({"layer", "block", "head", "kv", "token", "head_dim"})},
      {"/partition/kv_head_offset", 1},
  };
  const std::vector<std::string> pointers = {
      "/tensor_abi/num_layers",       "/tensor_abi/kv_heads",    "/tensor_abi/head_dim",
      "/tensor_abi/tokens_per_block", "/tensor_abi/coordinates", "/tensor_abi/partition"};
  for (size_t i = 0; i < changes.size(); ++i) {
    Json m = Fixture();
    m["tensor_abi"][Json::json_pointer(changes[i].first)] = changes[i].second;
    m["tensor_abi_sha256"] = *TensorAbiSha256(m["tensor_abi"]);
    const Violations v = ValidateHandoffManifest(m);
    ASSERT_FALSE(v.empty()) << changes[i].first;
    EXPECT_EQ(v[0].code, ErrorCode::HANDOFF_ABI_INVALID) << test::Describe(v);
    EXPECT_EQ(v[0].pointer, pointers[i]) << test::Describe(v);
  }
}

// Probe 95: the handoff partition kept a second, unreplicated copy of the shard rule, so MQA at
// TP 2 (one K/V head on both ranks) had no encoding. It follows M5.1's parallel_shard rule
// (KvShardLayoutHolds): the copies are declared.
TEST(HandoffManifest, RegressionReplicatedKvHeadsAreDeclaredInThePartition) {
  auto with = [](const Json& partition) {
    Json m = Fixture();
    m["tensor_abi"]["partition"] = partition;
    m["tensor_abi_sha256"] = *TensorAbiSha256(m["tensor_abi"]);
    return m;
  };
  const Json mqa_tp2 = {
      {"tp_size", 2}, {"tp_rank", 1}, {"kv_head_offset", 0}, {"kv_heads_total", 1}};
  Json declared = mqa_tp2;
  declared["kv_head_replication"] = 2;
  EXPECT_TRUE(ValidateHandoffManifest(with(declared)).empty())
      << test::Describe(ValidateHandoffManifest(with(declared)));
  EXPECT_TRUE(OneFinding(with(mqa_tp2), ErrorCode::HANDOFF_ABI_INVALID, "/tensor_abi/partition"));
  declared["kv_head_offset"] = 1;
  EXPECT_TRUE(OneFinding(with(declared), ErrorCode::HANDOFF_ABI_INVALID, "/tensor_abi/partition"));
}

// A malformed tensor ABI digest is its own code only: the ABI is not compared with it.
TEST(HandoffManifest, AMalformedTensorAbiDigestIsItsOwnCodeOnly) {
  Json m = Fixture();
  m["tensor_abi_sha256"] = "C0FFEE";
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_DIGEST_MALFORMED, "/tensor_abi_sha256"));
}

// The logical ledger's block count is |X|.
TEST(HandoffManifest, TheLedgersTransferBlockCountIsX) {
  Json m = Fixture();
  m["logical_ledger"]["transfer_blocks"] = 5;  // |C_P|, not |X| = 7
  EXPECT_TRUE(
      OneFinding(m, ErrorCode::HANDOFF_LOGICAL_BYTES_MISMATCH, "/logical_ledger/transfer_blocks"));
}

// A drifted physical logical row is that row's code alone: the total is summed over the row as
// it should be (a total that matches the other rows plus M stands).
TEST(HandoffManifest, ADriftedLogicalRowIsNotAlsoTheTotals) {
  Json m = Fixture();
  m["physical_ledger"]["logical_payload_bytes"] = 5120;
  EXPECT_TRUE(OneFinding(m, ErrorCode::HANDOFF_PHYSICAL_LEDGER_DRIFT,
                         "/physical_ledger/logical_payload_bytes"));
}

// The position contract's enumerations and types, as M5.1 reads them: the four RoPE types and an
// object of scaling pass (resealed); another convention, RoPE type or mask, a missing or
// non-numeric theta and a non-object scaling are refused at their member.
TEST(HandoffManifest, ThePositionContractsMembersAreReadExactly) {
  for (const char* type : {"default", "llama3", "linear", "none"}) {
    Json m = Fixture();
    m["model_identity"]["position_contract"]["rope"]["type"] = type;
    m["model_identity"]["position_contract"]["rope"]["scaling"] = Json{{"factor", 8}};
    Reseal(&m);
    EXPECT_TRUE(ValidateHandoffManifest(m).empty())
        << type << ": " << test::Describe(ValidateHandoffManifest(m));
  }
  const std::string pc = "/model_identity/position_contract";
  const std::vector<std::tuple<std::string, Json, std::string>> refused = {
      {"/cache_position_convention", "relative", "INPUT_VALUE_INVALID"},
      {"/rope/type", "yarn", "INPUT_VALUE_INVALID"},
      {"/rope/theta", "10000", "INPUT_FIELD_TYPE"},
      {"/rope/scaling", 8, "INPUT_FIELD_TYPE"},
      {"/visibility_policy", "bidirectional", "INPUT_VALUE_INVALID"},
  };
  for (const auto& [ptr, value, code] : refused) {
    Json m = Fixture();
    m[Json::json_pointer(pc + ptr)] = value;
    const Violations v = ValidateHandoffManifest(m);
    EXPECT_EQ(test::CodeNames(v), std::vector<std::string>{code}) << ptr;
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v[0].pointer, pc + ptr);
  }
  Json m = Fixture();
  m["model_identity"]["position_contract"]["rope"].erase("theta");
  EXPECT_EQ(test::CodeNames(ValidateHandoffManifest(m)),
            std::vector<std::string>{"INPUT_FIELD_MISSING"});
}

// An expected chunk carries at least one token and one byte: zero is out of the member's range
// (read by the protocol's chunk reader), not a plan finding.
TEST(HandoffManifest, AnExpectedChunkOfZeroTokensOrBytesIsOutOfRange) {
  for (const char* key : {"token_count", "bytes"}) {
    Json m = Fixture();
    m["transfer"]["expected_chunks"][4][key] = 0;
    EXPECT_TRUE(OneFinding(m, ErrorCode::INPUT_VALUE_OUT_OF_RANGE,
                           "/transfer/expected_chunks/4/" + std::string(key)))
        << key;
  }
}

}  // namespace
}  // namespace kvc::handoff
