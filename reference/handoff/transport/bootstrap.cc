// Bootstrap: the TCP address exchange that lets two UCP workers create endpoints.
#include "reference/handoff/transport/bootstrap.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "reference/base/text_forms.h"

namespace kvc::handoff::transport {
namespace {

constexpr uint32_t kMaxBlob = 1u << 20;

Status SockError(const std::string& what) {
  return Status(StatusCode::kIoError, "bootstrap: " + what + ": " + std::strerror(errno),
                ErrorCode::PD_BOOTSTRAP_FAILED);
}

Status Timeout(const std::string& what) {
  return Status(StatusCode::kDeadlineExceeded,
                "bootstrap: timed out " + what + " (is the peer worker running?)",
                ErrorCode::PD_PEER_TIMEOUT);
}

StatusOr<sockaddr_in> ToAddr(const HostPort& hp) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(hp.port);
  const std::string host = hp.host == "localhost" ? "127.0.0.1" : hp.host;
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    return Status(StatusCode::kInvalidArgument,
                  "bootstrap: host " + base::SingleQuoteClipped(hp.host) +
                      " is not an IPv4 address or localhost",
                  ErrorCode::PD_BOOTSTRAP_FAILED);
  return a;
}

int MsLeft(Deadline d) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

StatusOr<HostPort> ParseHostPort(const std::string& s) {
  const size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size())
    return InvalidArgument("--bootstrap: " + base::SingleQuoteClipped(s) + "; expected HOST:PORT");
  const std::string port = s.substr(colon + 1);
  unsigned long v = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || v > 65535)
      return InvalidArgument("--bootstrap: port " + base::SingleQuoteClipped(port) +
                             " is not a number in [0, 65535]");
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  if (v > 65535)
    return InvalidArgument("--bootstrap: port " + base::SingleQuoteClipped(port) +
                           " exceeds 65535");
  // The host is checked here, before a worker loads its model: a name other than localhost is
  // bad usage, not a failed bootstrap (probe 37: example.com:80 was PD_BOOTSTRAP_FAILED, exit 1).
  HostPort hp{s.substr(0, colon), static_cast<uint16_t>(v)};
  in_addr ignored{};
  if (inet_pton(AF_INET, hp.host == "localhost" ? "127.0.0.1" : hp.host.c_str(), &ignored) != 1)
    return InvalidArgument("--bootstrap: host " + base::SingleQuoteClipped(hp.host) +
                           " is not an IPv4 address or localhost");
  return hp;
}

BootstrapSocket& BootstrapSocket::operator=(BootstrapSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    port_ = o.port_;
    o.fd_ = -1;
  }
  return *this;
}

BootstrapSocket::~BootstrapSocket() {
  if (fd_ >= 0) close(fd_);
}

StatusOr<BootstrapSocket> BootstrapSocket::Listen(const HostPort& hp) {
  KVC_ASSIGN_OR_RETURN(sockaddr_in a, ToAddr(hp));
  BootstrapSocket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.fd_ < 0) return SockError("socket");
  int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0)
    return SockError("bind " + hp.host + ":" + std::to_string(hp.port));
  if (listen(s.fd_, 4) != 0) return SockError("listen");
  socklen_t len = sizeof(a);
  if (getsockname(s.fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    return SockError("getsockname");
  s.port_ = ntohs(a.sin_port);
  return s;
}

StatusOr<BootstrapSocket> BootstrapSocket::Connect(const HostPort& hp, Deadline deadline) {
  KVC_ASSIGN_OR_RETURN(sockaddr_in a, ToAddr(hp));
  while (true) {
    BootstrapSocket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (s.fd_ < 0) return SockError("socket");
    if (connect(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
      s.port_ = hp.port;
      return s;
    }
    if (errno != ECONNREFUSED && errno != ENOENT && errno != ETIMEDOUT)
      return SockError("connect " + hp.host + ":" + std::to_string(hp.port));
    if (Clock::now() >= deadline)
      return Timeout("connecting to " + hp.host + ":" + std::to_string(hp.port));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status BootstrapSocket::WaitFd(short events, Deadline deadline, const char* what) {
  while (true) {
    pollfd p{fd_, events, 0};
    int r = poll(&p, 1, MsLeft(deadline));
    if (r > 0) return Status();
    if (r == 0) return Timeout(what);
    if (errno != EINTR) return SockError("poll");
  }
}

StatusOr<BootstrapSocket> BootstrapSocket::Accept(Deadline deadline) {
  KVC_RETURN_IF_ERROR(WaitFd(POLLIN, deadline, "waiting for the prefill worker to connect"));
  int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return SockError("accept");
  BootstrapSocket s(c);
  s.port_ = port_;
  return s;
}

Status BootstrapSocket::SendBlob(const std::string& blob, Deadline deadline) {
  if (blob.size() > kMaxBlob) return InvalidArgument("bootstrap: blob larger than 1 MiB");
  std::string buf(4, '\0');
  const uint32_t n = static_cast<uint32_t>(blob.size());
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  buf += blob;
  size_t off = 0;
  while (off < buf.size()) {
    KVC_RETURN_IF_ERROR(WaitFd(POLLOUT, deadline, "sending the worker address"));
    ssize_t w = send(fd_, buf.data() + off, buf.size() - off, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return SockError("send");
    }
    off += static_cast<size_t>(w);
  }
  return Status();
}

StatusOr<std::string> BootstrapSocket::RecvBlob(Deadline deadline) {
  auto read_exact = [&](char* dst, size_t n) -> Status {
    size_t off = 0;
    while (off < n) {
      KVC_RETURN_IF_ERROR(WaitFd(POLLIN, deadline, "reading the peer's worker address"));
      ssize_t r = recv(fd_, dst + off, n - off, 0);
      if (r == 0)
        return Status(StatusCode::kUnavailable,
                      "bootstrap: the peer closed the connection during the address exchange",
                      ErrorCode::PD_BOOTSTRAP_FAILED);
      if (r < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return SockError("recv");
      }
      off += static_cast<size_t>(r);
    }
    return Status();
  };
  unsigned char hdr[4];
  KVC_RETURN_IF_ERROR(read_exact(reinterpret_cast<char*>(hdr), 4));
  const uint32_t n =
      hdr[0] | (hdr[1] << 8) | (hdr[2] << 16) | (static_cast<uint32_t>(hdr[3]) << 24);
  if (n == 0 || n > kMaxBlob)
    return Status(
        StatusCode::kInvalidArgument,
        "bootstrap: peer announced a " + std::to_string(n) + " B address (expected 1 B .. 1 MiB)",
        ErrorCode::PD_BOOTSTRAP_FAILED);
  std::string out(n, '\0');
  KVC_RETURN_IF_ERROR(read_exact(out.data(), n));
  return out;
}

StatusOr<std::string> ExchangeBlobs(BootstrapSocket& conn, const std::string& mine,
                                    Deadline deadline) {
  KVC_RETURN_IF_ERROR(conn.SendBlob(mine, deadline));
  return conn.RecvBlob(deadline);
}

}  // namespace kvc::handoff::transport
