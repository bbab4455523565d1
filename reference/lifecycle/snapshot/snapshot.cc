// Phase names and the snapshot digest chain.
#include "reference/lifecycle/snapshot/snapshot.h"

#include <cstdio>

namespace kvc::lifecycle {

std::string_view PhaseName(Phase p) {
  switch (p) {
    case Phase::kDecodeReady: return "DECODE_READY";
    case Phase::kFinished: return "FINISHED";
    case Phase::kCancelled: return "CANCELLED";
    case Phase::kReleased: return "RELEASED";
  }
  return "?";
}

std::optional<Phase> ParsePhase(std::string_view s) {
  for (Phase p : {Phase::kDecodeReady, Phase::kFinished, Phase::kCancelled, Phase::kReleased})
    if (PhaseName(p) == s) return p;
  return std::nullopt;
}

uint64_t SnapshotDigest(uint64_t prev_digest, Transition t, const Snapshot& s, uint64_t arg) {
  uint64_t h = Fnv1a64U64(prev_digest, kFnvOffset);
  h = Fnv1a64U64(static_cast<uint64_t>(t), h);
  h = Fnv1a64U64(s.handle_id.size(), h);
  h = Fnv1a64(s.handle_id, h);
  h = Fnv1a64U64(s.incarnation, h);
  h = Fnv1a64U64(s.generation, h);
  h = Fnv1a64U64(s.version, h);
  h = Fnv1a64U64(s.committed_length, h);
  h = Fnv1a64U64(static_cast<uint64_t>(s.phase), h);
  return Fnv1a64U64(arg, h);
}

std::string DigestHex(uint64_t d) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(d));
  return buf;
}

std::optional<uint64_t> ParseDigestHex(std::string_view s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return std::nullopt;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

}  // namespace kvc::lifecycle
