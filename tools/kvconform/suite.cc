// `kvconform suite`: run every bundled fixture, invalid fixture and registered section,
// then print a summary table per kind.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>

#include "reference/race/history.h"
#include "reference/race/kv_model.h"
#include "reference/race/linearizability.h"
#include "reference/validate/kinds.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct SuiteOptions {
  std::string root;
  std::string filter;
  std::string format = "text";
  bool verbose = false;
};

struct Row {
  size_t valid = 0, invalid = 0, passed = 0, failed = 0;
};

// OK when the race history at `path` is linearizable (the search of `fuzz check`); else why:
// RACE_NOT_LINEARIZABLE for a history no order explains or one not decided within the budget.
Status CheckLinearizable(const std::string& path) {
  auto h = race::ReadHistoryFile(path);
  if (!h.ok()) return h.status();
  auto model = race::KvModel::FromHeader(h->header);
  if (!model.ok()) return model.status();
  auto r = race::CheckHistory(*model, *h);
  if (!r.ok()) return r.status();
  if (r->verdict == race::Verdict::kLinearizable) return Status::Ok();
  return Status(StatusCode::kInvalidArgument,
                path + ": the history is " +
                    (r->verdict == race::Verdict::kUnknown
                         ? std::string("not decided within the check budget")
                         : std::string("not linearizable")),
                ErrorCode::RACE_NOT_LINEARIZABLE);
}

std::string NoCasesMessage(const std::string& root, const std::string& filter) {
  return "no cases found under " + root +
         (filter.empty() ? std::string() : " whose name contains --filter \"" + filter + "\"");
}

void Run(const SuiteOptions& opt) {
  std::string root = opt.root.empty() ? DefaultRoot() : opt.root;
  std::vector<std::pair<std::string, FixtureOutcome>> results;  // section -> outcome
  std::vector<UnlistedEntry> unlisted;
  for (const auto& path : ListFixtureFiles(root, &unlisted)) {
    FixtureOutcome o = RunFixtureFile(path, root);
    // A valid race history claims more than its form: that the store's history is
    // linearizable (probe 56: a result changed so that no order explains it still passed,
    // since validation judges the document only).
    if (o.passed && !o.invalid && o.kind == race::kHistoryKind)
      if (Status why = CheckLinearizable(path); !why.ok()) {
        o.passed = false;
        o.detail = "valid race history: " + why.ToString();
      }
    results.emplace_back(o.kind.empty() ? "unknown" : o.kind, std::move(o));
  }
  // An entry with a document's name that is no document (a link to nothing, a FIFO) is a case
  // that cannot be read, not one left out (since 2026-12-07).
  for (const auto& u : unlisted) {
    FixtureOutcome o;
    o.path = u.path;
    o.case_name = CaseName(u.path, root);
    o.error = IoError(u.path + ": " + u.why);
    o.detail = o.error.ToString();
    results.emplace_back("unknown", std::move(o));
  }
  for (const auto& section : SuiteSections())
    for (auto& o : section.run(root)) results.emplace_back(section.name, std::move(o));
  // A case's name names one case: two files of one name (foo.json and foo.jsonl) fail both
  // (probe 56: the report listed one name twice, and the name no longer said which file).
  {
    std::map<std::string, size_t> seen;
    for (const auto& [section, o] : results) ++seen[o.case_name];
    for (auto& [section, o] : results)
      if (seen[o.case_name] > 1 && o.error.ok()) {
        o.passed = false;
        o.error = Status(StatusCode::kInvalidArgument,
                         o.path + ": another case has the name " + o.case_name +
                             " (one file per case: rename one)",
                         ErrorCode::INPUT_FIXTURE_MALFORMED);
        o.detail = o.error.ToString();
      }
  }
  // --filter keeps the cases whose name contains it; a filter that is a case's whole name keeps
  // that case alone (probe 56: "transfer_protocol" also selected "transfer_protocol_aborted").
  // A name is matched as it is and as the reports print it (Printable: a control character or
  // backslash escaped), so a printed name selects its case (probe 56 leftover: a name with a
  // tab was printed "\x09" and that text selected nothing).
  // A printed name is one case's (Printable escapes a backslash, so it is one-to-one), and it
  // comes first: a file literally named as another's printed name ("a\x09b" beside "a<TAB>b")
  // is selected by its own printed name, "a\\x09b" (probe 84: the printed name selected both).
  if (!opt.filter.empty()) {
    auto printed_is = [&](const std::string& name) { return Printable(name) == opt.filter; };
    auto raw_is = [&](const std::string& name) { return name == opt.filter; };
    auto contains = [&](const std::string& name) {
      return name.find(opt.filter) != std::string::npos ||
             Printable(name).find(opt.filter) != std::string::npos;
    };
    auto any = [&](const auto& pred) {
      return std::any_of(results.begin(), results.end(),
                         [&](const auto& r) { return pred(r.second.case_name); });
    };
    const bool printed = any(printed_is);
    const bool raw = !printed && any(raw_is);
    std::erase_if(results, [&](const auto& r) {
      const std::string& name = r.second.case_name;
      return printed ? !printed_is(name) : raw ? !raw_is(name) : !contains(name);
    });
  }
  std::map<std::string, Row> rows;
  size_t failed = 0;
  for (const auto& [section, o] : results) {
    Row& r = rows[section];
    (o.invalid ? r.invalid : r.valid)++;
    if (o.passed) ++r.passed; else { ++r.failed; ++failed; }
  }
  Format fmt = ParseFormat(opt.format);
  if (fmt == Format::kJson) {
    nlohmann::json cases = nlohmann::json::array(), summary = nlohmann::json::array();
    for (const auto& [section, o] : results) {
      auto j = OutcomeToJson(o);
      j["section"] = section;
      cases.push_back(std::move(j));
    }
    for (const auto& [name, r] : rows)
      summary.push_back({{"section", name}, {"valid_cases", r.valid}, {"invalid_cases", r.invalid},
                         {"passed", r.passed}, {"failed", r.failed}});
    // No case is an error, in every format (probe 84: the JSON verdict said "pass" and the
    // JUnit report had no failing testcase, where the text said ERROR and the exit code 2).
    nlohmann::json report{{"verdict", results.empty() ? "error"
                                      : failed        ? "fail"
                                                      : "pass"},
                          {"summary", summary},
                          {"cases", cases}};
    if (results.empty()) report["error"] = NoCasesMessage(root, opt.filter);
    std::cout << DumpReport(report) << "\n";
  } else if (fmt == Format::kJunit) {
    std::vector<FixtureOutcome> all;
    for (auto& [s, o] : results) all.push_back(o);
    if (all.empty()) {
      FixtureOutcome none;
      none.case_name = "kvconform.suite";
      none.kind = "suite";
      none.error = Status(StatusCode::kInvalidArgument, NoCasesMessage(root, opt.filter));
      all.push_back(std::move(none));
    }
    std::cout << RenderJunit("kvconform.suite", all);
  } else {
    for (const auto& [section, o] : results) {
      if (o.passed && !opt.verbose) continue;
      // Case names and details may quote the input: Printable keeps one case on one line.
      std::cout << (o.passed ? "PASS " : "FAIL ") << Printable(o.case_name);
      if (!o.passed) std::cout << ": " << Printable(o.detail);
      std::cout << "\n";
    }
    std::cout << "\nkvconform suite (" << Printable(root) << ")\n";
    std::cout << std::left << std::setw(44) << "section / kind" << std::right << std::setw(7)
              << "valid" << std::setw(9) << "invalid" << std::setw(8) << "passed" << std::setw(8)
              << "failed" << "\n";
    Row total;
    for (const auto& [name, r] : rows) {
      // A section is a document's kind, which the file states (probe 84: a kind with a newline
      // forged a "verdict: PASS" line).
      std::cout << std::left << std::setw(44) << Printable(name) << std::right << std::setw(7)
                << r.valid << std::setw(9) << r.invalid << std::setw(8) << r.passed << std::setw(8)
                << r.failed << "\n";
      total.valid += r.valid; total.invalid += r.invalid; total.passed += r.passed; total.failed += r.failed;
    }
    std::cout << std::left << std::setw(44) << "total" << std::right << std::setw(7) << total.valid
              << std::setw(9) << total.invalid << std::setw(8) << total.passed << std::setw(8)
              << total.failed << "\n";
    std::cout << (results.empty() ? "verdict: ERROR (no cases)" : failed ? "verdict: FAIL" : "verdict: PASS") << "\n";
  }
  ExitCode() = results.empty() ? kExitUsage : failed ? kExitViolation : kExitOk;
  if (results.empty())
    std::cerr << "kvconform suite: " << Printable(NoCasesMessage(root, opt.filter)) << "\n";
}

}  // namespace

void AddSuiteCommand(CLI::App& app) {
  auto opt = std::make_shared<SuiteOptions>();
  CLI::App* cmd = app.add_subcommand(
      "suite", "Run every bundled fixture and invalid fixture (and registered sections) and print "
               "a conformance summary");
  cmd->add_option("--root", opt->root, "kit source tree (default: $KVCONFORM_ROOT or build source)");
  cmd->add_option("--filter", opt->filter, "run only cases whose name contains this text");
  cmd->add_option("--format", opt->format, "text | json | junit")
      ->check(CLI::IsMember({"text", "json", "junit"}));
  cmd->add_flag("-v,--verbose", opt->verbose, "list passing cases too");
  cmd->callback([opt] { Run(*opt); });
}

}  // namespace kvc::cli
