// Tests of the race program runner (RunProgram): what it issues to a target.
#include "reference/race/program.h"

#include <gtest/gtest.h>

#include <atomic>

#include "reference/race/fuzzer.h"

namespace kvc::race {
namespace {

// A store target that fails for good once it has answered `calls` calls: Health() is then an
// error, as for a driver that died.
class DiesAfter : public RaceTarget {
 public:
  explicit DiesAfter(uint64_t calls) : inner_(RaceAbi(2), Mutant::kNone), calls_(calls) {}
  OpResult Call(uint32_t thread, const std::string& partition, const KvOp& op) override {
    ++answered_;
    return inner_.Call(thread, partition, op);
  }
  Status Health() override {
    return answered_ >= calls_ ? Status(StatusCode::kUnavailable, "the target died") : Status();
  }
  Json HistoryHeader() const override { return inner_.HistoryHeader(); }
  uint64_t answered() const { return answered_; }

 private:
  StoreTarget inner_;
  const uint64_t calls_;
  std::atomic<uint64_t> answered_{0};
};

// Once the target has failed for good, the workers issue no more of the script: the history
// holds the prologue and the script operations answered before the failure (a runner that kept
// issuing would fill the history with operations the dead target never saw).
TEST(RunProgram, StopsIssuingOnceTheTargetFailed) {
  const Program p = GenerateProgram({1, 2, 40, 2}, 7);
  ASSERT_EQ(p.script.size(), 40u);
  const uint64_t calls = p.prologue.size() + 5;
  DiesAfter target(calls);
  const History h = RunProgram(p, target, 7);
  EXPECT_EQ(target.answered(), calls);
  EXPECT_EQ(h.ops.size(), calls);
}

}  // namespace
}  // namespace kvc::race
