// validate_manifest and the manifest digests; see manifest.h for the check order.
#include "reference/manifest/manifest.h"

#include <map>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/manifest/model_identity.h"

namespace kvc {
namespace {

struct Dtype {
  std::string name;
  uint64_t bytes = 0;
};

// The manifest's fields after the schema pass. Pointers alias the validated document.
struct Manifest {
  std::string handle_id, lineage_id;
  const Json* artifact = nullptr;
  const Json* schema = nullptr;
  const Json* position = nullptr;
  std::vector<std::pair<std::string, std::string>> artifact_digests;  // pointer -> value
  uint64_t max_position_embeddings = 0;
  const Json* prompt_ids = nullptr;
  uint64_t prompt_count = 0;
  std::string prompt_sha, side_sha, salt_sha;
  std::vector<std::pair<std::string, std::string>> input_digests;
  uint64_t layers = 0, q_heads = 0, kv_total = 0, kv_local = 0, head_dim = 0;
  Dtype kdt, vdt;
  uint64_t tp_rank = 0, tp_size = 0, kv_offset = 0;
  uint64_t kv_replication = 1;  // copies of each K/V head across the TP ranks (M5.1 0x02)
  uint64_t origin = 0;
  uint64_t max_context = 0, max_new = 0;
  std::string abi_sha, prefix_sha, snapshot_sha;
  std::string phase;
  uint64_t generation = 0, logical = 0, committed = 0, next_pos = 0, vis_start = 0, vis_end = 0,
           reserved = 0;
  std::map<std::string, uint64_t> resident, reclaimable;
  uint64_t ledger_bpt = 0, ledger_committed = 0, ledger_reserved = 0;
};

constexpr const char* kSha = "a 64-character lowercase hex SHA-256";

// Schema pass: fills `m`; returns false when any INPUT_* violation was recorded.
bool ReadManifest(const Json& doc, Manifest* m, Violations* v) {
  size_t before = v->size();
  FieldReader top(&doc, "", v);
  top.Enum("kind", {kManifestKind});
  top.OptString("description");

  FieldReader ri(top.Object("request_identity"), "/request_identity", v);
  ri.String("namespace");
  ri.String("request_id");
  ri.Uint("attempt");
  if (auto s = ri.String("lineage_id")) m->lineage_id = *s;
  if (ri.Has("parent_request_id") && !doc["request_identity"]["parent_request_id"].is_null())
    ri.String("parent_request_id");
  else
    ri.Allow({"parent_request_id"});
  if (auto s = ri.String("handle_id")) m->handle_id = *s;
  ri.RejectUnknownFields();

  m->artifact = top.Object("artifact_identity");
  ArtifactIdentityView artifact = ReadArtifactIdentity(m->artifact, "/artifact_identity", v);
  m->artifact_digests = std::move(artifact.digests);
  m->max_position_embeddings = artifact.max_position_embeddings;

  FieldReader ii(top.Object("input_identity"), "/input_identity", v);
  m->prompt_ids = ii.Array("prompt_token_ids");
  if (m->prompt_ids) FieldReader::UintArray(*m->prompt_ids, ii.Ptr("prompt_token_ids"), v, UINT32_MAX);
  if (auto x = ii.Uint("prompt_token_count")) m->prompt_count = *x;
  if (auto s = ii.String("prompt_token_ids_sha256")) m->prompt_sha = *s;
  for (const char* k : {"tokenizer_sha256", "chat_template_sha256"})
    if (auto s = ii.String(k)) m->input_digests.emplace_back(ii.Ptr(k), *s);
  if (auto s = ii.String("input_side_data_sha256")) m->side_sha = *s;
  if (auto s = ii.String("cache_isolation_salt_sha256")) m->salt_sha = *s;
  ii.RejectUnknownFields();

  m->schema = top.Object("cache_schema");
  FieldReader cs(m->schema, "/cache_schema", v);
  cs.Enum("cache_family", {"full_kv"});
  if (auto x = cs.Uint("num_cache_layers")) m->layers = *x;
  if (auto x = cs.Uint("num_query_heads")) m->q_heads = *x;
  if (auto x = cs.Uint("num_kv_heads_total")) m->kv_total = *x;
  if (auto x = cs.Uint("kv_heads_per_rank")) m->kv_local = *x;
  if (auto x = cs.Uint("head_dim")) m->head_dim = *x;
  for (auto [key, dt] : {std::pair{"key_dtype", &m->kdt}, std::pair{"value_dtype", &m->vdt}}) {
    FieldReader d(cs.Object(key), cs.Ptr(key), v);
    if (auto s = d.String("name")) dt->name = *s;
    if (auto x = d.Uint("bytes_per_scalar", 0, 64)) dt->bytes = *x;
    d.RejectUnknownFields();
  }
  cs.Enum("position_stage", {"post_rope", "pre_rope"});
  if (const Json* axes = cs.Array("logical_axes")) {
    for (size_t i = 0; i < axes->size(); ++i)
      if (!(*axes)[i].is_string())
        v->push_back({ErrorCode::INPUT_FIELD_TYPE, cs.Ptr("logical_axes") + "/" + std::to_string(i),
                      "expected a string axis name"});
  }
  cs.Enum("representation_schema", {"dense"});
  FieldReader sh(cs.Object("parallel_shard"), "/cache_schema/parallel_shard", v);
  if (auto x = sh.Uint("tp_rank")) m->tp_rank = *x;
  if (auto x = sh.Uint("tp_size", 1)) m->tp_size = *x;
  if (auto x = sh.Uint("kv_head_offset")) m->kv_offset = *x;
  // A declared replication multiplicity (tensor parallelism wider than the K/V heads), never
  // folded into kv_heads_per_rank (M5.1 0x02: "the extra copies are a second multiplicity").
  m->kv_replication = ReadKvHeadReplication(sh);
  sh.RejectUnknownFields();
  cs.RejectUnknownFields();

  m->position = top.Object("position_contract");
  m->origin = ReadPositionContract(m->position, "/position_contract", v);

  FieldReader rp(top.Object("request_policy"), "/request_policy", v);
  if (auto x = rp.Uint("max_context_tokens", 1)) m->max_context = *x;
  if (auto x = rp.Uint("max_new_tokens")) m->max_new = *x;
  rp.Object("stop_policy");
  rp.Object("sampling_policy");
  rp.RejectUnknownFields();

  FieldReader dg(top.Object("digests"), "/digests", v);
  if (auto s = dg.String("cache_abi_sha256")) m->abi_sha = *s;
  if (auto s = dg.String("prefix_identity_sha256")) m->prefix_sha = *s;
  if (auto s = dg.String("snapshot_sha256")) m->snapshot_sha = *s;
  dg.RejectUnknownFields();

  FieldReader ss(top.Object("state_snapshot"), "/state_snapshot", v);
  if (auto x = ss.Uint("generation")) m->generation = *x;
  if (auto p = ss.Enum("phase", {"NEW", "DECODE_READY", "FINISHED", "CANCELLED", "RELEASED"}))
    m->phase = *p;
  if (auto x = ss.Uint("logical_token_count")) m->logical = *x;
  if (auto x = ss.Uint("committed_cache_length")) m->committed = *x;
  if (auto x = ss.Uint("next_cache_position")) m->next_pos = *x;
  FieldReader vis(ss.Object("visible_positions"), "/state_snapshot/visible_positions", v);
  if (auto x = vis.Uint("start")) m->vis_start = *x;
  if (auto x = vis.Uint("end")) m->vis_end = *x;
  vis.RejectUnknownFields();
  if (auto x = ss.Uint("reserved_token_capacity")) m->reserved = *x;
  for (auto [key, dst] : {std::pair{"resident_bytes", &m->resident},
                          std::pair{"reclaimable_bytes", &m->reclaimable}}) {
    const Json* tiers = ss.Object(key);
    if (!tiers) continue;
    for (auto it = tiers->begin(); it != tiers->end(); ++it)
      if (auto x = ReadUint(it.value(), ss.Ptr(key) + "/" + JsonPointerEscape(it.key()), v))
        (*dst)[it.key()] = *x;
  }
  ss.RejectUnknownFields();

  FieldReader al(top.Object("analytical_ledger"), "/analytical_ledger", v);
  // Declared byte quantities are read exactly up to 2^64 - 1 (fixture-format.md), as seal
  // writes them (probe 94: seal wrote a B_token of 2^58 that validate refused).
  if (auto x = al.Uint("bytes_per_token", 0, UINT64_MAX)) m->ledger_bpt = *x;
  if (auto x = al.Uint("committed_logical_bytes", 0, UINT64_MAX)) m->ledger_committed = *x;
  if (auto x = al.Uint("reserved_nominal_bytes", 0, UINT64_MAX)) m->ledger_reserved = *x;
  al.RejectUnknownFields();
  top.RejectUnknownFields();
  return v->size() == before;
}

bool CheckDigestFormat(Violations* v, const std::string& ptr, const std::string& value) {
  if (IsSha256Hex(value)) return true;
  Add(v, ErrorCode::MANIFEST_DIGEST_MALFORMED, ptr,
      "expected " + std::string(kSha) + ", got " + base::QuoteClipped(value));
  return false;
}

void CheckDigest(Violations* v, ErrorCode code, const std::string& ptr, const std::string& declared,
                 const StatusOr<std::string>& computed, const char* what) {
  if (!computed.ok()) {
    Add(v, ErrorCode::INPUT_VALUE_OUT_OF_RANGE, ptr, std::string(what) + ": " + computed.status().message());
    return;
  }
  if (declared != *computed)
    Add(v, code, ptr, std::string(what) + " is " + *computed + " but the manifest declares " + declared);
}

}  // namespace

StatusOr<std::string> PromptTokenIdsSha256(const Json& prompt_token_ids) {
  return CanonicalSha256(prompt_token_ids);
}

StatusOr<std::string> CacheAbiSha256(const Json& artifact_identity, const Json& cache_schema,
                                     const Json& position_contract) {
  return CanonicalSha256(Json{{"artifact_identity", artifact_identity},
                              {"cache_schema", cache_schema},
                              {"position_contract", position_contract}});
}

StatusOr<std::string> PrefixIdentitySha256(const std::string& cache_abi_sha256,
                                           const std::string& prompt_token_ids_sha256,
                                           const std::string& input_side_data_sha256,
                                           const std::string& cache_isolation_salt_sha256) {
  return CanonicalSha256(Json{{"cache_abi_sha256", cache_abi_sha256},
                              {"prompt_token_ids_sha256", prompt_token_ids_sha256},
                              {"input_side_data_sha256", input_side_data_sha256},
                              {"cache_isolation_salt_sha256", cache_isolation_salt_sha256}});
}

StatusOr<std::string> SnapshotSha256(const Json& m) {
  const Json& ss = m.at("state_snapshot");
  Json proj = {{"handle_id", m.at("request_identity").at("handle_id")},
               {"lineage_id", m.at("request_identity").at("lineage_id")},
               {"cache_abi_sha256", m.at("digests").at("cache_abi_sha256")}};
  for (const char* k : {"generation", "phase", "logical_token_count", "committed_cache_length",
                        "next_cache_position", "visible_positions", "reserved_token_capacity"})
    proj[k] = ss.at(k);
  return CanonicalSha256(proj);
}

namespace {

// The cache schema's extents and dtype widths (MANIFEST_SCHEMA_ZERO_EXTENT,
// MANIFEST_DTYPE_WIDTH_INVALID), judged alike by validate and seal: B_token, the shard rules and
// the head geometry are computed from them. Returns whether all hold.
bool CheckExtentsAndWidths(const Manifest& m, Violations* v) {
  bool ok = true;
  for (auto [key, val] : {std::pair{"num_cache_layers", m.layers}, std::pair{"num_query_heads", m.q_heads},
                          std::pair{"num_kv_heads_total", m.kv_total},
                          std::pair{"kv_heads_per_rank", m.kv_local}, std::pair{"head_dim", m.head_dim}}) {
    if (val == 0) {
      Add(v, ErrorCode::MANIFEST_SCHEMA_ZERO_EXTENT, std::string("/cache_schema/") + key,
          std::string(key) + " must be positive");
      ok = false;
    }
  }
  for (auto [key, dt] : {std::pair{"key_dtype", &m.kdt}, std::pair{"value_dtype", &m.vdt}}) {
    auto expect = DtypeBytes(dt->name);
    std::string ptr = std::string("/cache_schema/") + key;
    if (dt->bytes == 0) {
      Add(v, ErrorCode::MANIFEST_DTYPE_WIDTH_INVALID, ptr + "/bytes_per_scalar",
          "bytes_per_scalar must be positive");
      ok = false;
    } else if (!expect) {
      Add(v, ErrorCode::MANIFEST_DTYPE_WIDTH_INVALID, ptr + "/name",
          "unknown dtype " + base::QuoteClipped(dt->name) + " (known: " + kKnownDtypeNames + ")");
      ok = false;
    } else if (*expect != dt->bytes) {
      Add(v, ErrorCode::MANIFEST_DTYPE_WIDTH_INVALID, ptr + "/bytes_per_scalar",
          dt->name + " has " + std::to_string(*expect) + " bytes per scalar, manifest says " +
              std::to_string(dt->bytes));
      ok = false;
    }
  }
  return ok;
}

}  // namespace

Violations ValidateManifest(const Json& doc) {
  Violations v;
  Manifest m;
  if (!ReadManifest(doc, &m, &v)) return v;

  // 2. Identity well-formedness.
  bool artifact_ok = true;
  for (const auto& [ptr, val] : m.artifact_digests) artifact_ok &= CheckDigestFormat(&v, ptr, val);
  // Tokenizer and chat-template digests: format only (no derived digest covers them).
  for (const auto& [ptr, val] : m.input_digests) CheckDigestFormat(&v, ptr, val);
  bool prompt_sha_ok =
      CheckDigestFormat(&v, "/input_identity/prompt_token_ids_sha256", m.prompt_sha);
  bool side_ok = CheckDigestFormat(&v, "/input_identity/input_side_data_sha256", m.side_sha);
  bool salt_ok = CheckDigestFormat(&v, "/input_identity/cache_isolation_salt_sha256", m.salt_sha);
  bool abi_decl_ok = CheckDigestFormat(&v, "/digests/cache_abi_sha256", m.abi_sha);
  bool prefix_decl_ok = CheckDigestFormat(&v, "/digests/prefix_identity_sha256", m.prefix_sha);
  bool snap_decl_ok = CheckDigestFormat(&v, "/digests/snapshot_sha256", m.snapshot_sha);

  bool schema_ok = CheckExtentsAndWidths(m, &v);
  if (schema_ok) {
    const KvShardLayout shard{m.kv_local, m.kv_total,  m.tp_size,
                              m.tp_rank,  m.kv_offset, m.kv_replication};
    if (!KvShardLayoutHolds(shard)) {
      Add(&v, ErrorCode::MANIFEST_SHARD_MISMATCH, "/cache_schema/kv_heads_per_rank",
          KvShardLayoutExpectation(shard, "kv_heads_per_rank", "num_kv_heads_total"));
      schema_ok = false;
    }
    if (m.q_heads % m.kv_total != 0) {
      Add(&v, ErrorCode::MANIFEST_HEAD_GEOMETRY_INVALID, "/cache_schema/num_query_heads",
          "num_query_heads (" + std::to_string(m.q_heads) + ") must be a multiple of num_kv_heads_total (" +
              std::to_string(m.kv_total) + ")");
      schema_ok = false;
    }
  }

  // 3. Digests.
  if (m.prompt_ids->size() != m.prompt_count)
    Add(&v, ErrorCode::MANIFEST_PROMPT_COUNT_MISMATCH, "/input_identity/prompt_token_count",
        "prompt_token_count is " + std::to_string(m.prompt_count) + " but prompt_token_ids has " +
            std::to_string(m.prompt_ids->size()) + " ids");
  if (prompt_sha_ok)
    CheckDigest(&v, ErrorCode::MANIFEST_PROMPT_DIGEST_MISMATCH, "/input_identity/prompt_token_ids_sha256",
                m.prompt_sha, PromptTokenIdsSha256(*m.prompt_ids), "SHA256(JCS(prompt_token_ids))");
  // A stale ABI digest is the root cause of what a changed ABI member sizes or places: the
  // analytical ledger's B_token and the origin the positions are measured from are not judged
  // against the members the digest does not cover (probe 94: num_cache_layers 2 -> 3 also
  // raised three MANIFEST_LEDGER_DRIFT, position_origin 0 -> 1 a position gap and a visibility
  // code). What the ABI does not size or place is judged as ever (probe 95).
  bool abi_stale = false;
  if (abi_decl_ok && artifact_ok && schema_ok) {
    const size_t before_abi = v.size();
    CheckDigest(&v, ErrorCode::MANIFEST_ABI_DIGEST_MISMATCH, "/digests/cache_abi_sha256", m.abi_sha,
                CacheAbiSha256(*m.artifact, *m.schema, *m.position), "the cache ABI digest");
    abi_stale = v.size() != before_abi;
  }
  if (prefix_decl_ok && abi_decl_ok && prompt_sha_ok && side_ok && salt_ok)
    CheckDigest(&v, ErrorCode::MANIFEST_PREFIX_DIGEST_MISMATCH, "/digests/prefix_identity_sha256",
                m.prefix_sha, PrefixIdentitySha256(m.abi_sha, m.prompt_sha, m.side_sha, m.salt_sha),
                "the prefix identity digest");

  // 4. Semantic state predicates.
  size_t before_state = v.size();
  if (m.committed > m.logical)
    Add(&v, ErrorCode::MANIFEST_COMMIT_EXCEEDS_LOGICAL, "/state_snapshot/committed_cache_length",
        "committed_cache_length " + std::to_string(m.committed) + " exceeds logical_token_count " +
            std::to_string(m.logical));
  // The logical sequence is the prompt plus the outputs so far: never shorter than the prompt,
  // never beyond the request's limits (probe 36: logical 3 under a prompt of 4, and 40 with
  // max_context 16, passed).
  // (Judged only where the committed state, the limits and the prompt count are themselves
  // consistent: one root cause, one code.)
  const bool limits_ok = !(m.max_context > m.max_position_embeddings ||
                           m.max_context < m.prompt_count || m.max_context < m.committed);
  const bool judged =
      m.committed <= m.logical && limits_ok && m.prompt_ids->size() == m.prompt_count;
  const bool logical_ok = judged && m.logical >= m.prompt_count &&
                          !(m.logical - m.prompt_count > m.max_new || m.logical > m.max_context);
  if (judged && m.logical < m.prompt_count)
    Add(&v, ErrorCode::MANIFEST_LOGICAL_COUNT_INVALID, "/state_snapshot/logical_token_count",
        "logical_token_count " + std::to_string(m.logical) + " is below prompt_token_count " +
            std::to_string(m.prompt_count) + " (the logical sequence starts with the prompt)");
  else if (judged && (m.logical - m.prompt_count > m.max_new || m.logical > m.max_context))
    Add(&v, ErrorCode::MANIFEST_LOGICAL_COUNT_INVALID, "/state_snapshot/logical_token_count",
        "logical_token_count " + std::to_string(m.logical) +
            " exceeds what the request admits: " + "prompt " + std::to_string(m.prompt_count) +
            " + max_new_tokens " + std::to_string(m.max_new) + ", and max_context_tokens " +
            std::to_string(m.max_context));
  // The phase names a point of the request snapshot's lifecycle (M5.1 0x01 "Versioned
  // Transactions And Lifecycle Operations"; 0x07's synthetic lifecycle: allocate s0 O=0 K=0 NEW,
  // release s3 O=0 K=0 RELEASED): NEW is the allocation's snapshot, before any publication or
  // output (generation 0, no committed rows, the logical sequence is the prompt); RELEASED owns
  // no logical payload (no committed rows). (Since 2026-12-05, probe 36: NEW with committed rows
  // passed.) NEW is judged where the logical count is itself consistent: one root cause, one code.
  if (m.phase == "NEW" && logical_ok &&
      (m.generation != 0 || m.committed != 0 || m.logical != m.prompt_count))
    Add(&v, ErrorCode::MANIFEST_PHASE_STATE_MISMATCH, "/state_snapshot/phase",
        "phase NEW is the allocation's snapshot (generation 0, committed_cache_length 0, "
        "logical_token_count = prompt_token_count " +
            std::to_string(m.prompt_count) + "); this state has generation " +
            std::to_string(m.generation) + ", committed_cache_length " +
            std::to_string(m.committed) + ", logical_token_count " + std::to_string(m.logical));
  else if (m.phase == "RELEASED" && m.committed != 0)
    Add(&v, ErrorCode::MANIFEST_PHASE_STATE_MISMATCH, "/state_snapshot/phase",
        "phase RELEASED owns no logical payload (committed_cache_length 0); this state commits " +
            std::to_string(m.committed) + " rows");
  // Under a stale ABI digest, positions that all agree with another origin (next position minus
  // committed length) are measured from that one: the declared origin is the member that moved.
  auto positions_fit = [&](uint64_t origin) {
    return m.next_pos == origin + m.committed && m.vis_start >= origin &&
           m.vis_end <= origin + m.committed && m.vis_start <= m.vis_end;
  };
  const uint64_t origin =
      abi_stale && m.next_pos >= m.committed && positions_fit(m.next_pos - m.committed)
          ? m.next_pos - m.committed
          : m.origin;
  if (m.next_pos != origin + m.committed)
    Add(&v, ErrorCode::MANIFEST_POSITION_GAP, "/state_snapshot/next_cache_position",
        "expected next_cache_position = position_origin + committed_cache_length = " +
            std::to_string(origin + m.committed) + ", got " + std::to_string(m.next_pos));
  if (m.vis_start < origin || m.vis_end > origin + m.committed || m.vis_start > m.vis_end)
    Add(&v, ErrorCode::MANIFEST_VISIBILITY_BEYOND_COMMIT, "/state_snapshot/visible_positions",
        "visible positions [" + std::to_string(m.vis_start) + ", " + std::to_string(m.vis_end) +
            ")" + (m.vis_start > m.vis_end ? " (start after end)" : "") +
            " must lie within the committed interval [" + std::to_string(origin) + ", " +
            std::to_string(origin + m.committed) + ")");
  if (m.reserved < m.committed)
    Add(&v, ErrorCode::MANIFEST_RESERVATION_BELOW_COMMIT, "/state_snapshot/reserved_token_capacity",
        "reserved_token_capacity " + std::to_string(m.reserved) + " is below committed length " +
            std::to_string(m.committed));
  if (m.max_context > m.max_position_embeddings || m.max_context < m.prompt_count ||
      m.max_context < m.committed)
    Add(&v, ErrorCode::MANIFEST_LIMITS_IMPOSSIBLE, "/request_policy/max_context_tokens",
        "max_context_tokens " + std::to_string(m.max_context) +
            " must be <= max_position_embeddings (" + std::to_string(m.max_position_embeddings) +
            ") and hold the prompt (" + std::to_string(m.prompt_count) + ") and committed state (" +
            std::to_string(m.committed) + ")");
  bool state_ok = v.size() == before_state;
  if (state_ok && snap_decl_ok && abi_decl_ok)
    CheckDigest(&v, ErrorCode::MANIFEST_SNAPSHOT_DIGEST_MISMATCH, "/digests/snapshot_sha256",
                m.snapshot_sha, SnapshotSha256(doc), "the snapshot digest");

  // 5. Residency predicates (a partition observation, not semantic state).
  for (const auto& [tier, bytes] : m.reclaimable) {
    std::string ptr = "/state_snapshot/reclaimable_bytes/" + JsonPointerEscape(tier);
    auto it = m.resident.find(tier);
    if (it == m.resident.end())
      Add(&v, ErrorCode::MANIFEST_TIER_UNDECLARED, ptr,
          "tier " + base::QuoteClipped(tier) + " is not declared in resident_bytes");
    else if (bytes > it->second)
      Add(&v, ErrorCode::MANIFEST_RECLAIMABLE_EXCEEDS_RESIDENT, ptr,
          "reclaimable " + std::to_string(bytes) + " B exceeds resident " +
              std::to_string(it->second) + " B in tier " + base::QuoteClipped(tier));
  }

  // 6. Analytical ledger.
  // (Under a stale ABI digest the declared B_token stands for the geometry's: the byte totals
  // are judged against it, B_token itself is not.)
  if (schema_ok && state_ok) {
    auto bpt = abi_stale
                   ? StatusOr<uint64_t>(m.ledger_bpt)
                   : BytesPerToken({m.layers, m.kv_local, m.head_dim, m.kdt.bytes, m.vdt.bytes});
    if (!bpt.ok()) {
      Add(&v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/cache_schema", bpt.status().message());
    } else {
      auto committed = CheckedMul(m.committed, *bpt);
      auto reserved = CheckedMul(m.reserved, *bpt);
      if (!committed || !reserved) {
        Add(&v, ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "/state_snapshot",
            "T * B_token overflows 64 bits");
      } else {
        auto check = [&](const char* key, uint64_t declared, uint64_t want, const char* formula) {
          if (declared != want)
            Add(&v, ErrorCode::MANIFEST_LEDGER_DRIFT, std::string("/analytical_ledger/") + key,
                std::string(formula) + " = " + std::to_string(want) + ", manifest declares " +
                    std::to_string(declared));
        };
        if (!abi_stale)
          check("bytes_per_token", m.ledger_bpt, *bpt, "L_cache * H_kv_local * d_h * (b_K + b_V)");
        check("committed_logical_bytes", m.ledger_committed, *committed, "T_committed * B_token");
        check("reserved_nominal_bytes", m.ledger_reserved, *reserved, "T_reserved * B_token");
      }
    }
  }
  return v;
}

Status SealManifest(Json& doc) {
  Violations v;
  Manifest m;
  auto refuse = [](const Violation& x) {
    const Violation f = ForReport(x);
    return ViolationStatus(f.code, "cannot seal: " + f.pointer + ": " + f.message);
  };
  if (!ReadManifest(doc, &m, &v)) return refuse(v.front());
  // A zero extent or width is refused with validate's code (probe 98: it was
  // INPUT_ARITHMETIC_OVERFLOW, from B_token's product).
  if (Violations extents; !CheckExtentsAndWidths(m, &extents)) return refuse(extents.front());
  auto& ii = doc["input_identity"];
  ii["prompt_token_count"] = ii["prompt_token_ids"].size();
  KVC_ASSIGN_OR_RETURN(std::string prompt_sha, PromptTokenIdsSha256(ii["prompt_token_ids"]));
  ii["prompt_token_ids_sha256"] = prompt_sha;
  KVC_ASSIGN_OR_RETURN(std::string abi, CacheAbiSha256(doc["artifact_identity"], doc["cache_schema"],
                                                       doc["position_contract"]));
  doc["digests"]["cache_abi_sha256"] = abi;
  KVC_ASSIGN_OR_RETURN(
      std::string prefix,
      PrefixIdentitySha256(abi, prompt_sha, ii["input_side_data_sha256"].get<std::string>(),
                           ii["cache_isolation_salt_sha256"].get<std::string>()));
  doc["digests"]["prefix_identity_sha256"] = prefix;
  KVC_ASSIGN_OR_RETURN(std::string snap, SnapshotSha256(doc));
  doc["digests"]["snapshot_sha256"] = snap;
  // The ledger's products are judged as validate judges them: the member and its code
  // (probe 49: "OutOfRange: L * H_kv * d_h * (b_K + b_V) overflows 64 bits", naming nothing).
  auto bpt = BytesPerToken({m.layers, m.kv_local, m.head_dim, m.kdt.bytes, m.vdt.bytes});
  if (!bpt.ok())
    return ViolationStatus(ErrorCode::INPUT_ARITHMETIC_OVERFLOW,
                           "cannot seal: /cache_schema: " + bpt.status().message());
  auto committed = CheckedMul(m.committed, *bpt);
  auto reserved = CheckedMul(m.reserved, *bpt);
  if (!committed || !reserved)
    return ViolationStatus(ErrorCode::INPUT_ARITHMETIC_OVERFLOW,
                           std::string("cannot seal: /state_snapshot/") +
                               (!committed ? "committed_cache_length" : "reserved_token_capacity") +
                               ": tokens x " + std::to_string(*bpt) + " B/token overflows 64 bits");
  doc["analytical_ledger"] = {{"bytes_per_token", *bpt},
                              {"committed_logical_bytes", *committed},
                              {"reserved_nominal_bytes", *reserved}};
  return Status();
}

}  // namespace kvc
