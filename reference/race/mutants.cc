// The mutant table: names and the rule each one breaks.
#include "reference/race/mutants.h"

#include <array>

namespace kvc::race {

namespace {
constexpr std::array<MutantInfo, 9> kMutants = {{
    {Mutant::kNone, "none", "the correct store"},
    {Mutant::kPublishLayerByLayer, "publish_layer_by_layer",
     "all-layer publication: successor layers become visible one at a time"},
    {Mutant::kNoGenerationFence, "no_generation_fence",
     "generation fencing: publication compares only the slot, so stale work lands (ABA)"},
    {Mutant::kRetryDoubleAdvance, "retry_double_advance",
     "retry identity: a retried publication advances the generation a second time"},
    {Mutant::kCancelLeavesPublishable, "cancel_leaves_publishable",
     "cancel_txn: the aborted transaction can still be published"},
    {Mutant::kReorderCachesOnly, "reorder_caches_only",
     "coupled reorder: caches move but positions and sampler state stay"},
    {Mutant::kTruncateAcceptsGrowth, "truncate_accepts_growth",
     "truncate: T_new > T is accepted and grows the handle"},
    {Mutant::kReleaseLeavesReadable, "release_leaves_readable",
     "release: the tombstone still reads as the last snapshot"},
    {Mutant::kFinishAsRelease, "finish_as_release",
     "finish vs release: finish publishes the terminal tombstone"},
}};
}  // namespace

std::span<const MutantInfo> AllMutants() { return kMutants; }

std::string_view MutantName(Mutant m) { return kMutants[static_cast<size_t>(m)].name; }

std::optional<Mutant> ParseMutant(std::string_view name) {
  for (const auto& m : kMutants)
    if (m.name == name) return m.mutant;
  return std::nullopt;
}

}  // namespace kvc::race
