// The text forms of identifiers and dates the formats share: full commit ids, SHA-256 digests
// and calendar dates (trace runtime pins, runtime release source audits).
#ifndef KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_
#define KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_

#include <cstddef>
#include <string_view>

namespace kvc::base {

// `s` is exactly `n` lowercase hex digits (a 40-digit commit id, a 64-digit SHA-256).
inline bool IsLowerHex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// `s` is a date YYYY-MM-DD: four digits, a month 01-12 and a day 01-31, dash-separated (the day
// is not checked against its month's length). The trace schema's pattern for runtime_pin's
// checked_on says the same.
inline bool IsIsoDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (s[i] < '0' || s[i] > '9') return false;
  const int month = (s[5] - '0') * 10 + (s[6] - '0'), day = (s[8] - '0') * 10 + (s[9] - '0');
  return month >= 1 && month <= 12 && day >= 1 && day <= 31;
}

}  // namespace kvc::base

#endif  // KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_
