// Bootstrap: two workers exchange their UCP worker addresses over one TCP connection.
//
// The decode worker listens on HOST:PORT (PORT 0 picks a free port, reported by port()), the
// prefill worker connects (retrying refused connections until its deadline), and each side
// sends one length-prefixed blob (u32 little-endian length, then the bytes) and reads the
// other's. The socket carries nothing else: all protocol traffic goes over UCX. Every wait is
// bounded by a deadline (PD_PEER_TIMEOUT); socket errors are PD_BOOTSTRAP_FAILED.
// Ownership: BootstrapSocket owns its file descriptor (closed on destruction). Not thread-safe.
#ifndef KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_BOOTSTRAP_H_
#define KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_BOOTSTRAP_H_

#include <cstdint>
#include <string>

#include "reference/base/status.h"
#include "reference/handoff/transport/ucx_peer.h"

namespace kvc::handoff::transport {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};
// "HOST:PORT" with a numeric port; HOST is an IPv4 address or "localhost".
StatusOr<HostPort> ParseHostPort(const std::string& s);

class BootstrapSocket {
 public:
  BootstrapSocket() = default;
  explicit BootstrapSocket(int fd) : fd_(fd) {}
  BootstrapSocket(BootstrapSocket&& o) noexcept : fd_(o.fd_), port_(o.port_) { o.fd_ = -1; }
  BootstrapSocket& operator=(BootstrapSocket&& o) noexcept;
  ~BootstrapSocket();

  // A listening socket on hp (port 0: any free port).
  static StatusOr<BootstrapSocket> Listen(const HostPort& hp);
  // Connects to hp, retrying while the listener is not up yet, until the deadline.
  static StatusOr<BootstrapSocket> Connect(const HostPort& hp, Deadline deadline);
  // Accepts one connection (listening socket only).
  StatusOr<BootstrapSocket> Accept(Deadline deadline);

  uint16_t port() const { return port_; }
  // One length-prefixed blob each way; blobs are at most 1 MiB.
  Status SendBlob(const std::string& blob, Deadline deadline);
  StatusOr<std::string> RecvBlob(Deadline deadline);

 private:
  Status WaitFd(short events, Deadline deadline, const char* what);
  int fd_ = -1;
  uint16_t port_ = 0;
};

// The whole exchange: sends `mine`, returns the peer's blob.
StatusOr<std::string> ExchangeBlobs(BootstrapSocket& conn, const std::string& mine,
                                    Deadline deadline);

}  // namespace kvc::handoff::transport

#endif  // KVCONFORM_REFERENCE_HANDOFF_TRANSPORT_BOOTSTRAP_H_
