// Data-driven fixtures: running one valid or invalid fixture file against its validator.
//
// A valid fixture is any document of a registered kind and must produce no violation.
// An invalid fixture (kind "kvconform.invalid_fixture/1", docs/fixture-format.md) names
// a base fixture (a path relative to its own directory), a one-operation RFC 6902 JSON
// Patch and the one registry code it must raise; it passes only when the patched base
// raises that code and no other. For a JSON Lines base the patch applies to the array of
// its lines (pointer "/3/payload/x" is line 4). Thread-compatible; no global state.
#ifndef KVCONFORM_REFERENCE_VALIDATE_FIXTURES_H_
#define KVCONFORM_REFERENCE_VALIDATE_FIXTURES_H_

#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kInvalidFixtureKind = "kvconform.invalid_fixture/1";

struct FixtureOutcome {
  std::string path;        // as given
  std::string case_name;   // path relative to the suite root, without extension
  std::string kind;        // validated kind (the base's kind for an invalid fixture)
  bool invalid = false;    // an invalid fixture (must fail with expected_code)
  std::string expected_code;
  Violations violations;   // what the validator reported
  Status error;            // non-OK when the file could not be read, parsed or applied
  bool passed = false;
  std::string detail;      // why it failed, for reports
  uint64_t omitted = 0;    // violations found beyond a report's limit: counted, not listed
};

// The document an invalid fixture checks: its base with its one-operation patch applied.
struct MaterializedFixture {
  std::string base;           // the base's path: the fixture's directory joined with base_member
  std::string base_member;    // the fixture's `base` member, as written
  std::string expected_code;  // the one code the document must raise
  bool jsonl = false;         // a JSON Lines base: `document` is the array of its lines
  Json document;              // the patched base
  // The patched base as a file's bytes: one compact JSON text per line for a JSON Lines base
  // (what the fixture runner validates), compact JSON otherwise.
  std::string Text() const;
};

// Reads the invalid fixture `doc` (the parsed file at `path`) and applies its patch to its base.
// Refused with INPUT_FIXTURE_MALFORMED ("<path>: <why>"): a member missing, mistyped or unknown,
// a `case` that is not the file's path (checked only when `suite_root` is given), an
// expected_code outside the registry, a patch of other than one operation, a base that does not
// load or is itself an invalid fixture, a patch that does not apply, leaves the base unchanged
// or turns a JSON Lines base into something other than an array of lines. `expected_code`, when
// given, receives the declared code as soon as the fixture's members are read (also on refusal).
StatusOr<MaterializedFixture> MaterializeInvalidFixture(const std::string& path, const Json& doc,
                                                        const std::string& suite_root = "",
                                                        std::string* expected_code = nullptr);

// Validates one document file of any registered kind (JSON, or JSON Lines by extension).
// `error` is set for unreadable/unparseable input; violations are filled otherwise.
FixtureOutcome ValidateFile(const std::string& path);

// Runs one fixture file (valid or invalid). `suite_root` is used only to derive case_name.
FixtureOutcome RunFixtureFile(const std::string& path, const std::string& suite_root = "");

// Every *.json / *.jsonl under <root>/fixtures and <root>/invalid_fixtures, sorted,
// skipping directories named "models" or starting with "_" (shared data, not cases).
// An entry a directory walk could not take as a document: its path and why.
struct UnlistedEntry {
  std::string path;
  std::string why;
};
std::vector<std::string> ListFixtureFiles(const std::string& root,
                                          std::vector<UnlistedEntry>* unlisted = nullptr);

// Every *.json / *.jsonl regular file under `dir` (recursively, sorted; links to files are
// followed, links to directories are not entered), with the same skipping rule. `skipped`,
// when given, receives the data directories found under `dir` and not entered; `unlisted` each
// entry with a document's name that is not a regular file (a link to nothing, a FIFO, ...) and
// a directory that could not be listed whole: an error for the caller.
std::vector<std::string> ListDocumentFiles(const std::string& dir,
                                           std::vector<std::string>* skipped = nullptr,
                                           std::vector<UnlistedEntry>* unlisted = nullptr);
// A directory of data, not cases (model checkpoints, shared data): named `models` or starting
// with `_` (fixture-format.md). ListDocumentFiles does not enter one; `validate` skips one it is
// given, with a note.
bool IsDataDirectoryName(std::string_view name);

// The case name of a path: relative to root, extension dropped.
std::string CaseName(const std::string& path, const std::string& root);
// The case name with every character outside [A-Za-z0-9_] replaced by '_' (GoogleTest).
std::string SanitizeCaseName(const std::string& name);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_VALIDATE_FIXTURES_H_
