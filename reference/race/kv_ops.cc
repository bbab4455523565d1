// JSON encoding of KV race operations and results (one encoding for store, drivers and model).
#include "reference/race/kv_ops.h"

#include <algorithm>
#include <array>
#include <functional>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/errors/error_codes.h"

namespace kvc::race {

namespace {
constexpr std::array<std::string_view, 13> kNames = {
    "allocate", "read",     "begin_append", "stage_layer", "publish", "cancel_txn", "cancel_request",
    "fork",     "reorder",  "read_row",     "truncate",    "finish",  "release"};

StatusOr<std::string> Str(const Json& a, const char* k) {
  auto it = a.find(k);
  if (it == a.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    return InvalidArgument(std::string("args.") + k + ": expected a non-empty string");
  return it->get<std::string>();
}

StatusOr<uint64_t> U64(const Json& a, const char* k) {
  auto it = a.find(k);
  if (it == a.end() || !(it->is_number_unsigned() ||
                         (it->is_number_integer() && it->get<int64_t>() >= 0)))
    return InvalidArgument(std::string("args.") + k + ": expected a non-negative integer");
  return it->get<uint64_t>();
}
}  // namespace

std::string_view KvOpName(KvOpKind k) { return kNames[static_cast<size_t>(k)]; }

std::optional<KvOpKind> ParseKvOpName(std::string_view s) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (kNames[i] == s) return static_cast<KvOpKind>(i);
  return std::nullopt;
}

Json KvOpArgs(const KvOp& op) {
  Json a = Json::object();
  switch (op.kind) {
    case KvOpKind::kAllocate:
    case KvOpKind::kRead:
    case KvOpKind::kCancelRequest:
    case KvOpKind::kFinish:
    case KvOpKind::kRelease:
      a["handle"] = op.handle;
      break;
    case KvOpKind::kBeginAppend:
      a = {{"txn", op.txn},
           {"key", op.key},
           {"handle", op.handle},
           {"base_generation", op.base_generation},
           {"base_digest", lifecycle::DigestHex(op.base_digest)},
           {"start", op.start},
           {"count", op.count}};
      break;
    case KvOpKind::kStageLayer:
      a = {{"txn", op.txn}, {"layer", op.layer}, {"start", op.start}, {"count", op.count}};
      break;
    case KvOpKind::kPublish:
    case KvOpKind::kCancelTxn:
      a["txn"] = op.txn;
      break;
    case KvOpKind::kFork:
      a = {{"handle", op.handle}, {"prefix", op.length}, {"children", op.children},
           {"group", op.group}};
      break;
    case KvOpKind::kReorder:
      a = {{"group", op.group}, {"perm", op.perm}};
      break;
    case KvOpKind::kReadRow:
      a = {{"group", op.group}, {"row", op.row}};
      break;
    case KvOpKind::kTruncate:
      a = {{"handle", op.handle}, {"length", op.length}};
      break;
  }
  return a;
}

StatusOr<KvOp> ParseKvOp(std::string_view name, const Json& a) {
  auto kind = ParseKvOpName(name);
  if (!kind) return InvalidArgument("op: unknown operation \"" + std::string(name) + "\"");
  if (!a.is_object()) return InvalidArgument("args: expected an object");
  KvOp op;
  op.kind = *kind;
  switch (op.kind) {
    case KvOpKind::kAllocate:
    case KvOpKind::kRead:
    case KvOpKind::kCancelRequest:
    case KvOpKind::kFinish:
    case KvOpKind::kRelease: {
      KVC_ASSIGN_OR_RETURN(op.handle, Str(a, "handle"));
      break;
    }
    case KvOpKind::kBeginAppend: {
      KVC_ASSIGN_OR_RETURN(op.txn, Str(a, "txn"));
      KVC_ASSIGN_OR_RETURN(op.key, Str(a, "key"));
      KVC_ASSIGN_OR_RETURN(op.handle, Str(a, "handle"));
      KVC_ASSIGN_OR_RETURN(op.base_generation, U64(a, "base_generation"));
      KVC_ASSIGN_OR_RETURN(std::string d, Str(a, "base_digest"));
      auto digest = lifecycle::ParseDigestHex(d);
      if (!digest) return InvalidArgument("args.base_digest: expected 16 lowercase hex digits");
      op.base_digest = *digest;
      KVC_ASSIGN_OR_RETURN(op.start, U64(a, "start"));
      KVC_ASSIGN_OR_RETURN(op.count, U64(a, "count"));
      break;
    }
    case KvOpKind::kStageLayer: {
      KVC_ASSIGN_OR_RETURN(op.txn, Str(a, "txn"));
      KVC_ASSIGN_OR_RETURN(uint64_t layer, U64(a, "layer"));
      if (layer > UINT32_MAX) return InvalidArgument("args.layer: expected a value < 2^32");
      op.layer = static_cast<uint32_t>(layer);
      KVC_ASSIGN_OR_RETURN(op.start, U64(a, "start"));
      KVC_ASSIGN_OR_RETURN(op.count, U64(a, "count"));
      break;
    }
    case KvOpKind::kPublish:
    case KvOpKind::kCancelTxn: {
      KVC_ASSIGN_OR_RETURN(op.txn, Str(a, "txn"));
      break;
    }
    case KvOpKind::kFork: {
      KVC_ASSIGN_OR_RETURN(op.handle, Str(a, "handle"));
      KVC_ASSIGN_OR_RETURN(op.length, U64(a, "prefix"));
      KVC_ASSIGN_OR_RETURN(op.group, Str(a, "group"));
      auto it = a.find("children");
      if (it == a.end() || !it->is_array() || it->empty())
        return InvalidArgument("args.children: expected a non-empty array of handle ids");
      for (const auto& c : *it) {
        if (!c.is_string() || c.get_ref<const std::string&>().empty())
          return InvalidArgument("args.children: expected non-empty strings");
        op.children.push_back(c.get<std::string>());
      }
      break;
    }
    case KvOpKind::kReorder: {
      KVC_ASSIGN_OR_RETURN(op.group, Str(a, "group"));
      auto it = a.find("perm");
      if (it == a.end() || !it->is_array())
        return InvalidArgument("args.perm: expected an array of row indices");
      for (const auto& p : *it) {
        if (!(p.is_number_unsigned() || (p.is_number_integer() && p.get<int64_t>() >= 0)))
          return InvalidArgument("args.perm: expected non-negative integers");
        op.perm.push_back(p.get<uint64_t>());
      }
      break;
    }
    case KvOpKind::kReadRow: {
      KVC_ASSIGN_OR_RETURN(op.group, Str(a, "group"));
      KVC_ASSIGN_OR_RETURN(op.row, U64(a, "row"));
      break;
    }
    case KvOpKind::kTruncate: {
      KVC_ASSIGN_OR_RETURN(op.handle, Str(a, "handle"));
      KVC_ASSIGN_OR_RETURN(op.length, U64(a, "length"));
      break;
    }
  }
  // Exactly the op's members: an unknown one (a runtime's own field, say) would be ignored by
  // the model, so it is refused (since 2026-12-06, probe 79: args.extra passed). KvOpArgs
  // writes the members this reader takes.
  const Json known = KvOpArgs(op);
  for (const auto& [member, value] : a.items()) {
    if (known.contains(member)) continue;
    std::string expected;
    for (const auto& [k, v] : known.items()) expected += (expected.empty() ? "" : ", ") + k;
    return InvalidArgument("args." + member + ": unknown member of " + std::string(name) +
                           " (its members: " + expected + ")");
  }
  return op;
}

Json SnapshotJson(const lifecycle::Snapshot& s) {
  return {{"handle", s.handle_id},
          {"generation", s.generation},
          {"version", s.version},
          {"length", s.committed_length},
          {"phase", lifecycle::PhaseName(s.phase)},
          {"digest", lifecycle::DigestHex(s.digest)}};
}

Json ReceiptJson(const lifecycle::PublishReceipt& r) {
  return {{"handle", r.handle_id},
          {"generation", r.result.generation},
          {"length", r.result.committed_length},
          {"digest", lifecycle::DigestHex(r.result.digest)},
          {"replayed", r.replayed}};
}

Json RowJson(const lifecycle::LiveSequenceRow& r) {
  return {{"token", r.token_state},
          {"handle", r.cache_handle},
          {"position", r.next_position},
          {"sampler", r.sampler_state}};
}

Json ErrorJson(const Status& s) {
  if (s.error() != ErrorCode::kNone) return {{"code", ErrorCodeName(s.error())}};
  return {{"code", "STATUS_" + std::string(StatusCodeName(s.code()))}};
}

namespace {

bool IsUint(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

bool IsDigestHex(const Json& v) {
  if (!v.is_string()) return false;
  return base::IsLowerHex(v.get_ref<const std::string&>(), 16);
}

// The members of an object, each with a check of its value: "" when `j` has exactly them.
using MemberCheck = std::pair<const char*, std::function<bool(const Json&)>>;
std::string ExactMembers(const Json& j, const std::string& where,
                         const std::vector<MemberCheck>& members) {
  if (!j.is_object()) return where + ": expected an object, got " + std::string(j.type_name());
  for (const auto& [name, check] : members) {
    auto it = j.find(name);
    if (it == j.end()) return where + ": missing member \"" + name + "\"";
    if (!check(*it))
      return where + "." + name + ": unexpected value " + base::ClippedJsonText(it->dump());
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const auto& m : members) known = known || it.key() == m.first;
    if (!known) return where + ": unknown member \"" + it.key() + "\"";
  }
  return "";
}

std::vector<MemberCheck> SnapshotMembers() {
  auto str = [](const Json& v) { return v.is_string(); };
  auto phase = [](const Json& v) {
    return v.is_string() && lifecycle::ParsePhase(v.get<std::string>()).has_value();
  };
  return {{"handle", str},    {"generation", IsUint}, {"version", IsUint},
          {"length", IsUint}, {"phase", phase},       {"digest", IsDigestHex}};
}

bool IsTxnState(const Json& v) {
  if (!v.is_string()) return false;
  for (auto s :
       {lifecycle::TxnState::kOpen, lifecycle::TxnState::kPrepared, lifecycle::TxnState::kPublished,
        lifecycle::TxnState::kAborted, lifecycle::TxnState::kRejected})
    if (lifecycle::TxnStateName(s) == v.get<std::string>()) return true;
  return false;
}

}  // namespace

std::string ResultShapeError(KvOpKind kind, bool ok, const Json& result) {
  if (!ok) {
    return ExactMembers(result, "result",
                        {{"code", [](const Json& v) {
                            if (!v.is_string()) return false;
                            const std::string& c = v.get_ref<const std::string&>();
                            return ErrorCodeFromName(c).has_value() || c.starts_with("STATUS_");
                          }}});
  }
  auto str = [](const Json& v) { return v.is_string(); };
  switch (kind) {
    case KvOpKind::kAllocate:
    case KvOpKind::kCancelRequest:
    case KvOpKind::kTruncate:
    case KvOpKind::kFinish:
    case KvOpKind::kRelease:
      return ExactMembers(result, "result", SnapshotMembers());
    case KvOpKind::kRead: {
      auto m = SnapshotMembers();
      m.emplace_back("layers", [](const Json& v) {
        return v.is_array() && std::all_of(v.begin(), v.end(), IsUint);
      });
      return ExactMembers(result, "result", m);
    }
    case KvOpKind::kBeginAppend:
      return ExactMembers(result, "result", {{"txn", str}, {"state", IsTxnState}});
    case KvOpKind::kStageLayer:
      return ExactMembers(result, "result", {{"state", IsTxnState}});
    case KvOpKind::kPublish:
      return ExactMembers(result, "result",
                          {{"handle", str},
                           {"generation", IsUint},
                           {"length", IsUint},
                           {"digest", IsDigestHex},
                           {"replayed", [](const Json& v) { return v.is_boolean(); }}});
    case KvOpKind::kCancelTxn:
    case KvOpKind::kReorder:
      return ExactMembers(result, "result", {});
    case KvOpKind::kFork: {
      std::string e = ExactMembers(result, "result",
                                   {{"children", [](const Json& v) { return v.is_array(); }}});
      if (!e.empty()) return e;
      const Json& kids = result["children"];
      for (size_t i = 0; i < kids.size(); ++i) {
        e = ExactMembers(kids[i], "result.children[" + std::to_string(i) + "]", SnapshotMembers());
        if (!e.empty()) return e;
      }
      return "";
    }
    case KvOpKind::kReadRow:
      return ExactMembers(
          result, "result",
          {{"token", str}, {"handle", str}, {"position", IsUint}, {"sampler", str}});
  }
  return "result: unknown operation";
}

std::vector<std::string> NamedEntities(const KvOp& op) {
  std::vector<std::string> out;
  if (!op.handle.empty()) out.push_back("handle:" + op.handle);
  if (!op.txn.empty()) out.push_back("txn:" + op.txn);
  for (const auto& c : op.children) out.push_back("handle:" + c);
  if (!op.group.empty()) out.push_back("group:" + op.group);
  return out;
}

std::vector<lifecycle::LiveSequenceRow> ForkGroupRows(const KvOp& fork) {
  std::vector<lifecycle::LiveSequenceRow> rows;
  for (const auto& c : fork.children)
    rows.push_back({"tok:" + c, c, fork.length, "rng:" + c});
  return rows;
}

lifecycle::BeginAppendRequest BeginRequest(const KvOp& op, const lifecycle::CacheAbi& abi) {
  lifecycle::BeginAppendRequest r;
  r.txn_id = op.txn;
  r.idempotency_key = op.key;
  r.handle_id = op.handle;
  r.base = {op.base_generation, op.base_digest};
  r.cache_abi = abi.id;
  r.interval = {op.start, op.count};
  r.binding.cache_position_start = op.start;
  r.binding.cache_position_count = op.count;
  r.binding.mask_key_length = CheckedAdd(op.start, op.count).value_or(0);
  r.binding.position_stage = abi.position_stage;
  return r;
}

Status GroupError(std::string_view what) {
  return ViolationStatus(ErrorCode::RACE_GROUP_UNKNOWN, std::string(what));
}

}  // namespace kvc::race
