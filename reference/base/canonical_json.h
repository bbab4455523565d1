// RFC 8785 JSON Canonicalization Scheme (JCS) and the SHA-256 digests built on it.
//
// CanonicalJson sorts object members by UTF-16 code units, writes strings with the
// minimal JCS escapes and numbers in ECMAScript Number.prototype.toString form. Input
// must be I-JSON: integers beyond +/-2^53 and non-finite numbers are rejected rather
// than silently rounded. Pure functions, thread-safe.
#ifndef KVCONFORM_REFERENCE_BASE_CANONICAL_JSON_H_
#define KVCONFORM_REFERENCE_BASE_CANONICAL_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"

namespace kvc {

// The largest integer magnitude CanonicalJson writes (I-JSON: exact as an IEEE double).
inline constexpr int64_t kMaxIJsonInteger = int64_t{1} << 53;

StatusOr<std::string> CanonicalJson(const Json& value);

// ECMAScript shortest round-trip rendering of a finite double (e.g. 1e+21, 0.000001, 1e-7).
std::string FormatEcmaScriptNumber(double value);

// Lowercase hex SHA-256 of raw bytes (OpenSSL EVP).
std::string Sha256Hex(std::string_view bytes);

// SHA256(canonical_json(value)) in lowercase hex.
StatusOr<std::string> CanonicalSha256(const Json& value);

// True when `s` is exactly 64 lowercase hex characters.
bool IsSha256Hex(std::string_view s);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_BASE_CANONICAL_JSON_H_
