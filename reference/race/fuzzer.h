// The race fuzzer: generate programs, run them, check each history, shrink a failure.
//
// A campaign runs programs i = start, start+1, ... (program seed = SplitMix64(SplitMix64(seed) +
// i), so campaigns of different seeds share no program in practice); with
// a shard I/N it runs only the programs with i % N == I, so N shards together run exactly the
// programs one unsharded campaign would. Every history is checked against the KV lineage model;
// the first non-linearizable history stops the campaign, and the failing program is shrunk by
// RapidCheck's shrinker over ShrinkProgram (program.h); a candidate counts as failing when any
// of `shrink_reruns` runs fails, because interleavings are not deterministic.
// Thread safety: RunCampaign is self-contained; progress goes to the given stream.
#ifndef KVCONFORM_REFERENCE_RACE_FUZZER_H_
#define KVCONFORM_REFERENCE_RACE_FUZZER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "reference/race/concurrent_store.h"
#include "reference/race/linearizability.h"
#include "reference/race/mutants.h"
#include "reference/race/program.h"

namespace kvc::race {

uint64_t SplitMix64(uint64_t x);
// The seed of program `index` of the campaign seeded `campaign_seed`.
uint64_t ProgramSeed(uint64_t campaign_seed, uint64_t index);

// The in-process concurrent store as a RaceTarget (a fresh store per target).
class StoreTarget : public RaceTarget {
 public:
  StoreTarget(lifecycle::CacheAbi abi, Mutant mutant)
      : store_(std::move(abi), mutant, RacePause) {}
  OpResult Call(uint32_t, const std::string& partition, const KvOp& op) override {
    return store_.Execute(partition, op);
  }
  Json HistoryHeader() const override;

 private:
  ConcurrentStore store_;
};

lifecycle::CacheAbi RaceAbi(uint32_t layers);  // the ABI race programs run under

struct CampaignOptions {
  ProgramShape shape;
  uint64_t seed = 1;
  uint64_t start = 0;                 // first program index
  uint64_t programs = 100;            // program indices to visit (before sharding)
  uint32_t repeat = 1;                // runs per program
  std::chrono::milliseconds time{0};  // stop after this long (0: no limit)
  uint32_t shard_index = 0, shard_count = 1;
  bool shrink = true;
  std::chrono::milliseconds shrink_time{20'000};
  // A shrink candidate counts as failing when any of this many runs of it is not
  // linearizable (runs are nondeterministic: interleavings and injected delays vary).
  uint32_t shrink_reruns = 10;
  std::chrono::milliseconds check_budget{10'000};  // per history
  std::ostream* progress = nullptr;   // progress lines (every ~2 s) and shrink steps
};

struct CampaignFailure {
  uint64_t program_index = 0;
  uint64_t program_seed = 0;
  uint32_t run = 0;                   // which repeat failed
  double seconds_to_detection = 0;    // from campaign start
  Program program;                    // as generated
  Program shrunk;                     // RapidCheck's shrunk counterexample (still failed)
  double shrink_seconds = 0;
  History history;                    // the failing history of the shrunk program
  Witness witness;
};

struct CampaignReport {
  uint64_t programs_run = 0, histories = 0, ops = 0, unknown_verdicts = 0;
  double seconds = 0;
  std::optional<CampaignFailure> failure;
  History last_history;     // the last history checked (when there is no failure)
  std::string first_error;  // a target that failed (driver crash...), empty when none
};

CampaignReport RunCampaign(const CampaignOptions& opt, const TargetFactory& factory);

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_FUZZER_H_
