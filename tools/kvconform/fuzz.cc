// `kvconform fuzz races|check|merge`: race fuzzing of the KV lifecycle (M5.1 0x01, 0x09).
#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/race/driver.h"
#include "reference/race/fuzzer.h"
#include "reference/race/kv_model.h"
#include "reference/race/linearizability.h"
#include "reference/validate/violation.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {

namespace {

using namespace kvc::race;  // NOLINT

// `fuzz check` exit code for a history whose check ran out of time (docs/history-format.md).
constexpr int kExitCheckUnknown = 4;
constexpr std::string_view kCampaignKind = "kvconform.race_campaign/1";
constexpr uint32_t kMaxThreads = 256, kMaxHandles = 4096, kMaxOps = 1'000'000;
constexpr uint32_t kMaxDriverTimeoutMs = 3'600'000;  // an hour

// Seconds as milliseconds, rounded up (so a positive limit is never 0 ms, which a campaign's
// --time reads as no limit: --time 0.0005 ran without end until 2026-12-07), saturating at
// 10^15 ms (a huge or infinite budget; the deadlines built from it saturate too:
// SaturatingDeadline); `s` >= 0.
std::chrono::milliseconds Milliseconds(double s) {
  constexpr double kMaxMs = 1e15;  // ~31,700 years
  const double ms = std::ceil(s * 1000);
  return std::chrono::milliseconds(ms >= kMaxMs ? static_cast<int64_t>(kMaxMs)
                                                : static_cast<int64_t>(ms));
}

std::string OpLine(const HistoryOp& op) {
  std::string s = "#" + std::to_string(op.id) + " T" + std::to_string(op.thread) + " " + op.op +
                  " " + op.args.dump() + " -> ";
  if (op.outcome == Outcome::kUnknown) return s + "unknown";
  return s + std::string(OutcomeName(op.outcome)) + " " + op.result.dump();
}

void PrintWitness(std::ostream& out, const History& h, const Witness& w) {
  std::map<uint64_t, const HistoryOp*> by_id;
  for (const auto& op : h.ops) by_id[op.id] = &op;
  out << "  witness (partition " << w.partition << "): longest linearizable prefix, "
      << w.prefix.size() << " op(s):\n";
  for (uint64_t id : w.prefix) out << "    " << Printable(OpLine(*by_id.at(id))) << "\n";
  out << "  cannot place: " << Printable(OpLine(*by_id.at(w.stuck_op))) << "\n";
  if (!w.expected.empty())
    out << "  the sequential model returns, after that prefix: " << Printable(w.expected) << "\n";
  out << "  model state before it: " << w.state_before << "\n";
}

struct RacesArgs {
  uint32_t threads = 4, handles = 2, ops = 200, layers = 2;
  uint64_t seed = 1, start = 0, programs = 0;
  bool programs_given = false;
  uint32_t repeat = 1;
  double time_s = 0;
  std::string mutant = "none";
  std::string shard = "0/1";
  std::string driver;
  uint32_t driver_timeout_ms = 5000;
  bool no_shrink = false;
  double shrink_time_s = 20;
  uint32_t shrink_reruns = 10;
  std::string history_out, report_out;
  bool quiet = false;
};

int RunRaces(const RacesArgs& a) {
  auto mutant = ParseMutant(a.mutant);
  if (!mutant) {
    std::cerr << "fuzz races: --mutant: unknown mutant '" << Printable(a.mutant) << "'; one of:";
    for (const auto& m : AllMutants()) std::cerr << " " << m.name;
    std::cerr << "\n";
    return kExitUsage;
  }
  if (!a.driver.empty() && *mutant != Mutant::kNone) {
    std::cerr << "fuzz races: --mutant applies to the in-process store, not to --driver\n";
    return kExitUsage;
  }
  uint32_t si = 0, sn = 1;
  {
    char slash = 0;
    std::istringstream in(a.shard);
    if (!(in >> si >> slash >> sn) || slash != '/' || sn == 0 || si >= sn || !in.eof()) {
      std::cerr << "fuzz races: --shard: expected I/N with 0 <= I < N, got '" << Printable(a.shard)
                << "'\n";
      return kExitUsage;
    }
  }
  // Bounded sizes: each worker is a thread, each lineage and op is held in memory (probe 34:
  // --threads 100000 aborted after 2.2 GB, --handles 4294967295 grew without bound).
  if (a.threads == 0 || a.threads > kMaxThreads || a.handles == 0 || a.handles > kMaxHandles ||
      a.ops == 0 || a.ops > kMaxOps || a.layers == 0 || a.layers > 64) {
    std::cerr << "fuzz races: expected --threads in [1, " << kMaxThreads << "], --handles in [1, "
              << kMaxHandles << "], --ops in [1, " << kMaxOps << "] and --layers in [1, 64]\n";
    return kExitUsage;
  }
  if (a.programs_given && a.programs == 0) {
    std::cerr << "fuzz races: --programs: expected >= 1 (leave it out for the default)\n";
    return kExitUsage;
  }
  if (a.repeat == 0) {
    std::cerr << "fuzz races: --repeat: expected >= 1\n";
    return kExitUsage;
  }
  // (probe 44: 0 was read as 1, silently.)
  if (a.shrink_reruns == 0) {
    std::cerr << "fuzz races: --shrink-reruns: expected >= 1\n";
    return kExitUsage;
  }
  // A driver is given at least a millisecond and at most an hour per answer (probe 44: 0 was
  // accepted, and a working driver was then reported as RACE_DRIVER_TIMEOUT).
  if (a.driver_timeout_ms == 0 || a.driver_timeout_ms > kMaxDriverTimeoutMs) {
    std::cerr << "fuzz races: --driver-timeout-ms: expected a wait in [1, " << kMaxDriverTimeoutMs
              << "] ms, got " << a.driver_timeout_ms << "\n";
    return kExitUsage;
  }
  // The program indices [start, start + programs) must be representable (probe 44: --start
  // 2^64-1 wrapped the range to nothing, and the empty campaign passed).
  if (a.programs_given && a.start > UINT64_MAX - a.programs) {
    std::cerr << "fuzz races: --start " << a.start << " --programs " << a.programs
              << ": start + programs must not exceed 2^64 - 1\n";
    return kExitUsage;
  }
  if (!a.programs_given && a.start == UINT64_MAX) {
    std::cerr << "fuzz races: --start: expected an index below 2^64 - 1 (no program follows it)\n";
    return kExitUsage;
  }
  if (!(a.time_s >= 0) || !(a.shrink_time_s >= 0)) {
    std::cerr << "fuzz races: --time and --shrink-time: expected a number of seconds >= 0\n";
    return kExitUsage;
  }
  // The output files are opened before the campaign runs, so that one that cannot be written
  // fails at once, not after the campaign (opened to append: nothing is truncated yet).
  for (const auto& [flag, path] :
       {std::pair{"--report", &a.report_out}, std::pair{"--history-out", &a.history_out}}) {
    if (path->empty()) continue;
    std::ofstream probe(*path, std::ios::binary | std::ios::app);
    if (!probe) {
      std::cerr << "fuzz races: " << flag << ": IoError: " << Printable(*path)
                << ": cannot open for writing\n";
      return kExitUsage;
    }
  }
  CampaignOptions opt;
  opt.shape = {a.threads, a.handles, a.ops, a.layers};
  opt.seed = a.seed;
  opt.start = a.start;
  // Without --programs, a timed campaign runs until --time; otherwise 100 programs.
  // (Capped where the range would pass 2^64 - 1: the indices from --start to the last.)
  opt.programs =
      a.programs ? a.programs
                 : std::min<uint64_t>(UINT64_MAX - a.start, a.time_s > 0 ? UINT64_MAX / 2 : 100);
  opt.repeat = a.repeat;
  opt.time = Milliseconds(a.time_s);
  opt.shard_index = si;
  opt.shard_count = sn;
  opt.shrink = !a.no_shrink;
  opt.shrink_time = Milliseconds(a.shrink_time_s);
  opt.shrink_reruns = a.shrink_reruns;
  opt.progress = a.quiet ? nullptr : &std::cerr;
  const lifecycle::CacheAbi abi = RaceAbi(a.layers);
  TargetFactory factory;
  if (a.driver.empty()) {
    factory = [abi, m = *mutant]() -> StatusOr<std::unique_ptr<RaceTarget>> {
      return std::unique_ptr<RaceTarget>(new StoreTarget(abi, m));
    };
  } else {
    auto timeout = std::chrono::milliseconds(a.driver_timeout_ms);
    factory = [abi, cmd = a.driver, timeout]() -> StatusOr<std::unique_ptr<RaceTarget>> {
      auto d = DriverTarget::Start(cmd, abi, timeout);
      if (!d.ok()) return d.status();
      return std::unique_ptr<RaceTarget>(std::move(*d));
    };
  }
  std::cout << "fuzz races: seed " << a.seed << ", shard " << si << "/" << sn << ", threads "
            << a.threads << ", handles " << a.handles << ", ops " << a.ops << ", layers "
            << a.layers << ", target "
            << (a.driver.empty() ? "store" : "driver '" + Printable(a.driver) + "'") << ", mutant "
            << Printable(a.mutant) << "\n";
  CampaignReport rep = RunCampaign(opt, factory);
  std::string verdict = rep.failure ? "not_linearizable" : !rep.first_error.empty() ? "error" : "linearizable";
  std::cout << "programs " << rep.programs_run << ", histories " << rep.histories << ", ops "
            << rep.ops << ", unknown verdicts " << rep.unknown_verdicts << ", " << rep.seconds
            << " s\n";
  int rc = kExitOk;
  const History* to_save = &rep.last_history;
  if (!rep.first_error.empty()) {
    std::cout << "TARGET FAILED: " << Printable(rep.first_error) << "\n";
    rc = kExitViolation;
  }
  if (rep.failure) {
    const CampaignFailure& f = *rep.failure;
    to_save = &f.history;
    std::cout << "NOT LINEARIZABLE (" << ErrorCodeName(ErrorCode::RACE_NOT_LINEARIZABLE)
              << "): program " << f.program_index << " (program seed " << f.program_seed
              << "), run " << f.run << ", detected after " << f.seconds_to_detection << " s\n";
    // The command as the user can paste it: the binary as invoked, each value one shell
    // word, and every option that shapes the run (probe 69: a bare "kvconform", a driver
    // command with quotes of its own broken into words, no --driver-timeout-ms).
    std::cout << "  reproduce: " << ShellQuote(InvokedAs()) << " fuzz races --seed " << a.seed
              << " --start " << f.program_index << " --programs 1 --repeat 500 --threads "
              << a.threads << " --handles " << a.handles << " --ops " << a.ops << " --layers "
              << a.layers << " --mutant " << ShellQuote(a.mutant);
    if (!a.driver.empty())
      std::cout << " --driver " << ShellQuote(a.driver) << " --driver-timeout-ms "
                << a.driver_timeout_ms;
    if (opt.shrink)
      std::cout << "\n  shrunk program (RapidCheck, seed " << f.program_seed << ", "
                << opt.shrink_reruns << " runs per candidate; " << f.shrunk.script.size() << " of "
                << f.program.script.size() << " ops, " << f.shrink_seconds << " s):\n";
    else
      std::cout << "\n  program (not shrunk: --no-shrink; " << f.program.script.size()
                << " ops):\n";
    std::istringstream lines(ProgramToText(f.shrunk));
    for (std::string l; std::getline(lines, l);) std::cout << "    " << l << "\n";
    PrintWitness(std::cout, f.history, f.witness);
    rc = kExitViolation;
  } else if (rep.first_error.empty()) {
    // Histories the check could not decide within its budget were not judged: said so, not
    // folded into the pass (probe 57).
    std::cout << "no failure found";
    if (rep.unknown_verdicts != 0)
      std::cout << "; " << rep.unknown_verdicts
                << " histories were not decided within the check budget (not judged)";
    std::cout << "\n";
  }
  if (!a.history_out.empty()) {
    if (Status s = WriteHistoryFile(*to_save, a.history_out); !s.ok()) {
      std::cerr << Printable(s.ToString()) << "\n";
      return kExitUsage;
    }
    std::cout << "history written to " << Printable(a.history_out)
              << " (re-check: kvconform fuzz check " << Printable(a.history_out) << ")\n";
  }
  if (!a.report_out.empty()) {
    Json r = {
        {"kind", kCampaignKind},
        {"seed", a.seed},
        {"start", a.start},
        {"programs", opt.programs},
        {"repeat", a.repeat},
        {"time_limit_s", a.time_s},
        {"shard", {si, sn}},
        {"shape",
         {{"threads", a.threads}, {"handles", a.handles}, {"ops", a.ops}, {"layers", a.layers}}},
        {"mutant", a.mutant},
        {"target", a.driver.empty() ? "store" : a.driver},
        {"programs_run", rep.programs_run},
        {"histories", rep.histories},
        {"ops", rep.ops},
        {"unknown_verdicts", rep.unknown_verdicts},
        {"seconds", rep.seconds},
        {"verdict", verdict},
        {"error", rep.first_error}};
    r["failure"] = rep.failure ? Json{{"program_index", rep.failure->program_index},
                                      {"program_seed", rep.failure->program_seed},
                                      {"seconds_to_detection", rep.failure->seconds_to_detection},
                                      {"shrunk_ops", rep.failure->shrunk.script.size()},
                                      {"shrink_seconds", rep.failure->shrink_seconds},
                                      {"shrunk_program", ProgramToText(rep.failure->shrunk)}}
                               : Json(nullptr);
    // A report that cannot be written is no verdict for the shard (probe 65: exit 0 and no
    // report, so the missing shard was blamed on fuzz merge).
    std::ofstream out(a.report_out, std::ios::binary | std::ios::trunc);
    if (out) out << DumpReport(r) << "\n";
    if (out) out.close();
    if (!out) {
      std::cerr << "fuzz races: IoError: " << Printable(a.report_out)
                << ": cannot write the campaign report\n";
      return kExitUsage;
    }
  }
  return rc;
}

int RunCheck(const std::string& path, bool no_partition, bool exact, double budget_s) {
  // (probe 34: --budget inf overflowed to a budget that ran out at once; 0 and -1 passed.)
  if (!(budget_s > 0)) {
    std::cerr << "fuzz check: --budget: expected a positive number of seconds (inf: no limit)\n";
    return kExitUsage;
  }
  // Wall and CPU seconds (all threads: std::clock is process CPU time) of each phase: on a
  // shared, loaded machine the CPU figure is the stable one.
  auto cpu_s = [] { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; };
  // The document rules of `validate` (thread overlap, one partition per lineage, result forms,
  // number ranges) before the search, so that one file never gets opposite verdicts from the two
  // commands (probe 34: an overlapping worker and a relabelled lineage passed here).
  // The file is read once, under the cap of every document reader (probe 87: it was read whole
  // without one, so `fuzz check /dev/zero` grew until the kernel stopped it, and then read
  // again to parse).
  const auto v0 = std::chrono::steady_clock::now();
  auto text = ReadFileToString(path, kMaxHistoryFileBytes);
  if (!text.ok()) {
    std::cerr << "fuzz check: " << Printable(text.status().message()) << "\n";
    return kExitUsage;
  }
  Violations doc = ValidateHistoryJsonl(*text, path);
  ClipForReport(&doc);
  const double validate_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - v0).count();
  if (!doc.empty()) {
    // Each names its field (probe 44: the pointer was left out, so a missing "thread" read
    // "required field is missing").
    for (const Violation& x : doc)
      std::cerr << "fuzz check: " << ErrorCodeName(x.code)
                << (x.pointer.empty() ? std::string() : " at '" + Printable(x.pointer) + "'")
                << ": " << Printable(x.message) << "\n";
    std::cerr << "fuzz check: " << Printable(path) << " is not a valid history (" << doc.size()
              << " violation(s); kvconform validate lists them too)\n";
    return kExitUsage;
  }
  const auto p0 = std::chrono::steady_clock::now();
  const double c0 = cpu_s();
  auto h = ParseHistoryJsonl(*text, path);
  double parse_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - p0).count();
  double parse_cpu = cpu_s() - c0;
  if (!h.ok()) {
    std::cerr << "fuzz check: " << Printable(h.status().message()) << "\n";
    return kExitUsage;
  }
  auto model = KvModel::FromHeader(h->header);
  if (!model.ok()) {
    std::cerr << "fuzz check: " << Printable(path) << ":1: " << Printable(model.status().message())
              << "\n";
    return kExitUsage;
  }
  CheckOptions opt;
  opt.partition = !no_partition;
  opt.in_place = !exact;
  opt.budget = Milliseconds(budget_s);
  auto t0 = std::chrono::steady_clock::now();
  double c1 = cpu_s();
  auto r = CheckHistory(*model, *h, opt);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double check_cpu = cpu_s() - c1;
  if (!r.ok()) {
    std::cerr << "fuzz check: " << Printable(path) << ": " << Printable(r.status().message())
              << "\n";
    return kExitUsage;
  }
  std::cout << Printable(path) << ": " << VerdictName(r->verdict) << " (" << h->ops.size()
            << " ops, " << r->partitions << " partition(s), " << r->unknown_outcomes
            << " unknown outcome(s), " << r->states_explored << " search steps; parse " << parse_s
            << " s, validate " << validate_s << " s, check " << secs << " s; cpu parse "
            << parse_cpu << " s, check " << check_cpu << " s"
            << (no_partition ? ", unpartitioned" : "") << (exact ? ", exact search" : "") << ")\n";
  if (r->verdict == Verdict::kNotLinearizable) {
    std::cout << ErrorCodeName(ErrorCode::RACE_NOT_LINEARIZABLE) << "\n";
    PrintWitness(std::cout, *h, *r->witness);
    return kExitViolation;
  }
  if (r->verdict == Verdict::kUnknown) {
    if (r->unknown_memory)
      std::cout << "the exact search's kept states passed their memory cap ("
                << (kSearchMemoryCapBytes >> 30) << " GiB) while searching partition "
                << r->unknown_partition << "\n";
    else
      std::cout << "the time budget ran out while searching partition " << r->unknown_partition
                << "\n";
    return kExitCheckUnknown;
  }
  return kExitOk;
}

// How many program indices i in [start, start + programs) have i % count == index
// (start + programs <= 2^64 - 1, index < count).
uint64_t ShardShare(uint64_t start, uint64_t programs, uint64_t index, uint64_t count) {
  auto below = [&](uint64_t x) { return x / count + (x % count > index ? 1 : 0); };
  return below(start + programs) - below(start);
}

// Why a shard report (shard and verdict already checked) is not one fuzz races writes, or "".
std::string CheckShardReport(const Json& j) {
  static const std::set<std::string> kMembers = {
      "kind",         "seed",      "start",  "programs",         "repeat",
      "time_limit_s", "shard",     "shape",  "mutant",           "target",
      "programs_run", "histories", "ops",    "unknown_verdicts", "seconds",
      "verdict",      "error",     "failure"};
  for (const auto& [key, value] : j.items())
    if (!kMembers.count(key)) return "unknown member " + base::QuoteClipped(key);
  for (const char* key : {"seed", "start", "programs", "repeat", "programs_run", "histories", "ops",
                          "unknown_verdicts"})
    if (!j.contains(key) || !j[key].is_number_unsigned())
      return std::string(key) + ": expected an unsigned integer";
  for (const char* key : {"seconds", "time_limit_s"})
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0) ||
        !std::isfinite(j[key].get<double>()))
      return std::string(key) + ": expected a number of seconds >= 0";
  if (!j.contains("error") || !j["error"].is_string())
    return "error: expected a string (empty when no target failed)";
  if (!j.contains("failure") || !(j["failure"].is_null() || j["failure"].is_object()))
    return "failure: expected null or an object";
  // The campaign's parameters are what fuzz races writes: they are compared across shards, so a
  // shard without them, or with other members, was merged as long as every shard agreed
  // (2026-12-07: a renamed shape member read as "parameters differ" beside a well-formed shard).
  const auto unsigned_members = [](const Json& o, std::initializer_list<const char*> keys) {
    if (!o.is_object() || o.size() != keys.size()) return false;
    for (const char* k : keys)
      if (!o.contains(k) || !o[k].is_number_unsigned()) return false;
    return true;
  };
  if (!j.contains("shape") ||
      !unsigned_members(j["shape"], {"threads", "handles", "ops", "layers"}))
    return "shape: expected {\"threads\", \"handles\", \"ops\", \"layers\"}, each an unsigned "
           "integer";
  for (const char* key : {"mutant", "target"})
    if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty())
      return std::string(key) + ": expected a non-empty string";
  // A failure is the shrunk reproducer fuzz races found: printed by merge as it stands, so it
  // holds those members only (an arbitrary object was printed whole).
  if (const Json& f = j["failure"]; f.is_object()) {
    bool ok = f.size() == 6 && f.contains("shrunk_program") && f["shrunk_program"].is_string();
    for (const char* k : {"program_index", "program_seed", "shrunk_ops"})
      ok = ok && f.contains(k) && f[k].is_number_unsigned();
    for (const char* k : {"seconds_to_detection", "shrink_seconds"})
      ok = ok && f.contains(k) && f[k].is_number() && f[k].get<double>() >= 0 &&
           std::isfinite(f[k].get<double>());
    if (!ok)
      return "failure: expected {\"program_index\", \"program_seed\", \"shrunk_ops\" (unsigned "
             "integers), \"seconds_to_detection\", \"shrink_seconds\" (seconds >= 0), "
             "\"shrunk_program\" (text)}";
  }
  const std::string verdict = j["verdict"];
  const bool failed = !j["failure"].is_null(), errored = !j["error"].get<std::string>().empty();
  if (failed != (verdict == "not_linearizable") || errored != (verdict == "error"))
    return "verdict " + base::QuoteClipped(verdict) + " disagrees with its " +
           (failed    ? "failure"
            : errored ? "error"
                      : "absent failure and error");
  const uint64_t start = j["start"], programs = j["programs"], repeat = j["repeat"];
  if (programs == 0 || repeat == 0 || start > UINT64_MAX - programs)
    return "start " + std::to_string(start) + ", programs " + std::to_string(programs) +
           ", repeat " + std::to_string(repeat) +
           ": expected programs and repeat >= 1 and indices below 2^64";
  const uint64_t share =
      ShardShare(start, programs, j["shard"][0].get<uint64_t>(), j["shard"][1].get<uint64_t>());
  const uint64_t run = j["programs_run"], histories = j["histories"];
  // A shard runs its whole share, unless it stopped at a failure or at its time limit.
  const bool may_stop = failed || errored || j["time_limit_s"].get<double>() > 0;
  if (run > share || (!may_stop && run != share))
    return "programs_run " + std::to_string(run) + ": the shard's share of the campaign is " +
           std::to_string(share) + " program(s)" + (may_stop ? " at most" : "");
  const auto full = CheckedMul(run, repeat);
  if (!full || histories > *full || (!failed && !errored && histories != *full))
    return "histories " + std::to_string(histories) + ": expected " + std::to_string(run) +
           " program(s) x " + std::to_string(repeat) + " run(s)" +
           (failed || errored ? " at most" : "");
  return "";
}

int RunMerge(const std::vector<std::string>& files) {
  Json merged;
  std::set<uint32_t> shards_seen;
  uint32_t shard_count = 0;
  uint64_t programs = 0, histories = 0, ops = 0, unknown = 0;
  std::vector<Json> failures;
  std::vector<std::string> errors;
  for (const auto& f : files) {
    auto p = ReadJsonFileStrict(f);
    if (!p.ok()) {
      std::cerr << "fuzz merge: " << Printable(p.status().message()) << "\n";
      return kExitUsage;
    }
    const Json& j = p->value;
    if (!j.is_object() || !j.contains("kind") || j["kind"] != kCampaignKind) {
      std::cerr << "fuzz merge: " << Printable(f) << ": expected a " << kCampaignKind
                << " report (kvconform fuzz races --report FILE): " << Printable(DescribeKind(j))
                << "\n";
      return kExitUsage;
    }
    // A report's shard and verdict of another shape are named (until 2026-12-07 a shard [-1, 2]
    // or [0.0, 2] was "expected a kvconform.race_campaign/1 report").
    const auto refuse = [&](const char* member, const char* expected) {
      std::cerr << "fuzz merge: " << Printable(f) << ": " << member << ": expected " << expected
                << ", got "
                << (j.contains(member) ? Printable(base::ClippedJsonText(j[member].dump()))
                                       : std::string("nothing"))
                << "\n";
      return kExitUsage;
    };
    if (!j.contains("shard") || !j["shard"].is_array() || j["shard"].size() != 2 ||
        !j["shard"][0].is_number_unsigned() || !j["shard"][1].is_number_unsigned())
      return refuse("shard", "[I, N] with 0 <= I < N < 2^32");
    if (!j.contains("verdict") || !j["verdict"].is_string())
      return refuse("verdict", "linearizable, not_linearizable or error");
    // The shard is I/N with 0 <= I < N < 2^32 (what --shard accepts), and the verdict one that
    // fuzz races writes (probe 34: shard [7, 2], a count of 2^32 + 1 wrapping to 1, and the
    // verdict "not-linearizable" all merged as a complete, passing campaign).
    const uint64_t index64 = j["shard"][0].get<uint64_t>(), count64 = j["shard"][1].get<uint64_t>();
    const std::string verdict = j["verdict"];
    if (count64 == 0 || count64 > UINT32_MAX || index64 >= count64) {
      std::cerr << "fuzz merge: " << Printable(f)
                << ": shard: expected [I, N] with 0 <= I < N < 2^32, got " << j["shard"].dump()
                << "\n";
      return kExitUsage;
    }
    if (verdict != "linearizable" && verdict != "not_linearizable" && verdict != "error") {
      std::cerr << "fuzz merge: " << Printable(f)
                << ": verdict: expected linearizable, not_linearizable or error, got "
                << Printable(base::QuoteClipped(verdict)) << "\n";
      return kExitUsage;
    }
    // The report is what fuzz races writes, and its figures are a shard's (probe 44: counts
    // that wrapped, a shard that ran none of its programs, a passing verdict beside a failure,
    // and unknown members all merged as a complete, passing campaign).
    if (std::string why = CheckShardReport(j); !why.empty()) {
      std::cerr << "fuzz merge: " << Printable(f) << ": " << Printable(why) << "\n";
      return kExitUsage;
    }
    Json params = {j["seed"],  j["start"],  j["programs"], j["repeat"],  j["time_limit_s"],
                   j["shape"], j["mutant"], j["target"],   j["shard"][1]};
    if (merged.is_null()) {
      merged = params;
      shard_count = j["shard"][1].get<uint32_t>();
    } else if (merged != params) {
      std::cerr << "fuzz merge: " << Printable(f) << ": campaign parameters differ from "
                << Printable(files[0])
                << " (seed, start, programs, shape, mutant, target and shard count must match)\n";
      return kExitUsage;
    }
    uint32_t idx = j["shard"][0].get<uint32_t>();
    if (!shards_seen.insert(idx).second) {
      std::cerr << "fuzz merge: " << Printable(f) << ": shard " << idx << "/" << shard_count
                << " appears twice\n";
      return kExitUsage;
    }
    auto sum = [](uint64_t* total, const Json& v) {
      const auto s = CheckedAdd(*total, v.get<uint64_t>());
      if (s) *total = *s;
      return s.has_value();
    };
    if (!sum(&programs, j["programs_run"]) || !sum(&histories, j["histories"]) ||
        !sum(&ops, j["ops"]) || !sum(&unknown, j["unknown_verdicts"])) {
      std::cerr << "fuzz merge: " << Printable(f)
                << ": its counts added to those of the reports before it overflow 64 bits (one "
                   "of these reports is malformed)\n";
      return kExitUsage;
    }
    if (j["verdict"] == "not_linearizable") failures.push_back({{"shard", idx}, {"failure", j["failure"]}});
    // A target's error keeps the report limit of a message (violation.h).
    if (j["verdict"] == "error")
      errors.push_back(f + ": " +
                       base::Clipped(j["error"].get<std::string>(), kMaxReportedMessageBytes));
  }
  std::cout << "merged " << shards_seen.size() << " of " << shard_count << " shard(s): programs "
            << programs << ", histories " << histories << ", ops " << ops
            << ", unknown verdicts " << unknown << "\n";
  if (shards_seen.size() != shard_count) {
    std::cout << "missing shard(s):";
    for (uint32_t i = 0; i < shard_count; ++i)
      if (!shards_seen.count(i)) std::cout << " " << i;
    std::cout << " (the campaign is incomplete)\n";
  }
  for (const auto& e : errors) std::cout << "TARGET FAILED: " << Printable(e) << "\n";
  for (const auto& f : failures) std::cout << "NOT LINEARIZABLE: " << f.dump() << "\n";
  if (!failures.empty() || !errors.empty()) return kExitViolation;
  if (shards_seen.size() != shard_count) return kExitUsage;
  std::cout << "verdict: linearizable (no failure in any shard)\n";
  return kExitOk;
}

}  // namespace

void AddFuzzCommand(CLI::App& app) {
  CLI::App* fuzz = app.add_subcommand("fuzz", "Race fuzzing of the KV lifecycle (M5.1 0x01, 0x09)");
  fuzz->require_subcommand(1);

  auto ra = std::make_shared<RacesArgs>();
  CLI::App* races = fuzz->add_subcommand(
      "races", "Run random concurrent programs against the store (or --driver) and check each "
               "history for linearizability; exit 1 on a failure");
  races->add_option("--threads", ra->threads, "worker threads (default 4)");
  races->add_option("--handles", ra->handles, "handle lineages per program (default 2)");
  races->add_option("--ops", ra->ops, "operations per program (default 200)");
  races->add_option("--layers", ra->layers, "cache-producing layers (default 2)");
  races->add_option("--seed", ra->seed, "campaign seed (default 1)");
  races->add_option("--start", ra->start, "first program index (default 0)");
  races->add_option_function<uint64_t>(
      "--programs",
      [ra](const uint64_t& n) {
        ra->programs = n;
        ra->programs_given = true;
      },
      "program indices to visit (default 100, or unlimited with --time)");
  races->add_option("--repeat", ra->repeat, "runs per program (default 1)");
  races->add_option("--time", ra->time_s,
                    "stop after this many seconds, checked between programs (default 0: no "
                    "time limit)");
  races->add_option("--mutant", ra->mutant, "seeded bug in the store (none, ...)");
  races->add_option("--shard", ra->shard, "I/N: run only programs with index % N == I");
  races->add_option("--driver", ra->driver, "external runtime driver command (driver protocol)");
  races->add_option("--driver-timeout-ms", ra->driver_timeout_ms, "bounded wait per answer");
  races->add_flag("--no-shrink", ra->no_shrink, "report the failing program unshrunk");
  races->add_option("--shrink-time", ra->shrink_time_s, "shrinking budget in seconds (default 20)");
  races->add_option("--shrink-reruns", ra->shrink_reruns,
                    "runs per shrink candidate; it fails if any run fails (default 10)");
  races->add_option("--history-out", ra->history_out, "write the failing (else last) history");
  races->add_option("--report", ra->report_out, "write a campaign report (for fuzz merge)");
  races->add_flag("--quiet", ra->quiet, "no progress lines");
  races->callback([ra] { ExitCode() = RunRaces(*ra); });

  auto path = std::make_shared<std::string>();
  auto no_partition = std::make_shared<bool>(false);
  auto budget = std::make_shared<double>(60);
  CLI::App* check = fuzz->add_subcommand(
      "check", "Re-check a recorded history (JSON Lines); exit 0 linearizable, 1 not, "
               "2 malformed, 4 unknown within the budget");
  check->add_option("history", *path, "HISTORY.jsonl")->required();
  check->add_flag("--no-partition", *no_partition, "one search over all lineages (baseline)");
  check->add_option("--budget", *budget, "time budget in seconds (default 60)");
  auto exact = std::make_shared<bool>(false);
  check->add_flag("--exact", *exact,
                  "the exact search only (full state copies in the visited cache), no in-place "
                  "fast path");
  check->callback([path, no_partition, exact, budget] {
    ExitCode() = RunCheck(*path, *no_partition, *exact, *budget);
  });

  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* merge = fuzz->add_subcommand("merge", "Combine shard reports of one campaign");
  merge->add_option("files", *files, "reports written by fuzz races --report")->required();
  merge->callback([files] { ExitCode() = RunMerge(*files); });

  CLI::App* mutants = fuzz->add_subcommand("mutants", "List the store's seeded bugs");
  mutants->callback([] {
    for (const auto& m : AllMutants()) std::cout << m.name << "  " << m.rule << "\n";
    ExitCode() = kExitOk;
  });
}

}  // namespace kvc::cli
