// Random concurrent race programs over KV lineages, and the runner that records their histories.
//
// A Program is a deterministic function of (seed, shape): a sequential prologue (allocate every
// lineage root) and a script of abstract operations, each assigned to a worker thread. Workers
// run their part of the script concurrently against a RaceTarget; arguments that depend on what
// the run observed (a begin_append's base snapshot and interval, a truncate length, a fork
// prefix) are resolved at run time from a shared table of the latest observations, so the
// recorded history always carries concrete arguments. Interleavings are not deterministic; the
// fuzzer re-runs a program to reproduce or shrink a failure.
// Thread safety: Program is a value; RunProgram starts and joins its own worker threads.
#ifndef KVCONFORM_REFERENCE_RACE_PROGRAM_H_
#define KVCONFORM_REFERENCE_RACE_PROGRAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "reference/race/history.h"
#include "reference/race/kv_model.h"
#include "reference/race/kv_ops.h"

namespace kvc::race {

struct ProgramShape {
  uint32_t threads = 4;
  uint32_t lineages = 2;  // --handles: lineage roots (forks add children)
  uint32_t ops = 200;     // script length
  uint32_t layers = 2;    // cache-producing layers of the ABI
};

// One abstract step. Run-time-resolved fields: begin_append base/start (observed snapshot),
// stage_layer interval (the txn's begin), truncate length and fork prefix (observed length +
// `delta`, floored at 0).
struct ProgOp {
  uint32_t thread = 0;
  KvOpKind kind = KvOpKind::kRead;
  std::string lineage;
  std::string handle, txn, group;
  uint32_t layer = 0;
  uint64_t count = 0;  // begin_append delta
  int64_t delta = 0;   // truncate / fork: offset from the observed committed length
  std::vector<std::string> children;
  std::vector<uint64_t> perm;
  uint64_t row = 0;
};

struct Program {
  ProgramShape shape;
  uint64_t seed = 0;
  std::vector<ProgOp> prologue;  // run by thread 0 before the workers start
  std::vector<ProgOp> script;
};

Program GenerateProgram(const ProgramShape& shape, uint64_t seed);

// RapidCheck generators. GenProgram draws a program seed from RapidCheck's Random and
// generates GenerateProgram(shape, seed); GenFixedProgram has `p` at its root. Both shrink by
// ShrinkProgram, recursively (rc::shrinkable::shrinkRecur), so RapidCheck's shrinker reduces a
// failing program. A shrunk program may name a transaction or group whose creating op was
// removed; its ops then fail in the store and the model alike (a valid program).
rc::Gen<Program> GenProgram(const ProgramShape& shape);
void showValue(const Program& p, std::ostream& os);  // RapidCheck's counterexample text
rc::Gen<Program> GenFixedProgram(Program p);
// Shrink candidates, most aggressive first: each lineage alone (lineages are independent
// objects), then removal of one chunk of script ops (sizes n/2, n/4, ..., 1, at multiples of
// the size), then each op moved to thread 0 (fewer concurrent workers).
rc::Seq<Program> ShrinkProgram(const Program& p);
// One line per op, e.g. "T2 publish h0.t3"; the prologue is marked "pre".
std::string ProgramToText(const Program& p);

// Where operations go: the in-process store, or an external runtime's driver.
class RaceTarget {
 public:
  virtual ~RaceTarget() = default;
  // Thread-safe. Outcome kUnknown when the call timed out or its worker died.
  virtual OpResult Call(uint32_t thread, const std::string& partition, const KvOp& op) = 0;
  // Non-OK once the target has failed for good (crashed driver, protocol breach).
  virtual Status Health() { return Status::Ok(); }
  // The cache ABI and digest mode the histories' header declares.
  virtual Json HistoryHeader() const = 0;
};
using TargetFactory = std::function<StatusOr<std::unique_ptr<RaceTarget>>()>;

// The pause hook for a store: yields or sleeps briefly at random, driven by the calling
// worker's seeded generator (no-op on threads that are not race workers).
void RacePause();

// Runs `p` against `target`; every operation is recorded. `pause_seed` seeds the workers'
// delay/yield injection.
History RunProgram(const Program& p, RaceTarget& target, uint64_t pause_seed);

}  // namespace kvc::race

#endif  // KVCONFORM_REFERENCE_RACE_PROGRAM_H_
