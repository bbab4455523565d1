// Recorded concurrent histories: JSON Lines reader/writer and the thread-safe recorder.
#include "reference/race/history.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>
#include <unordered_set>

#include "reference/base/text_forms.h"

namespace kvc::race {

namespace dom = simdjson::dom;

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
    return LineError(src, line, key,
                     "expected a non-negative integer, got " + base::ClippedJsonText(it->dump()));
  return it->get<uint64_t>();
}

// simdjson element -> Json (args and result objects); a duplicate key is an error, as in the
// strict reader the rest of the kit uses. On failure *bad_path receives the offending member's
// path, innermost key first (built only on error: this runs for every field of every line).
bool ToJsonRec(dom::element e, Json* out, std::vector<std::string_view>* bad_path) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      *out = Json::object();
      dom::object obj = e.get_object().value_unsafe();
      for (auto field : obj) {
        auto [it, fresh] = out->emplace(std::string(field.key), Json());
        if (!fresh || !ToJsonRec(field.value, &it.value(), bad_path)) {
          bad_path->push_back(field.key);
          return false;
        }
      }
      return true;
    }
    case dom::element_type::ARRAY: {
      *out = Json::array();
      dom::array arr = e.get_array().value_unsafe();
      for (auto v : arr) {
        out->push_back(Json());
        if (!ToJsonRec(v, &out->back(), bad_path)) {
          bad_path->push_back("[]");
          return false;
        }
      }
      return true;
    }
    case dom::element_type::STRING:
      *out = std::string(e.get_string().value_unsafe());
      return true;
    case dom::element_type::INT64: {
      int64_t v = e.get_int64().value_unsafe();
      *out = v >= 0 ? Json(static_cast<uint64_t>(v)) : Json(v);
      return true;
    }
    case dom::element_type::UINT64:
      *out = e.get_uint64().value_unsafe();
      return true;
    case dom::element_type::DOUBLE:
      *out = e.get_double().value_unsafe();
      return true;
    case dom::element_type::BOOL:
      *out = e.get_bool().value_unsafe();
      return true;
    case dom::element_type::NULL_VALUE:
      *out = nullptr;
      return true;
  }
  return false;
}

StatusOr<Json> ToJson(dom::element e, std::string_view src, size_t line, std::string_view field) {
  Json out;
  std::vector<std::string_view> bad;
  if (ToJsonRec(e, &out, &bad)) return out;
  std::string path(field);
  for (auto it = bad.rbegin(); it != bad.rend(); ++it) path += (*it == "[]" ? "" : ".") + std::string(*it);
  return LineError(src, line, path, "duplicate key");
}

// The value's JSON text as a message names it: clipped (ClippedJsonText).
std::string Dump(dom::element e) { return base::ClippedJsonText(simdjson::minify(e)); }

StatusOr<uint64_t> U64Field(dom::element e, const char* key, std::string_view src, size_t line) {
  if (e.is_uint64()) return e.get_uint64().value_unsafe();
  if (e.is_int64() && e.get_int64().value_unsafe() >= 0)
    return static_cast<uint64_t>(e.get_int64().value_unsafe());
  return LineError(src, line, key, "expected a non-negative integer, got " + Dump(e));
}

StatusOr<std::string> StringField(dom::element e, const char* key, std::string_view src,
                                  size_t line) {
  if (!e.is_string()) return LineError(src, line, key, "expected a string");
  std::string_view v = e.get_string().value_unsafe();
  if (v.empty()) return LineError(src, line, key, "expected a non-empty string");
  return std::string(v);
}

// One operation line. Fields are read in one pass over the object (unknown and duplicate keys
// are errors), then checked in a fixed order so the first error named is deterministic.
StatusOr<HistoryOp> ParseOpLine(dom::object obj, std::string_view src, size_t line) {
  enum Field { kId, kThread, kPartition, kOp, kArgs, kInvoke, kReturn, kOutcome, kResult, kN };
  static constexpr std::array<std::string_view, kN> kNames = {
      "id", "thread", "partition", "op", "args", "invoke_ns", "return_ns", "outcome", "result"};
  std::array<std::optional<dom::element>, kN> f;
  for (auto field : obj) {
    size_t i = 0;
    while (i < kN && kNames[i] != field.key) ++i;
    if (i == kN) return LineError(src, line, field.key, "unknown field");
    if (f[i]) return LineError(src, line, field.key, "duplicate key");
    f[i] = field.value;
  }
  auto missing = [&](Field i, std::string_view what) {
    return LineError(src, line, kNames[i], what);
  };
  HistoryOp op;
  op.line = static_cast<uint32_t>(line);
  if (!f[kId]) return missing(kId, "missing (expected a non-negative integer)");
  KVC_ASSIGN_OR_RETURN(op.id, U64Field(*f[kId], "id", src, line));
  if (!f[kThread]) return missing(kThread, "missing (expected a non-negative integer)");
  KVC_ASSIGN_OR_RETURN(uint64_t thread, U64Field(*f[kThread], "thread", src, line));
  if (thread > UINT32_MAX) return LineError(src, line, "thread", "expected a value < 2^32");
  op.thread = static_cast<uint32_t>(thread);
  if (!f[kPartition]) return missing(kPartition, "expected a string");
  KVC_ASSIGN_OR_RETURN(op.partition, StringField(*f[kPartition], "partition", src, line));
  if (!f[kOp]) return missing(kOp, "expected a string");
  KVC_ASSIGN_OR_RETURN(op.op, StringField(*f[kOp], "op", src, line));
  if (!f[kArgs] || !f[kArgs]->is_object()) return missing(kArgs, "expected an object");
  KVC_ASSIGN_OR_RETURN(op.args, ToJson(*f[kArgs], src, line, "args"));
  if (!f[kInvoke]) return missing(kInvoke, "missing (expected a non-negative integer)");
  KVC_ASSIGN_OR_RETURN(uint64_t inv, U64Field(*f[kInvoke], "invoke_ns", src, line));
  if (inv > static_cast<uint64_t>(INT64_MAX))
    return LineError(src, line, "invoke_ns", "expected a value < 2^63");
  op.invoke_ns = static_cast<int64_t>(inv);
  if (!f[kOutcome]) return missing(kOutcome, "expected a string");
  KVC_ASSIGN_OR_RETURN(std::string outcome, StringField(*f[kOutcome], "outcome", src, line));
  if (outcome == "ok") op.outcome = Outcome::kOk;
  else if (outcome == "error") op.outcome = Outcome::kError;
  else if (outcome == "unknown") op.outcome = Outcome::kUnknown;
  else return LineError(src, line, "outcome", "expected \"ok\", \"error\" or \"unknown\", got \"" + outcome + "\"");
  if (!f[kReturn]) return missing(kReturn, "missing (integer, or null for unknown)");
  if (!f[kResult]) return missing(kResult, "missing");
  const dom::element ret = *f[kReturn], res = *f[kResult];
  if (op.outcome == Outcome::kUnknown) {
    if (!ret.is_null()) return LineError(src, line, "return_ns", "expected null for an unknown outcome");
    if (!res.is_null()) return LineError(src, line, "result", "expected null for an unknown outcome");
    op.result = nullptr;
    return op;
  }
  KVC_ASSIGN_OR_RETURN(uint64_t r, U64Field(ret, "return_ns", src, line));
  if (r > static_cast<uint64_t>(INT64_MAX))
    return LineError(src, line, "return_ns", "expected a value < 2^63");
  if (static_cast<int64_t>(r) < op.invoke_ns)
    return LineError(src, line, "return_ns", "precedes invoke_ns (" + std::to_string(r) + " < " +
                                                 std::to_string(op.invoke_ns) + ")");
  op.return_ns = static_cast<int64_t>(r);
  if (!res.is_object()) return LineError(src, line, "result", "expected an object");
  if (op.outcome == Outcome::kError) {
    dom::element code;
    dom::object res_obj = res.get_object().value_unsafe();
    if (res_obj.at_key("code").get(code) != simdjson::SUCCESS ||
        !code.is_string() || code.get_string().value_unsafe().empty())
      return LineError(src, line, "result.code", "expected the rejection's registry code (string)");
  }
  KVC_ASSIGN_OR_RETURN(op.result, ToJson(res, src, line, "result"));
  return op;
}

}  // namespace

namespace {

struct LineRef {
  std::string_view text;  // without '\n' (and without a trailing '\r')
  bool terminated;
  bool op_line;  // parsed by the workers: not empty, not the header, not an end-line candidate
};

// Operation lines [begin, end) of `lines`, parsed by one worker. Stops at the first error.
struct Chunk {
  size_t begin = 0, end = 0;
  std::vector<HistoryOp> ops;
  size_t error_line = 0;  // 1-based, 0 when none
  Status error;
};

void ParseChunk(const std::vector<LineRef>& lines, std::string_view src, Chunk* c) {
  dom::parser parser;
  std::string buf;  // one line plus simdjson's padding, reused
  for (size_t i = c->begin; i < c->end; ++i) {
    const LineRef& l = lines[i];
    if (!l.op_line) continue;
    const size_t line_no = i + 1;
    auto fail = [&](Status s) {
      c->error_line = line_no;
      c->error = std::move(s);
    };
    buf.assign(l.text);
    buf.resize(l.text.size() + simdjson::SIMDJSON_PADDING);
    dom::element root;
    if (auto err = parser.parse(buf.data(), l.text.size(), false).get(root)) {
      return fail(LineError(src, line_no, "",
                            std::string("not JSON: ") + simdjson::error_message(err) +
                                (l.terminated ? "" : " (last line is unterminated: truncated history?)")));
    }
    if (!root.is_object()) return fail(LineError(src, line_no, "", "expected a JSON object"));
    dom::object obj = root.get_object().value_unsafe();
    auto op = ParseOpLine(obj, src, line_no);
    if (!op.ok()) return fail(op.status());
    c->ops.push_back(std::move(*op));
  }
}

}  // namespace

StatusOr<History> ParseHistoryJsonl(std::string_view text, std::string_view src) {
  // Pass 1 (sequential, memchr speed): line boundaries and which lines are operation lines.
  std::vector<LineRef> lines;
  lines.reserve(text.size() / 200 + 16);
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    bool terminated = nl != std::string_view::npos;
    std::string_view line = text.substr(pos, terminated ? nl - pos : std::string_view::npos);
    pos = terminated ? nl + 1 : text.size();
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    bool op_line = !lines.empty() && !line.empty() && line.find("\"end\"") == std::string_view::npos;
    lines.push_back({line, terminated, op_line});
  }
  // Pass 2 (parallel): operation lines in contiguous chunks, one simdjson parser per worker.
  const size_t workers = std::clamp<size_t>(lines.size() / 20'000, 1,
                                            std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Chunk> chunks(workers);
  for (size_t w = 0; w < workers; ++w) {
    chunks[w].begin = lines.size() * w / workers;
    chunks[w].end = lines.size() * (w + 1) / workers;
  }
  {
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back(ParseChunk, std::cref(lines), src, &chunks[w]);
    ParseChunk(lines, src, &chunks[0]);
    for (auto& t : pool) t.join();
  }
  // Pass 3 (sequential, in line order): header, end line, errors and ids, so the first error
  // reported is the first in the file, as a sequential reader would report it.
  History h;
  size_t ops_total = 0;
  for (const Chunk& c : chunks) ops_total += c.ops.size();
  h.ops.reserve(ops_total);
  std::unordered_set<uint64_t> ids;
  ids.reserve(ops_total);
  bool have_header = false, have_end = false;
  size_t chunk = 0, next_op = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t line_no = i + 1;
    const LineRef& l = lines[i];
    while (i >= chunks[chunk].end) {
      ++chunk;
      next_op = 0;
    }
    if (l.text.empty()) return LineError(src, line_no, "", "empty line (expected one JSON object per line)");
    if (have_end) return LineError(src, line_no, "", "content after the end line");
    if (l.op_line) {
      Chunk& c = chunks[chunk];
      if (c.error_line == line_no) return c.error;
      HistoryOp& op = c.ops[next_op++];
      if (!ids.insert(op.id).second)
        return LineError(src, line_no, "id", "duplicate operation id " + std::to_string(op.id));
      h.ops.push_back(std::move(op));
      continue;
    }
    // Header and end line: the strict reader (rare lines; exact messages with columns).
    const std::string truncated = l.terminated ? "" : " (last line is unterminated: truncated history?)";
    auto parsed = ParseJsonLineStrict(l.text, src, line_no);
    if (!parsed.ok()) return ParseError(parsed.status().message() + truncated);
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
      if (!l.terminated) return LineError(src, line_no, "", "end line is not newline-terminated");
      have_end = true;
      continue;
    }
    // An operation line that mentions "end" in a value: the sequential reader parses it.
    dom::parser parser;
    std::string buf(l.text);
    buf.resize(l.text.size() + simdjson::SIMDJSON_PADDING);
    dom::element root;
    if (auto err = parser.parse(buf.data(), l.text.size(), false).get(root))
      return LineError(src, line_no, "", std::string("not JSON: ") + simdjson::error_message(err) + truncated);
    dom::object obj = root.get_object().value_unsafe();
    KVC_ASSIGN_OR_RETURN(HistoryOp op, ParseOpLine(obj, src, line_no));
    if (!ids.insert(op.id).second)
      return LineError(src, line_no, "id", "duplicate operation id " + std::to_string(op.id));
    h.ops.push_back(std::move(op));
  }
  if (!have_header) return LineError(src, 1, "", "empty history (expected a header line)");
  if (!have_end)
    return LineError(src, lines.size(), "", "missing end line {\"end\": true, \"ops\": N}: the history is truncated");
  return h;
}

StatusOr<History> ReadHistoryFile(const std::string& path) {
  KVC_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, kMaxHistoryFileBytes));
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
