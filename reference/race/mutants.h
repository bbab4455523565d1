// Seeded bugs (mutants) of the concurrent store, selectable at run time (`--mutant NAME`).
//
// Each mutant breaks exactly one rule of M5.1 0x01/0x09 in the store while everything else stays
// the lifecycle code; the race fuzzer must find every one and nothing on the correct store.
// Thread safety: plain values.
#ifndef KVCONFORM_REFERENCE_RACE_MUTANTS_H_
#define KVCONFORM_REFERENCE_RACE_MUTANTS_H_

#include <optional>
#include <span>
#include <string_view>

namespace kvc::race {

enum class Mutant : uint8_t {
  kNone,
  kPublishLayerByLayer,      // successor layers become visible one layer at a time
  kNoGenerationFence,        // publication compares the slot (handle) only: stale work lands
  kRetryDoubleAdvance,       // a retried publication advances the generation again
  kCancelLeavesPublishable,  // cancel_txn acknowledges but leaves the txn publishable
  kReorderCachesOnly,        // reorder permutes cache handles but not positions/sampler state
  kTruncateAcceptsGrowth,    // truncate to T_new > T grows the handle
  kReleaseLeavesReadable,    // a released handle still reads its last snapshot
  kFinishAsRelease,          // finish publishes the release tombstone
};

struct MutantInfo {
  Mutant mutant;
  std::string_view name;
  std::string_view rule;  // what the mutant breaks, one line
};

std::span<const MutantInfo> AllMutants();  // including kNone ("none") first
std::string_view MutantName(Mutant m);
std::optional<Mutant> ParseMutant(std::string_view name);

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_MUTANTS_H_
