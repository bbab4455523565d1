// Tests of the prefill/decode workers: fault specs, their targets, the source layout, and
// whole transfers between a prefill and a decode worker on two threads of this process.
#include "reference/handoff/transport/pd_worker.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "reference/base/canonical_json.h"
#include "reference/handoff/transport/bootstrap.h"
#include "reference/handoff/transport/ucx_peer.h"

namespace kvc::handoff::transport {
namespace {

// A fault's numbers have at most 18 digits.
TEST(FaultSpecTest, NumbersHaveAtMostEighteenDigits) {
  auto ok = ParseFault("drop:123456789012345678");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->chunk, 123456789012345678u);
  EXPECT_FALSE(ParseFault("drop:1234567890123456789").ok());
}

// A delay may be as long as kMaxWaitMs (one hour), not longer.
TEST(FaultSpecTest, ADelayOfExactlyTheLongestWaitIsAccepted) {
  auto f = ParseFault("delay:0:" + std::to_string(kMaxWaitMs));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->ms, kMaxWaitMs);
  EXPECT_FALSE(ParseFault("delay:0:" + std::to_string(kMaxWaitMs + 1)).ok());
}

// kill-decode:K and hang-decode:K count received chunks: K may be every chunk of the plan.
TEST(FaultSpecTest, TheDecodeWorkerMayStopAfterTheLastChunk) {
  for (const char* name : {"kill-decode", "hang-decode"}) {
    EXPECT_TRUE(CheckFaultTarget(*ParseFault(std::string(name) + ":6"), 6).ok()) << name;
    EXPECT_EQ(CheckFaultTarget(*ParseFault(std::string(name) + ":7"), 6).code(),
              StatusCode::kInvalidArgument)
        << name;
  }
}

SourceKv TwoChunkSource() {
  SourceKv s;
  s.num_layers = 2;
  s.bytes_per_token_layer = 8;
  s.token_count = 4;
  s.chunks = {{"L0/t0", 0, 0, 4, 32, ""}, {"L1/t0", 1, 0, 4, 32, ""}};
  s.layer_ready_us = {0, 0};
  return s;
}

// Offered bytes must cover the chunks and header slots exactly.
TEST(LayoutSourceTest, OfferedBytesOfAnotherSizeAreRefused) {
  SourceKv s = TwoChunkSource();
  s.bytes.assign(2 * kChunkHeaderSlot + 63, 0);
  EXPECT_EQ(LayoutSource(&s).code(), StatusCode::kInvalidArgument);
}

// The producer gate needs one K/V-ready time per layer.
TEST(LayoutSourceTest, OneReadyTimePerLayerIsRequired) {
  SourceKv s = TwoChunkSource();
  s.layer_ready_us = {0};
  EXPECT_EQ(LayoutSource(&s).code(), StatusCode::kInvalidArgument);
}

// ---- Both workers in this process (each on its own thread), over UCX tcp on 127.0.0.1.

// 2 layers x 8 tokens x 64 B per token-layer, 4 tokens per chunk: 4 chunks of 256 B.
SourceKv SmallSource() {
  SourceKv s;
  s.num_layers = 2;
  s.bytes_per_token_layer = 64;
  s.token_count = 8;
  s.reserved_blocks = 1;
  s.tensor_abi_sha256 = std::string(64, 'a');
  s.layer_ready_us = {0, 0};
  for (uint64_t l = 0; l < 2; ++l)
    for (uint64_t t = 0; t < 8; t += 4)
      s.chunks.push_back({"L" + std::to_string(l) + "/t" + std::to_string(t), l, t, 4, 256, ""});
  EXPECT_TRUE(LayoutSource(&s).ok());
  for (size_t i = 0; i < s.bytes.size(); ++i) s.bytes[i] = static_cast<uint8_t>(i * 31 + 7);
  return s;
}

// A worker thread the test runs, joined with a watchdog: every wait of a worker is bounded (its
// peer timeout, its retransmissions), so one still running after `limit` is hung, e.g. a wait
// that lost its deadline (mutation audit: transport mutant 51, the decode worker's idle deadline
// ignored, hung its test until ctest's 300 s timeout). A thread cannot be stopped, so the test
// binary then aborts at once, naming the worker, instead of hanging.
class WorkerThread {
 public:
  template <typename F>
  WorkerThread(const char* name, F f)
      : name_(name), thread_([this, f = std::move(f)]() mutable {
          f();
          done_ = true;
        }) {}
  ~WorkerThread() {
    if (thread_.joinable()) JoinWithin(kLimit);
  }
  // Generous beside the workers' own bounds (peer timeouts of 0.3-3 s, a few retransmissions),
  // for sanitizer builds and loaded hosts.
  static constexpr std::chrono::milliseconds kLimit{60'000};
  void JoinWithin(std::chrono::milliseconds limit = kLimit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!done_) {
      std::fprintf(stderr, "the %s did not end within %lld ms: a wait without its deadline\n",
                   name_, static_cast<long long>(limit.count()));
      std::abort();
    }
    thread_.join();
  }

 private:
  const char* name_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

WorkerOptions SmallOptions() {
  WorkerOptions o;
  o.credit_bytes = 512;
  o.peer_timeout = std::chrono::milliseconds(3000);
  o.rto = std::chrono::milliseconds(100);
  return o;
}

struct PairRun {
  PrefillResult prefill;
  DecodeResult decode;
};

// Runs D (listening on a free port, published through a port file) and P against it.
PairRun RunPair(WorkerOptions p, WorkerOptions d, SourceKv source) {
  PairRun r;
  char dir[] = "/tmp/kvc-pd-worker-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return r;
  }
  d.port_file = std::string(dir) + "/port";
  d.bootstrap = {"127.0.0.1", 0};
  const lifecycle::CacheAbi abi{source.tensor_abi_sha256, static_cast<uint32_t>(source.num_layers),
                                "post_rope"};
  WorkerThread decode("decode worker", [&] { r.decode = RunDecodeWorker(d, abi); });
  uint16_t port = 0;
  for (int i = 0; i < 1000 && port == 0; ++i) {
    std::ifstream f(d.port_file);
    if (!(f >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  p.bootstrap = {"127.0.0.1", port};
  r.prefill = RunPrefillWorker(p, std::move(source));
  decode.JoinWithin();
  std::filesystem::remove_all(dir);
  return r;
}

// A clean transfer publishes the source bytes at the plan's layout, and D's RESULT tells P
// that the source was released (source_release), after admission.
TEST(PdWorkerPairTest, ACleanTransferIsPublishedWithTheSourceBytes) {
  const SourceKv src = SmallSource();
  PairRun r = RunPair(SmallOptions(), SmallOptions(), src);
  ASSERT_TRUE(r.prefill.status.ok()) << r.prefill.status.ToString() << r.prefill.report.dump();
  ASSERT_TRUE(r.decode.status.ok()) << r.decode.status.ToString() << r.decode.report.dump();
  ASSERT_TRUE(r.decode.plan.has_value());
  ASSERT_EQ(r.decode.offsets.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(0, std::memcmp(r.decode.bytes.data() + r.decode.offsets[i],
                             src.bytes.data() + src.offsets[i], 256))
        << "chunk " << i;
  EXPECT_EQ(r.prefill.report["published_generation"], 1);
  EXPECT_TRUE(r.prefill.report["source_released"].get<bool>());
}

// An attempt number (= generation) uses all 24 bits of the tag's attempt field: a reroute may
// continue a request's numbering far past 2^16.
TEST(PdWorkerPairTest, AFirstAttemptPastSixteenBitsIsPublishedUnderItsGeneration) {
  WorkerOptions p = SmallOptions();
  p.first_attempt = 70000;
  PairRun r = RunPair(p, SmallOptions(), SmallSource());
  ASSERT_TRUE(r.prefill.status.ok()) << r.prefill.status.ToString();
  ASSERT_TRUE(r.decode.status.ok()) << r.decode.status.ToString();
  EXPECT_EQ(r.prefill.report["published_generation"], 70000);
  EXPECT_EQ(r.decode.report["published_attempt"], 70000);
  ASSERT_TRUE(r.decode.published.has_value());
  EXPECT_EQ(r.decode.published->generation, 70000u);
}

// When every attempt aborted for a retryable reason the request fails PD_ATTEMPTS_EXHAUSTED.
TEST(PdWorkerPairTest, RetryableAbortsOfEveryAttemptExhaustTheAttempts) {
  WorkerOptions p = SmallOptions();
  p.max_attempts = 1;
  p.fault = *ParseFault("corrupt:0");
  PairRun r = RunPair(p, SmallOptions(), SmallSource());
  EXPECT_EQ(r.prefill.status.error(), ErrorCode::PD_ATTEMPTS_EXHAUSTED)
      << r.prefill.status.ToString();
  EXPECT_FALSE(r.decode.plan.has_value());
}

// A chunk is sent at most 1 + max_retransmits times before P gives up with PD_CREDIT_STARVED.
TEST(PdWorkerPairTest, AChunkIsRetransmittedMaxRetransmitsTimesBeforeStarving) {
  WorkerOptions p = SmallOptions();
  p.max_retransmits = 1;
  p.rto = std::chrono::milliseconds(50);
  WorkerOptions d = SmallOptions();
  d.fault = *ParseFault("credit-starve");
  PairRun r = RunPair(p, d, SmallSource());
  ASSERT_EQ(r.prefill.status.error(), ErrorCode::PD_CREDIT_STARVED) << r.prefill.status.ToString();
  EXPECT_NE(r.prefill.status.message().find("after 2 transmissions"), std::string::npos)
      << r.prefill.status.message();
}

// P that gives up on an attempt tells D (ABORT with its reason) before it finishes.
TEST(PdWorkerPairTest, APrefillFailureIsSentToDecodeAsAnAbort) {
  WorkerOptions p = SmallOptions();
  p.max_retransmits = 1;
  p.rto = std::chrono::milliseconds(50);
  WorkerOptions d = SmallOptions();
  d.fault = *ParseFault("credit-starve");
  PairRun r = RunPair(p, d, SmallSource());
  ASSERT_EQ(r.prefill.status.error(), ErrorCode::PD_CREDIT_STARVED) << r.prefill.status.ToString();
  bool aborted = false;
  for (const auto& ev : r.decode.report["events"])
    if (ev.contains("abort_from_prefill"))
      aborted = ev["abort_from_prefill"].value("code", "") == "PD_CREDIT_STARVED";
  EXPECT_TRUE(aborted) << r.decode.report["events"].dump();
  EXPECT_EQ(r.decode.status.error(), ErrorCode::PD_CREDIT_STARVED) << r.decode.status.ToString();
}

// RESULT published names the generation that was published (docs/pd-transfer.md "Messages").
TEST(PdWorkerPairTest, ThePublishedResultNamesThePublishedGeneration) {
  PairRun r = RunPair(SmallOptions(), SmallOptions(), SmallSource());
  ASSERT_TRUE(r.decode.status.ok()) << r.decode.status.ToString();
  ASSERT_TRUE(r.decode.published.has_value());
  nlohmann::json result;
  for (const auto& ev : r.decode.report["events"])
    if (ev.contains("result")) result = ev["result"];
  EXPECT_EQ(result.value("outcome", ""), "published") << result.dump();
  EXPECT_EQ(result.value("generation", uint64_t{0}), r.decode.published->generation);
  EXPECT_EQ(result.value("transfer_id", ""), r.decode.published->transfer_id);
}

// D authorizes a capability for itself: one naming another destination (epoch) is refused
// before anything is reserved (HANDOFF_CAPABILITY_IDENTITY_MISMATCH).
TEST(PdWorkerPairTest, ACapabilityForAnotherDestinationIsRefused) {
  WorkerOptions p = SmallOptions(), d = SmallOptions();
  p.capability.key = d.capability.key = "pd-worker-test-key";
  p.destination_epoch = 2;  // P plans for decode@epoch2; this decode worker is decode@epoch1
  PairRun r = RunPair(p, d, SmallSource());
  EXPECT_EQ(r.prefill.status.error(), ErrorCode::HANDOFF_CAPABILITY_IDENTITY_MISMATCH)
      << r.prefill.status.ToString();
  EXPECT_EQ(r.decode.report["capability"]["denied"], 1) << r.decode.report["capability"].dump();
  EXPECT_FALSE(r.decode.plan.has_value());
}

// ---- A scripted prefill side against a real decode worker: D's own checks of what it gets.

constexpr uint64_t kManifestMsg = 1, kReplyMsg = 2, kAckMsg = 4, kResultMsg = 5, kAbortMsg = 6,
                   kFinMsg = 7, kChunkMsg = 0x83;
uint64_t WireTag(uint64_t type, uint64_t attempt, uint64_t index) {
  return type << 56 | attempt << 32 | index;
}

// The MANIFEST P would send for attempt `n` of `s` (docs/pd-transfer.md "Messages").
nlohmann::json ManifestOf(const SourceKv& s, uint64_t n) {
  nlohmann::json chunks = nlohmann::json::array();
  for (size_t i = 0; i < s.chunks.size(); ++i) {
    const ChunkSpec& c = s.chunks[i];
    chunks.push_back({{"chunk_id", c.chunk_id},
                      {"layer", c.layer},
                      {"token_start", c.token_start},
                      {"token_count", c.token_count},
                      {"bytes", c.bytes},
                      {"checksum", Sha256Hex(std::string_view(
                                       reinterpret_cast<const char*>(s.bytes.data() + s.offsets[i]),
                                       c.bytes))}});
  }
  const std::string id = "req-0/g" + std::to_string(n) + "/a" + std::to_string(n);
  nlohmann::json plan = {{"transfer_id", id},
                         {"identity",
                          {{"tenant", "tenant-0"},
                           {"request_id", "req-0"},
                           {"generation", n},
                           {"attempt", n},
                           {"source_worker_epoch", 1},
                           {"destination_worker_epoch", 1},
                           {"reservation_id", "rsv:" + id}}},
                         {"tensor_abi_sha256", s.tensor_abi_sha256},
                         {"num_layers", s.num_layers},
                         {"token_start", 0},
                         {"token_count", s.token_count},
                         {"bytes_per_token_layer", s.bytes_per_token_layer},
                         {"reserved_blocks", s.reserved_blocks},
                         {"visible_prefix_handle", ""},
                         {"chunks", chunks}};
  return {{"kind", "kvconform.pd_manifest/1"},  {"attempt", n},         {"plan", plan},
          {"layer_ready_us", s.layer_ready_us}, {"checksum", "sha256"}, {"payload", {}}};
}

// The prefill side's endpoint, driven by hand.
struct ScriptedPrefill {
  std::unique_ptr<UcxPeer> peer;

  Status SendJson(uint64_t tag, const nlohmann::json& j) {
    const std::string b = j.dump();
    return peer->Send(tag, {{b.data(), b.size()}}, After(std::chrono::milliseconds(2000)), "send");
  }
  // A CHUNK message: the 48-byte header (magic, version, attempt, index, payload bytes, send
  // and ready times), then `payload`.
  Status SendChunk(uint64_t tag_attempt, uint64_t index, uint64_t header_attempt,
                   const uint8_t* payload, uint64_t n) {
    struct {
      uint32_t magic = 0x4843564b, version = 1;
      uint64_t attempt, index, payload_bytes, send_us, ready_us = 0;
    } h;
    static_assert(sizeof(h) == 48);
    h.attempt = header_attempt;
    h.index = index;
    h.payload_bytes = n;
    h.send_us = SteadyNowUs();
    return peer->Send(WireTag(kChunkMsg, tag_attempt, index), {{&h, sizeof h}, {payload, n}},
                      After(std::chrono::milliseconds(2000)), "send chunk");
  }
  // The next control message of `type` (any attempt and index), within 2 s.
  StatusOr<nlohmann::json> Next(uint64_t type) {
    KVC_ASSIGN_OR_RETURN(Message m, peer->Recv(type << 56, uint64_t{0xff} << 56, 1 << 20,
                                               After(std::chrono::milliseconds(2000)), "reply"));
    return nlohmann::json::parse(m.bytes.begin(), m.bytes.end());
  }
  // Sends `j` under `tag` and returns D's REPLY.
  StatusOr<nlohmann::json> Ask(uint64_t tag, const nlohmann::json& j) {
    KVC_RETURN_IF_ERROR(SendJson(tag, j));
    return Next(kReplyMsg);
  }
  // Opens attempt `n` of `s` with its MANIFEST; success when D's REPLY accepts it.
  ::testing::AssertionResult Open(const SourceKv& s, uint64_t n) {
    auto r = Ask(WireTag(kManifestMsg, n, 0), ManifestOf(s, n));
    if (!r.ok()) return ::testing::AssertionFailure() << r.status().ToString();
    if ((*r)["ok"] != true) return ::testing::AssertionFailure() << r->dump();
    return ::testing::AssertionSuccess();
  }
  // FIN: D ends once it reads it.
  void Fin() { (void)SendJson(WireTag(kFinMsg, 0, 0), nlohmann::json::object()); }
};

// D's REPLY refused the message with `code`.
void ExpectRefusedWith(const nlohmann::json& reply, const std::string& code) {
  EXPECT_EQ(reply.value("ok", true), false) << reply.dump();
  EXPECT_EQ(reply.value("code", ""), code) << reply.dump();
}

// Brings up the scripted side's endpoint over the bootstrap connection `conn` (its blob
// exchange as the workers do it) and runs `script(side)`; a failure is a test failure naming the
// worker on the other side.
template <typename Side, typename Script>
void ConnectAndRun(StatusOr<BootstrapSocket> conn, Deadline deadline, Side& side, Script& script,
                   const char* worker) {
  auto peer = UcxPeer::Create(UcxTransport::kTcp);
  if (!conn.ok() || !peer.ok()) {
    ADD_FAILURE() << "no connection with the " << worker;
    return;
  }
  side.peer = std::move(*peer);
  auto mine = side.peer->LocalAddress();
  auto theirs = mine.ok() ? ExchangeBlobs(*conn, *mine, deadline) : mine;
  if (theirs.ok() && side.peer->Connect(*theirs).ok())
    script(side);
  else
    ADD_FAILURE() << "bootstrap with the " << worker << " failed";
}

// Runs D, bootstraps a ScriptedPrefill to it as P would, runs `script`, and returns D's
// result once D ends (the script sends FIN, or D stops on its own).
template <typename Script>
DecodeResult RunScripted(WorkerOptions d, const SourceKv& src, Script script) {
  DecodeResult res;
  char dir[] = "/tmp/kvc-pd-worker-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    ADD_FAILURE() << "mkdtemp failed";
    return res;
  }
  d.port_file = std::string(dir) + "/port";
  d.bootstrap = {"127.0.0.1", 0};
  const lifecycle::CacheAbi abi{src.tensor_abi_sha256, static_cast<uint32_t>(src.num_layers),
                                "post_rope"};
  WorkerThread decode("decode worker", [&] { res = RunDecodeWorker(d, abi); });
  uint16_t port = 0;
  for (int i = 0; i < 1000 && port == 0; ++i) {
    std::ifstream f(d.port_file);
    if (!(f >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ScriptedPrefill p;
  const Deadline deadline = After(std::chrono::milliseconds(3000));
  ConnectAndRun(BootstrapSocket::Connect({"127.0.0.1", port}, deadline), deadline, p, script,
                "decode worker");
  decode.JoinWithin();
  std::filesystem::remove_all(dir);
  return res;
}

// D numbers its attempts once: a second MANIFEST for an attempt it has seen is refused.
TEST(PdWorkerDecodeTest, AManifestForAReusedAttemptIsRefused) {
  const SourceKv src = SmallSource();
  nlohmann::json second;
  RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    auto again = p.Ask(WireTag(kManifestMsg, 1, 0), ManifestOf(src, 1));
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    second = *again;
    p.Fin();
  });
  ExpectRefusedWith(second, "PD_MESSAGE_MALFORMED");
}

// A manifest names one K/V-ready time per layer; fewer is a malformed manifest.
TEST(PdWorkerDecodeTest, AManifestWithoutAReadyTimePerLayerIsRefused) {
  const SourceKv src = SmallSource();
  nlohmann::json reply;
  RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    nlohmann::json m = ManifestOf(src, 1);
    m["layer_ready_us"] = {0};
    auto r = p.Ask(WireTag(kManifestMsg, 1, 0), m);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reply = *r;
    p.Fin();
  });
  ExpectRefusedWith(reply, "PD_MESSAGE_MALFORMED");
}

// The staging slots are sized for the first attempt's largest chunk: a later manifest with a
// larger chunk is refused, not truncated into them.
TEST(PdWorkerDecodeTest, ALaterAttemptWithALargerChunkIsRefused) {
  const SourceKv src = SmallSource();
  SourceKv big = SmallSource();
  big.bytes_per_token_layer = 128;
  for (ChunkSpec& c : big.chunks) c.bytes = 512;
  big.bytes.clear();
  ASSERT_TRUE(LayoutSource(&big).ok());
  WorkerOptions d = SmallOptions();
  d.credit_bytes = 4096;  // the window would hold the larger chunk
  nlohmann::json reply;
  RunScripted(d, src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    auto r = p.Ask(WireTag(kManifestMsg, 2, 0), ManifestOf(big, 2));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    reply = *r;
    p.Fin();
  });
  ExpectRefusedWith(reply, "PD_MESSAGE_MALFORMED");
}

// A chunk header must name the attempt of its tag: otherwise the message is malformed and D
// stops with PD_MESSAGE_MALFORMED.
TEST(PdWorkerDecodeTest, AChunkHeaderNamingAnotherAttemptIsMalformed) {
  const SourceKv src = SmallSource();
  DecodeResult d = RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    ASSERT_TRUE(
        p.SendChunk(1, 0, /*header_attempt=*/2, src.bytes.data() + src.offsets[0], 256).ok());
  });
  EXPECT_EQ(d.status.error(), ErrorCode::PD_MESSAGE_MALFORMED) << d.status.ToString();
  EXPECT_FALSE(d.plan.has_value());
}

// A chunk whose payload is not the manifest's byte count is never copied: the attempt is
// aborted with HANDOFF_CHUNK_BYTES_MISMATCH.
TEST(PdWorkerDecodeTest, AChunkOfAnotherSizeThanItsManifestAbortsTheAttempt) {
  const SourceKv src = SmallSource();
  nlohmann::json result;
  RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    ASSERT_TRUE(p.SendChunk(1, 0, 1, src.bytes.data() + src.offsets[0], 128).ok());
    auto r = p.Next(kResultMsg);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    result = *r;
    p.Fin();
  });
  EXPECT_EQ(result.value("outcome", ""), "aborted") << result.dump();
  EXPECT_EQ(result["error"].value("code", ""), "HANDOFF_CHUNK_BYTES_MISMATCH") << result.dump();
}

// A repeat of a DEVICE_VISIBLE chunk is an idempotent retry: D acknowledges it again (its
// first ACK may have been lost).
TEST(PdWorkerDecodeTest, ARepeatOfAVisibleChunkIsAcknowledgedAgain) {
  const SourceKv src = SmallSource();
  int acks = 0;
  RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(p.SendChunk(1, 0, 1, src.bytes.data() + src.offsets[0], 256).ok());
      auto ack = p.peer->Recv(WireTag(kAckMsg, 1, 0), ~uint64_t{0}, 64,
                              After(std::chrono::milliseconds(2000)), "ACK");
      if (ack.ok()) ++acks;
    }
    p.Fin();
  });
  EXPECT_EQ(acks, 2);
}

// A chunk that arrives after its attempt was aborted is fenced: counted as a late completion,
// never acknowledged or copied.
TEST(PdWorkerDecodeTest, AChunkAfterItsAttemptAbortedIsCountedAsLate) {
  const SourceKv src = SmallSource();
  DecodeResult d = RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    ASSERT_TRUE(p.SendJson(WireTag(kAbortMsg, 1, 0),
                           {{"code", "PD_PEER_TIMEOUT"}, {"message", "test: gave up"}})
                    .ok());
    auto aborted = p.Next(kResultMsg);
    ASSERT_TRUE(aborted.ok() && (*aborted)["outcome"] == "aborted")
        << (aborted.ok() ? aborted->dump() : aborted.status().ToString());
    ASSERT_TRUE(p.SendChunk(1, 0, 1, src.bytes.data() + src.offsets[0], 256).ok());
    // A later MANIFEST, answered after the chunk before it was handled (one endpoint, in order).
    ASSERT_TRUE(p.Ask(WireTag(kManifestMsg, 2, 0), ManifestOf(src, 2)).ok());
    p.Fin();
  });
  EXPECT_EQ(d.report["late_completions_rejected"], 1) << d.report.dump();
  EXPECT_EQ(d.report["chunks_received"], 1);
}

// An attempt gets one RESULT: a second ABORT of an attempt D already ended sends nothing more.
TEST(PdWorkerDecodeTest, AnAttemptGetsOneResult) {
  const SourceKv src = SmallSource();
  DecodeResult d = RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    ASSERT_TRUE(p.Open(src, 1));
    for (int i = 0; i < 2; ++i)
      ASSERT_TRUE(p.SendJson(WireTag(kAbortMsg, 1, 0),
                             {{"code", "PD_PEER_TIMEOUT"}, {"message", "test: gave up"}})
                      .ok());
    ASSERT_TRUE(p.Next(kResultMsg).ok());
    // A later MANIFEST is answered after both ABORTs were handled (one endpoint, in order).
    ASSERT_TRUE(p.Ask(WireTag(kManifestMsg, 2, 0), ManifestOf(src, 2)).ok());
    p.Fin();
  });
  int results = 0;
  for (const auto& ev : d.report["events"])
    if (ev.contains("result") && ev["attempt"] == 1) ++results;
  EXPECT_EQ(results, 1) << d.report["events"].dump();
}

// A MANIFEST of another shape (not an object, its plan missing or not an object, a mistyped
// nonce) is refused in D's REPLY as PD_MESSAGE_MALFORMED naming the member, and D goes on: the
// next attempt's MANIFEST is granted. Regression: D read the plan and the nonce with nlohmann's
// value(), which throws on a mistyped member, and a throw ended the decode worker's process.
TEST(PdWorkerDecodeTest, RegressionAMistypedManifestIsRefusedNotACrash) {
  const SourceKv src = SmallSource();
  nlohmann::json with_nonce = ManifestOf(src, 4);
  with_nonce["nonce"] = 5;
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {nlohmann::json::array({1, 2}), "manifest: expected a JSON object, got [1,2]"},
      {{{"plan", 5}}, "manifest: member \"plan\" must be an object, got 5"},
      {{{"attempt", 3}}, "manifest: member \"plan\" is missing"},
      {with_nonce, "manifest: member \"nonce\" must be a string, got 5"}};
  std::vector<nlohmann::json> replies;
  RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    for (size_t i = 0; i < cases.size(); ++i) {
      auto r = p.Ask(WireTag(kManifestMsg, i + 1, 0), cases[i].first);
      ASSERT_TRUE(r.ok()) << "case " << i << ": " << r.status().ToString();
      replies.push_back(*r);
    }
    EXPECT_TRUE(p.Open(src, cases.size() + 1));
    p.Fin();
  });
  ASSERT_EQ(replies.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    ExpectRefusedWith(replies[i], "PD_MESSAGE_MALFORMED");
    EXPECT_EQ(replies[i].value("message", ""), cases[i].second) << i;
  }
}

// An ABORT of another shape still aborts its attempt (the prefill worker gave up on it); its
// reason is PD_MESSAGE_MALFORMED, in D's RESULT. Regression: D read the ABORT's code with
// value(), and a number there ended the decode worker's process.
TEST(PdWorkerDecodeTest, RegressionAMistypedAbortAbortsWithMessageMalformed) {
  const SourceKv src = SmallSource();
  std::vector<nlohmann::json> results;
  DecodeResult d = RunScripted(SmallOptions(), src, [&](ScriptedPrefill& p) {
    const std::vector<nlohmann::json> aborts = {{{"code", 5}}, nlohmann::json::array()};
    for (size_t i = 0; i < aborts.size(); ++i) {
      ASSERT_TRUE(p.Open(src, i + 1));
      ASSERT_TRUE(p.SendJson(WireTag(kAbortMsg, i + 1, 0), aborts[i]).ok());
      auto r = p.Next(kResultMsg);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      results.push_back(*r);
    }
    p.Fin();
  });
  ASSERT_EQ(results.size(), 2u);
  for (const nlohmann::json& r : results) {
    EXPECT_EQ(r.value("outcome", ""), "aborted") << r.dump();
    EXPECT_EQ(r["error"].value("code", ""), "PD_MESSAGE_MALFORMED") << r.dump();
  }
  EXPECT_EQ(results[0]["error"].value("message", ""),
            "abort: member \"code\" must be a string, got 5");
  // No attempt was published: D ends with its last attempt's reason.
  EXPECT_EQ(d.status.error(), ErrorCode::PD_MESSAGE_MALFORMED) << d.status.ToString();
}

// D's waits are bounded too: a prefill worker that connects and then sends nothing ends D
// with PD_PEER_TIMEOUT after peer_timeout.
TEST(PdWorkerDecodeTest, ASilentPrefillWorkerTimesOut) {
  WorkerOptions d = SmallOptions();
  d.peer_timeout = std::chrono::milliseconds(300);
  DecodeResult r = RunScripted(d, SmallSource(), [](ScriptedPrefill&) {});
  EXPECT_EQ(r.status.error(), ErrorCode::PD_PEER_TIMEOUT) << r.status.ToString();
}

// ---- A scripted decode side against a real prefill worker: P's handling of what D sends.

// The decode side's endpoint, driven by hand: it listens, and P (on its own thread) connects.
struct ScriptedDecode {
  std::unique_ptr<UcxPeer> peer;

  Status SendJson(uint64_t tag, const nlohmann::json& j) {
    const std::string b = j.dump();
    return peer->Send(tag, {{b.data(), b.size()}}, After(std::chrono::milliseconds(2000)), "send");
  }
  // The next message of `type` (any attempt and index) within 2 s, with its tag.
  StatusOr<Message> Next(uint64_t type) {
    return peer->Recv(type << 56, uint64_t{0xff} << 56, 1 << 20,
                      After(std::chrono::milliseconds(2000)), "message");
  }
};

// Runs P against a ScriptedDecode that runs `script`, and returns P's result.
template <typename Script>
PrefillResult RunScriptedDecode(WorkerOptions p, SourceKv src, Script script) {
  PrefillResult res;
  auto l = BootstrapSocket::Listen({"127.0.0.1", 0});
  if (!l.ok()) {
    ADD_FAILURE() << l.status().ToString();
    return res;
  }
  p.bootstrap = {"127.0.0.1", l->port()};
  WorkerThread prefill("prefill worker", [&] { res = RunPrefillWorker(p, std::move(src)); });
  ScriptedDecode d;
  const Deadline deadline = After(std::chrono::milliseconds(3000));
  ConnectAndRun(l->Accept(deadline), deadline, d, script, "prefill worker");
  prefill.JoinWithin();
  return res;
}

uint64_t AttemptOfTag(uint64_t tag) { return (tag >> 32) & 0xffffff; }

// HANDOFF_DUPLICATE_CORRUPTION is retryable: P starts the next attempt (generation 2).
TEST(PdWorkerPrefillTest, ADuplicateCorruptionAbortIsRetriedUnderTheNextGeneration) {
  nlohmann::json second;
  RunScriptedDecode(SmallOptions(), SmallSource(), [&](ScriptedDecode& d) {
    auto m1 = d.Next(kManifestMsg);
    ASSERT_TRUE(m1.ok()) << m1.status().ToString();
    const uint64_t a1 = AttemptOfTag(m1->tag);
    ASSERT_TRUE(d.SendJson(WireTag(kReplyMsg, a1, 0), {{"ok", true}, {"credit_bytes", 4096}}).ok());
    ASSERT_TRUE(d.SendJson(WireTag(kResultMsg, a1, 0),
                           {{"outcome", "aborted"},
                            {"error",
                             {{"code", "HANDOFF_DUPLICATE_CORRUPTION"},
                              {"message", "chunk 0 repeated with other bytes"}}}})
                    .ok());
    auto m2 = d.Next(kManifestMsg);
    ASSERT_TRUE(m2.ok()) << "no second attempt: " << m2.status().ToString();
    second = nlohmann::json::parse(m2->bytes.begin(), m2->bytes.end());
    (void)d.SendJson(WireTag(kReplyMsg, AttemptOfTag(m2->tag), 0),
                     {{"ok", false}, {"code", "PD_MESSAGE_MALFORMED"}, {"message", "test: stop"}});
  });
  ASSERT_TRUE(second.is_object()) << "P started no second attempt";
  EXPECT_EQ(second.value("attempt", uint64_t{0}), 2u) << second.dump();
  EXPECT_EQ(second["plan"]["identity"].value("generation", uint64_t{0}), 2u);
}

// An ACK for a chunk P never sent is ignored: it returns no credit, so P still sends no
// chunk beyond the granted window (here one chunk) before the real ACK.
TEST(PdWorkerPrefillTest, AnAckForAChunkNeverSentReturnsNoCredit) {
  WorkerOptions p = SmallOptions();
  p.rto = std::chrono::milliseconds(10000);  // no retransmission during the test
  PrefillResult r = RunScriptedDecode(p, SmallSource(), [&](ScriptedDecode& d) {
    auto m = d.Next(kManifestMsg);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const uint64_t a = AttemptOfTag(m->tag);
    ASSERT_TRUE(d.SendJson(WireTag(kReplyMsg, a, 0), {{"ok", true}, {"credit_bytes", 256}}).ok());
    uint64_t three = 3;
    ASSERT_TRUE(d.peer
                    ->Send(WireTag(kAckMsg, a, 3), {{&three, sizeof three}},
                           After(std::chrono::milliseconds(2000)), "ACK")
                    .ok());
    for (uint64_t i = 0; i < 4; ++i) {
      auto c = d.Next(kChunkMsg);
      ASSERT_TRUE(c.ok()) << "chunk " << i << ": " << c.status().ToString();
      const uint64_t index = c->tag & 0xffffffff;
      ASSERT_EQ(index, i);
      // The window holds one chunk: nothing more may come until this one is acknowledged.
      auto beyond =
          d.peer->Recv(kChunkMsg << 56, uint64_t{0xff} << 56, 1 << 20,
                       After(std::chrono::milliseconds(300)), "a chunk beyond the window");
      ASSERT_FALSE(beyond.ok()) << "chunk " << (beyond->tag & 0xffffffff)
                                << " sent beyond the window";
      ASSERT_TRUE(d.peer
                      ->Send(WireTag(kAckMsg, a, index), {{&index, sizeof index}},
                             After(std::chrono::milliseconds(2000)), "ACK")
                      .ok());
    }
    ASSERT_TRUE(d.SendJson(WireTag(kResultMsg, a, 0),
                           {{"outcome", "published"}, {"generation", a}, {"source_release", true}})
                    .ok());
    (void)d.Next(kFinMsg);
  });
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.report["credit"]["in_flight_end"], 0);
}

// Runs P against a decode side that answers its first MANIFEST with `reply` and then waits for
// P's FIN (a refused or malformed REPLY ends the attempt without an ABORT); P's result.
PrefillResult RunAgainstReply(const nlohmann::json& reply) {
  WorkerOptions p = SmallOptions();
  p.peer_timeout = std::chrono::milliseconds(1000);
  return RunScriptedDecode(p, SmallSource(), [&](ScriptedDecode& d) {
    auto m = d.Next(kManifestMsg);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    ASSERT_TRUE(d.SendJson(WireTag(kReplyMsg, AttemptOfTag(m->tag), 0), reply).ok());
    (void)d.Next(kFinMsg);
  });
}

// A REPLY of another shape ends P with PD_MESSAGE_MALFORMED naming the member. Regression: P
// read "ok" and "credit_bytes" with value(), which throws on a mistyped member (and read a
// negative credit as 2^64 - 1), and a throw ended the prefill worker's process.
TEST(PdWorkerPrefillTest, RegressionAMistypedReplyIsMalformedNotACrash) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {nlohmann::json::array({1}), "reservation reply: expected a JSON object, got [1]"},
      {{{"ok", "yes"}, {"credit_bytes", 4096}},
       "reservation reply: member \"ok\" must be a boolean, got \"yes\""},
      {{{"ok", true}, {"credit_bytes", -1}},
       "reservation reply: member \"credit_bytes\" must be an unsigned integer, got -1"},
      {{{"ok", true}}, "reservation reply: member \"credit_bytes\" is missing from a grant"},
      {{{"credit_bytes", 4096}}, "reservation reply: member \"ok\" is missing"},
      {{{"ok", false}, {"code", 7}}, "reservation reply: member \"code\" must be a string, got 7"}};
  for (const auto& [reply, message] : cases) {
    PrefillResult r = RunAgainstReply(reply);
    EXPECT_EQ(r.status.error(), ErrorCode::PD_MESSAGE_MALFORMED) << r.status.ToString();
    EXPECT_EQ(r.status.message(), message);
  }
}

// A refusal's message is quoted clipped: a 10,000-byte message from the peer is cut at 1,024
// bytes with its length; its registry code stands.
TEST(PdWorkerPrefillTest, RegressionARefusalsLongMessageIsClipped) {
  PrefillResult r = RunAgainstReply({{"ok", false},
                                     {"code", "HANDOFF_CAPABILITY_SIGNATURE_INVALID"},
                                     {"message", std::string(10000, 'x')}});
  EXPECT_EQ(r.status.error(), ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID)
      << r.status.ToString();
  EXPECT_EQ(r.status.message(), std::string(1024, 'x') + "... (10000 bytes)");
}

// A RESULT of another shape is PD_MESSAGE_MALFORMED: P aborts the attempt (D answers the ABORT
// with a well-formed RESULT) and ends with that code. Regression: P read "outcome", "error"
// and "source_release" with value(), and a mistyped one ended the prefill worker's process.
TEST(PdWorkerPrefillTest, RegressionAMistypedResultIsMalformedNotACrash) {
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"published", "result: expected a JSON object, got \"published\""},
      {{{"outcome", 1}}, "result: member \"outcome\" must be a string, got 1"},
      {{{"generation", 1}}, "result: member \"outcome\" is missing"},
      {{{"outcome", "done"}},
       "result: member \"outcome\" must be \"published\" or \"aborted\", got \"done\""},
      {{{"outcome", "published"}, {"source_release", "yes"}},
       "result: member \"source_release\" must be a boolean, got \"yes\""},
      {{{"outcome", "aborted"}, {"error", {{"code", 7}}}},
       "result: error: member \"code\" must be a string, got 7"}};
  for (const auto& [result, message] : cases) {
    WorkerOptions p = SmallOptions();
    p.peer_timeout = std::chrono::milliseconds(1000);
    PrefillResult r = RunScriptedDecode(p, SmallSource(), [&](ScriptedDecode& d) {
      auto m = d.Next(kManifestMsg);
      ASSERT_TRUE(m.ok()) << m.status().ToString();
      const uint64_t a = AttemptOfTag(m->tag);
      ASSERT_TRUE(
          d.SendJson(WireTag(kReplyMsg, a, 0), {{"ok", true}, {"credit_bytes", 4096}}).ok());
      ASSERT_TRUE(d.SendJson(WireTag(kResultMsg, a, 0), result).ok());
      auto abort = d.Next(kAbortMsg);
      ASSERT_TRUE(abort.ok()) << "no ABORT: " << abort.status().ToString();
      ASSERT_TRUE(d.SendJson(WireTag(kResultMsg, a, 0),
                             {{"outcome", "aborted"},
                              {"error", {{"code", "PD_MESSAGE_MALFORMED"}, {"message", "test"}}}})
                      .ok());
      (void)d.Next(kFinMsg);
    });
    EXPECT_EQ(r.status.error(), ErrorCode::PD_MESSAGE_MALFORMED) << r.status.ToString();
    EXPECT_EQ(r.status.message(), message);
  }
}

}  // namespace
}  // namespace kvc::handoff::transport
