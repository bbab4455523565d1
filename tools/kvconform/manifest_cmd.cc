// `kvconform manifest seal FILE`: recompute a manifest's derived digests and ledger.
#include <cstdio>
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
      // Written beside the file and renamed over it: a failed write (no space, an unwritable
      // directory) leaves the original whole and is exit 2, not a silent success.
      const std::string tmp = *file + ".tmp";
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << text;
      out.close();
      if (!out || std::rename(tmp.c_str(), file->c_str()) != 0) {
        std::remove(tmp.c_str());
        std::cerr << Printable(*file) << ": cannot rewrite the file in place (writing "
                  << Printable(tmp) << " and renaming it over the file failed)\n";
        ExitCode() = kExitUsage;
        return;
      }
    } else {
      std::cout << text;
    }
    ExitCode() = kExitOk;
  });
}

}  // namespace kvc::cli
