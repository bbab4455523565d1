// The operations of a race program on the KV lifecycle object, and their JSON encoding.
//
// One KvOp is one call a worker makes on a handle lineage: allocate, read, begin_append,
// stage_layer, publish, cancel_txn, cancel_request, fork, reorder, read_row, truncate, finish,
// release. Histories, the driver protocol, the in-process store adapter and the sequential model
// all use this one encoding (docs/history-format.md, docs/driver-protocol.md), so arguments and
// results mean the same thing everywhere. Values only; thread safety: none needed.
#ifndef KVCONFORM_REFERENCE_RACE_KV_OPS_H_
#define KVCONFORM_REFERENCE_RACE_KV_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "reference/lifecycle/reorder/reorder.h"
#include "reference/race/history.h"

namespace kvc::race {

enum class KvOpKind : uint8_t {
  kAllocate,
  kRead,
  kBeginAppend,
  kStageLayer,
  kPublish,
  kCancelTxn,
  kCancelRequest,
  kFork,
  kReorder,
  kReadRow,
  kTruncate,
  kFinish,
  kRelease,
};
std::string_view KvOpName(KvOpKind k);
std::optional<KvOpKind> ParseKvOpName(std::string_view s);

struct KvOp {
  KvOpKind kind = KvOpKind::kRead;
  std::string handle;                 // allocate, read, begin_append, cancel_request, fork,
                                      // truncate, finish, release
  std::string txn;                    // begin_append, stage_layer, publish, cancel_txn
  std::string key;                    // begin_append: idempotency key
  uint64_t base_generation = 0;       // begin_append
  uint64_t base_digest = 0;           // begin_append (16 hex digits in JSON)
  uint64_t start = 0, count = 0;      // begin_append, stage_layer: interval [start, start+count)
  uint32_t layer = 0;                 // stage_layer
  uint64_t length = 0;                // truncate: new length; fork: prefix length
  std::vector<std::string> children;  // fork
  std::string group;                  // fork (the children's beam group), reorder, read_row
  std::vector<uint64_t> perm;         // reorder: parent index
  uint64_t row = 0;                   // read_row
};

// JSON args <-> KvOp. ParseKvOp reports "field: what was expected" as kInvalidArgument.
Json KvOpArgs(const KvOp& op);
StatusOr<KvOp> ParseKvOp(std::string_view name, const Json& args);

// Result encoding shared by the store, drivers and the model.
//  snapshot: {"handle","generation","version","length","phase","digest"}
//  read:     snapshot + {"layers": [per-layer committed length, ...]}
//  begin_append: {"txn","state"}; stage_layer: {"state"}; publish: {"handle","generation",
//  "length","digest","replayed"}; cancel_txn/reorder: {}; fork: {"children": [snapshot...]};
//  read_row: {"token","handle","position","sampler"}; errors: {"code": REGISTRY_NAME}.
Json SnapshotJson(const lifecycle::Snapshot& s);
Json ReceiptJson(const lifecycle::PublishReceipt& r);
Json RowJson(const lifecycle::LiveSequenceRow& r);
// {"code": ...}: the registry name of a contract violation, else "STATUS_<kind>".
Json ErrorJson(const Status& s);

// What differs between `result` and the form of `kind`'s result (above): "" when `ok` and
// `result` has exactly the members of kind's ok result with their types (unsigned integers,
// a phase and a transaction state by name, a digest of 16 lowercase hex digits), or when !ok
// and `result` is exactly {"code": a registry name or STATUS_*}. Shared by the history
// validator and the driver client, so a history and a driver's answer are read alike.
std::string ResultShapeError(KvOpKind kind, bool ok, const Json& result);

// The handles, transactions and beam groups `op` names, as "handle:ID", "txn:ID" and
// "group:ID" (a fork: its parent, its children and its group). A lineage's partition is the
// root handle's id: every op naming one of them must carry that partition.
std::vector<std::string> NamedEntities(const KvOp& op);

// The rows a fork creates for its beam group (row i couples child i's token, cache, position
// and sampler state). Used by the store and the model alike.
std::vector<lifecycle::LiveSequenceRow> ForkGroupRows(const KvOp& fork);

// The request a begin_append op stands for: binding derived from the interval (cache_position
// [start, start+count), mask length start+count, the ABI's position stage).
lifecycle::BeginAppendRequest BeginRequest(const KvOp& op, const lifecycle::CacheAbi& abi);

// Code of the race domain for an unknown beam group or row.
Status GroupError(std::string_view what);

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_KV_OPS_H_
