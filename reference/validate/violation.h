// Violation: one contract breach found by a validator, and the reader helpers that
// turn JSON schema problems into INPUT_* violations.
//
// Validators take a parsed document and return every violation they find, in a
// deterministic order (the order of their checks), never throwing. A violation names
// its registry code, the RFC 6901 pointer of the offending field and what was expected.
#ifndef KVCONFORM_REFERENCE_VALIDATE_VIOLATION_H_
#define KVCONFORM_REFERENCE_VALIDATE_VIOLATION_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/strict_json.h"
#include "reference/errors/error_codes.h"

namespace kvc {

struct Violation {
  ErrorCode code = ErrorCode::kNone;
  std::string pointer;  // JSON pointer in the validated document ("" = whole document)
  std::string message;  // what was found and what was expected
  uint32_t line = 0;    // 1-based source line when known (trace line, or fixture field line)
};
using Violations = std::vector<Violation>;

// Appends a violation without a line (a document validator's: the pointer locates it). The
// one helper every validator uses (since 2026-12-05; each had a file-local copy).
inline void Add(Violations* v, ErrorCode code, std::string pointer, std::string message) {
  v->push_back({code, std::move(pointer), std::move(message)});
}

// What a report keeps of one violation (the trace checker's and validate's): a pointer's first
// kMaxReportedPointerBytes and a message's first kMaxReportedMessageBytes bytes, cut at a
// character, then "... (N bytes)" (base::Clipped). A long untrusted value named in either (a
// 100 KB id, a member name) cannot make a report line of its size.
inline constexpr size_t kMaxReportedPointerBytes = 512;
inline constexpr size_t kMaxReportedMessageBytes = 4096;
// `v` clipped to what a report keeps (for a status message built from one violation).
Violation ForReport(Violation v);
// Clips every violation of `v` to what a report keeps (after its lines were looked up by pointer).
void ClipForReport(Violations* v);

// Reads the members of one JSON object, recording INPUT_* violations for missing
// fields, wrong types and out-of-range numbers. Every accessor marks its key as known;
// RejectUnknownFields() then reports members no accessor asked for. The reader does
// not own `obj` or `out`; both must outlive it.
class FieldReader {
 public:
  FieldReader(const Json* obj, std::string pointer, Violations* out);

  bool valid() const { return obj_ != nullptr; }
  const std::string& pointer() const { return pointer_; }
  std::string Ptr(std::string_view key) const;

  // Required members. Each returns nullopt/nullptr after recording a violation.
  std::optional<std::string> String(std::string_view key);
  // Unsigned integer in [min, max]; max defaults to 2^53 (the I-JSON safe range).
  std::optional<uint64_t> Uint(std::string_view key, uint64_t min = 0,
                               uint64_t max = uint64_t{1} << 53);
  std::optional<int64_t> Int(std::string_view key);
  std::optional<double> Number(std::string_view key);
  std::optional<bool> Bool(std::string_view key);
  // One of `allowed` (INPUT_VALUE_INVALID otherwise).
  std::optional<std::string> Enum(std::string_view key, std::initializer_list<std::string_view> allowed);
  const Json* Object(std::string_view key);
  const Json* Array(std::string_view key);
  // Any JSON value (present, any type).
  const Json* Any(std::string_view key);

  // Optional members: absent (or null when `null_ok`) is fine; present must be well-typed.
  bool Has(std::string_view key) const;
  std::optional<std::string> OptString(std::string_view key);
  std::optional<uint64_t> OptUint(std::string_view key, uint64_t max = uint64_t{1} << 53);
  const Json* OptObject(std::string_view key);
  const Json* OptArray(std::string_view key);
  const Json* OptAny(std::string_view key);

  // Marks keys as known without reading them.
  void Allow(std::initializer_list<std::string_view> keys);
  // Records INPUT_FIELD_UNKNOWN for each member no accessor asked for, in key order.
  void RejectUnknownFields();

  // Elements of an array as unsigned integers (records per-element violations).
  static std::optional<std::vector<uint64_t>> UintArray(const Json& arr, const std::string& pointer,
                                                        Violations* out,
                                                        uint64_t max = uint64_t{1} << 53);

 private:
  const Json* Member(std::string_view key, bool required);
  void Add(ErrorCode code, std::string pointer, std::string message);

  const Json* obj_;
  std::string pointer_;
  Violations* out_;
  std::set<std::string, std::less<>> known_;
};

std::string_view JsonTypeName(const Json& v);

// Reads an unsigned integer value (not a member); nullopt + violation on failure.
std::optional<uint64_t> ReadUint(const Json& v, const std::string& pointer, Violations* out,
                                 uint64_t min = 0, uint64_t max = uint64_t{1} << 53);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_VALIDATE_VIOLATION_H_
