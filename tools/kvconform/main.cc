// kvconform: the command-line entry point; maps CLI11 parsing and exit codes.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <optional>
#include <streambuf>
#include <string>
#ifdef KVCONFORM_HAVE_MIMALLOC
#include <mimalloc.h>
#endif

#include "reference/base/text_forms.h"
#include "reference/handoff/transport/ucx_peer.h"
#include "tools/kvconform/cli.h"

namespace {

// std::cout's buffer in place of the stdio one: writes through stdout's FILE (C stdio output of a
// command stays in order with it) and keeps the errno of the first write that failed, which a
// later call may overwrite before main sees the failure.
class StdoutBuf : public std::streambuf {
 public:
  // errno of the first failed write or flush of std::cout, 0 when none failed.
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    errno = 0;
    if (std::fputc(c, stdout) == EOF) {
      Record();
      return traits_type::eof();
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    errno = 0;
    const size_t written = std::fwrite(s, 1, static_cast<size_t>(n), stdout);
    if (written != static_cast<size_t>(n)) Record();
    return static_cast<std::streamsize>(written);
  }
  int sync() override {
    errno = 0;
    if (std::fflush(stdout) == 0) return 0;
    Record();
    return -1;
  }

 private:
  void Record() {
    if (error_ == 0) error_ = errno != 0 ? errno : EIO;
  }
  int error_ = 0;
};

// The exit code once standard output is flushed: `rc`, or kExitUsage when a report (or help)
// could not be written to standard output (a full disk, a closed pipe with SIGPIPE ignored):
// a report that did not arrive is no verdict, so neither 0 nor 1 stands. Says why on standard
// error, in one line. An internal error (3) stays 3.
int FinishStdout(const StdoutBuf& buf, int rc) {
  std::cout.flush();
  errno = 0;
  const bool c_failed = std::fflush(stdout) != 0 || std::ferror(stdout);  // printf, fwrite
  const int err = buf.error() != 0 ? buf.error() : errno;
  if (!std::cout.fail() && buf.error() == 0 && !c_failed) return rc;
  std::cerr << "kvconform: cannot write the report to standard output: "
            << (err != 0 ? std::strerror(err) : "write error") << "\n";
  return rc == kvc::cli::kExitInternal ? rc : kvc::cli::kExitUsage;
}

constexpr char kOutOfMemory[] =
    "kvconform: out of memory: the command needed more memory than the process may use (a "
    "limit such as ulimit -v, or the machine's memory); no verdict\n";

#ifdef KVCONFORM_HAVE_MIMALLOC
// mimalloc's error hook: on ENOMEM (an allocation it cannot serve, including one made with
// nothrow) the process ends with kOutOfMemory and exit 3; other errors keep mimalloc's handling.
// Allocates nothing.
void OutOfMemoryHook(int err, void* /*arg*/) {
  if (err != ENOMEM) return;
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kOutOfMemory, sizeof kOutOfMemory - 1);
  ::_exit(kvc::cli::kExitInternal);
}
#endif

// The command line asks for a JSON report (`--format json` or `--format=json`): a usage error
// is then `{"verdict": "error", "error": MESSAGE}` on standard output too, as every error after
// parsing is (docs/cli.md; until 2026-12-07 a parser error wrote nothing there).
bool AsksForJson(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--format=json" ||
        (a == "--format" && i + 1 < argc && argv[i + 1] == std::string_view("json")))
      return true;
  }
  return false;
}

// The first word of the command line that names no command where one is required ("kvconform
// bogus", "kvconform calc bogus"), as one line naming it and the commands there; nullopt when
// every such word names one. The parser said "A subcommand is required", naming nothing (until
// 2026-12-07).
std::optional<std::string> UnknownCommand(const CLI::App& app, int argc, char** argv) {
  const CLI::App* cur = &app;
  std::string path = "kvconform";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return std::nullopt;
    const auto subs = cur->get_subcommands([](const CLI::App*) { return true; });
    if (subs.empty() || cur->get_require_subcommand_min() == 0) return std::nullopt;
    const CLI::App* next = nullptr;
    std::string names;
    for (const CLI::App* sub : subs) {
      if (sub->check_name(word)) next = sub;
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (next == nullptr)
      return path + ": unknown command " + kvc::base::QuoteClipped(word) +
             "; expected one of: " + names;
    cur = next;
    path += " " + next->get_name();
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  // UCX (linked for pd-run) catches SIGHUP when it loads: every command gets back the
  // disposition it inherited (a hangup ends it, or is ignored under nohup); pd-run installs its
  // own cleanup handler (probe 79).
  kvc::handoff::transport::RestoreInheritedHangupDisposition();
  if (argc > 0 && argv[0] && *argv[0]) kvc::cli::InvokedAs() = argv[0];
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
  kvc::cli::AddFixtureCommand(app);
  kvc::cli::RejectNegativeUnsigned(app);
  // The parser's messages quote the command line: escaped like every quote of the input, so an
  // argument cannot forge a line or reach the terminal as a control sequence (probe 38).
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    const std::string what = e.what();
    return kvc::cli::Printable(what) + CLI::FailureMessage::simple(a, e).substr(what.size());
  });
  // Never destroyed: std::cout is flushed at exit, after main's locals are gone.
  auto* const out_buf = new StdoutBuf;
  std::cout.rdbuf(out_buf);
#ifdef KVCONFORM_HAVE_MIMALLOC
  // Memory exhaustion is one line and exit 3 whichever allocator serves malloc. libstdc++'s
  // operator new throws std::bad_alloc (caught below); mimalloc's (linked by default, see
  // KVCONFORM_MIMALLOC) never sees std::set_new_handler and calls abort(), so its error hook
  // ends the process first, with the same line.
  mi_register_error(&OutOfMemoryHook, nullptr);
#endif
  if (const auto empty = kvc::cli::EmptyOptionValue(argc, argv, app)) {
    std::cerr << "kvconform: option " << empty->shown
              << (empty->shown == empty->name ? " \"\"" : "") << " has an empty value; expected ";
    const std::string expected = !empty->name.starts_with("--")
                                     ? empty->name + " VALUE"  // "-o"
                                     : empty->name + "=VALUE or " + empty->name + " VALUE";
    std::cerr << expected << "\n";
    if (AsksForJson(argc, argv))
      kvc::cli::PrintJsonError("option " + empty->shown +
                               (empty->shown == empty->name ? " \"\"" : "") +
                               " has an empty value; expected " + expected);
    return FinishStdout(*out_buf, kvc::cli::kExitUsage);
  }
  if (const auto unknown = UnknownCommand(app, argc, argv)) {
    std::cerr << kvc::cli::Printable(*unknown) << "\n";
    if (AsksForJson(argc, argv)) kvc::cli::PrintJsonError(*unknown);
    return FinishStdout(*out_buf, kvc::cli::kExitUsage);
  }
  int rc = kvc::cli::kExitOk;
  try {
    app.parse(argc, argv);  // runs the subcommand, which writes its report to std::cout
    rc = kvc::cli::ExitCode();
  } catch (const CLI::ParseError& e) {
    rc = app.exit(e) == 0 ? kvc::cli::kExitOk : kvc::cli::kExitUsage;
    if (rc != kvc::cli::kExitOk && AsksForJson(argc, argv))
      kvc::cli::PrintJsonError(kvc::cli::Printable(e.what()));
  } catch (const std::bad_alloc&) {
    std::cerr << kOutOfMemory;
    rc = kvc::cli::kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "kvconform: internal error: " << e.what() << "\n";
    rc = kvc::cli::kExitInternal;
  }
  return FinishStdout(*out_buf, rc);
}
