// Prefill and decode workers: the M5.6 handoff protocol over a UCX endpoint, with faults.
#include "reference/handoff/transport/pd_worker.h"

#include <openssl/rand.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "reference/base/canonical_json.h"
#include "reference/base/checked_math.h"
#include "reference/base/text_forms.h"
#include "reference/handoff/capability.h"

namespace kvc::handoff::transport {
namespace {

using std::chrono::milliseconds;

enum MsgType : uint64_t {
  kManifest = 1,
  kReply = 2,
  kChunk = 0x83,  // bit 63 set: bulk data, matched by pre-posted receives

  kAck = 4,
  kResult = 5,
  kAbort = 6,
  kFin = 7,
  kRawData = 0x88,
  kRawDone = 9,
};

uint64_t Tag(uint64_t type, uint64_t attempt, uint64_t index) {
  return (type << 56) | ((attempt & 0xffffff) << 32) | (index & 0xffffffff);
}
uint64_t TypeOf(uint64_t tag) { return tag >> 56; }
uint64_t AttemptOf(uint64_t tag) { return (tag >> 32) & 0xffffff; }
uint64_t IndexOf(uint64_t tag) { return tag & 0xffffffff; }

constexpr uint64_t kBulkBit = uint64_t{1} << 63;  // data messages; control ones have it clear
constexpr uint32_t kChunkMagic = 0x4843564b;      // "KVCH"
constexpr size_t kMaxControl = 64u << 20;         // JSON control messages

// The fixed header in front of every chunk payload (host byte order: both workers run the
// same build; docs/pd-transfer.md).
struct ChunkHeader {
  uint32_t magic = kChunkMagic;
  uint32_t version = 1;
  uint64_t attempt = 0;
  uint64_t chunk_index = 0;
  uint64_t payload_bytes = 0;
  uint64_t send_time_us = 0;
  uint64_t ready_time_us = 0;
};
static_assert(sizeof(ChunkHeader) == 48);

Status Malformed(std::string m) {
  return Status(StatusCode::kParseError, std::move(m), ErrorCode::PD_MESSAGE_MALFORMED);
}

std::string CodeName(const Status& s) {
  return s.error() == ErrorCode::kNone ? std::string(StatusCodeName(s.code()))
                                       : std::string(ErrorCodeName(s.error()));
}

nlohmann::json StatusJson(const Status& s) {
  return {{"code", CodeName(s)}, {"message", s.message()}};
}

// The peer's control messages are untrusted input: a member is checked for the type this worker
// reads it as before it is read (nlohmann's value() and get() throw on a mistyped member, and
// a throw here ends the worker's process). A message of another shape is PD_MESSAGE_MALFORMED,
// naming the message and the member; a value quoted from it is clipped.
enum class PeerKind { kBool, kUint, kString, kObject };
struct PeerMember {
  const char* key;
  PeerKind kind;
  bool required = false;
};
constexpr const char* kPeerKindNames[] = {"a boolean", "an unsigned integer", "a string",
                                          "an object"};  // by PeerKind
constexpr size_t kPeerMessageBytes = 1024;  // the most of a peer's error message quoted

bool IsPeerKind(const nlohmann::json& v, PeerKind k) {
  switch (k) {
    case PeerKind::kBool:
      return v.is_boolean();
    case PeerKind::kUint:
      return v.is_number_unsigned();
    case PeerKind::kString:
      return v.is_string();
    case PeerKind::kObject:
      return v.is_object();
  }
  return false;
}

Status CheckPeerMessage(const nlohmann::json& j, const char* what,
                        std::initializer_list<PeerMember> members) {
  if (!j.is_object())
    return Malformed(std::string(what) + ": expected a JSON object, got " +
                     base::ClippedJsonText(j.dump()));
  for (const PeerMember& m : members) {
    auto it = j.find(m.key);
    if (it == j.end()) {
      if (m.required) return Malformed(std::string(what) + ": member \"" + m.key + "\" is missing");
      continue;
    }
    if (!IsPeerKind(*it, m.kind))
      return Malformed(std::string(what) + ": member \"" + m.key + "\" must be " +
                       kPeerKindNames[static_cast<int>(m.kind)] + ", got " +
                       base::ClippedJsonText(it->dump()));
  }
  return Status();
}

// A peer's error report: an object whose "code" and "message", when present, are strings.
Status CheckPeerError(const nlohmann::json& j, const char* what) {
  return CheckPeerMessage(j, what, {{"code", PeerKind::kString}, {"message", PeerKind::kString}});
}

// The error a peer reports, {"code": NAME, "message": TEXT} (both optional strings): its registry
// code when NAME is one, else UNAVAILABLE naming it; `fallback` when it has no message.
// PD_MESSAGE_MALFORMED instead when `j` has another shape (`what` names the message).
Status StatusFromJson(const nlohmann::json& j, const char* what, const std::string& fallback) {
  KVC_RETURN_IF_ERROR(CheckPeerError(j, what));
  const std::string code = j.value("code", "");
  const std::string msg = base::Clipped(j.value("message", fallback), kPeerMessageBytes);
  if (auto e = ErrorCodeFromName(code)) return ViolationStatus(*e, msg);
  return Status(StatusCode::kUnavailable, base::Clipped(code) + ": " + msg);
}

Status SendJson(UcxPeer& peer, uint64_t tag, const nlohmann::json& j, milliseconds timeout,
                const char* what) {
  const std::string s = j.dump();
  return peer.Send(tag, {{s.data(), s.size()}}, After(timeout), what);
}

StatusOr<nlohmann::json> ParseJson(const Message& m, const char* what) {
  try {
    return nlohmann::json::parse(m.bytes.begin(), m.bytes.end());
  } catch (const std::exception& e) {
    return Malformed(std::string(what) + ": not JSON: " + base::Clipped(e.what(), 200));
  }
}

// Both roles: bootstrap over TCP (D listens, P connects), then UCP endpoints both ways.
StatusOr<std::unique_ptr<UcxPeer>> Establish(const WorkerOptions& opts, bool listen) {
  const Deadline deadline = After(opts.peer_timeout);
  BootstrapSocket conn;
  if (listen) {
    KVC_ASSIGN_OR_RETURN(BootstrapSocket l, BootstrapSocket::Listen(opts.bootstrap));
    if (!opts.port_file.empty()) {
      const std::string tmp = opts.port_file + ".tmp";
      {
        std::ofstream f(tmp, std::ios::trunc);
        f << l.port() << "\n";
        if (!f) return IoError(opts.port_file + ": cannot write the bootstrap port");
      }
      if (std::rename(tmp.c_str(), opts.port_file.c_str()) != 0)
        return IoError(opts.port_file + ": cannot publish the bootstrap port");
    }
    KVC_ASSIGN_OR_RETURN(conn, l.Accept(deadline));
  } else {
    KVC_ASSIGN_OR_RETURN(conn, BootstrapSocket::Connect(opts.bootstrap, deadline));
  }
  KVC_ASSIGN_OR_RETURN(std::unique_ptr<UcxPeer> peer, UcxPeer::Create(opts.transport));
  KVC_ASSIGN_OR_RETURN(std::string mine, peer->LocalAddress());
  KVC_ASSIGN_OR_RETURN(std::string theirs, ExchangeBlobs(conn, mine, deadline));
  KVC_RETURN_IF_ERROR(peer->Connect(theirs));
  return peer;
}

nlohmann::json PlanToJson(const TransferPlan& p) {
  nlohmann::json chunks = nlohmann::json::array();
  for (const auto& c : p.chunks)
    chunks.push_back({{"chunk_id", c.chunk_id},
                      {"layer", c.layer},
                      {"token_start", c.token_start},
                      {"token_count", c.token_count},
                      {"bytes", c.bytes},
                      {"checksum", c.checksum}});
  const auto& id = p.identity;
  return {{"transfer_id", p.transfer_id},
          {"identity",
           {{"tenant", id.tenant},
            {"request_id", id.request_id},
            {"generation", id.generation},
            {"attempt", id.attempt},
            {"source_worker_epoch", id.source_worker_epoch},
            {"destination_worker_epoch", id.destination_worker_epoch},
            {"reservation_id", id.reservation_id}}},
          {"tensor_abi_sha256", p.tensor_abi_sha256},
          {"num_layers", p.num_layers},
          {"token_start", p.token_start},
          {"token_count", p.token_count},
          {"bytes_per_token_layer", p.bytes_per_token_layer},
          {"reserved_blocks", p.reserved_blocks},
          {"visible_prefix_handle", p.visible_prefix_handle},
          {"chunks", chunks}};
}

StatusOr<TransferPlan> PlanFromJson(const nlohmann::json& j) {
  try {
    TransferPlan p;
    p.transfer_id = j.at("transfer_id").get<std::string>();
    const auto& id = j.at("identity");
    p.identity.tenant = id.at("tenant").get<std::string>();
    p.identity.request_id = id.at("request_id").get<std::string>();
    p.identity.generation = id.at("generation").get<uint64_t>();
    p.identity.attempt = id.at("attempt").get<uint64_t>();
    p.identity.source_worker_epoch = id.at("source_worker_epoch").get<uint64_t>();
    p.identity.destination_worker_epoch = id.at("destination_worker_epoch").get<uint64_t>();
    p.identity.reservation_id = id.at("reservation_id").get<std::string>();
    p.tensor_abi_sha256 = j.at("tensor_abi_sha256").get<std::string>();
    p.num_layers = j.at("num_layers").get<uint64_t>();
    p.token_start = j.at("token_start").get<uint64_t>();
    p.token_count = j.at("token_count").get<uint64_t>();
    p.bytes_per_token_layer = j.at("bytes_per_token_layer").get<uint64_t>();
    p.reserved_blocks = j.at("reserved_blocks").get<uint64_t>();
    p.visible_prefix_handle = j.value("visible_prefix_handle", std::string());
    for (const auto& c : j.at("chunks"))
      p.chunks.push_back({c.at("chunk_id").get<std::string>(), c.at("layer").get<uint64_t>(),
                          c.at("token_start").get<uint64_t>(), c.at("token_count").get<uint64_t>(),
                          c.at("bytes").get<uint64_t>(), c.at("checksum").get<std::string>()});
    return p;
  } catch (const std::exception& e) {
    return Malformed(std::string("manifest: ") + e.what());
  }
}

bool Retryable(ErrorCode c) {
  return c == ErrorCode::HANDOFF_CHECKSUM_MISMATCH || c == ErrorCode::HANDOFF_DUPLICATE_CORRUPTION;
}

nlohmann::json CapabilityToJson(const Capability& c) {
  nlohmann::json j = CapabilitySignedFields(c);
  j["signature"] = c.signature_hex;
  return j;
}

StatusOr<Capability> CapabilityFromJson(const nlohmann::json& j) {
  try {
    Capability c;
    c.issuer = j.at("issuer").get<std::string>();
    c.key_id = j.at("key_id").get<std::string>();
    c.tenant = j.at("tenant").get<std::string>();
    c.source = j.at("source").get<std::string>();
    c.destination = j.at("destination").get<std::string>();
    c.transfer_id = j.at("transfer_id").get<std::string>();
    c.generation = j.at("generation").get<uint64_t>();
    c.route_epoch = j.at("route_epoch").get<uint64_t>();
    c.cache_abi_sha256 = j.at("cache_abi_sha256").get<std::string>();
    c.direction = j.at("direction").get<std::string>();
    c.allowed_regions = j.at("allowed_regions").get<std::vector<std::string>>();
    c.max_bytes = j.at("max_bytes").get<uint64_t>();
    c.expires_at_s = j.at("expires_at_s").get<uint64_t>();
    c.nonce = j.at("nonce").get<std::string>();
    c.signature_hex = j.at("signature").get<std::string>();
    return c;
  } catch (const std::exception& e) {
    return Malformed(std::string("manifest: capability: ") + e.what());
  }
}

std::string SourceOwner(uint64_t epoch) { return "prefill@epoch" + std::to_string(epoch); }
std::string DestinationOwner(uint64_t epoch) { return "decode@epoch" + std::to_string(epoch); }

// 16 random bytes as lowercase hex (OpenSSL's CSPRNG).
StatusOr<std::string> RandomNonce() {
  unsigned char b[16];
  if (RAND_bytes(b, sizeof b) != 1) return Internal("RAND_bytes failed");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) out += {kHex[c >> 4], kHex[c & 15]};
  return out;
}

// ------------------------------------------------------------------------------------------
// Prefill side.

class PrefillSession {
 public:
  PrefillSession(const WorkerOptions& o, SourceKv s) : opts_(o), src_(std::move(s)) {}
  PrefillResult Run();

 private:
  struct Attempt {
    uint64_t attempt = 0;
    TransferPlan plan;
    bool replied = false;
    nlohmann::json reply;
    std::optional<nlohmann::json> result;
    std::vector<bool> acked;
    uint64_t acked_count = 0;
    std::vector<uint64_t> sends;
    std::vector<Clock::time_point> last_send;
    bool fenced = false;  // aborted: later ACKs are ignored
  };
  struct InFlightSend {
    std::unique_ptr<ChunkHeader> header;
    std::vector<uint8_t> copy;  // corrupted bytes (fault) or empty
    Pending op;
  };

  Attempt& NewAttempt(uint64_t attempt);
  Status Handshake(Attempt& a);
  Status Pump();  // one round: completes sends, receives and dispatches one D message
  Status Dispatch(const Message& m);
  Status SendChunk(Attempt& a, size_t i, bool corrupt);
  // Sends chunks `order` of attempt a within the credit window, retransmitting unacknowledged
  // ones; returns when all are acknowledged, or a RESULT for a arrived (aborted).
  Status Stream(Attempt& a, const std::vector<size_t>& order, bool faults);
  Status WaitResult(Attempt& a);
  void ReleaseCredits(Attempt& a);
  Status AbortAttempt(Attempt& a, const Status& why);

  const WorkerOptions& opts_;
  SourceKv src_;
  std::unique_ptr<UcxPeer> peer_;
  std::optional<ByteCreditWindow> window_;
  std::map<uint64_t, Attempt> attempts_;
  std::deque<InFlightSend> sends_;
  Message inbox_;
  std::optional<Clock::time_point> first_reply_;  // end of the first reservation handshake
  uint64_t retransmits_ = 0, duplicates_sent_ = 0, dropped_ = 0, credit_waits_ = 0;
  std::string first_nonce_;  // the nonce of the first capability sent (cap-replay re-presents it)
  // Signs the attempt's capability (with the attempt-1 capability faults applied).
  StatusOr<Capability> MakeCapability(const Attempt& a);
  nlohmann::json attempt_log_ = nlohmann::json::array();
};

PrefillSession::Attempt& PrefillSession::NewAttempt(uint64_t attempt) {
  Attempt& a = attempts_[attempt];
  a.attempt = attempt;
  TransferPlan& p = a.plan;
  p.identity = {opts_.tenant,       opts_.request_id,        attempt, attempt,
                opts_.source_epoch, opts_.destination_epoch, ""};
  p.transfer_id =
      opts_.request_id + "/g" + std::to_string(attempt) + "/a" + std::to_string(attempt);
  p.identity.reservation_id = "rsv:" + p.transfer_id;
  p.tensor_abi_sha256 = src_.tensor_abi_sha256;
  p.num_layers = src_.num_layers;
  p.token_start = src_.token_start;
  p.visible_prefix_handle = src_.visible_prefix_handle;
  p.token_count = src_.token_count;
  p.bytes_per_token_layer = src_.bytes_per_token_layer;
  p.reserved_blocks = src_.reserved_blocks;
  p.chunks = src_.chunks;
  a.acked.assign(p.chunks.size(), false);
  a.sends.assign(p.chunks.size(), 0);
  a.last_send.assign(p.chunks.size(), Clock::time_point());
  return a;
}

StatusOr<Capability> PrefillSession::MakeCapability(const Attempt& a) {
  using K = FaultSpec::Kind;
  const CapabilityOptions& co = opts_.capability;
  const TransferPlan& p = a.plan;
  const bool first = first_nonce_.empty();
  const K f = opts_.fault.kind;
  Capability c;
  c.issuer = co.issuer;
  c.key_id = co.key_id;
  c.tenant = p.identity.tenant;
  c.source = SourceOwner(p.identity.source_worker_epoch);
  c.destination = DestinationOwner(p.identity.destination_worker_epoch);
  c.transfer_id = p.transfer_id;
  c.generation = p.identity.generation;
  c.route_epoch = co.route_epoch;
  c.cache_abi_sha256 = p.tensor_abi_sha256;
  c.direction = "push";
  for (size_t i = 0; i < p.chunks.size(); ++i)
    if (!(first && f == K::kCapRegion && i == opts_.fault.chunk))
      c.allowed_regions.push_back(p.chunks[i].chunk_id);
  c.max_bytes = 0;
  for (const auto& ch : p.chunks) {
    auto t = CheckedAdd(c.max_bytes, ch.bytes);
    if (!t) return ViolationStatus(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "plan bytes overflow");
    c.max_bytes = *t;
  }
  if (first && f == K::kCapBytes) c.max_bytes -= 1;  // > 0: a plan has at least one byte
  const uint64_t now = static_cast<uint64_t>(std::time(nullptr));
  c.expires_at_s = first && f == K::kCapExpired ? now - 1 : now + co.ttl_s;
  if (!first && f == K::kCapReplay) {
    c.nonce = first_nonce_;
  } else {
    KVC_ASSIGN_OR_RETURN(c.nonce, RandomNonce());
  }
  KVC_ASSIGN_OR_RETURN(c.signature_hex, SignCapability(c, co.key));
  if (first && f == K::kCapForged) c.signature_hex[0] = c.signature_hex[0] == '0' ? '1' : '0';
  if (first) first_nonce_ = c.nonce;
  (void)a;
  return c;
}

Status PrefillSession::Handshake(Attempt& a) {
  nlohmann::json m = {{"kind", "kvconform.pd_manifest/1"},
                      {"attempt", a.attempt},
                      {"plan", PlanToJson(a.plan)},
                      {"layer_ready_us", src_.layer_ready_us},
                      {"checksum", opts_.checksum ? "sha256" : "none"},
                      {"payload", src_.payload}};
  if (!opts_.capability.key.empty()) {
    KVC_ASSIGN_OR_RETURN(Capability c, MakeCapability(a));
    m["nonce"] = c.nonce;
    m["capability"] = CapabilityToJson(c);
  }
  KVC_RETURN_IF_ERROR(SendJson(*peer_, Tag(kManifest, a.attempt, 0), m, opts_.peer_timeout,
                               "sending the handoff manifest"));
  const Deadline deadline = After(opts_.peer_timeout);
  while (!a.replied) {
    KVC_RETURN_IF_ERROR(Pump());
    if (Clock::now() >= deadline)
      return Status(StatusCode::kDeadlineExceeded,
                    "no reservation reply from the decode worker for " + a.plan.transfer_id,
                    ErrorCode::PD_PEER_TIMEOUT);
  }
  if (!a.reply.value("ok", false))
    return StatusFromJson(a.reply, "reservation reply", "reservation refused");
  if (!first_reply_) first_reply_ = Clock::now();
  const uint64_t granted = a.reply.value("credit_bytes", uint64_t{0});
  if (!window_) window_.emplace(granted);
  return Status();
}

Status PrefillSession::Pump() {
  while (!sends_.empty()) {
    KVC_ASSIGN_OR_RETURN(bool done, peer_->Test(sends_.front().op));
    if (!done) break;
    sends_.pop_front();
  }
  KVC_ASSIGN_OR_RETURN(bool got, peer_->TryRecv(0, kBulkBit, kMaxControl, &inbox_,
                                                After(opts_.peer_timeout), "a decode message"));
  if (got) return Dispatch(inbox_);
  return Status();
}

Status PrefillSession::Dispatch(const Message& m) {
  const uint64_t type = TypeOf(m.tag), attempt = AttemptOf(m.tag), index = IndexOf(m.tag);
  auto it = attempts_.find(attempt);
  if (it == attempts_.end())
    return Malformed("decode worker sent a message for unknown attempt " + std::to_string(attempt));
  Attempt& a = it->second;
  switch (type) {
    case kReply: {
      KVC_ASSIGN_OR_RETURN(nlohmann::json r, ParseJson(m, "reservation reply"));
      KVC_RETURN_IF_ERROR(
          CheckPeerMessage(r, "reservation reply",
                           {{"ok", PeerKind::kBool, true}, {"credit_bytes", PeerKind::kUint}}));
      if (r["ok"].get<bool>() && !r.contains("credit_bytes"))
        return Malformed("reservation reply: member \"credit_bytes\" is missing from a grant");
      a.reply = std::move(r);
      a.replied = true;
      return Status();
    }
    case kAck: {
      if (index >= a.acked.size())
        return Malformed("ACK for chunk index " + std::to_string(index) + " out of range");
      if (a.fenced || a.acked[index] || a.sends[index] == 0) return Status();  // late/duplicate
      a.acked[index] = true;
      ++a.acked_count;
      return window_->Release(a.plan.chunks[index].bytes);
    }
    case kResult: {
      KVC_ASSIGN_OR_RETURN(nlohmann::json r, ParseJson(m, "result"));
      KVC_RETURN_IF_ERROR(CheckPeerMessage(r, "result",
                                           {{"outcome", PeerKind::kString, true},
                                            {"error", PeerKind::kObject},
                                            {"generation", PeerKind::kUint},
                                            {"transfer_id", PeerKind::kString},
                                            {"cache_handle_id", PeerKind::kString},
                                            {"source_release", PeerKind::kBool}}));
      const std::string outcome = r["outcome"].get<std::string>();
      if (outcome != "published" && outcome != "aborted")
        return Malformed("result: member \"outcome\" must be \"published\" or \"aborted\", got " +
                         base::QuoteClipped(outcome));
      if (r.contains("error")) KVC_RETURN_IF_ERROR(CheckPeerError(r["error"], "result: error"));
      a.result = std::move(r);
      return Status();
    }
    default:
      return Malformed("unexpected message type " + std::to_string(type) + " from decode");
  }
}

Status PrefillSession::SendChunk(Attempt& a, size_t i, bool corrupt) {
  const ChunkSpec& c = a.plan.chunks[i];
  InFlightSend s;
  s.header = std::make_unique<ChunkHeader>();
  s.header->attempt = a.attempt;
  s.header->chunk_index = i;
  s.header->payload_bytes = c.bytes;
  s.header->send_time_us = SteadyNowUs();
  s.header->ready_time_us = src_.layer_ready_us.at(c.layer);
  // The header goes into the slot right before the payload: one contiguous message.
  uint8_t* slot = src_.bytes.data() + src_.offsets[i] - sizeof(ChunkHeader);
  std::memcpy(slot, s.header.get(), sizeof(ChunkHeader));
  const uint8_t* wire = slot;
  const size_t wire_bytes = sizeof(ChunkHeader) + static_cast<size_t>(c.bytes);
  if (corrupt) {
    s.copy.assign(wire, wire + wire_bytes);
    s.copy[sizeof(ChunkHeader) + c.bytes / 2] ^= 0x01;  // one flipped bit mid-payload
    wire = s.copy.data();
  }
  KVC_ASSIGN_OR_RETURN(s.op, peer_->SendNb(Tag(kChunk, a.attempt, i), {{wire, wire_bytes}}));
  sends_.push_back(std::move(s));
  ++a.sends[i];
  a.last_send[i] = Clock::now();
  return Status();
}

Status PrefillSession::Stream(Attempt& a, const std::vector<size_t>& order, bool faults) {
  const FaultSpec& f = opts_.fault;
  size_t next = 0;
  Deadline idle = After(opts_.peer_timeout);
  bool waiting_for_credit = false;
  // `order` holds chunks not sent yet in this attempt, so it is done when the attempt's
  // acknowledgement count grows by order.size().
  const uint64_t target = a.acked_count + order.size();
  auto last_scan = Clock::now();
  while (a.acked_count < target) {
    if (a.result) return Status();  // D aborted the attempt (or published early: impossible)
    if (next < order.size()) {
      const size_t i = order[next];
      if (faults && f.kind == FaultSpec::Kind::kDelay && i == f.chunk && next + 1 == order.size()) {
        // The held-back chunk goes last, after MS ms (still pumping acknowledgements).
        const Deadline until = After(milliseconds(f.ms));
        while (Clock::now() < until) KVC_RETURN_IF_ERROR(Pump());
      }
      if (window_->Acquire(a.plan.chunks[i].bytes).ok()) {
        waiting_for_credit = false;
        ++next;
        const bool first = a.sends[i] == 0;
        if (faults && first && f.kind == FaultSpec::Kind::kDrop && i == f.chunk) {
          ++a.sends[i];  // "sent" into a lossy network: never arrives
          a.last_send[i] = Clock::now();
          ++dropped_;
        } else {
          KVC_RETURN_IF_ERROR(
              SendChunk(a, i,
                        faults && first &&
                            ((f.kind == FaultSpec::Kind::kCorrupt && i == f.chunk) ||
                             (f.kind == FaultSpec::Kind::kCapReplay && i == 0))));
          if (faults && f.kind == FaultSpec::Kind::kDuplicate && i == f.chunk) {
            KVC_RETURN_IF_ERROR(SendChunk(a, i, false));
            ++duplicates_sent_;
          }
        }
        idle = After(opts_.peer_timeout);
        continue;
      }
      if (!waiting_for_credit) ++credit_waits_;
      waiting_for_credit = true;
    }
    const size_t before = sends_.size();
    const uint64_t acked_before = a.acked_count;
    KVC_RETURN_IF_ERROR(Pump());
    if (sends_.size() != before || a.acked_count != acked_before) idle = After(opts_.peer_timeout);
    // Retransmit chunks whose DEVICE_VISIBLE acknowledgement is overdue (same transfer_id and
    // bytes: the destination treats it as an idempotent retry). Scanned once a millisecond.
    if (Clock::now() - last_scan < milliseconds(1)) continue;
    last_scan = Clock::now();
    for (size_t k = 0; k < next; ++k) {
      const size_t i = order[k];
      if (a.acked[i] || Clock::now() - a.last_send[i] < opts_.rto) continue;
      if (a.sends[i] > opts_.max_retransmits)
        return Status(
            StatusCode::kDeadlineExceeded,
            "chunk " + base::QuoteClipped(a.plan.chunks[i].chunk_id) + " of " +
                base::Clipped(a.plan.transfer_id) +
                " was never acknowledged DEVICE_VISIBLE after " + std::to_string(a.sends[i]) +
                " transmissions: its " + std::to_string(a.plan.chunks[i].bytes) +
                " B of credit never came back (window " + std::to_string(window_->capacity()) +
                " B, in flight " + std::to_string(window_->in_flight()) + " B)",
            ErrorCode::PD_CREDIT_STARVED);
      KVC_RETURN_IF_ERROR(SendChunk(a, i, false));
      ++retransmits_;
      idle = After(opts_.peer_timeout);
    }
    if (Clock::now() >= idle)
      return Status(StatusCode::kDeadlineExceeded,
                    "the decode worker made no progress on " + base::Clipped(a.plan.transfer_id) +
                        " for " + std::to_string(opts_.peer_timeout.count()) + " ms",
                    ErrorCode::PD_PEER_TIMEOUT);
  }
  return Status();
}

Status PrefillSession::WaitResult(Attempt& a) {
  const Deadline deadline = After(opts_.peer_timeout);
  while (!a.result) {
    KVC_RETURN_IF_ERROR(Pump());
    if (Clock::now() >= deadline)
      return Status(StatusCode::kDeadlineExceeded,
                    "no publication result from the decode worker for " + a.plan.transfer_id,
                    ErrorCode::PD_PEER_TIMEOUT);
  }
  return Status();
}

void PrefillSession::ReleaseCredits(Attempt& a) {
  a.fenced = true;
  if (!window_) return;
  for (size_t i = 0; i < a.acked.size(); ++i)
    if (a.sends[i] > 0 && !a.acked[i]) {
      (void)window_->Release(a.plan.chunks[i].bytes);
      a.acked[i] = true;
    }
}

Status PrefillSession::AbortAttempt(Attempt& a, const Status& why) {
  ReleaseCredits(a);
  if (peer_ && !peer_->peer_failed()) {
    // Tell D to abort (it returns its credits and unpublished blocks), wait for its RESULT.
    (void)SendJson(*peer_, Tag(kAbort, a.attempt, 0), StatusJson(why), opts_.peer_timeout,
                   "sending ABORT");
    (void)WaitResult(a);
  }
  return why;
}

PrefillResult PrefillSession::Run() {
  PrefillResult res;
  nlohmann::json& rep = res.report;
  rep = {{"role", "prefill"}, {"fault", opts_.fault.text}};
  const FaultSpec& f = opts_.fault;
  auto finish = [&](Status s) {
    res.status = s;
    rep["outcome"] = s.ok() ? "published" : "failed";
    if (!s.ok()) rep["error"] = StatusJson(s);
    rep["attempts"] = attempt_log_;
    rep["retransmits"] = retransmits_;
    rep["duplicates_sent"] = duplicates_sent_;
    rep["dropped"] = dropped_;
    rep["credit_waits"] = credit_waits_;
    if (window_)
      rep["credit"] = {{"capacity", window_->capacity()},
                       {"high_water", window_->high_water()},
                       {"in_flight_end", window_->in_flight()}};
    if (peer_) {
      // Outstanding sends are cancelled before their headers and buffers go away.
      for (InFlightSend& x : sends_) peer_->Cancel(x.op);
      if (!peer_->peer_failed())
        (void)SendJson(*peer_, Tag(kFin, 0, 0), nlohmann::json::object(), milliseconds(500),
                       "sending FIN");
      (void)peer_->Close(After(milliseconds(500)));
    }
    return res;
  };
  if (src_.offsets.size() != src_.chunks.size())
    if (Status s = LayoutSource(&src_); !s.ok()) return finish(s);
  // Checksums are part of the manifest, computed once over the immutable source bytes.
  const auto t_hash = Clock::now();
  for (size_t i = 0; i < src_.chunks.size(); ++i)
    src_.chunks[i].checksum =
        opts_.checksum ? Sha256Hex(std::string_view(
                             reinterpret_cast<const char*>(src_.bytes.data() + src_.offsets[i]),
                             src_.chunks[i].bytes))
                       : "";
  rep["checksum_seconds"] = std::chrono::duration<double>(Clock::now() - t_hash).count();
  rep["payload_bytes"] = PayloadBytes(src_);
  rep["chunks"] = src_.chunks.size();
  {
    auto peer = Establish(opts_, /*listen=*/false);
    if (!peer.ok()) return finish(peer.status());
    peer_ = std::move(*peer);
  }
  std::vector<size_t> order(src_.chunks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<size_t> faulty = order;
  if (f.kind == FaultSpec::Kind::kReorder) std::reverse(faulty.begin(), faulty.end());
  if (f.kind == FaultSpec::Kind::kDelay && f.chunk < faulty.size()) {
    faulty.erase(faulty.begin() + static_cast<std::ptrdiff_t>(f.chunk));
    faulty.push_back(f.chunk);
  }
  auto log_attempt = [&](const Attempt& a, const std::string& outcome, const Status& s) {
    nlohmann::json j = {{"attempt", a.attempt},
                        {"generation", a.plan.identity.generation},
                        {"transfer_id", a.plan.transfer_id},
                        {"outcome", outcome}};
    if (!s.ok()) j["error"] = StatusJson(s);
    attempt_log_.push_back(j);
  };
  const auto t_start = Clock::now();
  Attempt* published = nullptr;

  if (f.kind == FaultSpec::Kind::kStaleReroute) {
    // Attempt 1 streams half its chunks, then the router supersedes it with attempt 2
    // (generation 2) which completes; attempt 1's remaining chunks then complete late.
    Attempt& a1 = NewAttempt(1);
    if (Status s = Handshake(a1); !s.ok()) return finish(s);
    const size_t half = order.size() / 2;
    std::vector<size_t> first(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(half));
    std::vector<size_t> rest(order.begin() + static_cast<std::ptrdiff_t>(half), order.end());
    if (Status s = Stream(a1, first, false); !s.ok()) return finish(s);
    Attempt& a2 = NewAttempt(2);
    if (Status s = Handshake(a2); !s.ok()) return finish(s);
    if (Status s = Stream(a2, order, false); !s.ok()) return finish(s);
    if (Status s = WaitResult(a2); !s.ok()) return finish(s);
    if (a2.result->value("outcome", "") != "published")
      return finish(StatusFromJson(a2.result->value("error", nlohmann::json::object()),
                                   "result: error", "attempt 2 was not published"));
    log_attempt(a2, "published", Status());
    published = &a2;
    if (Status s = Stream(a1, rest, false); !s.ok()) return finish(s);
    if (Status s = WaitResult(a1); !s.ok()) return finish(s);
    const Status a1s =
        StatusFromJson(a1.result->value("error", nlohmann::json::object()), "result: error", "");
    log_attempt(a1, a1.result->value("outcome", "?"), a1s);
    ReleaseCredits(a1);
  } else {
    for (uint64_t k = 0; k < opts_.max_attempts && !published; ++k) {
      const uint64_t n = opts_.first_attempt + k;  // <= 2^32 + max_attempts: no overflow
      Attempt& a = NewAttempt(n);
      Status s = Handshake(a);
      if (s.ok()) {
        s = Stream(a, k == 0 ? faulty : order, k == 0);
        if (s.ok()) s = WaitResult(a);
        if (!s.ok() && s.error() != ErrorCode::PD_PEER_LOST) s = AbortAttempt(a, s);
      }
      if (s.ok() && a.result->value("outcome", "") == "published") {
        log_attempt(a, "published", Status());
        published = &a;
        if (f.kind == FaultSpec::Kind::kKillPrefill) raise(SIGKILL);
        break;
      }
      if (s.ok())
        s = StatusFromJson(a.result->value("error", nlohmann::json::object()), "result: error",
                           "aborted");
      ReleaseCredits(a);
      log_attempt(a, "aborted", s);
      if (!Retryable(s.error()) || k + 1 == opts_.max_attempts) {
        if (Retryable(s.error()))
          s = ViolationStatus(ErrorCode::PD_ATTEMPTS_EXHAUSTED,
                              "all " + std::to_string(opts_.max_attempts) +
                                  " attempts aborted; last: " + s.message());
        return finish(s);
      }
    }
  }
  // Streaming time: first reservation granted .. publication acknowledged (the handshake, which
  // includes D allocating its reserved buffer, is reported separately).
  const auto t_end = Clock::now();
  rep["handshake_seconds"] =
      std::chrono::duration<double>(first_reply_.value_or(t_start) - t_start).count();
  rep["transfer_seconds"] =
      std::chrono::duration<double>(t_end - first_reply_.value_or(t_start)).count();
  // D acknowledged source release with the publication (after admission, same generation).
  rep["published_generation"] = published->plan.identity.generation;
  rep["source_released"] = published->result->value("source_release", false);
  if (rep["source_released"].get<bool>()) {
    std::vector<uint8_t>().swap(src_.bytes);
  }
  if (window_ && window_->in_flight() != 0)
    return finish(Internal("prefill: " + std::to_string(window_->in_flight()) +
                           " B of credit still held after the transfer"));
  return finish(Status());
}

// ------------------------------------------------------------------------------------------
// Decode side.

class DecodeSession {
 public:
  DecodeSession(const WorkerOptions& o, const lifecycle::CacheAbi& abi)
      : opts_(o),
        abi_(abi),
        credits_(o.fault.kind == FaultSpec::Kind::kCreditWindow ? o.fault.bytes : o.credit_bytes),
        pool_(o.pool_blocks),
        directory_(abi) {}
  DecodeResult Run();

 private:
  struct Attempt {
    std::optional<TransferTxn> txn;
    std::vector<uint64_t> offsets;
    std::vector<uint8_t> dest;  // the reserved destination buffer (unpublished until commit)
    std::vector<uint64_t> ready_us;
    nlohmann::json payload;
    bool finished = false;  // a RESULT was sent
    bool published = false;
    // What the authorized capability grants (capabilities on): regions and accepted bytes.
    std::optional<CapabilityGrant> cap;
  };
  // AuthorizeTransfer of the manifest's capability over the declared plan (capabilities on).
  Status AuthorizeManifest(Attempt& a, const nlohmann::json& manifest, const TransferPlan& plan,
                           uint64_t total_bytes);
  // The per-chunk write gate: region allowed, accepted bytes within the bound.
  Status AuthorizeChunkWrite(Attempt& a, const ChunkSpec& spec);
  struct Held {  // received, copy to the reserved buffer not yet visible (credit-stall)
    uint64_t attempt;
    size_t index;
  };
  // A pre-posted receive for chunk messages (staging memory of header + largest chunk).
  struct Slot {
    Message msg;
    Pending op;
  };
  Status PostSlot(Slot& s);
  Status PollSlots(bool* progressed);

  Status OnManifest(uint64_t attempt, const Message& m);
  Status OnChunk(uint64_t attempt, uint64_t index, const Message& m);
  Status MakeVisible(uint64_t attempt, size_t index);
  Status FinishIfComplete(uint64_t attempt);
  Status SendResult(uint64_t attempt, const Status& s);
  Status AbortAttempt(uint64_t attempt, const Status& why);

  const WorkerOptions& opts_;
  lifecycle::CacheAbi abi_;
  ByteCreditWindow credits_;
  DestinationBlockPool pool_;
  DecodeDirectory directory_;
  std::unique_ptr<UcxPeer> peer_;
  std::map<uint64_t, Attempt> attempts_;
  std::vector<Held> held_;
  std::vector<Slot> slots_;
  size_t slot_bytes_ = 0;
  std::optional<uint64_t> published_attempt_;
  uint64_t chunks_received_ = 0, duplicates_ = 0, late_rejected_ = 0;
  NonceStore nonces_;  // capability nonces consumed by this destination
  uint64_t cap_authorized_ = 0, cap_denied_ = 0;
  nlohmann::json events_ = nlohmann::json::array();
};

Status DecodeSession::SendResult(uint64_t attempt, const Status& s) {
  Attempt& a = attempts_[attempt];
  a.finished = true;
  nlohmann::json r = {{"outcome", s.ok() ? "published" : "aborted"}};
  if (s.ok()) {
    const PublishedHandle* h = directory_.Lookup(a.txn->plan().identity.request_id);
    r["generation"] = h->generation;
    r["transfer_id"] = h->transfer_id;
    r["cache_handle_id"] = h->cache_handle_id;
    r["source_release"] = a.txn->source_released();
  } else {
    r["error"] = StatusJson(s);
  }
  events_.push_back({{"attempt", attempt}, {"result", r}});
  return SendJson(*peer_, Tag(kResult, attempt, 0), r, opts_.peer_timeout, "sending RESULT");
}

Status DecodeSession::AbortAttempt(uint64_t attempt, const Status& why) {
  Attempt& a = attempts_[attempt];
  if (a.txn && a.txn->state() != TxnState::kPublished && a.txn->state() != TxnState::kAborted)
    KVC_RETURN_IF_ERROR(a.txn->Abort(why.message().empty() ? why.ToString() : why.message()));
  std::erase_if(held_, [&](const Held& h) { return h.attempt == attempt; });
  std::vector<uint8_t>().swap(a.dest);  // unpublished bytes are dropped, never read
  if (a.finished) return Status();
  return SendResult(attempt, why);
}

Status DecodeSession::OnManifest(uint64_t attempt, const Message& m) {
  auto reply = [&](const Status& s) {
    nlohmann::json r = {{"ok", s.ok()}, {"credit_bytes", credits_.capacity()}};
    if (!s.ok()) r.update(StatusJson(s));
    events_.push_back({{"attempt", attempt}, {"reply", r}});
    return SendJson(*peer_, Tag(kReply, attempt, 0), r, opts_.peer_timeout, "sending REPLY");
  };
  if (attempts_.count(attempt)) return reply(Malformed("attempt reused"));
  Attempt& a = attempts_[attempt];
  a.finished = true;  // until reserved, a failure is reported in the REPLY
  auto j = ParseJson(m, "manifest");
  if (!j.ok()) return reply(j.status());
  if (Status s = CheckPeerMessage(*j, "manifest",
                                  {{"plan", PeerKind::kObject, true},
                                   {"nonce", PeerKind::kString},
                                   {"capability", PeerKind::kObject}});
      !s.ok())
    return reply(s);
  auto plan = PlanFromJson((*j)["plan"]);
  if (!plan.ok()) return reply(plan.status());
  try {
    a.ready_us = j->at("layer_ready_us").get<std::vector<uint64_t>>();
    a.payload = j->value("payload", nlohmann::json::object());
  } catch (const std::exception& e) {
    return reply(Malformed(std::string("manifest: layer_ready_us: ") + e.what()));
  }
  if (a.ready_us.size() != plan->num_layers)
    return reply(Malformed("manifest: layer_ready_us has " + std::to_string(a.ready_us.size()) +
                           " entries for " + std::to_string(plan->num_layers) + " layers"));
  // The destination lays the chunks out in plan order (overflow-checked).
  uint64_t total = 0;
  for (const auto& c : plan->chunks) {
    a.offsets.push_back(total);
    auto t = CheckedAdd(total, c.bytes);
    if (!t)
      return reply(ViolationStatus(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "chunk bytes overflow"));
    total = *t;
  }
  uint64_t largest = 0;
  for (const auto& c : plan->chunks) largest = std::max(largest, c.bytes);
  if (slots_.empty() && largest > 0 && largest < (uint64_t{1} << 40)) {
    // Staging: enough receives for a full credit window plus one, each header + largest chunk.
    slot_bytes_ = sizeof(ChunkHeader) + largest;
    const uint64_t n =
        std::min<uint64_t>(64, std::max<uint64_t>(2, credits_.capacity() / largest + 1));
    slots_.resize(n);
    for (Slot& sl : slots_) {
      sl.msg.bytes.resize(slot_bytes_);
      KVC_RETURN_IF_ERROR(PostSlot(sl));
    }
  }
  if (sizeof(ChunkHeader) + largest > slot_bytes_)
    return reply(Malformed("manifest: a " + std::to_string(largest) +
                           " B chunk exceeds the staging slots (" + std::to_string(slot_bytes_) +
                           " B) posted for the first attempt"));
  if (!opts_.capability.key.empty()) {
    if (Status s = AuthorizeManifest(a, *j, *plan, total); !s.ok()) return reply(s);
  }
  auto txn = TransferTxn::Create(*plan, &credits_, &pool_, &directory_);
  if (!txn.ok()) return reply(txn.status());
  a.txn.emplace(std::move(*txn));
  if (Status s = a.txn->Reserve(); !s.ok()) return reply(s);
  a.dest.assign(total, 0);
  a.finished = false;
  return reply(Status());
}

Status DecodeSession::AuthorizeManifest(Attempt& a, const nlohmann::json& manifest,
                                        const TransferPlan& plan, uint64_t total_bytes) {
  const CapabilityOptions& co = opts_.capability;
  if (!manifest.contains("capability"))
    return ViolationStatus(ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID,
                           "transfer denied: the manifest presents no capability");
  KVC_ASSIGN_OR_RETURN(Capability c, CapabilityFromJson(manifest["capability"]));
  TransferRequest r;
  r.tenant = opts_.tenant;
  r.prefill_owner = SourceOwner(plan.identity.source_worker_epoch);
  r.decode_owner = DestinationOwner(opts_.destination_epoch);
  r.transfer_id = plan.transfer_id;
  r.generation = plan.identity.generation;
  r.cache_abi_sha256 = abi_.id;
  r.direction = "push";
  for (const auto& ch : plan.chunks) r.regions.push_back(ch.chunk_id);
  r.bytes = total_bytes;
  r.nonce = manifest.value("nonce", std::string());
  AuthorizationContext ctx;
  ctx.now_s = static_cast<uint64_t>(std::time(nullptr));
  ctx.max_ttl_s = co.ttl_s;
  ctx.current_route_epoch = co.route_epoch;
  ctx.trusted_issuers = {co.issuer};
  ctx.keys = [&co](const std::string& id) -> std::optional<std::string> {
    if (id == co.key_id) return co.key;
    return std::nullopt;
  };
  ctx.nonces = &nonces_;
  if (Status s = AuthorizeTransfer(r, c, ctx); !s.ok()) {
    ++cap_denied_;
    return s;
  }
  ++cap_authorized_;
  a.cap = GrantOf(c);
  return Status();
}

Status DecodeSession::AuthorizeChunkWrite(Attempt& a, const ChunkSpec& spec) {
  if (!a.cap) {
    if (opts_.capability.key.empty()) return Status();
    return ViolationStatus(ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID,
                           "chunk write denied: the attempt holds no authorized capability");
  }
  return AuthorizeWrite(&*a.cap, spec.chunk_id, spec.bytes);
}

Status DecodeSession::PostSlot(Slot& sl) {
  KVC_ASSIGN_OR_RETURN(
      sl.op, peer_->RecvNb(Tag(kChunk, 0, 0), kBulkBit, sl.msg.bytes.data(), sl.msg.bytes.size()));
  return Status();
}

Status DecodeSession::PollSlots(bool* progressed) {
  for (Slot& sl : slots_) {
    if (!sl.op.valid()) continue;
    KVC_ASSIGN_OR_RETURN(bool done, peer_->Test(sl.op));
    if (!done) continue;
    *progressed = true;
    const OpState* st = sl.op.state();
    Message view;
    view.tag = st->sender_tag;
    // OnChunk reads the staging bytes, then the slot is re-posted (swap keeps the buffer).
    view.bytes.swap(sl.msg.bytes);
    view.bytes.resize(st->length);
    Status s = TypeOf(view.tag) == kChunk ? OnChunk(AttemptOf(view.tag), IndexOf(view.tag), view)
                                          : Malformed("unexpected bulk message type");
    view.bytes.resize(slot_bytes_);
    sl.msg.bytes.swap(view.bytes);
    KVC_RETURN_IF_ERROR(s);
    KVC_RETURN_IF_ERROR(PostSlot(sl));
  }
  return Status();
}

Status DecodeSession::MakeVisible(uint64_t attempt, size_t index) {
  Attempt& a = attempts_[attempt];
  // The staged bytes were copied into the reserved buffer on arrival; DEVICE_VISIBLE returns
  // the chunk's credit (0x06B) and, for a layer's last chunk, stages the layer.
  if (Status s = a.txn->MarkDeviceVisible(a.txn->plan().chunks[index].chunk_id); !s.ok())
    return AbortAttempt(attempt, s);
  KVC_RETURN_IF_ERROR(peer_->Send(Tag(kAck, attempt, index), {{&index, sizeof(index)}},
                                  After(opts_.peer_timeout), "sending ACK"));
  return FinishIfComplete(attempt);
}

Status DecodeSession::FinishIfComplete(uint64_t attempt) {
  Attempt& a = attempts_[attempt];
  if (a.finished || !a.txn) return Status();
  if (!a.txn->all_device_visible()) return Status();
  // Validate against what this destination reserved: its own tenant/request/epoch and ABI.
  const TransferPlan& p = a.txn->plan();
  TransferIdentity expected = {opts_.tenant,
                               opts_.request_id,
                               p.identity.generation,
                               attempt,
                               p.identity.source_worker_epoch,
                               opts_.destination_epoch,
                               "rsv:" + p.transfer_id};
  if (Status s = a.txn->Validate(expected, abi_.id); !s.ok()) return AbortAttempt(attempt, s);
  auto handle = a.txn->Publish();
  if (!handle.ok()) {  // a stale generation aborted the txn inside Publish
    if (handle.status().error() == ErrorCode::HANDOFF_STALE_GENERATION) ++late_rejected_;
    return AbortAttempt(attempt, handle.status());
  }
  if (Status s = a.txn->AdmitDecode(*handle); !s.ok()) return AbortAttempt(attempt, s);
  if (Status s = a.txn->AcknowledgeSourceRelease(p.identity.generation); !s.ok())
    return Internal("decode: source release after admission refused: " + s.message());
  a.published = true;
  published_attempt_ = attempt;
  return SendResult(attempt, Status());
}

Status DecodeSession::OnChunk(uint64_t attempt, uint64_t index, const Message& m) {
  ++chunks_received_;
  if (opts_.fault.kind == FaultSpec::Kind::kKillDecode && chunks_received_ >= opts_.fault.chunk)
    raise(SIGKILL);
  if (opts_.fault.kind == FaultSpec::Kind::kHangDecode && chunks_received_ >= opts_.fault.chunk)
    while (true) pause();  // hung: alive, never answers (the peer's deadlines must fire)
  auto it = attempts_.find(attempt);
  if (it == attempts_.end() || !it->second.txn)
    return Malformed("chunk for attempt " + std::to_string(attempt) + " without a reservation");
  Attempt& a = it->second;
  TransferTxn& txn = *a.txn;
  if (m.bytes.size() < sizeof(ChunkHeader)) return Malformed("chunk shorter than its header");
  ChunkHeader h;
  std::memcpy(&h, m.bytes.data(), sizeof(h));
  if (h.magic != kChunkMagic || h.version != 1 || h.attempt != attempt || h.chunk_index != index ||
      index >= txn.plan().chunks.size() || h.payload_bytes != m.bytes.size() - sizeof(ChunkHeader))
    return Malformed("chunk header does not match its tag or length (attempt " +
                     std::to_string(attempt) + ", index " + std::to_string(index) + ")");
  const ChunkSpec& spec = txn.plan().chunks[index];
  const uint8_t* payload = m.bytes.data() + sizeof(ChunkHeader);
  if (h.payload_bytes != spec.bytes)  // never copied: it would not fit its reserved place
    return AbortAttempt(
        attempt,
        ViolationStatus(ErrorCode::HANDOFF_CHUNK_BYTES_MISMATCH,
                        "chunk " + base::QuoteClipped(spec.chunk_id) + " arrived with " +
                            std::to_string(h.payload_bytes) + " B, the manifest declares " +
                            std::to_string(spec.bytes) + " B"));
  if (txn.state() == TxnState::kAborted || txn.state() == TxnState::kPublished) {
    // A completion after the attempt ended: fenced, no effect (counted, not acknowledged).
    ++late_rejected_;
    return Status();
  }
  const auto state = txn.chunk_state(spec.chunk_id);
  const bool fresh = state == ChunkState::kDeclared;
  if (fresh) {
    // 0x0FE: the write is authorized against the capability before its bytes are accepted.
    if (Status s = AuthorizeChunkWrite(a, spec); !s.ok()) return AbortAttempt(attempt, s);
    if (Status s = txn.AcquireCredit(spec.chunk_id); !s.ok()) return AbortAttempt(attempt, s);
  }
  if (Status s = txn.Send(spec.chunk_id, h.send_time_us, a.ready_us.at(spec.layer)); !s.ok())
    return AbortAttempt(attempt, s);
  const std::string sum =
      opts_.checksum
          ? Sha256Hex(std::string_view(reinterpret_cast<const char*>(payload), h.payload_bytes))
          : "";
  if (Status s = txn.Receive(spec.chunk_id, sum); !s.ok()) return AbortAttempt(attempt, s);
  if (!fresh) {
    // An idempotent retry (same bytes): re-acknowledge once it is visible.
    ++duplicates_;
    if (txn.chunk_state(spec.chunk_id) == ChunkState::kDeviceVisible)
      return peer_->Send(Tag(kAck, attempt, index), {{&index, sizeof(index)}},
                         After(opts_.peer_timeout), "sending ACK");
    return Status();
  }
  // The copy from staging into the reserved destination buffer.
  std::memcpy(a.dest.data() + a.offsets[index], payload, h.payload_bytes);
  if (opts_.fault.kind == FaultSpec::Kind::kCreditStarve) return Status();  // never visible
  if (opts_.fault.kind == FaultSpec::Kind::kCreditStall) {
    held_.push_back({attempt, index});
    // The copy engine is stalled until the window is exhausted (the next chunk cannot fit).
    uint64_t smallest = UINT64_MAX;
    for (const auto& c : txn.plan().chunks)
      if (txn.chunk_state(c.chunk_id) == ChunkState::kDeclared)
        smallest = std::min(smallest, c.bytes);
    const bool exhausted =
        smallest == UINT64_MAX || credits_.in_flight() + smallest > credits_.capacity();
    if (!exhausted) return Status();
    events_.push_back({{"credit_stall",
                        {{"in_flight", credits_.in_flight()}, {"capacity", credits_.capacity()}}}});
    std::this_thread::sleep_for(milliseconds(100));
    std::vector<Held> flush;
    flush.swap(held_);
    for (const Held& x : flush) KVC_RETURN_IF_ERROR(MakeVisible(x.attempt, x.index));
    return Status();
  }
  return MakeVisible(attempt, index);
}

DecodeResult DecodeSession::Run() {
  DecodeResult res;
  nlohmann::json& rep = res.report;
  rep = {{"role", "decode"}, {"fault", opts_.fault.text}};
  auto finish = [&](Status s) {
    // Whatever happened, nothing unpublished survives: abort every open attempt.
    for (auto& [n, a] : attempts_)
      if (a.txn && a.txn->state() != TxnState::kPublished && a.txn->state() != TxnState::kAborted) {
        (void)a.txn->Abort(s.ok() ? "prefill finished without completing this attempt"
                                  : s.message());
        std::vector<uint8_t>().swap(a.dest);
      }
    if (published_attempt_ && s.error() != ErrorCode::PD_PEER_LOST &&
        s.error() != ErrorCode::PD_PEER_TIMEOUT && !s.ok())
      published_attempt_.reset();  // a protocol breach after publication: report the failure
    if (published_attempt_ && !s.ok()) {
      rep["peer_lost_after_publication"] = StatusJson(s);
      s = Status();
    }
    if (!published_attempt_ && s.ok())
      s = ViolationStatus(ErrorCode::PD_ATTEMPTS_EXHAUSTED, "no attempt was published");
    if (!published_attempt_ && s.error() == ErrorCode::PD_ATTEMPTS_EXHAUSTED) {
      // The last attempt's reason (its RESULT error, or its refused reservation) is the root
      // cause: the request failed because its last attempt did.
      for (auto& ev : events_) {
        if (ev.contains("result") && ev["result"].contains("error"))
          s = StatusFromJson(ev["result"]["error"], "result: error", "aborted");
        else if (ev.contains("reply") && !ev["reply"].value("ok", true))
          s = StatusFromJson(ev["reply"], "reservation reply", "reservation refused");
      }
    }
    res.status = s;
    rep["outcome"] = published_attempt_ ? "published" : "failed";
    if (!s.ok()) rep["error"] = StatusJson(s);
    rep["events"] = events_;
    rep["chunks_received"] = chunks_received_;
    rep["duplicates_absorbed"] = duplicates_;
    rep["late_completions_rejected"] = late_rejected_;
    rep["credit"] = {{"capacity", credits_.capacity()},
                     {"high_water", credits_.high_water()},
                     {"in_flight_end", credits_.in_flight()}};
    rep["pool"] = {{"capacity", pool_.capacity()},
                   {"free", pool_.free_blocks()},
                   {"unpublished", pool_.unpublished()},
                   {"decode_owned", pool_.decode_owned()}};
    uint64_t retries = 0;
    for (auto& [n, a] : attempts_)
      if (a.txn) retries += a.txn->retries();
    rep["txn_retries"] = retries;
    rep["publications"] = directory_.publications();
    rep["capability"] = {{"required", !opts_.capability.key.empty()},
                         {"authorized", cap_authorized_},
                         {"denied", cap_denied_}};
    if (published_attempt_) {
      Attempt& a = attempts_[*published_attempt_];
      rep["published_attempt"] = *published_attempt_;
      rep["published_generation"] = a.txn->plan().identity.generation;
      res.plan = a.txn->plan();
      res.offsets = a.offsets;
      res.bytes = std::move(a.dest);
      res.payload = a.payload;
      if (const PublishedHandle* h = directory_.Lookup(a.txn->plan().identity.request_id))
        res.published = *h;
      else
        res.status = Internal("decode: the published attempt has no directory entry");
    }
    const bool leak = credits_.in_flight() != 0 || pool_.unpublished() != 0;
    rep["leak_free"] = !leak;
    if (leak && res.status.ok())
      res.status = Internal("decode: credits or unpublished blocks leaked");
    if (peer_) {
      for (Slot& sl : slots_) peer_->Cancel(sl.op);
      (void)peer_->Close(After(milliseconds(300)));
    }
    return res;
  };
  if (!opts_.warm_prefix_handle.empty()) {
    if (Status s =
            directory_.PublishVisiblePrefix(opts_.warm_prefix_handle, opts_.warm_prefix_tokens);
        !s.ok())
      return finish(s);
    rep["warm_prefix"] = {{"handle", opts_.warm_prefix_handle},
                          {"tokens", opts_.warm_prefix_tokens}};
  }
  {
    auto peer = Establish(opts_, /*listen=*/true);
    if (!peer.ok()) return finish(peer.status());
    peer_ = std::move(*peer);
  }
  Message m;
  Deadline idle = After(opts_.peer_timeout);
  const size_t max_msg = kMaxControl;
  while (true) {
    bool progressed = false;
    if (Status s = PollSlots(&progressed); !s.ok()) return finish(s);
    if (progressed) idle = After(opts_.peer_timeout);
    auto got =
        peer_->TryRecv(0, kBulkBit, max_msg, &m, After(opts_.peer_timeout), "a prefill message");
    if (!got.ok()) return finish(got.status());
    if (!*got) {
      if (Clock::now() >= idle)
        return finish(Status(StatusCode::kDeadlineExceeded,
                             "the prefill worker sent nothing for " +
                                 std::to_string(opts_.peer_timeout.count()) + " ms",
                             ErrorCode::PD_PEER_TIMEOUT));
      continue;
    }
    idle = After(opts_.peer_timeout);
    const uint64_t type = TypeOf(m.tag), attempt = AttemptOf(m.tag);
    Status s;
    switch (type) {
      case kManifest:
        s = OnManifest(attempt, m);
        break;
      case kAbort: {
        auto j = ParseJson(m, "abort");
        const Status why =
            j.ok() ? StatusFromJson(*j, "abort", "aborted by the prefill worker") : j.status();
        events_.push_back({{"attempt", attempt}, {"abort_from_prefill", StatusJson(why)}});
        s = attempts_.count(attempt) ? AbortAttempt(attempt, why) : Status();
        break;
      }
      case kFin:
        return finish(Status());
      default:
        s = Malformed("unexpected message type " + std::to_string(type) + " from prefill");
    }
    if (!s.ok()) return finish(s);
  }
}

}  // namespace

uint64_t SteadyNowUs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
          .count());
}

Status CheckFaultTarget(const FaultSpec& f, uint64_t chunks) {
  using K = FaultSpec::Kind;
  const bool index = f.kind == K::kDrop || f.kind == K::kDuplicate || f.kind == K::kCorrupt ||
                     f.kind == K::kDelay || f.kind == K::kCapRegion;
  const bool count = f.kind == K::kKillDecode || f.kind == K::kHangDecode;
  if (index && f.chunk >= chunks)
    return InvalidArgument("--fault '" + f.text + "': chunk " + std::to_string(f.chunk) +
                           " does not exist; the plan has chunks 0.." + std::to_string(chunks - 1) +
                           " (" + std::to_string(chunks) + ")");
  if (count && f.chunk > chunks)
    return InvalidArgument("--fault '" + f.text + "': the decode worker would stop after " +
                           std::to_string(f.chunk) + " chunks, but the plan has only " +
                           std::to_string(chunks));
  return Status();
}

StatusOr<FaultSpec> ParseFault(const std::string& s) {
  FaultSpec f;
  f.text = s;
  std::vector<std::string> parts;
  size_t at = 0;
  while (true) {
    size_t c = s.find(':', at);
    parts.push_back(s.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  auto num = [&](size_t i) -> StatusOr<uint64_t> {
    if (i >= parts.size() || parts[i].empty() ||
        parts[i].find_first_not_of("0123456789") != std::string::npos || parts[i].size() > 18)
      return InvalidArgument("--fault '" + s + "': argument " + std::to_string(i) +
                             " must be a non-negative integer of at most 18 digits");
    return std::stoull(parts[i]);
  };
  using K = FaultSpec::Kind;
  const std::string& k = parts[0];
  auto want = [&](size_t n) -> Status {
    if (parts.size() != n)
      return InvalidArgument("--fault '" + s + "': expected " + std::to_string(n - 1) +
                             " argument(s)");
    return Status();
  };
  if (k == "none") {
    KVC_RETURN_IF_ERROR(want(1));
  } else if (k == "drop" || k == "dup" || k == "corrupt" || k == "kill-decode" ||
             k == "hang-decode") {
    KVC_RETURN_IF_ERROR(want(2));
    KVC_ASSIGN_OR_RETURN(f.chunk, num(1));
    f.kind = k == "drop"          ? K::kDrop
             : k == "dup"         ? K::kDuplicate
             : k == "corrupt"     ? K::kCorrupt
             : k == "kill-decode" ? K::kKillDecode
                                  : K::kHangDecode;
  } else if (k == "delay") {
    KVC_RETURN_IF_ERROR(want(3));
    KVC_ASSIGN_OR_RETURN(f.chunk, num(1));
    KVC_ASSIGN_OR_RETURN(f.ms, num(2));
    if (f.ms > kMaxWaitMs)
      return InvalidArgument("--fault '" + s + "': the delay must be at most " +
                             std::to_string(kMaxWaitMs) + " ms");
    f.kind = K::kDelay;
  } else if (k == "credit-window") {
    KVC_RETURN_IF_ERROR(want(2));
    KVC_ASSIGN_OR_RETURN(f.bytes, num(1));
    f.kind = K::kCreditWindow;
  } else if (k == "cap-region") {
    KVC_RETURN_IF_ERROR(want(2));
    KVC_ASSIGN_OR_RETURN(f.chunk, num(1));
    f.kind = K::kCapRegion;
  } else if (k == "cap-forged" || k == "cap-expired" || k == "cap-replay" || k == "cap-bytes") {
    KVC_RETURN_IF_ERROR(want(1));
    f.kind = k == "cap-forged"    ? K::kCapForged
             : k == "cap-expired" ? K::kCapExpired
             : k == "cap-replay"  ? K::kCapReplay
                                  : K::kCapBytes;
  } else if (k == "reorder" || k == "stale-reroute" || k == "credit-stall" ||
             k == "credit-starve" || k == "kill-prefill-after-publish") {
    KVC_RETURN_IF_ERROR(want(1));
    f.kind = k == "reorder"         ? K::kReorder
             : k == "stale-reroute" ? K::kStaleReroute
             : k == "credit-stall"  ? K::kCreditStall
             : k == "credit-starve" ? K::kCreditStarve
                                    : K::kKillPrefill;
  } else {
    return InvalidArgument(
        "--fault '" + s +
        "': expected none, drop:K, dup:K, reorder, delay:K:MS, corrupt:K, stale-reroute, "
        "credit-window:BYTES, credit-stall, credit-starve, kill-decode:K, hang-decode:K, "
        "kill-prefill-after-publish, cap-forged, cap-expired, cap-replay, cap-region:K or "
        "cap-bytes");
  }
  return f;
}

Status LayoutSource(SourceKv* src) {
  uint64_t total = 0;
  src->offsets.clear();
  for (const auto& c : src->chunks) {
    auto start = CheckedAdd(total, kChunkHeaderSlot);
    auto end = start ? CheckedAdd(*start, c.bytes) : std::nullopt;
    if (!end)
      return ViolationStatus(ErrorCode::INPUT_ARITHMETIC_OVERFLOW, "source chunk bytes overflow");
    src->offsets.push_back(*start);
    total = *end;
  }
  if (src->bytes.empty()) src->bytes.resize(total);
  if (total != src->bytes.size())
    return InvalidArgument("source: chunks and header slots cover " + std::to_string(total) +
                           " B but " + std::to_string(src->bytes.size()) + " B are offered");
  if (src->layer_ready_us.size() != src->num_layers)
    return InvalidArgument("source: one K/V-ready time per layer is required");
  return Status();
}

uint64_t PayloadBytes(const SourceKv& src) {
  uint64_t n = 0;
  for (const auto& c : src.chunks) n += c.bytes;
  return n;
}

PrefillResult RunPrefillWorker(const WorkerOptions& opts, SourceKv source) {
  PrefillSession s(opts, std::move(source));
  return s.Run();
}

DecodeResult RunDecodeWorker(const WorkerOptions& opts, const lifecycle::CacheAbi& abi) {
  DecodeSession s(opts, abi);
  return s.Run();
}

RawResult RunRawSender(const WorkerOptions& opts, const SourceKv& src) {
  RawResult r;
  auto peer = Establish(opts, /*listen=*/false);
  if (!peer.ok()) {
    r.status = peer.status();
    return r;
  }
  UcxPeer& p = **peer;
  for (const auto& c : src.chunks)
    if (c.bytes != src.chunks.front().bytes) {
      r.status = InvalidArgument("raw benchmark: every message must have the same size");
      return r;
    }
  uint64_t hdr[2] = {PayloadBytes(src), src.chunks.size()};
  if (r.status = p.Send(Tag(kManifest, 0, 0), {{hdr, sizeof(hdr)}}, After(opts.peer_timeout),
                        "raw header");
      !r.status.ok())
    return r;
  // The receiver answers once its destination is allocated and every receive is posted.
  if (auto ready =
          p.Recv(Tag(kReply, 0, 0), ~uint64_t{0}, 64, After(opts.peer_timeout), "raw ready");
      !ready.ok()) {
    r.status = ready.status();
    return r;
  }
  // Same message sizes and the same byte window as the protocol (bounded by send completion).
  const auto t0 = Clock::now();
  std::deque<std::pair<Pending, uint64_t>> inflight;
  uint64_t in_flight = 0;
  auto retire = [&](bool block) -> Status {
    while (!inflight.empty()) {
      KVC_ASSIGN_OR_RETURN(bool done, p.Test(inflight.front().first));
      if (!done) {
        if (!block) return Status();
        KVC_RETURN_IF_ERROR(p.Wait(inflight.front().first, After(opts.peer_timeout), "raw send"));
      }
      in_flight -= inflight.front().second;
      inflight.pop_front();
    }
    return Status();
  };
  for (size_t i = 0; i < src.chunks.size() && r.status.ok(); ++i) {
    const uint64_t n = src.chunks[i].bytes;
    while (in_flight + n > opts.credit_bytes && !inflight.empty() && r.status.ok()) {
      r.status = p.Wait(inflight.front().first, After(opts.peer_timeout), "raw send");
      in_flight -= inflight.front().second;
      inflight.pop_front();
    }
    if (!r.status.ok()) break;
    auto op = p.SendNb(Tag(kRawData, 0, i),
                       {{src.bytes.data() + src.offsets[i], static_cast<size_t>(n)}});
    if (!op.ok()) {
      r.status = op.status();
      break;
    }
    inflight.emplace_back(std::move(*op), n);
    in_flight += n;
  }
  if (r.status.ok()) r.status = retire(true);
  if (r.status.ok()) {
    auto done = p.Recv(Tag(kRawDone, 0, 0), ~uint64_t{0}, 64, After(opts.peer_timeout), "raw done");
    r.status = done.status();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  (void)p.Close(After(milliseconds(300)));
  return r;
}

RawResult RunRawReceiver(const WorkerOptions& opts) {
  RawResult r;
  auto peer = Establish(opts, /*listen=*/true);
  if (!peer.ok()) {
    r.status = peer.status();
    return r;
  }
  UcxPeer& p = **peer;
  // A 16-byte header (total bytes, message count) precedes the data.
  auto hdr = p.Recv(Tag(kManifest, 0, 0), ~uint64_t{0}, 64, After(opts.peer_timeout), "raw header");
  if (!hdr.ok() || hdr->bytes.size() != 16) {
    r.status = hdr.ok() ? Malformed("raw header") : hdr.status();
    return r;
  }
  uint64_t total = 0, chunks = 0;
  std::memcpy(&total, hdr->bytes.data(), 8);
  std::memcpy(&chunks, hdr->bytes.data() + 8, 8);
  // Every message pre-posted straight into its place in the destination (the best case).
  std::vector<uint8_t> dest(total);
  const uint64_t per = chunks ? (total + chunks - 1) / chunks : 0;
  std::vector<Pending> ops;
  const auto t0 = Clock::now();
  for (uint64_t i = 0, off = 0; i < chunks; ++i, off += per) {
    const size_t cap = static_cast<size_t>(std::min<uint64_t>(per, total - off));
    auto op = p.RecvNb(Tag(kRawData, 0, i), ~uint64_t{0}, dest.data() + off, cap);
    if (!op.ok()) {
      r.status = op.status();
      return r;
    }
    ops.push_back(std::move(*op));
  }
  const uint64_t ready = 1;
  if (r.status = p.Send(Tag(kReply, 0, 0), {{&ready, sizeof(ready)}}, After(opts.peer_timeout),
                        "raw ready");
      !r.status.ok())
    return r;
  for (Pending& op : ops)
    if (r.status = p.Wait(op, After(opts.peer_timeout), "raw data"); !r.status.ok()) return r;
  const uint64_t one = 1;
  r.status =
      p.Send(Tag(kRawDone, 0, 0), {{&one, sizeof(one)}}, After(opts.peer_timeout), "raw done");
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  (void)p.Close(After(milliseconds(300)));
  return r;
}

}  // namespace kvc::handoff::transport
