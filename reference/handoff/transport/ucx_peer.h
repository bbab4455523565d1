// UcxPeer: one UCP context + worker + endpoint to one remote worker, with bounded waits.
//
// A thin wrapper over UCX's UCP tag API (ucp_tag_send_nbx / ucp_tag_probe_nb +
// ucp_tag_msg_recv_nbx), the layer NIXL builds on. Every blocking call takes a deadline and
// returns DeadlineExceeded (code PD_PEER_TIMEOUT) when it runs out; on tcp an endpoint error (the
// peer closed or died: UCP_ERR_HANDLING_MODE_PEER) fails every pending and later operation with
// Unavailable (code PD_PEER_LOST). UCX 1.13's shm transports have no peer failure handler, so on
// shm the endpoint uses error mode NONE and a dead peer surfaces as PD_PEER_TIMEOUT. Nothing here
// hangs: an operation that times out is cancelled and, if UCX still owns it, its state is parked
// until the worker is destroyed.
//
// Tags: the caller's 64-bit tag; receives match (tag & mask) == (want & mask).
// Transports: kTcp restricts UCX to "tcp" (works across hosts), kShm to "sm" (posix/sysv shared
// memory + CMA; one host only). Both are set through ucp_config_modify("TLS"), which overrides
// the UCX_TLS environment variable.
//
// Ownership: UcxPeer owns its context, worker and endpoint; buffers passed to SendNb/RecvNb are
// borrowed and must stay valid until the Pending completes (or the peer is destroyed).
// Thread safety: none (UCS_THREAD_MODE_SINGLE); one thread drives one peer.
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_UCX_PEER_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_UCX_PEER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "reference/base/status.h"

namespace kvc::handoff::transport {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;
inline Deadline After(std::chrono::milliseconds ms) { return Clock::now() + ms; }

// UCX's library constructor catches SIGHUP as its debug signal (UCX_DEBUG_SIGNO) in every
// process that links it, over whatever the process inherited: a hangup then interrupted
// blocking reads and was otherwise ignored, and `nohup` could not be told from no nohup (probe
// 79). Gives SIGHUP back the disposition the process had before UCX loaded (SIG_DFL, or SIG_IGN
// under nohup). Call once, early in main; not thread-safe.
void RestoreInheritedHangupDisposition();

enum class UcxTransport { kTcp, kShm };
StatusOr<UcxTransport> ParseUcxTransport(std::string_view s);  // "tcp" | "shm"
std::string_view UcxTransportName(UcxTransport t);

// One contiguous piece of an outgoing message (the message is the concatenation).
struct SendPart {
  const void* data = nullptr;
  size_t size = 0;
};

// Completion state of one non-blocking operation. Owned by the caller through Pending.
struct OpState {
  bool done = false;
  int status = 0;  // ucs_status_t
  uint64_t sender_tag = 0;
  size_t length = 0;          // received bytes
  std::vector<SendPart> iov;  // kept alive for UCX's IOV datatype
  void* request = nullptr;    // UCX request while in flight
};

class UcxPeer;
// A non-blocking operation in flight; completes through UcxPeer::Wait or Test.
class Pending {
 public:
  Pending() = default;
  bool valid() const { return state_ != nullptr; }
  const OpState* state() const { return state_.get(); }

 private:
  friend class UcxPeer;
  std::unique_ptr<OpState> state_;
};

struct Message {
  uint64_t tag = 0;
  std::vector<uint8_t> bytes;
};

class UcxPeer {
 public:
  static StatusOr<std::unique_ptr<UcxPeer>> Create(UcxTransport transport);
  ~UcxPeer();
  UcxPeer(const UcxPeer&) = delete;
  UcxPeer& operator=(const UcxPeer&) = delete;

  UcxTransport transport() const { return transport_; }
  // This worker's packed UCP address (to give to the peer over the bootstrap socket).
  StatusOr<std::string> LocalAddress() const;
  // Creates the endpoint to the peer's packed address (error handling mode PEER).
  Status Connect(const std::string& remote_address);

  // Starts a send of the concatenated parts under `tag`.
  StatusOr<Pending> SendNb(uint64_t tag, std::vector<SendPart> parts);
  // Starts a receive into buf[0, cap) of the next message matching (tag, mask).
  StatusOr<Pending> RecvNb(uint64_t tag, uint64_t mask, void* buf, size_t cap);
  // Progresses once and reports whether `p` finished; a finished op with an error status
  // returns that error (the op is consumed either way once done).
  StatusOr<bool> Test(Pending& p);
  // Progresses until `p` finishes or the deadline passes (then it is cancelled).
  Status Wait(Pending& p, Deadline deadline, std::string_view what);

  // Cancels an unfinished operation (e.g. a pre-posted receive nobody will fill); UCX's state
  // is parked if it does not complete promptly. No-op for finished or empty operations.
  void Cancel(Pending& p);

  // Blocking conveniences.
  Status Send(uint64_t tag, std::vector<SendPart> parts, Deadline deadline, std::string_view what);
  // Receives the next message whose tag matches (tag, mask), whatever its length (probe, then
  // a receive of exactly that length). Fails when it is longer than max_bytes.
  StatusOr<Message> Recv(uint64_t tag, uint64_t mask, size_t max_bytes, Deadline deadline,
                         std::string_view what);
  // Non-blocking probe: returns false when no matching message waits, else receives it
  // (whole, bounded by the deadline) into `out` and returns true.
  StatusOr<bool> TryRecv(uint64_t tag, uint64_t mask, size_t max_bytes, Message* out,
                         Deadline deadline, std::string_view what);
  // Like TryRecv, into caller memory buf[0, cap): a longer message is PD_MESSAGE_MALFORMED.
  StatusOr<bool> TryRecvInto(uint64_t tag, uint64_t mask, void* buf, size_t cap,
                             uint64_t* sender_tag, size_t* length, Deadline deadline,
                             std::string_view what);
  // One ucp_worker_progress call; returns the number of events it processed.
  unsigned Progress();

  // Flushes and closes the endpoint, bounded by the deadline (forced close after it).
  Status Close(Deadline deadline);
  // True once the endpoint's error callback fired (the peer is gone).
  bool peer_failed() const { return peer_failed_; }
  std::string peer_error() const { return peer_error_; }

 private:
  explicit UcxPeer(UcxTransport t) : transport_(t) {}
  Status Fail(std::string_view what, int ucs_status) const;
  Status PeerGone(std::string_view what) const;
  void Park(std::unique_ptr<OpState> s);
  static void OnEpError(void* arg, void* ep, int status);

  UcxTransport transport_;
  void* context_ = nullptr;  // ucp_context_h
  void* worker_ = nullptr;   // ucp_worker_h
  void* ep_ = nullptr;       // ucp_ep_h
  bool peer_failed_ = false;
  std::string peer_error_;
  std::vector<std::unique_ptr<OpState>> parked_;  // timed-out ops UCX may still complete
};

}  // namespace kvc::handoff::transport

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_UCX_PEER_H_
