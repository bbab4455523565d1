// The model-side identity a K/V cache is only valid for, as one schema rule shared by M5.1's
// request/cache manifest (Loop 2 owns it) and M5.6's handoff manifest (0x01A's
// "checkpoint/tokenizer/adapter/position/mask identity").
//
// artifact_identity: the checkpoint (model_artifact_sha256, model_config_sha256),
//   max_position_embeddings >= 1, adapter_set [{adapter_id, sha256}] (a set: ascending
//   adapter_id, each once) and weight_transforms [{name, sha256}] (a sequence).
// position_contract: cache_position_convention "absolute", position_origin, rope {type, theta,
//   scaling?}, visibility_policy "causal" (the attention mask).
// Both readers record INPUT_* violations only; digest formats are the caller's to judge, with
// its own document's code. Thread-safe; the returned views borrow nothing.
#ifndef KVCONFORM_REFERENCE_MANIFEST_MODEL_IDENTITY_H_
#define KVCONFORM_REFERENCE_MANIFEST_MODEL_IDENTITY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

struct ArtifactIdentityView {
  // Every identity digest the object names, as (JSON pointer, value), in document order.
  std::vector<std::pair<std::string, std::string>> digests;
  uint64_t max_position_embeddings = 0;
};

// Reads the artifact_identity object `obj` (nullptr: nothing to read; the caller recorded it
// missing) found at JSON pointer `pointer`.
ArtifactIdentityView ReadArtifactIdentity(const Json* obj, const std::string& pointer,
                                          Violations* v);

// Reads the position_contract object `obj` at `pointer`; returns its position_origin (0 when
// absent or malformed, which is recorded).
uint64_t ReadPositionContract(const Json* obj, const std::string& pointer, Violations* v);

// The tensor-parallel layout of one rank's K/V heads (M5.1 0x02, "the local cache shard"), one
// rule for the M5.1 manifest's parallel_shard and the M5.6 handoff manifest's partition.
// Partitioned once (replication 1): rank r owns heads [r * local, (r + 1) * local) and the ranks
// together own each head once (local * tp_size == total). Replicated (replication R >= 2, as
// when tp_size exceeds the K/V heads; vLLM's num_kv_head_replicas): each rank owns one head,
// head r / R, so R consecutive ranks hold copies of one head (tp_size == total * R). The copies
// are a second multiplicity, never part of the local head count.
struct KvShardLayout {
  uint64_t kv_heads_local = 0, kv_heads_total = 0, tp_size = 0, tp_rank = 0, kv_head_offset = 0;
  uint64_t replication = 1;
};
// True when `s` is one of those layouts (overflow-checked).
bool KvShardLayoutHolds(const KvShardLayout& s);
// What KvShardLayoutHolds expects of `s`, for a violation's message; `local_name` and
// `total_name` are the document's names for the local and total head counts.
std::string KvShardLayoutExpectation(const KvShardLayout& s, const std::string& local_name,
                                     const std::string& total_name);

// Reads a shard's optional kv_head_replication from `shard`: absent is 1 (then not hashed, so
// one contract has one digest), present is >= 2 (1 is INPUT_VALUE_OUT_OF_RANGE).
uint64_t ReadKvHeadReplication(FieldReader& shard);

// Records INPUT_VALUE_OUT_OF_RANGE at each integer of `value` (at `pointer` and below) outside
// +/-2^53: a hashed member must canonicalize (I-JSON), and is reported where it is.
void ReportNonIJsonIntegers(const Json& value, const std::string& pointer, Violations* v);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_MANIFEST_MODEL_IDENTITY_H_
