// libFuzzer target: `kvconform fuzz check` of arbitrary bytes, its four searches compared.
//
// The input is a race history (kvconform.race_history/1, docs/history-format.md). It is read as
// `fuzz check` reads it: validated (a history with violations stops there), parsed, its model
// built from the header. Then CheckHistory runs four ways: the in-place search and the exact
// search, each per partition (lineage) and over the whole history as one object. The history
// format makes lineages independent objects (a partition label that is not its lineage's is
// RACE_HISTORY_PARTITION_MISMATCH), so all four must reach the same verdict when none ran out
// of its budget; a "not linearizable" must come with a witness and only then. A difference aborts
// with the four verdicts. Crashes, hangs, leaks and undefined behaviour are the sanitizers' to
// report. Budgets are short (the search is exponential in the worst case) and one worker runs,
// so a run is deterministic apart from the budget.
// Most byte-level mutations of a history break its format, so the target has its own mutator
// (LLVMFuzzerCustomMutator): three times in four it edits one operation of a history that parses
// (an outcome made unknown or an error, a result member moved by one or taken from another
// operation, a time shifted, an operation moved to another worker or dropped, or, a third of the
// edits, its interval widened within its worker's slack, which keeps a linearizable history
// linearizable) and keeps the end line's count; otherwise, or for input that is not a history,
// libFuzzer's own mutation.
// Build: tools/fuzz-check.sh SECONDS race_history_check (Clang, -DKVCONFORM_FUZZ=ON). CI
// replays its seeds (fuzz_seed_replay).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "reference/race/history.h"
#include "reference/race/kv_model.h"
#include "reference/race/linearizability.h"

namespace {

using kvc::race::CheckHistory;
using kvc::race::CheckOptions;
using kvc::race::Verdict;

struct Run {
  const char* name;
  bool in_place;
  bool partition;
};
constexpr Run kRuns[] = {{"in-place, partitioned", true, true},
                         {"exact, partitioned", false, true},
                         {"in-place, whole", true, false},
                         {"exact, whole", false, false}};

// How many inputs reached the searches, printed at exit: most mutations of a history break its
// format, and a campaign's figure of merit is the histories it actually checked.
struct Tally {
  uint64_t searched = 0, decided = 0, not_linearizable = 0;
  ~Tally() {
    std::fprintf(
        stderr,
        "race_history_check_fuzzer: %llu inputs reached the four searches, %llu decided by "
        "all four (%llu not linearizable)\n",
        static_cast<unsigned long long>(searched), static_cast<unsigned long long>(decided),
        static_cast<unsigned long long>(not_linearizable));
  }
} tally;

using nlohmann::json;

constexpr const char* kCodes[] = {"LIFECYCLE_TXN_UNKNOWN",      "LIFECYCLE_UNKNOWN_HANDLE",
                                  "LIFECYCLE_LATE_COMPLETION",  "LIFECYCLE_HANDLE_TERMINAL",
                                  "LIFECYCLE_RELEASE_LIVE",     "LIFECYCLE_HANDLE_RELEASED",
                                  "LIFECYCLE_LAYER_INCOMPLETE", "LIFECYCLE_STALE_BASE",
                                  "LIFECYCLE_UNKNOWN_SNAPSHOT", "LIFECYCLE_TRUNCATE_GROWTH"};

// One structured edit of `ops` (operation lines, already parsed); false when it found nothing
// to edit.
// Widens `op`'s interval within its worker's slack: its invocation moves to any time after its
// worker's previous return, its return to any time before its worker's next invocation. A
// linearization of the history stays one (each op's point stays inside its interval, and
// real-time order only relaxes), so linearizable histories stay linearizable and the searches
// are compared on them too (most other edits break linearizability). False when the op has no
// known interval.
bool Widen(std::vector<json>& ops, json& op, std::mt19937_64& rng) {
  auto num = [](const json& o, const char* k) {
    return o.contains(k) && o[k].is_number_unsigned() ? std::optional(o[k].get<uint64_t>())
                                                      : std::nullopt;
  };
  const auto inv = num(op, "invoke_ns"), ret = num(op, "return_ns");
  if (!inv || !ret || !op.contains("thread")) return false;
  constexpr uint64_t kMore = uint64_t{1} << 20;  // the last op of its worker: ~1 ms more
  uint64_t lo = 0, hi = *ret > UINT64_MAX - kMore ? UINT64_MAX : *ret + kMore;
  for (const json& o : ops) {
    if (&o == &op || !o.is_object() || !o.contains("thread") || o["thread"] != op["thread"])
      continue;
    const auto oi = num(o, "invoke_ns"), orr = num(o, "return_ns");
    if (orr && *orr <= *inv) lo = std::max(lo, *orr);
    if (oi && *oi >= *ret) hi = std::min(hi, *oi);
  }
  auto between = [&](uint64_t a, uint64_t b) {  // uniform in [a, b], a <= b
    return b - a == UINT64_MAX ? rng() : a + rng() % (b - a + 1);
  };
  op["invoke_ns"] = between(lo, *inv);
  op["return_ns"] = between(*ret, hi);
  return true;
}

bool EditOne(std::vector<json>& ops, std::mt19937_64& rng) {
  if (ops.empty()) return false;
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  json& op = ops[pick(ops.size())];
  if (!op.is_object()) return false;
  const size_t edit = pick(12);
  if (edit >= 8) return Widen(ops, op, rng);  // a third of the edits keep linearizability
  switch (edit) {
    case 0:  // the call timed out: unknown outcome
      op["outcome"] = "unknown";
      op["return_ns"] = nullptr;
      op["result"] = nullptr;
      return true;
    case 1:  // refused
      if (!op.contains("invoke_ns")) return false;
      op["outcome"] = "error";
      op["result"] = {{"code", kCodes[pick(std::size(kCodes))]}};
      if (!op.contains("return_ns") || op["return_ns"].is_null()) op["return_ns"] = op["invoke_ns"];
      return true;
    case 2:
    case 3: {  // a result member moved by one, or flipped
      if (!op.contains("result") || !op["result"].is_object() || op["result"].empty()) return false;
      json& r = op["result"];
      auto it = r.begin();
      std::advance(it, pick(r.size()));
      if (it->is_number_unsigned()) {
        const uint64_t v = it->get<uint64_t>();
        *it = (rng() & 1) ? v + 1 : (v ? v - 1 : 1);
      } else if (it->is_boolean()) {
        *it = !it->get<bool>();
      } else {
        return false;
      }
      return true;
    }
    case 4: {  // a result member taken from another operation of the same name
      const json& other = ops[pick(ops.size())];
      if (!other.is_object() || other.value("op", "") != op.value("op", "") ||
          !other.contains("result") || !op.contains("result"))
        return false;
      op["result"] = other["result"];
      op["outcome"] = other.value("outcome", "ok");
      return true;
    }
    case 5: {  // a time shifted (an earlier invocation widens the op's overlap with others)
      if (!op.contains("invoke_ns") || !op["invoke_ns"].is_number_unsigned()) return false;
      const uint64_t inv = op["invoke_ns"].get<uint64_t>();
      const uint64_t d = uint64_t{1} << pick(20);
      op["invoke_ns"] = inv > d ? inv - d : 0;
      if (op.contains("return_ns") && op["return_ns"].is_number_unsigned() && (rng() & 1))
        op["return_ns"] = op["return_ns"].get<uint64_t>() + d;
      return true;
    }
    case 6:  // another worker
      op["thread"] = pick(4);
      return true;
    default: {  // dropped
      ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(&op - ops.data()));
      return true;
    }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> lines;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  if (lines.size() < 3 || lines[0].find("race_history") == std::string_view::npos)
    return LLVMFuzzerMutate(data, size, max_size);
  std::vector<json> ops;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    json j = json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
    ops.push_back(std::move(j));
  }
  bool edited = false;
  for (int tries = 0; tries < 8 && !edited; ++tries) edited = EditOne(ops, rng);
  if (!edited) return LLVMFuzzerMutate(data, size, max_size);
  std::string out(lines[0]);
  out += '\n';
  for (const json& j : ops) out += j.dump() + '\n';
  out += json{{"end", true}, {"ops", ops.size()}}.dump() + '\n';
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 16)) return -1;  // not added to the corpus
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (!kvc::race::ValidateHistoryJsonl(text, "fuzz.jsonl").empty()) return 0;
  auto h = kvc::race::ParseHistoryJsonl(text, "fuzz.jsonl");
  if (!h.ok()) return 0;
  auto model = kvc::race::KvModel::FromHeader(h->header);
  if (!model.ok()) return 0;

  ++tally.searched;
  Verdict verdicts[4];
  bool decided = true;
  std::string report;
  for (int i = 0; i < 4; ++i) {
    CheckOptions opt;
    opt.in_place = kRuns[i].in_place;
    opt.partition = kRuns[i].partition;
    opt.workers = 1;
    opt.budget = std::chrono::milliseconds(500);
    auto r = CheckHistory(*model, *h, opt);
    if (!r.ok()) {
      // An op that does not compile: the same ops compile in every run.
      if (i != 0) {
        std::fprintf(stderr, "race_history_check_fuzzer: run '%s' refused what run 0 took: %s\n",
                     kRuns[i].name, r.status().ToString().c_str());
        std::abort();
      }
      return 0;
    }
    verdicts[i] = r->verdict;
    if (r->verdict == Verdict::kUnknown) decided = false;
    if ((r->verdict == Verdict::kNotLinearizable) != r->witness.has_value()) {
      std::fprintf(stderr, "race_history_check_fuzzer: run '%s': verdict %s %s a witness\n",
                   kRuns[i].name, std::string(kvc::race::VerdictName(r->verdict)).c_str(),
                   r->witness ? "with" : "without");
      std::abort();
    }
    report += std::string(kRuns[i].name) + ": " + std::string(kvc::race::VerdictName(r->verdict)) +
              " (" + std::to_string(r->states_explored) + " steps)\n";
  }
  if (!decided) return 0;
  ++tally.decided;
  if (verdicts[0] == Verdict::kNotLinearizable) ++tally.not_linearizable;
  for (int i = 1; i < 4; ++i) {
    if (verdicts[i] != verdicts[0]) {
      std::fprintf(stderr, "race_history_check_fuzzer: the searches disagree:\n%s", report.c_str());
      std::abort();
    }
  }
  return 0;
}
