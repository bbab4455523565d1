// Shared pieces of the kvconform CLI: exit codes, the command table and report output.
#ifndef KVCONFORM_TOOLS_KVCONFORM_CLI_H_
#define KVCONFORM_TOOLS_KVCONFORM_CLI_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/validate/fixtures.h"

namespace kvc::cli {

// Documented exit codes (docs/cli.md).
inline constexpr int kExitOk = 0;         // everything conforms
inline constexpr int kExitViolation = 1;  // at least one contract violation / failed case
inline constexpr int kExitUsage = 2;      // bad usage, or input that cannot be read or parsed
inline constexpr int kExitInternal = 3;   // a bug in kvconform, or out of memory

// Set by a command's callback; main() returns it.
int& ExitCode();

// argv[0] as main() received it ("kvconform" before main sets it): the command a printed
// reproducer starts with, so that it runs as printed (probe 69: a bare "kvconform" was not on
// the PATH of a user who ran ./kvconform).
std::string& InvokedAs();

// `s` as one POSIX shell word: unchanged when it holds only characters no shell treats
// specially, else in single quotes (a quote inside as '\''); every other byte as it is, so
// the word round-trips through `sh`. Only a word holding a control byte (< 0x20, 0x7f) is
// written through Printable first (a reproducer is printed on a terminal): such a word does not
// round-trip.
std::string ShellQuote(std::string_view s);

// Root of the kit's source tree (fixtures, invalid_fixtures): $KVCONFORM_ROOT, else the
// source directory this binary was built from.
std::string DefaultRoot();

// Each command file provides one registration function; main.cc lists them.
void AddValidateCommand(CLI::App& app);
void AddCalcCommand(CLI::App& app);
void AddSuiteCommand(CLI::App& app);
void AddErrorsCommand(CLI::App& app);
void AddManifestCommand(CLI::App& app);
// Adds `calc service-metrics`; call after AddCalcCommand.
void AddServiceMetricsCommand(CLI::App& app);
void AddModelCommands(CLI::App& app);  // gen-model, generate, parity, bench-engine
void AddCheckCommand(CLI::App& app);
void AddGenTraceCommand(CLI::App& app);
void AddHandoffCommand(CLI::App& app);
void AddFuzzCommand(CLI::App& app);
void AddPdCommands(CLI::App& app);  // pd-run, pd-worker, pd-bench (UCX handoff)
void AddFixtureCommand(CLI::App& app);  // fixture materialize

// A list option: comma-separated unsigned decimal integers, each argument of a repeated flag
// continuing the list (calc kv-bytes --lengths/--copies, calc layer-stream --ready/--transfer).
// An empty element is refused, naming `flag` (a dropped "5,,2" element shifted every later
// length against its copy count; probe 51: "1,,2" gave layer-stream one layer fewer).
StatusOr<std::vector<uint64_t>> ParseUintList(const std::vector<std::string>& args,
                                              std::string_view flag);
// --prompt-ids "1,2,3": comma-separated integer token ids (generate, parity, pd-run, ...).
StatusOr<std::vector<int64_t>> ParsePromptIds(const std::string& s);

// Report rendering shared by validate and suite.
enum class Format { kText, kJson, kJunit };
Format ParseFormat(const std::string& s);
std::string OutcomeVerdict(const FixtureOutcome& o);  // "pass" | "fail" | "error"
nlohmann::json OutcomeToJson(const FixtureOutcome& o);
// A failing testcase's <failure> body holds one line per violation, its pointer and message
// written through Printable (as in the text reports); so are the error and failure messages.
std::string RenderJunit(const std::string& suite_name, const std::vector<FixtureOutcome>& outcomes);
// `s` as XML 1.0 character data or attribute value: invalid UTF-8 and U+FFFE/U+FFFF become
// U+FFFD, C0 controls other than tab and newline a space, & < > " ' entity references.
std::string XmlEscape(const std::string& s);
// `s` with every byte that does not start a well-formed UTF-8 sequence replaced by U+FFFD (a
// file name is bytes; JSON and XML reports are UTF-8).
std::string ValidUtf8(const std::string& s);
// `s` for a terminal, on one line: a backslash written as \\; each byte of a C0 control, DEL,
// a C1 control (U+0080..U+009F), U+2028, U+2029, U+FFFE or U+FFFF, and each byte that starts
// no well-formed UTF-8 sequence, written as \xNN (two uppercase hex digits); the rest as is. A trace's strings
// and file names are quoted in reports: an escape sequence or line break in one must not reach
// the terminal raw, and a literal "\x0A" in one reads \\x0A, not as an escaped newline.
std::string Printable(const std::string& s);

// Notes on standard error, one line, the checkpoint tensors config.json does not use
// (LlamaWeights::unused_tensors: their count and the first few names); nothing when none.
void NoteUnusedTensors(const char* cmd, const std::vector<std::string>& unused);

// Adds to every unsigned option of `app` and its subcommands (CLI11 type name UINT, lists
// included) a check that refuses a negative value: CLI11 2.1 reads "-1" into an unsigned as
// 2^64 - 1, so `--events -1` ran forever and `--copies -1` was used as 2^64 - 1. Call after
// every command is added. Exit 2 (kExitUsage) like any usage error.
void RejectNegativeUnsigned(CLI::App& app);
// The first argument before a "--" separator that gives an option an empty value, or nullopt:
// "--lengths=" (CLI11 would take the next argument as that option's value, so its error, if any,
// would name the wrong argument), or an option that takes a value followed by an empty argument
// ("--filter ''", which CLI11 takes as the value ""; probe 38: suite --filter '' ran every case,
// --root '' used the default root). main() refuses such a command line (exit 2) naming the
// option. Only options of `app` (or of its subcommands) count: an unknown one is the parser's to
// report. `shown` is the argument as given ("--lengths=" or "--filter"), `name` the option.
struct EmptyValue {
  std::string shown, name;
};
std::optional<EmptyValue> EmptyOptionValue(int argc, char** argv, const CLI::App& app);
// A JSON report as text: indented 2, any invalid UTF-8 (a file name's) replaced by U+FFFD.
std::string DumpReport(const nlohmann::json& j);
// An error with --format json: {"verdict": "error", "error": MESSAGE} on standard output, so
// that a consumer parsing the report finds one (the command writes its error line on standard
// error too).
void PrintJsonError(const std::string& message);
// What a document names itself for a message about its kind: `its kind is "K"`, or what stands
// where a string "kind" member should (`its "kind" is a number`, `it has no "kind" member`,
// `it is a JSON array`); a kind 5 was once printed as kind "".
std::string DescribeKind(const nlohmann::json& doc);
// A command's computed figures (`calc kv-bytes`, `saved-work`, `layer-stream`, `handoff replay`):
// the object with --format json, else one "key: value" line per member (calc.cc).
void PrintFigures(const nlohmann::json& j, const std::string& format);

// A section of `kvconform suite` beyond the fixture files (engine parity, bundled traces,
// ...). Later parts of the kit append to SuiteSections() from their command files.
struct SuiteSection {
  std::string name;  // shown in the summary table
  // Runs the section's cases under `root`; each outcome is one row in the report.
  std::function<std::vector<FixtureOutcome>(const std::string& root)> run;
};
std::vector<SuiteSection>& SuiteSections();

}  // namespace kvc::cli

#endif  // KVCONFORM_TOOLS_KVCONFORM_CLI_H_
