// The byte-trajectory oracle of M5.1 0x02: per-event logical/materialized/reserved/physical/
// resident/instantaneous ledgers over a request lifecycle, recomputed from declared inputs.
//
// Document kind "kvconform.byte_trajectory/1" (docs/ledger-format.md). A document binds a
// cache ABI (by value and by SHA256(JCS(cache_abi))), declares B_token, residency tiers,
// the allocator metadata charge per live copy, the requests (replica count, the residency
// tier of each copy, reserved token capacity per copy, prompt length) and an event list
// (arrive, prefill_publish, decode_publish, finish, repair_publish, release), each with its
// expected ledger.
//
// Storage is owned from a request's first prefill publication until its release: arrival
// alone creates no K/V and no allocation, finish alone frees nothing.
//
// Validation order and gating (a one-field mutation raises its root-cause code only):
//   1 schema (INPUT_*) - stop if any;  2 cache ABI: digest format, zero extents, ABI digest,
//   token coefficient - stop if any;  3 request declarations (replicas vs tiers, tiers
//   declared, capacities) - stop if any;  4 event replay (order, arrival before work,
//   prefill bounds, one-row decode, capacity, finish only after the whole prompt is
//   published, finish before release, after finish only one one-row repair_publish and the
//   release, nothing after release)
//   - the replay stops at the first illegal event, whose code is the only one reported;
//   5 every expected event ledger and the peaks against the replayed ledgers, and zero
//   terminal allocation.
#ifndef KVCONFORM_REFERENCE_LEDGER_BYTE_TRAJECTORY_H_
#define KVCONFORM_REFERENCE_LEDGER_BYTE_TRAJECTORY_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "reference/base/status.h"
#include "reference/base/strict_json.h"
#include "reference/validate/violation.h"

namespace kvc {

inline constexpr const char* kByteTrajectoryKind = "kvconform.byte_trajectory/1";

// One cache-owning request at one cut. copy_tiers has one entry per materialized copy
// (replica count r_i = copy_tiers.size(), primary included); capacity is C_i per copy.
struct OwnedCacheState {
  uint64_t committed = 0;  // T_i
  uint64_t capacity = 0;   // C_i, >= T_i
  std::vector<std::string> copy_tiers;
};

// The ledgers of one time cut (all in bytes).
struct ByteLedger {
  uint64_t logical = 0;               // B_token * sum T_i
  uint64_t materialized = 0;          // B_token * sum r_i T_i
  uint64_t replication_overhead = 0;  // materialized - logical
  uint64_t reserved = 0;              // B_token * sum r_i C_i
  uint64_t reservation_slack = 0;     // reserved - materialized
  uint64_t allocator = 0;             // live copies * metadata per copy
  uint64_t physical = 0;              // reserved + allocator (synthetic Loop 5 relation)
  std::map<std::string, uint64_t> resident_by_tier;  // partitions physical
  uint64_t temporary_workspace = 0;
  uint64_t instantaneous = 0;  // physical + workspace
};

// Folds the owned requests of one cut into its ledgers. `tiers` are the declared tiers
// (each appears in resident_by_tier, zero if unused). InvalidArgument when T_i > C_i,
// a copy's tier is undeclared or r_i == 0; OutOfRange on 64-bit overflow.
StatusOr<ByteLedger> SnapshotLedger(std::span<const OwnedCacheState> owned, uint64_t bytes_per_token,
                                    uint64_t metadata_per_copy, std::span<const std::string> tiers,
                                    uint64_t workspace);

// Every violation of the byte-trajectory contract, in check order (see the file comment).
Violations ValidateByteTrajectory(const Json& doc);

}  // namespace kvc

#endif  // KVCONFORM_REFERENCE_LEDGER_BYTE_TRAJECTORY_H_
