// Valid/invalid fixture execution and discovery; see fixtures.h.
#include "reference/validate/fixtures.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "reference/base/strict_json.h"
#include "reference/base/text_forms.h"
#include "reference/validate/kinds.h"

namespace kvc {
namespace fs = std::filesystem;
namespace {

bool IsJsonl(const std::string& path) { return path.ends_with(".jsonl"); }

// Splits JSON Lines text into strictly parsed values (one per non-final line).
StatusOr<Json> ParseJsonlToArray(std::string_view text, const std::string& source) {
  Json arr = Json::array();
  size_t start = 0, line = 1;
  if (text.empty()) return ParseError(source + ":1:1: input is empty; expected a header line");
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view l = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    auto parsed = ParseJsonLineStrict(l, source, line);
    if (!parsed.ok()) return parsed.status();
    arr.push_back(std::move(parsed->value));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
    ++line;
  }
  return arr;
}

std::string JsonlFromArray(const Json& arr) {
  std::string out;
  for (const auto& v : arr) {
    out += v.dump();
    out += '\n';
  }
  return out;
}

Violations UnknownKind(const std::string& kind) {
  return {{ErrorCode::INPUT_UNKNOWN_KIND, kind.empty() ? "" : "/kind",
           kind.empty() ? "document has no string \"kind\" field naming its format"
                        : "unknown kind " + base::QuoteClipped(kind)}};
}

// Validates a JSON document, or a JSON Lines text whose header line names the kind.
Violations ValidateDoc(const Json& doc, std::string* kind_out) {
  std::string kind = KindOf(doc);
  *kind_out = kind;
  const KindEntry* k = FindKind(kind);
  if (!k || !k->validate_json) return UnknownKind(kind);
  return k->validate_json(doc);
}

// A JSON Lines text of the kind its header (already parsed) names.
Violations ValidateJsonlOfKind(std::string_view text, const std::string& source,
                               const std::string& kind) {
  const KindEntry* k = FindKind(kind);
  if (!k || !k->validate_jsonl) return UnknownKind(kind);
  return k->validate_jsonl(text, source);
}

Violations ValidateJsonl(std::string_view text, const std::string& source, std::string* kind_out) {
  size_t nl = text.find('\n');
  auto header = ParseJsonStrict(text.substr(0, nl), source + ":1");
  *kind_out = header.ok() ? KindOf(header->value) : "";
  return ValidateJsonlOfKind(text, source, *kind_out);
}

void FillLines(const ParsedJson& parsed, Violations* v) {
  for (auto& x : *v)
    if (x.line == 0) x.line = parsed.LineOf(x.pointer);
}

}  // namespace

FixtureOutcome ValidateFile(const std::string& path) {
  FixtureOutcome o;
  o.path = path;
  if (IsJsonl(path)) {
    auto text = ReadFileToString(path);
    if (!text.ok()) { o.error = text.status(); return o; }
    // A JSON Lines document names its kind on line 1: an empty file or a first line that is
    // not JSON cannot be read (exit 2, as for a .json file), not a document of no kind.
    if (text->empty()) {
      o.error = ParseError(path + ":1:1: empty file (expected a header line naming its kind)");
      return o;
    }
    auto header = ParseJsonStrict(std::string_view(*text).substr(0, text->find('\n')), path);
    if (!header.ok()) {
      o.error = header.status();
      return o;
    }
    o.kind = KindOf(header->value);
    o.violations = ValidateJsonlOfKind(*text, path, o.kind);
    ClipForReport(&o.violations);
    return o;
  }
  auto parsed = ReadJsonFileStrict(path, /*record_locations=*/true);
  if (!parsed.ok()) { o.error = parsed.status(); return o; }
  o.violations = ValidateDoc(parsed->value, &o.kind);
  FillLines(*parsed, &o.violations);
  ClipForReport(&o.violations);
  return o;
}

std::string MaterializedFixture::Text() const {
  return jsonl ? JsonlFromArray(document) : document.dump();
}

StatusOr<MaterializedFixture> MaterializeInvalidFixture(const std::string& path, const Json& doc,
                                                        const std::string& suite_root,
                                                        std::string* expected_code) {
  Violations schema;
  FieldReader r(&doc, "", &schema);
  r.Enum("kind", {kInvalidFixtureKind});
  auto declared_case = r.String("case");
  r.OptString("description");
  r.String("seed_ref");
  auto base = r.String("base");
  const Json* patch = r.Array("patch");
  auto expected = r.String("expected_code");
  r.RejectUnknownFields();
  // A refusal keeps the report limit of a message (violation.h); values it quotes are clipped
  // sooner (80 bytes for a name, 512 for a path or a library's message).
  auto malformed = [&](std::string why) {
    return Status(StatusCode::kInvalidArgument,
                  path + ": " + base::Clipped(why, kMaxReportedMessageBytes),
                  ErrorCode::INPUT_FIXTURE_MALFORMED);
  };
  if (!schema.empty()) {
    const Violation f = ForReport(schema.front());
    return malformed(f.pointer + ": " + f.message);
  }
  // In a suite its name is its path (the case printed and filtered by): a `case` naming another
  // path would be listed under one name and found under none (probe 56). (`validate` takes a
  // fixture from anywhere.)
  if (!suite_root.empty()) {
    const std::string by_path = CaseName(path, "");
    const std::string& declared = *declared_case;
    if (by_path != declared && !by_path.ends_with("/" + declared))
      return malformed("case " + base::QuoteClipped(declared) + " is not this file's path (" +
                       by_path + ")");
  }
  MaterializedFixture m;
  m.expected_code = *expected;
  if (expected_code) *expected_code = *expected;
  if (!ErrorCodeFromName(*expected))
    return malformed("expected_code " + base::QuoteClipped(*expected) +
                     " is not in the error registry");
  if (patch->size() != 1)
    return malformed("patch must hold exactly one operation (a one-field mutation), has " +
                     std::to_string(patch->size()));
  fs::path base_path = fs::path(path).parent_path() / *base;
  m.base = base_path.lexically_normal().string();
  m.base_member = *base;
  m.jsonl = IsJsonl(m.base);
  // A base is a document file: a FIFO or device there would block the read or never end it
  // (probe 87: a FIFO base no process wrote hung validate). fs::status opens nothing.
  {
    std::error_code ec;
    const fs::file_status st = fs::status(base_path, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st))
      return malformed("base: " + base::Clipped(m.base, 512) +
                       " is not a regular file (a base is a document file)");
  }
  Json target;
  if (m.jsonl) {
    auto text = ReadFileToString(m.base);
    if (!text.ok()) return malformed("base: " + base::Clipped(text.status().message(), 512));
    auto arr = ParseJsonlToArray(*text, m.base);
    if (!arr.ok()) return malformed("base: " + base::Clipped(arr.status().message(), 512));
    target = std::move(*arr);
  } else {
    auto b = ReadJsonFileStrict(m.base);
    if (!b.ok()) return malformed("base: " + base::Clipped(b.status().message(), 512));
    target = std::move(b->value);
  }
  // A base is a document the mutation breaks, never an invalid fixture (itself or another: a
  // fixture whose base names itself passed expecting INPUT_UNKNOWN_KIND; probe 38).
  if (target.is_object() && target.contains("kind") && target["kind"] == kInvalidFixtureKind)
    return malformed("base " + base::Clipped(*base, 512) +
                     " is an invalid fixture; a base is the valid document the patch mutates");
  try {
    m.document = target.patch(*patch);
  } catch (const std::exception& e) {
    return malformed("patch does not apply to the base: " + base::Clipped(e.what(), 512));
  }
  // Compared as written: 448 and 448.0 are equal JSON values but different documents (the
  // strict reader refuses the second; probe 38).
  if (m.document.dump() == target.dump()) return malformed("patch leaves the base unchanged");
  if (m.jsonl && !m.document.is_array())
    return malformed("patch must keep a JSON Lines base an array of lines");
  return m;
}

FixtureOutcome RunFixtureFile(const std::string& path, const std::string& suite_root) {
  FixtureOutcome o;
  o.path = path;
  o.case_name = CaseName(path, suite_root);
  // In a suite a file's directory is its role, also when it cannot be parsed (probe 84: such a
  // file under invalid_fixtures/ was counted as a valid case in the summary).
  const bool under_invalid = !suite_root.empty() && o.case_name.starts_with("invalid_fixtures/");
  o.invalid = under_invalid;
  auto parsed = IsJsonl(path) ? StatusOr<ParsedJson>(ParsedJson{}) : ReadJsonFileStrict(path, true);
  if (!parsed.ok()) {
    o.error = parsed.status();
    o.detail = o.error.ToString();
    return o;
  }
  // In a suite, a file's directory is its role (probe 56: a conforming document under
  // invalid_fixtures/ passed as a valid case, a test that cannot fail, and an invalid fixture
  // under fixtures/ passed too): invalid_fixtures/ holds invalid fixtures only, fixtures/ none.
  const bool is_invalid_fixture = !IsJsonl(path) && KindOf(parsed->value) == kInvalidFixtureKind;
  if (!suite_root.empty()) {
    if (under_invalid != is_invalid_fixture) {
      o.error = Status(
          StatusCode::kInvalidArgument,
          path + (under_invalid ? ": a file under invalid_fixtures/ is an invalid fixture (" +
                                      std::string(kInvalidFixtureKind) +
                                      ") declaring the one code it must raise"
                                : ": an invalid fixture belongs under invalid_fixtures/"),
          ErrorCode::INPUT_FIXTURE_MALFORMED);
      o.detail = o.error.ToString();
      return o;
    }
  }
  if (!is_invalid_fixture) {
    FixtureOutcome v = ValidateFile(path);
    v.case_name = o.case_name;
    if (!v.error.ok()) {
      v.detail = v.error.ToString();
    } else if (v.violations.empty()) {
      v.passed = true;
    } else {
      // A vendor's own document under validate is no fixture (probe 85: "valid fixture raised").
      v.detail = std::string(suite_root.empty() ? "raised " : "valid fixture raised ") +
                 std::string(ErrorCodeName(v.violations.front().code)) + " at '" +
                 v.violations.front().pointer + "': " + v.violations.front().message;
    }
    return v;
  }

  // An invalid fixture.
  o.invalid = true;
  auto m = MaterializeInvalidFixture(path, parsed->value, suite_root, &o.expected_code);
  if (!m.ok()) {
    o.error = m.status();
    o.detail = o.error.ToString();
    return o;
  }
  if (m->jsonl)
    o.violations =
        ValidateJsonl(m->Text(), o.case_name + " (patched " + m->base_member + ")", &o.kind);
  else
    o.violations = ValidateDoc(m->document, &o.kind);
  ClipForReport(&o.violations);
  std::set<std::string> codes;
  for (const auto& v : o.violations) codes.insert(std::string(ErrorCodeName(v.code)));
  if (o.violations.empty()) {
    o.detail = "expected " + o.expected_code + " but the mutated document was accepted";
  } else if (codes.size() == 1 && *codes.begin() == o.expected_code) {
    o.passed = true;
  } else {
    o.detail = "expected only " + o.expected_code + ", got:";
    for (const auto& v : o.violations)
      o.detail += " " + std::string(ErrorCodeName(v.code)) + "@'" + v.pointer + "'";
  }
  return o;
}

std::vector<std::string> ListFixtureFiles(const std::string& root,
                                          std::vector<UnlistedEntry>* unlisted) {
  std::vector<std::string> out;
  for (const char* sub : {"fixtures", "invalid_fixtures"}) {
    auto files = ListDocumentFiles((fs::path(root) / sub).string(), nullptr, unlisted);
    out.insert(out.end(), files.begin(), files.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool IsDataDirectoryName(std::string_view name) {
  return name == "models" || name.starts_with("_");
}

std::vector<std::string> ListDocumentFiles(const std::string& root_dir,
                                           std::vector<std::string>* skipped,
                                           std::vector<UnlistedEntry>* unlisted) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(root_dir, ec)) return out;
  auto it = fs::recursive_directory_iterator(root_dir, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const auto name = it->path().filename().string();
    std::error_code type_ec;
    if (it->is_directory(type_ec) && IsDataDirectoryName(name)) {
      if (skipped) skipped->push_back(it->path().string());
      it.disable_recursion_pending();
      continue;
    }
    if (!name.ends_with(".json") && !name.ends_with(".jsonl")) continue;
    // Followed through a link: a document is a regular file. Anything else with a document's
    // name is told, not skipped (until 2026-12-07 a dangling link or a FIFO named *.json was
    // skipped silently; a FIFO is not opened, which could wait for a writer forever).
    const fs::file_status st = fs::status(it->path(), type_ec);
    if (fs::is_regular_file(st)) {
      out.push_back(it->path().string());
    } else if (!fs::is_directory(st) && unlisted) {
      std::string why = "not a regular file (a FIFO, socket or device)";
      if (!fs::exists(st)) {
        std::error_code link_ec;
        why = fs::is_symlink(fs::symlink_status(it->path(), link_ec))
                  ? "a link to nothing"
                  : "gone or unreadable while listed" +
                        (type_ec ? ": " + type_ec.message() : std::string());
      }
      unlisted->push_back({it->path().string(), why});
    }
  }
  // A directory that cannot be listed whole (unreadable, removed meanwhile) is told, not taken
  // as having no more documents (the walk stopped silently).
  if (ec && unlisted) unlisted->push_back({root_dir, "cannot list every entry: " + ec.message()});
  std::sort(out.begin(), out.end());
  return out;
}

std::string CaseName(const std::string& path, const std::string& root) {
  fs::path p(path);
  std::string rel = root.empty() ? p.string() : p.lexically_relative(root).string();
  if (rel.empty() || rel.starts_with("..")) rel = p.string();
  for (const char* ext : {".jsonl", ".json"})
    if (rel.ends_with(ext)) { rel.resize(rel.size() - std::string_view(ext).size()); break; }
  return rel;
}

std::string SanitizeCaseName(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s;
}

}  // namespace kvc
