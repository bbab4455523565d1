// `kvconform calc ...`: the seed's calculators (kv-bytes, saved-work) as exact arithmetic.
#include <charconv>
#include <iostream>
#include <string_view>

#include "reference/base/strict_json.h"
#include "reference/ledger/kv_bytes.h"
#include "reference/saved_work/saved_work.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct KvBytesOptions {
  uint64_t layers = 0, kv_heads = 0, head_dim = 0, k_bytes = 0, v_bytes = 0;
  // The --lengths and --copies arguments as given (comma-separated lists; ParseUintList reads
  // them).
  std::vector<std::string> lengths, copies;
  std::string hf_config, dtype, format = "text";
};

// The error line on standard error and, with --format json, the error report on standard output
// (probe 84: kv-bytes and saved-work wrote nothing there, where service-metrics writes one).
int Fail(const Status& s, const std::string& format) {
  std::cerr << "kvconform calc: " << Printable(s.message()) << "\n";
  if (format == "json") PrintJsonError(s.message());
  return kExitUsage;
}

}  // namespace

// A command's figures: the JSON object, or one "key: value" line per member (a string value
// as JSON writes it, any invalid UTF-8, from a file name, replaced by U+FFFD).
void PrintFigures(const nlohmann::json& j, const std::string& format) {
  if (format == "json") {
    std::cout << DumpReport(j) << "\n";
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    std::cout << it.key() << ": "
              << it.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

namespace {

void RunKvBytes(const KvBytesOptions& o) {
  auto lengths = ParseUintList(o.lengths, "--lengths");
  if (!lengths.ok()) {
    ExitCode() = Fail(lengths.status(), o.format);
    return;
  }
  auto copies = ParseUintList(o.copies, "--copies");
  if (!copies.ok()) {
    ExitCode() = Fail(copies.status(), o.format);
    return;
  }
  CacheGeometry g{o.layers, o.kv_heads, o.head_dim, o.k_bytes, o.v_bytes};
  nlohmann::json source = "flags";
  if (!o.hf_config.empty()) {
    auto cfg = ReadJsonFileStrict(o.hf_config);
    if (!cfg.ok()) {
      ExitCode() = Fail(cfg.status(), o.format);
      return;
    }
    auto geo = GeometryFromHfConfig(cfg->value, o.dtype, o.hf_config);
    if (!geo.ok()) {
      ExitCode() = Fail(geo.status(), o.format);
      return;
    }
    g = *geo;
    source = o.hf_config;
  } else if (!o.dtype.empty()) {
    // (probe 99: --dtype without --hf-config was ignored, so --dtype fp8 with explicit flags gave
    // the --k-bytes/--v-bytes widths and exit 0.)
    ExitCode() = Fail(InvalidArgument("--dtype applies to --hf-config only; with explicit "
                                      "geometry, --k-bytes and --v-bytes give the widths"),
                      o.format);
    return;
  } else if (o.layers == 0 || o.kv_heads == 0 || o.head_dim == 0 || o.k_bytes == 0 ||
             o.v_bytes == 0) {
    ExitCode() =
        Fail(InvalidArgument(
                 "--layers, --kv-heads, --head-dim, --k-bytes and --v-bytes must all be positive "
                 "(or pass --hf-config)"),
             o.format);
    return;
  }
  auto r = ComputeRaggedLedger(g, *lengths, *copies);
  if (!r.ok()) {
    ExitCode() = Fail(r.status(), o.format);
    return;
  }
  nlohmann::json j = {{"layers", g.layers},          {"kv_heads", g.kv_heads_local},
                      {"head_dim", g.head_dim},      {"k_bytes", g.k_bytes},
                      {"v_bytes", g.v_bytes},        {"bytes_per_token", r->bytes_per_token},
                      {"logical", r->logical},       {"materialized", r->materialized},
                      {"rectangular", r->rectangular}, {"phantom", r->phantom},
                      {"source", source}};
  PrintFigures(j, o.format);
  ExitCode() = kExitOk;
}

struct SavedWorkOptions {
  uint64_t prompt = 0, outputs = 0;
  std::string format = "text";
};

void RunSavedWork(const SavedWorkOptions& o) {
  auto w = ComputeSavedWork(o.prompt, o.outputs);
  if (!w.ok()) {
    ExitCode() = Fail(w.status(), o.format);
    return;
  }
  nlohmann::json j = {{"prompt", w->prompt},
                      {"outputs", w->outputs},
                      {"rows_no_cache", w->rows_no_cache},
                      {"rows_cache", w->rows_cache},
                      {"rows_saved", w->rows_saved},
                      {"row_reduction", w->row_reduction},
                      {"pairs_no_cache", w->pairs_no_cache},
                      {"pairs_cache", w->pairs_cache},
                      {"pairs_saved", w->pairs_saved},
                      {"pair_reduction", w->pair_reduction}};
  PrintFigures(j, o.format);
  ExitCode() = kExitOk;
}

}  // namespace

void AddCalcLayerStream(CLI::App* calc);  // calc_layer_stream.cc
void AddCalcCommand(CLI::App& app) {
  CLI::App* calc = app.add_subcommand("calc", "Exact calculators from the seed's ledgers");
  calc->require_subcommand(1);

  auto kv = std::make_shared<KvBytesOptions>();
  CLI::App* k = calc->add_subcommand(
      "kv-bytes", "B_token = L * H_kv * d_h * (b_K + b_V) and the ragged logical / materialized / "
                  "rectangular / phantom ledgers (M5.1 0x02, 0x09)");
  std::vector<CLI::Option*> geometry = {
      k->add_option("--layers", kv->layers, "L_cache: cache-producing layers"),
      k->add_option("--kv-heads", kv->kv_heads, "H_kv,local: K/V heads on this shard"),
      k->add_option("--head-dim", kv->head_dim, "d_h"),
      k->add_option("--k-bytes", kv->k_bytes, "b_K: bytes per K scalar"),
      k->add_option("--v-bytes", kv->v_bytes, "b_V: bytes per V scalar")};
  k->add_option("--lengths", kv->lengths, "committed lengths T_i, e.g. 5,3");
  k->add_option("--copies", kv->copies, "materialized copies c_i, e.g. 1,2");
  // The geometry comes from the flags or from config.json, not both (a flag beside
  // --hf-config was silently ignored).
  CLI::Option* hf =
      k->add_option("--hf-config", kv->hf_config, "read geometry from a Hugging Face config.json");
  for (CLI::Option* g : geometry) hf->excludes(g);
  k->add_option("--dtype", kv->dtype,
                "with --hf-config: the K/V scalar dtype (e.g. bfloat16, fp8), in place of the "
                "config's torch_dtype (required when it has none); a scale per tensor is not "
                "counted");
  k->add_option("--format", kv->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  k->callback([kv] { RunKvBytes(*kv); });

  auto sw = std::make_shared<SavedWorkOptions>();
  CLI::App* s = calc->add_subcommand(
      "saved-work", "Row and causal-pair ledgers of cached vs uncached generation (M5.1 0x03)");
  s->add_option("--prompt", sw->prompt, "P: prompt tokens")->required();
  s->add_option("--outputs", sw->outputs, "G: output tokens")->required();
  s->add_option("--format", sw->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  s->callback([sw] { RunSavedWork(*sw); });
  AddCalcLayerStream(calc);
}

}  // namespace kvc::cli
