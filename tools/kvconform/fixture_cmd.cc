// `kvconform fixture materialize`: the document an invalid fixture checks, written out.
//
// An invalid fixture is a base document plus a one-operation patch (docs/fixture-format.md).
// Runtime vendors running their own validators on our cases, and the fuzzers' seed corpora
// (tools/fuzz/seed-corpus.sh), need the patched document itself; this command writes it with
// the fixture runner's own applier (MaterializeInvalidFixture), so no second copy of the patch
// rules exists.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"
#include "reference/validate/kinds.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

namespace fs = std::filesystem;

struct MaterializeOptions {
  std::vector<std::string> files;
  std::string out_dir;
};

// The output file's name: the fixture's path with every character outside [A-Za-z0-9_.-]
// replaced by '_' and its extension that of its base (a JSON Lines base stays JSON Lines).
std::string OutputName(const std::string& fixture, const MaterializedFixture& m) {
  std::string stem = fs::path(fixture).lexically_normal().replace_extension().string();
  while (stem.starts_with("../")) stem.erase(0, 3);
  for (char& ch : stem)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-' && ch != '.')
      ch = '_';
  return stem + (m.jsonl ? ".jsonl" : ".json");
}

void Run(const MaterializeOptions& opt) {
  const std::string me = "kvconform fixture materialize: ";
  // Directories expand to the invalid fixtures under them; a file named explicitly must be one.
  std::vector<std::pair<std::string, bool>> files;  // path, named explicitly
  bool any_error = false;
  for (const auto& f : opt.files) {
    std::error_code ec;
    if (fs::is_directory(f, ec)) {
      std::vector<UnlistedEntry> unlisted;
      const auto sub = ListDocumentFiles(f, nullptr, &unlisted);
      for (const auto& u : unlisted) {  // since 2026-12-07: skipped silently
        std::cerr << me << Printable(u.path) << ": " << Printable(u.why) << "\n";
        any_error = true;
      }
      if (sub.empty() && unlisted.empty()) {
        std::cerr << me << Printable(f) << ": no .json files\n";
        any_error = true;
      }
      for (const auto& s : sub) files.emplace_back(s, false);
    } else {
      files.emplace_back(f, true);
    }
  }
  if (files.size() > 1 && opt.out_dir.empty()) {
    std::cerr << me
              << "more than one file given or found: give --out-dir (standard output holds one "
                 "document)\n";
    ExitCode() = kExitUsage;
    return;
  }
  if (!opt.out_dir.empty()) {
    std::error_code ec;
    fs::create_directories(opt.out_dir, ec);
    if (ec) {
      std::cerr << me << Printable(opt.out_dir) << ": cannot create the directory: " << ec.message()
                << "\n";
      ExitCode() = kExitUsage;
      return;
    }
  }
  size_t written = 0;
  std::map<std::string, std::string> written_from;  // output name -> the fixture written there
  for (const auto& [path, named] : files) {
    if (path.ends_with(".jsonl")) {  // a trace or history: a document, never an invalid fixture
      if (named) {
        std::cerr << me << Printable(path) << ": a JSON Lines document, not an invalid fixture ("
                  << kInvalidFixtureKind << ")\n";
        any_error = true;
      }
      continue;
    }
    auto parsed = ReadJsonFileStrict(path);
    if (!parsed.ok()) {
      std::cerr << me << Printable(parsed.status().ToString()) << "\n";
      any_error = true;
      continue;
    }
    if (KindOf(parsed->value) != kInvalidFixtureKind) {
      // Named: an error. Found in a directory: a valid document beside the invalid fixtures,
      // skipped.
      if (named) {
        std::cerr << me << Printable(path) << ": not an invalid fixture (" << kInvalidFixtureKind
                  << "): " << Printable(DescribeKind(parsed->value)) << "\n";
        any_error = true;
      }
      continue;
    }
    auto m = MaterializeInvalidFixture(path, parsed->value);
    if (!m.ok()) {
      std::cerr << me << Printable(m.status().ToString()) << "\n";
      any_error = true;
      continue;
    }
    const std::string text = m->Text();
    if (opt.out_dir.empty()) {
      std::cout << text;
      if (!m->jsonl) std::cout << "\n";
      ++written;
      continue;
    }
    const std::string out = (fs::path(opt.out_dir) / OutputName(path, *m)).string();
    // Two paths can flatten to one name (a/b_c.json and a_b/c.json): the second is refused,
    // never written over the first.
    if (auto [it, fresh] = written_from.emplace(out, path); !fresh) {
      std::cerr << me << Printable(path) << ": its document's name " << Printable(out)
                << " is already taken by " << Printable(it->second) << "'s\n";
      any_error = true;
      continue;
    }
    std::ofstream os(out, std::ios::binary);
    os << text;
    if (!m->jsonl) os << "\n";
    os.close();
    if (!os) {
      std::cerr << me << Printable(out) << ": cannot write\n";
      any_error = true;
      continue;
    }
    // One line per document: where it is, what it must raise, and what it came from.
    std::cout << Printable(out) << "\t" << m->expected_code << "\t" << Printable(path) << "\n";
    ++written;
  }
  if (written == 0 && !any_error) {
    std::cerr << me << "no invalid fixture among the files given\n";
    any_error = true;
  }
  ExitCode() = any_error ? kExitUsage : kExitOk;
}

}  // namespace

void AddFixtureCommand(CLI::App& app) {
  CLI::App* fixture =
      app.add_subcommand("fixture", "Invalid-fixture tools (docs/fixture-format.md)");
  fixture->require_subcommand(1);
  auto opt = std::make_shared<MaterializeOptions>();
  CLI::App* m = fixture->add_subcommand(
      "materialize",
      "Write the document each invalid fixture checks: its base with its one-operation patch "
      "applied (one compact JSON text per line for a JSON Lines base). One fixture without "
      "--out-dir: to standard output. With --out-dir: one file each, and a line per file on "
      "standard output: PATH <tab> EXPECTED_CODE <tab> FIXTURE. Directories give every invalid "
      "fixture under them. Exit 0 all written, 2 a file unreadable, malformed or not an invalid "
      "fixture.");
  m->add_option("files", opt->files, "invalid fixture files or directories")->required();
  m->add_option("--out-dir", opt->out_dir, "directory to write the documents into (created)");
  m->callback([opt] { Run(*opt); });
}

}  // namespace kvc::cli
