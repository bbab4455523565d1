// Immutable, generation-stamped logical KV snapshots (M5.1 0x01 "Versioned Transactions").
//
// A Snapshot is a value: copying it is cheap, equality compares every field. It carries three
// counters the seed uses for different questions, kept apart so every worked number holds:
//   generation        the publication fence of 0x01 (Loop 6): advanced by every published
//                     transition (append, truncate, finish, cancel_request, release); a fork
//                     child starts at 0. Compare-and-publish compares (handle, generation, digest).
//   version           the readable-snapshot version of 0x07 (Loop 8 "s0..s3"): advanced only
//                     when the readable K/V state changes (append, truncate, release tombstone).
//   incarnation       the 0x07 "handle_generation": fixed at allocate (a fork child starts at 0),
//                     advanced once by release so a recycled request identity is fenced.
// All three are 64-bit and never wrap (overflow is LIFECYCLE_GENERATION_OVERFLOW).
// The digest is provenance, not synchronization: a 64-bit FNV-1a chain over the predecessor
// digest and the transition (see SnapshotDigest); equal histories give equal digests.
// Thread safety: plain values; no shared state.
#ifndef KVCONFORM_REFERENCE_LIFECYCLE_SNAPSHOT_SNAPSHOT_H_
#define KVCONFORM_REFERENCE_LIFECYCLE_SNAPSHOT_SNAPSHOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "reference/base/id_string.h"

namespace kvc::lifecycle {

// The request-snapshot phase of 0x01 (not the service phase of 0x05; see frontier/phase.h).
enum class Phase : uint8_t { kDecodeReady, kFinished, kCancelled, kReleased };
std::string_view PhaseName(Phase p);  // "DECODE_READY", ...
std::optional<Phase> ParsePhase(std::string_view s);

// What compare-and-publish compares: the complete logical base, never an address.
struct BaseRef {
  uint64_t generation = 0;
  uint64_t digest = 0;
  friend bool operator==(const BaseRef&, const BaseRef&) = default;
};

struct Snapshot {
  base::IdString handle_id;
  base::IdString lineage_id;     // shared by a root and all its fork descendants
  uint64_t incarnation = 0;      // 0x07 handle_generation
  uint64_t generation = 0;       // 0x01 publication generation
  uint64_t version = 0;          // 0x07 snapshot version
  uint64_t committed_length = 0; // every cache-producing layer exposes exactly [0, T)
  uint64_t digest = 0;           // provenance chain, see SnapshotDigest
  Phase phase = Phase::kDecodeReady;

  BaseRef base() const { return {generation, digest}; }
  bool readable() const { return phase != Phase::kReleased; }
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

// Kinds of transition mixed into the digest chain.
enum class Transition : uint8_t {
  kAllocate = 1, kAppend, kTruncate, kFinish, kCancel, kRelease, kFork
};

// FNV-1a 64 over bytes, continuing from `seed` (use kFnvOffset to start).
inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;
// Defined inline: the digest chain and operation fingerprints run on every traced event.
// Both are written out byte by byte (8 bytes per loop trip, no per-byte loop control): the
// values are exactly those of the one-line definition h = (h ^ byte) * kFnvPrime over the
// bytes in order (snapshot_test.cc checks them against it and the published FNV-1a vectors).
inline uint64_t Fnv1a64(std::string_view bytes, uint64_t seed = kFnvOffset) {
  uint64_t h = seed;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  for (; n >= 8; n -= 8, p += 8) {
    h = (h ^ p[0]) * kFnvPrime;
    h = (h ^ p[1]) * kFnvPrime;
    h = (h ^ p[2]) * kFnvPrime;
    h = (h ^ p[3]) * kFnvPrime;
    h = (h ^ p[4]) * kFnvPrime;
    h = (h ^ p[5]) * kFnvPrime;
    h = (h ^ p[6]) * kFnvPrime;
    h = (h ^ p[7]) * kFnvPrime;
  }
  for (; n > 0; --n, ++p) h = (h ^ *p) * kFnvPrime;
  return h;
}
// FNV-1a over the 8 little-endian bytes of `v` (the same value as Fnv1a64 over those bytes),
// lowest byte first, whatever the host byte order.
inline uint64_t Fnv1a64U64(uint64_t v, uint64_t seed) {
  uint64_t h = seed;
  h = (h ^ (v & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 8) & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 16) & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 24) & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 32) & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 40) & 0xff)) * kFnvPrime;
  h = (h ^ ((v >> 48) & 0xff)) * kFnvPrime;
  h = (h ^ (v >> 56)) * kFnvPrime;
  return h;
}

// Digest of the successor of `prev_digest` under `t`, binding the successor's identity and
// counters: H(prev, t, handle_id, incarnation, generation, version, committed_length, phase, arg)
// where `arg` is the transition's extra datum (append interval start, fork prefix, ...).
uint64_t SnapshotDigest(uint64_t prev_digest, Transition t, const Snapshot& successor,
                        uint64_t arg);

// 16 lowercase hex digits.
std::string DigestHex(uint64_t d);
std::optional<uint64_t> ParseDigestHex(std::string_view s);

}  // namespace kvc::lifecycle

#endif  // KVCONFORM_REFERENCE_LIFECYCLE_SNAPSHOT_SNAPSHOT_H_
