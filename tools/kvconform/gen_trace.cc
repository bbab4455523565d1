// `kvconform gen-trace`: write a large valid kvconform.trace/1 trace (benchmark input).
//
// R requests run concurrently, interleaved step by step (one source, contiguous sequence): each
// allocates, prefills P rows through all L layers, emits, decodes D tokens (stage every layer,
// publish, emit), finishes, releases and is replaced by a fresh request. Generation stops at
// the first step boundary at or after --events, so no operation is left open.
//
// --ids short names requests r0, r1, ... and the cache ABI "abi-gen" (every id fits
// std::string's 15-byte inline buffer); --ids runtime uses identifiers of the lengths serving
// runtimes emit: request ids like vLLM's "cmpl-<32 hex>-0" (38 bytes), operation ids
// "<request id>.t<k>" and a 64-hex-digit cache ABI id (a SHA-256). Event ids stay "e<seq>".
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "reference/lifecycle/snapshot/snapshot.h"  // DigestHex: 16 hex digits of a uint64
#include "reference/race/fuzzer.h"  // SplitMix64: the digits of runtime ids
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

struct GenOptions {
  uint64_t events = 1000000;
  uint64_t requests = 64;
  uint32_t layers = 2;
  uint64_t prompt = 16;
  uint64_t decode = 32;
  std::string ids = "short";  // short | runtime
  std::string out = "-";
};

// The id of the n-th request: "r<n>", or (runtime) "cmpl-<32 hex digits>-0".
std::string RequestId(const GenOptions& o, uint64_t n) {
  if (o.ids == "short") return "r" + std::to_string(n);
  return "cmpl-" + lifecycle::DigestHex(race::SplitMix64(2 * n)) +
         lifecycle::DigestHex(race::SplitMix64(2 * n + 1)) + "-0";
}

std::string AbiId(const GenOptions& o) {
  if (o.ids == "short") return "abi-gen";
  std::string id;
  for (uint64_t i = 0; i < 4; ++i) id += lifecycle::DigestHex(race::SplitMix64(~i));
  return id;
}

struct Req {
  std::string id;
  uint64_t committed = 0, version = 0, emitted = 0, last_token = 0, op = 0;
  int stage = 0;  // 0 allocate, 1 prefill, 2 decode..., 3 finish/release
};

class Writer {
 public:
  explicit Writer(FILE* f) : f_(f) {}
  uint64_t seq = 0;
  // Writes one event; `rest` is the tail of the object after the envelope (starts with ',').
  void Event(const std::string& req, const char* type, const std::string& op, const char* base,
             const char* result, const std::string& payload) {
    int n = std::snprintf(buf_, sizeof buf_,
                          "{\"event_id\":\"e%llu\",\"source_instance\":\"engine-0\","
                          "\"source_component\":\"semantic\",\"local_sequence\":%llu,"
                          "\"monotonic_ns\":%llu,\"request_id\":\"%s\",\"handle_generation\":0,"
                          "\"operation_id\":%s,\"event_type\":\"%s\",\"base_snapshot\":%s,"
                          "\"result_snapshot\":%s,\"payload\":%s}\n",
                          static_cast<unsigned long long>(seq), static_cast<unsigned long long>(seq),
                          static_cast<unsigned long long>(1000 * seq), req.c_str(),
                          op.empty() ? "null" : ("\"" + op + "\"").c_str(), type, base, result,
                          payload.c_str());
    if (n < 0 || static_cast<size_t>(n) >= sizeof buf_) {  // cannot happen for the payloads below
      std::fprintf(stderr, "gen-trace: event %llu longer than %zu bytes\n",
                   static_cast<unsigned long long>(seq), sizeof buf_);
      std::abort();
    }
    std::fwrite(buf_, 1, static_cast<size_t>(n), f_);
    ++seq;
  }

 private:
  FILE* f_;
  char buf_[2048];
};

std::string N(uint64_t v) { return std::to_string(v); }

void Run(const GenOptions& o) {
  FILE* f = o.out == "-" ? stdout : std::fopen(o.out.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "gen-trace: cannot open %s\n", o.out.c_str());
    ExitCode() = kExitUsage;
    return;
  }
  std::fprintf(f,
               "{\"kind\":\"kvconform.trace/1\",\"schema_version\":1,\"producer\":{\"name\":"
               "\"kvconform gen-trace\",\"revision\":\"0.1.0\"},\"cache_abi\":{\"id\":\"%s\","
               "\"num_layers\":%u,\"position_stage\":\"post_rope\",\"bytes_per_token\":64},"
               "\"sources\":[{\"source_instance\":\"engine-0\",\"source_component\":\"semantic\","
               "\"clock_domain\":\"engine-0.monotonic\"}],\"audit\":\"complete\",\"regenerate\":\"kvconform gen-trace "
               "--events %llu --requests %llu --layers %u --prompt %llu --decode %llu --ids %s\"}\n",
               AbiId(o).c_str(), o.layers, static_cast<unsigned long long>(o.events),
               static_cast<unsigned long long>(o.requests), o.layers,
               static_cast<unsigned long long>(o.prompt), static_cast<unsigned long long>(o.decode),
               o.ids.c_str());
  Writer w(f);
  std::vector<Req> reqs(o.requests);
  uint64_t next_id = 0;
  for (auto& r : reqs) r.id = RequestId(o, next_id++);
  auto append = [&](Req& r, const char* purpose, uint64_t rows) {
    std::string op = r.id + ".t" + N(r.op++);
    uint64_t s = r.committed, e = s + rows;
    std::string iv = "[" + N(s) + "," + N(e) + "]";
    std::string tok = std::string(purpose) == "decode" ? ",\"input_token\":" + N(r.last_token) : "";
    w.Event(r.id, "append_start", op, N(r.version).c_str(), "null",
            "{\"interval\":" + iv + ",\"cache_position\":" + iv + ",\"mask_key_length\":" + N(e) +
                ",\"position_stage\":\"post_rope\",\"purpose\":\"" + purpose + "\"" + tok + "}");
    for (uint32_t l = 0; l < o.layers; ++l)
      w.Event(r.id, "append_stage_layer", op, "null", "null",
              "{\"layer\":" + N(l) + ",\"interval\":" + iv + "}");
    r.committed = e;
    ++r.version;
    w.Event(r.id, "append_publish", op, N(r.version - 1).c_str(), N(r.version).c_str(),
            "{\"committed_length\":" + N(e) + "}");
  };
  auto emit = [&](Req& r) {
    r.last_token = (r.emitted * 2654435761u + 7) % 50000;
    w.Event(r.id, "output_emit", "", N(r.version).c_str(), "null",
            "{\"output_index\":" + N(r.emitted) + ",\"token\":" + N(r.last_token) + "}");
    ++r.emitted;
  };
  size_t i = 0;
  while (w.seq < o.events) {
    Req& r = reqs[i++ % reqs.size()];
    if (r.stage == 0) {
      w.Event(r.id, "request_allocate", "", "null", "0",
              "{\"prompt_length\":" + N(o.prompt) + "}");
      r.stage = 1;
    } else if (r.stage == 1) {
      append(r, "prefill", o.prompt);
      emit(r);
      r.stage = 2;
    } else if (r.stage == 2) {
      append(r, "decode", 1);
      emit(r);
      if (r.emitted > o.decode) r.stage = 3;
    } else {
      w.Event(r.id, "finish", "", N(r.version).c_str(), N(r.version).c_str(),
              "{\"committed_length\":" + N(r.committed) + ",\"emitted_outputs\":" + N(r.emitted) + "}");
      w.Event(r.id, "release", "", N(r.version).c_str(), N(r.version + 1).c_str(),
              "{\"committed_length\":0,\"result_handle_generation\":1}");
      r = Req{};
      r.id = RequestId(o, next_id++);
    }
  }
  if (f != stdout) std::fclose(f);
  std::fprintf(stderr, "gen-trace: %llu events, %llu requests started\n",
               static_cast<unsigned long long>(w.seq), static_cast<unsigned long long>(next_id));
  ExitCode() = kExitOk;
}

}  // namespace

void AddGenTraceCommand(CLI::App& app) {
  auto opt = std::make_shared<GenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gen-trace", "Write a large valid kvconform.trace/1 trace (benchmark input for check).");
  cmd->add_option("--events", opt->events, "minimum number of events (default 1000000)");
  cmd->add_option("--requests", opt->requests, "concurrent requests (default 64)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--layers", opt->layers, "cache-producing layers (default 2)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--prompt", opt->prompt, "prompt rows per request (default 16)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--decode", opt->decode, "decode steps per request (default 32)");
  cmd->add_option("--ids", opt->ids,
                  "id style: short (r0, r1, ...; default) or runtime (request ids like vLLM's "
                  "cmpl-<32 hex>-0, a 64-hex-digit cache ABI id)")
      ->check(CLI::IsMember({"short", "runtime"}));
  cmd->add_option("-o,--out", opt->out, "output file (default stdout)");
  cmd->callback([opt] { Run(*opt); });
}

}  // namespace kvc::cli
