// The registry of stable contract-violation codes.
//
// Each code is declared once, in one of the codes_<domain>.def files included below,
// as KVC_ERROR(NAME, "seed section", "one-line meaning"). The NAME string is the stable
// identity used by validators, CLI output, invalid fixtures and docs/error-codes.md;
// the numeric enum value is internal and may change. Codes are never renamed or reused:
// retire one by leaving it in place with a meaning that starts "RETIRED:".
#ifndef KVCONFORM_REFERENCE_ERRORS_ERROR_CODES_H_
#define KVCONFORM_REFERENCE_ERRORS_ERROR_CODES_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kvc {

enum class ErrorCode : uint16_t {
  kNone = 0,
#define KVC_ERROR(name, section, meaning) name,
#include "reference/errors/codes_all.inc"
#undef KVC_ERROR
};

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view name;     // e.g. "MANIFEST_ABI_DIGEST_MISMATCH"
  std::string_view domain;   // the .def file it lives in, e.g. "manifest"
  std::string_view section;  // seed section it enforces, e.g. "M5.1 0x01 Validation..."
  std::string_view meaning;  // one line
};

// Every registered code, in registry order (domain files in include order, then line).
std::span<const ErrorCodeInfo> AllErrorCodes();
// "NONE" for kNone.
std::string_view ErrorCodeName(ErrorCode code);
const ErrorCodeInfo* FindErrorCode(ErrorCode code);
std::optional<ErrorCode> ErrorCodeFromName(std::string_view name);
// The registry rendered as the Markdown page docs/error-codes.md (kept in sync by a test).
std::string RenderErrorCodesMarkdown();

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_ERRORS_ERROR_CODES_H_
