// `kvconform calc layer-stream`: request-level vs per-layer streamed transfer (M5.6 0x08I).
#include <iostream>

#include "reference/handoff/schedule.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct LayerStreamOptions {
  // As given (ParseUintList reads them: an empty element is refused, not dropped).
  std::vector<std::string> ready_args, transfer_args;
  std::string format = "text";
};

void RunLayerStream(const LayerStreamOptions& args) {
  auto ready = ParseUintList(args.ready_args, "--ready");
  auto transfer = ParseUintList(args.transfer_args, "--transfer");
  // An error: its line on standard error, and with --format json the error report (probe 84).
  auto fail = [&](const Status& st) {
    std::cerr << "kvconform calc layer-stream: " << Printable(st.message()) << "\n";
    if (args.format == "json") PrintJsonError(st.message());
    ExitCode() = kExitUsage;
  };
  if (!ready.ok() || !transfer.ok()) return fail(ready.ok() ? transfer.status() : ready.status());
  auto s = handoff::ComputeLayerStream(*ready, *transfer);
  if (!s.ok()) return fail(s.status());
  nlohmann::json j = {{"ready", *ready},
                      {"transfer", *transfer},
                      {"per_layer_visible", s->per_layer_visible},
                      {"per_layer_complete", s->per_layer_complete},
                      {"request_level_complete", s->request_level_complete},
                      {"total_transfer", s->total_transfer},
                      {"exposed_after_prefill", s->exposed_after_prefill},
                      {"hidden_transfer", s->hidden_transfer}};
  PrintFigures(j, args.format);
  ExitCode() = kExitOk;
}

}  // namespace

// Registered from calc.cc (AddCalcCommand) as a sibling of kv-bytes and saved-work.
void AddCalcLayerStream(CLI::App* calc) {
  auto o = std::make_shared<LayerStreamOptions>();
  CLI::App* c = calc->add_subcommand(
      "layer-stream",
      "Per-layer streamed visibility v_l = max(r_l, v_(l-1)) + x_l vs the serialized "
      "request-level completion r_(L-1) + sum x_l (M5.6 0x08I)");
  c->add_option("--ready", o->ready_args, "K/V-ready time r_l per layer, e.g. 25,50,75,100")
      ->required();
  c->add_option("--transfer", o->transfer_args, "transfer duration x_l per layer, e.g. 10,10,10,10")
      ->required();
  c->add_option("--format", o->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  c->callback([o] { RunLayerStream(*o); });
}

}  // namespace kvc::cli
