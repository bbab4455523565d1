// Tests of the UCX peer wrapper, the bootstrap address parser and the fault-spec parser.
#include "reference/handoff/transport/ucx_peer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "reference/handoff/transport/bootstrap.h"
#include "reference/handoff/transport/pd_worker.h"

namespace kvc::handoff::transport {
namespace {

using std::chrono::milliseconds;

// Two peers in one process, connected both ways over `t`.
void Pair(UcxTransport t, std::unique_ptr<UcxPeer>* a, std::unique_ptr<UcxPeer>* b) {
  auto pa = UcxPeer::Create(t);
  auto pb = UcxPeer::Create(t);
  ASSERT_TRUE(pa.ok()) << pa.status().ToString();
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  auto aa = (*pa)->LocalAddress();
  auto ab = (*pb)->LocalAddress();
  ASSERT_TRUE(aa.ok() && ab.ok());
  ASSERT_TRUE((*pa)->Connect(*ab).ok());
  ASSERT_TRUE((*pb)->Connect(*aa).ok());
  *a = std::move(*pa);
  *b = std::move(*pb);
}

TEST(UcxPeerTest, SendsAnIovMessageAndReceivesItWhole) {
  for (UcxTransport t : {UcxTransport::kTcp, UcxTransport::kShm}) {
    std::unique_ptr<UcxPeer> a, b;
    Pair(t, &a, &b);
    ASSERT_TRUE(a && b);
    const char head[] = "head:";
    std::vector<uint8_t> body(100000);
    for (size_t i = 0; i < body.size(); ++i) body[i] = static_cast<uint8_t>(i * 7);
    auto op = a->SendNb(0x0300000100000002ull, {{head, 5}, {body.data(), body.size()}});
    ASSERT_TRUE(op.ok()) << op.status().ToString();
    // Each peer is driven by its own thread (a large message needs both sides to progress).
    const Deadline d = After(milliseconds(5000));
    Status sent;
    std::thread sender([&] { sent = a->Wait(*op, d, "test send"); });
    auto m = b->Recv(0, 0, 1 << 20, d, "test message");
    sender.join();
    ASSERT_TRUE(m.ok()) << UcxTransportName(t) << ": " << m.status().ToString();
    ASSERT_TRUE(sent.ok()) << sent.ToString();
    EXPECT_EQ(m->tag, 0x0300000100000002ull);
    ASSERT_EQ(m->bytes.size(), 5 + body.size());
    EXPECT_EQ(std::memcmp(m->bytes.data(), head, 5), 0);
    EXPECT_EQ(std::memcmp(m->bytes.data() + 5, body.data(), body.size()), 0);
  }
}

TEST(UcxPeerTest, ReceiveFromASilentPeerTimesOutWithItsCode) {
  std::unique_ptr<UcxPeer> a, b;
  Pair(UcxTransport::kTcp, &a, &b);
  ASSERT_TRUE(a && b);
  const auto t0 = Clock::now();
  auto r = b->Recv(0, 0, 64, After(milliseconds(200)), "a message that never comes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error(), ErrorCode::PD_PEER_TIMEOUT);
  EXPECT_LT(Clock::now() - t0, milliseconds(3000));
}

TEST(UcxPeerTest, OversizedMessageIsMalformedNotTruncated) {
  std::unique_ptr<UcxPeer> a, b;
  Pair(UcxTransport::kTcp, &a, &b);
  ASSERT_TRUE(a && b);
  std::vector<uint8_t> big(200000, 1);
  auto op = a->SendNb(7, {{big.data(), big.size()}});
  ASSERT_TRUE(op.ok());
  const Deadline d = After(milliseconds(5000));
  Status sent;
  std::thread sender([&] { sent = a->Wait(*op, d, "big send"); });
  auto r = b->Recv(0, 0, 100, d, "big");
  sender.join();
  EXPECT_TRUE(sent.ok()) << sent.ToString();  // drained into scratch, not left in UCX
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error(), ErrorCode::PD_MESSAGE_MALFORMED);
}

// "tcp" and "shm" name the two transports, and each transport's name parses back to it.
TEST(UcxPeerTest, ParsesAndNamesBothTransports) {
  for (UcxTransport t : {UcxTransport::kTcp, UcxTransport::kShm}) {
    auto back = ParseUcxTransport(UcxTransportName(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t) << UcxTransportName(t);
  }
  EXPECT_EQ(UcxTransportName(UcxTransport::kShm), "shm");
  EXPECT_EQ(*ParseUcxTransport("shm"), UcxTransport::kShm);
}

// An empty remote address is a failed bootstrap, refused before UCX reads it.
TEST(UcxPeerTest, ConnectRefusesAnEmptyAddress) {
  auto p = UcxPeer::Create(UcxTransport::kTcp);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Status s = (*p)->Connect("");
  EXPECT_EQ(s.error(), ErrorCode::PD_BOOTSTRAP_FAILED) << s.ToString();
}

// A peer has one endpoint: a second Connect is refused.
TEST(UcxPeerTest, ASecondConnectIsRefused) {
  std::unique_ptr<UcxPeer> a, b;
  Pair(UcxTransport::kTcp, &a, &b);
  ASSERT_TRUE(a && b);
  auto addr = b->LocalAddress();
  ASSERT_TRUE(addr.ok());
  EXPECT_EQ(a->Connect(*addr).code(), StatusCode::kFailedPrecondition);
}

// A message longer than a pre-posted receive's buffer completes it as PD_MESSAGE_MALFORMED.
TEST(UcxPeerTest, APrePostedReceiveTooSmallIsMalformed) {
  std::unique_ptr<UcxPeer> a, b;
  Pair(UcxTransport::kTcp, &a, &b);
  ASSERT_TRUE(a && b);
  uint8_t small[16];
  auto recv = b->RecvNb(5, ~uint64_t{0}, small, sizeof small);
  ASSERT_TRUE(recv.ok()) << recv.status().ToString();
  std::vector<uint8_t> body(100, 3);
  auto op = a->SendNb(5, {{body.data(), body.size()}});
  ASSERT_TRUE(op.ok()) << op.status().ToString();
  const Deadline d = After(milliseconds(5000));
  Status sent;
  std::thread sender([&] { sent = a->Wait(*op, d, "test send"); });
  Status got = b->Wait(*recv, d, "a short receive");
  sender.join();
  EXPECT_EQ(got.error(), ErrorCode::PD_MESSAGE_MALFORMED) << got.ToString();
}

// Wait on an operation that never completes ends at its deadline with PD_PEER_TIMEOUT.
TEST(UcxPeerTest, WaitOnAnUnmatchedReceiveTimesOutWithItsCode) {
  std::unique_ptr<UcxPeer> a, b;
  Pair(UcxTransport::kTcp, &a, &b);
  ASSERT_TRUE(a && b);
  uint8_t buf[16];
  auto recv = b->RecvNb(9, ~uint64_t{0}, buf, sizeof buf);
  ASSERT_TRUE(recv.ok());
  Status s = b->Wait(*recv, After(milliseconds(100)), "a message nobody sends");
  EXPECT_EQ(s.error(), ErrorCode::PD_PEER_TIMEOUT) << s.ToString();
}

TEST(BootstrapTest, ParsesHostPortAndRejectsBadOnes) {
  auto hp = ParseHostPort("127.0.0.1:4242");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 4242);
  EXPECT_FALSE(ParseHostPort("127.0.0.1").ok());
  EXPECT_FALSE(ParseHostPort("127.0.0.1:99999").ok());
  EXPECT_FALSE(ParseHostPort("h:12a").ok());
  EXPECT_FALSE(ParseHostPort(":1").ok());
  EXPECT_TRUE(ParseHostPort("localhost:0").ok());
  // A host name other than localhost is refused as usage before any worker starts (probe 37).
  auto named = ParseHostPort("example.com:80");
  ASSERT_FALSE(named.ok());
  EXPECT_EQ(named.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(named.status().message().find("not an IPv4 address or localhost"), std::string::npos);
}

TEST(BootstrapTest, ConnectToNobodyTimesOut) {
  auto l = BootstrapSocket::Listen({"127.0.0.1", 0});
  ASSERT_TRUE(l.ok());
  const uint16_t port = l->port();
  *l = BootstrapSocket();  // closed: nobody listens on `port` any more
  auto c = BootstrapSocket::Connect({"127.0.0.1", port}, After(milliseconds(100)));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error(), ErrorCode::PD_PEER_TIMEOUT);
}

TEST(FaultSpecTest, ParsesEveryKindAndRejectsMalformedSpecs) {
  using K = FaultSpec::Kind;
  EXPECT_EQ(ParseFault("drop:3")->kind, K::kDrop);
  EXPECT_EQ(ParseFault("drop:3")->chunk, 3u);
  EXPECT_EQ(ParseFault("delay:1:250")->ms, 250u);
  EXPECT_EQ(ParseFault("credit-window:512")->bytes, 512u);
  EXPECT_EQ(ParseFault("kill-prefill-after-publish")->kind, K::kKillPrefill);
  for (const char* bad : {"drop", "drop:x", "delay:1", "reorder:1", "explode", "dup:-1"})
    EXPECT_FALSE(ParseFault(bad).ok()) << bad;
}

}  // namespace
}  // namespace kvc::handoff::transport
