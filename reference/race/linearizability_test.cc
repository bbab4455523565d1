// Tests of the generic linearizability checker with a toy register model.
#include "reference/race/linearizability.h"

#include <gtest/gtest.h>

namespace kvc::race {
namespace {

// A read/write register starting at 0. Ops: write {"v"} -> {}, read {} -> {"v"}.
struct RegisterModel {
  struct Op {
    bool write;
    int64_t v;  // written value, or the value the read returned
  };
  using State = int64_t;
  StatusOr<Op> Compile(const HistoryOp& h) const {
    if (h.op == "write") return Op{true, h.args.at("v").get<int64_t>()};
    if (h.op == "read") return Op{false, h.outcome == Outcome::kOk ? h.result.at("v").get<int64_t>() : 0};
    return ParseError("unknown op " + h.op);
  }
  State Initial(const std::string&) const { return 0; }
  bool Step(State& s, const Op& op, bool known) const {
    if (op.write) {
      s = op.v;
      return true;
    }
    return !known || s == op.v;
  }
  uint64_t Hash(const State& s) const { return static_cast<uint64_t>(s); }
  bool Equal(const State& a, const State& b) const { return a == b; }
  std::string Describe(const State& s) const { return "register=" + std::to_string(s); }
};
static_assert(SequentialModel<RegisterModel>);

HistoryOp Op(uint64_t id, std::string part, std::string name, int64_t v, int64_t inv,
             std::optional<int64_t> ret) {
  HistoryOp h;
  h.id = id;
  h.partition = std::move(part);
  h.op = name;
  h.invoke_ns = inv;
  h.return_ns = ret;
  if (name == "write") h.args = {{"v", v}};
  if (!ret) {
    h.outcome = Outcome::kUnknown;
  } else {
    h.outcome = Outcome::kOk;
    h.result = name == "read" ? Json{{"v", v}} : Json::object();
  }
  return h;
}

TEST(Linearizability, ConcurrentWriteAndReadEitherValue) {
  History h;
  h.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  h.ops.push_back(Op(1, "r", "read", 0, 1, 5));   // overlaps the write: may see 0
  h.ops.push_back(Op(2, "r", "read", 1, 2, 12));  // overlaps: may see 1
  auto r = CheckHistory(RegisterModel{}, h);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->verdict, Verdict::kLinearizable);
}

TEST(Linearizability, StaleReadAfterWriteReturnedIsNotLinearizable) {
  History h;
  h.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  h.ops.push_back(Op(1, "r", "read", 1, 11, 12));
  h.ops.push_back(Op(2, "r", "read", 0, 13, 14));  // sees the old value after the write
  auto r = CheckHistory(RegisterModel{}, h);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->verdict, Verdict::kNotLinearizable);
  ASSERT_TRUE(r->witness.has_value());
  EXPECT_EQ(r->witness->prefix, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(r->witness->stuck_op, 2u);
  EXPECT_EQ(r->witness->state_before, "register=1");
}

// Regression (probe 66): the exact search's cache counted its bit sets only, not the states it
// keeps (KvModel states are private copies of the lineage): 10.7 GB within a 60 s budget. A model
// with StateBytes() is charged for each state; here every state outweighs the cap, so the cache
// starts over at each insert, and the verdicts stand (dropping the cache is sound).
struct HeavyRegisterModel : RegisterModel {
  mutable uint64_t charged = 0;
  size_t bytes = size_t{768} << 20;  // a sixth of the cap: the cache is cleared every 6 states
  size_t StateBytes(const State&) const {
    ++charged;
    return bytes;
  }
};

TEST(Linearizability, RegressionStatesAreChargedToTheCacheCap) {
  History ok;
  ok.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  ok.ops.push_back(Op(1, "r", "read", 0, 1, 5));
  ok.ops.push_back(Op(2, "r", "read", 1, 2, 12));
  ok.ops.push_back(Op(3, "r", "write", 2, 3, 20));
  ok.ops.push_back(Op(4, "r", "read", 2, 21, 22));
  History bad;
  bad.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  bad.ops.push_back(Op(1, "r", "read", 1, 11, 12));
  bad.ops.push_back(Op(2, "r", "read", 0, 13, 14));
  HeavyRegisterModel m;
  auto a = CheckHistory(m, ok);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->verdict, Verdict::kLinearizable);
  auto b = CheckHistory(m, bad);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->verdict, Verdict::kNotLinearizable);
  EXPECT_GT(m.charged, 0u) << "the search charged no state to its cache";
}

// The states the exact search keeps on its stack (one per linearized op) cannot be dropped like
// its cache: past kSearchMemoryCapBytes the search ends as unknown, saying why (probe 87: a
// 32,000-op lineage's states took 14.6 GB before the time budget ran out).
TEST(Linearizability, StatesTheStackMustKeepPastTheMemoryCapAreUnknown) {
  History h;
  for (int i = 0; i < 8; ++i) h.ops.push_back(Op(i, "r", "write", i + 1, 10 * i, 10 * i + 5));
  HeavyRegisterModel m;
  m.bytes = size_t{512} << 20;  // 7 x 512 MiB = 3.5 GiB kept at most: within the cap
  auto within = CheckHistory(m, h);
  ASSERT_TRUE(within.ok());
  EXPECT_EQ(within->verdict, Verdict::kLinearizable);
  EXPECT_FALSE(within->unknown_memory);
  m.bytes = size_t{1} << 30;  // the fifth state kept passes 4 GiB
  auto over = CheckHistory(m, h);
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->verdict, Verdict::kUnknown);
  EXPECT_TRUE(over->unknown_memory);
  EXPECT_EQ(over->unknown_partition, "r");
}

// RegisterModel with the in-place fast path, counting the exact search's steps.
struct InPlaceRegisterModel : RegisterModel {
  using Work = int64_t;
  mutable uint64_t exact_steps = 0;
  bool Step(State& s, const Op& op, bool known) const {
    ++exact_steps;
    return RegisterModel::Step(s, op, known);
  }
  Work InitialWork(const std::string& p) const { return Initial(p); }
  bool Apply(Work& w, const Op& op, bool known) const { return RegisterModel::Step(w, op, known); }
  bool ReadOnly(const Op& op) const { return !op.write; }
  uint64_t Digest(const Work& w) const { return static_cast<uint64_t>(w); }
  State ToState(Work w) const { return w; }
};
static_assert(InPlaceModel<InPlaceRegisterModel>);

void ExpectSameWitness(const CheckResult& a, const CheckResult& b) {
  ASSERT_TRUE(a.witness && b.witness);
  EXPECT_EQ(a.witness->partition, b.witness->partition);
  EXPECT_EQ(a.witness->prefix, b.witness->prefix);
  EXPECT_EQ(a.witness->stuck_op, b.witness->stuck_op);
  EXPECT_EQ(a.witness->state_before, b.witness->state_before);
  EXPECT_EQ(a.witness->expected, b.witness->expected);
}

// Regression (probe 87): the fast search's "not linearizable" was always confirmed by the exact
// search, whose kept states grow quadratically with a long lineage: a 32,000-op history without
// concurrency and one wrong result stayed undecided (unknown) at 14.6 GB. A fast search that
// pruned no path explored every path, in the exact search's order: its verdict and witness
// stand alone. One that pruned is still confirmed.
TEST(Linearizability, RegressionASearchThatPrunedNothingIsExactWithoutTheExactSearch) {
  History seq;  // write 1..3000, each read back; the last read is wrong
  for (int i = 0; i < 3000; ++i) {
    seq.ops.push_back(Op(2 * i, "r", "write", i + 1, 100 * i, 100 * i + 10));
    seq.ops.push_back(
        Op(2 * i + 1, "r", "read", i == 2999 ? 7 : i + 1, 100 * i + 20, 100 * i + 30));
  }
  InPlaceRegisterModel fast_model, exact_model;
  CheckOptions exact;
  exact.in_place = false;
  auto fast = CheckHistory(fast_model, seq);
  auto slow = CheckHistory(exact_model, seq, exact);
  ASSERT_TRUE(fast.ok() && slow.ok());
  EXPECT_EQ(fast->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(slow->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(fast_model.exact_steps, 0u) << "the exact search ran";
  EXPECT_GT(exact_model.exact_steps, 0u);
  ExpectSameWitness(*fast, *slow);
  EXPECT_EQ(fast->witness->prefix.size(), 5999u);
  EXPECT_EQ(fast->witness->stuck_op, 5999u);
  EXPECT_EQ(fast->witness->state_before, "register=3000");

  History pruned;  // two overlapping writes of 5 reach one state both ways; then a wrong read
  pruned.ops.push_back(Op(0, "r", "write", 5, 0, 10));
  pruned.ops.push_back(Op(1, "r", "write", 5, 1, 11));
  pruned.ops.push_back(Op(2, "r", "read", 6, 20, 30));
  InPlaceRegisterModel fast2, exact2;
  auto f2 = CheckHistory(fast2, pruned);
  auto s2 = CheckHistory(exact2, pruned, exact);
  ASSERT_TRUE(f2.ok() && s2.ok());
  EXPECT_EQ(f2->verdict, Verdict::kNotLinearizable);
  EXPECT_GT(fast2.exact_steps, 0u) << "a pruned search was not confirmed";
  ExpectSameWitness(*f2, *s2);
}

// Mutation audit 4: a fast search that pruned nothing gives the exact search's witness also where
// two dead ends are equally deep: the first one found. Two overlapping writes of different
// values reach two states (nothing pruned), and a read of a value never written is stuck after
// both orders: the witness is the first order, writes 0 then 1 (register=2), as SearchPartition's.
TEST(Linearizability, RegressionAnUnprunedSearchWitnessesTheFirstOfEquallyDeepDeadEnds) {
  History h;
  h.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  h.ops.push_back(Op(1, "r", "write", 2, 1, 11));
  h.ops.push_back(Op(2, "r", "read", 5, 20, 30));
  CheckOptions exact;
  exact.in_place = false;
  InPlaceRegisterModel fast_model, exact_model;
  auto fast = CheckHistory(fast_model, h);
  auto slow = CheckHistory(exact_model, h, exact);
  ASSERT_TRUE(fast.ok() && slow.ok());
  ASSERT_EQ(fast->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(fast_model.exact_steps, 0u) << "the fast search pruned a path";
  ExpectSameWitness(*fast, *slow);
  EXPECT_EQ(fast->witness->prefix, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(fast->witness->state_before, "register=2");
}

// Regression (probe 87): K concurrent reads that return the right value beside one impossible
// read were tried in every subset (2^K search steps; K = 26 stayed unknown after 40 s). A
// read-only op linearized where it applies is committed there: backtracking over it backtracks
// further. Both searches apply the rule, so they still agree on the witness.
TEST(Linearizability, RegressionReadsThatApplyAreNotTriedInEverySubset) {
  History h;
  constexpr int kReads = 24;
  for (int i = 0; i < kReads; ++i) h.ops.push_back(Op(i, "r", "read", 0, i, 1000 + i));
  h.ops.push_back(Op(kReads, "r", "read", 5, kReads, 1000 + kReads));  // never written
  CheckOptions exact;
  exact.in_place = false;
  InPlaceRegisterModel fast_model, exact_model;
  auto fast = CheckHistory(fast_model, h);
  auto slow = CheckHistory(exact_model, h, exact);
  ASSERT_TRUE(fast.ok() && slow.ok());
  EXPECT_EQ(fast->verdict, Verdict::kNotLinearizable);
  EXPECT_EQ(slow->verdict, Verdict::kNotLinearizable);
  EXPECT_LT(fast->states_explored, 200u);
  EXPECT_LT(slow->states_explored, 200u);
  ExpectSameWitness(*fast, *slow);
  EXPECT_EQ(fast->witness->prefix.size(), size_t{kReads});
  EXPECT_EQ(fast->witness->stuck_op, uint64_t{kReads});
  // Not a read-only model: the rule does not apply, and the search is still right (small K).
  History small;
  for (int i = 0; i < 6; ++i) small.ops.push_back(Op(i, "r", "read", 0, i, 1000 + i));
  small.ops.push_back(Op(6, "r", "read", 5, 6, 1006));
  EXPECT_EQ(CheckHistory(RegisterModel{}, small)->verdict, Verdict::kNotLinearizable);
}

TEST(Linearizability, UnknownOutcomeMayTakeEffectOrNot) {
  History took;
  took.ops.push_back(Op(0, "r", "write", 7, 0, std::nullopt));  // timed out
  took.ops.push_back(Op(1, "r", "read", 7, 100, 110));           // ...but took effect
  EXPECT_EQ(CheckHistory(RegisterModel{}, took)->verdict, Verdict::kLinearizable);
  History never;
  never.ops.push_back(Op(0, "r", "write", 7, 0, std::nullopt));
  never.ops.push_back(Op(1, "r", "read", 0, 100, 110));  // never took effect
  EXPECT_EQ(CheckHistory(RegisterModel{}, never)->verdict, Verdict::kLinearizable);
  History neither;
  neither.ops.push_back(Op(0, "r", "write", 7, 0, std::nullopt));
  neither.ops.push_back(Op(1, "r", "read", 3, 100, 110));  // 3 was never written
  EXPECT_EQ(CheckHistory(RegisterModel{}, neither)->verdict, Verdict::kNotLinearizable);
  // An unknown write cannot take effect before it was invoked.
  History early;
  early.ops.push_back(Op(0, "r", "read", 7, 0, 10));
  early.ops.push_back(Op(1, "r", "write", 7, 20, std::nullopt));
  EXPECT_EQ(CheckHistory(RegisterModel{}, early)->verdict, Verdict::kNotLinearizable);
}

TEST(Linearizability, PartitionsAreIndependentObjects) {
  History h;
  h.ops.push_back(Op(0, "a", "write", 1, 0, 10));
  h.ops.push_back(Op(1, "b", "read", 0, 20, 30));  // register b was never written
  auto split = CheckHistory(RegisterModel{}, h);
  EXPECT_EQ(split->verdict, Verdict::kLinearizable);
  EXPECT_EQ(split->partitions, 2u);
  CheckOptions whole;
  whole.partition = false;  // as one register the read of 0 after the write is wrong
  EXPECT_EQ(CheckHistory(RegisterModel{}, h, whole)->verdict, Verdict::kNotLinearizable);
}

TEST(Linearizability, ExhaustedBudgetIsUnknownNotAVerdict) {
  // Many concurrent writes followed by an impossible read: the search must try every order.
  History h;
  for (int i = 0; i < 14; ++i) h.ops.push_back(Op(i, "r", "write", i + 1, 0, 1000));
  h.ops.push_back(Op(14, "r", "read", 99, 2000, 2001));
  CheckOptions opt;
  opt.budget = std::chrono::milliseconds(0);
  EXPECT_EQ(CheckHistory(RegisterModel{}, h, opt)->verdict, Verdict::kUnknown);
  opt.budget = std::chrono::milliseconds(20'000);
  EXPECT_EQ(CheckHistory(RegisterModel{}, h, opt)->verdict, Verdict::kNotLinearizable);
}

// Regression: an unlimited budget (milliseconds::max()) overflowed the deadline's conversion to
// nanoseconds and wrapped to an instant before the check began, so a search of more than 1,024
// steps came back unknown at its first deadline check (undefined behaviour, as for `fuzz check
// --budget inf`, 10^15 ms, whose product wrapped too: UBSan reported that). The deadline
// saturates now.
TEST(Linearizability, RegressionAnUnlimitedBudgetNeverRunsOut) {
  History h;  // the history of ExhaustedBudgetIsUnknownNotAVerdict: every order is tried
  for (int i = 0; i < 14; ++i) h.ops.push_back(Op(i, "r", "write", i + 1, 0, 1000));
  h.ops.push_back(Op(14, "r", "read", 99, 2000, 2001));
  CheckOptions opt;
  opt.budget = std::chrono::milliseconds::max();
  EXPECT_EQ(CheckHistory(RegisterModel{}, h, opt)->verdict, Verdict::kNotLinearizable);
}

// Equal timestamps count as concurrent: an op invoked at the instant another returned may be
// linearized before it.
TEST(Linearizability, EqualTimestampsAreConcurrent) {
  History h;
  h.ops.push_back(Op(0, "r", "write", 1, 0, 10));
  h.ops.push_back(Op(1, "r", "read", 0, 10, 20));
  EXPECT_EQ(CheckHistory(RegisterModel{}, h)->verdict, Verdict::kLinearizable);
}

// The result counts the operations whose outcome is unknown.
TEST(Linearizability, CountsUnknownOutcomes) {
  History h;
  h.ops.push_back(Op(0, "r", "write", 7, 0, std::nullopt));
  h.ops.push_back(Op(1, "r", "write", 8, 0, std::nullopt));
  h.ops.push_back(Op(2, "r", "read", 7, 100, 110));
  auto r = CheckHistory(RegisterModel{}, h);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, Verdict::kLinearizable);
  EXPECT_EQ(r->unknown_outcomes, 2u);
}

}  // namespace
}  // namespace kvc::race
