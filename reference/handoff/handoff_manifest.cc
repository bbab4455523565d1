// validate_handoff_manifest: identity fence, tensor ABI, the three block sets and both ledgers.
#include "reference/handoff/handoff_manifest.h"

#include <algorithm>
#include <map>
#include <set>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_txn.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/manifest/model_identity.h"

namespace kvc::handoff {
namespace {

const std::vector<std::string> kCoordinates = {"layer", "block", "kv", "head", "token", "head_dim"};

struct BlockSet {
  std::string name;
  std::vector<std::string> blocks;
};

// "[a,b,c]"; a list longer than kShown names its first kShown - 4 and last 4 elements and its
// length (probe 36: two 10^6-block sets made a 50 MB message).
std::string Join(const std::vector<std::string>& xs) {
  constexpr size_t kShown = 24;
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs.size() > kShown && i == kShown - 4) {
      s += ",...";
      i = xs.size() - 4;
    }
    s += (i ? "," : "") + xs[i];
  }
  return s + "]" + (xs.size() > kShown ? " (" + std::to_string(xs.size()) + " blocks)" : "");
}

std::vector<std::string> ReadStrings(const Json* arr, const std::string& ptr, Violations* v) {
  std::vector<std::string> out;
  if (!arr) return out;
  for (size_t i = 0; i < arr->size(); ++i) {
    if (!(*arr)[i].is_string()) {
      v->push_back({ErrorCode::INPUT_FIELD_TYPE, ptr + "/" + std::to_string(i),
                    "expected a string, got " + std::string(JsonTypeName((*arr)[i]))});
      continue;
    }
    out.push_back((*arr)[i].get<std::string>());
  }
  return out;
}

// The expected chunk manifest against X = U \ V_D. The destination's exact state extends only
// as a prefix (a block's K/V rows are exact only with its whole prefix, and a warm destination
// transfer extends the visible prefix [0, token_start): M5.6 0x06), so X must be U's suffix
// from block k, and the chunks must tile [k * B_block, |U| * B_block) on every layer exactly once
// with bytes = token_count * 2 * H_kv * d_h * b. The chunk rules are the transfer plan's
// (CheckPlan); the manifest judges its reservation itself (against U).
void CheckExpectedChunks(const std::vector<BlockSet>& sets, uint64_t block_tokens, uint64_t layers,
                         uint64_t kv_heads, uint64_t head_dim, uint64_t dtype_bytes,
                         uint64_t reserved_blocks, const std::string& transfer_id,
                         std::vector<ChunkSpec> chunks, Violations* v) {
  const std::vector<std::string>& universe = sets[0].blocks;
  const std::set<std::string> x(sets[5].blocks.begin(), sets[5].blocks.end());
  const size_t k = universe.size() - x.size();  // |V_D|: X is U's suffix from block k
  for (size_t i = 0; i < universe.size(); ++i)
    if ((i >= k) != (x.count(universe[i]) > 0)) {
      v->push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/blocks/visible_at_decode",
                    "V_D = " + Join(sets[2].blocks) +
                        " is not a prefix of U: the destination's exact state extends only as a "
                        "prefix, so the transfer set X = U \\ V_D must be U's suffix, and the "
                        "expected chunks cover it as one token interval"});
      return;
    }
  TransferPlan plan;
  plan.transfer_id = transfer_id;
  plan.num_layers = layers;
  auto start = CheckedMul(k, block_tokens);
  auto count = CheckedMul(x.size(), block_tokens);
  auto row = CheckedProduct({2, kv_heads, head_dim, dtype_bytes});
  if (!start || !count || !row) {
    v->push_back({ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/tensor_abi",
                  "X's token interval or 2 * H_kv * d_h * b overflows 64 bits"});
    return;
  }
  plan.token_start = *start;
  plan.token_count = *count;
  plan.bytes_per_token_layer = *row;
  plan.reserved_blocks = reserved_blocks;
  if (k > 0) plan.visible_prefix_handle = "visible_at_decode";
  plan.chunks = std::move(chunks);
  for (const PlanIssue& issue : CheckPlan(plan)) {
    if (issue.field == "reserved_blocks") continue;  // judged against U by the manifest
    // The plan's interval and row size come from X and the ABI, both verified by now: a plan-wide
    // finding (every layer's gap alike, no chunk of the row size) is the chunk manifest's.
    v->push_back({issue.code,
                  issue.field == "transfer_id" ? "/transfer/transfer_id"
                  : issue.chunk_index >= 0
                      ? "/transfer/expected_chunks/" + std::to_string(issue.chunk_index)
                      : "/transfer/expected_chunks",
                  issue.message});
  }
}

}  // namespace

StatusOr<std::string> TensorAbiSha256(const Json& tensor_abi) {
  return CanonicalSha256(tensor_abi);
}

Violations ValidateHandoffManifest(const Json& doc) {
  Violations v;
  FieldReader top(&doc, "", &v);
  top.Enum("kind", {kHandoffManifestKind});
  top.OptString("description");
  top.OptString("seed_ref");
  top.Enum("publication_state", {"UNPUBLISHED"});

  FieldReader id(top.Object("identity_fence"), "/identity_fence", &v);
  id.String("tenant");
  id.String("request_id");
  id.Uint("generation");
  id.Uint("attempt");
  id.Uint("source_worker_epoch");
  id.Uint("destination_worker_epoch");
  auto fence_reservation = id.String("reservation_id");
  id.RejectUnknownFields();

  FieldReader in(top.Object("input"), "/input", &v);
  auto prompt_digest = in.String("prompt_digest_sha256");
  auto tok_start = in.Uint("token_start");
  auto tok_count = in.Uint("token_count", 1);
  in.RejectUnknownFields();

  FieldReader pl(top.Object("placement"), "/placement", &v);
  pl.String("prefill_worker");
  pl.String("decode_worker");
  pl.String("topology_path");
  pl.RejectUnknownFields();

  // The model namespace: checkpoint, tokenizer, adapters, position convention and mask, read by
  // M5.1 Loop 2's rule (Loop 2 owns the model/cache manifest).
  const Json* model = top.Object("model_identity");
  FieldReader mi(model, "/model_identity", &v);
  std::vector<std::pair<std::string, std::string>> model_digests =
      ReadArtifactIdentity(mi.Object("artifact_identity"), mi.Ptr("artifact_identity"), &v).digests;
  if (auto s = mi.String("tokenizer_sha256"))
    model_digests.emplace_back(mi.Ptr("tokenizer_sha256"), *s);
  ReadPositionContract(mi.Object("position_contract"), mi.Ptr("position_contract"), &v);
  mi.Enum("position_stage", {"post_rope", "pre_rope"});
  mi.RejectUnknownFields();
  auto model_digest = top.String("model_identity_sha256");

  const Json* abi = top.Object("tensor_abi");
  FieldReader ab(abi, "/tensor_abi", &v);
  auto layers = ab.Uint("num_layers");
  auto kv_heads = ab.Uint("kv_heads");
  auto head_dim = ab.Uint("head_dim");
  auto block_tokens = ab.Uint("tokens_per_block");
  FieldReader dt(ab.Object("dtype"), "/tensor_abi/dtype", &v);
  auto dtype_name = dt.String("name");
  auto dtype_bytes = dt.Uint("bytes_per_scalar", 0, 64);
  dt.RejectUnknownFields();
  auto coords = ReadStrings(ab.Array("coordinates"), "/tensor_abi/coordinates", &v);
  auto axes = ReadStrings(ab.Array("axis_order"), "/tensor_abi/axis_order", &v);
  ab.Enum("layout", {"paged_block_major", "layer_major_contiguous"});
  FieldReader pt(ab.Object("partition"), "/tensor_abi/partition", &v);
  auto tp_size = pt.Uint("tp_size", 1);
  auto tp_rank = pt.Uint("tp_rank");
  auto kv_off = pt.Uint("kv_head_offset");
  auto kv_total = pt.Uint("kv_heads_total");
  // Replicated K/V heads (tp_size above the heads), as M5.1's parallel_shard declares them
  // (>= 2 when present; probe 95: MQA at TP 2 had no encoding).
  const uint64_t replication = ReadKvHeadReplication(pt);
  pt.RejectUnknownFields();
  ab.RejectUnknownFields();
  auto abi_digest = top.String("tensor_abi_sha256");

  FieldReader bl(top.Object("blocks"), "/blocks", &v);
  std::vector<BlockSet> sets;
  for (const char* k : {"universe", "reusable_at_prefill", "visible_at_decode", "compute_set",
                        "source_state_set", "transfer_set"})
    sets.push_back({k, ReadStrings(bl.Array(k), "/blocks/" + std::string(k), &v)});
  bl.RejectUnknownFields();

  FieldReader rs(top.Object("destination_reservation"), "/destination_reservation", &v);
  auto res_id = rs.String("reservation_id");
  auto res_blocks = rs.Uint("blocks");
  rs.RejectUnknownFields();

  // The transfer namespace: the transfer id and the expected chunk manifest.
  FieldReader tr(top.Object("transfer"), "/transfer", &v);
  auto transfer_id = tr.String("transfer_id");
  std::vector<ChunkSpec> chunks;
  if (const Json* cs = tr.Array("expected_chunks"))
    chunks = ReadExpectedChunks(*cs, tr.Ptr("expected_chunks"), &v);
  tr.RejectUnknownFields();

  FieldReader ll(top.Object("logical_ledger"), "/logical_ledger", &v);
  auto l_compute = ll.Uint("compute_blocks");
  auto l_transfer = ll.Uint("transfer_blocks");
  auto l_bpb = ll.Uint("bytes_per_block");
  auto l_bytes = ll.Uint("transfer_logical_bytes");
  ll.RejectUnknownFields();

  FieldReader ph(top.Object("physical_ledger"), "/physical_ledger", &v);
  std::map<std::string, uint64_t> phys;
  std::optional<uint64_t> logical_want;  // the recomputed logical payload row, once known
  for (const char* k : {"logical_payload_bytes", "padding_bytes", "descriptor_bytes",
                        "checksum_bytes", "retry_bytes", "framing_bytes", "total_bytes"})
    if (auto x = ph.Uint(k)) phys[k] = *x;
  ph.RejectUnknownFields();
  top.RejectUnknownFields();
  if (!v.empty()) return v;

  // 2. Well-formedness.
  if (!IsSha256Hex(*prompt_digest))
    v.push_back({ErrorCode::HANDOFF_DIGEST_MALFORMED, "/input/prompt_digest_sha256",
                 "expected a 64-character lowercase hex SHA-256"});
  bool digest_decl_ok = IsSha256Hex(*abi_digest);
  if (!digest_decl_ok)
    v.push_back({ErrorCode::HANDOFF_DIGEST_MALFORMED, "/tensor_abi_sha256",
                 "expected a 64-character lowercase hex SHA-256"});
  bool model_digests_ok = IsSha256Hex(*model_digest);
  if (!model_digests_ok)
    v.push_back({ErrorCode::HANDOFF_DIGEST_MALFORMED, "/model_identity_sha256",
                 "expected a 64-character lowercase hex SHA-256"});
  for (const auto& [ptr, value] : model_digests)
    if (!IsSha256Hex(value)) {
      v.push_back(
          {ErrorCode::HANDOFF_DIGEST_MALFORMED, ptr,
           "expected a 64-character lowercase hex SHA-256, got " + base::QuoteClipped(value)});
      model_digests_ok = false;
    }
  bool checksums_ok = true;
  for (size_t i = 0; i < chunks.size(); ++i)
    if (!IsSha256Hex(chunks[i].checksum)) {
      v.push_back({ErrorCode::HANDOFF_DIGEST_MALFORMED,
                   "/transfer/expected_chunks/" + std::to_string(i) + "/checksum",
                   "expected a 64-character lowercase hex SHA-256, got " +
                       base::QuoteClipped(chunks[i].checksum)});
      checksums_ok = false;
    }
  size_t before_abi = v.size();
  auto abi_bad = [&](std::string ptr, std::string msg) {
    v.push_back({ErrorCode::HANDOFF_ABI_INVALID, std::move(ptr), std::move(msg)});
  };
  for (auto [k, x] :
       {std::pair{"num_layers", *layers}, std::pair{"kv_heads", *kv_heads},
        std::pair{"head_dim", *head_dim}, std::pair{"tokens_per_block", *block_tokens}})
    if (x == 0) abi_bad("/tensor_abi/" + std::string(k), std::string(k) + " must be positive");
  auto width = DtypeBytes(*dtype_name);
  if (!width || *width != *dtype_bytes)
    abi_bad("/tensor_abi/dtype/bytes_per_scalar",
            "dtype " + base::QuoteClipped(*dtype_name) + " has " +
                (width ? std::to_string(*width) : std::string("an unknown")) +
                " bytes per scalar, ABI declares " + std::to_string(*dtype_bytes));
  if (coords != kCoordinates)
    abi_bad("/tensor_abi/coordinates", "expected the coordinates " + Join(kCoordinates) + ", got " +
                                           base::Clipped(Join(coords), 512));
  {
    auto a = axes, c = kCoordinates;
    std::sort(a.begin(), a.end());
    std::sort(c.begin(), c.end());
    if (a != c)
      abi_bad("/tensor_abi/axis_order", "axis_order " + base::Clipped(Join(axes), 512) +
                                            " is not a permutation of " + Join(kCoordinates));
  }
  const KvShardLayout shard{*kv_heads, *kv_total, *tp_size, *tp_rank, *kv_off, replication};
  if (!KvShardLayoutHolds(shard))
    abi_bad("/tensor_abi/partition", KvShardLayoutExpectation(shard, "kv_heads", "kv_heads_total"));
  bool abi_ok = v.size() == before_abi;

  std::set<std::string> universe;
  bool blocks_ok = true;
  // A universe listing a block twice has lost the one it displaced: the other sets are not
  // judged against it (probe 49: U's duplicate raised one code, and its missing block three
  // more, one per set naming it).
  bool universe_ok = true;
  for (const auto& s : sets) {
    std::set<std::string> seen;
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      const std::string& b = s.blocks[i];
      bool unknown = s.name != "universe" && universe_ok && !universe.count(b);
      if (!seen.insert(b).second || unknown) {
        v.push_back({ErrorCode::HANDOFF_BLOCK_UNKNOWN,
                     "/blocks/" + s.name + "/" + std::to_string(i),
                     "block " + base::QuoteClipped(b) + " is " +
                         (unknown ? "not in the prompt universe U" : "listed twice")});
        blocks_ok = false;
      }
    }
    if (s.name == "universe") {
      universe = seen;
      universe_ok = blocks_ok;
    }
  }

  // 3. ABI digest.
  bool abi_digest_ok = false;
  if (abi_ok && digest_decl_ok) {
    auto want = TensorAbiSha256(*abi);
    if (!want.ok()) {
      v.push_back({ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/tensor_abi", want.status().message()});
    } else if (*want != *abi_digest) {
      v.push_back(
          {ErrorCode::HANDOFF_ABI_DIGEST_MISMATCH, "/tensor_abi_sha256",
           "SHA256(JCS(tensor_abi)) is " + *want + " but the manifest declares " + *abi_digest});
    } else {
      abi_digest_ok = true;
    }
  }

  // The model identity digest, over well-formed digests only (a malformed one is its own code).
  if (model_digests_ok) {
    auto want = CanonicalSha256(*model);
    if (!want.ok())
      v.push_back(
          {ErrorCode::INPUT_VALUE_OUT_OF_RANGE, "/model_identity", want.status().message()});
    else if (*want != *model_digest)
      v.push_back({ErrorCode::HANDOFF_MODEL_IDENTITY_DIGEST_MISMATCH, "/model_identity_sha256",
                   "SHA256(JCS(model_identity)) is " + *want + " but the manifest declares " +
                       *model_digest});
  }

  // 4. Set algebra, in the order of U's listing.
  bool transfer_ok = false;
  if (blocks_ok) {
    auto as_set = [&](size_t i) {
      return std::set<std::string>(sets[i].blocks.begin(), sets[i].blocks.end());
    };
    std::set<std::string> R = as_set(1), V = as_set(2);
    std::vector<std::string> C, S, X;
    for (const auto& b : sets[0].blocks) {
      if (!R.count(b)) C.push_back(b);
      S.push_back(b);  // R_P u C_P = U
      if (!V.count(b)) X.push_back(b);
    }
    auto same = [&](size_t i, const std::vector<std::string>& want) {
      std::set<std::string> w(want.begin(), want.end());
      return as_set(i) == w;
    };
    if (!same(3, C))
      v.push_back({ErrorCode::HANDOFF_COMPUTE_SET_MISMATCH, "/blocks/compute_set",
                   "C_P = U \\ R_P = " + Join(C) + ", manifest declares " + Join(sets[3].blocks)});
    if (!same(4, S))
      v.push_back(
          {ErrorCode::HANDOFF_SOURCE_SET_MISMATCH, "/blocks/source_state_set",
           "S_P = R_P u C_P = U = " + Join(S) + ", manifest declares " + Join(sets[4].blocks)});
    if (!same(5, X))
      v.push_back({ErrorCode::HANDOFF_TRANSFER_SET_MISMATCH, "/blocks/transfer_set",
                   "X = U \\ V_D = " + Join(X) + ", manifest declares " + Join(sets[5].blocks)});
    else
      transfer_ok = true;
    if (!same(3, C)) {
    } else if (*l_compute != C.size()) {
      v.push_back({ErrorCode::HANDOFF_LOGICAL_BYTES_MISMATCH, "/logical_ledger/compute_blocks",
                   "|C_P| = " + std::to_string(C.size()) + ", ledger declares " +
                       std::to_string(*l_compute)});
    }
    // The token interval must be exactly |U| blocks.
    if (abi_ok) {
      auto span = CheckedMul(universe.size(), *block_tokens);
      if (!span || *span != *tok_count)
        v.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/input/token_count",
                     "token_count " + std::to_string(*tok_count) +
                         " is not |U| * tokens_per_block = " + std::to_string(universe.size()) +
                         " * " + std::to_string(*block_tokens)});
    }
    // 5. Reservation: the destination holds the complete prompt K/V.
    if (*res_blocks < universe.size())
      v.push_back(
          {ErrorCode::HANDOFF_RESERVATION_TOO_SMALL, "/destination_reservation/blocks",
           "the reservation holds " + std::to_string(*res_blocks) +
               " blocks; the complete prompt needs |U| = " + std::to_string(universe.size())});
  }
  // 5b. The expected chunk manifest moves X, judged by the transfer plan's own rule (CheckPlan)
  // over X's token interval, once the ABI, its digest and X are sound (as the ledgers are).
  if (abi_ok && abi_digest_ok && transfer_ok && checksums_ok)
    CheckExpectedChunks(sets, *block_tokens, *layers, *kv_heads, *head_dim, *dtype_bytes,
                        *res_blocks, *transfer_id, std::move(chunks), &v);
  // The input interval is the prompt's, [0, |U| * tokens_per_block): U is the whole prompt
  // universe, so it starts at token 0 (probe 36: token_start 5 passed, never read). A transfer
  // that moves only a suffix says so by its transfer set X, not by the input interval.
  if (*tok_start != 0)
    v.push_back({ErrorCode::HANDOFF_COVERAGE_MISMATCH, "/input/token_start",
                 "token_start " + std::to_string(*tok_start) +
                     ": the input interval is the whole prompt universe U, which starts at token "
                     "0"});
  if (*res_id != *fence_reservation)
    v.push_back({ErrorCode::HANDOFF_IDENTITY_MISMATCH, "/destination_reservation/reservation_id",
                 "reservation " + base::QuoteClipped(*res_id) + " is not the identity fence's " +
                     base::QuoteClipped(*fence_reservation)});

  // 6. Ledgers.
  if (abi_ok && abi_digest_ok && transfer_ok) {
    auto bpb = CheckedProduct({*block_tokens, *layers, 2, *kv_heads, *head_dim, *dtype_bytes});
    auto m = bpb ? CheckedMul(sets[5].blocks.size(), *bpb) : std::nullopt;
    if (!bpb || !m) {
      v.push_back({ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/tensor_abi",
                   "B_block * L * 2 * H_kv * d_h * b overflows 64 bits"});
    } else {
      auto chk = [&](const char* key, uint64_t declared, uint64_t want,
                     const std::string& formula) {
        if (declared != want)
          v.push_back({ErrorCode::HANDOFF_LOGICAL_BYTES_MISMATCH,
                       std::string("/logical_ledger/") + key,
                       formula + " = " + std::to_string(want) + ", ledger declares " +
                           std::to_string(declared)});
      };
      chk("transfer_blocks", *l_transfer, sets[5].blocks.size(), "|X|");
      chk("bytes_per_block", *l_bpb, *bpb, "B_block * L * 2 * H_kv * d_h * b");
      chk("transfer_logical_bytes", *l_bytes, *m, "|X| * B_block * L * 2 * H_kv * d_h * b");
      logical_want = *m;
      if (phys["logical_payload_bytes"] != *m)
        v.push_back(
            {ErrorCode::HANDOFF_PHYSICAL_LEDGER_DRIFT, "/physical_ledger/logical_payload_bytes",
             "the physical ledger's logical payload must equal the logical transfer bytes " +
                 std::to_string(*m) + " (physical terms belong in their own rows), got " +
                 std::to_string(phys["logical_payload_bytes"])});
    }
  }
  // The total sums the rows as they should be: a drifted logical row, reported above, is not a
  // second violation of the total (probe 36: it raised both).
  uint64_t sum = 0;
  bool sum_ok = true;
  for (const char* k : {"logical_payload_bytes", "padding_bytes", "descriptor_bytes",
                        "checksum_bytes", "retry_bytes", "framing_bytes"}) {
    const uint64_t row =
        std::string_view(k) == "logical_payload_bytes" && logical_want ? *logical_want : phys[k];
    auto s = CheckedAdd(sum, row);
    if (!s)
      sum_ok = false;
    else
      sum = *s;
  }
  if (!sum_ok || sum != phys["total_bytes"])
    v.push_back(
        {ErrorCode::HANDOFF_PHYSICAL_LEDGER_DRIFT, "/physical_ledger/total_bytes",
         "total_bytes must be payload + padding + descriptors + checksums + retries + framing = " +
             (sum_ok ? std::to_string(sum) : std::string("overflow")) + ", got " +
             std::to_string(phys["total_bytes"])});
  return v;
}

}  // namespace kvc::handoff
