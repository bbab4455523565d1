// A strict JSON reader for untrusted fixture and manifest files.
//
// Unlike a permissive parser it rejects duplicate object keys, nesting deeper than a
// limit, invalid UTF-8 (including lone surrogates), control characters in strings,
// empty input and trailing bytes, and reports every error as "source:line:column: what
// was expected". Numbers that fit are kept as integers; others become doubles (a number
// that overflows a double is an error; one that underflows it reads as a zero of its sign).
// Optionally records, for every value, the line and column where it starts, keyed by RFC 6901 JSON
// pointer, so validators can name the line of a violation. Thread-compatible; no global state.
#ifndef KVCONFORM_REFERENCE_BASE_STRICT_JSON_H_
#define KVCONFORM_REFERENCE_BASE_STRICT_JSON_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "reference/base/status.h"

namespace kvc {

using Json = nlohmann::json;

struct JsonLimits {
  size_t max_depth = 128;            // arrays + objects nested
  size_t max_bytes = 256u << 20;     // whole document
  // A repeated key is an error unless this is set: then the first value stands (the repeated
  // ones are read, for syntax, and dropped). For a reader that reports something else about a
  // document another reader refused (the trace checker's unreadable-line path).
  bool first_of_duplicates = false;
};

struct SourcePos {
  uint32_t line = 0;    // 1-based
  uint32_t column = 0;  // 1-based, in bytes
};

struct ParsedJson {
  Json value;
  // JSON pointer ("" for the root) -> where that value starts. Empty unless requested.
  std::unordered_map<std::string, SourcePos> locations;
  // Line of `pointer` or of its nearest recorded ancestor; 0 when unknown.
  uint32_t LineOf(std::string_view pointer) const;
};

StatusOr<ParsedJson> ParseJsonStrict(std::string_view text, std::string_view source_name,
                                     bool record_locations = false, const JsonLimits& limits = {});

// One line of a JSON Lines file, line `line` of `source_name`: a ParseError says
// "SOURCE:LINE:COLUMN: what" with the file's line number (ParseJsonStrict on the line alone says
// line 1, so its callers had prefixed the line and doubled the location).
StatusOr<ParsedJson> ParseJsonLineStrict(std::string_view text, std::string_view source_name,
                                         uint64_t line);

// Reads a whole file (IoError when unreadable) and parses it strictly.
StatusOr<ParsedJson> ReadJsonFileStrict(const std::string& path, bool record_locations = false,
                                        const JsonLimits& limits = {});

// Reads a whole file into a string; IoError names the path and errno text, or says the file is
// larger than `max_bytes` (a regular file by its size, before reading; any other by what it gave).
StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes = 1u << 30);

// Escapes one reference token for a JSON pointer (RFC 6901: ~ -> ~0, / -> ~1).
std::string JsonPointerEscape(std::string_view token);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_BASE_STRICT_JSON_H_
