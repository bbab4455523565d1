// RFC 8785 canonicalization and SHA-256 digests; see canonical_json.h.
#include "reference/base/canonical_json.h"

#include <openssl/evp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "reference/base/text_forms.h"

namespace kvc {
namespace {

constexpr int64_t kMaxSafeInteger = kMaxIJsonInteger;

// UTF-8 -> UTF-16 code units, for JCS member ordering. Input is valid UTF-8 (strict reader).
std::u16string ToUtf16(std::string_view s) {
  std::u16string out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    uint32_t cp;
    size_t n;
    if (c < 0x80) { cp = c; n = 1; }
    else if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; n = 2; }
    else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; n = 3; }
    else { cp = c & 0x07; n = 4; }
    for (size_t k = 1; k < n && i + k < s.size(); ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += n;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += static_cast<char16_t>(0xD800 + (cp >> 10));
      out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    } else {
      out += static_cast<char16_t>(cp);
    }
  }
  return out;
}

void WriteString(std::string& out, std::string_view s) {
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

Status Write(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: out += "null"; return Status();
    case Json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return Status();
    case Json::value_t::string: WriteString(out, v.get_ref<const std::string&>()); return Status();
    case Json::value_t::number_integer: {
      int64_t x = v.get<int64_t>();
      if (x > kMaxSafeInteger || x < -kMaxSafeInteger)
        return OutOfRange("integer " + std::to_string(x) + " is outside +/-2^53 (not I-JSON)");
      out += std::to_string(x);
      return Status();
    }
    case Json::value_t::number_unsigned: {
      uint64_t x = v.get<uint64_t>();
      if (x > static_cast<uint64_t>(kMaxSafeInteger))
        return OutOfRange("integer " + std::to_string(x) + " is above 2^53 (not I-JSON)");
      out += std::to_string(x);
      return Status();
    }
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (!std::isfinite(d)) return OutOfRange("non-finite number cannot be canonicalized");
      out += FormatEcmaScriptNumber(d);
      return Status();
    }
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ',';
        first = false;
        KVC_RETURN_IF_ERROR(Write(out, e));
      }
      out += ']';
      return Status();
    }
    case Json::value_t::object: {
      std::vector<std::pair<std::u16string, const std::string*>> keys;
      keys.reserve(v.size());
      for (auto it = v.begin(); it != v.end(); ++it) keys.emplace_back(ToUtf16(it.key()), &it.key());
      std::sort(keys.begin(), keys.end());
      out += '{';
      bool first = true;
      for (const auto& [k16, k] : keys) {
        if (!first) out += ',';
        first = false;
        WriteString(out, *k);
        out += ':';
        KVC_RETURN_IF_ERROR(Write(out, v.at(*k)));
      }
      out += '}';
      return Status();
    }
    case Json::value_t::binary:
    case Json::value_t::discarded:
      return InvalidArgument("value has no JSON representation");
  }
  return Internal("unhandled JSON type");
}

}  // namespace

std::string FormatEcmaScriptNumber(double value) {
  if (value == 0) return "0";  // covers -0
  std::string sign = value < 0 ? "-" : "";
  double a = std::fabs(value);
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, a, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // d[.ddd]e[+-]XX
  auto epos = sci.find('e');
  std::string mant = sci.substr(0, epos);
  int exp10 = std::stoi(sci.substr(epos + 1));
  std::string digits;
  for (char c : mant)
    if (c != '.') digits += c;
  int k = static_cast<int>(digits.size());
  int n = exp10 + 1;
  std::string out;
  if (k <= n && n <= 21) {
    out = digits + std::string(n - k, '0');
  } else if (0 < n && n <= 21) {
    out = digits.substr(0, n) + "." + digits.substr(n);
  } else if (-6 < n && n <= 0) {
    out = "0." + std::string(-n, '0') + digits;
  } else {
    int e = n - 1;
    std::string es = (e < 0 ? "-" : "+") + std::to_string(std::abs(e));
    out = k == 1 ? digits + "e" + es : digits.substr(0, 1) + "." + digits.substr(1) + "e" + es;
  }
  return sign + out;
}

StatusOr<std::string> CanonicalJson(const Json& value) {
  std::string out;
  KVC_RETURN_IF_ERROR(Write(out, value));
  return out;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

StatusOr<std::string> CanonicalSha256(const Json& value) {
  KVC_ASSIGN_OR_RETURN(std::string canon, CanonicalJson(value));
  return Sha256Hex(canon);
}

bool IsSha256Hex(std::string_view s) { return base::IsLowerHex(s, 64); }

}  // namespace kvc
