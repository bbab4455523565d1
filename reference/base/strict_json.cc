// Recursive-descent strict JSON reader with positions; see strict_json.h for the contract.
#include "reference/base/strict_json.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace kvc {
namespace {

class Parser {
 public:
  Parser(std::string_view text, std::string_view source, bool record, const JsonLimits& limits,
         uint64_t first_line = 1)
      : s_(text), source_(source), record_(record), limits_(limits), first_line_(first_line) {}

  StatusOr<ParsedJson> Run() {
    ParsedJson out;
    if (s_.size() > limits_.max_bytes)
      return Fail("document is " + std::to_string(s_.size()) + " bytes, over the limit of " +
                  std::to_string(limits_.max_bytes));
    if (s_.size() >= 3 && static_cast<unsigned char>(s_[0]) == 0xEF &&
        static_cast<unsigned char>(s_[1]) == 0xBB && static_cast<unsigned char>(s_[2]) == 0xBF)
      return Fail("a UTF-8 byte-order mark is not allowed; expected a JSON value");
    SkipWs();
    if (pos_ >= s_.size()) return Fail("input is empty; expected a JSON value");
    out_ = &out;
    std::string ptr;
    if (!ParseValue(out.value, ptr, 0)) return error_;
    SkipWs();
    if (pos_ < s_.size()) return Fail("unexpected bytes after the JSON value; expected end of input");
    return out;
  }

 private:
  Status Fail(const std::string& what) {
    SourcePos p = PosAt(pos_);
    error_ = ParseError(std::string(source_) + ":" + std::to_string(p.line - 1 + first_line_) +
                        ":" + std::to_string(p.column) + ": " + what);
    return error_;
  }
  bool FailB(const std::string& what) {
    (void)Fail(what);
    return false;
  }
  SourcePos PosAt(size_t at) {
    // Incremental line counting: positions are requested in increasing order mostly.
    if (at < line_scan_pos_) { line_scan_pos_ = 0; line_ = 1; line_start_ = 0; }
    for (; line_scan_pos_ < at && line_scan_pos_ < s_.size(); ++line_scan_pos_) {
      if (s_[line_scan_pos_] == '\n') { ++line_; line_start_ = line_scan_pos_ + 1; }
    }
    return SourcePos{line_, static_cast<uint32_t>(at - line_start_ + 1)};
  }
  void SkipWs() {
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') ++pos_; else break;
    }
  }
  static std::string Describe(char c) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02X", u);
    return buf;
  }

  bool ParseValue(Json& v, std::string& ptr, size_t depth) {
    SkipWs();
    if (pos_ >= s_.size()) return FailB("unexpected end of input; expected a JSON value");
    if (record_) out_->locations.emplace(ptr, PosAt(pos_));
    char c = s_[pos_];
    switch (c) {
      case '{': return ParseObject(v, ptr, depth + 1);
      case '[': return ParseArray(v, ptr, depth + 1);
      case '"': {
        std::string str;
        if (!ParseString(str)) return false;
        v = std::move(str);
        return true;
      }
      case 't': return Literal("true", Json(true), v);
      case 'f': return Literal("false", Json(false), v);
      case 'n': return Literal("null", Json(nullptr), v);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(v);
        return FailB("unexpected " + Describe(c) + "; expected a JSON value");
    }
  }
  bool Literal(std::string_view word, Json value, Json& v) {
    if (s_.substr(pos_, word.size()) != word)
      return FailB("invalid literal; expected '" + std::string(word) + "'");
    pos_ += word.size();
    v = std::move(value);
    return true;
  }
  bool CheckDepth(size_t depth) {
    if (depth > limits_.max_depth)
      return FailB("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    return true;
  }
  bool ParseObject(Json& v, std::string& ptr, size_t depth) {
    if (!CheckDepth(depth)) return false;
    ++pos_;  // '{'
    v = Json::object();
    std::set<std::string> seen;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return true; }
    while (true) {
      SkipWs();
      if (pos_ >= s_.size()) return FailB("unexpected end of input; expected '\"' to start a key");
      if (s_[pos_] != '"') return FailB("unexpected " + Describe(s_[pos_]) + "; expected '\"' to start a key");
      size_t key_pos = pos_;
      std::string key;
      if (!ParseString(key)) return false;
      const bool repeated = !seen.insert(key).second;
      if (repeated && !limits_.first_of_duplicates) {
        pos_ = key_pos;
        return FailB("duplicate key \"" + key + "\" in object at '" + ptr + "'");
      }
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != ':')
        return FailB(pos_ >= s_.size() ? "unexpected end of input; expected ':'"
                                       : "unexpected " + Describe(s_[pos_]) + "; expected ':'");
      ++pos_;
      size_t old = ptr.size();
      ptr += '/';
      ptr += JsonPointerEscape(key);
      Json child;
      const bool record = record_;
      record_ = record_ && !repeated;  // the first value's locations stand too
      const bool ok = ParseValue(child, ptr, depth);
      record_ = record;
      if (!ok) return false;
      ptr.resize(old);
      if (!repeated) v[key] = std::move(child);
      SkipWs();
      if (pos_ >= s_.size()) return FailB("unexpected end of input; expected ',' or '}'");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == '}') { ++pos_; return true; }
      return FailB("unexpected " + Describe(s_[pos_]) + "; expected ',' or '}'");
    }
  }
  bool ParseArray(Json& v, std::string& ptr, size_t depth) {
    if (!CheckDepth(depth)) return false;
    ++pos_;  // '['
    v = Json::array();
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return true; }
    for (size_t i = 0;; ++i) {
      size_t old = ptr.size();
      ptr += '/';
      ptr += std::to_string(i);
      Json child;
      if (!ParseValue(child, ptr, depth)) return false;
      ptr.resize(old);
      v.push_back(std::move(child));
      SkipWs();
      if (pos_ >= s_.size()) return FailB("unexpected end of input; expected ',' or ']'");
      if (s_[pos_] == ',') { ++pos_; continue; }
      if (s_[pos_] == ']') { ++pos_; return true; }
      return FailB("unexpected " + Describe(s_[pos_]) + "; expected ',' or ']'");
    }
  }
  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  bool Hex4(uint32_t& out) {
    if (pos_ + 4 > s_.size()) return FailB("unexpected end of input in \\u escape; expected 4 hex digits");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_ + i];
      uint32_t d;
      if (c >= '0' && c <= '9') d = c - '0';
      else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      else { pos_ += i; return FailB("invalid hex digit " + Describe(c) + " in \\u escape"); }
      out = out * 16 + d;
    }
    pos_ += 4;
    return true;
  }
  bool ParseString(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= s_.size()) return FailB("unexpected end of input inside a string; expected '\"'");
      unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return true; }
      if (c < 0x20) return FailB("unescaped control character " + Describe(static_cast<char>(c)) + " in string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) return FailB("unexpected end of input after '\\'");
        char e = s_[pos_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp;
            if (!Hex4(cp)) return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF) { pos_ -= 6; return FailB("lone low surrogate in \\u escape"); }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (pos_ + 2 > s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
                pos_ -= 6;
                return FailB("high surrogate not followed by a low surrogate \\u escape");
              }
              pos_ += 2;
              uint32_t lo;
              if (!Hex4(lo)) return false;
              if (lo < 0xDC00 || lo > 0xDFFF) { pos_ -= 6; return FailB("expected a low surrogate \\u escape"); }
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            AppendUtf8(out, cp);
            break;
          }
          default:
            --pos_;
            return FailB("invalid escape " + Describe(e) + "; expected one of \"\\/bfnrtu");
        }
        continue;
      }
      if (c < 0x80) { out += static_cast<char>(c); ++pos_; continue; }
      // Multi-byte UTF-8: validate strictly (no overlongs, no surrogates, <= U+10FFFF).
      size_t n; uint32_t cp, min;
      if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; min = 0x80; }
      else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; min = 0x800; }
      else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; min = 0x10000; }
      else return FailB("invalid UTF-8 lead " + Describe(static_cast<char>(c)) + " in string");
      if (pos_ + n > s_.size()) return FailB("truncated UTF-8 sequence in string");
      for (size_t i = 1; i < n; ++i) {
        unsigned char cc = static_cast<unsigned char>(s_[pos_ + i]);
        if ((cc & 0xC0) != 0x80) return FailB("invalid UTF-8 continuation byte in string");
        cp = (cp << 6) | (cc & 0x3F);
      }
      if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return FailB("invalid UTF-8 code point (overlong, surrogate or beyond U+10FFFF) in string");
      out.append(s_.data() + pos_, n);
      pos_ += n;
    }
  }
  // Whether the JSON number [b, e) (its grammar already checked) has a magnitude below 1: the
  // decimal exponent of its first non-zero digit plus its exponent part is negative. False for
  // a number whose digits are all zero.
  static bool BelowOne(const char* b, const char* e) {
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    const char* p = b + (*b == '-' ? 1 : 0);
    int64_t lead;     // the decimal exponent of the first non-zero digit
    if (*p != '0') {  // the integer part has no leading zero: its first digit leads
      const char* q = p;
      while (q < e && digit(*q)) ++q;
      lead = q - p - 1;
      p = q;
    } else {  // 0.000d...: d is at 10^-(zeros + 1)
      ++p;
      if (p == e || *p != '.') return false;
      const char* q = ++p;
      while (q < e && *q == '0') ++q;
      if (q == e || !digit(*q)) return false;
      lead = -(q - p) - 1;
      p = q;
    }
    while (p < e && *p != 'e' && *p != 'E') ++p;
    int64_t exp = 0;  // saturates far beyond any double's range
    bool exp_neg = false;
    if (p < e) {
      ++p;
      if (*p == '+' || *p == '-') exp_neg = (*p++ == '-');
      for (; p < e; ++p) exp = std::min<int64_t>(exp * 10 + (*p - '0'), int64_t{1} << 40);
    }
    return lead + (exp_neg ? -exp : exp) < 0;
  }
  bool ParseNumber(Json& v) {
    size_t start = pos_;
    bool neg = false, is_int = true;
    if (s_[pos_] == '-') { neg = true; ++pos_; }
    if (pos_ >= s_.size()) return FailB("unexpected end of input in number");
    if (s_[pos_] == '0') {
      ++pos_;
      if (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9')
        return FailB("leading zeros are not allowed in numbers");
    } else if (s_[pos_] >= '1' && s_[pos_] <= '9') {
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    } else {
      return FailB("unexpected " + Describe(s_[pos_]) + "; expected a digit");
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_int = false;
      ++pos_;
      if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9'))
        return FailB("expected a digit after the decimal point");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_int = false;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9'))
        return FailB("expected a digit in the exponent");
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    }
    const char* b = s_.data() + start;
    const char* e = s_.data() + pos_;
    if (is_int) {
      if (neg) {
        int64_t x;
        auto r = std::from_chars(b, e, x);
        if (r.ec == std::errc() && r.ptr == e) { v = x; return true; }
      } else {
        uint64_t x;
        auto r = std::from_chars(b, e, x);
        if (r.ec == std::errc() && r.ptr == e) { v = x; return true; }
      }
      // Integer too large for 64 bits: keep it as a double; readers reject it as out of range.
    }
    double d;
    auto r = std::from_chars(b, e, d);
    if (r.ec == std::errc::result_out_of_range && r.ptr == e && BelowOne(b, e)) {
      // Underflow: the nearest double is zero (RFC 8259 section 6 lets a reader approximate;
      // from_chars reports it like an overflow).
      v = neg ? -0.0 : 0.0;
      return true;
    }
    if (r.ec == std::errc::result_out_of_range || !std::isfinite(d)) {
      pos_ = start;
      return FailB("number " + std::string(b, e) + " is out of the range of a double");
    }
    if (r.ec != std::errc() || r.ptr != e) { pos_ = start; return FailB("malformed number"); }
    v = d;
    return true;
  }

  std::string_view s_;
  std::string_view source_;
  bool record_;
  JsonLimits limits_;
  uint64_t first_line_ = 1;  // the line number of the text's first line, in its source
  size_t pos_ = 0;
  ParsedJson* out_ = nullptr;
  Status error_;
  size_t line_scan_pos_ = 0;
  uint32_t line_ = 1;
  size_t line_start_ = 0;
};

}  // namespace

uint32_t ParsedJson::LineOf(std::string_view pointer) const {
  std::string p(pointer);
  while (true) {
    auto it = locations.find(p);
    if (it != locations.end()) return it->second.line;
    if (p.empty()) return 0;
    auto slash = p.rfind('/');
    p.resize(slash == std::string::npos ? 0 : slash);
  }
}

StatusOr<ParsedJson> ParseJsonStrict(std::string_view text, std::string_view source_name,
                                     bool record_locations, const JsonLimits& limits) {
  Parser p(text, source_name, record_locations, limits);
  return p.Run();
}

StatusOr<ParsedJson> ParseJsonLineStrict(std::string_view text, std::string_view source_name,
                                         uint64_t line) {
  Parser p(text, source_name, false, JsonLimits{}, line);
  return p.Run();
}

StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  // A regular file past the cap is refused by its size, unread (it was read up to the cap
  // first: 256 MiB for a history); a pipe or device, or a file that grows, by what it gave.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes)
      return IoError(path + ": file is larger than " + std::to_string(max_bytes) + " bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError(path + ": cannot open: " + std::strerror(errno));
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > max_bytes)
      return IoError(path + ": file is larger than " + std::to_string(max_bytes) + " bytes");
  }
  if (in.bad()) return IoError(path + ": read failed: " + std::strerror(errno));
  return data;
}

StatusOr<ParsedJson> ReadJsonFileStrict(const std::string& path, bool record_locations,
                                        const JsonLimits& limits) {
  KVC_ASSIGN_OR_RETURN(std::string data, ReadFileToString(path, limits.max_bytes));
  return ParseJsonStrict(data, path, record_locations, limits);
}

std::string JsonPointerEscape(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace kvc
