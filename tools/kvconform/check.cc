// `kvconform check TRACE.jsonl`: replay a kvconform.trace/1 trace through the reference state
// machines in one streaming pass and report every violation.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef KVCONFORM_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "reference/trace/checker.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct CheckOptions {
  std::string file;
  std::string format = "text";
  bool parse_only = false;
  uint64_t max_violations = 100000;  // 0: no limit
  // The checker's memory windows (CheckerOptions; docs/trace-format.md "Memory"): the stale-work
  // lifetime the replay assumes, in releases (probe 72: past them a forgotten id's generation
  // fence and receipts are gone, so the seed's slot-17 case can pass).
  uint64_t receipt_window = trace::CheckerOptions{}.receipt_window;
  uint64_t released_window = trace::CheckerOptions{}.released_window;
  uint64_t max_line_bytes = trace::CheckerOptions{}.max_line_bytes;
};

// A check allocates and frees small blocks at a steady rate (the id strings of transaction,
// operation and snapshot records; most ids from runtimes are longer than std::string's 15-byte
// inline buffer) and frees them in bursts (the records of released requests). Freed into
// glibc's fastbins, they were coalesced later in long malloc_consolidate runs over cold memory:
// 23% of a check's samples on a trace with runtime-length ids. Without fastbins (tcache still
// serves the common sizes) a free coalesces at once. docs/trace-check-performance.md "Allocator".
// (A CLI linked with mimalloc, KVCONFORM_MIMALLOC, does not use glibc's malloc; the call is then
// harmless.)
void TuneAllocatorForCheck() {
#ifdef __GLIBC__
  mallopt(M_MXFAST, 0);
#endif
}

// The allocator that serves malloc in this process: "mimalloc X.Y.Z" when a block from malloc
// lies in mimalloc's heap (asked of a live block, not of the build), else the LD_PRELOAD that
// may supply one, else "glibc malloc".
std::string AllocatorDescription() {
#ifdef KVCONFORM_HAVE_MIMALLOC
  void* p = std::malloc(64);
  const bool mi = p != nullptr && mi_is_in_heap_region(p);
  std::free(p);
  if (mi) {
    const int v = mi_version();  // e.g. 209 for 2.0.9
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
           std::to_string(v % 10);
  }
#endif
  if (const char* pre = std::getenv("LD_PRELOAD"); pre != nullptr && *pre != '\0')
    return std::string("LD_PRELOAD ") + pre;
  return "glibc malloc";
}

void Run(const CheckOptions& opt) {
  TuneAllocatorForCheck();  // both sides of the benchmark run under it
  if (opt.parse_only) {
    uint64_t lines = 0;
    Status st = trace::ParseOnlyFile(opt.file, &lines, opt.max_line_bytes);
    std::cout << (st.ok() ? Printable(opt.file) + ": parsed " + std::to_string(lines) + " lines (" +
                                trace::ParserDescription() + "; " + AllocatorDescription() + ")"
                          : Printable(st.ToString()))
              << "\n";
    ExitCode() = st.ok() ? kExitOk : kExitUsage;
    return;
  }
  // Deliberately never destroyed: the process ends right after the report, and the OS takes
  // the memory back at once, whereas destroying the per-request records of a large trace costs
  // a cache miss per record (measurable on traces with thousands of live requests). Held by a
  // static so that leak checkers see it as reachable.
  static std::vector<trace::TraceChecker*>* const kept = new std::vector<trace::TraceChecker*>;
  trace::CheckerOptions checker_options;
  checker_options.max_violations = opt.max_violations;
  checker_options.receipt_window = opt.receipt_window;
  checker_options.released_window = opt.released_window;
  checker_options.max_line_bytes = opt.max_line_bytes;
  trace::TraceChecker& checker =
      *kept->emplace_back(new trace::TraceChecker(opt.file, checker_options));
  Status st = trace::CheckTraceFile(opt.file, &checker);
  const Violations& v = checker.violations();
  const auto& ctx = checker.contexts();
  const std::string verdict = !st.ok() ? "error" : v.empty() ? "pass" : "fail";
  Format fmt = ParseFormat(opt.format);
  if (fmt == Format::kText) {
    // Everything quoted from the input, the file's name included, goes through Printable: one
    // violation is one line, and no name or message can forge another line.
    const std::string file = Printable(opt.file);
    if (!st.ok()) {
      std::cout << Printable(st.ToString()) << "\n";
    } else {
      for (size_t i = 0; i < v.size(); ++i) {
        const ErrorCodeInfo* info = FindErrorCode(v[i].code);
        std::cout << file << ":" << v[i].line << ": " << ErrorCodeName(v[i].code);
        if (!ctx[i].event_id.empty()) std::cout << " event " << Printable(ctx[i].event_id);
        if (!ctx[i].request_id.empty()) std::cout << " request " << Printable(ctx[i].request_id);
        std::cout << " at '" << Printable(v[i].pointer) << "': " << Printable(v[i].message);
        if (info) std::cout << " [" << info->section << "]";
        std::cout << "\n";
      }
      const uint64_t omitted = checker.omitted_violations();
      if (omitted != 0)
        std::cout << file << ": " << omitted << " more violations not listed (--max-violations "
                  << opt.max_violations << ")\n";
      if (checker.gates_not_kept() != 0)
        std::cout << file << ": " << checker.gates_not_kept()
                  << " gates not kept (the gate memory budget was spent: later events of those "
                     "root causes were replayed; docs/trace-format.md \"Memory\")\n";
      std::cout << file << ": " << verdict << " (" << checker.events() << " events, "
                << v.size() + omitted << " violations)\n";
    }
  } else if (fmt == Format::kJson) {
    // The report is DumpReport's document, its violations written one at a time into the place
    // of an empty array (probe 76: the whole document built first took 4-5 times the memory of
    // the violations, 268 MB for the default 100,000).
    nlohmann::json out = {{"verdict", verdict},
                          {"file", opt.file},
                          {"events", checker.events()},
                          {"violations", nlohmann::json::array()},
                          {"violations_omitted", checker.omitted_violations()},
                          {"gates_not_kept", checker.gates_not_kept()}};
    if (!st.ok()) out["error"] = st.ToString();
    const std::string doc = DumpReport(out);
    constexpr std::string_view kEmpty = "\"violations\": []";
    const size_t at = v.empty() ? std::string::npos : doc.find(kEmpty);
    if (at == std::string::npos) {
      std::cout << doc << "\n";
    } else {
      std::cout << std::string_view(doc).substr(0, at) << "\"violations\": [";
      for (size_t i = 0; i < v.size(); ++i) {
        const ErrorCodeInfo* info = FindErrorCode(v[i].code);
        const nlohmann::json one = {{"code", std::string(ErrorCodeName(v[i].code))},
                                    {"line", v[i].line},
                                    {"event_id", ctx[i].event_id},
                                    {"request_id", ctx[i].request_id},
                                    {"pointer", v[i].pointer},
                                    {"message", v[i].message},
                                    {"section", info ? std::string(info->section) : ""}};
        // At the array's depth: every line of the object indented by four spaces.
        const std::string text = DumpReport(one);
        std::string indented = i ? ",\n    " : "\n    ";
        indented.reserve(indented.size() + text.size() + 64);
        for (size_t from = 0, nl; from < text.size(); from = nl + 1) {
          nl = std::min(text.find('\n', from), text.size());
          indented.append(text, from, nl - from);
          if (nl < text.size()) indented += "\n    ";
        }
        std::cout.write(indented.data(), static_cast<std::streamsize>(indented.size()));
      }
      std::cout << "\n  ]" << std::string_view(doc).substr(at + kEmpty.size()) << "\n";
    }
  } else {
    FixtureOutcome o;
    o.path = o.case_name = opt.file;
    o.kind = trace::kTraceKind;
    o.error = st;
    o.violations = v;
    o.omitted = checker.omitted_violations();
    o.passed = st.ok() && v.empty();
    std::cout << RenderJunit("kvconform.check", {o});
  }
  ExitCode() = !st.ok() ? kExitUsage : v.empty() ? kExitOk : kExitViolation;
}

}  // namespace

void AddCheckCommand(CLI::App& app) {
  auto opt = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", "Replay a kvconform.trace/1 JSON Lines trace through the reference lifecycle, "
               "frontier and audit-stream state machines (one streaming pass). Exit 0 conform, "
               "1 violations, 2 unreadable input.");
  cmd->add_option("trace", opt->file, "TRACE.jsonl, or - for standard input")->required();
  cmd->add_option("--format", opt->format, "text | json | junit")
      ->check(CLI::IsMember({"text", "json", "junit"}));
  cmd->add_flag("--parse-only", opt->parse_only,
                "benchmark ceiling: only parse every line with simdjson, check nothing (one "
                "text line, exit 0 whatever the lines hold)");
  cmd->add_option("--max-violations", opt->max_violations,
                  "list at most N violations (default 100000; 0: no limit); the rest are counted "
                  "(the verdict and exit code are the same)");
  cmd->add_option("--max-line-bytes", opt->max_line_bytes,
                  "the longest line replayed, in bytes (default 67108864, 64 MiB; in [1, 2^32 - "
                  "65]); a longer line is read through, not held: TRACE_LINE_TOO_LONG. A line "
                  "needs memory of up to about 22 times its length while it is parsed")
      ->check(CLI::Range(uint64_t{1}, trace::kMaxLineBytesLimit));
  cmd->add_option("--released-window", opt->released_window,
                  "released requests whose tombstone (generation fence, terminal events) is kept "
                  "(default 4096, in [1, 2^24]): the stale-work lifetime the check assumes, in "
                  "releases; memory grows with it")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 24));
  cmd->add_option("--receipt-window", opt->receipt_window,
                  "releases after which a released request's receipts are forgotten (default "
                  "64, in [0, 2^24]; at most as long as --released-window keeps the request; a "
                  "retry after it is judged as never started); memory grows with it")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 24));
  cmd->callback([opt] { Run(*opt); });
}

}  // namespace kvc::cli
