// `kvconform pd-run | pd-worker | pd-bench`: a real two-process prefill-to-decode K/V handoff
// over UCX (reference/handoff/transport), compared with a colocated run of the same engine.
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "reference/base/canonical_json.h"
#include "reference/handoff/transport/pd_worker.h"
#include "reference/model/engine.h"
#include "reference/model/llama.h"
#include "reference/model/parity.h"
#include "tools/kvconform/cli.h"

namespace kvc::cli {
namespace {

namespace tp = kvc::handoff::transport;
using std::chrono::milliseconds;

constexpr uint64_t kBlockTokens = 16;  // destination block size (tokens) for the reservation

struct PdOptions {
  // Shared by pd-run, pd-worker and pd-bench.
  std::string model, prompt_ids, mode = "deterministic", transport = "tcp", fault = "none";
  std::string format = "text", checksum = "sha256";
  uint64_t max_new = 4, chunk_tokens = 0, credit_bytes = 4u << 20;
  // Warm destination: D already holds the first warm_prefix prompt tokens' K/V (0 = cold).
  uint64_t warm_prefix = 0;
  uint64_t first_attempt = 1;  // pd-worker (prefill): number of its first attempt
  bool no_reroute = false;     // pd-run: fail instead of rerouting after a lost decode worker
  // Capability key (M5.6 0x0FE): a file, else $KVCONFORM_PD_CAPABILITY_KEY; pd-run makes a
  // random one for its two workers when neither is given. The key is never logged.
  std::string capability_key_file;
  uint64_t peer_timeout_ms = 5000, rto_ms = 300;
  // pd-worker only.
  std::string role, bootstrap = "127.0.0.1:0", port_file, result;
  uint64_t synthetic_bytes = 0, chunk_bytes = 1u << 20;
  bool raw = false;
  // pd-run / pd-bench.
  bool deterministic = false;
  uint64_t bytes = 0;
  bool checksum_only = false;
};

int FailWith(const char* cmd, const Status& s) {
  std::cerr << "kvconform " << cmd << ": " << Printable(s.ToString()) << "\n";
  // Memory exhaustion is no verdict: exit 3, as an allocation failure is (docs/cli.md).
  if (s.code() == StatusCode::kResourceExhausted) return kExitInternal;
  return s.code() == StatusCode::kInternal ? kExitInternal : kExitUsage;
}

StatusOr<model::ComputeMode> ParseMode(const std::string& s) {
  if (s == "deterministic") return model::ComputeMode::kDeterministic;
  if (s == "fast") return model::ComputeMode::kFast;
  return InvalidArgument("--mode: '" + s + "'; expected deterministic or fast");
}

StatusOr<tp::WorkerOptions> ToWorkerOptions(const PdOptions& o) {
  tp::WorkerOptions w;
  KVC_ASSIGN_OR_RETURN(w.transport, tp::ParseUcxTransport(o.transport));
  KVC_ASSIGN_OR_RETURN(w.bootstrap, tp::ParseHostPort(o.bootstrap));
  KVC_ASSIGN_OR_RETURN(w.fault, tp::ParseFault(o.fault));
  if (o.checksum != "sha256" && o.checksum != "none")
    return InvalidArgument("--checksum: '" + o.checksum + "'; expected sha256 or none");
  if (o.credit_bytes == 0) return InvalidArgument("--credit-bytes must be >= 1");
  if (o.peer_timeout_ms == 0 || o.peer_timeout_ms > tp::kMaxWaitMs)
    return InvalidArgument("--peer-timeout-ms: " + std::to_string(o.peer_timeout_ms) +
                           "; expected 1.." + std::to_string(tp::kMaxWaitMs) + " (one hour)");
  if (o.rto_ms == 0 || o.rto_ms > tp::kMaxWaitMs)
    return InvalidArgument("--rto-ms: " + std::to_string(o.rto_ms) + "; expected 1.." +
                           std::to_string(tp::kMaxWaitMs) + " (one hour)");
  w.checksum = o.checksum == "sha256";
  w.credit_bytes = o.credit_bytes;
  w.peer_timeout = milliseconds(o.peer_timeout_ms);
  w.rto = milliseconds(o.rto_ms);
  w.port_file = o.port_file;
  // A message tag holds 24 bits of attempt number (docs/pd-transfer.md), and P makes up to
  // max_attempts attempts from its first (probe 37: 2^24 wrapped to attempt 0).
  const uint64_t max_first = (uint64_t{1} << 24) - w.max_attempts;
  if (o.first_attempt == 0 || o.first_attempt > max_first)
    return InvalidArgument("--first-attempt: " + std::to_string(o.first_attempt) +
                           "; expected 1.." + std::to_string(max_first) +
                           " (a message tag holds 24 bits of attempt number, and the worker "
                           "makes up to " +
                           std::to_string(w.max_attempts) + " attempts)");
  w.first_attempt = o.first_attempt;
  if (!o.capability_key_file.empty()) {
    // A key is a few bytes: more than 1 MiB is not one. A directory or an unreadable file says
    // why (a directory was "is empty" until 2026-12-07).
    auto key = ReadFileToString(o.capability_key_file, size_t{1} << 20);
    if (!key.ok()) return InvalidArgument("--capability-key-file: " + key.status().message());
    w.capability.key = std::move(*key);
    if (w.capability.key.empty())
      return InvalidArgument("--capability-key-file: " + o.capability_key_file + " is empty");
  } else if (const char* k = std::getenv("KVCONFORM_PD_CAPABILITY_KEY"); k && *k) {
    w.capability.key = k;
  }
  return w;
}

// SHA-256 over a storage's rows [0, T): for each layer, every K row, then every V row (fp32).
std::string KvDigest(const model::KvStorage& s, uint64_t t) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  const size_t row = s.shape().row * sizeof(float);
  for (uint64_t l = 0; l < s.shape().layers; ++l) {
    for (uint64_t p = 0; p < t; ++p) EVP_DigestUpdate(ctx, s.KeyRow(l, p), row);
    for (uint64_t p = 0; p < t; ++p) EVP_DigestUpdate(ctx, s.ValueRow(l, p), row);
  }
  unsigned char md[32];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx, md, &n);
  EVP_MD_CTX_free(ctx);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

nlohmann::json FloatBits(const std::vector<float>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (float f : v) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    a.push_back(b);
  }
  return a;
}

StatusOr<std::vector<float>> BitsToFloats(const nlohmann::json& a) {
  std::vector<float> out;
  try {
    for (const auto& x : a) {
      const uint32_t b = x.get<uint32_t>();
      float f;
      std::memcpy(&f, &b, 4);
      out.push_back(f);
    }
  } catch (const std::exception& e) {
    return ParseError(std::string("logit bits: ") + e.what());
  }
  return out;
}

std::string AbiDigest(const model::LlamaConfig& c) { return Sha256Hex(model::EngineCacheAbiId(c)); }

// The lifecycle handle id of D's warm prefix: "prefix-cache/<SHA-256 of canonical_json(the
// prefix's token ids)>", computed by P from its prompt and by D from its own, so the handle
// names the prefix's identity and not only its length. A plan onto a prefix D does not hold
// (another prompt) names a handle D never published: LIFECYCLE_UNKNOWN_HANDLE, nothing is
// published (M5.6 0x06: only destination entries passing the identity fences count as
// reusable; probe 37: "prefix-cache/n5" matched any 5-token prefix, and D decoded a mixed cache
// with exit 0).
std::string WarmPrefixHandle(std::span<const int64_t> ids, uint64_t n) {
  const Json prefix(std::vector<int64_t>(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n)));
  auto canon = CanonicalJson(prefix);
  return "prefix-cache/" + Sha256Hex(canon.ok() ? *canon : prefix.dump());
}

// 0 <= warm_prefix < |prompt| (the transfer set X = U \ V_D is never empty).
Status CheckWarmPrefix(uint64_t warm, size_t prompt) {
  if (warm >= prompt)
    return InvalidArgument("--warm-prefix: " + std::to_string(warm) +
                           " must be below the prompt length " + std::to_string(prompt));
  return Status();
}

// ----- prefill worker (model) ---------------------------------------------------------------

StatusOr<tp::SourceKv> PrefillSource(const model::LlamaModel& m, const std::vector<int64_t>& ids,
                                     const PdOptions& o, model::ComputeMode mode) {
  model::EngineOptions eo;
  eo.mode = mode;
  model::Engine e(m, eo);
  KVC_RETURN_IF_ERROR(e.NewRequest("r"));
  tp::SourceKv src;
  const uint64_t layers = m.config().num_hidden_layers, t = ids.size();
  src.layer_ready_us.assign(layers, 0);
  e.set_layer_observer([&](const std::string&, uint64_t layer, const model::KvStorage&) {
    src.layer_ready_us[layer] = tp::SteadyNowUs();
    return Status::Ok();
  });
  std::vector<float> logits;
  KVC_RETURN_IF_ERROR(e.Prefill("r", ids, 0, &logits));
  const model::KvStorage* s = e.storage("r");
  const uint64_t row = s->shape().row;
  KVC_RETURN_IF_ERROR(CheckWarmPrefix(o.warm_prefix, t));
  // Only the transfer set X = [warm, t) moves; [0, warm) is D's own visible prefix.
  const uint64_t warm = o.warm_prefix;
  const uint64_t chunk = o.chunk_tokens == 0 ? t - warm : o.chunk_tokens;
  src.num_layers = layers;
  src.token_start = warm;
  src.visible_prefix_handle = warm > 0 ? WarmPrefixHandle(ids, warm) : "";
  src.token_count = t - warm;
  src.bytes_per_token_layer = 2 * row * sizeof(float);
  src.reserved_blocks = (t + kBlockTokens - 1) / kBlockTokens;
  src.tensor_abi_sha256 = AbiDigest(m.config());
  for (uint64_t l = 0; l < layers; ++l)
    for (uint64_t at = warm, n = 0; at < t; at += n) {  // (at + chunk may pass 2^64)
      n = std::min(chunk, t - at);
      src.chunks.push_back(
          {"L" + std::to_string(l) + "/t" + std::to_string(at) + "+" + std::to_string(n), l, at, n,
           n * src.bytes_per_token_layer, ""});
    }
  KVC_RETURN_IF_ERROR(tp::LayoutSource(&src));
  // Chunk payload: n K rows, then n V rows ([n, H_kv * d_h] fp32 each).
  const size_t row_bytes = row * sizeof(float);
  for (size_t i = 0; i < src.chunks.size(); ++i) {
    const auto& c = src.chunks[i];
    uint8_t* out = src.bytes.data() + src.offsets[i];
    for (uint64_t k = 0; k < c.token_count; ++k) {
      std::memcpy(out + k * row_bytes, s->KeyRow(c.layer, c.token_start + k), row_bytes);
      std::memcpy(out + (c.token_count + k) * row_bytes, s->ValueRow(c.layer, c.token_start + k),
                  row_bytes);
    }
  }
  KVC_ASSIGN_OR_RETURN(const int64_t first, model::GreedyToken(logits, 0));
  src.payload = {{"prompt_ids", ids},
                 {"first_token", first},
                 {"prefill_logits_bits", FloatBits(logits)},
                 {"max_new_tokens", o.max_new},
                 {"warm_prefix", warm},
                 {"source_kv_sha256", KvDigest(*s, t)}};
  return src;
}

// SyntheticSource's shape for `bytes` in messages of about `chunk_bytes`: tokens per layer and
// tokens per message (whole 4 KiB token-layers, at most one layer's).
struct SyntheticShape {
  uint64_t tokens, chunk_tokens;
  uint64_t message_bytes() const { return chunk_tokens * 4096; }
};
SyntheticShape SyntheticShapeOf(uint64_t bytes, uint64_t chunk_bytes) {
  const uint64_t per_layer = std::max<uint64_t>(bytes / 32, 4096);
  return {per_layer / 4096, std::max<uint64_t>(1, std::min(chunk_bytes, per_layer) / 4096)};
}

tp::SourceKv SyntheticSource(uint64_t bytes, uint64_t chunk_bytes) {
  // K/V-shaped: 32 layers, 4 KiB per token-layer (2 * H_kv=8 * d_h=128 * 2 B, the seed's
  // running configuration), tokens split into chunks of chunk_bytes per layer.
  tp::SourceKv src;
  src.num_layers = 32;
  src.bytes_per_token_layer = 4096;
  const SyntheticShape shape = SyntheticShapeOf(bytes, chunk_bytes);
  src.token_count = shape.tokens;
  const uint64_t chunk_tokens = shape.chunk_tokens;
  src.reserved_blocks = (src.token_count + kBlockTokens - 1) / kBlockTokens;
  src.tensor_abi_sha256 = Sha256Hex("synthetic:L=32;row_bytes=4096");
  src.layer_ready_us.assign(32, 0);
  for (uint64_t l = 0; l < 32; ++l)
    for (uint64_t at = 0; at < src.token_count; at += chunk_tokens) {
      const uint64_t n = std::min(chunk_tokens, src.token_count - at);
      src.chunks.push_back(
          {"L" + std::to_string(l) + "/t" + std::to_string(at), l, at, n, n * 4096, ""});
    }
  (void)tp::LayoutSource(&src);  // sizes bytes: chunks + header slots (cannot overflow here)
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i + 8 <= src.bytes.size(); i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(src.bytes.data() + i, &x, 8);
  }
  return src;
}

Status WriteJsonFile(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) {
    std::cout << DumpReport(j) << "\n";
    return Status();
  }
  std::ofstream f(path + ".tmp", std::ios::trunc);
  f << DumpReport(j) << "\n";
  f.close();
  if (!f || std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
    return IoError(path + ": cannot write the worker result");
  return Status();
}

// ----- decode worker (model) ----------------------------------------------------------------

// Admits decode only from the directory's published handle: the engine recreates that handle
// (model::Engine::AdoptPublished, checked equal to the published snapshot) with the published
// destination bytes as its rows, and every decode step is an ordinary append transaction on it.
// `e` is D's engine; on a warm destination it holds the prefix request `warm_prefix`.
Status DecodeFromPublished(const model::LlamaModel& m, model::Engine& e,
                           const std::string& warm_prefix, const tp::DecodeResult& d,
                           nlohmann::json* rep) {
  const handoff::TransferPlan& plan = *d.plan;
  if (!d.published) return Internal("decode: a published plan without its published handle");
  const uint64_t row = m.kv_shape().row, layers = m.config().num_hidden_layers;
  const uint64_t t = d.published->cache_snapshot.committed_length;
  // (layer, position) -> the chunk's K row; its V row follows the chunk's token_count K rows.
  std::vector<std::vector<std::pair<const float*, const float*>>> at(
      layers, std::vector<std::pair<const float*, const float*>>(t, {nullptr, nullptr}));
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const auto& c = plan.chunks[i];
    const auto* base = reinterpret_cast<const float*>(d.bytes.data() + d.offsets[i]);
    for (uint64_t k = 0; k < c.token_count; ++k) {
      if (c.layer >= layers || c.token_start + k >= t)
        return InvalidArgument("decode: chunk \"" + c.chunk_id +
                               "\" lies outside the published handle");
      at[c.layer][c.token_start + k] = {base + k * row, base + (c.token_count + k) * row};
    }
  }
  const std::string h = d.published->cache_handle_id;
  KVC_RETURN_IF_ERROR(e.AdoptPublished(
      d.published->cache_snapshot,
      [&](uint64_t l, uint64_t pos, const float** k, const float** v) -> Status {
        *k = at[l][pos].first;
        *v = at[l][pos].second;
        return Status::Ok();
      },
      warm_prefix));
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot adopted, e.Read(h));
  (*rep)["published_payload_bytes"] = d.bytes.size();
  (*rep)["published_kv_sha256"] = KvDigest(*e.storage(h), t);
  (*rep)["decode_handle"] = {{"handle", h},
                             {"generation", adopted.generation},
                             {"committed_length", adopted.committed_length}};
  std::vector<int64_t> tokens;
  nlohmann::json steps = nlohmann::json::array();
  int64_t y = 0;
  uint64_t max_new = 0;
  try {
    y = d.payload.at("first_token").get<int64_t>();
    max_new = d.payload.at("max_new_tokens").get<uint64_t>();
    steps.push_back(d.payload.at("prefill_logits_bits"));
  } catch (const std::exception& e) {
    return ParseError(std::string("manifest payload: ") + e.what());
  }
  tokens.push_back(y);
  for (uint64_t g = 1; g < max_new; ++g) {
    std::vector<float> logits;
    KVC_RETURN_IF_ERROR(e.Emit(h, tokens.back()));
    KVC_RETURN_IF_ERROR(e.Decode(h, tokens.back(), &logits));
    KVC_ASSIGN_OR_RETURN(const int64_t next, model::GreedyToken(logits, g));
    tokens.push_back(next);
    steps.push_back(FloatBits(logits));
  }
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot last, e.Read(h));
  (*rep)["decode_appends"] = last.generation - adopted.generation;
  (*rep)["tokens"] = tokens;
  (*rep)["step_logits_bits"] = steps;
  return Status();
}

void RunWorker(const PdOptions& o) {
  auto fail = [&](const Status& s) { ExitCode() = FailWith("pd-worker", s); };
  auto w = ToWorkerOptions(o);
  if (!w.ok()) return fail(w.status());
  auto mode = ParseMode(o.mode);
  if (!mode.ok()) return fail(mode.status());
  nlohmann::json rep;
  Status st;
  if (o.role == "prefill") {
    tp::SourceKv src;
    if (o.synthetic_bytes > 0) {
      src = SyntheticSource(o.synthetic_bytes, o.chunk_bytes);
    } else {
      auto ids = ParsePromptIds(o.prompt_ids);
      if (!ids.ok()) return fail(ids.status());
      auto m = model::LlamaModel::Load(o.model);
      if (!m.ok()) return fail(m.status());
      NoteUnusedTensors("pd-worker", m->unused_tensors());
      if (Status s = model::CheckMaxNewTokens(o.max_new, ids->size(), m->config()); !s.ok())
        return fail(s);
      auto s = PrefillSource(*m, *ids, o, *mode);
      if (!s.ok()) return fail(s.status());
      src = std::move(*s);
    }
    if (Status s = tp::CheckFaultTarget(w->fault, src.chunks.size()); !s.ok()) return fail(s);
    if (o.raw) {
      auto r = tp::RunRawSender(*w, src);
      st = r.status;
      rep = {{"role", "prefill"},
             {"raw", true},
             {"payload_bytes", tp::PayloadBytes(src)},
             {"chunks", src.chunks.size()},
             {"transfer_seconds", r.seconds}};
    } else {
      const std::string source_digest =
          src.payload.is_object() ? src.payload.value("source_kv_sha256", "") : "";
      auto r = tp::RunPrefillWorker(*w, std::move(src));
      st = r.status;
      rep = r.report;
      if (!source_digest.empty()) rep["source_kv_sha256"] = source_digest;
    }
  } else if (o.role == "decode") {
    if (o.raw) {
      auto r = tp::RunRawReceiver(*w);
      st = r.status;
      rep = {{"role", "decode"}, {"raw", true}, {"receive_seconds", r.seconds}};
    } else {
      lifecycle::CacheAbi abi;
      std::optional<model::LlamaModel> m;
      if (o.synthetic_bytes > 0 || o.model.empty()) {
        abi = {Sha256Hex("synthetic:L=32;row_bytes=4096"), 32, "post_rope"};
      } else {
        auto lm = model::LlamaModel::Load(o.model);
        if (!lm.ok()) return fail(lm.status());
        NoteUnusedTensors("pd-worker", lm->unused_tensors());
        m.emplace(std::move(*lm));
        abi = {AbiDigest(m->config()), static_cast<uint32_t>(m->config().num_hidden_layers),
               "post_rope"};
      }
      // D's engine; on a warm destination it first computes V_D = [0, N) itself (a local
      // prefix-cache hit) under the handle the directory publishes as the visible prefix.
      std::optional<model::Engine> engine;
      std::string warm_handle;
      if (m) {
        model::EngineOptions eo;
        eo.mode = *mode;
        engine.emplace(*m, eo);
      }
      if (o.warm_prefix > 0) {
        if (!engine) return fail(InvalidArgument("--warm-prefix needs --model"));
        auto ids = ParsePromptIds(o.prompt_ids);
        if (!ids.ok()) return fail(ids.status());
        if (Status s = CheckWarmPrefix(o.warm_prefix, ids->size()); !s.ok()) return fail(s);
        warm_handle = WarmPrefixHandle(*ids, o.warm_prefix);
        std::vector<float> ignored;
        Status s = engine->NewRequest(warm_handle);
        if (s.ok())
          s = engine->Prefill(warm_handle, std::span(*ids).first(o.warm_prefix), 0, &ignored);
        if (!s.ok()) return fail(s);
        w->warm_prefix_handle = warm_handle;
        w->warm_prefix_tokens = o.warm_prefix;
      }
      auto r = tp::RunDecodeWorker(*w, abi);
      st = r.status;
      rep = r.report;
      if (st.ok() && r.plan) {
        if (m) {
          // A failure here is reported with its registry code below (probe 37: the code was
          // "decode", not a stable one).
          st = DecodeFromPublished(*m, *engine, warm_handle, r, &rep);
          if (!st.ok()) st = Status(st.code(), "decode: " + st.message(), st.error());
        } else {
          rep["published_bytes_sha256"] =
              o.checksum == "sha256"
                  ? Sha256Hex(std::string_view(reinterpret_cast<const char*>(r.bytes.data()),
                                               r.bytes.size()))
                  : "";
        }
      }
    }
  } else {
    return fail(InvalidArgument("--role: '" + o.role + "'; expected prefill or decode"));
  }
  if (!st.ok() && !rep.contains("error"))
    rep["error"] = {
        {"code", st.error() == ErrorCode::kNone ? std::string(StatusCodeName(st.code()))
                                                : std::string(ErrorCodeName(st.error()))},
        {"message", st.message()}};
  if (Status s = WriteJsonFile(o.result, rep); !s.ok()) return fail(s);
  ExitCode() = st.ok() ? kExitOk : kExitViolation;
}

// ----- pd-run / pd-bench: spawn both workers ------------------------------------------------

struct Child {
  pid_t pid = -1;
  int status = 0;
  bool exited = false;
  bool killed_by_run = false;  // Reap killed it (a straggler), it did not die on its own
};

// What a pd-run or pd-bench interrupted by a signal leaves behind is removed by the signal's
// handler (async-signal-safe calls only): the run's directory (its known files, then the
// directory) and the capability key file pd-run made. The workers die with their parent
// (PR_SET_PDEATHSIG in Spawn). (Probe 37: SIGTERM left both workers running under init, the
// key file and the directory.) One run at a time per process.
struct RunFiles {
  char dir[256] = {};
  char key[256] = {};
};
RunFiles g_run_files;

void CopyPath(char (&dst)[256], const std::string& path) {
  const size_t n = std::min(path.size(), sizeof dst - 1);
  std::memcpy(dst, path.data(), n);
  dst[n] = '\0';
}

extern "C" void RemoveRunFilesAndDie(int sig) {
  if (g_run_files.key[0]) unlink(g_run_files.key);
  if (g_run_files.dir[0]) {
    for (const char* name : {"port", "decode.json", "prefill.json", "decode.log", "prefill.log"}) {
      char path[320];
      size_t n = 0;
      for (const char* q = g_run_files.dir; *q && n < 300; ++q) path[n++] = *q;
      path[n++] = '/';
      for (const char* q = name; *q && n < 318; ++q) path[n++] = *q;
      path[n] = '\0';
      unlink(path);
    }
    rmdir(g_run_files.dir);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// The signals CleanUpOnSignals caught (a signal ignored on entry, SIGHUP under nohup, stays
// ignored, here and in the workers; probe 81).
bool g_cleanup_caught[NSIG] = {};

// Installs RemoveRunFilesAndDie for SIGINT, SIGTERM and SIGHUP (once), each unless ignored.
void CleanUpOnSignals() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler == SIG_IGN) continue;
    signal(sig, RemoveRunFilesAndDie);
    g_cleanup_caught[sig] = true;
  }
}

StatusOr<Child> Spawn(const std::vector<std::string>& args, const std::string& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  Child c;
  const pid_t parent = getpid();
  c.pid = fork();
  if (c.pid < 0) return IoError(std::string("fork: ") + std::strerror(errno));
  if (c.pid == 0) {
    // A worker does not outlive the run that started it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
      if (g_cleanup_caught[sig]) signal(sig, SIG_DFL);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  return c;
}

// Waits for every child until the deadline; kills the stragglers (SIGKILL) after it. Once one
// child has exited, the others get at most `grace` more (a hung peer is not waited for).
void Reap(std::vector<Child*> cs, tp::Deadline deadline, milliseconds grace) {
  bool shortened = false;
  while (true) {
    bool all = true;
    for (Child* c : cs) {
      if (c->exited || c->pid < 0) continue;
      pid_t r = waitpid(c->pid, &c->status, WNOHANG);
      if (r == c->pid)
        c->exited = true;
      else
        all = false;
    }
    if (all) return;
    if (!shortened && std::any_of(cs.begin(), cs.end(), [](Child* c) { return c->exited; })) {
      shortened = true;
      deadline = std::min(deadline, tp::Clock::now() + grace);
    }
    if (tp::Clock::now() >= deadline) {
      for (Child* c : cs)
        if (!c->exited && c->pid > 0) {
          kill(c->pid, SIGKILL);
          waitpid(c->pid, &c->status, 0);
          c->exited = true;
          c->killed_by_run = true;
        }
      return;
    }
    std::this_thread::sleep_for(milliseconds(5));
  }
}

std::string ExitText(const Child& c) {
  if (WIFSIGNALED(c.status)) return "killed by signal " + std::to_string(WTERMSIG(c.status));
  if (WIFEXITED(c.status)) return "exit " + std::to_string(WEXITSTATUS(c.status));
  return "unknown";
}

StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream f(path);
  if (!f) return IoError(path + ": no result (the worker died before writing it)");
  try {
    return nlohmann::json::parse(f);
  } catch (const std::exception& e) {
    return ParseError(path + ": " + e.what());
  }
}

std::vector<std::string> CommonArgs(const PdOptions& o) {
  std::vector<std::string> args = {"--transport",
                                   o.transport,
                                   "--fault",
                                   o.fault,
                                   "--credit-bytes",
                                   std::to_string(o.credit_bytes),
                                   "--peer-timeout-ms",
                                   std::to_string(o.peer_timeout_ms),
                                   "--rto-ms",
                                   std::to_string(o.rto_ms),
                                   "--checksum",
                                   o.checksum,
                                   "--mode",
                                   o.mode};
  // (No key file: the workers read $KVCONFORM_PD_CAPABILITY_KEY; an empty option value is bad
  // usage.)
  if (!o.capability_key_file.empty()) {
    args.push_back("--capability-key-file");
    args.push_back(o.capability_key_file);
  }
  return args;
}

// A fresh random 32-byte capability key in a private (0600) file; the caller removes it.
StatusOr<std::string> MakeCapabilityKeyFile() {
  char tmpl[] = "/tmp/kvconform-pd-key-XXXXXX";
  const int fd = mkstemp(tmpl);  // created 0600
  if (fd < 0) return IoError("mkstemp failed for the capability key");
  std::ifstream r("/dev/urandom", std::ios::binary);
  char key[32];
  r.read(key, sizeof key);
  const bool ok = r && write(fd, key, sizeof key) == static_cast<ssize_t>(sizeof key);
  close(fd);
  if (!ok) {
    unlink(tmpl);
    return IoError("cannot write a random capability key");
  }
  return std::string(tmpl);
}

struct PairRun {
  Child p, d;
  StatusOr<nlohmann::json> prep = IoError("not run"), drep = IoError("not run");
  std::string dir;
};

// Starts D (listening on an ephemeral port it reports through a file), then P; waits for both.
StatusOr<PairRun> RunPair(const PdOptions& o, const std::vector<std::string>& p_extra,
                          const std::vector<std::string>& d_extra) {
  PairRun run;
  char tmpl[] = "/tmp/kvconform-pd-XXXXXX";
  if (!mkdtemp(tmpl)) return IoError("mkdtemp failed");
  run.dir = tmpl;
  CleanUpOnSignals();
  CopyPath(g_run_files.dir, run.dir);
  const std::string port_file = run.dir + "/port";
  std::vector<std::string> d_args = {
      "kvconform",   "pd-worker",   "--role",  "decode",   "--bootstrap",
      "127.0.0.1:0", "--port-file", port_file, "--result", run.dir + "/decode.json"};
  for (auto& a : CommonArgs(o)) d_args.push_back(a);
  for (auto& a : d_extra) d_args.push_back(a);
  KVC_ASSIGN_OR_RETURN(run.d, Spawn(d_args, run.dir + "/decode.log"));
  const tp::Deadline boot = tp::After(milliseconds(o.peer_timeout_ms + 5000));
  std::string port;
  while (port.empty()) {
    std::ifstream f(port_file);
    if (f) std::getline(f, port);
    if (!port.empty()) break;
    if (waitpid(run.d.pid, &run.d.status, WNOHANG) == run.d.pid) {
      run.d.exited = true;
      break;
    }
    if (tp::Clock::now() >= boot) break;
    std::this_thread::sleep_for(milliseconds(5));
  }
  if (port.empty()) {
    Reap({&run.d}, tp::Clock::now(), milliseconds(0));
    std::error_code ec;
    std::filesystem::remove_all(run.dir, ec);
    return Status(StatusCode::kUnavailable, "the decode worker never reported its bootstrap port",
                  ErrorCode::PD_BOOTSTRAP_FAILED);
  }
  std::vector<std::string> p_args = {
      "kvconform",   "pd-worker",         "--role",   "prefill",
      "--bootstrap", "127.0.0.1:" + port, "--result", run.dir + "/prefill.json"};
  for (auto& a : CommonArgs(o)) p_args.push_back(a);
  for (auto& a : p_extra) p_args.push_back(a);
  KVC_ASSIGN_OR_RETURN(run.p, Spawn(p_args, run.dir + "/prefill.log"));
  // Each worker bounds its own waits; this outer bound only catches a bug in them.
  Reap({&run.p, &run.d}, tp::After(milliseconds(4 * o.peer_timeout_ms + 60000)),
       milliseconds(o.peer_timeout_ms + 1000));
  run.prep = ReadJson(run.dir + "/prefill.json");
  run.drep = ReadJson(run.dir + "/decode.json");
  return run;
}

std::string LogTail(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

struct Colocated {
  std::vector<int64_t> tokens;
  std::vector<std::vector<float>> logits;
  std::string kv_sha256;
};

// The colocated baseline: one engine, prefill, then greedy decode (parity.cc's RunGreedy
// sequence), with the digest of the K/V rows right after prefill.
StatusOr<Colocated> RunColocated(const model::LlamaModel& m, const std::vector<int64_t>& ids,
                                 uint64_t max_new, model::ComputeMode mode) {
  model::EngineOptions eo;
  eo.mode = mode;
  model::Engine e(m, eo);
  KVC_RETURN_IF_ERROR(e.NewRequest("r"));
  Colocated c;
  std::vector<float> logits;
  KVC_RETURN_IF_ERROR(e.Prefill("r", ids, 0, &logits));
  c.kv_sha256 = KvDigest(*e.storage("r"), ids.size());
  for (uint64_t g = 0;; ++g) {
    KVC_ASSIGN_OR_RETURN(const int64_t y, model::GreedyToken(logits, g));
    c.tokens.push_back(y);
    c.logits.push_back(logits);
    KVC_RETURN_IF_ERROR(e.Emit("r", y));
    if (g + 1 == max_new) break;
    KVC_RETURN_IF_ERROR(e.Decode("r", y, &logits));
  }
  return c;
}

std::string Recovery(const nlohmann::json& p, const nlohmann::json& d) {
  std::vector<std::string> parts;
  const auto attempts = p.value("attempts", nlohmann::json::array());
  for (const auto& a : attempts)
    if (a.value("outcome", "") != "published")
      parts.push_back("attempt " + std::to_string(a.value("attempt", 0)) + " (generation " +
                      std::to_string(a.value("generation", 0)) + ") aborted with " +
                      a.value("error", nlohmann::json::object()).value("code", "?"));
  if (p.value("retransmits", 0) > 0)
    parts.push_back(std::to_string(p.value("retransmits", 0)) +
                    " retransmission(s) under the same transfer_id");
  if (d.value("duplicates_absorbed", 0) > 0)
    parts.push_back(std::to_string(d.value("duplicates_absorbed", 0)) +
                    " duplicate delivery(ies) absorbed idempotently");
  if (d.value("late_completions_rejected", 0) > 0)
    parts.push_back(std::to_string(d.value("late_completions_rejected", 0)) +
                    " late completion(s) of a superseded attempt rejected");
  if (d.contains("peer_lost_after_publication"))
    parts.push_back(
        "prefill worker lost after publication; decode continued from the "
        "published handle");
  std::string s;
  for (const auto& x : parts) s += (s.empty() ? "" : "; ") + x;
  return s.empty() ? "none needed" : s;
}

void RunPdRun(const PdOptions& o0) {
  PdOptions o = o0;
  auto fail = [&](const Status& s) { ExitCode() = FailWith("pd-run", s); };
  // --deterministic is --mode deterministic (the default); with another mode they contradict
  // (probe 48: --mode fast --deterministic ran deterministic, silently).
  if (o.deterministic && o.mode != "deterministic")
    return fail(InvalidArgument("--deterministic and --mode " + o.mode +
                                " contradict (--deterministic is --mode deterministic, the "
                                "default)"));
  auto ids = ParsePromptIds(o.prompt_ids);
  if (!ids.ok()) return fail(ids.status());
  if (o.max_new == 0) return fail(InvalidArgument("--max-new-tokens must be >= 1"));
  auto mode = ParseMode(o.mode);
  if (!mode.ok()) return fail(mode.status());
  if (auto w = ToWorkerOptions(o); !w.ok()) return fail(w.status());
  if (o.format != "text" && o.format != "json")
    return fail(InvalidArgument("--format: '" + o.format + "'; expected text or json"));
  auto m = model::LlamaModel::Load(o.model);
  if (!m.ok()) return fail(m.status());
  NoteUnusedTensors("pd-run", m->unused_tensors());
  if (Status s = model::CheckMaxNewTokens(o.max_new, ids->size(), m->config()); !s.ok())
    return fail(s);
  auto col = RunColocated(*m, *ids, o.max_new, *mode);
  if (!col.ok()) return fail(col.status());
  std::vector<std::string> p_extra = {"--model",          o.model,
                                      "--prompt-ids",     o.prompt_ids,
                                      "--max-new-tokens", std::to_string(o.max_new),
                                      "--chunk-tokens",   std::to_string(o.chunk_tokens),
                                      "--warm-prefix",    std::to_string(o.warm_prefix)};
  std::vector<std::string> d_extra = {"--model", o.model};
  if (Status s = CheckWarmPrefix(o.warm_prefix, ids->size()); !s.ok()) return fail(s);
  {
    // The plan's chunks (PrefillSource): per layer, the transfer set in chunks of chunk_tokens.
    const uint64_t x = ids->size() - o.warm_prefix;
    const uint64_t per = o.chunk_tokens == 0 ? x : o.chunk_tokens;
    const uint64_t chunks = m->config().num_hidden_layers * (x / per + (x % per != 0));
    if (Status s = tp::CheckFaultTarget(*tp::ParseFault(o.fault), chunks); !s.ok()) return fail(s);
  }
  if (o.warm_prefix > 0) {
    d_extra = {"--model",    o.model,         "--prompt-ids",
               o.prompt_ids, "--warm-prefix", std::to_string(o.warm_prefix)};
  }
  // Both workers get the same capability key (a given file, the environment, or a fresh one).
  std::string own_key_file;
  // (An empty $KVCONFORM_PD_CAPABILITY_KEY is no key, as the workers read it; probe 37: it
  // suppressed the fresh key and the capability faults passed.)
  const char* env_key = std::getenv("KVCONFORM_PD_CAPABILITY_KEY");
  if (o.capability_key_file.empty() && (!env_key || !*env_key)) {
    auto k = MakeCapabilityKeyFile();
    if (!k.ok()) return fail(k.status());
    own_key_file = o.capability_key_file = *k;
    CleanUpOnSignals();
    CopyPath(g_run_files.key, own_key_file);
  }
  struct KeyFileRemover {
    std::string path;
    ~KeyFileRemover() {
      if (!path.empty()) unlink(path.c_str());
    }
  } remover{own_key_file};
  auto run = RunPair(o, p_extra, d_extra);
  if (!run.ok()) return fail(run.status());
  // A decode worker lost mid-transfer (its process died, P saw PD_PEER_LOST, nothing was
  // published): reroute once onto a fresh decode worker. P is restarted too (its source copy
  // died with its process after the failed attempt) and re-runs prefill and the transfer under
  // the next attempt number/generation, without the fault. Both first workers' reports stay.
  // On shm P cannot tell a dead decode worker from a silent one (UCX's shared-memory endpoints
  // report no peer failure): it fails with PD_CREDIT_STARVED or PD_PEER_TIMEOUT; the run knows
  // the worker died (probe 37: a killed decode worker on shm was never rerouted).
  auto lost_code = [](const std::string& c) {
    return c == "PD_PEER_LOST" || c == "PD_CREDIT_STARVED" || c == "PD_PEER_TIMEOUT";
  };
  nlohmann::json lost_pair;
  // (A worker the run killed as a straggler hung; it was not lost: no reroute.)
  if (!o.no_reroute && WIFSIGNALED(run->d.status) && !run->d.killed_by_run && !run->drep.ok() &&
      run->prep.ok() && run->prep->value("outcome", "") == "failed" &&
      run->prep->contains("error") && lost_code((*run->prep)["error"].value("code", ""))) {
    uint64_t last = 0;
    for (const auto& a : run->prep->value("attempts", nlohmann::json::array()))
      last = std::max<uint64_t>(last, a.value("attempt", uint64_t{0}));
    lost_pair = {{"workers", {{"prefill", ExitText(run->p)}, {"decode", ExitText(run->d)}}},
                 {"prefill", *run->prep},
                 {"next_attempt", last + 1}};
    std::error_code ec;
    std::filesystem::remove_all(run->dir, ec);
    PdOptions o2 = o;
    o2.fault = "none";
    std::vector<std::string> p2 = p_extra;
    p2.push_back("--first-attempt");
    p2.push_back(std::to_string(last + 1));
    run = RunPair(o2, p2, d_extra);
    if (!run.ok()) return fail(run.status());
  }

  nlohmann::json out = {{"kind", "kvconform.pd_run/1"},
                        {"model", o.model},
                        {"transport", o.transport},
                        {"fault", o.fault},
                        {"mode", o.mode},
                        {"workers", {{"prefill", ExitText(run->p)}, {"decode", ExitText(run->d)}}}};
  nlohmann::json p = run->prep.ok() ? *run->prep : nlohmann::json::object();
  nlohmann::json d = run->drep.ok() ? *run->drep : nlohmann::json::object();
  out["prefill"] = p;
  out["decode"] = d;
  // Bytes moved follow the transfer set: |X| * B_token, B_token = L * 2 * H_kv * d_h * 4 B.
  const uint64_t b_token = m->config().num_hidden_layers * 2 * m->kv_shape().row * sizeof(float);
  const uint64_t x_tokens = ids->size() - o.warm_prefix;
  nlohmann::json transfer = {
      {"prompt_tokens", ids->size()},
      {"warm_prefix_tokens", o.warm_prefix},
      {"transfer_tokens", x_tokens},
      {"bytes_per_token", b_token},
      {"expected_bytes", x_tokens * b_token},
      {"sent_payload_bytes", p.value("payload_bytes", uint64_t{0})},
      {"published_payload_bytes", d.value("published_payload_bytes", uint64_t{0})}};
  // Judge: the decode side's outcome decides; a worker that died is reported with its signal.
  std::string verdict = "identical", code, reason;
  const bool tol0 = *mode == model::ComputeMode::kDeterministic;
  nlohmann::json steps = nlohmann::json::array();
  if (!run->drep.ok() || d.value("outcome", "") != "published" || !d.contains("tokens")) {
    verdict = "failed";
    if (run->drep.ok() && d.contains("error")) {
      code = d["error"].value("code", "");
      reason = "decode: " + d["error"].value("message", "");
    }
    if (run->prep.ok() && p.contains("error") &&
        (code.empty() || code == "PD_PEER_TIMEOUT" || code == "PD_ATTEMPTS_EXHAUSTED")) {
      code = p["error"].value("code", "");
      reason = "prefill: " + p["error"].value("message", "");
    }
    if (!run->drep.ok()) {
      // A decode worker that died (not killed by the run as a straggler) is a lost peer, whatever
      // the prefill worker saw of it: on shm it sees credits starve or a timeout (probe 71: the
      // verdict said PD_CREDIT_STARVED beside "decode worker killed by signal 9").
      if (WIFSIGNALED(run->d.status) && !run->d.killed_by_run && lost_code(code) &&
          code != "PD_PEER_LOST") {
        reason = "the prefill worker saw " + code + " (" + reason + ")";
        code = "PD_PEER_LOST";
      }
      code = code.empty() ? "PD_WORKER_FAILED" : code;
      reason = "decode worker " + ExitText(run->d) + (reason.empty() ? "" : "; " + reason);
    }
  } else {
    const auto tokens = d["tokens"].get<std::vector<int64_t>>();
    bool all_identical = tokens == col->tokens;
    for (size_t g = 0; g < col->tokens.size(); ++g) {
      nlohmann::json st = {{"step", g}, {"colocated_token", col->tokens[g]}};
      std::vector<float> got;
      if (g < tokens.size()) {
        st["pd_token"] = tokens[g];
        auto f = BitsToFloats(d["step_logits_bits"][g]);
        if (f.ok()) got = *f;
      }
      const auto& want = col->logits[g];
      bool bit = got.size() == want.size() &&
                 std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0;
      // Fast mode: model::FastTolerance of the colocated logits' scale, as parity's pairs; a
      // non-finite logit on either side is a mismatch (std::max drops a NaN difference).
      double max_abs = got.size() == want.size() ? 0.0 : INFINITY, scale = 0;
      for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
        max_abs = std::isfinite(diff) ? std::max(max_abs, diff) : INFINITY;
        scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
      }
      st["bit_identical"] = bit;
      st["max_abs_diff"] = std::isfinite(max_abs) ? nlohmann::json(max_abs) : nlohmann::json("inf");
      const bool ok = tol0 ? bit : max_abs <= model::FastTolerance(scale);
      all_identical = all_identical && ok;
      steps.push_back(st);
    }
    const std::string pub = d.value("published_kv_sha256", "");
    const std::string srcd = p.value("source_kv_sha256", "");
    if (!all_identical) {
      verdict = "failed";
      code = "PD_OUTPUT_MISMATCH";
      reason = "disaggregated decode differs from colocated";
    } else if (transfer["published_payload_bytes"] != x_tokens * b_token) {
      verdict = "failed";
      code = "PD_WORKER_FAILED";
      reason = "published " + transfer["published_payload_bytes"].dump() +
               " payload bytes, the transfer set needs |X| * B_token = " +
               std::to_string(x_tokens * b_token);
    } else if (pub != col->kv_sha256 || (!srcd.empty() && srcd != col->kv_sha256)) {
      verdict = "failed";
      code = "PD_KV_DIGEST_MISMATCH";
      reason = "published K/V digest " + pub + " != colocated " + col->kv_sha256;
    }
  }
  // Leak check: every credit back in its window, no unpublished destination block left.
  const bool d_leak_free = !run->drep.ok() || d.value("leak_free", false);
  const bool p_leak_free =
      !run->prep.ok() || !p.contains("credit") || p["credit"].value("in_flight_end", 1) == 0;
  if (!d_leak_free || !p_leak_free) {
    verdict = "failed";
    code = "PD_WORKER_FAILED";
    reason = "credits or blocks leaked (decode leak_free=" +
             std::string(d_leak_free ? "true" : "false") + ", prefill in_flight_end=" +
             (p.contains("credit") ? p["credit"]["in_flight_end"].dump() : "?") + ")";
  }
  out["verdict"] = verdict;
  if (!code.empty()) out["code"] = code;
  if (!reason.empty()) out["reason"] = reason;
  out["recovery"] = Recovery(p, d);
  if (!lost_pair.is_null()) {
    const bool first_p_free = lost_pair["prefill"].contains("credit") &&
                              lost_pair["prefill"]["credit"].value("in_flight_end", 1) == 0;
    lost_pair["prefill_credit_returned"] = first_p_free;
    out["rerouted_from"] = lost_pair;
    if (!first_p_free && verdict == "identical") {
      verdict = "failed";
      code = "PD_WORKER_FAILED";
      reason = "the first prefill worker kept credits after losing its decode worker";
      out["verdict"] = verdict;
      out["code"] = code;
      out["reason"] = reason;
    }
    out["recovery"] =
        "decode worker lost mid-transfer (" + lost_pair["workers"]["decode"].get<std::string>() +
        "); rerouted to a fresh decode worker: prefill re-run, attempt " +
        std::to_string(lost_pair["next_attempt"].get<uint64_t>()) + " (generation " +
        std::to_string(lost_pair["next_attempt"].get<uint64_t>()) + ")" +
        (out["recovery"] == "none needed" ? "" : "; " + out["recovery"].get<std::string>());
  }
  out["flow_control"] = {{"sender_credit_waits", p.value("credit_waits", 0)},
                         {"credit_bytes", o.credit_bytes}};
  out["steps"] = steps;
  out["kv_sha256"] = {{"colocated", col->kv_sha256},
                      {"source", p.value("source_kv_sha256", "")},
                      {"published", d.value("published_kv_sha256", "")}};
  out["leaks"] = {{"decode_leak_free", d_leak_free}, {"prefill_credit_returned", p_leak_free}};
  out["transfer"] = transfer;
  if (verdict != "identical") {
    out["logs"] = {{"prefill", LogTail(run->dir + "/prefill.log")},
                   {"decode", LogTail(run->dir + "/decode.log")}};
  }
  std::error_code ec;
  std::filesystem::remove_all(run->dir, ec);
  if (o.format == "json") {
    std::cout << DumpReport(out) << "\n";
  } else {
    std::cout << "pd-run: " << Printable(o.model) << " transport=" << Printable(o.transport)
              << " fault=" << Printable(o.fault) << " mode=" << Printable(o.mode) << "\n";
    std::cout << "workers: prefill " << ExitText(run->p) << ", decode " << ExitText(run->d) << "\n";
    for (const auto& s : steps)
      std::cout << "  step " << s["step"] << ": colocated " << s["colocated_token"] << " pd "
                << s.value("pd_token", nlohmann::json("-")) << " bit_identical "
                << s["bit_identical"] << " max_abs_diff " << s["max_abs_diff"] << "\n";
    std::cout << "kv sha256: colocated " << col->kv_sha256 << "\n           source    "
              << p.value("source_kv_sha256", "-") << "\n           published "
              << d.value("published_kv_sha256", "-") << "\n";
    if (d.contains("pool"))
      std::cout << "decode pool " << d["pool"].dump() << " credit " << d["credit"].dump() << "\n";
    if (p.contains("credit")) std::cout << "prefill credit " << p["credit"].dump() << "\n";
    std::cout << "transfer: " << x_tokens << " of " << ids->size() << " tokens (warm prefix "
              << o.warm_prefix << "), " << transfer["published_payload_bytes"].dump()
              << " B published, |X| * B_token = " << x_tokens * b_token << " B\n";
    std::cout << "recovery: " << out["recovery"].get<std::string>() << "\n";
    std::cout << "verdict: " << verdict;
    if (!code.empty()) std::cout << " " << code << ": " << reason;
    std::cout << "\n";
    if (verdict != "identical")  // (an empty log says so: probe 71 saw bare headers)
      for (const char* w : {"prefill", "decode"}) {
        const std::string log = out["logs"][w].get<std::string>();
        std::cerr << "--- " << w << " log ---\n" << (log.empty() ? "(empty)\n" : log);
      }
  }
  ExitCode() = verdict == "identical" ? kExitOk : kExitViolation;
}

void RunPdBench(const PdOptions& o) {
  auto fail = [&](const Status& s) { ExitCode() = FailWith("pd-bench", s); };
  // Each worker holds the whole payload in memory (P's source, D's destination).
  constexpr uint64_t kMaxBenchBytes = uint64_t{16} << 30;
  if (o.bytes == 0 || o.bytes > kMaxBenchBytes)
    return fail(InvalidArgument("--bytes: " + std::to_string(o.bytes) + "; expected 1.." +
                                std::to_string(kMaxBenchBytes) +
                                " (16 GiB: each worker holds the whole payload in memory)"));
  // Every option is judged before either baseline runs (until 2026-12-07 --checksum-only read
  // none of the transfer options, so it took any value, and a bad --mode was found only when
  // the decode worker refused it, after the peer timeout: "never reported its bootstrap port").
  if (auto mode = ParseMode(o.mode); !mode.ok()) return fail(mode.status());
  if (auto w = ToWorkerOptions(o); !w.ok()) return fail(w.status());
  if (o.fault != "none")
    return fail(
        InvalidArgument("--fault: pd-bench measures a clean transfer; faults are "
                        "pd-run's (got '" +
                        o.fault + "')"));
  if (o.checksum_only) {
    tp::SourceKv src = SyntheticSource(o.bytes, o.chunk_bytes);
    const auto t0 = tp::Clock::now();
    std::string acc;
    for (size_t i = 0; i < src.chunks.size(); ++i)
      acc += Sha256Hex(std::string_view(
          reinterpret_cast<const char*>(src.bytes.data() + src.offsets[i]), src.chunks[i].bytes));
    const double s = std::chrono::duration<double>(tp::Clock::now() - t0).count();
    const uint64_t n = tp::PayloadBytes(src);
    nlohmann::json j = {{"mode", "sha256-only"},
                        {"bytes", n},
                        {"seconds", s},
                        {"gib_per_s", n / s / (1 << 30)},
                        {"digest_of_digests", Sha256Hex(acc)}};
    std::cout << j.dump() << "\n";
    ExitCode() = kExitOk;
    return;
  }
  {
    // Both modes use the same byte window, which must hold one message (the protocol refuses a
    // smaller one with HANDOFF_CREDIT_WINDOW_TOO_SMALL; probe 37: --raw ran with it).
    const uint64_t message = SyntheticShapeOf(o.bytes, o.chunk_bytes).message_bytes();
    if (o.credit_bytes < message)
      return fail(InvalidArgument("--credit-bytes: " + std::to_string(o.credit_bytes) +
                                  " is smaller than one message of " + std::to_string(message) +
                                  " bytes (--chunk-bytes rounded to whole 4 KiB token-layers); "
                                  "the byte window must hold a message in both modes"));
  }
  std::vector<std::string> extra = {"--synthetic-bytes", std::to_string(o.bytes), "--chunk-bytes",
                                    std::to_string(o.chunk_bytes)};
  if (o.raw) extra.push_back("--raw");
  auto run = RunPair(o, extra, extra);
  if (!run.ok()) return fail(run.status());
  if (!run->prep.ok() || !run->drep.ok() || run->prep->contains("error") ||
      run->drep->contains("error")) {
    std::cerr << "pd-bench: a worker failed\n"
              << (run->prep.ok() ? run->prep->dump() : run->prep.status().ToString()) << "\n"
              << (run->drep.ok() ? run->drep->dump() : run->drep.status().ToString()) << "\n"
              << LogTail(run->dir + "/prefill.log") << LogTail(run->dir + "/decode.log");
    std::error_code ec;
    std::filesystem::remove_all(run->dir, ec);
    ExitCode() = kExitViolation;
    return;
  }
  const auto& p = *run->prep;
  const double secs = p.value("transfer_seconds", 0.0);
  const uint64_t bytes = p.value("payload_bytes", uint64_t{0});
  const uint64_t chunks = p.value("chunks", uint64_t{0});
  // What moved: the synthetic source rounds the request to whole 4 KiB token-layers of 32 layers
  // and the chunk size to whole token-layers (probe 37: --bytes 1 reported 131072 B moved as if
  // asked, and message_bytes echoed the flag).
  nlohmann::json j = {
      {"mode", o.raw ? "raw" : (o.checksum == "sha256" ? "protocol+sha256" : "protocol")},
      {"transport", o.transport},
      {"requested_bytes", o.bytes},
      {"bytes", bytes},
      {"chunks", chunks},
      {"message_bytes", chunks > 0 ? bytes / chunks : 0},
      {"credit_bytes", o.credit_bytes},
      {"seconds", secs},
      {"gib_per_s", secs > 0 ? bytes / secs / (1 << 30) : 0.0}};
  if (!o.raw) j["sender_checksum_seconds"] = p.value("checksum_seconds", 0.0);
  std::error_code ec;
  std::filesystem::remove_all(run->dir, ec);
  std::cout << j.dump() << "\n";
  ExitCode() = kExitOk;
}

// Shared options; a repeated one takes its last value (scripts append overrides).
void AddShared(CLI::App* c, PdOptions* o) {
  c->add_option("--transport", o->transport, "UCX transport: tcp (default) or shm")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--fault", o->fault, "fault to inject (docs/pd-transfer.md)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--credit-bytes", o->credit_bytes, "byte-credit window granted by decode")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--peer-timeout-ms", o->peer_timeout_ms, "bound on every wait for the peer")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--rto-ms", o->rto_ms, "retransmission timeout of an unacknowledged chunk")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--checksum", o->checksum, "per-chunk checksum: sha256 (default) or none")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--mode", o->mode, "deterministic (default) or fast")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  c->add_option("--capability-key-file", o->capability_key_file,
                "capability HMAC key file (else $KVCONFORM_PD_CAPABILITY_KEY; pd-run: random)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

}  // namespace

void AddPdCommands(CLI::App& app) {
  static PdOptions run, worker, bench;
  CLI::App* r = app.add_subcommand(
      "pd-run", "prefill and decode in two processes with a UCX K/V handoff, vs colocated");
  r->add_option("--model", run.model, "model directory")->required();
  r->add_option("--prompt-ids", run.prompt_ids, "comma-separated token ids")->required();
  r->add_option("--max-new-tokens", run.max_new, "tokens to generate (>= 1)");
  r->add_option("--chunk-tokens", run.chunk_tokens, "tokens per chunk (0: one chunk per layer)");
  r->add_flag("--no-reroute", run.no_reroute,
              "fail with PD_PEER_LOST instead of rerouting after a lost decode worker");
  r->add_option("--warm-prefix", run.warm_prefix,
                "decode already holds the first N prompt tokens' K/V; only the rest moves");
  r->add_flag("--deterministic", run.deterministic, "deterministic kernels (bit-identity)");
  r->add_option("--format", run.format, "text (default) or json");
  AddShared(r, &run);
  r->callback([] { RunPdRun(run); });

  CLI::App* w = app.add_subcommand("pd-worker", "one prefill or decode worker (pd-run starts two)");
  w->add_option("--role", worker.role, "prefill or decode")->required();
  // Required (probe 48: without it a worker timed out on a hidden 127.0.0.1:0, exit 1).
  w->add_option("--bootstrap", worker.bootstrap,
                "HOST:PORT: decode listens there (port 0: any), prefill connects")
      ->required();
  w->add_option("--port-file", worker.port_file, "decode: write the bound port here");
  w->add_option("--result", worker.result, "write the worker's JSON report here (else stdout)");
  w->add_option("--model", worker.model, "model directory");
  w->add_option("--prompt-ids", worker.prompt_ids, "prefill: comma-separated token ids");
  w->add_option("--max-new-tokens", worker.max_new, "prefill: tokens the request generates");
  w->add_option("--chunk-tokens", worker.chunk_tokens, "prefill: tokens per chunk");
  w->add_option("--first-attempt", worker.first_attempt,
                "prefill: number (= generation) of the first attempt (default 1)");
  w->add_option("--warm-prefix", worker.warm_prefix,
                "both: D holds the first N prompt tokens (D needs --prompt-ids)");
  w->add_option("--synthetic-bytes", worker.synthetic_bytes, "benchmark: K/V-shaped bytes");
  w->add_option("--chunk-bytes", worker.chunk_bytes, "benchmark: message size");
  w->add_flag("--raw", worker.raw, "benchmark: raw UCX, no protocol");
  AddShared(w, &worker);
  w->callback([] { RunWorker(worker); });

  CLI::App* b = app.add_subcommand("pd-bench",
                                   "one transfer of synthetic K/V bytes (see "
                                   "tools/bench_pd_transfer.sh)");
  b->add_option("--bytes", bench.bytes, "payload bytes")->required();
  b->add_option("--chunk-bytes", bench.chunk_bytes, "message size (default 1 MiB)");
  // One of the two baselines, not both (until 2026-12-07 --raw was ignored beside
  // --checksum-only).
  CLI::Option* raw = b->add_flag("--raw", bench.raw, "raw UCX with the same messages and window");
  b->add_flag("--checksum-only", bench.checksum_only, "time SHA-256 over the bytes, no transfer")
      ->excludes(raw);
  AddShared(b, &bench);
  // Accepted only to be refused with its reason (faults are pd-run's): not in pd-bench's help
  // (probe 48: the help listed it).
  b->get_option("--fault")->group("");
  b->callback([] { RunPdBench(bench); });
}

}  // namespace kvc::cli
