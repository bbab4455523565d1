// `kvconform errors`: print the error-code registry (markdown regenerates docs/error-codes.md).
#include <iostream>

#include "reference/errors/error_codes.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {

void AddErrorsCommand(CLI::App& app) {
  auto format = std::make_shared<std::string>("text");
  CLI::App* cmd = app.add_subcommand("errors", "List the stable error codes");
  cmd->add_option("--format", *format, "text | json | markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  cmd->callback([format] {
    if (*format == "markdown") {
      std::cout << RenderErrorCodesMarkdown();
    } else if (*format == "json") {
      nlohmann::json arr = nlohmann::json::array();
      for (const auto& e : AllErrorCodes())
        arr.push_back({{"code", e.name}, {"domain", e.domain}, {"section", e.section},
                       {"meaning", e.meaning}});
      std::cout << arr.dump(2) << "\n";
    } else {
      for (const auto& e : AllErrorCodes()) std::cout << e.name << "  " << e.meaning << "\n";
    }
    ExitCode() = kExitOk;
  });
}

}  // namespace kvc::cli
