// Tests of the FNV-1a helpers and the digest/fingerprint encodings against naive definitions.
#include "reference/lifecycle/snapshot/snapshot.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "reference/lifecycle/append_txn/append_txn.h"
#include "reference/testutil/testutil.h"

namespace kvc::lifecycle {
namespace {

// The one-line definition of FNV-1a 64 over a byte string: the unrolled helpers must agree.
uint64_t NaiveFnv(const std::vector<unsigned char>& bytes, uint64_t h = kFnvOffset) {
  for (unsigned char c : bytes) h = (h ^ c) * kFnvPrime;
  return h;
}
void PutU64(std::vector<unsigned char>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(v >> (8 * i)));
}
void PutStr(std::vector<unsigned char>& out, const std::string& s) {
  PutU64(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// The digest's documented encoding, written out as one byte string.
uint64_t NaiveDigest(uint64_t prev, Transition t, const Snapshot& s, uint64_t arg) {
  std::vector<unsigned char> b;
  PutU64(b, prev);
  PutU64(b, static_cast<uint64_t>(t));
  PutStr(b, s.handle_id.str());
  for (uint64_t v : {s.incarnation, s.generation, s.version, s.committed_length,
                     static_cast<uint64_t>(s.phase), arg})
    PutU64(b, v);
  return NaiveFnv(b);
}

// The operation fingerprint's documented encoding as one byte string.
uint64_t NaiveFingerprint(const BeginAppendRequest& r) {
  std::vector<unsigned char> b;
  for (const std::string* s : {&r.txn_id, &r.idempotency_key, &r.handle_id, &r.cache_abi})
    PutStr(b, *s);
  for (uint64_t v : {r.base.generation, r.base.digest, r.interval.start, r.interval.count})
    PutU64(b, v);
  return NaiveFnv(b);
}

TEST(Fnv1a64Test, PublishedVectors) {
  // The FNV-1a 64-bit test vectors of the reference distribution (Noll, "FNV test suite").
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// Property: the unrolled helpers equal the byte loop for every length (across the 8-byte
// unrolling boundary) and every u64; the digest and fingerprint equal their naive encodings.
TEST(Fnv1a64Test, UnrolledHelpersEqualTheByteLoop) {
  const uint64_t seed = test::AnnounceSeed(20261129);
  std::mt19937_64 rng(seed);
  auto str = [&rng](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  for (size_t n = 0; n < 40; ++n) {
    const std::string s = str(n);
    const uint64_t h0 = rng();
    EXPECT_EQ(Fnv1a64(s, h0), NaiveFnv({s.begin(), s.end()}, h0)) << "length " << n;
  }
  for (int i = 0; i < 1000; ++i) {
    const uint64_t v = rng() >> (rng() % 64), h0 = rng();
    std::vector<unsigned char> b;
    PutU64(b, v);
    ASSERT_EQ(Fnv1a64U64(v, h0), NaiveFnv(b, h0)) << "v=" << v << " h0=" << h0;
  }
  for (int i = 0; i < 200; ++i) {
    Snapshot s;
    s.handle_id = str(rng() % 24);
    s.lineage_id = str(rng() % 24);
    s.incarnation = rng();
    s.generation = rng();
    s.version = rng();
    s.committed_length = rng();
    s.phase = static_cast<Phase>(rng() % 4);
    const uint64_t prev = rng(), arg = rng();
    const auto t = static_cast<Transition>(1 + rng() % 7);
    ASSERT_EQ(SnapshotDigest(prev, t, s, arg), NaiveDigest(prev, t, s, arg)) << "case " << i;
    BeginAppendRequest r;
    r.txn_id = str(rng() % 20);
    r.idempotency_key = str(rng() % 20);
    r.handle_id = str(rng() % 20);
    r.cache_abi = str(rng() % 70);
    r.base = {rng(), rng()};
    r.interval = {rng(), rng()};
    ASSERT_EQ(OperationFingerprint(r), NaiveFingerprint(r)) << "case " << i;
    ASSERT_EQ(OperationFingerprint(ViewOf(r)), NaiveFingerprint(r)) << "case " << i;
  }
}

}  // namespace
}  // namespace kvc::lifecycle
