// The race history document kind: schema and consistency validation (docs/history-format.md).
#include <algorithm>
#include <map>
#include <set>

#include "reference/errors/error_codes.h"
#include "reference/race/history.h"
#include "reference/race/kv_model.h"
#include "reference/race/kv_ops.h"

namespace kvc::race {

namespace {

struct LineOp {  // what the cross-line checks need of a well-formed operation line
  uint32_t line;
  uint32_t thread;
  int64_t invoke_ns;
  std::optional<int64_t> return_ns;
};

std::string LinePtr(size_t line) { return "/" + std::to_string(line - 1); }

class Validator {
 public:
  explicit Validator(std::string_view source) : source_(source) {}

  void Add(ErrorCode code, size_t line, std::string pointer, const std::string& what) {
    out_.push_back({code, std::move(pointer), source_ + ":" + std::to_string(line) + ": " + what,
                    static_cast<uint32_t>(line)});
  }

  void Header(const Json& j, size_t line) {
    auto kind = j.find("kind");
    if (kind == j.end() || !kind->is_string() || *kind != kHistoryKind) {
      Add(ErrorCode::RACE_HISTORY_HEADER_INVALID, line, LinePtr(line) + "/kind",
          "kind: expected \"" + std::string(kHistoryKind) + "\" on the header line");
      return;
    }
    auto model = KvModel::FromHeader(j);
    if (!model.ok())
      Add(ErrorCode::RACE_HISTORY_HEADER_INVALID, line, LinePtr(line), model.status().message());
  }

  void End(const Json& j, size_t line, bool terminated) {
    have_end_ = true;
    Violations schema;
    FieldReader r(&j, LinePtr(line), &schema);
    auto end = r.Bool("end");
    auto ops = r.Uint("ops", 0, UINT64_MAX);
    r.RejectUnknownFields();
    if (end && !*end)
      schema.push_back(
          {ErrorCode::INPUT_VALUE_INVALID, LinePtr(line) + "/end", "end: expected true"});
    if (!schema.empty()) return Take(schema, line);
    if (*ops != ops_read_ && *ops != ops_read_ + blank_lines_)
      Add(ErrorCode::RACE_HISTORY_TRUNCATED, line, LinePtr(line) + "/ops",
          "ops: the end line declares " + std::to_string(*ops) + " operations but " +
              std::to_string(ops_read_) + " were read (lost events?)");
    else if (!terminated)
      Add(ErrorCode::RACE_HISTORY_TRUNCATED, line, LinePtr(line),
          "the end line is not newline-terminated");
  }

  void Op(const Json& j, size_t line) {
    ++ops_read_;
    const std::string p = LinePtr(line);
    Violations schema;
    FieldReader r(&j, p, &schema);
    auto id = r.Uint("id", 0, UINT64_MAX);
    auto thread = r.Uint("thread", 0, UINT32_MAX);
    auto partition = r.String("partition");
    auto op = r.String("op");
    const Json* args = r.Object("args");
    auto invoke = r.Uint("invoke_ns", 0, INT64_MAX);
    auto outcome = r.Enum("outcome", {"ok", "error", "unknown"});
    const Json* ret = r.Any("return_ns");
    const Json* res = r.Any("result");
    r.RejectUnknownFields();
    if (partition && partition->empty())
      schema.push_back({ErrorCode::INPUT_VALUE_INVALID, p + "/partition",
                        "partition: expected a non-empty string"});
    if (!schema.empty()) return Take(schema, line);

    if (!ids_.insert(*id).second) {
      Add(ErrorCode::RACE_HISTORY_ID_DUPLICATE, line, p + "/id",
          "id: duplicate operation id " + std::to_string(*id));
      return;
    }
    auto call = ParseKvOp(*op, *args);
    if (!call.ok()) {
      Add(ErrorCode::RACE_HISTORY_OP_INVALID, line, p + (ParseKvOpName(*op) ? "/args" : "/op"),
          "op \"" + *op + "\": " + call.status().message());
      return;
    }
    // One partition per lineage (probe 34: a second allocation of h0 labelled "h0_again" was
    // searched as another lineage, so the allocation and a generation going back passed).
    // Every handle, transaction and group keeps the partition it was first named in; a handle
    // first named by its allocation starts the lineage named after it.
    for (const std::string& entity : NamedEntities(*call)) {
      auto it = partition_of_.find(entity);
      if (it == partition_of_.end() || it->second.first == *partition) continue;
      Add(ErrorCode::RACE_HISTORY_PARTITION_MISMATCH, line, p + "/partition",
          "partition: \"" + *partition + "\", but " + entity.substr(0, entity.find(':')) + " \"" +
              entity.substr(entity.find(':') + 1) + "\" is in partition \"" + it->second.first +
              "\" (line " + std::to_string(it->second.second) +
              "; a lineage's handles, transactions and groups share its root's partition)");
      return;
    }
    if (call->kind == KvOpKind::kAllocate && *partition != call->handle &&
        !partition_of_.count("handle:" + call->handle)) {
      Add(ErrorCode::RACE_HISTORY_PARTITION_MISMATCH, line, p + "/partition",
          "partition: an allocation of \"" + call->handle + "\" starts the lineage \"" +
              call->handle + "\", not \"" + *partition + "\"");
      return;
    }
    for (const std::string& entity : NamedEntities(*call))
      partition_of_.try_emplace(entity, *partition, line);
    LineOp lo{static_cast<uint32_t>(line), static_cast<uint32_t>(*thread),
              static_cast<int64_t>(*invoke), std::nullopt};
    if (*outcome == "unknown") {
      if (!ret->is_null() || !res->is_null()) {
        Add(ErrorCode::RACE_HISTORY_OUTCOME_INCONSISTENT, line,
            p + (ret->is_null() ? "/result" : "/return_ns"),
            "an unknown outcome has return_ns and result null (the call never returned)");
        return;
      }
      by_thread_[lo.thread].push_back(lo);
      return;
    }
    if (ret->is_null()) {
      Add(ErrorCode::RACE_HISTORY_OUTCOME_INCONSISTENT, line, p + "/return_ns",
          "return_ns: a known outcome (\"" + *outcome + "\") has a return time");
      return;
    }
    Violations typed;
    auto ret_ns = ReadUint(*ret, p + "/return_ns", &typed, 0, INT64_MAX);
    if (!res->is_object())
      typed.push_back({ErrorCode::INPUT_FIELD_TYPE, p + "/result",
                       "result: expected an object, got " + std::string(JsonTypeName(*res))});
    if (!typed.empty()) return Take(typed, line);
    if (*outcome == "error") {
      auto code = res->find("code");
      bool registered = code != res->end() && code->is_string() &&
                        (ErrorCodeFromName(code->get<std::string>()) ||
                         code->get<std::string>().starts_with("STATUS_"));
      if (!registered) {
        Add(ErrorCode::RACE_HISTORY_OUTCOME_INCONSISTENT, line, p + "/result/code",
            "result.code: an error outcome names its rejection's registry code");
        return;
      }
    }
    // The form of the result (probe 34: an unknown member, "generation": 0.0 and a digest
    // "XXXX" passed; a driver's answer is read by the same rule).
    if (std::string shape = ResultShapeError(call->kind, *outcome == "ok", *res); !shape.empty()) {
      Add(ErrorCode::RACE_HISTORY_RESULT_INVALID, line, p + "/result",
          shape + " (op \"" + *op + "\", outcome \"" + *outcome + "\"; docs/history-format.md)");
      return;
    }
    if (static_cast<int64_t>(*ret_ns) < lo.invoke_ns) {
      Add(ErrorCode::RACE_HISTORY_TIME_ORDER, line, p + "/return_ns",
          "return_ns: precedes invoke_ns (" + std::to_string(*ret_ns) + " < " +
              std::to_string(lo.invoke_ns) + ")");
      return;
    }
    lo.return_ns = static_cast<int64_t>(*ret_ns);
    by_thread_[lo.thread].push_back(lo);
  }

  // One clock per worker: a worker issues its next operation only after the previous one
  // returned (or was given up as unknown), so its known operations never overlap.
  void Threads() {
    for (auto& [thread, ops] : by_thread_) {
      std::stable_sort(ops.begin(), ops.end(),
                       [](const LineOp& a, const LineOp& b) { return a.invoke_ns < b.invoke_ns; });
      const LineOp* busy = nullptr;  // the known op returning last so far
      for (const LineOp& o : ops) {
        if (busy && o.invoke_ns < *busy->return_ns) {
          Add(ErrorCode::RACE_HISTORY_THREAD_OVERLAP, o.line, LinePtr(o.line) + "/invoke_ns",
              "invoke_ns: thread " + std::to_string(thread) + " invokes at " +
                  std::to_string(o.invoke_ns) + " while its operation on line " +
                  std::to_string(busy->line) + " runs until " + std::to_string(*busy->return_ns));
        }
        if (o.return_ns && (!busy || *o.return_ns > *busy->return_ns)) busy = &o;
      }
    }
  }

  // A parser's message "SOURCE:LINE:COLUMN: what" as "column COLUMN: what": Add names the
  // source and line (they were named twice, "h.jsonl:6: h.jsonl:6:1:7: ...", until 2026-12-07).
  std::string ParserWhy(const Status& s, size_t line) const {
    const std::string& m = s.message();
    const std::string at = source_ + ":" + std::to_string(line) + ":";
    return m.starts_with(at) ? "column " + m.substr(at.size()) : m;
  }

  void Take(Violations& v, size_t line) {
    for (auto& x : v) {
      x.message = source_ + ":" + std::to_string(line) + ": " + x.message;
      x.line = static_cast<uint32_t>(line);
      out_.push_back(std::move(x));
    }
  }

  // A malformed line between header and end line stands for one operation line (gating: the
  // end line's count then still matches and only the malformed line is reported).
  void Malformed() { ++ops_read_; }
  // An empty line may be a blank line inserted between operations or an operation line emptied:
  // the end line's count is matched either way (probe 34: an inserted empty line also raised
  // RACE_HISTORY_TRUNCATED).
  void Blank() { ++blank_lines_; }
  bool have_end() const { return have_end_; }
  Violations Finish() {
    Threads();
    std::stable_sort(out_.begin(), out_.end(),
                     [](const Violation& a, const Violation& b) { return a.line < b.line; });
    return std::move(out_);
  }

 private:
  std::string source_;
  Violations out_;
  bool have_end_ = false;
  uint64_t ops_read_ = 0;
  std::set<uint64_t> ids_;
  std::map<uint32_t, std::vector<LineOp>> by_thread_;
  // "handle:ID" / "txn:ID" / "group:ID" -> (partition, the line that first named it).
  std::map<std::string, std::pair<std::string, size_t>> partition_of_;
  uint64_t blank_lines_ = 0;  // empty lines between header and end line (see Blank)
};

}  // namespace

Violations ValidateHistoryJsonl(std::string_view text, std::string_view source) {
  Validator v(source);
  size_t pos = 0, line = 0;
  bool after_end = false;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool terminated = nl != std::string_view::npos;
    std::string_view s = text.substr(pos, terminated ? nl - pos : std::string_view::npos);
    pos = terminated ? nl + 1 : text.size();
    ++line;
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (after_end) {
      v.Add(ErrorCode::RACE_HISTORY_LINE_MALFORMED, line, LinePtr(line),
            "content after the end line");
      break;
    }
    if (s.empty()) {
      v.Add(ErrorCode::RACE_HISTORY_LINE_MALFORMED, line, LinePtr(line),
            "empty line (expected one JSON object per line)");
      if (line > 1) v.Blank();
      continue;
    }
    auto parsed = ParseJsonLineStrict(s, source, line);
    if (!parsed.ok()) {
      if (!terminated) {
        v.Add(ErrorCode::RACE_HISTORY_TRUNCATED, line, LinePtr(line),
              "the last line is cut off (" + v.ParserWhy(parsed.status(), line) + ")");
        return v.Finish();
      }
      v.Add(ErrorCode::RACE_HISTORY_LINE_MALFORMED, line, LinePtr(line),
            v.ParserWhy(parsed.status(), line));
      if (line > 1) v.Malformed();
      continue;
    }
    const Json& j = parsed->value;
    if (!j.is_object()) {
      v.Add(ErrorCode::RACE_HISTORY_LINE_MALFORMED, line, LinePtr(line),
            std::string("expected one JSON object, got ") + std::string(JsonTypeName(j)));
      if (line > 1) v.Malformed();
      continue;
    }
    if (line == 1) {
      v.Header(j, line);
    } else if (j.contains("end")) {
      v.End(j, line, terminated);
      after_end = true;
    } else {
      v.Op(j, line);
    }
  }
  if (line == 0) {
    v.Add(ErrorCode::RACE_HISTORY_TRUNCATED, 1, "", "empty history (expected a header line)");
  } else if (!v.have_end()) {
    v.Add(ErrorCode::RACE_HISTORY_TRUNCATED, line, "",
          "missing end line {\"end\": true, \"ops\": N}: the history is truncated");
  }
  return v.Finish();
}

}  // namespace kvc::race
