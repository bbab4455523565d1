// Tests of the bootstrap socket: the length-prefixed address exchange and its bounds.
#include "reference/handoff/transport/bootstrap.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace kvc::handoff::transport {
namespace {

using std::chrono::milliseconds;

// Two connected non-blocking stream sockets (a wait ends at its deadline, never in a blocking
// call): `ours` wrapped, `theirs` a raw descriptor the test writes.
struct SocketPair {
  BootstrapSocket ours;
  int theirs = -1;
  SocketPair() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) == 0) {
      ours = BootstrapSocket(fds[0]);
      theirs = fds[1];
    }
  }
  ~SocketPair() {
    if (theirs >= 0) close(theirs);
  }
  void Write(const std::string& bytes) const {
    ASSERT_EQ(write(theirs, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
};

std::string LengthPrefix(uint32_t n) {
  std::string b(4, '\0');
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return b;
}

// The largest port, 65535, is a port.
TEST(BootstrapTest, PortMaxIsAccepted) {
  auto hp = ParseHostPort("127.0.0.1:65535");
  ASSERT_TRUE(hp.ok()) << hp.status().ToString();
  EXPECT_EQ(hp->port, 65535);
}

// Regression (2026-12-07): --bootstrap's refusals quoted the argument whole; each part is clipped
// at 80 bytes and counted, and a short one is quoted as before.
TEST(BootstrapTest, RegressionARefusedArgumentIsQuotedClipped) {
  const std::string long_host(10000, 'h');
  auto hp = ParseHostPort(long_host + ":80");
  ASSERT_FALSE(hp.ok());
  EXPECT_EQ(hp.status().message(), "--bootstrap: host '" + std::string(80, 'h') +
                                       "...' (10000 bytes) is not an IPv4 address or localhost");
  hp = ParseHostPort("127.0.0.1:" + std::string(10000, '9'));
  ASSERT_FALSE(hp.ok());
  EXPECT_LT(hp.status().message().size(), 200u) << hp.status().message().substr(0, 200);
  hp = ParseHostPort("127.0.0.1:8x");
  ASSERT_FALSE(hp.ok());
  EXPECT_EQ(hp.status().message(), "--bootstrap: port '8x' is not a number in [0, 65535]");
  hp = ParseHostPort(long_host);
  ASSERT_FALSE(hp.ok());
  EXPECT_LT(hp.status().message().size(), 200u) << hp.status().message().substr(0, 200);
}

// Connect retries a refused connection until its deadline, and only then times out.
TEST(BootstrapTest, ConnectRetriesRefusedConnectionsUntilItsDeadline) {
  auto l = BootstrapSocket::Listen({"127.0.0.1", 0});
  ASSERT_TRUE(l.ok());
  const uint16_t port = l->port();
  *l = BootstrapSocket();  // nobody listens on `port` any more
  const auto t0 = Clock::now();
  auto c = BootstrapSocket::Connect({"127.0.0.1", port}, After(milliseconds(300)));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::PD_PEER_TIMEOUT);
  EXPECT_GE(Clock::now() - t0, milliseconds(300));
}

// Accept waits at most until its deadline: nobody connecting is PD_PEER_TIMEOUT.
TEST(BootstrapTest, AcceptWithNobodyConnectingTimesOut) {
  auto l = BootstrapSocket::Listen({"127.0.0.1", 0});
  ASSERT_TRUE(l.ok());
  auto c = l->Accept(After(milliseconds(100)));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::PD_PEER_TIMEOUT);
}

// A blob is 1 B .. 1 MiB: an announced empty address is PD_BOOTSTRAP_FAILED.
TEST(BootstrapTest, AnEmptyBlobIsRefused) {
  SocketPair s;
  ASSERT_GE(s.theirs, 0);
  s.Write(LengthPrefix(0));
  auto r = s.ours.RecvBlob(After(milliseconds(2000)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error(), ErrorCode::PD_BOOTSTRAP_FAILED);
}

// An announced length over 1 MiB is refused at once (PD_BOOTSTRAP_FAILED), before its bytes.
TEST(BootstrapTest, ABlobOverOneMiBIsRefusedFromItsLength) {
  SocketPair s;
  ASSERT_GE(s.theirs, 0);
  s.Write(LengthPrefix((1u << 20) + 1));
  auto r = s.ours.RecvBlob(After(milliseconds(2000)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error(), ErrorCode::PD_BOOTSTRAP_FAILED);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// SendBlob refuses a blob over 1 MiB (InvalidArgument) and sends nothing.
TEST(BootstrapTest, SendBlobRefusesMoreThanOneMiB) {
  SocketPair s;
  ASSERT_GE(s.theirs, 0);
  Status st = s.ours.SendBlob(std::string((1u << 20) + 1, 'x'), After(milliseconds(500)));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  char b;
  EXPECT_EQ(recv(s.theirs, &b, 1, MSG_DONTWAIT), -1);  // nothing arrived
}

// The peer closing mid-exchange is PD_BOOTSTRAP_FAILED, not a timeout.
TEST(BootstrapTest, APeerClosingDuringTheExchangeIsBootstrapFailed) {
  SocketPair s;
  ASSERT_GE(s.theirs, 0);
  s.Write(LengthPrefix(8) + "abc");  // 3 of the 8 announced bytes, then the peer is gone
  close(s.theirs);
  s.theirs = -1;
  auto r = s.ours.RecvBlob(After(milliseconds(2000)));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error(), ErrorCode::PD_BOOTSTRAP_FAILED);
}

}  // namespace
}  // namespace kvc::handoff::transport
