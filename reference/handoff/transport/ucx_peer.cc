// UcxPeer: UCP context, worker and endpoint with deadline-bounded tag operations.
#include "reference/handoff/transport/ucx_peer.h"

#include <ucp/api/ucp.h>
#include <ucs/debug/debug.h>

#include <csignal>
#include <cstring>
#include <thread>

namespace kvc::handoff::transport {
namespace {

ucp_context_h Ctx(void* p) { return static_cast<ucp_context_h>(p); }
ucp_worker_h Wrk(void* p) { return static_cast<ucp_worker_h>(p); }
ucp_ep_h Ep(void* p) { return static_cast<ucp_ep_h>(p); }

void SendDone(void* request, ucs_status_t status, void* user_data) {
  auto* s = static_cast<OpState*>(user_data);
  s->status = status;
  s->done = true;
}

void RecvDone(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info,
              void* user_data) {
  auto* s = static_cast<OpState*>(user_data);
  s->status = status;
  if (info != nullptr) {
    s->sender_tag = info->sender_tag;
    s->length = info->length;
  }
  s->done = true;
}

}  // namespace

StatusOr<UcxTransport> ParseUcxTransport(std::string_view s) {
  if (s == "tcp") return UcxTransport::kTcp;
  if (s == "shm") return UcxTransport::kShm;
  return InvalidArgument("--transport: '" + std::string(s) + "'; expected tcp or shm");
}

void RestoreInheritedHangupDisposition() {
  // Only when a handler is installed (exec resets handlers, so only a library constructor can
  // have): UCX warns, on standard output, when asked to give back a signal it did not take
  // (UCX_DEBUG_SIGNO set to another signal; probe 81).
  struct sigaction cur {};
  if (sigaction(SIGHUP, nullptr, &cur) != 0 || cur.sa_handler == SIG_DFL ||
      cur.sa_handler == SIG_IGN)
    return;
  ucs_debug_disable_signal(SIGHUP);
}

std::string_view UcxTransportName(UcxTransport t) {
  return t == UcxTransport::kTcp ? "tcp" : "shm";
}

Status UcxPeer::Fail(std::string_view what, int ucs_status) const {
  return Status(
      StatusCode::kUnavailable,
      "ucx: " + std::string(what) + ": " + ucs_status_string(static_cast<ucs_status_t>(ucs_status)),
      ErrorCode::PD_TRANSPORT_ERROR);
}

Status UcxPeer::PeerGone(std::string_view what) const {
  return Status(StatusCode::kUnavailable,
                "ucx: " + std::string(what) + ": the peer worker is gone (" + peer_error_ + ")",
                ErrorCode::PD_PEER_LOST);
}

void UcxPeer::OnEpError(void* arg, void* ep, int status) {
  auto* self = static_cast<UcxPeer*>(arg);
  self->peer_failed_ = true;
  self->peer_error_ = ucs_status_string(static_cast<ucs_status_t>(status));
}

StatusOr<std::unique_ptr<UcxPeer>> UcxPeer::Create(UcxTransport transport) {
  std::unique_ptr<UcxPeer> p(new UcxPeer(transport));
  ucp_config_t* config = nullptr;
  if (ucs_status_t st = ucp_config_read(nullptr, nullptr, &config); st != UCS_OK)
    return p->Fail("ucp_config_read", st);
  const char* tls = transport == UcxTransport::kTcp ? "tcp" : "sm";
  ucs_status_t st = ucp_config_modify(config, "TLS", tls);
  if (st == UCS_OK) st = ucp_config_modify(config, "WARN_UNUSED_ENV_VARS", "n");
  if (st != UCS_OK) {
    ucp_config_release(config);
    return p->Fail("ucp_config_modify TLS", st);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h ctx = nullptr;
  st = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (st != UCS_OK) return p->Fail(std::string("ucp_init with TLS=") + tls, st);
  p->context_ = ctx;
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h w = nullptr;
  if (st = ucp_worker_create(ctx, &wp, &w); st != UCS_OK) return p->Fail("ucp_worker_create", st);
  p->worker_ = w;
  return p;
}

UcxPeer::~UcxPeer() {
  if (ep_ != nullptr) (void)Close(After(std::chrono::milliseconds(200)));
  if (worker_ != nullptr) ucp_worker_destroy(Wrk(worker_));
  parked_.clear();  // no callback can fire once the worker is gone
  if (context_ != nullptr) ucp_cleanup(Ctx(context_));
}

StatusOr<std::string> UcxPeer::LocalAddress() const {
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucs_status_t st = ucp_worker_get_address(Wrk(worker_), &addr, &len); st != UCS_OK)
    return Fail("ucp_worker_get_address", st);
  std::string out(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(Wrk(worker_), addr);
  return out;
}

Status UcxPeer::Connect(const std::string& remote_address) {
  if (ep_ != nullptr) return FailedPrecondition("ucx: endpoint already connected");
  if (remote_address.empty())
    return Status(StatusCode::kInvalidArgument, "ucx: empty remote worker address",
                  ErrorCode::PD_BOOTSTRAP_FAILED);
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(remote_address.data());
  // UCX 1.13's shared-memory transports have no peer failure handler, so PEER mode would
  // leave shm without an active-message lane; on shm a dead peer is detected by our deadlines.
  ep.err_mode =
      transport_ == UcxTransport::kTcp ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
  ep.err_handler.cb = [](void* arg, ucp_ep_h h, ucs_status_t status) {
    UcxPeer::OnEpError(arg, h, status);
  };
  ep.err_handler.arg = this;
  ucp_ep_h h = nullptr;
  if (ucs_status_t st = ucp_ep_create(Wrk(worker_), &ep, &h); st != UCS_OK)
    return Fail("ucp_ep_create", st);
  ep_ = h;
  return Status();
}

unsigned UcxPeer::Progress() { return ucp_worker_progress(Wrk(worker_)); }

void UcxPeer::Park(std::unique_ptr<OpState> s) { parked_.push_back(std::move(s)); }

StatusOr<Pending> UcxPeer::SendNb(uint64_t tag, std::vector<SendPart> parts) {
  if (ep_ == nullptr) return FailedPrecondition("ucx: send before Connect");
  if (peer_failed_) return PeerGone("send");
  Pending p;
  p.state_ = std::make_unique<OpState>();
  OpState* s = p.state_.get();
  s->iov = std::move(parts);
  static_assert(sizeof(SendPart) == sizeof(ucp_dt_iov_t));
  ucp_request_param_t rp{};
  rp.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  rp.cb.send = SendDone;
  rp.user_data = s;
  const void* buffer = nullptr;
  size_t count = 0;
  if (s->iov.size() == 1) {
    rp.datatype = ucp_dt_make_contig(1);
    buffer = s->iov[0].data;
    count = s->iov[0].size;
  } else {
    rp.datatype = ucp_dt_make_iov();
    buffer = s->iov.data();  // SendPart has ucp_dt_iov_t's layout {void*, size_t}
    count = s->iov.size();
  }
  ucs_status_ptr_t r = ucp_tag_send_nbx(Ep(ep_), buffer, count, tag, &rp);
  if (r == nullptr) {
    s->done = true;
    s->status = UCS_OK;
  } else if (UCS_PTR_IS_ERR(r)) {
    if (peer_failed_) return PeerGone("send");
    return Fail("ucp_tag_send_nbx", UCS_PTR_STATUS(r));
  } else {
    s->request = r;
  }
  return p;
}

StatusOr<Pending> UcxPeer::RecvNb(uint64_t tag, uint64_t mask, void* buf, size_t cap) {
  Pending p;
  p.state_ = std::make_unique<OpState>();
  OpState* s = p.state_.get();
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.recv = RecvDone;
  rp.user_data = s;
  // No immediate completion: a message that is already waiting still completes through the
  // callback, which reports its tag and length (recv_info on the immediate path proved
  // unreliable for eager unexpected messages under load: tag 0 was seen).
  ucp_tag_recv_info_t imm{};
  rp.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  rp.recv_info.tag_info = &imm;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(Wrk(worker_), buf, cap, tag, mask, &rp);
  if (UCS_PTR_IS_ERR(r)) return Fail("ucp_tag_recv_nbx", UCS_PTR_STATUS(r));
  if (r == nullptr) {
    s->done = true;
    s->status = UCS_OK;
    s->sender_tag = imm.sender_tag;
    s->length = imm.length;
  } else {
    s->request = r;
  }
  return p;
}

StatusOr<bool> UcxPeer::Test(Pending& p) {
  if (!p.valid()) return FailedPrecondition("ucx: test of an empty operation");
  if (!p.state_->done) Progress();
  OpState* s = p.state_.get();
  if (!s->done) {
    if (peer_failed_ && s->request != nullptr) {
      // The error callback fired; UCX completes the op with an error on a later progress.
      Progress();
      if (!s->done) return false;
    } else {
      return false;
    }
  }
  if (s->request != nullptr) {
    ucp_request_free(s->request);
    s->request = nullptr;
  }
  if (s->status != UCS_OK) {
    if (peer_failed_ || s->status == UCS_ERR_CONNECTION_RESET ||
        s->status == UCS_ERR_ENDPOINT_TIMEOUT || s->status == UCS_ERR_UNREACHABLE) {
      if (!peer_failed_) {
        peer_failed_ = true;
        peer_error_ = ucs_status_string(static_cast<ucs_status_t>(s->status));
      }
      return PeerGone("operation");
    }
    if (s->status == UCS_ERR_MESSAGE_TRUNCATED)
      return Status(StatusCode::kInvalidArgument, "ucx: a message was longer than its buffer",
                    ErrorCode::PD_MESSAGE_MALFORMED);
    return Fail("operation completion", s->status);
  }
  return true;
}

Status UcxPeer::Wait(Pending& p, Deadline deadline, std::string_view what) {
  while (true) {
    KVC_ASSIGN_OR_RETURN(bool done, Test(p));
    if (done) return Status();
    if (Clock::now() >= deadline) {
      OpState* s = p.state_.get();
      if (s->request != nullptr) {
        ucp_request_cancel(Wrk(worker_), s->request);
        for (int i = 0; i < 1000 && !s->done; ++i) Progress();
        if (s->done) {
          ucp_request_free(s->request);
          s->request = nullptr;
        } else {
          ucp_request_free(s->request);  // freed by UCX when it completes
          Park(std::move(p.state_));
        }
      }
      if (peer_failed_) return PeerGone(what);
      return Status(StatusCode::kDeadlineExceeded,
                    "ucx: timed out waiting for " + std::string(what) +
                        " (the peer worker did not answer in time)",
                    ErrorCode::PD_PEER_TIMEOUT);
    }
  }
}

void UcxPeer::Cancel(Pending& p) {
  if (!p.valid() || p.state_->request == nullptr) return;
  OpState* s = p.state_.get();
  if (!s->done) {
    ucp_request_cancel(Wrk(worker_), s->request);
    for (int i = 0; i < 1000 && !s->done; ++i) Progress();
  }
  ucp_request_free(s->request);
  s->request = nullptr;
  if (!s->done) Park(std::move(p.state_));
}

Status UcxPeer::Send(uint64_t tag, std::vector<SendPart> parts, Deadline deadline,
                     std::string_view what) {
  KVC_ASSIGN_OR_RETURN(Pending p, SendNb(tag, std::move(parts)));
  return Wait(p, deadline, what);
}

StatusOr<bool> UcxPeer::TryRecvInto(uint64_t tag, uint64_t mask, void* buf, size_t cap,
                                    uint64_t* sender_tag, size_t* length, Deadline deadline,
                                    std::string_view what) {
  Progress();
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h msg = ucp_tag_probe_nb(Wrk(worker_), tag, mask, 1, &info);
  if (msg == nullptr) {
    if (peer_failed_) return PeerGone(what);
    return false;
  }
  // The message is dequeued now: it is received (or discarded into a scratch buffer).
  std::vector<uint8_t> scratch;
  void* dst = buf;
  const bool too_long = info.length > cap;
  if (too_long) {
    scratch.resize(info.length);
    dst = scratch.data();
  }
  Pending p;
  p.state_ = std::make_unique<OpState>();
  OpState* s = p.state_.get();
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  rp.cb.recv = RecvDone;
  rp.user_data = s;
  ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(Wrk(worker_), dst, info.length, msg, &rp);
  if (UCS_PTR_IS_ERR(r)) return Fail("ucp_tag_msg_recv_nbx", UCS_PTR_STATUS(r));
  if (r == nullptr) {
    s->done = true;
  } else {
    s->request = r;
  }
  KVC_RETURN_IF_ERROR(Wait(p, deadline, what));
  if (too_long)
    return Status(StatusCode::kInvalidArgument,
                  "ucx: " + std::string(what) + ": message of " + std::to_string(info.length) +
                      " B exceeds the " + std::to_string(cap) + " B limit",
                  ErrorCode::PD_MESSAGE_MALFORMED);
  *sender_tag = info.sender_tag;
  *length = info.length;
  return true;
}

StatusOr<bool> UcxPeer::TryRecv(uint64_t tag, uint64_t mask, size_t max_bytes, Message* out,
                                Deadline deadline, std::string_view what) {
  Progress();
  ucp_tag_recv_info_t info{};
  ucp_tag_message_h msg = ucp_tag_probe_nb(Wrk(worker_), tag, mask, 0, &info);
  if (msg == nullptr) {
    if (peer_failed_) return PeerGone(what);
    return false;
  }
  // Probed without removal: size the buffer, then receive it for real.
  out->bytes.resize(std::min(info.length, max_bytes));
  size_t len = 0;
  KVC_ASSIGN_OR_RETURN(bool got, TryRecvInto(tag, mask, out->bytes.data(), out->bytes.size(),
                                             &out->tag, &len, deadline, what));
  if (got) out->bytes.resize(len);
  return got;
}

StatusOr<Message> UcxPeer::Recv(uint64_t tag, uint64_t mask, size_t max_bytes, Deadline deadline,
                                std::string_view what) {
  Message m;
  while (true) {
    KVC_ASSIGN_OR_RETURN(bool got, TryRecv(tag, mask, max_bytes, &m, deadline, what));
    if (got) return m;
    if (Clock::now() >= deadline)
      return Status(StatusCode::kDeadlineExceeded,
                    "ucx: timed out waiting for " + std::string(what) +
                        " (the peer worker did not answer in time)",
                    ErrorCode::PD_PEER_TIMEOUT);
  }
}

Status UcxPeer::Close(Deadline deadline) {
  if (ep_ == nullptr) return Status();
  ucp_request_param_t rp{};
  rp.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  rp.flags = peer_failed_ ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  ucs_status_ptr_t r = ucp_ep_close_nbx(Ep(ep_), &rp);
  ep_ = nullptr;
  if (r == nullptr) return Status();
  if (UCS_PTR_IS_ERR(r)) return Fail("ucp_ep_close_nbx", UCS_PTR_STATUS(r));
  while (ucp_request_check_status(r) == UCS_INPROGRESS) {
    if (Clock::now() >= deadline) {
      // The peer did not acknowledge the flush: release the request (UCX frees it when the
      // worker is destroyed) so teardown does not trip over an unreleased request.
      ucp_request_free(r);
      return Status(StatusCode::kDeadlineExceeded, "ucx: endpoint close timed out",
                    ErrorCode::PD_PEER_TIMEOUT);
    }
    Progress();
  }
  ucp_request_free(r);
  return Status();
}

}  // namespace kvc::handoff::transport
