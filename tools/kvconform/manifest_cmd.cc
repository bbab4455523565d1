// `kvconform manifest seal FILE`: recompute a manifest's derived digests and ledger.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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
      // directory) leaves the original whole and is exit 2, not a silent success. The temporary
      // file is a new one (mkstemp) with the original's permissions, and only it is ever
      // removed (until 2026-12-07 it was FILE.tmp: an existing file of that name was
      // overwritten, and an empty directory of that name removed on failure).
      std::string tmp = *file + ".tmp.XXXXXX";
      const int fd = ::mkstemp(tmp.data());
      bool ok = fd >= 0;
      if (ok) {
        struct stat st {};
        if (::stat(file->c_str(), &st) == 0) ok = ::fchmod(fd, st.st_mode & 07777) == 0;
        for (size_t at = 0; ok && at < text.size();) {
          const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
          if (n < 0 && errno == EINTR) continue;
          ok = n > 0;
          if (ok) at += static_cast<size_t>(n);
        }
        ok = ::close(fd) == 0 && ok;
      }
      if (!ok || std::rename(tmp.c_str(), file->c_str()) != 0) {
        if (fd >= 0) ::unlink(tmp.c_str());
        std::cerr << Printable(*file) << ": cannot rewrite the file in place (writing "
                  << (fd >= 0 ? Printable(tmp) : "a temporary file beside it")
                  << " and renaming it over the file failed)\n";
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
