// The handoff manifest's model and transfer namespaces (M5.6 0x01A): what the model identity
// digest seals, and how the expected chunk manifest must cover X = U \ V_D.
#include "reference/handoff/handoff_manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
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
  Violations v = ValidateHandoffManifest(m);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].code, ErrorCode::HANDOFF_DIGEST_MALFORMED);
  EXPECT_EQ(v[0].pointer, "/model_identity_sha256");
  m = Fixture();
  m["model_identity"]["artifact_identity"]["adapter_set"][0]["sha256"] = "C0FFEE";
  v = ValidateHandoffManifest(m);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/model_identity/artifact_identity/adapter_set/0/sha256");
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
  const Violations v = ValidateHandoffManifest(m);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].code, ErrorCode::HANDOFF_COVERAGE_MISMATCH);
  EXPECT_EQ(v[0].pointer, "/blocks/visible_at_decode");
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
  Violations v = ValidateHandoffManifest(m);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].code, ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH);
  EXPECT_EQ(v[0].pointer, "/transfer/expected_chunks/5");
  m = Fixture();
  m["transfer"]["transfer_id"] = "";
  v = ValidateHandoffManifest(m);
  ASSERT_EQ(v.size(), 1u) << test::Describe(v);
  EXPECT_EQ(v[0].pointer, "/transfer/transfer_id");
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

}  // namespace
}  // namespace kvc::handoff
