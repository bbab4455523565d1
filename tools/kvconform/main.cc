// kvconform: the command-line entry point; maps CLI11 parsing and exit codes.
#include <iostream>

#include "tools/kvconform/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"kvconform: conformance kit for LLM-serving KV-cache state (M5.1, M5.6)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kvconform 0.1.0");
  kvc::cli::AddValidateCommand(app);
  kvc::cli::AddCalcCommand(app);
  kvc::cli::AddServiceMetricsCommand(app);
  kvc::cli::AddSuiteCommand(app);
  kvc::cli::AddErrorsCommand(app);
  kvc::cli::AddManifestCommand(app);
  kvc::cli::AddModelCommands(app);
  kvc::cli::AddCheckCommand(app);
  kvc::cli::AddGenTraceCommand(app);
  kvc::cli::AddHandoffCommand(app);
  kvc::cli::AddFuzzCommand(app);
  kvc::cli::AddPdCommands(app);
  kvc::cli::RejectNegativeUnsigned(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kvc::cli::kExitOk : kvc::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "kvconform: internal error: " << e.what() << "\n";
    return kvc::cli::kExitInternal;
  }
  return kvc::cli::ExitCode();
}
