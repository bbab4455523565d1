// `kvconform gen-trace`: write a large valid kvconform.trace/1 trace (benchmark input).
//
// R requests run concurrently (one source, contiguous sequence): each allocates, prefills P rows
// through all L layers, emits, decodes D tokens (stage every layer, publish, emit), finishes,
// releases and is replaced by a fresh request. Generation stops at the first step boundary at or
// after --events, so no operation is left open. Two event orders:
//  --order request (default): the requests take turns; one turn is one request's whole step
//    (append_start, every layer, append_publish, output_emit), so consecutive events nearly
//    always name the same request and operation.
//  --order step: one engine iteration over every running request at once, phase by phase, as
//    a continuous-batching engine runs a forward pass: every append_start, then layer 0 of every
//    request, ..., layer L-1, every append_publish, every output_emit; finished requests are
//    released at the iteration's start and their replacements allocate and prefill in it. So
//    consecutive events name different requests.
//
// --mix decode (default) writes only that; --mix lifecycle (request order only) adds, drawn per
// decode turn from a SplitMix64 stream seeded by --seed, the rest of the semantic plane and the
// observation planes: a failed append retried under a new operation id (append_failure), a
// cancelled one retried (cancel_txn), a lost publication acknowledgement retried (append_publish
// with outcome replayed), a fork child that is truncated, finished and released, a request
// cancelled mid-decode and released (cancel_request), a reader's all-layer read, a speculative
// verification of 3 drafts (0-3 accepted, then the correction) in place of a decode step, a
// reorder swapping two requests' rows (beam search), and allocator/residency observations of a
// quarter of the publications and of every request's release (not a fork child's), from sources
// alloc-0 and res-0 (event ids
// "a<n>" and "m<n>") under the header's allocator model of 16 slots per block. Every trace it
// writes is valid: tools/cli_test.sh checks one per seed it lists.
//
// --arrivals together (default) gives every request --decode steps, so the R requests that start
// together finish together and their slots are refilled at once; --arrivals staggered draws each
// request's steps from [0, 2 * --decode] (a SplitMix64 of its number; a request that draws 0
// decodes one step, as every request does under --decode 0), so requests arrive and
// leave at spread times and a slot's turn mixes prefills, decodes and releases.
//
// --end-record declares "end_record": true in the header and ends the trace with its end record
// (docs/trace-format.md "End record"), as a streaming producer should.
//
// --ids short names requests r0, r1, ... and the cache ABI "abi-gen" (every id fits
// std::string's 15-byte inline buffer); --ids runtime uses identifiers of the lengths serving
// runtimes emit: request ids like vLLM's "cmpl-<32 hex>-0" (38 bytes), operation ids
// "<request id>.t<k>" and a 64-hex-digit cache ABI id (a SHA-256). Event ids stay "e<seq>".
#include <algorithm>
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
  std::string order = "request";  // request | step
  std::string mix = "decode";     // decode | lifecycle
  std::string arrivals = "together";  // together | staggered
  bool end_record = false;            // the header's end_record: true and the end record
  uint64_t seed = 1;              // --mix lifecycle's draws
  std::string out = "-";
};

// The id of the n-th request: "r<n>", or (runtime) "cmpl-<32 hex digits>-0".
std::string RequestId(const GenOptions& o, uint64_t n) {
  if (o.ids == "short") return "r" + std::to_string(n);
  return "cmpl-" + lifecycle::DigestHex(race::SplitMix64(2 * n)) +
         lifecycle::DigestHex(race::SplitMix64(2 * n + 1)) + "-0";
}

// The header's B_token: the least multiple of the layer count from 64 bytes on (64 for 1, 2, 4,
// ..., 64 layers; one byte per layer above 64). Each cache-producing layer stores the same whole
// bytes of a token, at least one: 64 bytes for 65 layers (probe 52) or for 3 (probe 91) is an
// invalid header, whose check stops at line 1.
unsigned BytesPerToken(const GenOptions& o) { return o.layers * ((64u + o.layers - 1) / o.layers); }

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
  std::string cur_op, cur_iv;  // the open append: operation id and "[start,end]"
  uint64_t cur_end = 0;
  uint64_t forks = 0;  // --mix lifecycle: fork children so far (ids "<id>.f<k>")
  uint64_t decode = 0;  // this request's decode steps (--decode, or drawn: --arrivals staggered)
};

// The sources a trace names; every event of a source carries its own local_sequence.
enum Source { kEngine = 0, kAllocator = 1, kResidency = 2 };

class Writer {
 public:
  explicit Writer(FILE* f) : f_(f) {}
  uint64_t seq = 0;  // events written, all sources
  // The event id of the engine's next event.
  std::string NextEngineId() const { return "e" + std::to_string(n_[kEngine]); }
  // Writes one event; `payload` is its payload object, `outcome` "" or an outcome name.
  void Event(const std::string& req, const char* type, const std::string& op, const char* base,
             const char* result, const std::string& payload, const char* outcome = "",
             Source src = kEngine) {
    static const char* const kInstance[] = {"engine-0", "alloc-0", "res-0"};
    static const char* const kComponent[] = {"semantic", "allocator", "residency"};
    static const char kIdPrefix[] = {'e', 'a', 'm'};
    const uint64_t n = n_[src]++;
    std::string out = *outcome ? ",\"outcome\":\"" + std::string(outcome) + "\"" : "";
    int len = std::snprintf(buf_, sizeof buf_,
                            "{\"event_id\":\"%c%llu\",\"source_instance\":\"%s\","
                            "\"source_component\":\"%s\",\"local_sequence\":%llu,"
                            "\"monotonic_ns\":%llu,\"request_id\":\"%s\",\"handle_generation\":0,"
                            "\"operation_id\":%s,\"event_type\":\"%s\",\"base_snapshot\":%s,"
                            "\"result_snapshot\":%s%s,\"payload\":%s}\n",
                            kIdPrefix[src], static_cast<unsigned long long>(n), kInstance[src],
                            kComponent[src], static_cast<unsigned long long>(n),
                            static_cast<unsigned long long>(1000 * seq), req.c_str(),
                            op.empty() ? "null" : ("\"" + op + "\"").c_str(), type, base, result,
                            out.c_str(), payload.c_str());
    if (len < 0 || static_cast<size_t>(len) >= sizeof buf_) {  // cannot happen for these payloads
      std::fprintf(stderr, "gen-trace: event %llu longer than %zu bytes\n",
                   static_cast<unsigned long long>(seq), sizeof buf_);
      std::abort();
    }
    std::fwrite(buf_, 1, static_cast<size_t>(len), f_);
    ++seq;
  }
  // Writes one engine reorder event (it names no request, operation or snapshot).
  void Reorder(const std::string& payload) {
    const uint64_t n = n_[kEngine]++;
    const std::string out = "{\"event_id\":\"e" + std::to_string(n) +
                            "\",\"source_instance\":\"engine-0\",\"source_component\":"
                            "\"semantic\",\"local_sequence\":" +
                            std::to_string(n) + ",\"monotonic_ns\":" + std::to_string(1000 * seq) +
                            ",\"operation_id\":null,\"event_type\":\"reorder\",\"base_snapshot\":"
                            "null,\"result_snapshot\":null,\"payload\":" +
                            payload + "}\n";
    std::fwrite(out.data(), 1, out.size(), f_);
    ++seq;
  }

 private:
  FILE* f_;
  uint64_t n_[3] = {0, 0, 0};
  char buf_[2048];
};

std::string N(uint64_t v) { return std::to_string(v); }

// --mix lifecycle: the allocator model's block size.
constexpr uint64_t kSlotsPerBlock = 16;
// --mix lifecycle: the draft rows of a speculative verification.
constexpr uint64_t kDrafts = 3;

void Run(const GenOptions& o) {
  FILE* f = o.out == "-" ? stdout : std::fopen(o.out.c_str(), "wb");
  if (!f) {
    std::fprintf(stderr, "gen-trace: cannot open %s\n", Printable(o.out).c_str());
    ExitCode() = kExitUsage;
    return;
  }
  const bool lifecycle = o.mix == "lifecycle";
  const std::string more_sources =
      lifecycle ? ",{\"source_instance\":\"alloc-0\",\"source_component\":\"allocator\","
                  "\"clock_domain\":\"engine-0.monotonic\"},{\"source_instance\":\"res-0\","
                  "\"source_component\":\"residency\",\"clock_domain\":\"engine-0.monotonic\"}"
                : "";
  const std::string models =
      lifecycle ? ",\"allocator_model\":{\"slots_per_block\":" + std::to_string(kSlotsPerBlock) +
                      ",\"used_slots\":\"committed_rows\"}"
                : "";
  const std::string mix_args =
      (lifecycle ? " --mix lifecycle --seed " + std::to_string(o.seed) : "") +
      (o.arrivals == "together" ? "" : " --arrivals " + o.arrivals) +
      (o.end_record ? " --end-record" : "");
  std::fprintf(f,
               "{\"kind\":\"kvconform.trace/1\",\"schema_version\":1,\"producer\":{\"name\":"
               "\"kvconform gen-trace\",\"revision\":\"0.1.0\"},\"cache_abi\":{\"id\":\"%s\","
               "\"num_layers\":%u,\"position_stage\":\"post_rope\",\"bytes_per_token\":%u},"
               "\"sources\":[{\"source_instance\":\"engine-0\",\"source_component\":\"semantic\","
               "\"clock_domain\":\"engine-0.monotonic\"}%s]%s,\"audit\":\"complete\",%s"
               "\"regenerate\":\"kvconform gen-trace "
               "--events %llu --requests %llu --layers %u --prompt %llu --decode %llu --ids %s "
               "--order %s%s\"}\n",
               AbiId(o).c_str(), o.layers, BytesPerToken(o), more_sources.c_str(), models.c_str(),
               o.end_record ? "\"end_record\":true," : "",
               static_cast<unsigned long long>(o.events),
               static_cast<unsigned long long>(o.requests), o.layers,
               static_cast<unsigned long long>(o.prompt), static_cast<unsigned long long>(o.decode),
               o.ids.c_str(), o.order.c_str(), mix_args.c_str());
  Writer w(f);
  std::vector<Req> reqs(o.requests);
  uint64_t next_id = 0;
  // A fresh request in slot `r`: --arrivals together gives every request --decode steps, so the
  // slots that start together finish together and are refilled at once; staggered draws each
  // request's steps uniformly from [0, 2 * --decode] (a draw of 0 decodes one step, as --decode 0
  // does: the mean is --decode + 1 / (2 * --decode + 1)), so requests arrive and
  // leave at spread times (the draw depends on the request's number only, not on --seed).
  auto fresh = [&](Req& r) {
    r = Req{};
    const uint64_t n = next_id++;
    r.id = RequestId(o, n);
    r.decode = o.arrivals == "together"
                   ? o.decode
                   : race::SplitMix64(0x5eed5eed5eedull + n) % (2 * o.decode + 1);
  };
  for (auto& r : reqs) fresh(r);
  // One append in three parts (the step order writes each part for every request in turn).
  auto start = [&](Req& r, const char* purpose, uint64_t rows) {
    r.cur_op = r.id + ".t" + N(r.op++);
    const uint64_t s = r.committed;
    r.cur_end = s + rows;
    r.cur_iv = "[" + N(s) + "," + N(r.cur_end) + "]";
    std::string tok = std::string(purpose) == "decode" ? ",\"input_token\":" + N(r.last_token) : "";
    w.Event(r.id, "append_start", r.cur_op, N(r.version).c_str(), "null",
            "{\"interval\":" + r.cur_iv + ",\"cache_position\":" + r.cur_iv +
                ",\"mask_key_length\":" + N(r.cur_end) +
                ",\"position_stage\":\"post_rope\",\"purpose\":\"" + purpose + "\"" + tok + "}");
  };
  auto stage_layer = [&](Req& r, uint32_t l) {
    w.Event(r.id, "append_stage_layer", r.cur_op, "null", "null",
            "{\"layer\":" + N(l) + ",\"interval\":" + r.cur_iv + "}");
  };
  auto publish = [&](Req& r) {
    r.committed = r.cur_end;
    ++r.version;
    w.Event(r.id, "append_publish", r.cur_op, N(r.version - 1).c_str(), N(r.version).c_str(),
            "{\"committed_length\":" + N(r.cur_end) + "}");
  };
  auto emit = [&](Req& r) {
    r.last_token = (r.emitted * 2654435761u + 7) % 50000;
    w.Event(r.id, "output_emit", "", N(r.version).c_str(), "null",
            "{\"output_index\":" + N(r.emitted) + ",\"token\":" + N(r.last_token) + "}");
    ++r.emitted;
  };
  auto allocate = [&](Req& r) {
    w.Event(r.id, "request_allocate", "", "null", "0",
            "{\"prompt_length\":" + N(o.prompt) + "}");
    r.stage = 1;
  };
  auto retire = [&](Req& r) {  // finish, release, and a fresh request in its place
    w.Event(r.id, "finish", "", N(r.version).c_str(), N(r.version).c_str(),
            "{\"committed_length\":" + N(r.committed) + ",\"emitted_outputs\":" + N(r.emitted) + "}");
    w.Event(r.id, "release", "", N(r.version).c_str(), N(r.version + 1).c_str(),
            "{\"committed_length\":0,\"result_handle_generation\":1}");
    fresh(r);
  };
  // After a request's step: the prefill or decode it ran moves it on.
  auto advance = [&](Req& r) {
    if (r.stage == 1)
      r.stage = 2;
    else if (r.emitted > r.decode)
      r.stage = 3;
  };
  const char* const kPurpose[] = {"", "prefill", "decode"};
  auto rows = [&](const Req& r) { return r.stage == 1 ? o.prompt : uint64_t{1}; };
  // --mix lifecycle.
  uint64_t draws = 0;
  auto draw = [&] { return race::SplitMix64(o.seed * 0x9e3779b97f4a7c15ull + draws++); };
  // The allocator and residency planes' view of `r` after the engine event `cause` (0 rows
  // after its release).
  auto observe = [&](const Req& r, const std::string& cause, uint64_t committed) {
    const uint64_t blocks = (committed + kSlotsPerBlock - 1) / kSlotsPerBlock;
    w.Event(r.id, "allocator_observation", "", "null", "null",
            "{\"caused_by_event_id\":\"" + cause + "\",\"blocks\":" + N(blocks) + ",\"slots\":" +
                N(blocks * kSlotsPerBlock) + ",\"used_slots\":" + N(committed) + "}",
            "", kAllocator);
    w.Event(r.id, "residency_observation", "", "null", "null",
            "{\"caused_by_event_id\":\"" + cause +
                "\",\"tier\":\"hbm\",\"resident_payload_bytes\":" +
                N(committed * BytesPerToken(o)) + "}",
            "", kResidency);
  };
  // Releases `r` after its finish or cancel_request (observed as freed) and starts a fresh
  // request in its place.
  auto release_and_replace = [&](Req& r) {
    const std::string rel = w.NextEngineId();
    w.Event(r.id, "release", "", N(r.version).c_str(), N(r.version + 1).c_str(),
            "{\"committed_length\":0,\"result_handle_generation\":1}");
    observe(r, rel, 0);
    fresh(r);
  };
  // A fork child of `r`'s whole committed prefix (it inherits every output), truncated to half
  // of it, finished and released.
  auto fork_child = [&](Req& r) {
    const std::string child = r.id + ".f" + N(r.forks++);
    const uint64_t kept = r.committed / 2;
    w.Event(r.id, "fork", "", N(r.version).c_str(), "0",
            "{\"prefix_length\":" + N(r.committed) + ",\"children\":[{\"request_id\":\"" + child +
                "\",\"handle_generation\":0}]}");
    w.Event(child, "truncate", "", "0", "1", "{\"new_length\":" + N(kept) + "}");
    w.Event(child, "finish", "", "1", "1", "{\"committed_length\":" + N(kept) + "}");
    w.Event(child, "release", "", "1", "2",
            "{\"committed_length\":0,\"result_handle_generation\":1}");
  };
  // A reader's observation of `r`'s all-layer snapshot.
  auto observe_read = [&](const Req& r) {
    std::string layers;
    for (uint32_t l = 0; l < o.layers; ++l) layers += (l ? "," : "") + N(r.committed);
    w.Event(r.id, "read", "", N(r.version).c_str(), "null",
            "{\"committed_length\":" + N(r.committed) + ",\"layer_lengths\":[" + layers + "]}");
  };
  // A speculative verification (M5.1 0x03) in place of a decode step: the frontier token and
  // kDrafts draft rows are computed, `accepted` drafts are kept, so 1 + accepted rows are
  // committed; the accepted drafts are emitted, then the correction (or bonus) token from the
  // verification's logits.
  auto verify = [&](Req& r, uint64_t accepted) {
    std::vector<uint64_t> drafts(kDrafts);
    std::string list;
    for (uint64_t k = 0; k < kDrafts; ++k) {
      drafts[k] = draw() % 50000;
      list += (k ? "," : "") + N(drafts[k]);
    }
    r.cur_op = r.id + ".t" + N(r.op++);
    const uint64_t s = r.committed;
    r.cur_end = s + 1 + accepted;
    r.cur_iv = "[" + N(s) + "," + N(r.cur_end) + "]";
    w.Event(r.id, "append_start", r.cur_op, N(r.version).c_str(), "null",
            "{\"interval\":" + r.cur_iv + ",\"cache_position\":" + r.cur_iv +
                ",\"mask_key_length\":" + N(r.cur_end) +
                ",\"position_stage\":\"post_rope\",\"purpose\":\"verify\",\"input_token\":" +
                N(r.last_token) + ",\"draft_tokens\":[" + list +
                "],\"accepted_count\":" + N(accepted) + "}");
    for (uint32_t l = 0; l < o.layers; ++l) stage_layer(r, l);
    publish(r);
    for (uint64_t k = 0; k < accepted; ++k) {
      w.Event(r.id, "output_emit", "", N(r.version).c_str(), "null",
              "{\"output_index\":" + N(r.emitted) + ",\"token\":" + N(drafts[k]) + "}");
      ++r.emitted;
    }
    emit(r);  // the correction, or the bonus token after every draft was accepted
  };
  // A reorder (beam search's step) that swaps `r`'s row with the next allocated, unfinished
  // request's (a DECODE_READY one) in the ring after position `at`, if there is one: each row
  // keeps its request's next position, T.
  auto reorder_with_next = [&](const Req& r, size_t at) {
    const Req* other = nullptr;
    for (size_t k = 0; k + 1 < reqs.size() && !other; ++k) {
      const Req& c = reqs[(at + k) % reqs.size()];
      if (&c != &r && (c.stage == 1 || c.stage == 2)) other = &c;
    }
    if (!other) return;
    auto row = [&](const Req& q) {
      return "{\"request_id\":\"" + q.id + "\",\"token_state\":\"tok-" + N(q.emitted) +
             "\",\"next_position\":" + N(q.committed) + ",\"sampler_state\":\"rng-" + N(q.op) +
             "\"}";
    };
    w.Reorder("{\"rows_before\":[" + row(r) + "," + row(*other) +
              "],\"parent_index\":[1,0],\"rows_after\":[" + row(*other) + "," + row(r) + "]}");
  };
  if (lifecycle) {
    size_t i = 0;
    while (w.seq < o.events) {
      Req& r = reqs[i++ % reqs.size()];
      if (r.stage == 0) {
        allocate(r);
        continue;
      }
      if (r.stage == 3) {
        w.Event(r.id, "finish", "", N(r.version).c_str(), N(r.version).c_str(),
                "{\"committed_length\":" + N(r.committed) + ",\"emitted_outputs\":" + N(r.emitted) +
                    "}");
        release_and_replace(r);
        continue;
      }
      // A decode turn draws x in [0, 64): 0-1 a failed attempt first, 2-3 a cancelled one, 4
      // a replayed publication, 5 a fork child after the output, 6 a cancel_request instead of
      // the step, 7 a read after the output, 8-9 a speculative verification instead of the
      // decode, 10 a reorder of this request's row and another's first; x % 4 == 3 observes the
      // publication (a prefill's always is).
      const uint64_t x = r.stage == 2 ? draw() % 64 : 3;
      if (x == 6) {
        w.Event(r.id, "cancel_request", "", N(r.version).c_str(), N(r.version).c_str(), "{}");
        release_and_replace(r);
        continue;
      }
      if (x == 8 || x == 9) {
        verify(r, draw() % (kDrafts + 1));
        advance(r);
        continue;
      }
      if (x == 10) reorder_with_next(r, i);
      if (x < 4) {
        start(r, kPurpose[r.stage], rows(r));
        if (x < 2) {
          stage_layer(r, 0);
          w.Event(r.id, "append_failure", r.cur_op, N(r.version).c_str(), "null",
                  "{\"reason\":\"worker lost\"}", "failure");
        } else {
          w.Event(r.id, "cancel_txn", r.cur_op, N(r.version).c_str(), "null",
                  "{\"reason\":\"preempted\"}");
        }
      }
      start(r, kPurpose[r.stage], rows(r));
      for (uint32_t l = 0; l < o.layers; ++l) stage_layer(r, l);
      const std::string pub = w.NextEngineId();
      publish(r);
      if (x == 4)
        w.Event(r.id, "append_publish", r.cur_op, N(r.version - 1).c_str(), N(r.version).c_str(),
                "{\"committed_length\":" + N(r.committed) + "}", "replayed");
      if (x % 4 == 3) observe(r, pub, r.committed);
      emit(r);
      if (x == 5) fork_child(r);
      if (x == 7) observe_read(r);
      advance(r);
    }
  } else if (o.order == "request") {
    size_t i = 0;
    while (w.seq < o.events) {
      Req& r = reqs[i++ % reqs.size()];
      if (r.stage == 0) {
        allocate(r);
      } else if (r.stage == 3) {
        retire(r);
      } else {
        start(r, kPurpose[r.stage], rows(r));
        for (uint32_t l = 0; l < o.layers; ++l) stage_layer(r, l);
        publish(r);
        emit(r);
        advance(r);
      }
    }
  } else {
    while (w.seq < o.events) {
      // The iteration's admissions: every running request then prefills or decodes in it.
      for (Req& r : reqs) {
        if (r.stage == 3) retire(r);
        if (r.stage == 0) allocate(r);
      }
      for (Req& r : reqs) start(r, kPurpose[r.stage], rows(r));
      for (uint32_t l = 0; l < o.layers; ++l)
        for (Req& r : reqs) stage_layer(r, l);
      for (Req& r : reqs) publish(r);
      for (Req& r : reqs) {
        emit(r);
        advance(r);
      }
    }
  }
  // The end record counts the lines between the header and itself: every event written.
  if (o.end_record)
    std::fprintf(f, "{\"kind\":\"kvconform.trace_end/1\",\"events\":%llu}\n",
                 static_cast<unsigned long long>(w.seq));
  // A file that could not be written is exit 2, as standard output is (main.cc); until
  // 2026-12-07, `-o /dev/full` reported its events written and exited 0.
  if (f != stdout) {
    const bool failed = std::ferror(f) != 0;
    if (std::fclose(f) != 0 || failed) {
      std::fprintf(stderr, "gen-trace: %s: write failed (the trace is incomplete)\n",
                   Printable(o.out).c_str());
      ExitCode() = kExitUsage;
      return;
    }
  }
  std::fprintf(stderr, "gen-trace: %llu events, %llu requests started\n",
               static_cast<unsigned long long>(w.seq), static_cast<unsigned long long>(next_id));
  ExitCode() = kExitOk;
}

}  // namespace

void AddGenTraceCommand(CLI::App& app) {
  auto opt = std::make_shared<GenOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gen-trace", "Write a large valid kvconform.trace/1 trace (benchmark input for check).");
  cmd->add_option("--events", opt->events, "minimum number of events (default 1000000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--requests", opt->requests, "concurrent requests (default 64)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--layers", opt->layers, "cache-producing layers (default 2)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--prompt", opt->prompt, "prompt rows per request (default 16)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  cmd->add_option("--decode", opt->decode, "decode steps per request (default 32)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 20));
  cmd->add_option("--ids", opt->ids,
                  "id style: short (r0, r1, ...; default) or runtime (request ids like vLLM's "
                  "cmpl-<32 hex>-0, a 64-hex-digit cache ABI id)")
      ->check(CLI::IsMember({"short", "runtime"}));
  cmd->add_option("--order", opt->order,
                  "event order: request (each request's step contiguous; default) or step (one "
                  "engine iteration phase by phase: every append_start, every layer, every "
                  "publish, every emit)")
      ->check(CLI::IsMember({"request", "step"}));
  cmd->add_option("--mix", opt->mix,
                  "event mix: decode (allocate, prefill, decode steps, finish, release; default) "
                  "or lifecycle (adds, drawn per decode turn: failed and cancelled appends "
                  "retried, replayed publications, truncated fork children, cancelled requests, "
                  "reads, speculative verifications, reorders, allocator/residency observations; "
                  "--order request only)")
      ->check(CLI::IsMember({"decode", "lifecycle"}));
  cmd->add_option("--seed", opt->seed, "--mix lifecycle's draws (default 1)");
  cmd->add_option("--arrivals", opt->arrivals,
                  "together (every request decodes --decode steps, so a slot's requests start "
                  "and finish with the others'; default) or staggered (each request's decode "
                  "steps drawn from [0, 2 * --decode], so arrivals and departures spread)")
      ->check(CLI::IsMember({"together", "staggered"}));
  cmd->add_flag("--end-record", opt->end_record,
                "declare end_record: true in the header and end with the end record "
                "{\"kind\":\"kvconform.trace_end/1\",\"events\":N} (docs/trace-format.md)");
  cmd->add_option("-o,--out", opt->out, "output file (default stdout)");
  cmd->callback([opt] {
    if (opt->mix == "lifecycle" && opt->order != "request") {
      std::fprintf(stderr, "gen-trace: --mix lifecycle writes --order request only\n");
      ExitCode() = kExitUsage;
      return;
    }
    Run(*opt);
  });
}

}  // namespace kvc::cli
