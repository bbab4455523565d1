// The registry table built from the codes_<domain>.def files, and its Markdown rendering.
#include "reference/errors/error_codes.h"

#include <string>

namespace kvc {
namespace {

constexpr ErrorCodeInfo kTable[] = {
#define KVC_ERROR(name, section, meaning) {ErrorCode::name, #name, KVC_CUR_DOMAIN, section, meaning},
#include "reference/errors/codes_all.inc"
#undef KVC_ERROR
};

}  // namespace

std::span<const ErrorCodeInfo> AllErrorCodes() { return kTable; }

const ErrorCodeInfo* FindErrorCode(ErrorCode code) {
  auto idx = static_cast<size_t>(code);
  if (idx == 0 || idx > std::size(kTable)) return nullptr;
  return &kTable[idx - 1];
}

std::string_view ErrorCodeName(ErrorCode code) {
  const ErrorCodeInfo* info = FindErrorCode(code);
  return info ? info->name : std::string_view("NONE");
}

std::optional<ErrorCode> ErrorCodeFromName(std::string_view name) {
  for (const auto& info : kTable)
    if (info.name == name) return info.code;
  return std::nullopt;
}

std::string RenderErrorCodesMarkdown() {
  std::string out =
      "# kvconform error codes\n\n"
      "Generated from `reference/errors/codes_*.def` by `kvconform errors --format markdown`;\n"
      "tests (`ErrorCodes.DocsPageIsInSyncWithTheRegistry`, `tools/cli_test.sh`) fail when this\n"
      "page and the registry disagree. Codes are stable: they are never renamed or reused\n"
      "(`reference/errors/code_names.lock` lists every name, and\n"
      "`ErrorCodes.RegistryKeepsEveryLockedName` fails when one leaves the registry).\n"
      "Every validator, `kvconform validate`/`check` output and every invalid fixture names\n"
      "one of these.\n";
  std::string_view domain;
  for (const auto& info : kTable) {
    if (info.domain != domain) {
      domain = info.domain;
      out += "\n## " + std::string(domain) + "\n\n| code | meaning | enforces |\n|---|---|---|\n";
    }
    out += "| `" + std::string(info.name) + "` | " + std::string(info.meaning) + " | " +
           std::string(info.section) + " |\n";
  }
  return out;
}

}  // namespace kvc
