// `kvconform validate FILE...`: validate documents and invalid fixtures, print violations.
#include <filesystem>
#include <iostream>

#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct ValidateOptions {
  std::vector<std::string> files;
  std::string format = "text";
};

// One outcome as text. Every string from the input (file name, kind, pointer, message, an
// IoError's text) goes through Printable: one violation is one line, and no string in a document
// can forge another file's line.
void PrintText(const FixtureOutcome& o) {
  if (!o.error.ok()) {
    std::cout << Printable(o.error.ToString()) << "\n";
    return;
  }
  const std::string path = Printable(o.path);
  // An invalid fixture whose patched document conforms failed its case: the line says so, not
  // "OK" (probe 33: only the JSON report carried the detail).
  if (o.violations.empty() && !o.invalid) {
    std::cout << path << ": OK (" << Printable(o.kind) << ")\n";
    return;
  }
  if (o.invalid)
    std::cout << path << ": invalid fixture, expects " << Printable(o.expected_code) << " -> "
              << (o.passed ? "raised exactly that code" : Printable(o.detail)) << "\n";
  for (const auto& v : o.violations) {
    const ErrorCodeInfo* info = FindErrorCode(v.code);
    std::cout << path;
    if (v.line) std::cout << ":" << v.line;
    std::cout << ": " << ErrorCodeName(v.code) << " at '" << Printable(v.pointer)
              << "': " << Printable(v.message);
    if (info) std::cout << " [" << info->section << "]";
    std::cout << "\n";
  }
}

void Run(const ValidateOptions& opt) {
  std::vector<FixtureOutcome> outcomes;
  bool any_error = false, any_violation = false;
  // An argument that gives nothing to validate is an error row of its own in every format
  // (probe 65: the JUnit report was all green, and the JSON files listed nothing to explain
  // its "error" verdict, beside exit 2).
  auto nothing_from = [&](const std::string& path, const std::string& why) {
    FixtureOutcome o;
    o.path = o.case_name = path;
    o.error = IoError(path + ": " + why);
    o.detail = o.error.ToString();
    outcomes.push_back(std::move(o));
    any_error = true;
  };
  // Directories expand to the documents under them (e.g. `kvconform validate fixtures/*`).
  std::vector<std::string> files;
  for (const auto& f : opt.files) {
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      // Data directories (model checkpoints, shared data) hold no cases; see fixture-format.md.
      std::string base = std::filesystem::path(f).lexically_normal().filename().string();
      if (base.empty()) base = std::filesystem::path(f).lexically_normal().parent_path().filename().string();
      if (IsDataDirectoryName(base)) {
        std::cerr << "kvconform validate: " << Printable(f)
                  << ": data directory, not cases; skipped\n";
        continue;
      }
      // Those found inside are skipped with the same note (probe 48: silently).
      std::vector<std::string> skipped;
      std::vector<UnlistedEntry> unlisted;
      auto sub = ListDocumentFiles(f, &skipped, &unlisted);
      for (const auto& d : skipped)
        std::cerr << "kvconform validate: " << Printable(d)
                  << ": data directory, not cases; skipped\n";
      // A document's name on no document is an error row of its own (since 2026-12-07: skipped
      // silently).
      for (const auto& u : unlisted) nothing_from(u.path, u.why);
      if (sub.empty() && unlisted.empty()) {
        // Nothing to validate is not a pass (a CI job pointed at the wrong folder).
        nothing_from(f, "no .json/.jsonl files");
      }
      files.insert(files.end(), sub.begin(), sub.end());
    } else {
      files.push_back(f);
    }
  }
  // Nothing to validate is not a pass (probe 48: `validate fixtures/models` alone exited 0).
  if (files.empty() && !any_error)
    nothing_from(opt.files.empty() ? std::string() : opt.files.front(),
                 "nothing to validate (only data directories were given)");
  for (const auto& f : files) {
    // An invalid fixture is validated as its mutated base; anything else as itself.
    FixtureOutcome o = RunFixtureFile(f);
    if (o.case_name.empty()) o.case_name = f;
    any_error |= !o.error.ok();
    any_violation |= !o.violations.empty();
    outcomes.push_back(std::move(o));
  }
  Format fmt = ParseFormat(opt.format);
  if (fmt == Format::kText) {
    for (const auto& o : outcomes) PrintText(o);
  } else if (fmt == Format::kJson) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& o : outcomes) {
      auto j = OutcomeToJson(o);
      // For validate, a file "passes" when it conforms (no violations); an invalid fixture's
      // line also says whether exactly its declared code was raised (as the text line does;
      // `suite` judges the case by it).
      j["verdict"] = !o.error.ok() ? "error" : o.violations.empty() ? "pass" : "fail";
      if (o.invalid) j["expected_code_raised"] = o.passed;
      files.push_back(std::move(j));
    }
    nlohmann::json out = {{"verdict", any_error ? "error" : any_violation ? "fail" : "pass"},
                          {"files", std::move(files)}};
    std::cout << DumpReport(out) << "\n";
  } else {
    std::vector<FixtureOutcome> rows = outcomes;
    for (auto& o : rows) o.passed = o.error.ok() && o.violations.empty();
    std::cout << RenderJunit("kvconform.validate", rows);
  }
  ExitCode() = any_error ? kExitUsage : any_violation ? kExitViolation : kExitOk;
}

}  // namespace

void AddValidateCommand(CLI::App& app) {
  auto opt = std::make_shared<ValidateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Validate documents (kind detected from the file); an invalid fixture is "
                  "validated as its patched base. Exit 0 conform, 1 violations, 2 unreadable input.");
  cmd->add_option("files", opt->files,
                  "JSON / JSON Lines files, or directories (every .json/.jsonl under them)")
      ->required();
  cmd->add_option("--format", opt->format, "text | json | junit")
      ->check(CLI::IsMember({"text", "json", "junit"}));
  cmd->callback([opt] { Run(*opt); });
}

}  // namespace kvc::cli
