// `kvconform suite`: run every bundled fixture, invalid fixture and registered section,
// then print a summary table per kind.
#include <iomanip>
#include <iostream>
#include <map>

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

void Run(const SuiteOptions& opt) {
  std::string root = opt.root.empty() ? DefaultRoot() : opt.root;
  std::vector<std::pair<std::string, FixtureOutcome>> results;  // section -> outcome
  for (const auto& path : ListFixtureFiles(root)) {
    FixtureOutcome o = RunFixtureFile(path, root);
    if (!opt.filter.empty() && o.case_name.find(opt.filter) == std::string::npos) continue;
    results.emplace_back(o.kind.empty() ? "unknown" : o.kind, std::move(o));
  }
  for (const auto& section : SuiteSections()) {
    for (auto& o : section.run(root)) {
      if (!opt.filter.empty() && o.case_name.find(opt.filter) == std::string::npos) continue;
      results.emplace_back(section.name, std::move(o));
    }
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
    std::cout << DumpReport(nlohmann::json{
                     {"verdict", failed ? "fail" : "pass"}, {"summary", summary}, {"cases", cases}})
              << "\n";
  } else if (fmt == Format::kJunit) {
    std::vector<FixtureOutcome> all;
    for (auto& [s, o] : results) all.push_back(o);
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
      std::cout << std::left << std::setw(44) << name << std::right << std::setw(7) << r.valid
                << std::setw(9) << r.invalid << std::setw(8) << r.passed << std::setw(8) << r.failed
                << "\n";
      total.valid += r.valid; total.invalid += r.invalid; total.passed += r.passed; total.failed += r.failed;
    }
    std::cout << std::left << std::setw(44) << "total" << std::right << std::setw(7) << total.valid
              << std::setw(9) << total.invalid << std::setw(8) << total.passed << std::setw(8)
              << total.failed << "\n";
    std::cout << (results.empty() ? "verdict: ERROR (no cases)" : failed ? "verdict: FAIL" : "verdict: PASS") << "\n";
  }
  ExitCode() = results.empty() ? kExitUsage : failed ? kExitViolation : kExitOk;
  if (results.empty())
    std::cerr << "kvconform suite: no cases found under " << Printable(root)
              << (opt.filter.empty()
                      ? std::string()
                      : " whose name contains --filter \"" + Printable(opt.filter) + "\"")
              << "\n";
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
