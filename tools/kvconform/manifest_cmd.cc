// `kvconform manifest seal FILE`: recompute a manifest's derived digests and ledger.
#include <fstream>
#include <iostream>

#include "reference/manifest/manifest.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {

void AddManifestCommand(CLI::App& app) {
  CLI::App* m = app.add_subcommand("manifest", "Request/cache manifest tools (M5.1 0x01)");
  m->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto in_place = std::make_shared<bool>(false);
  CLI::App* seal = m->add_subcommand(
      "seal", "Recompute prompt count, the identity digests, snapshot digest and analytical "
              "ledger of a manifest (how fixtures/m5_1/manifest is regenerated)");
  seal->add_option("file", *file, "manifest JSON")->required();
  seal->add_flag("--in-place", *in_place, "rewrite the file instead of printing");
  seal->callback([file, in_place] {
    auto parsed = ReadJsonFileStrict(*file);
    if (!parsed.ok()) {
      std::cerr << Printable(parsed.status().ToString()) << "\n";
      ExitCode() = kExitUsage;
      return;
    }
    Json doc = parsed->value;
    Status s = SealManifest(doc);
    if (!s.ok()) {
      std::cerr << Printable(*file) << ": " << Printable(s.ToString()) << "\n";
      ExitCode() = kExitUsage;
      return;
    }
    std::string text = doc.dump(2) + "\n";
    if (*in_place) {
      std::ofstream(*file) << text;
    } else {
      std::cout << text;
    }
    ExitCode() = kExitOk;
  });
}

}  // namespace kvc::cli
