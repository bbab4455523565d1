// The race fuzzer campaign: run, check, shrink.
#include "reference/race/fuzzer.h"

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

}  // namespace

CampaignReport RunCampaign(const CampaignOptions& opt, const TargetFactory& factory) {
  CampaignReport rep;
  const auto t0 = Clock::now();
  auto last_progress = t0;
  const uint32_t shards = std::max<uint32_t>(1, opt.shard_count);
  for (uint64_t i = opt.start; i < opt.start + opt.programs; ++i) {
    if (i % shards != opt.shard_index) continue;
    if (opt.time.count() > 0 && Clock::now() - t0 > opt.time) break;
    const uint64_t pseed = SplitMix64(opt.seed + i);
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
        if (opt.shrink) {
          const auto deadline = Clock::now() + opt.shrink_time;
          uint64_t attempt = 0;
          auto still_fails = [&](const Program& cand) {
            for (int k = 0; k < 40 && Clock::now() < deadline; ++k) {
              RunVerdict c = RunAndCheck(cand, factory, SplitMix64(pseed + ++attempt),
                                         opt.check_budget);
              if (c.error.empty() && c.verdict == Verdict::kNotLinearizable) {
                f.history = std::move(c.history);
                f.witness = std::move(c.witness);
                return true;
              }
            }
            return false;
          };
          // First try the failing lineage alone (lineages are independent objects).
          {
            Program cand = f.shrunk;
            std::erase_if(cand.script, [&](const ProgOp& op) { return op.lineage != f.witness.partition; });
            std::erase_if(cand.prologue, [&](const ProgOp& op) { return op.lineage != f.witness.partition; });
            if (cand.script.size() < f.shrunk.script.size() && still_fails(cand)) f.shrunk = std::move(cand);
          }
          for (size_t chunk = f.shrunk.script.size() / 2; chunk >= 1 && Clock::now() < deadline;
               chunk /= 2) {
            for (size_t at = 0; at < f.shrunk.script.size() && Clock::now() < deadline;) {
              Program cand = f.shrunk;
              size_t end = std::min(cand.script.size(), at + chunk);
              cand.script.erase(cand.script.begin() + at, cand.script.begin() + end);
              if (still_fails(cand)) {
                f.shrunk = std::move(cand);
              } else {
                at += chunk;
              }
            }
          }
          if (opt.progress)
            *opt.progress << "shrunk " << f.program.script.size() << " -> "
                          << f.shrunk.script.size() << " ops in " << Since(t0) - f.seconds_to_detection
                          << " s\n";
        }
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
