// The race fuzzer campaign: run, check, shrink.
#include "reference/race/fuzzer.h"

#include <rapidcheck.h>

#include "reference/base/checked_math.h"

namespace kvc::race {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

lifecycle::CacheAbi RaceAbi(uint32_t layers) {
  lifecycle::CacheAbi abi;
  abi.id = "race-abi-L" + std::to_string(layers);
  abi.num_layers = layers;
  return abi;
}

Json StoreTarget::HistoryHeader() const {
  Json h = KvModel(store_.abi(), false).Header();
  h["target"] = "store";
  h["mutant"] = MutantName(store_.mutant());
  return h;
}

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct RunVerdict {
  Verdict verdict = Verdict::kLinearizable;
  History history;
  Witness witness;
  std::string error;  // target or model error
};

RunVerdict RunAndCheck(const Program& p, const TargetFactory& factory, uint64_t pause_seed,
                       std::chrono::milliseconds budget) {
  RunVerdict v;
  auto target = factory();
  if (!target.ok()) {
    v.error = target.status().ToString();
    return v;
  }
  v.history = RunProgram(p, **target, pause_seed);
  if (Status s = (*target)->Health(); !s.ok()) v.error = s.ToString();
  auto model = KvModel::FromHeader(v.history.header);
  if (!model.ok()) {
    v.error = model.status().ToString();
    return v;
  }
  CheckOptions opt;
  opt.budget = budget;
  auto r = CheckHistory(*model, v.history, opt);
  if (!r.ok()) {
    v.error = r.status().ToString();
    return v;
  }
  v.verdict = r->verdict;
  if (r->witness) v.witness = *r->witness;
  return v;
}

// A RapidCheck listener that reports accepted shrinks on the progress stream.
class ShrinkListener : public rc::detail::TestListener {
 public:
  explicit ShrinkListener(std::ostream* out) : out_(out) {}
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted && out_) *out_ << "." << std::flush;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {
    if (out_) *out_ << "\n";
  }

 private:
  std::ostream* out_;
};

// Shrinks f->program with RapidCheck: a property over GenFixedProgram(program) (the failing
// program at the root, ShrinkProgram below it) that fails when any of opt.shrink_reruns runs
// of a candidate is not linearizable. RapidCheck's shrinker accepts every failing candidate
// and continues from it, so the last failing candidate is its final counterexample. After
// opt.shrink_time every candidate passes without running, which ends the shrink.
void ShrinkFailure(const CampaignOptions& opt, const TargetFactory& factory,
                   Clock::time_point t0, CampaignFailure* f) {
  const auto deadline = SaturatingDeadline(Clock::now(), opt.shrink_time);
  const Program root = f->program;
  uint64_t attempt = 0;
  bool root_case = true;  // RapidCheck evaluates the root (the failing program) first
  auto fails = [&](const Program& cand) {
    // The root must fail again before anything is shrunk: a rare race gets 5K runs.
    const uint32_t runs = std::max<uint32_t>(1, opt.shrink_reruns) * (root_case ? 5 : 1);
    root_case = false;
    for (uint32_t k = 0; k < runs; ++k) {
      if (Clock::now() >= deadline) return false;
      // The first run of every candidate reuses the failing run's delay/yield seed.
      const uint64_t pause_seed =
          k == 0 ? f->program_seed + f->run : SplitMix64(f->program_seed + ++attempt);
      RunVerdict c = RunAndCheck(cand, factory, pause_seed, opt.check_budget);
      if (c.error.empty() && c.verdict == Verdict::kNotLinearizable) {
        if (cand.script.size() <= f->shrunk.script.size()) {
          f->shrunk = cand;
          f->history = std::move(c.history);
          f->witness = std::move(c.witness);
        }
        return true;
      }
    }
    return false;
  };
  auto property = rc::detail::toProperty([&] {
    const Program cand = *GenFixedProgram(root);
    RC_ASSERT(!fails(cand));
  });
  rc::detail::TestParams params;
  params.seed = f->program_seed;
  params.maxSuccess = 1;  // the root is the failing program; only its shrinks are searched
  params.maxSize = 0;
  params.disableShrinking = false;
  if (opt.progress) *opt.progress << "shrinking with RapidCheck (" << opt.shrink_reruns
                                  << " runs per candidate) ";
  ShrinkListener listener(opt.progress);
  (void)rc::detail::checkProperty(property, rc::detail::TestMetadata{"race", "race program"},
                                  params, listener);
  f->shrink_seconds = Since(t0) - f->seconds_to_detection;
  if (opt.progress)
    *opt.progress << "shrunk " << f->program.script.size() << " -> " << f->shrunk.script.size()
                  << " ops in " << f->shrink_seconds << " s\n";
}

}  // namespace

uint64_t ProgramSeed(uint64_t campaign_seed, uint64_t index) {
  // Seeds s and s + 1 run unrelated programs (probe 69: with SplitMix64(seed + i), program i of
  // seed s + 1 was program i + 1 of seed s, so consecutive seeds ran nearly one campaign).
  return SplitMix64(SplitMix64(campaign_seed) + index);
}

CampaignReport RunCampaign(const CampaignOptions& opt, const TargetFactory& factory) {
  CampaignReport rep;
  const auto t0 = Clock::now();
  const auto stop_at = SaturatingDeadline(t0, opt.time);  // used when opt.time > 0
  auto last_progress = t0;
  const uint32_t shards = std::max<uint32_t>(1, opt.shard_count);
  for (uint64_t i = opt.start; i < opt.start + opt.programs; ++i) {
    if (i % shards != opt.shard_index) continue;
    if (opt.time.count() > 0 && Clock::now() > stop_at) break;
    const uint64_t pseed = ProgramSeed(opt.seed, i);
    Program p = GenerateProgram(opt.shape, pseed);
    ++rep.programs_run;
    for (uint32_t run = 0; run < std::max<uint32_t>(1, opt.repeat); ++run) {
      RunVerdict v = RunAndCheck(p, factory, pseed + run, opt.check_budget);
      ++rep.histories;
      rep.ops += v.history.ops.size();
      if (!v.error.empty()) {
        rep.last_history = std::move(v.history);
        rep.first_error = v.error;
        rep.seconds = Since(t0);
        return rep;
      }
      if (v.verdict == Verdict::kUnknown) ++rep.unknown_verdicts;
      if (v.verdict != Verdict::kNotLinearizable) rep.last_history = std::move(v.history);
      if (v.verdict == Verdict::kNotLinearizable) {
        CampaignFailure f;
        f.program_index = i;
        f.program_seed = pseed;
        f.run = run;
        f.seconds_to_detection = Since(t0);
        f.program = p;
        f.shrunk = p;
        f.history = std::move(v.history);
        f.witness = std::move(v.witness);
        if (opt.shrink) ShrinkFailure(opt, factory, t0, &f);
        rep.failure = std::move(f);
        rep.seconds = Since(t0);
        return rep;
      }
    }
    if (opt.progress && Clock::now() - last_progress > std::chrono::seconds(2)) {
      last_progress = Clock::now();
      *opt.progress << "[" << static_cast<int>(Since(t0)) << " s] programs " << rep.programs_run
                    << ", histories " << rep.histories << ", ops " << rep.ops
                    << ", unknown verdicts " << rep.unknown_verdicts << ", failures 0\n";
    }
  }
  rep.seconds = Since(t0);
  return rep;
}

}  // namespace kvc::race
