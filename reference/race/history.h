// Recorded concurrent histories: one entry per operation with invoke/return times and outcome.
//
// A history is what a race run observed: for every operation, the thread that issued it, the
// partition (object) it acts on, its name and concrete arguments, the invoke and return
// timestamps from one monotonic clock, and its outcome: a result (ok or a rejection code), or
// unknown (the call timed out or its worker died, so it may or may not have taken effect).
// The JSON Lines form is documented in docs/history-format.md: a header line, one line per
// operation, and an end line that makes truncation detectable.
// Values only; thread safety: none (HistoryRecorder is the thread-safe builder).
#ifndef KVCONFORM_REFERENCE_RACE_HISTORY_H_
#define KVCONFORM_REFERENCE_RACE_HISTORY_H_

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc::race {

inline constexpr std::string_view kHistoryKind = "kvconform.race_history/1";

enum class Outcome : uint8_t { kOk, kError, kUnknown };
std::string_view OutcomeName(Outcome o);  // "ok" | "error" | "unknown"

struct HistoryOp {
  uint64_t id = 0;          // unique within the history
  uint32_t thread = 0;      // issuing worker
  std::string partition;    // the independent object the op acts on (a handle lineage)
  std::string op;           // operation name, e.g. "publish"
  Json args = Json::object();
  int64_t invoke_ns = 0;    // monotonic clock, same origin for every op
  std::optional<int64_t> return_ns;  // absent for unknown outcomes
  Outcome outcome = Outcome::kUnknown;
  // kOk: the op's result object; kError: {"code": "REGISTRY_NAME", ...}; kUnknown: null.
  Json result;
  uint32_t line = 0;        // 1-based line in the file it was read from (0 if built in memory)
};

struct History {
  // The header line minus "kind": model name, model parameters, seed, program, mutant, ...
  Json header = Json::object();
  std::vector<HistoryOp> ops;
};

// Monotonic nanoseconds (std::chrono::steady_clock) since an arbitrary process-wide origin.
int64_t MonotonicNs();

// Serialization. WriteHistoryJsonl emits header, ops (in id order) and the end line.
Json HistoryOpToJson(const HistoryOp& op);
std::string WriteHistoryJsonl(const History& h);
Status WriteHistoryFile(const History& h, const std::string& path);

// Parses the JSON Lines form. Every malformed, inconsistent or truncated input is a
// kParseError whose message names "source:line: field: what was expected".
StatusOr<History> ParseHistoryJsonl(std::string_view text, std::string_view source_name);
// The largest history file read (a million ops take about 220 MB): the cap of every document
// kvconform reads (JsonLimits::max_bytes).
inline constexpr size_t kMaxHistoryFileBytes = JsonLimits{}.max_bytes;
// ReadFileToString(path, kMaxHistoryFileBytes) then ParseHistoryJsonl.
StatusOr<History> ReadHistoryFile(const std::string& path);

// The document-kind validator (`kvconform validate`, reference/validate/kinds.cc): every
// violation in the text, in line order, each with its registry code, the JSON pointer
// "/<line-1>/<field>" and its 1-based line: schema (INPUT_*), malformed or truncated lines,
// the header's model, ids, invoke <= return, one clock per worker (its operations do not
// overlap), outcomes and results, op names and arguments (RACE_HISTORY_*). A line with a schema
// violation is not checked further (gating: one-field mutations raise their root cause only).
Violations ValidateHistoryJsonl(std::string_view text, std::string_view source);

// Thread-safe builder used by runners: Invoke() stamps the invoke time and returns a slot;
// Complete()/CompleteUnknown() stamp the return. Take() hands out the history (ops by id).
class HistoryRecorder {
 public:
  explicit HistoryRecorder(Json header) { h_.header = std::move(header); }
  uint64_t Invoke(uint32_t thread, std::string partition, std::string op, Json args);
  void Complete(uint64_t id, Outcome outcome, Json result);
  void CompleteUnknown(uint64_t id);
  History Take();

 private:
  std::mutex mu_;
  History h_;  // guarded by mu_
};

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_HISTORY_H_
