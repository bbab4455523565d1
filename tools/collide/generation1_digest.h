// The digest a handle's generation 1 carries after one append, as a function of the inputs the
// collision searches vary (tools/collide/digest_collide.cc), in two implementations: the
// library's digest chain, and a lane-parallel mirror of it that the search runs.
//
// A history: Allocate(handle "H", `lineage`, `incarnation`), then one published append of
// `rows` rows at position 0. Generation1Digest is the digest KvObject gives that snapshot
// (SnapshotDigest as Allocate and Publish call it); Generation1DigestLanes computes the same
// value for kLanes inputs at once, their hash chains interleaved (one chain alone waits on each
// multiplication). Tests compare the two on random inputs; digest_collide proves each pair it
// prints on a KvObject. Thread safety: pure functions.
#ifndef KVCONFORM_TOOLS_COLLIDE_GENERATION1_DIGEST_H_
#define KVCONFORM_TOOLS_COLLIDE_GENERATION1_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "reference/base/status.h"
#include "reference/lifecycle/kv_object/kv_object.h"
#include "tools/collide/collision_search.h"

namespace kvc::collide {

inline constexpr char kHandle[] = "H";
inline constexpr char kFixedLineage[] = "L";  // the counts search's lineage
inline constexpr uint64_t kLineageRows = 3;   // the lineage search's append

// The 8 little-endian bytes of `z`: the lineage id (lineage search) or idempotency key
// (fingerprint search) derived from input z.
std::string LittleEndianBytes(uint64_t z);

// Through the library (reference/lifecycle/snapshot).
uint64_t Generation1Digest(std::string_view lineage, uint64_t incarnation, uint64_t rows);

// What the searches evaluate for input z: incarnation z & 1 and, for counts, lineage
// kFixedLineage and z rows; for lineage, lineage LittleEndianBytes(z) and kLineageRows rows.
enum class Mode { kCounts, kLineage };
inline uint64_t Evaluate(Mode mode, uint64_t z) {
  return mode == Mode::kLineage ? Generation1Digest(LittleEndianBytes(z), z & 1, kLineageRows)
                                : Generation1Digest(kFixedLineage, z & 1, z);
}
// Evaluate(mode, in[i]) for i < n (n <= kLanes), chains interleaved.
void EvaluateLanes(Mode mode, const uint64_t* in, uint64_t* out, size_t n);

// The request appending `count` rows to `base` under `abi` (transaction `txn`, key "key-" +
// txn, the position binding derived from the interval).
lifecycle::BeginAppendRequest AppendRequest(const std::string& txn, const lifecycle::Snapshot& base,
                                            uint64_t count, const lifecycle::CacheAbi& abi);
// The history itself on `o` (whose ABI is used): Allocate(kHandle, lineage, incarnation), then
// one append of `rows` rows opened, staged on every layer and published; the published snapshot.
StatusOr<lifecycle::Snapshot> PublishGeneration1(lifecycle::KvObject& o, std::string_view lineage,
                                                 uint64_t incarnation, uint64_t rows);

}  // namespace kvc::collide

#endif  // KVCONFORM_TOOLS_COLLIDE_GENERATION1_DIGEST_H_
