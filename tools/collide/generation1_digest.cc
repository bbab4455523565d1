// Generation 1's digest through the library and through the lane-parallel mirror.
#include "tools/collide/generation1_digest.h"

#include <array>
#include <utility>

#include "reference/lifecycle/snapshot/snapshot.h"

namespace kvc::collide {

using lifecycle::kFnvOffset;
using lifecycle::kFnvPrime;

std::string LittleEndianBytes(uint64_t z) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[k] = static_cast<char>((z >> (8 * k)) & 0xff);
  return s;
}

uint64_t Generation1Digest(std::string_view lineage, uint64_t incarnation, uint64_t rows) {
  lifecycle::Snapshot s;
  s.handle_id = kHandle;
  s.lineage_id = lineage;
  s.incarnation = incarnation;
  s.digest = lifecycle::SnapshotDigest(lifecycle::Fnv1a64(s.lineage_id),
                                       lifecycle::Transition::kAllocate, s, incarnation);
  const uint64_t prev = s.digest;
  s.generation = 1;
  s.version = 1;
  s.committed_length = rows;
  return lifecycle::SnapshotDigest(prev, lifecycle::Transition::kAppend, s, 0);
}

lifecycle::BeginAppendRequest AppendRequest(const std::string& txn, const lifecycle::Snapshot& base,
                                            uint64_t count, const lifecycle::CacheAbi& abi) {
  lifecycle::BeginAppendRequest r;
  r.txn_id = txn;
  r.idempotency_key = "key-" + txn;
  r.handle_id = base.handle_id;
  r.base = base.base();
  r.cache_abi = abi.id;
  r.interval = {base.committed_length, count};
  r.binding = {base.committed_length, count, base.committed_length + count, abi.position_stage};
  return r;
}

StatusOr<lifecycle::Snapshot> PublishGeneration1(lifecycle::KvObject& o, std::string_view lineage,
                                                 uint64_t incarnation, uint64_t rows) {
  KVC_ASSIGN_OR_RETURN(lifecycle::Snapshot s, o.Allocate(kHandle, lineage, incarnation));
  const std::string txn = "a" + std::to_string(incarnation);
  KVC_RETURN_IF_ERROR(o.BeginAppend(AppendRequest(txn, s, rows, o.abi())).status());
  for (uint32_t l = 0; l < o.abi().num_layers; ++l)
    KVC_RETURN_IF_ERROR(o.StageLayer(txn, l, {0, rows}, true, true, "").status());
  KVC_ASSIGN_OR_RETURN(lifecycle::PublishReceipt receipt, o.Publish(txn));
  return receipt.result;
}

namespace {

// One value per lane, held in registers once inlined (each operation is unrolled over the lanes).
using Lanes = std::array<uint64_t, kLanes>;

template <size_t... I>
[[gnu::always_inline]] inline void FeedImpl(Lanes& h, const Lanes& w, int nbytes,
                                            std::index_sequence<I...>) {
  for (int k = 0; k < nbytes; ++k) {
    const int shift = 8 * k;
    ((h[I] = (h[I] ^ ((w[I] >> shift) & 0xff)) * kFnvPrime), ...);
  }
}
// h[l] = FNV-1a of the `nbytes` low little-endian bytes of w[l], continuing from h[l].
[[gnu::always_inline]] inline void Feed(Lanes& h, const Lanes& w, int nbytes) {
  FeedImpl(h, w, nbytes, std::make_index_sequence<kLanes>());
}
[[gnu::always_inline]] inline void FeedAll(Lanes& h, uint64_t w, int nbytes) {
  Lanes ws;
  ws.fill(w);
  Feed(h, ws, nbytes);
}

// SnapshotDigest(prev[l], t, {handle "H", incarnation[l], generation, version, length[l],
// DECODE_READY}, arg[l]): its fields in its order (snapshot.cc).
[[gnu::always_inline]] inline Lanes SnapshotDigestLanes(const Lanes& prev, lifecycle::Transition t,
                                                        const Lanes& incarnation,
                                                        uint64_t generation, uint64_t version,
                                                        const Lanes& length, const Lanes& arg) {
  static_assert(sizeof kHandle == 2, "the handle is one byte");
  Lanes h;
  h.fill(kFnvOffset);
  Feed(h, prev, 8);
  FeedAll(h, static_cast<uint64_t>(t), 8);
  FeedAll(h, sizeof kHandle - 1, 8);
  FeedAll(h, static_cast<unsigned char>(kHandle[0]), 1);
  Feed(h, incarnation, 8);
  FeedAll(h, generation, 8);
  FeedAll(h, version, 8);
  Feed(h, length, 8);
  FeedAll(h, static_cast<uint64_t>(lifecycle::Phase::kDecodeReady), 8);
  Feed(h, arg, 8);
  return h;
}

}  // namespace

void EvaluateLanes(Mode mode, const uint64_t* in, uint64_t* out, size_t n) {
  static_assert(sizeof kFixedLineage == 2, "the fixed lineage is one byte");
  Lanes z{}, lineage, inc, rows, zero{};
  for (size_t l = 0; l < n && l < kLanes; ++l) z[l] = in[l];
  lineage.fill(kFnvOffset);
  for (size_t l = 0; l < kLanes; ++l) {
    inc[l] = z[l] & 1;
    rows[l] = mode == Mode::kLineage ? kLineageRows : z[l];
  }
  if (mode == Mode::kLineage)
    Feed(lineage, z, 8);  // Fnv1a64(LittleEndianBytes(z))
  else
    FeedAll(lineage, static_cast<unsigned char>(kFixedLineage[0]), 1);
  const Lanes alloc =
      SnapshotDigestLanes(lineage, lifecycle::Transition::kAllocate, inc, 0, 0, zero, inc);
  const Lanes app =
      SnapshotDigestLanes(alloc, lifecycle::Transition::kAppend, inc, 1, 1, rows, zero);
  for (size_t l = 0; l < n && l < kLanes; ++l) out[l] = app[l];
}

}  // namespace kvc::collide
