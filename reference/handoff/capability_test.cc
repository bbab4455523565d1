// Capability signatures and the ordered authorization gates of M5.6 0x0FE.
#include "reference/handoff/capability.h"

#include <gtest/gtest.h>

namespace kvc::handoff {
namespace {

struct Fixture {
  Capability cap;
  TransferRequest req;
  NonceStore nonces;
  AuthorizationContext ctx;
  Fixture() {
    cap = {"cp-a", "kvconform-test-key-1", "t",  "p0", "d0", "x1", 7, 12, "abi",
           "push", {"r1", "r2", "r3"},     4096, 1300, "n1", ""};
    cap.signature_hex = *SignCapability(cap, *SyntheticTestKey("kvconform-test-key-1"));
    req = {"t", "p0", "d0", "x1", 7, "abi", "push", {"r1", "r3"}, 4096, "n1"};
    ctx.now_s = 1000;
    ctx.max_ttl_s = 600;
    ctx.current_route_epoch = 12;
    ctx.trusted_issuers = {"cp-a"};
    ctx.keys = SyntheticTestKey;
    ctx.nonces = &nonces;
  }
};

// The per-write gate: granted regions only, cumulative bytes up to the bound (exactly the
// bound is allowed, one byte more is not, an overflowing count is denied), unchanged on denial.
TEST(Capability, WriteGateChecksRegionAndCumulativeBytes) {
  Capability c;
  c.allowed_regions = {"L0/t0+4", "L1/t0+4"};
  c.max_bytes = 512;
  CapabilityGrant g = GrantOf(c);
  EXPECT_EQ(AuthorizeWrite(&g, "L0/t4+4", 1).error(), ErrorCode::HANDOFF_CAPABILITY_REGION_DENIED);
  EXPECT_EQ(g.accepted, 0u);
  EXPECT_TRUE(AuthorizeWrite(&g, "L0/t0+4", 256).ok());
  EXPECT_EQ(AuthorizeWrite(&g, "L1/t0+4", 257).error(),
            ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED);
  EXPECT_EQ(g.accepted, 256u);
  EXPECT_TRUE(AuthorizeWrite(&g, "L1/t0+4", 256).ok());
  EXPECT_EQ(g.accepted, 512u);
  EXPECT_EQ(AuthorizeWrite(&g, "L1/t0+4", UINT64_MAX).error(),
            ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED);
  EXPECT_EQ(g.accepted, 512u);
}

TEST(Capability, AllowsOnceThenDeniesReplay) {
  Fixture f;
  EXPECT_TRUE(AuthorizeTransfer(f.req, f.cap, f.ctx).ok());
  EXPECT_EQ(AuthorizeTransfer(f.req, f.cap, f.ctx).error(),
            ErrorCode::HANDOFF_CAPABILITY_NONCE_REPLAYED);
}

TEST(Capability, AnySignedFieldChangeBreaksTheSignature) {
  Fixture f;
  f.cap.max_bytes = 1 << 30;
  EXPECT_EQ(AuthorizeTransfer(f.req, f.cap, f.ctx).error(),
            ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID);
  Fixture g;
  g.cap.allowed_regions.push_back("r9");
  EXPECT_EQ(AuthorizeTransfer(g.req, g.cap, g.ctx).error(),
            ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID);
  Fixture h;
  h.cap.signature_hex = "zz";
  EXPECT_EQ(AuthorizeTransfer(h.req, h.cap, h.ctx).error(),
            ErrorCode::HANDOFF_CAPABILITY_SIGNATURE_INVALID);
}

TEST(Capability, DenialMessagesNeverCarryKeyMaterial) {
  Fixture f;
  f.cap.max_bytes = 1;
  Status s = AuthorizeTransfer(f.req, f.cap, f.ctx);
  std::string key = *SyntheticTestKey("kvconform-test-key-1");
  static const char* kHex = "0123456789abcdef";
  std::string key_hex;
  for (unsigned char b : key) key_hex += std::string{kHex[b >> 4], kHex[b & 15]};
  EXPECT_EQ(s.message().find(key_hex), std::string::npos);
  EXPECT_EQ(s.message().find(key), std::string::npos);
}

TEST(Capability, EachGateHasItsCode) {
  auto expect = [](auto mutate, ErrorCode code) {
    Fixture f;
    mutate(f);
    EXPECT_EQ(AuthorizeTransfer(f.req, f.cap, f.ctx).error(), code) << ErrorCodeName(code);
  };
  expect([](Fixture& f) { f.ctx.trusted_issuers = {"cp-b"}; },
         ErrorCode::HANDOFF_CAPABILITY_ISSUER_UNTRUSTED);
  expect([](Fixture& f) { f.ctx.now_s = 1300; }, ErrorCode::HANDOFF_CAPABILITY_EXPIRED);
  expect([](Fixture& f) { f.ctx.max_ttl_s = 100; }, ErrorCode::HANDOFF_CAPABILITY_EXPIRED);
  expect([](Fixture& f) { f.req.decode_owner = "d1"; },
         ErrorCode::HANDOFF_CAPABILITY_IDENTITY_MISMATCH);
  expect([](Fixture& f) { f.ctx.current_route_epoch = 13; },
         ErrorCode::HANDOFF_CAPABILITY_EPOCH_STALE);
  expect([](Fixture& f) { f.req.cache_abi_sha256 = "other"; },
         ErrorCode::HANDOFF_CAPABILITY_ABI_MISMATCH);
  expect([](Fixture& f) { f.req.direction = "pull"; },
         ErrorCode::HANDOFF_CAPABILITY_DIRECTION_MISMATCH);
  expect([](Fixture& f) { f.req.regions.push_back("r4"); },
         ErrorCode::HANDOFF_CAPABILITY_REGION_DENIED);
  expect([](Fixture& f) { f.req.bytes = 4097; }, ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED);
  expect([](Fixture& f) { f.req.bytes = 0; }, ErrorCode::HANDOFF_CAPABILITY_BYTES_EXCEEDED);
  expect([](Fixture& f) { f.req.nonce = "n2"; }, ErrorCode::HANDOFF_CAPABILITY_NONCE_MISMATCH);
}

}  // namespace
}  // namespace kvc::handoff
