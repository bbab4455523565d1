// Exit-code state, report rendering and the suite-section table shared by the commands.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "reference/base/text_forms.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {

int& ExitCode() {
  static int code = kExitOk;
  return code;
}

std::string& InvokedAs() {
  static std::string path = "kvconform";
  return path;
}

std::string ShellQuote(std::string_view raw) {
  // Bytes are quoted as they are (a backslash or a non-ASCII byte is literal inside single
  // quotes); only a word holding a control byte goes through Printable first (probe 74: every
  // backslash was doubled, so the printed reproducer ran another driver command).
  const bool control = std::any_of(raw.begin(), raw.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  const std::string s = control ? Printable(std::string(raw)) : std::string(raw);
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_./=:,+-@%").find(c) != std::string_view::npos;
  };
  if (!s.empty() && std::all_of(s.begin(), s.end(), plain)) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string DefaultRoot() {
  if (const char* env = std::getenv("KVCONFORM_ROOT"); env && *env) return env;
  return KVCONFORM_SOURCE_DIR;
}

Format ParseFormat(const std::string& s) {
  if (s == "json") return Format::kJson;
  if (s == "junit") return Format::kJunit;
  return Format::kText;
}

std::string OutcomeVerdict(const FixtureOutcome& o) {
  if (!o.error.ok()) return "error";
  return o.passed ? "pass" : "fail";
}

nlohmann::json OutcomeToJson(const FixtureOutcome& o) {
  nlohmann::json j = {{"path", o.path}, {"case", o.case_name}, {"kind", o.kind},
                      {"verdict", OutcomeVerdict(o)}};
  if (o.invalid) j["expected_code"] = o.expected_code;
  if (!o.error.ok()) j["error"] = o.error.ToString();
  if (!o.detail.empty()) j["detail"] = o.detail;
  nlohmann::json vs = nlohmann::json::array();
  for (const auto& v : o.violations) {
    const ErrorCodeInfo* info = FindErrorCode(v.code);
    nlohmann::json x = {{"code", std::string(ErrorCodeName(v.code))},
                        {"pointer", v.pointer},
                        {"message", v.message},
                        {"seed_ref", info ? std::string(info->section) : ""}};
    if (v.line) x["line"] = v.line;
    vs.push_back(std::move(x));
  }
  j["violations"] = std::move(vs);
  return j;
}

namespace {

// The length of the well-formed UTF-8 sequence that starts at p[i] (RFC 3629: no overlongs, no
// surrogates, nothing above U+10FFFF), or 0 when none starts there. Requires i < n.
size_t Utf8SequenceLength(const unsigned char* p, size_t n, size_t i) {
  const unsigned char c = p[i];
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i + k < n && p[i + k] >= lo && p[i + k] <= hi;
  };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void AppendHexEscape(unsigned char u, std::string* out) {
  char esc[8];
  std::snprintf(esc, sizeof esc, "\\x%02X", u);
  *out += esc;
}

}  // namespace

std::string ValidUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8SequenceLength(p, n, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(s, i, len);
      i += len;
    }
  }
  return out;
}

std::string Printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const size_t len = Utf8SequenceLength(p, n, i);
    const bool c1 = len == 2 && p[i] == 0xC2 && p[i + 1] <= 0x9F;  // U+0080..U+009F
    const bool line_sep = len == 3 && p[i] == 0xE2 && p[i + 1] == 0x80 &&
                          (p[i + 2] == 0xA8 || p[i + 2] == 0xA9);  // U+2028, U+2029
    // U+FFFE, U+FFFF: no XML 1.0 character, so a JUnit report could not carry a name holding
    // one as the text report prints it, and that name would not select its case (probe 84).
    const bool non_xml =
        len == 3 && p[i] == 0xEF && p[i + 1] == 0xBF && (p[i + 2] == 0xBE || p[i + 2] == 0xBF);
    if (len == 1 && p[i] == '\\') {
      out += "\\\\";
    } else if (len == 1 && (p[i] < 0x20 || p[i] == 0x7F)) {
      AppendHexEscape(p[i], &out);
    } else if (len == 0 || c1 || line_sep || non_xml) {
      // A byte of no well-formed sequence is escaped alone (alone, 0x80..0x9F is a C1 control
      // to a terminal in an 8-bit mode); a C1 control, line separator or U+FFFE/U+FFFF byte by
      // byte.
      for (size_t k = 0; k < std::max<size_t>(len, 1); ++k) AppendHexEscape(p[i + k], &out);
    } else {
      out.append(s, i, len);
    }
    i += std::max<size_t>(len, 1);
  }
  return out;
}

void NoteUnusedTensors(const char* cmd, const std::vector<std::string>& unused) {
  if (unused.empty()) return;
  constexpr size_t kNamed = 3;
  std::string names;
  for (size_t i = 0; i < unused.size() && i < kNamed; ++i)
    names += (i ? ", " : "") + Printable(base::Clipped(unused[i]));
  if (unused.size() > kNamed) names += ", ...";
  std::cerr << "kvconform " << cmd << ": note: " << unused.size()
            << " checkpoint tensor(s) not used by config.json (" << names
            << "): ignored; a config with fewer layers than the checkpoint, or a head beside "
               "tie_word_embeddings, computes another model\n";
}

std::string DumpReport(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string DescribeKind(const nlohmann::json& doc) {
  if (!doc.is_object()) return "it is a JSON " + std::string(doc.type_name());
  const auto it = doc.find("kind");
  if (it == doc.end()) return "it has no \"kind\" member";
  if (!it->is_string()) return "its \"kind\" is " + base::JsonTypeWithArticle(it->type_name());
  return "its kind is " + base::QuoteClipped(it->get<std::string>());
}

void PrintJsonError(const std::string& message) {
  std::cout << DumpReport(nlohmann::json{{"verdict", "error"}, {"error", message}}) << "\n";
}

std::string XmlEscape(const std::string& raw) {
  std::string s = ValidUtf8(raw);
  // XML 1.0 has no U+FFFE or U+FFFF (valid UTF-8, so ValidUtf8 keeps them).
  for (size_t at = 0; (at = s.find("\xEF\xBF", at)) != std::string::npos; at += 3)
    if (at + 2 < s.size() && (s[at + 2] == '\xBE' || s[at + 2] == '\xBF')) s[at + 2] = '\xBD';
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string RenderJunit(const std::string& suite_name, const std::vector<FixtureOutcome>& outcomes) {
  size_t failures = 0, errors = 0;
  for (const auto& o : outcomes) {
    if (!o.error.ok()) ++errors;
    else if (!o.passed) ++failures;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  out += "  <testsuite name=\"" + XmlEscape(suite_name) + "\" tests=\"" +
         std::to_string(outcomes.size()) + "\" failures=\"" + std::to_string(failures) +
         "\" errors=\"" + std::to_string(errors) + "\">\n";
  for (const auto& o : outcomes) {
    out += "    <testcase classname=\"" + XmlEscape(o.kind.empty() ? "unknown" : o.kind) +
           "\" name=\"" + XmlEscape(Printable(o.case_name.empty() ? o.path : o.case_name)) +
           "\"";  // as the text report prints it, which --filter accepts
    if (o.passed) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    // One violation per body line: what a message quotes from the input (a newline included)
    // is written as in the text report (Printable), only the lines' ends are raw newlines.
    std::string body;
    for (const auto& v : o.violations)
      body += (v.line ? "line " + std::to_string(v.line) + ": " : std::string()) +
              std::string(ErrorCodeName(v.code)) + " at '" + Printable(v.pointer) +
              "': " + Printable(v.message) + "\n";
    if (o.omitted != 0)
      body += std::to_string(o.omitted) + " more violations not listed (--max-violations " +
              std::to_string(o.violations.size()) + ")\n";  // the listed ones are the limit
    if (!o.error.ok()) {
      out += "      <error message=\"" + XmlEscape(Printable(o.error.ToString())) + "\"/>\n";
    } else {
      std::string msg = o.detail.empty() && !o.violations.empty()
                            ? std::string(ErrorCodeName(o.violations.front().code))
                            : o.detail;
      out += "      <failure message=\"" + XmlEscape(Printable(msg)) + "\">" + XmlEscape(body) +
             "</failure>\n";
    }
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::vector<SuiteSection>& SuiteSections() {
  static std::vector<SuiteSection> sections;
  return sections;
}

StatusOr<std::vector<uint64_t>> ParseUintList(const std::vector<std::string>& args,
                                              std::string_view flag) {
  std::vector<uint64_t> out;
  for (const std::string& arg : args) {
    size_t start = 0;
    while (true) {
      size_t end = arg.find(',', start);
      std::string_view item =
          std::string_view(arg).substr(start, end == std::string::npos ? end : end - start);
      const std::string where = std::string(flag) + " element " + std::to_string(out.size() + 1);
      if (item.empty()) return InvalidArgument("empty " + where + " in \"" + arg + "\"");
      uint64_t x = 0;
      auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), x);
      if (ec == std::errc::result_out_of_range)
        return InvalidArgument(where + " \"" + std::string(item) + "\" exceeds 2^64 - 1");
      if (ec != std::errc() || ptr != item.data() + item.size())
        return InvalidArgument(where + " \"" + std::string(item) + "\" is not an unsigned integer");
      out.push_back(x);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return out;
}

StatusOr<std::vector<int64_t>> ParsePromptIds(const std::string& s) {
  // Decimal digits between commas, as the other number lists (probe 35: "1,2," and " 1, +2"
  // passed, while ",1" and "1,,2" were refused).
  std::vector<int64_t> ids;
  size_t start = 0;
  for (size_t i = 0; !s.empty() && i <= s.size(); ++i) {
    if (i < s.size() && s[i] != ',') continue;
    const std::string item = s.substr(start, i - start);
    start = i + 1;
    // (A '-' is read, so that the model names a negative id: MODEL_TOKEN_OUT_OF_RANGE.)
    const size_t sign = !item.empty() && item[0] == '-' ? 1 : 0;
    const bool digits = item.size() > sign && item.size() - sign <= 18 &&
                        item.find_first_not_of("0123456789", sign) == std::string::npos;
    if (!digits)
      return InvalidArgument("--prompt-ids: element " + std::to_string(ids.size() + 1) + " '" +
                             item + "' is not a token id (decimal digits, below 10^18)");
    ids.push_back(std::stoll(item));
  }
  if (ids.empty())
    return InvalidArgument("--prompt-ids: expected a comma-separated list of token ids");
  return ids;
}

void RejectNegativeUnsigned(CLI::App& app) {
  // Decimal digits only, within 64 bits: CLI11 alone read "010" as octal and "0x10" as hex, and
  // took "" and numbers beyond 2^64 - 1 (probe 28). Leading zeros are dropped ("010" is 10).
  const CLI::Validator non_negative(
      [](std::string& value) -> std::string {
        if (value.empty()) return "expected a non-negative decimal integer, got an empty value";
        if (value.find_first_not_of("0123456789") != std::string::npos)
          return "expected a non-negative decimal integer, got " + value;
        const size_t first = value.find_first_not_of('0');
        value = first == std::string::npos ? "0" : value.substr(first);
        constexpr std::string_view kMax = "18446744073709551615";
        if (value.size() > kMax.size() || (value.size() == kMax.size() && value > kMax))
          return "expected at most " + std::string(kMax) + ", got " + value;
        return std::string();
      },
      "", "NON_NEGATIVE");
  for (CLI::Option* o : app.get_options())
    if (o->get_type_name().rfind("UINT", 0) == 0) o->transform(non_negative);  // (may rewrite)
  for (CLI::App* sub : app.get_subcommands({})) RejectNegativeUnsigned(*sub);
}

namespace {
// Whether `app` or one of its subcommands, at any depth, has the option `name` ("--x");
// `takes_value`: an option that takes a value (not a flag).
bool HasOption(const CLI::App& app, const std::string& name, bool takes_value = false) {
  if (const CLI::Option* o = app.get_option_no_throw(name))
    if (!takes_value || o->get_type_size_min() > 0) return true;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (HasOption(*sub, name, takes_value)) return true;
  return false;
}
}  // namespace

std::optional<EmptyValue> EmptyOptionValue(int argc, char** argv, const CLI::App& app) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;  // positional arguments follow
    // (Only an option kvconform has: an unknown one is left to the parser, which names it as
    // such; probe 25: "--bogus=" was reported as an empty value.)
    if (a.size() > 3 && a.starts_with("--") && a.find('=') == a.size() - 1 &&
        HasOption(app, std::string(a.substr(0, a.size() - 1))))
      return EmptyValue{std::string(a), std::string(a.substr(0, a.size() - 1))};
    const bool named = (a.size() > 2 && a.starts_with("--") && a.find('=') == a.npos) ||
                       (a.size() == 2 && a[0] == '-' && a[1] != '-');
    if (named && i + 1 < argc && argv[i + 1][0] == '\0' && HasOption(app, std::string(a), true))
      return EmptyValue{std::string(a), std::string(a)};
  }
  return std::nullopt;
}

}  // namespace kvc::cli
