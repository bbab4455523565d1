// `kvconform handoff replay FILE`: prints what the M5.6 checkers compute from a transfer
// protocol timeline (0x06E) or a transfer trace (0x0F), independent of the declared values.
#include <iostream>

#include "reference/base/text_forms.h"
#include "reference/handoff/transfer_protocol.h"
#include "reference/handoff/transfer_trace.h"
#include "reference/validate/kinds.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct ReplayOptions {
  std::string file, format = "text";
};

nlohmann::json Opt(const std::optional<uint64_t>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

void RunReplay(const ReplayOptions& o) {
  auto parsed = ReadJsonFileStrict(o.file, true);
  // With --format json, a failure is one JSON document too (probe 65: nothing on standard
  // output): {"verdict": "error", "error": MESSAGE} (exit 2) or {"verdict": "fail",
  // "violations": [{"code", "line", "pointer", "message"}]} (exit 1).
  auto json_error = [&](const std::string& message) {
    if (o.format == "json") PrintJsonError(message);
  };
  if (!parsed.ok()) {
    // A JSON Lines file (a kvconform.trace/1 trace) reads as one value followed by more: say
    // which command reads it (probe 85: only the parse error was printed).
    std::string message = parsed.status().message();
    if (message.find("after the JSON value") != std::string::npos)
      message += " (handoff replay reads one JSON document, a " +
                 std::string(handoff::kTransferProtocolKind) + " or " +
                 std::string(handoff::kTransferTraceKind) +
                 "; a JSON Lines kvconform.trace/1 trace is read by kvconform check)";
    std::cerr << "kvconform handoff replay: " << Printable(message) << "\n";
    ExitCode() = kExitUsage;
    json_error(message);
    return;
  }
  const Json& doc = parsed->value;
  std::string kind = doc.is_object() && doc.contains("kind") && doc["kind"].is_string()
                         ? doc["kind"].get<std::string>()
                         : "";
  nlohmann::json j;
  if (kind == handoff::kTransferProtocolKind) {
    auto s = handoff::ReplayTransferProtocol(doc);
    if (s)
      j = {{"last_layer_ready_ms", s->last_layer_ready},
           {"all_device_visible_ms", Opt(s->all_device_visible)},
           {"validated_ms", Opt(s->validated)},
           {"published_ms", Opt(s->published)},
           {"max_inflight_bytes", s->max_inflight_bytes},
           {"logical_bytes", Opt(s->logical_bytes)},
           {"final_state", s->final_state},
           {"credits_in_flight_at_end", s->credits_in_flight_at_end},
           {"unpublished_blocks_at_end", s->unpublished_blocks_at_end},
           {"retries", s->retries}};
  } else if (kind == handoff::kTransferTraceKind) {
    auto s = handoff::AnalyzeTransferTrace(doc);
    if (s)
      j = {{"wall_us", s->wall},
           {"work_us", s->work},
           {"busy_us", s->busy},
           {"overlapped_us", s->overlapped},
           {"exposed_us", s->exposed},
           {"retries", s->retries},
           {"transferred_bytes", s->transferred_bytes}};
  } else {
    const std::string why = "not a " + std::string(handoff::kTransferProtocolKind) + " or " +
                            std::string(handoff::kTransferTraceKind) +
                            " document: " + DescribeKind(doc);
    std::cerr << "kvconform handoff replay: " << Printable(o.file) << ": " << Printable(why)
              << "\n";
    ExitCode() = kExitUsage;
    json_error(o.file + ": " + why);
    return;
  }
  if (j.is_null()) {
    // The document breaks the contract before a summary exists: show why.
    const KindEntry* k = FindKind(kind);
    nlohmann::json violations = nlohmann::json::array();
    // Lines are looked up by the whole pointer, then the report keeps its limits (violation.h).
    for (const auto& whole : k->validate_json(doc)) {
      const uint32_t line = parsed->LineOf(whole.pointer);
      const Violation v = ForReport(whole);
      // The text report's lines go to standard output, as check's and validate's violations
      // (probe 84: they went to standard error); with --format json the JSON report has them.
      if (o.format != "json")
        std::cout << Printable(o.file) << ":" << line << ": " << ErrorCodeName(v.code) << " at '"
                  << Printable(v.pointer) << "': " << Printable(v.message) << "\n";
      violations.push_back({{"code", ErrorCodeName(v.code)},
                            {"line", line},
                            {"pointer", v.pointer},
                            {"message", v.message}});
    }
    if (o.format == "json")
      std::cout << DumpReport({{"verdict", "fail"}, {"violations", std::move(violations)}}) << "\n";
    ExitCode() = kExitViolation;
    return;
  }
  // "verdict" as in the failure documents (probe 84: only a failure had it).
  if (o.format == "json") j["verdict"] = "pass";
  PrintFigures(j, o.format);
  ExitCode() = kExitOk;
}

}  // namespace

void AddHandoffCommand(CLI::App& app) {
  CLI::App* h = app.add_subcommand("handoff", "M5.6 prefill-to-decode handoff tools");
  h->require_subcommand(1);
  auto o = std::make_shared<ReplayOptions>();
  CLI::App* r = h->add_subcommand(
      "replay",
      "Replay a transfer-protocol timeline or analyze a transfer trace and print the computed "
      "results (ready/visible/validated/published times, peak credit; wall/overlap/exposed)");
  r->add_option("file", o->file,
                "a kvconform.transfer_protocol/1 or kvconform.transfer_trace/1 document")
      ->required();
  r->add_option("--format", o->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  r->callback([o] { RunReplay(*o); });
}

}  // namespace kvc::cli
