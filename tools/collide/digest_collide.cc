// digest_collide: finds the 64-bit snapshot-digest collisions that lifecycle tests need as test
// vectors (reference/lifecycle/kv_object/kv_object_test.cc), and proves each on a KvObject.
//
// The publication compare-and-publish compares (generation, digest), a 64-bit digest chain; the
// incarnation and position fences behind it (kv_object.cc, publish) only act when two different
// histories reach an equal pair. A test of a fence therefore needs such a pair, found here by a
// claw search between two incarnations' digest functions (tools/collide/collision_search.h):
//
//   counts   handle "H", lineage "L": input z is incarnation z & 1 publishing one append of z
//            rows; a claw is incarnation 0 at ca rows and incarnation 1 (after finish and
//            release) at cb rows with an equal (generation 1, digest) at different lengths
//            (probe 50's case: RegressionAnEqualDigestOfAnotherIncarnationDoesNotPublish).
//   lineage  handle "H", input z is incarnation z & 1 with lineage id the 8 little-endian bytes
//            of z, publishing one append of 3 rows: an equal (generation 1, digest) at the same
//            length, so that only the incarnation fence refuses the old transaction's
//            publication
//            (RegressionAnEqualDigestOfAnotherIncarnationAtTheSameLengthDoesNotPublish).
//   fingerprint  not a digest: the request of RegressionAFingerprintHashCollisionIsAConflict
//            (txn "X" on handle "H" at its allocation, one row, cache ABI "abi-loop2") with the
//            idempotency key the 8 little-endian bytes of z; a collision is two keys with an
//            equal 64-bit OperationFingerprint (the library's, evaluated as it is), which
//            BeginAppend must still judge a conflict.
//
// Usage: digest_collide counts|lineage|fingerprint [--threads N] [--seed S] [--bits B]
//                       [--dp-bits D]
// Prints the pair, the work done, and the KvObject verification (exit 0 when verified, 1 when
// the pair does not verify, 2 on usage, 3 when the lane evaluation disagrees with the library).
// With --threads 1 the output is a function of the seed; more threads finish sooner and may find
// another pair. --bits below 64 searches truncated digests (a quick self-test of the machinery;
// nothing to verify then). At 64 bits a collision takes about sqrt(pi 2^63) = 2^32.3
// evaluations and half of them are claws: minutes per thread (docs/CONTRIBUTING.md).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "reference/lifecycle/kv_object/kv_object.h"
#include "tools/collide/collision_search.h"
#include "tools/collide/generation1_digest.h"

namespace kvc::collide {
namespace {

using lifecycle::BeginAppendRequest;
using lifecycle::KvObject;
using lifecycle::Snapshot;

const lifecycle::CacheAbi kAbi{"abi-collide", 2, "post_rope"};

// Runs the two incarnations on a KvObject (z0: incarnation 0, z1: incarnation 1) and reports
// whether generation 1's (generation, digest) pairs are equal. Prints what it compared.
bool VerifyPair(bool lineage_mode, uint64_t z0, uint64_t z1) {
  KvObject o(kAbi);
  auto life = [&](uint64_t z, uint64_t incarnation) {
    return lineage_mode ? PublishGeneration1(o, LittleEndianBytes(z), incarnation, kLineageRows)
                        : PublishGeneration1(o, kFixedLineage, incarnation, z);
  };
  StatusOr<Snapshot> s0 = life(z0, 0);
  Status st = s0.status();
  if (st.ok()) st = o.Finish(kHandle).status();
  if (st.ok()) st = o.Release(kHandle).status();
  StatusOr<Snapshot> s1 = st.ok() ? life(z1, 1) : StatusOr<Snapshot>(st);
  if (!s1.ok()) {
    std::printf("verify: the KvObject refused the histories: %s\n", s1.status().ToString().c_str());
    return false;
  }
  std::printf(
      "verify: incarnation 0 -> (generation %llu, digest %s, length %llu); incarnation 1 -> "
      "(generation %llu, digest %s, length %llu)\n",
      static_cast<unsigned long long>(s0->generation), lifecycle::DigestHex(s0->digest).c_str(),
      static_cast<unsigned long long>(s0->committed_length),
      static_cast<unsigned long long>(s1->generation), lifecycle::DigestHex(s1->digest).c_str(),
      static_cast<unsigned long long>(s1->committed_length));
  return s0->base() == s1->base();
}

void PrintWork(const SearchStats& stats, std::chrono::steady_clock::time_point t0,
               const SearchOptions& o) {
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "work: %llu evaluations in %.1f s (%.1f ns each per thread), %llu distinguished "
      "points, %llu other collisions, %llu cycling walks restarted\n",
      static_cast<unsigned long long>(stats.evaluations), secs,
      stats.evaluations ? secs * 1e9 * o.threads / stats.evaluations : 0.0,
      static_cast<unsigned long long>(stats.distinguished),
      static_cast<unsigned long long>(stats.rejected),
      static_cast<unsigned long long>(stats.abandoned));
}

constexpr char kFingerprintAbi[] = "abi-loop2";

// The fingerprint mode's request with key `key` on `base` (see the file comment).
BeginAppendRequest FingerprintRequest(const Snapshot& base, std::string key) {
  BeginAppendRequest r = AppendRequest("X", base, 1, {kFingerprintAbi, 2, "post_rope"});
  r.idempotency_key = std::move(key);
  return r;
}

// The two keys' fingerprints are equal, and a KvObject that opened the first judges the second
// a conflict and the first again a retry. Prints what it compared.
bool VerifyFingerprintPair(uint64_t a, uint64_t b) {
  KvObject o({kFingerprintAbi, 2, "post_rope"});
  auto s = o.Allocate(kHandle, kFixedLineage);
  if (!s.ok()) return false;
  const BeginAppendRequest ra = FingerprintRequest(*s, LittleEndianBytes(a));
  const BeginAppendRequest rb = FingerprintRequest(*s, LittleEndianBytes(b));
  const uint64_t fa = lifecycle::OperationFingerprint(ra), fb = lifecycle::OperationFingerprint(rb);
  const bool opened = o.BeginAppend(ra).ok();
  const ErrorCode second = o.BeginAppend(rb).status().error();
  const bool retry = o.BeginAppend(ra).ok();
  std::printf("verify: fingerprints %s and %s; first opens: %s; second: %s; first again: %s\n",
              lifecycle::DigestHex(fa).c_str(), lifecycle::DigestHex(fb).c_str(),
              opened ? "yes" : "no", std::string(ErrorCodeName(second)).c_str(),
              retry ? "a retry" : "refused");
  return fa == fb && opened && second == ErrorCode::LIFECYCLE_RETRY_CONFLICT && retry;
}

int SearchFingerprint(const SearchOptions& o) {
  KvObject obj({kFingerprintAbi, 2, "post_rope"});
  auto s = obj.Allocate(kHandle, kFixedLineage);
  if (!s.ok()) return 3;
  const BeginAppendRequest templ = FingerprintRequest(*s, "");
  const BatchFunction f = [&templ](const uint64_t* in, uint64_t* out, size_t n) {
    lifecycle::BeginAppendView v = lifecycle::ViewOf(templ);
    for (size_t i = 0; i < n; ++i) {
      const std::string key = LittleEndianBytes(in[i]);  // 8 bytes: held inline, no allocation
      v.idempotency_key = key;
      out[i] = lifecycle::OperationFingerprint(v);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  SearchStats stats;
  std::optional<Collision> c = FindCollision(
      f, [](uint64_t, uint64_t) { return true; }, o, &stats);
  PrintWork(stats, t0, o);
  if (!c) return 1;
  std::printf("collision: key a = %lluull, key b = %lluull (%u-bit value %llx)\n",
              static_cast<unsigned long long>(c->a), static_cast<unsigned long long>(c->b), o.bits,
              static_cast<unsigned long long>(c->value));
  if (o.bits < 64) return 0;
  return VerifyFingerprintPair(c->a, c->b) ? 0 : 1;
}

int Usage() {
  std::fprintf(stderr,
               "usage: digest_collide counts|lineage|fingerprint [--threads N] [--seed S] "
               "[--bits B] [--dp-bits D]\n");
  return 2;
}

bool ParseU64(const char* s, uint64_t* v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || s[0] == '-') return false;
  *v = x;
  return true;
}

int Main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const std::string mode = argv[1];
  if (mode != "counts" && mode != "lineage" && mode != "fingerprint") return Usage();
  const bool lineage_mode = mode == "lineage";
  SearchOptions o;
  o.threads = 2;
  o.dp_bits = 22;
  if ((argc - 2) % 2 != 0) return Usage();
  for (int i = 2; i < argc; i += 2) {
    uint64_t v;
    if (!ParseU64(argv[i + 1], &v)) return Usage();
    if (!std::strcmp(argv[i], "--threads") && v >= 1 && v <= 64)
      o.threads = static_cast<unsigned>(v);
    else if (!std::strcmp(argv[i], "--seed"))
      o.seed = v;
    else if (!std::strcmp(argv[i], "--bits") && v >= 16 && v <= 64)
      o.bits = static_cast<unsigned>(v);
    else if (!std::strcmp(argv[i], "--dp-bits") && v >= 1 && v <= 32)
      o.dp_bits = static_cast<unsigned>(v);
    else
      return Usage();
  }
  if (o.bits < 64 && o.dp_bits > o.bits / 2) o.dp_bits = o.bits / 4;
  std::printf("digest_collide %s --threads %u --seed %llu --bits %u --dp-bits %u\n", mode.c_str(),
              o.threads, static_cast<unsigned long long>(o.seed), o.bits, o.dp_bits);
  std::fflush(stdout);
  if (mode == "fingerprint") return SearchFingerprint(o);
  const Mode m = lineage_mode ? Mode::kLineage : Mode::kCounts;
  // The lane-parallel evaluation is the library's chain (tested in generation1_digest_test.cc);
  // checked here again on inputs of this run's seed before the search relies on it.
  for (uint64_t i = 0; i < 64; ++i) {
    uint64_t in[kLanes], out[kLanes];
    for (size_t l = 0; l < kLanes; ++l) in[l] = SplitMix64(o.seed * 64 + i * kLanes + l);
    EvaluateLanes(m, in, out, kLanes);
    for (size_t l = 0; l < kLanes; ++l)
      if (out[l] != Evaluate(m, in[l])) {
        std::fprintf(stderr,
                     "digest_collide: the lane evaluation differs from the library's "
                     "digest chain (tools/collide/generation1_digest.cc)\n");
        return 3;
      }
  }
  const BatchFunction f = [m](const uint64_t* in, uint64_t* out, size_t n) {
    EvaluateLanes(m, in, out, n);
  };
  // A claw: the two inputs select different incarnations (and, for counts, neither is 0 rows).
  const AcceptFunction accept = [lineage_mode](uint64_t a, uint64_t b) {
    return ((a ^ b) & 1) != 0 && (lineage_mode || (a != 0 && b != 0));
  };
  const auto t0 = std::chrono::steady_clock::now();
  SearchStats stats;
  std::optional<Collision> c = FindCollision(f, accept, o, &stats);
  PrintWork(stats, t0, o);
  if (!c) {
    std::printf("no claw found\n");
    return 1;
  }
  const uint64_t z0 = (c->a & 1) == 0 ? c->a : c->b, z1 = (c->a & 1) == 0 ? c->b : c->a;
  std::printf("claw: incarnation 0 z = %lluull, incarnation 1 z = %lluull (%u-bit value %llx)\n",
              static_cast<unsigned long long>(z0), static_cast<unsigned long long>(z1), o.bits,
              static_cast<unsigned long long>(c->value));
  if (o.bits < 64) return 0;  // truncated digests: nothing a KvObject would show
  return VerifyPair(lineage_mode, z0, z1) ? 0 : 1;
}

}  // namespace
}  // namespace kvc::collide

int main(int argc, char** argv) { return kvc::collide::Main(argc, argv); }
