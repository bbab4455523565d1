// Recorded concurrent histories: JSON Lines reader/writer and the thread-safe recorder.
#include "reference/race/history.h"

#include <chrono>
#include <fstream>
#include <unordered_set>

namespace kvc::race {

std::string_view OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kOk: return "ok";
    case Outcome::kError: return "error";
    case Outcome::kUnknown: return "unknown";
  }
  return "unknown";
}

int64_t MonotonicNs() {
  static const auto origin = std::chrono::steady_clock::now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin)
      .count();
}

Json HistoryOpToJson(const HistoryOp& op) {
  Json j = {{"id", op.id},         {"thread", op.thread},       {"partition", op.partition},
            {"op", op.op},         {"args", op.args},           {"invoke_ns", op.invoke_ns},
            {"outcome", OutcomeName(op.outcome)}};
  j["return_ns"] = op.return_ns ? Json(*op.return_ns) : Json(nullptr);
  j["result"] = op.outcome == Outcome::kUnknown ? Json(nullptr) : op.result;
  return j;
}

std::string WriteHistoryJsonl(const History& h) {
  Json header = h.header;
  header["kind"] = kHistoryKind;
  std::string out = header.dump() + "\n";
  for (const auto& op : h.ops) out += HistoryOpToJson(op).dump() + "\n";
  out += Json{{"end", true}, {"ops", h.ops.size()}}.dump() + "\n";
  return out;
}

Status WriteHistoryFile(const History& h, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return IoError(path + ": cannot open for writing");
  f << WriteHistoryJsonl(h);
  f.close();
  if (!f) return IoError(path + ": write failed");
  return Status::Ok();
}

namespace {

Status LineError(std::string_view src, size_t line, std::string_view field, std::string_view what) {
  std::string m = std::string(src) + ":" + std::to_string(line) + ": ";
  if (!field.empty()) m += std::string(field) + ": ";
  return ParseError(m + std::string(what));
}

StatusOr<uint64_t> GetU64(const Json& j, const char* key, std::string_view src, size_t line) {
  auto it = j.find(key);
  if (it == j.end()) return LineError(src, line, key, "missing (expected a non-negative integer)");
  if (!it->is_number_unsigned() && !(it->is_number_integer() && it->get<int64_t>() >= 0))
    return LineError(src, line, key, "expected a non-negative integer, got " + it->dump());
  return it->get<uint64_t>();
}

StatusOr<std::string> GetString(const Json& j, const char* key, std::string_view src, size_t line) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    return LineError(src, line, key, "expected a string");
  if (it->get_ref<const std::string&>().empty())
    return LineError(src, line, key, "expected a non-empty string");
  return it->get<std::string>();
}

StatusOr<HistoryOp> ParseOpLine(const Json& j, std::string_view src, size_t line) {
  static const std::unordered_set<std::string> kKeys = {
      "id", "thread", "partition", "op", "args", "invoke_ns", "return_ns", "outcome", "result"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!kKeys.count(it.key())) return LineError(src, line, it.key(), "unknown field");
  HistoryOp op;
  op.line = static_cast<uint32_t>(line);
  KVC_ASSIGN_OR_RETURN(op.id, GetU64(j, "id", src, line));
  KVC_ASSIGN_OR_RETURN(uint64_t thread, GetU64(j, "thread", src, line));
  if (thread > UINT32_MAX) return LineError(src, line, "thread", "expected a value < 2^32");
  op.thread = static_cast<uint32_t>(thread);
  KVC_ASSIGN_OR_RETURN(op.partition, GetString(j, "partition", src, line));
  KVC_ASSIGN_OR_RETURN(op.op, GetString(j, "op", src, line));
  auto args = j.find("args");
  if (args == j.end() || !args->is_object())
    return LineError(src, line, "args", "expected an object");
  op.args = *args;
  KVC_ASSIGN_OR_RETURN(uint64_t inv, GetU64(j, "invoke_ns", src, line));
  if (inv > static_cast<uint64_t>(INT64_MAX))
    return LineError(src, line, "invoke_ns", "expected a value < 2^63");
  op.invoke_ns = static_cast<int64_t>(inv);
  KVC_ASSIGN_OR_RETURN(std::string outcome, GetString(j, "outcome", src, line));
  if (outcome == "ok") op.outcome = Outcome::kOk;
  else if (outcome == "error") op.outcome = Outcome::kError;
  else if (outcome == "unknown") op.outcome = Outcome::kUnknown;
  else return LineError(src, line, "outcome", "expected \"ok\", \"error\" or \"unknown\", got \"" + outcome + "\"");
  auto ret = j.find("return_ns");
  if (ret == j.end()) return LineError(src, line, "return_ns", "missing (integer, or null for unknown)");
  auto res = j.find("result");
  if (res == j.end()) return LineError(src, line, "result", "missing");
  if (op.outcome == Outcome::kUnknown) {
    if (!ret->is_null()) return LineError(src, line, "return_ns", "expected null for an unknown outcome");
    if (!res->is_null()) return LineError(src, line, "result", "expected null for an unknown outcome");
    return op;
  }
  KVC_ASSIGN_OR_RETURN(uint64_t r, GetU64(j, "return_ns", src, line));
  if (r > static_cast<uint64_t>(INT64_MAX))
    return LineError(src, line, "return_ns", "expected a value < 2^63");
  if (static_cast<int64_t>(r) < op.invoke_ns)
    return LineError(src, line, "return_ns", "precedes invoke_ns (" + std::to_string(r) + " < " +
                                                 std::to_string(op.invoke_ns) + ")");
  op.return_ns = static_cast<int64_t>(r);
  if (!res->is_object()) return LineError(src, line, "result", "expected an object");
  if (op.outcome == Outcome::kError) {
    auto code = res->find("code");
    if (code == res->end() || !code->is_string() || code->get_ref<const std::string&>().empty())
      return LineError(src, line, "result.code", "expected the rejection's registry code (string)");
  }
  op.result = *res;
  return op;
}

}  // namespace

StatusOr<History> ParseHistoryJsonl(std::string_view text, std::string_view src) {
  History h;
  size_t line_no = 0;
  size_t pos = 0;
  bool have_header = false, have_end = false;
  std::unordered_set<uint64_t> ids;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    bool terminated = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, terminated ? nl - pos : std::string_view::npos);
    pos = terminated ? nl + 1 : text.size();
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) return LineError(src, line_no, "", "empty line (expected one JSON object per line)");
    if (have_end) return LineError(src, line_no, "", "content after the end line");
    auto parsed = ParseJsonStrict(line, std::string(src) + ":" + std::to_string(line_no));
    if (!parsed.ok()) {
      return ParseError(parsed.status().message() +
                        (terminated ? "" : " (last line is unterminated: truncated history?)"));
    }
    const Json& j = parsed->value;
    if (!j.is_object()) return LineError(src, line_no, "", "expected a JSON object");
    if (!have_header) {
      auto kind = j.find("kind");
      if (kind == j.end() || !kind->is_string() || kind->get<std::string>() != kHistoryKind)
        return LineError(src, line_no, "kind", "expected \"" + std::string(kHistoryKind) + "\" on the header line");
      h.header = j;
      h.header.erase("kind");
      have_header = true;
      continue;
    }
    if (j.contains("end")) {
      if (j.size() != 2 || !j["end"].is_boolean() || !j["end"].get<bool>())
        return LineError(src, line_no, "end", "the end line is exactly {\"end\": true, \"ops\": N}");
      KVC_ASSIGN_OR_RETURN(uint64_t n, GetU64(j, "ops", src, line_no));
      if (n != h.ops.size())
        return LineError(src, line_no, "ops", "end line declares " + std::to_string(n) +
                                                  " operations but " + std::to_string(h.ops.size()) +
                                                  " were read (lost events?)");
      if (!terminated) return LineError(src, line_no, "", "end line is not newline-terminated");
      have_end = true;
      continue;
    }
    KVC_ASSIGN_OR_RETURN(HistoryOp op, ParseOpLine(j, src, line_no));
    if (!ids.insert(op.id).second)
      return LineError(src, line_no, "id", "duplicate operation id " + std::to_string(op.id));
    h.ops.push_back(std::move(op));
  }
  if (!have_header) return LineError(src, 1, "", "empty history (expected a header line)");
  if (!have_end)
    return LineError(src, line_no, "", "missing end line {\"end\": true, \"ops\": N}: the history is truncated");
  return h;
}

StatusOr<History> ReadHistoryFile(const std::string& path) {
  KVC_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseHistoryJsonl(text, path);
}

uint64_t HistoryRecorder::Invoke(uint32_t thread, std::string partition, std::string op, Json args) {
  std::lock_guard<std::mutex> lock(mu_);
  HistoryOp e;
  e.id = h_.ops.size();
  e.thread = thread;
  e.partition = std::move(partition);
  e.op = std::move(op);
  e.args = std::move(args);
  e.invoke_ns = MonotonicNs();  // stamped before the call can start
  h_.ops.push_back(std::move(e));
  return h_.ops.size() - 1;
}

void HistoryRecorder::Complete(uint64_t id, Outcome outcome, Json result) {
  int64_t t = MonotonicNs();  // stamped as soon as the call has returned
  std::lock_guard<std::mutex> lock(mu_);
  HistoryOp& e = h_.ops[id];
  e.return_ns = t;
  e.outcome = outcome;
  e.result = std::move(result);
}

void HistoryRecorder::CompleteUnknown(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  HistoryOp& e = h_.ops[id];
  e.return_ns.reset();
  e.outcome = Outcome::kUnknown;
  e.result = nullptr;
}

History HistoryRecorder::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(h_);
}

}  // namespace kvc::race
