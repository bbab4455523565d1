// The text forms of identifiers and dates the formats share: full commit ids, SHA-256 digests
// and calendar dates (trace runtime pins, runtime release source audits), and the clipped form
// of an untrusted value quoted in a message.
#ifndef KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_
#define KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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

// The longest prefix of `s` of at most `max_bytes` bytes that does not end inside a UTF-8
// sequence: a message quoting part of a long untrusted value stays valid UTF-8 (a byte cut
// stopped mid-character: the text report carried the stray lead byte, JUnit its escape, JSON a
// U+FFFD). The cut moves back at most 3 bytes (a sequence's continuation bytes), so a malformed
// run is cut where it is. The result views `s`. (trace::Clip clips ids and messages with it.)
inline std::string_view ClipUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  for (int back = 0; back < 3 && n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80; ++back)
    --n;
  return s.substr(0, n);
}

// An untrusted value named unquoted in a message: whole up to `max_bytes`, else its clipped
// prefix (ClipUtf8) followed by "... (N bytes)", as in abc... (812 bytes).
inline std::string Clipped(std::string_view s, size_t max_bytes = 80) {
  if (s.size() <= max_bytes) return std::string(s);
  return std::string(ClipUtf8(s, max_bytes)) + "... (" + std::to_string(s.size()) + " bytes)";
}

namespace internal {
// `s` between two `quote` characters, whole up to `max_bytes`, else its clipped prefix (ClipUtf8),
// "...", the closing quote and the value's length. The one body of the two quoting styles below.
inline std::string QuoteClippedWith(char quote, std::string_view s, size_t max_bytes) {
  std::string out(1, quote);
  if (s.size() <= max_bytes) {
    out.append(s);
    out += quote;
    return out;
  }
  out.append(ClipUtf8(s, max_bytes));
  out += "...";
  out += quote;
  out += " (" + std::to_string(s.size()) + " bytes)";
  return out;
}
}  // namespace internal

// An untrusted value quoted in a message: "value" whole up to `max_bytes`, else its clipped
// prefix (ClipUtf8) followed by ..." and the value's length, as in "abc..." (812 bytes).
inline std::string QuoteClipped(std::string_view s, size_t max_bytes = 80) {
  return internal::QuoteClippedWith('"', s, max_bytes);
}

// A JSON value's text (nlohmann's dump(), or any serializer's) named in a message: a string's
// text clipped like QuoteClipped, so that its closing quote is kept and its length follows it
// ("abc..." (812 bytes): the length of the text between the quotes, escapes included); any
// other value's text like Clipped. (Clipped on a string's text showed its opening quote only.)
inline std::string ClippedJsonText(std::string_view text, size_t max_bytes = 80) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    return QuoteClipped(text.substr(1, text.size() - 2), max_bytes);
  return Clipped(text, max_bytes);
}

// A list of unsigned integers named in a message (token ids, a tensor shape): "[a, b, c]" with
// `sep` between elements, whole up to `max_shown` elements, else its first `max_shown`, "..."
// and its length, as in [7, 7, ...] (5000 elements).
inline std::string ClippedList(const std::vector<uint64_t>& xs, std::string_view sep = ", ",
                               size_t max_shown = 16) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size() && i < max_shown; ++i) {
    if (i) out.append(sep);
    out += std::to_string(xs[i]);
  }
  if (xs.size() <= max_shown) return out + "]";
  out.append(sep);
  return out + "...] (" + std::to_string(xs.size()) + " elements)";
}

// A JSON type's name (nlohmann's type_name(): "object", "array", "number", ...) with its
// article, for messages: "an array", "a number".
inline std::string JsonTypeWithArticle(std::string_view type_name) {
  const bool vowel =
      !type_name.empty() && std::string_view("aeiou").find(type_name[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(type_name);
}

// QuoteClipped in single quotes, the model loader's style: 'value' whole up to `max_bytes`, else
// 'abc...' (812 bytes).
inline std::string SingleQuoteClipped(std::string_view s, size_t max_bytes = 80) {
  return internal::QuoteClippedWith('\'', s, max_bytes);
}

}  // namespace kvc::base

#endif  // KVCONFORM_REFERENCE_BASE_TEXT_FORMS_H_
